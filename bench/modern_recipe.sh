#!/usr/bin/env bash
# The modern recipe's features, each alone and together, against the plain recipe on a synthetic
# task the plain recipe does not solve perfectly: bears vs rabbits from few images (same faces and
# palettes as cats vs dogs, other ears). Two modes:
#   MODE=scratch (default): ResNet-18 from random init at 64 pixels, configs/quickstart.yaml's
#     one_cycle over EPOCHS epochs (default 8).
#   MODE=finetune: the study's workload in small: configs/cats_dogs.yaml as it is (fastai's
#     fine_tune, 1 frozen + EPOCHS unfrozen epochs (default 3), lr 1e-3, bs 16, fastai head, TTA)
#     on a ResNet-18 whose body was pretrained on the synthetic cats vs dogs
#     (bench/synthetic_pretrain.sh, made once in $WORK/source.pth), at 64 pixels.
# Every variant trains with the same seed, data and epochs; the table gives each one's validation
# accuracy (and TTA accuracy in finetune mode) and loss, and its per-step cost as a ratio to the
# plain step (training seconds per optimizer step, from timing.json, validation and checkpoints
# excluded). Several seeds (SEEDS) average out the noise of so small a task; the table also gives
# the spread (standard deviation over the seeds) of each accuracy.
#   bench/modern_recipe.sh                      # ~20 minutes on two CPU cores (2 seeds, 8 epochs)
#   SEEDS="1 2 3" EPOCHS=12 bench/modern_recipe.sh bench/results/modern-recipe-$(date +%F).md
#   MODE=finetune SEEDS="1 2 3" bench/modern_recipe.sh   # ~25 minutes on two CPU cores
#   ONLY='^(plain|RandAugment|Trivial)' bench/modern_recipe.sh   # the variants whose names match
# Writes everything under $WORK (default /tmp/ltfit-modern[-finetune]); the markdown table to $1
# if given.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
MODE="${MODE:-scratch}"
case "$MODE" in
  scratch) WORK="${WORK:-/tmp/ltfit-modern}"; EPOCHS="${EPOCHS:-8}" ;;
  finetune) WORK="${WORK:-/tmp/ltfit-modern-finetune}"; EPOCHS="${EPOCHS:-3}" ;;
  *) echo "MODE: expected scratch or finetune, got '$MODE'" >&2; exit 2 ;;
esac
TRAIN="${TRAIN:-240}"
VALID="${VALID:-400}"
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

if [[ "$MODE" == finetune ]]; then
  LTFIT="$LTFIT" "$ROOT/bench/synthetic_pretrain.sh" "$WORK"
  base=(--config configs/cats_dogs.yaml --set model.arch=resnet18
        --set "model.pretrained=$WORK/source.pth" --set data.image_size=64)
  total_epochs=$((EPOCHS + 1))  # fine_tune's frozen epoch first
  describe="ResNet-18 pretrained on the synthetic cats vs dogs, configs/cats_dogs.yaml (fine_tune: 1 frozen + $EPOCHS unfrozen epochs, lr 1e-3, bs 16, fastai head, TTA) at 64 px"
else
  base=(--config configs/quickstart.yaml)
  total_epochs=$EPOCHS
  describe="ResNet-18 from random init, configs/quickstart.yaml (one_cycle $EPOCHS epochs, lr 3e-3, bs 32) at 64 px"
fi
half=$((total_epochs / 2))
smooth_ema_erase="train.label_smoothing=0.1 train.ema.decay=0.99 train.ema.warmup=true data.augment.random_erasing.p=0.25"

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
  "size schedule 48→64|data.size_schedule=[[0,48],[$half,64]]"
  "smoothing, EMA, erasing|$smooth_ema_erase"
  "smoothing, EMA, erasing, flat_cos|$smooth_ema_erase train.schedule=flat_cos"
  "smoothing, EMA, erasing, TrivialAugmentWide|$smooth_ema_erase data.augment.policy=trivial_augment"
  "modern (smoothing, MixUp+CutMix, EMA, erasing)|$smooth_ema_erase train.mixup.mixup_alpha=0.2 train.mixup.cutmix_alpha=1.0"
)

