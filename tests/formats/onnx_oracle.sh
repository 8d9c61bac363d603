#!/usr/bin/env bash
# ltfit's ONNX export (one arch of each family, both heads, the CIFAR stem, multi-label, dynamic
# sizes, opsets 17 to 20) against onnx.checker and ONNX Runtime: tests/formats/onnx_oracle.py
# writes the inputs, the hidden "[onnx_oracle]" test exports the models and writes ltfit's
# logits, the script compares. Skipped (exit 77) without Python's onnx and onnxruntime.
#   tests/formats/onnx_oracle.sh build/tests/ltfit_tests
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/../support/python_oracle.sh" "$1" "$HERE/onnx_oracle.py" "[onnx_oracle]" \
  LTFIT_ONNX_ORACLE_DIR "onnx, onnxruntime, numpy" "onnx onnxruntime numpy"
