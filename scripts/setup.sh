#!/usr/bin/env bash
# Installs what ltfit needs (only what is missing), then configures and builds it.
# Idempotent: a second run on a ready machine only rebuilds what changed.
#
#   scripts/setup.sh                       # Release build in ./build
#   BUILD_DIR=out scripts/setup.sh
#   PREFIX=$HOME/.local scripts/setup.sh   # then install: $PREFIX/bin/ltfit, share/ltfit/configs
#   TARGETS=ltfit scripts/setup.sh         # build only the binary (the quickstart does this)
#
# Prints each phase's time (packages, wheel, configure, build) when it ends.
#
# LibTorch comes from the pinned PyPI torch wheel (its bundled C++ library; a CUDA build that
# also runs without a GPU). To build against an official LibTorch zip instead, configure by hand
# with -DCMAKE_PREFIX_PATH=/path/to/libtorch.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
PREFIX="${PREFIX:-}"  # empty: build only
TORCH_VERSION="2.15.0"
PYTHON="${PYTHON:-python3}"
TARGETS="${TARGETS:-}"  # empty: everything (the binary, the tests, the fuzz-free extras)
APT_PACKAGES=(build-essential cmake ninja-build ccache pkg-config libopencv-dev libjpeg62-turbo-dev
              libyaml-cpp-dev libre2-dev
              libspdlog-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev
              libcurl4-openssl-dev libssl-dev libgloo-dev libprotobuf-dev protobuf-compiler
              libboost-dev)

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

# Runs phase NAME FUNCTION and logs how long it took.
phase() {
  local name=$1 start=$SECONDS
  "$2"
  log "phase $name: $((SECONDS - start)) s"
}

install_apt_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
}

install_torch() {
  if "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$TORCH_VERSION' else 1)" 2>/dev/null; then
    return
  fi
  log "installing torch==$TORCH_VERSION from PyPI (its LibTorch is what ltfit links)"
  "$PYTHON" -m pip install -q "torch==$TORCH_VERSION"
}

configure() {
  local prefix
  prefix="$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"
  if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
    log "configuring $BUILD_DIR"
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  fi
}

build() {
  log "building ${TARGETS:-everything} (the first build takes several minutes on two cores)"
  # shellcheck disable=SC2086
  cmake --build "$BUILD_DIR" --parallel "$(nproc)" ${TARGETS:+--target $TARGETS}
}

install_ltfit() {
  log "installing into $PREFIX"
  local sudo=""
  mkdir -p "$PREFIX" 2>/dev/null || true
  [[ -w "$PREFIX" || $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo cmake --install "$BUILD_DIR" --prefix "$PREFIX" >/dev/null
  case ":$PATH:" in
    *":$PREFIX/bin:"*) ;;
    *) log "add $PREFIX/bin to PATH to run plain 'ltfit'" ;;
  esac
}

phase packages install_apt_packages
phase wheel install_torch
phase configure configure
phase build build
if [[ -n "$PREFIX" ]]; then
  install_ltfit
  log "ready: $PREFIX/bin/ltfit (configs: $PREFIX/share/ltfit/configs)"
else
  log "ready: $BUILD_DIR/ltfit"
fi
