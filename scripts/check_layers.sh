#!/usr/bin/env bash
# The areas of src/ and include/ltfit/ depend one way, bottom to top:
#
#   util -> {formats, pictures} -> config -> {data, model, dist} -> run -> eval -> train -> jobs
#   -> study -> (apps)
#
# src/cuda/ is ltfit's CUDA half, a library of its own (include/ltfit/util/cuda_half.h): it may
# include util's headers, and it alone may include CUDA's (c10/cuda, ATen/cuda, the CUDA runtime,
# ProcessGroupNCCL), which would make the binary link LibTorch's CUDA half.
#
# An area may include its own headers and those of the areas below it; areas side by side (formats
# and pictures; data, model and dist) may not include each other. This script lists every `#include "ltfit/<area>/..."`
# (and `#include "<area>/..."` of a private header in src/) that points upward or sideways and
# exits 1 if there is one; CTest runs it ("areas depend one way"), so CI refuses such an include.
#
#   scripts/check_layers.sh [ROOT]     # ROOT: the repository (default: this script's parent)
set -euo pipefail

ROOT="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
declare -A LEVEL=([util]=0 [formats]=1 [pictures]=1 [config]=2 [data]=3 [model]=3 [dist]=3 [run]=4
                  [eval]=5 [train]=6 [jobs]=7 [study]=8 [serve]=8 [cuda]=9)

bad=0
checked=0
while IFS= read -r file; do
  rel="${file#"$ROOT"/}"
  case "$rel" in
    src/*) area="$(cut -d/ -f2 <<<"$rel")" ;;
    include/ltfit/*) area="$(cut -d/ -f3 <<<"$rel")" ;;
    *) continue ;;
  esac
  if [[ -z "${LEVEL[$area]+set}" ]]; then
    echo "$rel: area '$area' has no place in the order (add it to scripts/check_layers.sh)"
    bad=1
    continue
  fi
  checked=$((checked + 1))
  while IFS=: read -r line target; do
    to="${target%%/*}"
    [[ "$to" == "$area" ]] && continue
    if [[ -z "${LEVEL[$to]+set}" ]]; then
      echo "$rel:$line: includes '$target' of an unknown area '$to'"
      bad=1
    elif ((LEVEL[$to] >= LEVEL[$area])); then
      echo "$rel:$line: $area may not include $target ($to is not below $area)"
      bad=1
    fi
  done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$file" |
           sed -n -E 's@^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]+"(ltfit/)?([a-z_]+/[^"]+)".*@\1:\3@p')
done < <(find "$ROOT/src" "$ROOT/include/ltfit" -name '*.h' -o -name '*.cpp' | sort)

while IFS= read -r hit; do
  echo "${hit#"$ROOT"/}: a CUDA header outside src/cuda/ (use LibTorch's device-generic API or the CUDA half)"
  bad=1
done < <(grep -rn -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(c10/cuda/|ATen/cuda/|cuda_runtime|cuda\.h|nccl\.h|torch/csrc/distributed/c10d/ProcessGroupNCCL)' \
           "$ROOT/src" "$ROOT/include/ltfit" "$ROOT/apps" | grep -v "^$ROOT/src/cuda/" || true)

if ((bad)); then
  echo "check_layers: upward or sideways includes found (order: util -> formats|pictures -> config -> data|model|dist -> run -> eval -> train -> jobs -> study)"
  exit 1
fi
echo "check_layers: $checked files, every include points down the order"
