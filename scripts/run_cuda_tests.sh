#!/usr/bin/env bash
# Runs the [cuda] tests of the given ltfit_tests binary. Exits 77 (CTest: skipped) when no GPU is
# usable here (no nvidia-smi, or it fails), so a machine without a GPU shows them as skipped.
#
#   scripts/run_cuda_tests.sh build/tests/ltfit_tests
set -euo pipefail
TESTS="${1:?usage: run_cuda_tests.sh <path to ltfit_tests>}"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "SKIPPED: nvidia-smi not found (no NVIDIA driver on this machine)"
  exit 77
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: nvidia-smi failed (no usable GPU)"
  exit 77
fi
exec "$TESTS" "[cuda]"
