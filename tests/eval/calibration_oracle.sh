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
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/calibration_oracle.py" "[calibration_oracle]" LTFIT_CALIBRATION_ORACLE_DIR \
  "torch" "torch"
