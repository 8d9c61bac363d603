#!/usr/bin/env bash
# Data-parallel training over 2 ranks on 127.0.0.1 (Gloo), launched as users launch it:
#   torchrun --standalone --nproc-per-node 2 --no-python ltfit train ...
# 1. rank 0 alone owns the run directory; summary.json says world_size 2, backend gloo,
#    global_batch 16; steps.csv holds the global losses;
# 2. the final weights equal a 1-rank run that normalises each half-batch separately (batch 8,
#    train.accumulate 2: ghost BatchNorm, which is what per-rank BatchNorm computes) to 1e-5;
#    with MixUp/CutMix, random erasing, label smoothing and EMA on too (weights and average);
# 3. SIGTERM to rank 1 alone stops both ranks at the same step with one checkpoint, and
#    --resume auto then ends with the uninterrupted run's weights; the same checkpoint also
#    resumes on 1 rank (a checkpoint of N ranks continues on M);
# 4. rank 1 killed (-9) after the first epoch, with --max-restarts 1 --resume auto: torchrun
#    restarts the group from the last checkpoint and it ends with the same weights;
# 5. without torchrun (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), a killed rank makes the other
#    exit 5 within dist.timeout_seconds instead of hanging, and describe its failure in
#    $TORCHELASTIC_ERROR_FILE as torchrun reads it;
# 6. unreadable images are counted once over the ranks (the same count as one process);
# 1-2d: a CSV multi-label run (shapes) equals its 1-rank ghost-BN run, figures and weights.
# Needs Python torch (torchrun, and torch.load to compare weights); exits 77 (CTest: skipped)
# without it.
#
#   tests/dist/torchrun_loopback.sh path/to/ltfit
set -uo pipefail

LTFIT="$(realpath "${1:?usage: $0 path/to/ltfit}")"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import torch.distributed.run" 2>/dev/null; then
  echo "SKIPPED: Python torch (torchrun) is not installed"
  exit 77
fi
WORK="$(mktemp -d)"
# Every process of the test names $WORK/c.yaml on its command line: none outlives the test.
trap 'pkill -KILL -f "$WORK/c.yaml" 2>/dev/null; rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
# One intra-op thread per process everywhere: the 2 ranks get (2 cores / 2) each, the 1-rank
# reference OMP_NUM_THREADS=1, so the same kernels sum in the same order.
PIN=()
if command -v taskset >/dev/null && (($(nproc) >= 2)); then PIN=(taskset -c 0,1); fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$LTFIT" synth --out data --train 96 --valid 40 --seed 3 >/dev/null 2>&1 || { echo "synth failed"; exit 1; }
cat > c.yaml <<YAML
run: {name: dp, out_dir: $WORK/runs, seed: 7}
data: {root: $WORK/data, layout: folders, image_size: 32, batch_size: 16, workers: 1}
model: {arch: resnet18, pretrained: none, head: fastai, dropout: 0.0}
train: {recipe: one_cycle, epochs: 3, lr: 0.01, device: cpu, channels_last: false,
        optimizer: {name: sgd}, checkpoint: {every_minutes: 0}}
eval: {tta: false}
dist: {timeout_seconds: 30}
YAML

