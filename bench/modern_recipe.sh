#!/usr/bin/env bash
# The modern recipe's features, each alone and together, against the plain recipe on a synthetic
# task the plain recipe does not solve perfectly: bears vs rabbits from few images (same faces and
# palettes as cats vs dogs, other ears), ResNet-18 from random init at 64 pixels. Every variant
# trains with the same seed, data and epochs; the table gives each one's validation accuracy and
# loss, and its per-step cost as a ratio to the plain step (training seconds per optimizer step,
# from timing.json, validation and checkpoints excluded). Several seeds (SEEDS) average out the noise of so small
# a task.
#   bench/modern_recipe.sh                      # ~20 minutes on two CPU cores (2 seeds, 8 epochs)
#   SEEDS="1 2 3" EPOCHS=12 bench/modern_recipe.sh bench/results/modern-recipe-$(date +%F).md
#   ONLY='^(plain|RandAugment|Trivial)' bench/modern_recipe.sh   # the variants whose names match
# Writes everything under $WORK (default /tmp/ltfit-modern); the markdown table to $1 if given.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
WORK="${WORK:-/tmp/ltfit-modern}"
TRAIN="${TRAIN:-240}"
VALID="${VALID:-400}"
EPOCHS="${EPOCHS:-8}"
SEEDS="${SEEDS:-1 2}"
PYTHON="${PYTHON:-python3}"
OUT="${1:-}"

[[ -x "$LTFIT" ]] || { echo "no ltfit binary at $LTFIT: run scripts/setup.sh first" >&2; exit 1; }
cd "$ROOT"
mkdir -p "$WORK"
start=$(date +%s)
if [[ ! -f "$WORK/data/.complete" ]]; then
  rm -rf "$WORK/data"
  "$LTFIT" synth --out "$WORK/data" --task bears_rabbits --train "$TRAIN" --valid "$VALID" --seed 7
  touch "$WORK/data/.complete"
fi

# name|overrides (space-separated --set values)
variants=(
  "plain|"
  "label smoothing 0.1|train.label_smoothing=0.1"
  "MixUp α 0.2|train.mixup.mixup_alpha=0.2"
  "CutMix α 1|train.mixup.cutmix_alpha=1.0"
  "MixUp+CutMix (timm's switch)|train.mixup.mixup_alpha=0.2 train.mixup.cutmix_alpha=1.0"
  "EMA 0.99 (warm-up)|train.ema.decay=0.99 train.ema.warmup=true"
  "random erasing 0.25|data.augment.random_erasing.p=0.25"
  "RandAugment n2 m9|data.augment.policy=rand_augment"
  "TrivialAugmentWide|data.augment.policy=trivial_augment"
  "cosine + warm-up|train.schedule=cosine train.warmup_epochs=1"
  "flat_cos|train.schedule=flat_cos"
  "size schedule 48→64|data.size_schedule=[[0,48],[4,64]]"
  "modern (smoothing, MixUp+CutMix, EMA, erasing)|train.label_smoothing=0.1 train.mixup.mixup_alpha=0.2 train.mixup.cutmix_alpha=1.0 train.ema.decay=0.99 train.ema.warmup=true data.augment.random_erasing.p=0.25"
)

results="$WORK/results.tsv"
: >"$results"
for seed in $SEEDS; do
  for entry in "${variants[@]}"; do
    name="${entry%%|*}"
    [[ -z "${ONLY:-}" || "$name" =~ $ONLY ]] || continue
    sets=()
    for s in ${entry#*|}; do sets+=(--set "$s"); done
    dir="$WORK/runs/seed$seed-$(echo "$name" | tr -c 'a-zA-Z0-9' '_')"
    rm -rf "$dir"
    mkdir -p "$WORK/runs"
    echo "== seed $seed: $name"
    "$LTFIT" train --config configs/quickstart.yaml --set "data.root=$WORK/data" \
      --set "train.epochs=$EPOCHS" --set "run.seed=$seed" --set train.device=cpu \
      --set run.tensorboard=false --set train.checkpoint.every_minutes=0 \
      "${sets[@]}" --run-dir "$dir" >"$dir.log" 2>&1 || {
      echo "   failed: see $dir.log" >&2
      exit 1
    }
    "$PYTHON" - "$dir" "$name" "$seed" >>"$results" <<'PY'
import json, sys
run, name, seed = sys.argv[1:4]
summary = json.load(open(f"{run}/summary.json"))
timing = json.load(open(f"{run}/timing.json"))
steps = sum(1 for _ in open(f"{run}/steps.csv")) - 1
phases = timing["phases"]
train = summary["train_seconds"] - phases["validation"] - phases["checkpoint"]
print(f"{name}\t{seed}\t{summary['accuracy']:.6f}\t{summary['valid_loss']:.6f}\t{train / steps:.6f}")
PY
  done
done

table="$("$PYTHON" - "$results" "$EPOCHS" "$TRAIN" "$SEEDS" <<'PY'
import sys
from collections import OrderedDict
rows = OrderedDict()
for line in open(sys.argv[1]):
    name, seed, acc, loss, step = line.rstrip("\n").split("\t")
    rows.setdefault(name, []).append((float(acc), float(loss), float(step)))
plain_step = sum(r[2] for r in rows["plain"]) / len(rows["plain"])
print(f"bears vs rabbits (synthetic), {sys.argv[3]} training images, ResNet-18 from random init, "
      f"64 px, one_cycle {sys.argv[2]} epochs, seeds {sys.argv[4]}; mean over the seeds.\n")
print("| variant | accuracy | valid loss | step cost vs plain |")
print("|---|---|---|---|")
for name, rs in rows.items():
    acc = sum(r[0] for r in rs) / len(rs)
    loss = sum(r[1] for r in rs) / len(rs)
    step = sum(r[2] for r in rs) / len(rs)
    print(f"| {name} | {acc:.4f} | {loss:.4f} | {step / plain_step:.2f}× |")
PY
)"
echo
echo "$table"
echo
echo "done in $(( $(date +%s) - start )) s; runs in $WORK/runs"
if [[ -n "$OUT" ]]; then
  {
    echo "# The modern recipe on a synthetic task ($(date +%F))"
    echo
    echo "\`bench/modern_recipe.sh\` on $(nproc) CPU cores ($(uname -m)), ltfit $("$LTFIT" --version 2>/dev/null | head -1)."
    echo
    echo "$table"
  } >"$OUT"
  echo "wrote $OUT"
fi
