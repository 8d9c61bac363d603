#!/usr/bin/env bash
# Builds bench/probes/lazy_cuda_probe.cpp against LibTorch's CPU half only (libtorch_cpu, libc10)
# and runs it: does loading libtorch_cuda.so after start-up register the CUDA kernels? Needs the
# PyPI torch wheel (its CUDA build); no GPU. About a minute, most of it compiling.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
torch_dir="$("$PYTHON" -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
out="${OUT:-$(mktemp -d)}"
nvidia_libs=("$torch_dir"/../nvidia/*/lib)
rpath_link=()
for dir in "${nvidia_libs[@]}"; do rpath_link+=("-Wl,-rpath-link,$dir"); done
"${CXX:-c++}" -std=c++20 -O1 -o "$out/lazy_cuda_probe" "$ROOT/bench/probes/lazy_cuda_probe.cpp" \
  -isystem "$torch_dir/include" -L "$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" \
  "${rpath_link[@]}" -ltorch_cpu -lc10 -ldl
echo "linked against: $(readelf -d "$out/lazy_cuda_probe" | grep NEEDED | grep -o 'lib[a-z0-9_]*\.so[.0-9]*' | tr '\n' ' ')"
echo "== CUDA hooks not asked for before the load"
"$out/lazy_cuda_probe" "$torch_dir/lib/libtorch_cuda.so"
echo "== CUDA hooks asked for before the load (as torch::cuda::is_available() would)"
"$out/lazy_cuda_probe" "$torch_dir/lib/libtorch_cuda.so" --ask-first || true