torchrun() { "${PIN[@]}" "$PYTHON" -m torch.distributed.run "$@"; }
train2() {  # train2 RUN_DIR [torchrun options] -- [ltfit options]
  local dir="$1"; shift
  local launcher=()
  while (($#)) && [[ "$1" != "--" ]]; do launcher+=("$1"); shift; done
  shift
  torchrun --standalone --nproc-per-node 2 "${launcher[@]}" --no-python "$LTFIT" train \
    --config "$WORK/c.yaml" --run-dir "$dir" "$@"
}
# The max |difference| of the trained parameters (BatchNorm statistics excluded) of two
# checkpoints.
param_diff() {
  "$PYTHON" - "$1" "$2" <<'PY'
import sys, torch
a = torch.load(sys.argv[1], weights_only=True)["model"]
b = torch.load(sys.argv[2], weights_only=True)["model"]
assert a.keys() == b.keys()
print(max((a[k] - b[k]).abs().max().item() for k in a
          if torch.is_floating_point(a[k]) and "running" not in k))
PY
}
close() { "$PYTHON" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$1" "$2"; }
# The pid of rank $2 of the run writing to $1.
rank_pid() {
  local p
  for p in $(pgrep -f -- "--run-dir $1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2" &&
      tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -qx train && { echo "$p"; return; }
  done
}
wait_for() {  # wait_for SECONDS COMMAND...: until COMMAND succeeds
  local end=$((SECONDS + $1)); shift
  until "$@"; do ((SECONDS < end)) || return 1; sleep 0.2; done
}
rows_over() { [[ -f "$1" ]] && (($(wc -l <"$1") > $2)); }

echo "== 1-2. two ranks vs one rank with ghost BatchNorm"
train2 runs/a -- >a.log 2>&1 || fail "2-rank run exited $? (a.log: $(tail -3 a.log))"
OMP_NUM_THREADS=1 "${PIN[@]}" "$LTFIT" train --config "$WORK/c.yaml" --run-dir runs/b \
  --set data.batch_size=8 --set train.accumulate=2 >b.log 2>&1 || fail "1-rank run exited $?"
[[ "$(ls runs)" == $'a\nb' ]] || fail "run directories: $(ls runs | tr '\n' ' ') (rank 1 wrote one?)"
"$PYTHON" - <<'PY' || fail "summary.json of the 2-rank run"
import json
s = json.load(open("runs/a/summary.json"))
assert (s["world_size"], s["backend"], s["global_batch"]) == (2, "gloo", 16), s
assert s["epochs"] == 3, s
t = json.load(open("runs/a/timing.json"))
assert "grad_sync" in json.dumps(t), "timing.json has no grad_sync phase"
PY
grep -q "^\[rank 1/2\]" a.log || fail "rank 1 does not log with a [rank 1/2] prefix"
# TensorBoard: rank 0 alone writes an events file (in runs/a/tb); runs/b is the 1-rank run's.
events="$(find . -name 'events.out.tfevents.*' -not -path './runs/b/*')"
[[ "$(dirname "$events")" == ./runs/a/tb ]] || fail "TensorBoard events files: ${events:-none}"
"$PYTHON" - <<'PY' || fail "steps.csv: the 2-rank losses are not the global batches' losses"
import csv
a = list(csv.DictReader(open("runs/a/steps.csv")))
b = list(csv.DictReader(open("runs/b/steps.csv")))
assert len(a) == len(b) == 18, (len(a), len(b))
for x, y in zip(a, b):
    assert abs(float(x["loss"]) - float(y["loss"])) <= 1e-4 * max(1.0, abs(float(y["loss"]))), (x, y)
PY
d="$(param_diff runs/a/checkpoints/last.ckpt runs/b/checkpoints/last.ckpt)"
echo "2 ranks vs 1 rank (ghost BN): max |weight difference| $d"
close "$d" 1e-5 || fail "2 ranks vs 1 rank: weights differ by $d > 1e-5"

echo "== 1-2b. the same with MixUp/CutMix, TrivialAugment, random erasing, label smoothing and EMA"
# Each rank mixes and erases its own slice with the draws of the slice number
# (batch_in_step x ranks + rank), so rank r matches the 1-rank run's batch r of each step. Two
# epochs: the comparison is as strict, the block a third shorter.
modern=(--set train.epochs=2 --set train.mixup.mixup_alpha=0.4 --set train.mixup.cutmix_alpha=1.0
        --set data.augment.random_erasing.p=0.5 --set data.augment.policy=trivial_augment
        --set train.label_smoothing=0.1
        --set train.ema.decay=0.9)
train2 runs/m -- "${modern[@]}" >m.log 2>&1 || fail "2-rank modern run exited $? (m.log: $(tail -3 m.log))"
OMP_NUM_THREADS=1 "${PIN[@]}" "$LTFIT" train --config "$WORK/c.yaml" --run-dir runs/n \
  --set data.batch_size=8 --set train.accumulate=2 "${modern[@]}" >n.log 2>&1 ||
  fail "1-rank modern run exited $?"
d="$(param_diff runs/m/checkpoints/last.ckpt runs/n/checkpoints/last.ckpt)"
echo "2 ranks vs 1 rank (ghost BN), modern recipe: max |weight difference| $d"
close "$d" 1e-5 || fail "2 ranks vs 1 rank, modern recipe: weights differ by $d > 1e-5"
e="$("$PYTHON" - runs/m/checkpoints/last.ckpt runs/n/checkpoints/last.ckpt <<'PY'
import sys, torch
a = torch.load(sys.argv[1], weights_only=True)["hook_states"]["ema"]["tensors"]
b = torch.load(sys.argv[2], weights_only=True)["hook_states"]["ema"]["tensors"]
assert a.keys() == b.keys()
print(max((a[k] - b[k]).abs().max().item() for k in a
          if torch.is_floating_point(a[k]) and "running" not in k))
PY
)" || fail "the EMA states could not be compared"
echo "2 ranks vs 1 rank (ghost BN), modern recipe: max |EMA difference| $e"
close "${e:-1}" 1e-5 || fail "2 ranks vs 1 rank, modern recipe: EMA differs by $e > 1e-5"

echo "== 1-2d. a CSV multi-label run (BCE, pos_weight, MixUp): two ranks vs one rank"
# Validation gathers the ranks' probabilities for F1 and mAP (not sums): the 2-rank run's figures
# must be one process's evaluation of its weights, and its weights the 1-rank run's.
"$LTFIT" synth --out shapes --layout csv --task shapes --train 96 --valid 40 --seed 3 >/dev/null 2>&1 ||
  fail "synth --task shapes failed"
multi=(--set data.root="$WORK/shapes" --set data.layout=csv --set data.csv.valid_column=is_valid
       --set 'data.csv.label_delim=" "' --set train.pos_weight=balanced --set train.epochs=2
       --set train.mixup.mixup_alpha=0.4 --set train.best_monitor=map)
train2 runs/ml2 -- "${multi[@]}" >ml2.log 2>&1 || fail "2-rank multi-label run exited $? (ml2.log: $(tail -3 ml2.log))"
OMP_NUM_THREADS=1 "${PIN[@]}" "$LTFIT" train --config "$WORK/c.yaml" --run-dir runs/ml1 \
  --set data.batch_size=8 --set train.accumulate=2 "${multi[@]}" >ml1.log 2>&1 ||
  fail "1-rank multi-label run exited $?"
d="$(param_diff runs/ml2/checkpoints/last.ckpt runs/ml1/checkpoints/last.ckpt)"
echo "2 ranks vs 1 rank (ghost BN), multi-label: max |weight difference| $d"
close "${d:-1}" 1e-5 || fail "2 ranks vs 1 rank, multi-label: weights differ by $d > 1e-5"
"$LTFIT" evaluate --checkpoint runs/ml2/checkpoints/last.ckpt --out ml2-eval --json \
  >ml2-eval.json 2>ml2-eval.log || fail "evaluate of the 2-rank multi-label run exited $?"
"$PYTHON" - <<'PY' || fail "multi-label: the 2-rank run's gathered figures are not one process's"
import csv, json
a = json.load(open("runs/ml2/summary.json")); b = json.load(open("runs/ml1/summary.json"))
e = json.load(open("ml2-eval.json"))
assert a["task"] == b["task"] == "multi_label", (a["task"], b["task"])
assert a["valid_images"] == b["valid_images"] == e["images"] == 40
# The last epoch's validation, gathered over the ranks, is one process's evaluation of its weights.
for key in ("f1_samples", "f1_macro", "map", "accuracy"):
    assert abs(a[key] - e[key]) <= 1e-4, (key, a[key], e[key])
assert open("runs/ml2/split.csv").read() == open("runs/ml1/split.csv").read()
rows = list(csv.DictReader(open("runs/ml2/epochs.csv")))
assert len(rows) == 2 and "map" in rows[0], rows
PY

echo "== 1-2c. the plateau schedule and early stopping decide alike on every rank"
# Both act on the all-reduced validation figures (a 1-rank ghost-BN run is no reference here:
# its BatchNorm statistics, and so its validation losses, are not the ranks' average). Plateau
# with patience 0 decays the LR after each epoch that is not better; early stopping with
# min_delta 10 (no epoch improves that much at this LR) and patience 2 stops after the third of
# four epochs. A rank deciding otherwise would leave the other waiting in an all-reduce
# (dist.timeout_seconds 30: exit 5). The LRs of each epoch must be those torch's own
# ReduceLROnPlateau gives, fed the validation losses of epochs.csv.
train2 runs/s -- --set train.epochs=4 --set train.lr=0.001 --set train.schedule=plateau \
  --set train.patience_epochs=0 --set train.early_stopping.patience=2 \
  --set train.early_stopping.min_delta=10 >s.log 2>&1 ||
  fail "2-rank plateau + early-stopping run exited $? (s.log: $(tail -3 s.log))"
"$PYTHON" - <<'PY' || fail "plateau + early stopping over 2 ranks (summary.json, epochs.csv, steps.csv)"
import csv, json, torch
s = json.load(open("runs/s/summary.json"))
assert s["world_size"] == 2 and s["stopped_early"] and s["epochs"] == 3, s
epochs = list(csv.DictReader(open("runs/s/epochs.csv")))
assert len(epochs) == 3, epochs
lrs = {}
for row in csv.DictReader(open("runs/s/steps.csv")):
    lrs.setdefault(int(row["epoch"]), []).append(float(row["lr_0"]))
assert len(lrs) == 3, sorted(lrs)
first = lrs[min(lrs)][0]
opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=first)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.1, patience=0)
decays = 0
for epoch, row in zip(sorted(lrs), epochs):
    want = opt.param_groups[0]["lr"]
    assert all(abs(lr - want) <= 1e-6 * want for lr in lrs[epoch]), (epoch, lrs[epoch], want)
    decays += want < first
    plateau.step(float(row["valid_loss"]))
print(f"3 epochs, stopped early; the LRs follow torch's ReduceLROnPlateau ({decays} epoch(s) decayed)")
PY

echo "== 3. SIGTERM to rank 1 alone"
train2 runs/c -- >c.log 2>&1 &
launcher=$!
wait_for 120 rows_over runs/c/steps.csv 8 || fail "run c never reached step 8"
pid1="$(rank_pid runs/c 1)"
[[ -n "$pid1" ]] && kill -TERM "$pid1"
wait "$launcher"; rc=$?
((rc != 0)) || fail "run c should stop early (torchrun exits non-zero when ranks exit 130)"
s0="$(grep -v '^\[rank' c.log | grep -o 'training stopped at step [0-9]*' | head -1)"
s1="$(grep '^\[rank 1/2\]' c.log | grep -o 'training stopped at step [0-9]*' | head -1)"
echo "rank 0: '$s0', rank 1: '$s1'"
[[ -n "$s0" && "$s0" == "$s1" ]] || fail "the ranks did not stop at the same step ('$s0' vs '$s1')"
step="${s0##* }"
n="$(ls runs/c/checkpoints | grep -c "^step-0*${step}\.ckpt$")"
((n == 1)) || fail "no checkpoint of the stop step $step: $(ls runs/c/checkpoints | tr '\n' ' ')"
cp -r runs/c runs/c1
train2 runs/c -- --resume auto >c2.log 2>&1 || fail "resuming run c exited $?"
# The same checkpoint resumed by one process (the same global batch, on 1 rank instead of 2).
"$LTFIT" train --resume auto --run-dir runs/c1 >c1.log 2>&1 || fail "resuming run c on 1 rank exited $?"
"$PYTHON" - <<'PY' || fail "the 2-rank checkpoint resumed on 1 rank did not finish the run"
import csv, json
s = json.load(open("runs/c1/summary.json"))
assert (s["world_size"], s["global_batch"], s["epochs"]) == (1, 16, 3), s
assert len(list(csv.DictReader(open("runs/c1/steps.csv")))) == 18
PY
d="$(param_diff runs/a/checkpoints/last.ckpt runs/c/checkpoints/last.ckpt)"
echo "stopped at $step and resumed vs uninterrupted: $d"
close "$d" 1e-6 || fail "SIGTERM + resume: weights differ by $d"

echo "== 4. rank 1 killed, torchrun --max-restarts 1 --resume auto"
train2 runs/d --max-restarts 1 -- --resume auto >d.log 2>&1 &
launcher=$!
wait_for 120 rows_over runs/d/epochs.csv 1 || fail "run d never finished an epoch"
pid1="$(rank_pid runs/d 1)"
[[ -n "$pid1" ]] && kill -KILL "$pid1"
wait "$launcher" || fail "run d did not finish after a restart (d.log: $(tail -3 d.log))"
grep -q "resuming from" d.log || fail "run d did not resume from a checkpoint after the restart"
d="$(param_diff runs/a/checkpoints/last.ckpt runs/d/checkpoints/last.ckpt)"
echo "killed, restarted, resumed vs uninterrupted: $d"
close "$d" 1e-6 || fail "restart + resume: weights differ by $d"

echo "== 5. a killed rank without torchrun: the other exits, not hangs"
port="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    TORCHELASTIC_ERROR_FILE="$WORK/error$r.json" \
    "${PIN[@]}" "$LTFIT" train --config "$WORK/c.yaml" --run-dir runs/e --set dist.timeout_seconds=20 \
    >"e$r.log" 2>&1 &
  eval "pid$r=\$!"
done
wait_for 120 rows_over runs/e/steps.csv 2 || fail "run e never started"
kill -KILL "$pid1"
start=$SECONDS
wait "$pid0"; rc=$?
took=$((SECONDS - start))
echo "rank 0 exited $rc ${took}s after rank 1 was killed: $(grep -m1 "error:" e0.log)"
((rc == 5)) || fail "rank 0 exited $rc, expected 5"
((took <= 40)) || fail "rank 0 took ${took}s to notice (dist.timeout_seconds 20)"
"$PYTHON" - "$WORK/error0.json" <<'PY' || fail "rank 0 did not describe its failure in TORCHELASTIC_ERROR_FILE"
import json, sys
e = json.load(open(sys.argv[1]))
assert e["exit_code"] == 5 and "rank 0/2" in e["message"] and int(e["timestamp"]) > 0, e
PY

echo "== 6. unreadable images are counted once over the ranks"
cp -r data data_bad
for f in $(find data_bad/train -name '*.jpg' | sort | head -5) $(find data_bad/valid -name '*.jpg' | sort | head -2); do
  echo "not an image" >"$f"
done
for n in 1 2; do
  torchrun --standalone --nproc-per-node "$n" --no-python "$LTFIT" train --config "$WORK/c.yaml" \
    --run-dir "runs/f$n" --set "data.root=$WORK/data_bad" >"f$n.log" 2>&1 ||
    fail "run f$n exited $?"
done
"$PYTHON" - <<'PY' || fail "skipped_images over 2 ranks differs from 1 rank's (7 unreadable files)"
import json
one, two = (json.load(open(f"runs/f{n}/summary.json")) for n in (1, 2))
print("skipped_images: 1 rank", one["skipped_images"], "| 2 ranks", two["skipped_images"])
assert one["skipped_images"] == two["skipped_images"] == 7, (one, two)
assert len(two["skipped_examples"]) == 7, two["skipped_examples"]
PY

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "all data-parallel loopback checks passed"
