#!/usr/bin/env bash
# notebooks/kaggle_vs_colab.ipynb executed headless (jupyter nbconvert --execute) in its tiny CPU
# mode with the ltfit just built, so the notebook Kaggle and Colab users open cannot rot: every
# cell must run, the experiment must write its report with this machine's envinfo, and the
# notebook's last cell checks that results.csv has runs. Exits 77 (CTest: skipped) where
# nbconvert or ipykernel is missing (scripts/bench_deps.sh installs them).
#
#   tests/notebook/notebook_tiny_test.sh <path to ltfit>
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LTFIT="$(realpath "${1:?usage: notebook_tiny_test.sh <path to ltfit>}")"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import nbconvert, ipykernel" 2>/dev/null; then
  echo "SKIPPED: $PYTHON lacks nbconvert or ipykernel (scripts/bench_deps.sh installs them)"
  exit 77
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/ltfit-notebook-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
LTFIT_NOTEBOOK_TINY=1 LTFIT_BIN="$LTFIT" LTFIT_SOURCE="$ROOT" LTFIT_NOTEBOOK_WORK="$work" \
  "$PYTHON" -m jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=240 \
  "$ROOT/notebooks/kaggle_vs_colab.ipynb" --output "$work/executed.ipynb" >"$work/nbconvert.log" 2>&1 ||
  { cat "$work/nbconvert.log"; echo "FAIL: the notebook did not run to its end"; exit 1; }
report="$work/experiment/report.md"
[[ -s "$report" ]] || { echo "FAIL: no report at $report"; exit 1; }
grep -q '^| cores | ' "$report" || { echo "FAIL: the report has no machine table"; exit 1; }
grep -q '| ok |' "$report" || { echo "FAIL: no run finished ok"; cat "$report"; exit 1; }
echo "notebook: every cell ran; report with $(grep -c '| ok |' "$report") ok run(s)"
