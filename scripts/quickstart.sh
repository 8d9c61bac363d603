#!/usr/bin/env bash
# The README's "run" command: set up and build the binary only (the tests are scripts/test.sh's),
# generate the synthetic dataset if absent, train on it, evaluate the checkpoint and print the
# result table. About 2 minutes after the build on a two-core CPU; setup.sh prints each set-up
# phase's time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
DATA="$ROOT/data/synth"
LTFIT="$BUILD_DIR/ltfit"

TARGETS="${TARGETS:-ltfit}" "$ROOT/scripts/setup.sh"
cd "$ROOT"
start=$(date +%s)
if [[ ! -f "$DATA/.complete" ]]; then
  rm -rf "$DATA"
  "$LTFIT" synth --out "$DATA" --train 1000 --valid 400 --seed 0
  touch "$DATA/.complete"
fi
summary="$(mktemp)"
"$LTFIT" train --config configs/quickstart.yaml --json >"$summary"
run_dir="$("${PYTHON:-python3}" -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_dir"])' "$summary")"
echo
echo "== evaluate $run_dir/checkpoints/last.ckpt =="
"$LTFIT" evaluate --checkpoint "$run_dir/checkpoints/last.ckpt"
echo
echo "== run directory: $run_dir (epochs.csv, steps.csv, summary.json, timing.json, env.json, train.log, checkpoints/, tb/)"
echo "== curves and pictures in TensorBoard: tensorboard --logdir $(dirname "$run_dir")"
echo "== quickstart wall time after the build: $(( $(date +%s) - start )) s"
rm -f "$summary"