results="$WORK/results.tsv"
: >"$results"
for seed in $SEEDS; do
  for entry in "${variants[@]}"; do
    name="${entry%%|*}"
    [[ -z "${ONLY:-}" || "$name" =~ $ONLY || "$name" == plain ]] || continue
    sets=()
    for s in ${entry#*|}; do sets+=(--set "$s"); done
    dir="$WORK/runs/seed$seed-$(echo "$name" | tr -c 'a-zA-Z0-9' '_')"
    rm -rf "$dir"
    mkdir -p "$WORK/runs"
    echo "== seed $seed: $name"
    "$LTFIT" train "${base[@]}" --set "data.root=$WORK/data" \
      --set "train.epochs=$EPOCHS" --set "run.seed=$seed" --set train.device=cpu \
      --set run.tensorboard=false --set train.checkpoint.every_minutes=0 \
      "${sets[@]}" --run-dir "$dir" >"$dir.log" 2>&1 || {
      echo "   failed: see $dir.log" >&2
      exit 1
    }
    PYTHONPATH="$ROOT/bench" "$PYTHON" - "$dir" "$name" "$seed" >>"$results" <<'PY'
import json, sys
from run_figures import step_seconds
run, name, seed = sys.argv[1:4]
summary = json.load(open(f"{run}/summary.json"))
tta = summary.get("tta_accuracy")
tta = "" if tta is None else f"{tta:.6f}"
print(f"{name}\t{seed}\t{summary['accuracy']:.6f}\t{tta}\t{summary['valid_loss']:.6f}\t{step_seconds(run):.6f}")
PY
  done
done

table="$("$PYTHON" - "$results" "$describe" "$TRAIN" "$VALID" "$SEEDS" <<'PY'
import statistics, sys
from collections import OrderedDict
results, describe, n_train, n_valid, seeds = sys.argv[1:6]
rows = OrderedDict()
for line in open(results):
    name, seed, acc, tta, loss, step = line.rstrip("\n").split("\t")
    rows.setdefault(name, []).append((float(acc), float(tta) if tta else None, float(loss),
                                      float(step)))
def mean(values):
    return sum(values) / len(values)
def spread(values):
    return statistics.stdev(values) if len(values) > 1 else 0.0
plain_step = mean([r[3] for r in rows["plain"]])
has_tta = all(r[1] is not None for rs in rows.values() for r in rs)
print(f"bears vs rabbits (synthetic), {n_train} training and {n_valid} validation images, "
      f"{describe}; seeds {seeds}: mean ± standard deviation over the seeds.\n")
tta_head, tta_rule = (" TTA accuracy |", "---|") if has_tta else ("", "")
print(f"| variant | accuracy |{tta_head} valid loss | step cost vs plain |")
print(f"|---|---|{tta_rule}---|---|")
for name, rs in rows.items():
    acc = [r[0] for r in rs]
    cells = [name, f"{mean(acc):.4f} ± {spread(acc):.4f}"]
    if has_tta:
        tta = [r[1] for r in rs]
        cells.append(f"{mean(tta):.4f} ± {spread(tta):.4f}")
    cells += [f"{mean([r[2] for r in rs]):.4f}", f"{mean([r[3] for r in rs]) / plain_step:.2f}×"]
    print("| " + " | ".join(cells) + " |")
PY
)"
echo
echo "$table"
echo
echo "done in $(( $(date +%s) - start )) s; runs in $WORK/runs"
if [[ -n "$OUT" ]]; then
  {
    echo "# The modern recipe on a synthetic task, $MODE ($(date +%F))"
    echo
    echo "\`MODE=$MODE SEEDS=\"$SEEDS\" EPOCHS=$EPOCHS bench/modern_recipe.sh\` on $(nproc) CPU cores ($(uname -m)), ltfit $("$LTFIT" --version 2>/dev/null | head -1)."
    echo
    echo "$table"
  } >"$OUT"
  echo "wrote $OUT"
fi
