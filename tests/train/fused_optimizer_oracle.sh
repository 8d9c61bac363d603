#!/usr/bin/env bash
# torch.optim's fused AdamW and SGD as the oracle of ltfit's (src/train/fused_optimizer.cpp):
# tests/train/fused_optimizer_oracle.py writes 100-step problems (discriminative one-cycle LRs,
# one-cycle momentum, weight decay, grad scales with found_inf on some steps) and solves them with
# torch.optim (fused=True); the hidden "[.][fused_optimizer_oracle]" test solves them with ltfit;
# the script compares the final parameters (within 1e-6). Usage: fused_optimizer_oracle.sh
# LTFIT_TESTS_BINARY. Exits 77 (CTest: skipped) when Python cannot import torch.
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
"$PYTHON" "$HERE/fused_optimizer_oracle.py" write "$WORK"
LTFIT_FUSED_ORACLE_DIR="$WORK" "$TESTS" "[fused_optimizer_oracle]"
"$PYTHON" "$HERE/fused_optimizer_oracle.py" compare "$WORK"
