#!/usr/bin/env bash
# The three steps of a test whose oracle is a Python package, shared by the *_oracle.sh scripts:
# SCRIPT.py writes the problems into a fresh folder (its first verb), the hidden Catch2 test TAG of
# the ltfit_tests binary solves them with ltfit (the folder in the environment variable DIR_VAR),
# and SCRIPT.py compares the answers (its second verb). Exits 77 (CTest: skipped) when Python
# cannot import IMPORTS, naming PACKAGES to install; otherwise the first failing step's status.
#
#   python_oracle.sh TESTS SCRIPT.py TAG DIR_VAR "IMPORTS" "PACKAGES" [WRITE_VERB COMPARE_VERB]
#   e.g. python_oracle.sh build/tests/ltfit_tests tests/eval/calibration_oracle.py \
#          "[calibration_oracle]" LTFIT_CALIBRATION_ORACLE_DIR "torch" "torch"
set -euo pipefail
TESTS="$1" SCRIPT="$2" TAG="$3" DIR_VAR="$4" IMPORTS="$5" PACKAGES="$6"
WRITE="${7:-write}" COMPARE="${8:-compare}"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import $IMPORTS" 2>/dev/null; then
  echo "SKIPPED: Python $PACKAGES is not installed (pip install $PACKAGES)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" "$SCRIPT" "$WRITE" "$WORK"
env "$DIR_VAR=$WORK" "$TESTS" "$TAG"
"$PYTHON" -W ignore "$SCRIPT" "$COMPARE" "$WORK"
