#!/usr/bin/env bash
# GPU check: builds ltfit (unless SKIP_SETUP=1), runs the [cuda] tests, then on the GPU:
#  1. trains one epoch on the synthetic set (64 px, ResNet-18) in each precision;
#  2. the study's shape at 224 px (ResNet-34, bs 64, channels_last), 2 epochs per precision, and
#     reports the second epoch's images/s (the first pays cuDNN autotuning);
#  3. evaluates the fp16 checkpoint with TTA on the GPU, and interprets it (Grad-CAM, fp16);
#  4. find-batch on a ResNet-152 at 224 px up to --max 4096, which must meet a real CUDA
#     out-of-memory and recover from it;
#  5. envinfo's GPU fields, and the CUDA half (the binary links LibTorch's CPU half alone): loaded
#     by default where the driver is; LTFIT_CUDA=off keeps it out (a CPU run's peak memory both
#     ways) and then refuses cuda with exit 2;
#  6. data-parallel training over NCCL under torchrun: a world of one on one GPU (dist.backend
#     nccl), and two ranks on two GPUs where the machine has them (summary.json's world_size and
#     backend checked); then bench/dist_scaling.sh --gpus where there are 2 or more;
#  7. every registered arch's training images/s at 224 px in bf16, ltfit beside PyTorch
#     (bench/arch_throughput.sh with DEVICE, the family list from `ltfit models`).
# Prints one table per part. Exits non-zero if any step fails (every step still runs, so the
# tables show what worked).
#
#   scripts/gpu_check.sh                                   # setup.sh, then the checks
#   SKIP_SETUP=1 BUILD_DIR=/path/to/build scripts/gpu_check.sh   # offline: use an existing build
#
# Environment: BUILD_DIR (default ./build), SKIP_SETUP=1 (no apt/pip/cmake: the binaries in
# BUILD_DIR must exist), PRECISIONS (default "fp32 fp16 bf16"), DEVICE (default cuda),
# TRAIN_IMAGES / VALID_IMAGES (synthetic set size, default 512 / 128), WORK_DIR (default /tmp),
# PYTHON (default python3, used to read the JSON and CSV results).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
PRECISIONS="${PRECISIONS:-fp32 fp16 bf16}"
DEVICE="${DEVICE:-cuda}"
TRAIN_IMAGES="${TRAIN_IMAGES:-512}"
VALID_IMAGES="${VALID_IMAGES:-128}"
WORK_DIR="${WORK_DIR:-/tmp}"
PYTHON="${PYTHON:-python3}"
LTFIT="$BUILD_DIR/ltfit"
TESTS="$BUILD_DIR/tests/ltfit_tests"
SYNTH="$WORK_DIR/gpu-synth"
failures=()

log() { printf '\033[1m[gpu_check]\033[0m %s\n' "$*" >&2; }
fail() {
  log "FAILED: $*"
  failures+=("$*")
}

build() {
  if [[ "${SKIP_SETUP:-0}" == 1 ]]; then
    log "SKIP_SETUP=1: using the existing build in $BUILD_DIR"
  else
    BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/setup.sh" || return 1
  fi
  for bin in "$LTFIT" "$TESTS"; do
    [[ -x "$bin" ]] || { log "missing $bin (build first, or set BUILD_DIR)"; return 1; }
  done
}

# Prints "seconds images_per_second accuracy max_loss_scale" of a finished run: the last epoch of
# its epochs.csv, the summary JSON that `ltfit train --json` printed, and steps.csv's loss_scale.
read_results() {
  local run_dir="$1" summary="$2"
  "$PYTHON" - "$run_dir" "$summary" <<'PY'
import csv, json, sys
run_dir, summary = sys.argv[1], json.load(open(sys.argv[2]))
try:
    last = list(csv.DictReader(open(run_dir + "/epochs.csv")))[-1]
    seconds, ips = float(last["seconds"]), float(last["images_per_second"])
except (OSError, IndexError, KeyError, ValueError):
    seconds = summary["train_seconds"] / max(summary["epochs"], 1)
    ips = summary["train_images"] * summary["epochs"] / max(summary["train_seconds"], 1e-9)
try:
    scale = max(float(r["loss_scale"]) for r in csv.DictReader(open(run_dir + "/steps.csv")))
except (OSError, KeyError, ValueError):
    scale = float("nan")
print(f"{seconds:.2f} {ips:.1f} {summary['accuracy']:.4f} {scale:g}")
PY
}

