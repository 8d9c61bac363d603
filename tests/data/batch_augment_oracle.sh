#!/usr/bin/env bash
# fastai v2 as the oracle of ltfit's batch augmentation on the device (src/data/batch_augment.cpp):
# tests/data/batch_augment_oracle.py writes batches and per-image draws, the hidden
# "[.][batch_augment_oracle]" test augments them with ltfit, and the script runs fastai's own
# Flip, Warp, Rotate, Zoom, Brightness and Contrast (composed by setup_aug_tfms) with the same
# draws and compares: within 2e-5. Usage: batch_augment_oracle.sh LTFIT_TESTS_BINARY.
# Exits 77 (CTest: skipped) when Python cannot import fastai.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/batch_augment_oracle.py" \
  "[batch_augment_oracle]" LTFIT_BATCH_AUGMENT_ORACLE_DIR "fastai.vision.augment" "fastai"
