#!/usr/bin/env bash
# How well `ltfit clean` finds planted label flips, for every --filter-by, on real training runs.
#
# For each seed: `ltfit synth` writes the quickstart-sized two-class set (800 training, 200
# validation images); 10 % of the validation images (every 10th, 20 in all) are moved into the
# other class's folder; `configs/quickstart.yaml` trains on it (CPU, 64 px); then `ltfit clean`
# runs once per filter and its mislabeled rows are scored against the planted flips:
# recall = flips found / flips, precision = flips found / rows suggested (a row on an unflipped
# image, in either split, is a false alarm).
#
#   bench/clean_recall.sh                    # seeds 1 2 3, results in /tmp/ltfit-clean-recall
#   SEEDS="1 2" FOLDS=5 bench/clean_recall.sh   # also cross-fitted training probabilities
#
# Environment: LTFIT (binary, build/ltfit), WORK (/tmp/ltfit-clean-recall), SEEDS, FOLDS
# (0: in-sample training probabilities only), FILTERS (all five), JUDGES (--judge: per_split
# together). Prints one markdown table; a trained seed is reused on the next call.
set -euo pipefail
cd "$(dirname "$0")/.."
LTFIT=${LTFIT:-$PWD/build/ltfit}
WORK=${WORK:-/tmp/ltfit-clean-recall}
SEEDS=${SEEDS:-1 2 3}
FOLDS=${FOLDS:-0}
FILTERS=${FILTERS:-prune_by_noise_rate prune_by_class both confident_learning predicted_neq_given}
JUDGES=${JUDGES:-per_split together}
mkdir -p "$WORK"

plant() {  # $1 data root: move every 10th validation image into the other class; list them
  local root=$1 n=0
  : >"$root/flipped.txt"
  for f in $(ls "$root/valid/cat"/*.jpg "$root/valid/dog"/*.jpg | sort); do
    n=$((n + 1))
    [ $((n % 10)) -eq 0 ] || continue
    local cls other
    cls=$(basename "$(dirname "$f")")
    other=$([ "$cls" = cat ] && echo dog || echo cat)
    mv "$f" "$root/valid/$other/flipped_$(basename "$f")"
    echo "$root/valid/$other/flipped_$(basename "$f")" >>"$root/flipped.txt"
  done
}

score() {  # $1 suggestions.csv $2 flipped.txt -> "found suggested flips"
  python3 - "$1" "$2" <<'EOF'
import csv, sys
flipped = {l.strip() for l in open(sys.argv[2]) if l.strip()}
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["problem"] == "mislabeled"]
found = sum(r["path"] in flipped for r in rows)
print(found, len(rows), len(flipped))
EOF
}

echo "| seed | valid accuracy | train probabilities | judged | filter | suggested | flips found | recall | precision |"
echo "|---|---|---|---|---|---|---|---|---|"
for seed in $SEEDS; do
  root=$WORK/data-$seed
  if [ ! -f "$root/flipped.txt" ]; then
    rm -rf "$root"
    "$LTFIT" synth --out "$root" --train 800 --valid 200 --seed "$seed" >/dev/null
    plant "$root"
  fi
  run=$WORK/runs/recall-$seed
  if [ ! -f "$run/summary.json" ]; then
    "$LTFIT" train --config configs/quickstart.yaml --set data.root="$root" \
      --set run.out_dir="$WORK/runs" --set run.name="recall-$seed" --set run.seed="$seed" \
      --set train.device=cpu --set data.workers=2 >"$WORK/train-$seed.log" 2>&1
  fi
  acc=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['best_accuracy'],4))" "$run/summary.json" 2>/dev/null || echo "?")
  ckpt=$run/checkpoints/best.ckpt
  [ -f "$ckpt" ] || ckpt=$run/checkpoints/last.ckpt
  folds_list=0
  [ "$FOLDS" -gt 1 ] && folds_list="0 $FOLDS"
  for folds in $folds_list; do
    for judge in $JUDGES; do
      for f in $FILTERS; do
        out=$WORK/clean-$seed-$folds-$judge-$f
        args=(clean --checkpoint "$ckpt" --out "$out" --filter-by "$f" --judge "$judge" --device cpu)
        [ "$folds" -gt 1 ] && args+=(--folds "$folds")
        rm -rf "$out"
        kind=$([ "$folds" -gt 1 ] && echo "cross-fitted ($folds)" || echo in-sample)
        if ! "$LTFIT" "${args[@]}" >"$out.log" 2>&1; then
          echo "| $seed | $acc | $kind | $judge | $f | failed: see $out.log | | | |"
          continue
        fi
        read -r found suggested flips < <(score "$out/suggestions.csv" "$root/flipped.txt")
        python3 -c "
f,s,n=$found,$suggested,$flips
print(f'| $seed | $acc | $kind | $judge | $f | {s} | {f}/{n} | {100*f/n:.0f} % | ' + (f'{100*f/s:.0f} %' if s else '-') + ' |')"
      done
    done
  done
done
