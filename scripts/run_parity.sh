#!/usr/bin/env bash
# Parity tests against torchvision: generates weight files and expected logits with Python torch
# + torchvision (test oracles, installed by scripts/bench_deps.sh), then runs the [parity] tests.
# Exits 77 (CTest: skipped) when torchvision cannot be imported, so a missing oracle is visible.
set -euo pipefail
TESTS="$1"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import torchvision" 2>/dev/null; then
  echo "SKIPPED: Python torchvision is not installed (scripts/bench_deps.sh installs it)"
  exit 77
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$PYTHON" "$ROOT/tests/parity/make_parity.py" "$dir"
LTFIT_PARITY_DIR="$dir" "$TESTS" "[parity]"
