#!/usr/bin/env bash
# TensorBoard events read back by Python tensorboard (the oracle, scripts/bench_deps.sh installs
# it), from a tiny `ltfit train` on synthetic images (resnet18, 32 px, 2 epochs, fp32, CPU):
# 1. tb/ holds one events file; tensorboard's EventAccumulator finds exactly the documented
#    scalar tags, each scalar at steps.csv's / epochs.csv's steps with its value (float32,
#    within the CSV's rounding), the batch grid at step 0 and the confusion matrix at the last
#    step, each PNG the size its event says (tensorboard_oracle.py);
# 2. resumed from the checkpoint of epoch 1 (of 2): a second events file, and TensorBoard shows
#    exactly the CSVs again (the first session's epoch 2 is hidden by the SessionLog START);
# 3. run.tensorboard: false writes no tb/ folder.
# Exits 77 (CTest: skipped) when python3 cannot import tensorboard.
#
#   tests/run/tensorboard_oracle.sh path/to/ltfit
set -uo pipefail

LTFIT="$(realpath "${1:?usage: $0 path/to/ltfit}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import tensorboard, numpy" 2>/dev/null; then
  echo "SKIPPED: Python tensorboard is not installed (scripts/bench_deps.sh installs it)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$LTFIT" synth --out data --train 48 --valid 16 --seed 3 >/dev/null 2>&1 || { echo "synth failed"; exit 1; }
cat > c.yaml <<YAML
run: {name: tb, out_dir: $WORK/runs, seed: 7}
data: {root: $WORK/data, layout: folders, image_size: 32, batch_size: 16, workers: 1}
model: {arch: resnet18, pretrained: none, head: fastai, dropout: 0.0}
train: {recipe: one_cycle, epochs: 2, lr: [0.001, 0.01], device: cpu, channels_last: false,
        optimizer: {name: sgd}, checkpoint: {every_minutes: 0, keep: 2, keep_resumable: true}}
eval: {tta: false}
YAML

echo "== 1. a run read back by tensorboard"
"$LTFIT" train --config c.yaml --run-dir runs/a >a.log 2>&1 || fail "train exited $? ($(tail -3 a.log))"
"$PYTHON" "$HERE/tensorboard_oracle.py" runs/a || fail "the events of runs/a (above)"

echo "== 2. resumed from epoch 1: a second file, the CSVs again"
cp -r runs/a runs/b
first="$(ls runs/b/checkpoints | grep -E '[0-9]{9}\.ckpt$' | sort | head -1)"  # of 2 kept: epoch 1
if [[ -z "$first" ]]; then
  fail "no checkpoint of epoch 1 in $(ls runs/b/checkpoints | tr '\n' ' ')"
else
  "$LTFIT" train --config c.yaml --resume "runs/b/checkpoints/$first" >b.log 2>&1 ||
    fail "resume exited $? ($(tail -3 b.log))"
  "$PYTHON" "$HERE/tensorboard_oracle.py" runs/b --sessions 2 || fail "the events of runs/b (above)"
fi

echo "== 3. run.tensorboard: false"
"$LTFIT" train --config c.yaml --run-dir runs/c --set run.tensorboard=false \
  --set train.epochs=1 >c.log 2>&1 || fail "train exited $? ($(tail -3 c.log))"
[[ -f runs/c/summary.json && ! -e runs/c/tb ]] || fail "runs/c: $(ls runs/c | tr '\n' ' ')"

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "ok"
