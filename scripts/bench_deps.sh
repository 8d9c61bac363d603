#!/usr/bin/env bash
# Installs the Python peers of the benchmarks: torchvision, Pillow, NumPy (bench/loader_bench.sh,
# the parity test), tensorboard (the reader tests/run/tensorboard_oracle.sh checks ltfit's events
# files with), timm (the MixUp, EMA and cosine-schedule oracles), cleanlab and imagehash (the
# label-issues and perceptual-hash oracles, tests/eval/label_issues_oracle.sh and
# tests/data/phash_oracle.sh), onnx and onnxruntime (the ONNX export's oracles), safetensors
# (the safetensors oracle, with timm's weights), selenium (the
# serve page's browser test), fastapi and uvicorn (bench/serve_peer.py, the Python server
# bench/serve_load.sh runs beside ltfit serve) and fastai (bench/fastai_side_by_side.sh and the
# flat_cos oracle, via bench/fastai_deps.sh).
#
# The torch already installed is kept as it is. PyPI's newest torchvision may be built for an
# older torch, so it is installed with --no-deps (pip would otherwise replace torch); its C++
# ops may then fail to load, which the PIL-based transforms the benchmark uses do not need.
# Idempotent: does nothing when both import. Override the version with TORCHVISION_VERSION.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
TORCHVISION_VERSION="${TORCHVISION_VERSION:-0.29.2}"
TENSORBOARD_VERSION="${TENSORBOARD_VERSION:-2.21.0}"
TIMM_VERSION="${TIMM_VERSION:-1.0.31}"
CLEANLAB_VERSION="${CLEANLAB_VERSION:-2.9.0}"
IMAGEHASH_VERSION="${IMAGEHASH_VERSION:-4.3.2}"
SELENIUM_VERSION="${SELENIUM_VERSION:-4.51.0}"
FASTAPI_VERSION="${FASTAPI_VERSION:-0.165.0}"
UVICORN_VERSION="${UVICORN_VERSION:-0.55.0}"

if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "error: '$PYTHON' cannot import torch; install PyTorch first" >&2
  exit 1
fi

# torchvision imports numpy at start-up (its datasets module), so it is needed too. nbconvert
# and ipykernel run notebooks/kaggle_vs_colab.ipynb headless (CTest notebook_tiny).
# webdataset writes and reads the tar shards tests/data/shards_oracle.sh checks ltfit against.
# onnx and onnxruntime check ltfit's ONNX exports (tests/formats/onnx_oracle.sh, the export CLI
# test, bench/onnx_vs_predict.sh). safetensors reads and writes the files
# tests/formats/safetensors_oracle.sh checks ltfit's reader and writer against.
for module in PIL:pillow numpy:numpy nbconvert:nbconvert ipykernel:ipykernel \
  webdataset:webdataset==1.0.2 onnx:onnx==1.23.2 onnxruntime:onnxruntime==1.32.0 \
  safetensors:safetensors==0.4.5; do
  if "$PYTHON" -c "import ${module%%:*}" 2>/dev/null; then
    echo "${module#*:}: already installed"
  else
    "$PYTHON" -m pip install --quiet "${module#*:}"
  fi
done

if "$PYTHON" -m pip show --quiet torchvision >/dev/null 2>&1; then
  echo "torchvision: $("$PYTHON" -W ignore -c 'import torchvision; print(torchvision.__version__)') (already installed)"
else
  torch_before="$("$PYTHON" -c 'import torch; print(torch.__version__)')"
  "$PYTHON" -m pip install --quiet --no-deps "torchvision==${TORCHVISION_VERSION}"
  torch_after="$("$PYTHON" -c 'import torch; print(torch.__version__)')"
  if [[ "$torch_before" != "$torch_after" ]]; then
    echo "error: installing torchvision changed torch ($torch_before -> $torch_after)" >&2
    exit 1
  fi
fi