# Trains in precision $1 (extra --set arguments after it); appends a row to the table.
# RUN_TAG names the run directories (gpu-<tag>-<precision>).
train_one() {
  local p="$1" run_dir="$WORK_DIR/gpu-${RUN_TAG:-q}-$1" out="$WORK_DIR/gpu-${RUN_TAG:-q}-$1.json" row
  shift
  rm -rf "$run_dir"
  log "training, precision $p, device $DEVICE ${*}"
  if ! (cd "$ROOT" && "$LTFIT" train --config configs/quickstart.yaml --set "data.root=$SYNTH" \
          --set "train.precision=$p" --set train.epochs=1 --set "train.device=$DEVICE" "$@" \
          --run-dir "$run_dir" --json >"$out"); then
    fail "train $p"
    rows+=("$p - - - - FAILED")
    return
  fi
  if ! row="$(read_results "$run_dir" "$out")"; then
    fail "reading the results of $p"
    rows+=("$p - - - - FAILED")
    return
  fi
  # fp16 must train with loss scaling (the scale starts at 2^16); fp32/bf16 keep it at 1.
  local scale="${row##* }"
  if [[ "$p" == fp16 && "$scale" == 1 ]] || [[ "$p" != fp16 && "$scale" != 1 ]]; then
    fail "$p trained with loss scale $scale"
    rows+=("$p $row WRONG_SCALE")
    return
  fi
  rows+=("$p $row ok")
}

print_table() {
  printf '\n%-10s %9s %10s %9s %11s  %s\n' precision epoch_s images/s accuracy loss_scale status
  for r in "${rows[@]}"; do
    # shellcheck disable=SC2086
    printf '%-10s %9s %10s %9s %11s  %s\n' $r
  done
}

# Evaluates the 224 px fp16 checkpoint on the GPU with TTA (v1, 8 views) in fp16.
study_eval() {
  local ckpt="$WORK_DIR/gpu-study-fp16/checkpoints/last.ckpt" out="$WORK_DIR/gpu-eval.json"
  [[ -f "$ckpt" ]] || { fail "evaluate: no fp16 checkpoint at $ckpt"; return; }
  log "evaluating $ckpt with TTA on $DEVICE"
  if ! "$LTFIT" evaluate --checkpoint "$ckpt" --device "$DEVICE" --precision fp16 --tta \
      --out "$WORK_DIR/gpu-eval" --json >"$out"; then
    fail "evaluate --tta on $DEVICE"
    return
  fi
  echo; echo "== 3. evaluate --tta (fp16) of the 224 px fp16 checkpoint =="
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ("accuracy","tta_accuracy","seconds","tta_seconds","loss")})' "$out" ||
    fail "reading the evaluate result"
  # Grad-CAM under fp16 autocast on the GPU, through interpret (its [cuda] test checks the maps).
  log "interpret (top losses with Grad-CAM, fp16) of $ckpt on $DEVICE"
  if "$LTFIT" interpret --checkpoint "$ckpt" --device "$DEVICE" --precision fp16 --top 16 \
      --out "$WORK_DIR/gpu-interpret" --no-tensorboard --json >"$WORK_DIR/gpu-interpret.json" &&
     [[ -s "$WORK_DIR/gpu-interpret/top_losses.png" ]]; then
    "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print("interpret fp16: accuracy", d["evaluation"].get("accuracy"), "top losses", len(d["top_losses"]), "most confused", d["most_confused"][:3])' \
      "$WORK_DIR/gpu-interpret.json" || fail "reading the interpret result"
  else
    fail "interpret --precision fp16 on $DEVICE"
  fi
}

# find-batch far past what fits: a real CUDA out-of-memory must be caught, not fatal.
find_batch_oom() {
  local out="$WORK_DIR/gpu-find-batch.json"
  log "find-batch: ResNet-152 at 224 px, fp32, up to 4096 on $DEVICE"
  if ! (cd "$ROOT" && "$LTFIT" find-batch --config configs/cats_dogs.yaml --set "data.root=$SYNTH" \
      --set model.arch=resnet152 --set model.pretrained=none --set "train.device=$DEVICE" \
      --start 256 --max 4096 --json >"$out"); then
    fail "find-batch"
    return
  fi
  echo; echo "== 4. find-batch (ResNet-152, 224 px, fp32) =="
  "$PYTHON" - "$out" <<'PY' || fail "find-batch met no out-of-memory (or its JSON is unreadable)"
import json, sys
d = json.load(open(sys.argv[1]))
for t in d["trials"]:
    print(f"  batch {t['batch']:>5}: {'fits' if t['fits'] else 'no':4} {t['seconds']:7.2f} s "
          f"{t['memory_bytes'] / 2**30:8.2f} GiB {t['note']}")
print("  largest batch:", d["largest_batch"])
sys.exit(0 if any(not t["fits"] for t in d["trials"]) else 1)
PY
}

