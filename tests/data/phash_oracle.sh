#!/usr/bin/env bash
# The Python imagehash.phash as the oracle of ltfit's perceptual hash: tests/data/phash_oracle.py
# writes generated pictures (and their 32x32 grey reductions), the hidden "[.phash_oracle]" test
# hashes them with src/data/duplicates.cpp, and the script compares: the 32x32 ones bit for bit,
# the full pictures within a few bits (OpenCV's area filter against Pillow's Lanczos). Usage:
# phash_oracle.sh LTFIT_TESTS_BINARY. Exits 77 (CTest: skipped) when Python cannot import
# imagehash.
set -euo pipefail
TESTS="$1"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! "$PYTHON" -c "import imagehash, numpy, PIL" 2>/dev/null; then
  echo "SKIPPED: Python imagehash is not installed (pip install imagehash)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" "$HERE/phash_oracle.py" write "$WORK"
LTFIT_PHASH_ORACLE_DIR="$WORK" "$TESTS" "[.phash_oracle]"
"$PYTHON" "$HERE/phash_oracle.py" compare "$WORK"
