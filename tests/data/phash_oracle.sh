#!/usr/bin/env bash
# The Python imagehash.phash as the oracle of ltfit's perceptual hash: tests/data/phash_oracle.py
# writes generated pictures (and their 32x32 grey reductions), the hidden "[.phash_oracle]" test
# hashes them with src/data/duplicates.cpp, and the script compares: the 32x32 ones bit for bit,
# the full pictures within a few bits (OpenCV's area filter against Pillow's Lanczos). Usage:
# phash_oracle.sh LTFIT_TESTS_BINARY. Exits 77 (CTest: skipped) when Python cannot import
# imagehash.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/phash_oracle.py" "[.phash_oracle]" LTFIT_PHASH_ORACLE_DIR \
  "imagehash, numpy, PIL" "imagehash"
