#!/usr/bin/env bash
# timm's own Lamb and RMSpropTF (timm/optim/lamb.py, rmsprop_tf.py) as the oracle of ltfit's
# (src/train/timm_optimizers.cpp): tests/train/timm_optimizers_oracle.py writes 100 steps of
# gradients over two parameter groups and timm's parameters at steps 1, 10, 50 and 100 for nine
# option sets (timm's defaults, LAMBC / always_adapt / no clipping, decoupled decay, eps 1e-3,
# centered, no momentum, a one-cycle LR and momentum); the hidden "[timm_optimizers_oracle]" test
# runs them with ltfit, through a torch::save / torch::load at step 50 too, and the script prints
# the largest differences (at most 1e-6). Usage: timm_optimizers_oracle.sh LTFIT_TESTS_BINARY.
# Exits 77 (CTest: skipped) when Python cannot import torch or find timm.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/timm_optimizers_oracle.py" \
  "[timm_optimizers_oracle]" LTFIT_TIMM_OPTIMIZERS_ORACLE_DIR "torch" "torch timm"
