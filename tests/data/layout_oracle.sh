#!/usr/bin/env bash
# fastai's own code as the oracle of ltfit's pattern layout: tests/data/layout_oracle.py writes a
# tree of tiny images, the hidden "[.layout_oracle]" test indexes it (labels from
# data.label_pattern, split by data.valid_pct and the seed) and writes what it found, and the
# script checks it against fastai's RegexLabeller and RandomSplitter on the same sorted files.
# Usage: layout_oracle.sh LTFIT_TESTS_BINARY. Exits 77 (CTest: skipped) when Python cannot find
# fastai, torch and PIL.
set -euo pipefail
TESTS="$1"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! "$PYTHON" -c "import fastai, torch, PIL" 2>/dev/null; then
  echo "SKIPPED: Python fastai (or torch, PIL) is not installed (pip install fastai)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" "$HERE/layout_oracle.py" make "$WORK"
LTFIT_LAYOUT_ORACLE_DIR="$WORK" "$TESTS" "[.layout_oracle]"
"$PYTHON" -W ignore "$HERE/layout_oracle.py" check "$WORK"
