#!/usr/bin/env bash
# pandas as the oracle of ltfit's CSV reader: tests/data/csv_oracle.py writes tricky CSV files
# (BOM, CRLF, a lone CR, quoted line breaks and commas, empty fields, unicode, blank lines, no
# final line break, random tables from Python's csv module, a malformed file) into a temporary
# folder; the hidden "[csv_oracle]" test writes ltfit's parse of each as JSON next to it; the
# script compares them with pandas.read_csv(dtype=str, keep_default_na=False). Exits 77 (CTest:
# skipped) when Python cannot import pandas, 1 when a file reads differently.
#
#   tests/data/csv_oracle.sh path/to/ltfit_tests
set -euo pipefail
TESTS="${1:?usage: $0 path/to/ltfit_tests}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import pandas" 2>/dev/null; then
  echo "SKIPPED: Python pandas is not installed (pip install pandas)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" "$HERE/csv_oracle.py" write "$WORK"
LTFIT_CSV_ORACLE_DIR="$WORK" "$TESTS" "[csv_oracle]"
"$PYTHON" "$HERE/csv_oracle.py" check "$WORK"
