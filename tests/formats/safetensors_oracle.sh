#!/usr/bin/env bash
# ltfit's safetensors reader and writer against the safetensors library (every dtype, metadata),
# and timm's own weights (timm.create_model, saved as safetensors) loaded into ltfit's model of
# the same arch: the same logits within 1e-4. tests/formats/safetensors_oracle.py writes the
# inputs, the hidden "[safetensors_oracle]" test answers, the script compares. Skipped (exit 77)
# without Python's safetensors and timm.
#   tests/formats/safetensors_oracle.sh build/tests/ltfit_tests
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/safetensors_oracle.py" \
  "[safetensors_oracle]" LTFIT_SAFETENSORS_ORACLE_DIR "safetensors, timm, torch, numpy" \
  "safetensors timm torch numpy"
