#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan), writes their seed corpora, and runs
# each target for SECONDS (default 30, as CI does; e.g. `scripts/fuzz.sh 600` for a longer hunt).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # targets: zip pickle checkpoint image_header config resample csv cifar shards safetensors jpeg
#
# Needs clang++ and libclang-rt-dev (scripts/ci_deps.sh installs them). BUILD_DIR (default
# build-fuzz) keeps the build, the growing corpora (corpus/<target>, reused by the next run),
# logs/ and artifacts/ (an input that crashed, timed out or ran out of memory). With
# LTFIT_BUILD_LOCK=FILE, the build runs under `flock FILE` (machines shared by several builds).
# Prints one line per target (executions, executions/s, coverage, findings) and exits 1 when any
# target found something, each finding's input kept under artifacts/ with its log.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-fuzz}"
SECONDS_PER_TARGET="${1:-30}"
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(zip pickle checkpoint image_header config resample csv cifar shards safetensors jpeg)
PYTHON="${PYTHON:-python3}"
WORK="$BUILD_DIR/fuzz-work"

log() { printf '\033[1m[fuzz]\033[0m %s\n' "$*" >&2; }
locked() { if [[ -n "${LTFIT_BUILD_LOCK:-}" ]]; then flock "$LTFIT_BUILD_LOCK" "$@"; else "$@"; fi; }

build() {
  if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
    local prefix
    prefix="$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
    log "configuring $BUILD_DIR (clang, LTFIT_FUZZ=ON)"
    CXX="${CXX_FUZZ:-clang++}" cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLTFIT_FUZZ=ON -DLTFIT_BUILD_TESTS=OFF \
      -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  fi
  log "building the fuzz targets"
  locked cmake --build "$BUILD_DIR" --target fuzz_all --parallel "$(nproc)"
}

make_seeds() {
  rm -rf "$WORK/seeds" "$WORK/torch"
  mkdir -p "$WORK"
  if "$PYTHON" "$ROOT/fuzz/torch_seeds.py" "$WORK/torch" 2>"$WORK/torch_seeds.log"; then
    log "Python torch.save seeds written"
  else
    log "no Python torch.save seeds ($(tail -1 "$WORK/torch_seeds.log"))"
  fi
  # Seeds are checked against their targets here: a seed the reader no longer accepts fails.
  "$BUILD_DIR/fuzz/ltfit_fuzz_seeds" "$WORK/seeds" "$WORK/torch" 2>"$WORK/seeds.log" ||
    { cat "$WORK/seeds.log" >&2; return 1; }
}

# Runs one target; prints its summary line; returns non-zero on a finding.
run_target() {
  local t=$1 dict=()
  if [[ ! -x "$BUILD_DIR/fuzz/fuzz_$t" ]]; then  # jpeg: only where libjpeg-turbo was found
    printf 'fuzz %-13s skipped  (not built: %s)\n' "$t" "$BUILD_DIR/fuzz/fuzz_$t"
    return 0
  fi
  mkdir -p "$WORK/corpus/$t" "$WORK/artifacts" "$WORK/logs"
  [[ -f "$WORK/seeds/$t.dict" ]] && dict=(-dict="$WORK/seeds/$t.dict")
  local rc=0
  # -timeout: one input may take at most 30 s; -rss_limit_mb: the process at most 2 GiB (a
  # reader that lets a small file allocate gigabytes is a finding, reported as out-of-memory).
  timeout -s KILL $((SECONDS_PER_TARGET + 300)) \
    "$BUILD_DIR/fuzz/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=30 \
    -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$WORK/artifacts/$t-" "$WORK/corpus/$t" "$WORK/seeds/$t" \
    >"$WORK/logs/$t.log" 2>&1 || rc=$?
  local runs speed cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/logs/$t.log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$WORK/logs/$t.log" | tail -1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$WORK/logs/$t.log" | tail -1)
  if ((rc == 0)); then
    printf 'fuzz %-13s ok       %8s runs %6s/s  %s\n' "$t" "${runs:-?}" "${speed:-?}" "$cov"
    return 0
  fi
  printf 'fuzz %-13s FINDING  %8s runs %6s/s  %s (exit %d)\n' "$t" "${runs:-?}" "${speed:-?}" \
    "$cov" "$rc"
  grep -E -m1 -A40 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|==ERROR|invariant broken|deadly signal|uncaught' \
    "$WORK/logs/$t.log" | head -60 >&2 || tail -40 "$WORK/logs/$t.log" >&2
  ls "$WORK/artifacts/$t-"* 2>/dev/null | sed 's/^/  input: /' >&2 || true
  return 1
}

build
make_seeds
log "running ${#TARGETS[@]} target(s) for ${SECONDS_PER_TARGET}s each"
failed=0
for t in "${TARGETS[@]}"; do run_target "$t" || failed=$((failed + 1)); done
total=${#TARGETS[@]}
passed=$((total - failed))
percent=$(((passed * 100 + total / 2) / total))
((failed > 0 && percent > 99)) && percent=99
# CTest's closing line, one "test" per target (.ci/run adds these up).
echo "fuzz: ${percent}% tests passed, ${failed} tests failed out of ${total}"
((failed == 0))
