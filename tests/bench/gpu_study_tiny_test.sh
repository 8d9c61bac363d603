#!/usr/bin/env bash
# bench/gpu_study.sh --tiny on CPU, so the GPU study script cannot rot between lent GPUs: it must
# synthesize, run the experiment's runs, run the PyTorch peer where torch and torchvision are
# installed, and write a report with every section. CTest runs it as `gpu_study_tiny`.
#
#   tests/bench/gpu_study_tiny_test.sh <path to ltfit>
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LTFIT="${1:?usage: gpu_study_tiny_test.sh <path to ltfit>}"
work="$(mktemp -d "${TMPDIR:-/tmp}/ltfit-gpu-study-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
LTFIT="$LTFIT" "$ROOT/bench/gpu_study.sh" --tiny --work "$work" --out "$work/report.md"
report="$work/report.md"
fail() { echo "FAIL: $*"; echo "---- $report"; cat "$report"; exit 1; }
[[ -s "$report" ]] || fail "no report"
for section in "## ltfit: the study's runs" "## Beside PyTorch on the same images" \
               "## The goals (issue 25)" "## Time" "## The experiment's own report"; do
  grep -qF "$section" "$report" || fail "no section '$section'"
done
ok=$(grep -c '^| 1 epoch.* | ok | ' "$report" || true)
((ok == 3)) || fail "expected 3 ok runs, found $ok"
grep -q '^| 8 | [0-9]* | [0-9.]* % | [0-9]* | [0-9.]*× |$' "$report" ||
  grep -q '^PyTorch peer not run: torch_study_peer.py exited 1 ' "$report" ||
  fail "neither the peer's batch-8 row beside ltfit's nor the reason it did not run"
grep -q '^- data wait < 5 %: [0-9.]* %' "$report" || fail "no data-wait figure in the goals"
echo "gpu_study --tiny: report with 3 runs$(grep -q '^| 8 | ' "$report" && echo ' and the PyTorch peer')"
