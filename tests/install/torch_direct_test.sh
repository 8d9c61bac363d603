#!/usr/bin/env bash
# The shipping modes of cmake/torch_direct.cmake and cmake/bundle.cmake, configured (not built:
# scripts/container_check.sh builds and runs them by hand) from this checkout into temporary
# build trees, with the toolkit hidden (CUDAToolkit_ROOT and nvcc pointing nowhere):
# 1. LTFIT_CPU_ONLY configures without a CUDA toolkit; ltfit links libtorch_cpu and libc10 and
#    no CUDA half (no libtorch_cuda, libc10_cuda, libtorch.so); LTFIT_CPU_ONLY is defined;
# 2. LTFIT_TORCH_DIRECT configures without a CUDA toolkit; ltfit links LibTorch's CPU half alone
#    and ltfit's CUDA half (libltfit_cuda.so) links LibTorch's (libtorch_cuda kept with
#    --no-as-needed) with the wheel's CUDA headers on its path, and installs into the bundle's
#    lib/; without nvidia-cuda-crt (crt/host_defines.h) beside the wheel it stops and names the
#    package;
# 3. LTFIT_BUNDLE sets ltfit's install RUNPATH to $ORIGIN/../lib, installs runtime dependencies
#    and runtime-packages.txt, and writes a cpack config for ltfit-*-cpu.tar.gz.
#
#   tests/install/torch_direct_test.sh SOURCE_DIR TORCH_CMAKE_PREFIX
set -uo pipefail

SRC="$(realpath "${1:?usage: $0 SOURCE_DIR TORCH_CMAKE_PREFIX}")"
PREFIX="${2:?usage: $0 SOURCE_DIR TORCH_CMAKE_PREFIX}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

configure() {  # NAME FLAGS...
  local name="$1"; shift
  if ! cmake -S "$SRC" -B "$WORK/$name" -G Ninja -DLTFIT_BUILD_TESTS=OFF \
       -DCMAKE_PREFIX_PATH="$PREFIX" -DCUDAToolkit_ROOT="$WORK/no-toolkit" \
       -DCMAKE_CUDA_COMPILER="$WORK/no-toolkit/nvcc" "$@" >"$WORK/$name.log" 2>&1; then
    cat "$WORK/$name.log"
    fail "$name: configure failed"
    return 1
  fi
}
# The link line and compile flags ninja would use for ltfit and ltfit_core.
link_of() { grep -A6 "^build ${2:-ltfit}:" "$WORK/$1/build.ninja" | grep "LINK_LIBRARIES"; }
defines_of() { grep -m1 "^  DEFINES" "$WORK/$1/build.ninja"; }
# The include flags of the first object of ltfit_core, or of the CUDA half's (cuda_half).
includes_of() {
  if [[ "${2:-}" == cuda_half ]]; then
    grep -A8 "^build CMakeFiles/ltfit_cuda.dir/" "$WORK/$1/build.ninja" | grep -m1 "^  INCLUDES"
  else
    grep -m1 "^  INCLUDES" "$WORK/$1/build.ninja"
  fi
}

