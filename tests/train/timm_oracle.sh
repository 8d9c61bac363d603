#!/usr/bin/env bash
# timm's own code as the oracle of ltfit's MixUp/CutMix and EMA: runs the "[timm_oracle]" tests,
# which feed ltfit's draws and weights to timm/data/mixup.py (tests/train/mixup_oracle.py) and
# timm/utils/model_ema.py (tests/train/ema_oracle.py). Exits 77 (CTest: skipped) when Python
# cannot find timm, numpy and torch (scripts/bench_deps.sh installs them).
set -euo pipefail
TESTS="$1"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import importlib.util, numpy, torch, sys; sys.exit(importlib.util.find_spec('timm') is None)" 2>/dev/null; then
  echo "SKIPPED: Python timm (or numpy, torch) is not installed (scripts/bench_deps.sh installs it)"
  exit 77
fi
"$TESTS" "[timm_oracle]"