# torchrun with one rank per GPU over NCCL: world size 1 (the path, on any GPU machine) and 2.
nccl_runs() {
  echo; echo "== 6. data-parallel over NCCL (torchrun) =="
  local gpus
  gpus="$(nvidia-smi -L 2>/dev/null | wc -l)"
  local n
  for n in 1 2; do
    if ((n > gpus)); then
      echo "  world size $n: n/a (this machine has $gpus GPU(s))"
      continue
    fi
    local run="$WORK_DIR/gpu-nccl-$n" out="$WORK_DIR/gpu-nccl-$n.json"
    rm -rf "$run"
    if ! (cd "$ROOT" && "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$n"         --no-python "$LTFIT" train --config configs/quickstart.yaml --set "data.root=$SYNTH"         --set train.device=cuda --set dist.backend=nccl --set train.precision=fp16         --set train.epochs=2 --set data.batch_size=64 --run-dir "$run" --json >"$out"); then
      fail "torchrun NCCL world size $n"
      continue
    fi
    "$PYTHON" - "$out" "$n" <<'PY' || fail "NCCL world size $n: summary"
import json, sys
s = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
print(f"  world size {s['world_size']} over {s['backend']}: accuracy {s['accuracy']:.4f}, "
      f"train {s['train_seconds']:.1f} s, global batch {s['global_batch']}")
sys.exit(0 if (s["world_size"], s["backend"]) == (n, "nccl") else 1)
PY
  done
  if ((gpus >= 2)); then
    LTFIT="$LTFIT" "$ROOT/bench/dist_scaling.sh" --gpus --arch resnet34 --size 224 --batch 128 \
      --train "$TRAIN_IMAGES" || fail "bench/dist_scaling.sh --gpus"
  fi
}

show_envinfo() {
  echo; echo "== 5. envinfo and the CUDA half =="
  "$LTFIT" envinfo || fail "envinfo"
  "$LTFIT" envinfo | grep -q "CUDA half     loaded from" || fail "the CUDA half did not load"
  if readelf -d "$LTFIT" | grep NEEDED | grep -q -E "libtorch_cuda|libc10_cuda"; then
    fail "ltfit links LibTorch's CUDA half"
  fi
  local mode
  for mode in auto off; do
    if [[ -x /usr/bin/time ]]; then
      /usr/bin/time -f "LTFIT_CUDA=$mode: envinfo peak resident %M KB, %e s" env LTFIT_CUDA=$mode \
        "$LTFIT" envinfo >/dev/null || fail "envinfo with LTFIT_CUDA=$mode"
    else
      LTFIT_CUDA=$mode "$LTFIT" envinfo | grep "CUDA half" || fail "envinfo with LTFIT_CUDA=$mode"
    fi
  done
  LTFIT_CUDA=off "$LTFIT" train --config quickstart --set data.root="$SYNTH" \
    --set train.device=cuda --set run.out_dir="$WORK_DIR/gpu-off" >/dev/null 2>&1
  local code=$?
  [[ $code -eq 2 ]] || fail "LTFIT_CUDA=off with train.device=cuda exited $code, not 2"
}

rows=()
if ! build; then
  fail "build"
  exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L
log "running the [cuda] tests"
"$TESTS" "[cuda]" || fail "ltfit_tests [cuda]"
log "writing the synthetic set to $SYNTH"
rm -rf "$SYNTH"
if "$LTFIT" synth --out "$SYNTH" --train "$TRAIN_IMAGES" --valid "$VALID_IMAGES"; then
  for p in $PRECISIONS; do RUN_TAG=q train_one "$p"; done
  echo; echo "== 1. ResNet-18, 64 px, bs 32, 1 epoch of $TRAIN_IMAGES images =="
  print_table
  rows=()
  for p in $PRECISIONS; do
    RUN_TAG=study train_one "$p" --set model.arch=resnet34 --set data.image_size=224 \
      --set data.batch_size=64 --set train.channels_last=true --set train.epochs=2
  done
  echo; echo "== 2. ResNet-34, 224 px, bs 64, channels_last: epoch 2 of 2 (the study's shape) =="
  print_table
  rows=()
  study_eval
else
  fail "synth"
fi
find_batch_oom
show_envinfo
nccl_runs
echo; echo "== 7. training images/s per arch (bench/arch_throughput.sh, 224 px, bf16, bs 64) =="
LTFIT="$LTFIT" DEVICE="$DEVICE" SIZE=224 BATCH=64 IMAGES=256 PRECISION=bf16 \
  WORK="$WORK_DIR/ltfit-gpu-archs" "$ROOT/bench/arch_throughput.sh" || fail "bench/arch_throughput.sh"
if ((${#failures[@]})); then
  log "${#failures[@]} failure(s): ${failures[*]}"
  exit 1
fi
log "all GPU checks passed"
