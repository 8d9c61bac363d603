#!/usr/bin/env bash
# fastai's own code as the oracle of ltfit's pattern layout: tests/data/layout_oracle.py writes a
# tree of tiny images, the hidden "[.layout_oracle]" test indexes it (labels from
# data.label_pattern, split by data.valid_pct and the seed) and writes what it found, and the
# script checks it against fastai's RegexLabeller and RandomSplitter on the same sorted files.
# Usage: layout_oracle.sh LTFIT_TESTS_BINARY. Exits 77 (CTest: skipped) when Python cannot find
# fastai, torch and PIL.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/layout_oracle.py" "[.layout_oracle]" LTFIT_LAYOUT_ORACLE_DIR \
  "fastai, torch, PIL" "fastai" make check
