#!/usr/bin/env bash
# torchvision and fastai as the oracles of ltfit's framing of an image (src/data/augment.cpp,
# src/data/image_io.cpp): tests/data/resize_oracle.py writes PNG images and torchvision's
# RandomResizedCrop boxes and pixels after torch.manual_seed(seed) (data.augment.crop:
# random_resized) and fastai's validation Resize (data.resize_method crop, squish, pad with each
# data.pad_mode); the hidden "[.][resize_oracle]" test answers with ltfit; the script compares:
# the same boxes, the RandomResizedCrop pixels byte for byte, fastai's crop and pad byte for byte
# where no resampling happens, and where it does within a mean of 1 level (crop, squish) or 6
# (pad, whose edge rows fastai blends into the fill) (ltfit resamples with OpenCV's area filter,
# fastai with Pillow's). Usage: resize_oracle.sh LTFIT_TESTS_BINARY.
# Exits 77 (CTest: skipped) when Python cannot import torchvision and fastai.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/resize_oracle.py" \
  "[resize_oracle]" LTFIT_RESIZE_ORACLE_DIR "torchvision, fastai.vision.augment" \
  "torchvision fastai"
