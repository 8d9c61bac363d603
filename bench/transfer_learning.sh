#!/usr/bin/env bash
# Transfer learning without downloaded weights: pretrain a model ($ARCH, default ResNet-18; any
# `ltfit models` arch, e.g. ARCH=convnext_tiny) on one synthetic task
# (cats vs dogs), then fine-tune it with fastai's `fine_tune` recipe on another (bears vs
# rabbits: same faces and palettes, other ears, little data), next to the same recipe from random
# init. Prints validation accuracy and loss per epoch for both and how much sooner the pretrained
# model gets there. Everything is written under $WORK (default /tmp/ltfit-transfer[-$ARCH]).
#   bench/transfer_learning.sh            # ~4 minutes on two CPU cores
#   ARCH=convnext_tiny bench/transfer_learning.sh
#   TARGET_TRAIN=400 bench/transfer_learning.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
ARCH="${ARCH:-resnet18}"
if [[ "$ARCH" == resnet18 ]]; then WORK="${WORK:-/tmp/ltfit-transfer}"; else WORK="${WORK:-/tmp/ltfit-transfer-$ARCH}"; fi
TARGET_TRAIN="${TARGET_TRAIN:-200}"  # few labelled images: where pretraining matters
TARGET_VALID="${TARGET_VALID:-400}"
EPOCHS="${EPOCHS:-4}"                # unfrozen epochs after the frozen one
PYTHON="${PYTHON:-python3}"

[[ -x "$LTFIT" ]] || { echo "no ltfit binary at $LTFIT: run scripts/setup.sh first" >&2; exit 1; }
cd "$ROOT"
mkdir -p "$WORK"
start=$(date +%s)

rm -rf "$WORK/target"
"$LTFIT" synth --out "$WORK/target" --task bears_rabbits --train "$TARGET_TRAIN" \
  --valid "$TARGET_VALID" --seed 1
LTFIT="$LTFIT" "$ROOT/bench/synthetic_pretrain.sh" "$WORK" "$ARCH"

common=(--config configs/quickstart.yaml --set "data.root=$WORK/target" --set "model.arch=$ARCH"
        --set model.head=fastai
        --set train.recipe=fine_tune --set train.freeze_epochs=1 --set "train.epochs=$EPOCHS"
        --set train.lr=3.0e-3 --set run.seed=7)
for init in pretrained random; do
  weights="$WORK/source.pth"
  [[ "$init" == random ]] && weights=none
  echo "== fine_tune on bears vs rabbits from $init weights =="
  rm -rf "$WORK/$init"
  "$LTFIT" train "${common[@]}" --set "model.pretrained=$weights" --run-dir "$WORK/$init"
done

"$PYTHON" - "$WORK" "$ARCH" <<'PY'
import csv, sys
work = sys.argv[1]
runs = {name: list(csv.DictReader(open(f"{work}/{name}/epochs.csv")))
        for name in ("pretrained", "random")}
print(f"\n{sys.argv[2]}: bears vs rabbits, validation after each epoch (epoch 0 is the frozen one)")
print(f"{'epoch':>5} {'stage':>9} | {'pretrained acc':>14} {'loss':>7} | {'random acc':>10} {'loss':>7}")
for p, r in zip(runs["pretrained"], runs["random"]):
    print(f"{p['epoch']:>5} {p['stage']:>9} | {float(p['accuracy']):>14.4f} {float(p['valid_loss']):>7.4f}"
          f" | {float(r['accuracy']):>10.4f} {float(r['valid_loss']):>7.4f}")
final_random = float(runs["random"][-1]["accuracy"])
final_pretrained = float(runs["pretrained"][-1]["accuracy"])
if max(final_random, final_pretrained) < 0.6:  # two balanced classes: 0.5 is chance
    print(f"\nneither run got clear of chance (pretrained {final_pretrained:.4f}, random "
          f"{final_random:.4f}): no transfer can be read; check that pretraining learnt its own task "
          f"(pretrain/epochs.csv)")
    sys.exit(0)
first = next((int(p["epoch"]) for p in runs["pretrained"] if float(p["accuracy"]) >= final_random), None)
n = len(runs["random"])
if first is not None:
    print(f"\nthe pretrained model reaches random init's final accuracy ({final_random:.4f}, after {n} "
          f"epochs) after {first + 1} epoch(s): {n / (first + 1):.1f}x fewer epochs")
else:
    print(f"\nthe pretrained model never reached random init's final accuracy ({final_random:.4f})")
print(f"final accuracy: pretrained {float(runs['pretrained'][-1]['accuracy']):.4f}, random {final_random:.4f}")
PY
echo "== transfer-learning check wall time: $(( $(date +%s) - start )) s (runs in $WORK)"
