#!/usr/bin/env bash
# The loader's tests under ThreadSanitizer (a CI step; also by hand): the `tsan` preset's
# settings (Debug, LTFIT_SANITIZE_THREAD, LibTorch headers precompiled), then
# `ltfit_tests "[loader]~[rlimit]"`. The PCH is on because it halves the build on two cores and
# because without it many test files see c10's CHECK macro replace Catch's (they include Catch
# before LibTorch).
#
#   scripts/ci_tsan.sh                          # builds build-tsan (first time: ~15 min on 2 cores)
#   BUILD_DIR=out TSAN_TESTS='[loader]' scripts/ci_tsan.sh
#
# Our code is instrumented; LibTorch, OpenCV and the other libraries are not, so races inside
# them are not seen (and their own synchronisation is invisible to TSan: scripts/sanitizers/
# tsan.supp names the third-party frames that produce false reports, each with why). Tests that
# need an address-space cap ([rlimit]) cannot run under TSan and are left out. Every report is
# written to BUILD_DIR/sanitizer-logs/ and fails this step even when the tests passed.
# LTFIT_BUILD_LOCK=FILE builds under `flock FILE`; LTFIT_TSAN_TIMEOUT (seconds, default 900)
# bounds the test run (exit 124 when it runs out). The last line is the summary.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-tsan}"
PYTHON="${PYTHON:-python3}"
TESTS="${TSAN_TESTS:-[loader]~[rlimit]}"
LOGS="$BUILD_DIR/sanitizer-logs"

log() { printf '\033[1m[tsan]\033[0m %s\n' "$*" >&2; }
locked() { if [[ -n "${LTFIT_BUILD_LOCK:-}" ]]; then flock "$LTFIT_BUILD_LOCK" "$@"; else "$@"; fi; }

if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  prefix="$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
  log "configuring $BUILD_DIR (ThreadSanitizer, Debug, PCH: the tsan preset)"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLTFIT_SANITIZE_THREAD=ON \
    -DLTFIT_USE_PCH=ON -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
fi
log "building ltfit_tests"
locked cmake --build "$BUILD_DIR" --parallel "$(nproc)" --target ltfit_tests

rm -rf "$LOGS"
mkdir -p "$LOGS"
export TSAN_OPTIONS="log_path=$LOGS/tsan:halt_on_error=0:second_deadlock_stack=1:history_size=4:suppressions=$ROOT/scripts/sanitizers/tsan.supp:print_suppressions=0"
# One libgomp thread: LibTorch's OpenMP pool synchronises in code TSan cannot see.
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
log "running ltfit_tests \"$TESTS\""
rc=0
timeout "${LTFIT_TSAN_TIMEOUT:-900}" "$BUILD_DIR/tests/ltfit_tests" "$TESTS" \
  >"$BUILD_DIR/tsan-tests.log" 2>&1 || rc=$?
# The tests' own log lines (skipped images...) left out; Catch's report and failures kept.
grep -vE '^\[[0-9-]+ [0-9:.]+\] \[(warning|info)\]' "$BUILD_DIR/tsan-tests.log" | tail -80 || true
reports=("$LOGS"/*)
if [[ -e "${reports[0]}" ]]; then
  log "${#reports[@]} ThreadSanitizer report file(s):"
  for r in "${reports[@]}"; do
    echo "==== $r"
    head -60 "$r"
  done
  rc=1
fi
summary=$(grep -E '^(All tests passed|test cases:)' "$BUILD_DIR/tsan-tests.log" | tail -1 || true)
echo "tsan: $([[ -e "${reports[0]}" ]] && echo "${#reports[@]} report file(s); ")${summary:-no test summary (build or run failed, rc $rc)}"
exit "$rc"
