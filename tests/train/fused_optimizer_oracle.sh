#!/usr/bin/env bash
# torch.optim's fused AdamW and SGD as the oracle of ltfit's (src/train/fused_optimizer.cpp):
# tests/train/fused_optimizer_oracle.py writes 100-step problems (discriminative one-cycle LRs,
# one-cycle momentum, weight decay, grad scales with found_inf on some steps) and solves them with
# torch.optim (fused=True); the hidden "[.][fused_optimizer_oracle]" test solves them with ltfit;
# the script compares the final parameters (within 1e-6). Usage: fused_optimizer_oracle.sh
# LTFIT_TESTS_BINARY. Exits 77 (CTest: skipped) when Python cannot import torch.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/fused_optimizer_oracle.py" "[fused_optimizer_oracle]" LTFIT_FUSED_ORACLE_DIR \
  "torch" "torch"
