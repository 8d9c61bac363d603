#!/usr/bin/env bash
# Builds ltfit on a bare, offline GPU machine from the archive scripts/device_deps.sh made
# (carried there as deps/device-deps.tar.xz): unpacks it, points CMake at its libraries and the
# static OpenCV, builds with scripts/build_offline.sh against the machine's own Python torch, then
# activates, of the archive's runtime libraries, only those the machine lacks (repeating ldd
# until nothing is missing), and writes an environment file to source before running ltfit:
#
#   scripts/device_build.sh && . /tmp/ltfit-deps/env.sh && build-device/ltfit envinfo
#
# Environment: ARCHIVE (default deps/device-deps.tar.xz), DEST (default /tmp), BUILD_DIR (default
# ./build-device), TARGETS (default "ltfit ltfit_tests"), PYTHON (default python3), JOBS.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ARCHIVE="${ARCHIVE:-$ROOT/deps/device-deps.tar.xz}"
DEST="${DEST:-/tmp}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-device}"
PYTHON="${PYTHON:-python3}"
D="$DEST/ltfit-deps"
R="$D/root"
LIBDIRS=("$R/usr/lib/x86_64-linux-gnu" "$R/lib/x86_64-linux-gnu")
ACTIVE="$D/active"

log() { printf '\033[1m[device_build]\033[0m %s\n' "$*" >&2; }

[[ -f "$ARCHIVE" ]] || { log "no $ARCHIVE: make it with scripts/device_deps.sh and carry it"; exit 2; }
rm -rf "$D"
tar -C "$DEST" -xJf "$ARCHIVE"

# Absolute links (libz.so -> /lib/...) point into the archive instead.
while IFS= read -r link; do
  target="$(readlink "$link")"
  [[ "$target" == /* ]] && ln -sfn "$R$target" "$link"
done < <(find "$R" -type l)

# OpenCV's CMake config names the packing machine's libjpeg, libpng and zlib by absolute path.
for dir in "${LIBDIRS[@]}"; do [[ -d "$dir" ]] && break; done
grep -rl '/usr/lib/x86_64-linux-gnu/' "$D/opencv/lib/cmake" 2>/dev/null |
  xargs -r sed -i "s#/usr/lib/x86_64-linux-gnu/#${LIBDIRS[0]}/#g"

# protoc runs at build time with the archive's libprotoc and libprotobuf.
mkdir -p "$D/bin"
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "${LIBDIRS[0]}:${LIBDIRS[1]}" \
  "$R/usr/bin/protoc" >"$D/bin/protoc"
chmod +x "$D/bin/protoc"

export LTFIT_DEPS_PREFIX="$R/usr"
export OpenCV_DIR="$D/opencv/lib/cmake/opencv4"
export LTFIT_CMAKE_ARGS="-DProtobuf_PROTOC_EXECUTABLE=$D/bin/protoc -DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,${LIBDIRS[0]}:${LIBDIRS[1]} -DLTFIT_USE_PCH=ON"
BUILD_DIR="$BUILD_DIR" PYTHON="$PYTHON" "$ROOT/scripts/build_offline.sh"

# Activate only the libraries the machine lacks: the machine's own stay in use where it has them.
mkdir -p "$ACTIVE"
torch_lib="$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
for round in 1 2 3 4 5 6 7 8; do
  missing="$(for bin in "$BUILD_DIR/ltfit" "$BUILD_DIR/libltfit_cuda.so" "$BUILD_DIR/tests/ltfit_tests"; do
               [[ -x "$bin" ]] && LD_LIBRARY_PATH="$ACTIVE:$torch_lib" ldd "$bin"
             done | awk '/not found/ {print $1}' | sort -u)"
  [[ -z "$missing" ]] && break
  for so in $missing; do
    found=""
    for dir in "${LIBDIRS[@]}"; do
      [[ -e "$dir/$so" ]] && { cp -L "$dir/$so" "$ACTIVE/"; found=1; break; }
    done
    [[ -n "$found" ]] || { log "no $so on this machine or in the archive"; exit 1; }
  done
  log "round $round: activated $(echo "$missing" | tr '\n' ' ')"
done
printf 'export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$ACTIVE" >"$D/env.sh"
log "ready: $BUILD_DIR/ltfit (source $D/env.sh first)"