# The benchmark needs only ImageFolder, DataLoader and the PIL transforms: check they work.
"$PYTHON" -W ignore - <<'PY'
import torch, torchvision
from torchvision import datasets, transforms  # noqa: F401
t = transforms.Compose([transforms.Resize(8), transforms.RandomCrop(8), transforms.PILToTensor()])
from PIL import Image
x = t(Image.new("RGB", (12, 10), (1, 2, 3)))
assert x.shape == (3, 8, 8) and x.dtype == torch.uint8, (x.shape, x.dtype)
print(f"ok: torch {torch.__version__}, torchvision {torchvision.__version__}")
PY

# tensorboard does not depend on torch; pip leaves torch alone.
if "$PYTHON" -c "import tensorboard" 2>/dev/null; then
  echo "tensorboard: $("$PYTHON" -c 'import tensorboard; print(tensorboard.__version__)') (already installed)"
else
  "$PYTHON" -m pip install --quiet "tensorboard==${TENSORBOARD_VERSION}"
fi

# timm, the oracle of tests/train/mixup_oracle.py (which loads timm/data/mixup.py by itself, so
# timm's own dependencies are not needed): --no-deps, torch kept.
if "$PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('timm') is None)"; then
  echo "timm: already installed"
else
  "$PYTHON" -m pip install --quiet --no-deps "timm==${TIMM_VERSION}"
fi

# cleanlab, the oracle of tests/eval/label_issues_oracle.py: it needs NumPy, scikit-learn, pandas,
# tqdm and termcolor, not torch, so its dependencies install as usual.
if "$PYTHON" -c "import cleanlab" 2>/dev/null; then
  echo "cleanlab: $("$PYTHON" -c 'import cleanlab; print(cleanlab.__version__)') (already installed)"
else
  "$PYTHON" -m pip install --quiet "cleanlab==${CLEANLAB_VERSION}"
fi

# imagehash, the oracle of tests/data/phash_oracle.py (Pillow, NumPy, SciPy, PyWavelets; no torch).
if "$PYTHON" -c "import imagehash" 2>/dev/null; then
  echo "imagehash: already installed"
else
  "$PYTHON" -m pip install --quiet "imagehash==${IMAGEHASH_VERSION}"
fi

# selenium, the WebDriver client of the serve page's browser test (tests/serve/browser_test.py;
# it drives Debian's Chromium through Debian's chromedriver, which scripts/ci_deps.sh installs, and
# never downloads drivers). 4.52 and later need a certifi newer than PyPI had on 2026-12-06.
if "$PYTHON" -c "import selenium" 2>/dev/null; then
  echo "selenium: $("$PYTHON" -c 'import selenium; print(selenium.__version__)') (already installed)"
else
  "$PYTHON" -m pip install --quiet "selenium==${SELENIUM_VERSION}"
fi

# fastapi and uvicorn, the peer of bench/serve_load.sh (bench/serve_peer.py); neither depends on
# torch. The peer reads raw bodies, so python-multipart (FastAPI's form parser) is not needed.
for module in fastapi:fastapi==${FASTAPI_VERSION} uvicorn:uvicorn==${UVICORN_VERSION}; do
  if "$PYTHON" -c "import ${module%%:*}" 2>/dev/null; then
    echo "${module%%:*}: $("$PYTHON" -c "import ${module%%:*}; print(${module%%:*}.__version__)") (already installed)"
  else
    "$PYTHON" -m pip install --quiet "${module#*:}"
  fi
done

# fastai, the peer of bench/fastai_side_by_side.sh and the oracle of the flat_cos schedule
# (tests/train/schedule_oracle.sh; also --no-deps, torch kept): its own script. Set SKIP_FASTAI=1
# to leave it out. Its failure is a warning only: the oracles above are in place either way, and
# the flat_cos part of schedule_oracle then says SKIPPED.
if [[ "${SKIP_FASTAI:-0}" != 1 ]]; then
  PYTHON="$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/../bench/fastai_deps.sh" ||
    echo "warning: fastai not installed (exit $?); bench/fastai_side_by_side.sh will run ltfit only" >&2
fi
