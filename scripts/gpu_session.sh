#!/usr/bin/env bash
# One short GPU loan, start to finish, on a bare offline machine: builds ltfit from the carried
# deps/device-deps.tar.xz (scripts/device_build.sh), then runs scripts/gpu_check.sh and
# bench/gpu_study.sh, each in a time box, then (while time is left) a profiled epoch, the CIFAR-10
# guides' throughput (bench/cifar_throughput.sh, ResNet-50 on CUDA) and
# bench/torch_graph_ceiling.py. Logs and reports go to LOG_DIR; after each stage OUT_DIR (the
# device tool's $OUT, which takes few files) gets session.log and LOG_DIR as session.tar.gz, so a
# session cut short still returns what it did. Every stage runs even when one before it failed,
# except after a failed build; the last line says which failed.
#
#   OUT_DIR=$OUT scripts/gpu_session.sh          # on the device, from the repository root
#
# Environment: OUT_DIR (default /tmp/gpu-session-out), LOG_DIR (default /tmp/gpu-session),
# CHECK_SECONDS (default 170), STUDY_SECONDS (default 280, and never past END_BY, default 580 s
# into the session), EXTRA_UNTIL (default 530: the extras start only in a younger session), and
# the knobs of the two scripts (ARCHS, PRECISIONS, GPU_STUDY_PRECISIONS, GPU_STUDY_LARGE_BATCHES).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${OUT_DIR:-/tmp/gpu-session-out}"
LOG_DIR="${LOG_DIR:-/tmp/gpu-session}"
CHECK_SECONDS="${CHECK_SECONDS:-170}"
STUDY_SECONDS="${STUDY_SECONDS:-280}"
END_BY="${END_BY:-580}"
export BUILD_DIR="${BUILD_DIR:-$ROOT/build-device}"
mkdir -p "$OUT_DIR" "$LOG_DIR"
failed=()
stamp() {
  echo "[gpu_session] $(date +%T) +$SECONDS s: $*" | tee -a "$LOG_DIR/session.log" >&2
  cp "$LOG_DIR/session.log" "$OUT_DIR/"
  tar -C "$(dirname "$LOG_DIR")" -czf "$OUT_DIR/session.tar.gz" "$(basename "$LOG_DIR")" 2>/dev/null
}

stamp "machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1), $(nproc) cores"
if ! "$ROOT/scripts/device_build.sh" >"$LOG_DIR/build.log" 2>&1; then
  stamp "build FAILED (build.log)"
  tail -60 "$LOG_DIR/build.log" >&2
  exit 1
fi
stamp "built"
# shellcheck disable=SC1091
. /tmp/ltfit-deps/env.sh

SKIP_SETUP=1 timeout -k 10 "$CHECK_SECONDS" "$ROOT/scripts/gpu_check.sh" >"$LOG_DIR/gpu_check.log" 2>&1 ||
  failed+=("gpu_check (exit $?)")
stamp "gpu_check done"
# The study's box ends by END_BY seconds into the session (the loan's command limit, less a margin).
study_box=$((END_BY - SECONDS < STUDY_SECONDS ? END_BY - SECONDS : STUDY_SECONDS))
((study_box >= 60)) || study_box=60
SKIP_SETUP=1 timeout -k 10 "$study_box" "$ROOT/bench/gpu_study.sh" \
  --budget-minutes $((study_box / 60)) --out "$LOG_DIR/gpu-study.md" >"$LOG_DIR/gpu_study.log" 2>&1 ||
  failed+=("gpu_study (exit $?)")
stamp "gpu_study done"
# One profiled epoch at the study's batch (train.profile: synchronised phases): where a step goes.
data=/tmp/ltfit-gpu-study/data
if ((SECONDS < ${EXTRA_UNTIL:-530})) && [[ -d "$data/train" ]]; then
  (cd "$ROOT" && timeout -k 5 $((${EXTRA_UNTIL:-530} + 40 - SECONDS)) "$BUILD_DIR/ltfit" train \
     --config configs/cats_dogs.yaml --set "data.root=$data" --set model.arch=resnet34 \
     --set model.pretrained=none --set data.batch_size=16 --set train.precision=fp16 \
     --set train.epochs=1 --set train.profile=true --set train.channels_last=true \
     --run-dir /tmp/gpu-profile --json >"$LOG_DIR/profile.json" 2>"$LOG_DIR/profile.log") ||
    failed+=("profiled epoch (exit $?)")
  cp /tmp/gpu-profile/timing.json "$LOG_DIR/profile-timing.json" 2>/dev/null
  stamp "profiled epoch done"
fi
# The CIFAR-10 guides' workload (issue 41): ResNet-50 with the CIFAR stem at batch 128 from
# CIFAR-format records, ltfit (host loader and data.cache device) beside torchvision's CIFAR10 +
# DataLoader and the model-only loop; 50,000 / img/s is an epoch beside the P100's 42 s.
if ((SECONDS < ${EXTRA_UNTIL:-530})); then
  DEVICE=cuda ARCH=resnet50 TRAIN=10000 EPOCHS=2 WORK=/tmp/ltfit-cifar-gpu \
    timeout -k 5 $((${EXTRA_UNTIL:-530} + 40 - SECONDS)) "$ROOT/bench/cifar_throughput.sh" \
    >"$LOG_DIR/cifar_throughput.md" 2>"$LOG_DIR/cifar_throughput.err" ||
    failed+=("cifar_throughput (exit $?)")
  stamp "cifar throughput done"
fi
# PyTorch's step three ways (eager with a sync per step, eager, CUDA graph): the ceiling for ltfit.
if ((SECONDS < ${EXTRA_UNTIL:-530})); then
  timeout -k 5 $((${EXTRA_UNTIL:-530} + 40 - SECONDS)) python3 "$ROOT/bench/torch_graph_ceiling.py" \
    --batches 16,64 --steps 100 >"$LOG_DIR/graph_ceiling.jsonl" 2>"$LOG_DIR/graph_ceiling.err" ||
    failed+=("graph_ceiling (exit $?)")
  stamp "graph ceiling done"
fi
cp /tmp/ltfit-gpu-study/experiment/results.csv /tmp/ltfit-gpu-study/experiment/report.md "$LOG_DIR/" 2>/dev/null
stamp "failed: ${failed[*]:-none}"
((${#failed[@]} == 0))
