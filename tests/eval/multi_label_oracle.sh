#!/usr/bin/env bash
# fastai's and scikit-learn's own code as the oracle of ltfit's multi-label figures:
# tests/eval/multi_label_oracle.py writes random cases, the hidden "[.multi_label_oracle]" test
# scores them with src/eval/multi_label_metrics.cpp and writes ltfit's figures, and the script
# compares them with fastai's accuracy_multi / F1ScoreMulti / FBetaMulti and scikit-learn's
# fbeta_score, precision_recall_fscore_support, average_precision_score and
# precision_recall_curve (tolerance 1e-9). Usage: multi_label_oracle.sh LTFIT_TESTS_BINARY.
# Exits 77 (CTest: skipped) when Python cannot import fastai, scikit-learn and torch.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/multi_label_oracle.py" "[.multi_label_oracle]" LTFIT_MULTI_LABEL_ORACLE_DIR \
  "numpy, torch, sklearn, fastai.metrics" "fastai scikit-learn"
