#!/usr/bin/env bash
# PyTorch as the oracle of ltfit's temperature scaling and ECE (src/eval/calibration.cpp):
# tests/eval/calibration_oracle.py writes logit sets (over- and under-confident, calibrated,
# uninformative; 2 and 10 classes; multi-label) and probability sets on Guo's bin edges, the
# hidden "[.][calibration_oracle]" test fits and bins them with ltfit and writes its figures, and
# the script compares them with the textbook PyTorch fit (nn.Parameter temperature, optim.LBFGS,
# cross-entropy or BCE; T within 1e-3, NLL after within 1e-6) and Guo et al.'s _ECELoss binning
# (ECE within 1e-6, bin counts equal). Usage: calibration_oracle.sh LTFIT_TESTS_BINARY.
# Exits 77 (CTest: skipped) when Python cannot import torch.
set -euo pipefail
TESTS="$1"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "SKIPPED: Python torch is not installed (pip install torch)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" "$HERE/calibration_oracle.py" write "$WORK"
LTFIT_CALIBRATION_ORACLE_DIR="$WORK" "$TESTS" "[calibration_oracle]"
"$PYTHON" "$HERE/calibration_oracle.py" compare "$WORK"
