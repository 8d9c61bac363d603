#!/usr/bin/env bash
# Configures and builds ltfit on a machine without network access (an air-gapped GPU box, say):
# nothing is installed. LibTorch is the one bundled with the Python torch already installed there
# (any version ltfit builds with); the other libraries come from the system, or from a prefix
# given in LTFIT_DEPS_PREFIX (CMake prefix paths, ';'-separated) and OpenCV_DIR.
#
#   scripts/build_offline.sh                       # ./build-offline: ltfit and ltfit_tests
#   LTFIT_DEPS_PREFIX=/opt/deps/usr OpenCV_DIR=/opt/opencv/lib/cmake/opencv4 \
#     BUILD_DIR=/tmp/b scripts/build_offline.sh
#
# Environment: BUILD_DIR (default ./build-offline), PYTHON (default python3), JOBS (default nproc),
# TARGETS (default "ltfit ltfit_tests").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-offline}"
PYTHON="${PYTHON:-python3}"
JOBS="${JOBS:-$(nproc)}"
TARGETS="${TARGETS:-ltfit ltfit_tests}"

log() { printf '\033[1m[build_offline]\033[0m %s\n' "$*" >&2; }

torch_prefix="$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')" || {
  log "no Python torch found by $PYTHON (set PYTHON to the interpreter that has it)"
  exit 2
}
log "LibTorch from torch $("$PYTHON" -c 'import torch; print(torch.__version__)') ($torch_prefix)"
prefix="$torch_prefix${LTFIT_DEPS_PREFIX:+;$LTFIT_DEPS_PREFIX}"
args=(-S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$prefix")
command -v ninja >/dev/null && args+=(-G Ninja)
[[ -n "${OpenCV_DIR:-}" ]] && args+=("-DOpenCV_DIR=$OpenCV_DIR")
cmake "${args[@]}" ${LTFIT_CMAKE_ARGS:-}
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" --parallel "$JOBS" --target $TARGETS
log "ready: $BUILD_DIR/ltfit"