# The torch prefix from CMAKE_PREFIX_PATH's share/cmake entry; without one (a LibTorch found some
# other way) there is nothing to configure against: skipped, visibly (exit 77).
torch_root=""
for dir in ${PREFIX//;/ }; do
  [[ -f "$dir/Torch/TorchConfig.cmake" ]] && torch_root="$(realpath "$dir/../..")"
done
if [[ -z "$torch_root" ]]; then
  echo "SKIP: no Torch/TorchConfig.cmake under CMAKE_PREFIX_PATH '$PREFIX'"
  exit 77
fi

# 1. CPU only
if configure cpu -DLTFIT_CPU_ONLY=ON -DLTFIT_BUNDLE=ON; then
  link="$(link_of cpu)"
  [[ "$link" == *libtorch_cpu.so* && "$link" == *libc10.so* ]] || fail "cpu: no torch_cpu/c10: $link"
  for lib in libtorch_cuda libc10_cuda libtorch.so; do
    [[ "$link" != *"$lib"* ]] || fail "cpu: links $lib: $link"
  done
  defines_of cpu | grep -q -- "-DLTFIT_CPU_ONLY" || fail "cpu: LTFIT_CPU_ONLY not defined"
  if defines_of cpu | grep -q -- "-DLTFIT_WITH_NCCL"; then fail "cpu: NCCL in a CPU-only build"; fi
  if grep -q "^build libltfit_cuda.so:" "$WORK/cpu/build.ninja"; then fail "cpu: a CUDA half"; fi
  # 3. the bundle's install rules and package
  install_rules="$WORK/cpu/cmake_install.cmake"
  grep -q 'RPATH.*\$ORIGIN/../lib' "$install_rules" || fail "bundle: RUNPATH not \$ORIGIN/../lib"
  grep -q "GET_RUNTIME_DEPENDENCIES\|get_runtime_dependencies" "$install_rules" \
    || fail "bundle: no runtime dependencies installed"
  grep -q "runtime-packages.txt" "$install_rules" || fail "bundle: no runtime-packages.txt"
  grep -q 'CPACK_PACKAGE_FILE_NAME "ltfit-.*-cpu"' "$WORK/cpu/CPackConfig.cmake" \
    || fail "bundle: no cpack config for the cpu tarball"
fi

# 2. CUDA LibTorch without the toolkit. Its CUDA headers need nvidia-cuda-crt beside the wheel's
# packages; without it the configure must stop and name the package.
if [[ ! -f "$torch_root/lib/libtorch_cuda.so" ]]; then
  echo "direct: $torch_root is a CPU LibTorch (no libtorch_cuda.so): nothing to link, skipped"
elif ! ls "$torch_root"/../nvidia/*/include/crt/host_defines.h >/dev/null 2>&1; then
  if cmake -S "$SRC" -B "$WORK/nocrt" -G Ninja -DLTFIT_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH="$PREFIX" \
       -DLTFIT_TORCH_DIRECT=ON >"$WORK/nocrt.log" 2>&1; then
    fail "direct: configured although crt/host_defines.h is missing"
  fi
  grep -q 'cuda-toolkit\[crt\]' "$WORK/nocrt.log" || { cat "$WORK/nocrt.log"; fail "direct: no hint naming cuda-toolkit[crt]"; }
  echo "direct: no nvidia-cuda-crt beside the wheel here: the configure stops and names it (checked)"
elif configure direct -DLTFIT_TORCH_DIRECT=ON -DLTFIT_BUNDLE=ON; then
  link="$(link_of direct)"
  [[ "$link" == *libtorch_cpu.so* && "$link" == *libc10.so* ]] || fail "direct: no torch_cpu/c10: $link"
  for lib in libtorch_cuda libc10_cuda libtorch.so libcudart; do
    [[ "$link" != *"$lib"* ]] || fail "direct: ltfit links $lib: $link"
  done
  link="$(link_of direct libltfit_cuda.so)"
  [[ "$link" == *"--no-as-needed,"*libtorch_cuda.so* ]] || fail "direct: libtorch_cuda not kept: $link"
  [[ "$link" == *libc10_cuda.so* ]] || fail "direct: no libc10_cuda in the CUDA half: $link"
  for header_dir in $(includes_of direct cuda_half | grep -o -- "-isystem [^ ]*" | cut -d' ' -f2); do
    [[ -f "$header_dir/cuda_runtime_api.h" ]] && found_cuda_headers=1
  done
  [[ "${found_cuda_headers:-0}" == 1 ]] || fail "direct: no cuda_runtime_api.h on the CUDA half's include path"
  for header_dir in $(includes_of direct | grep -o -- "-isystem [^ ]*" | cut -d' ' -f2); do
    [[ ! -f "$header_dir/cuda_runtime_api.h" ]] || fail "direct: CUDA headers on ltfit_core's path"
  done
  if defines_of direct | grep -q -- "-DLTFIT_CPU_ONLY"; then fail "direct: LTFIT_CPU_ONLY defined"; fi
  grep -q "libltfit_cuda.so" "$WORK/direct/cmake_install.cmake" ||
    fail "direct bundle: the CUDA half is not installed"
fi

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "torch_direct: CPU-only, direct CUDA and bundle configurations as expected"
