#!/usr/bin/env bash
# Installs fastai (the peer of bench/fastai_side_by_side.sh) without touching the pinned torch.
#
# Usage: bench/fastai_deps.sh            (called by scripts/bench_deps.sh; PYTHON, FASTAI_VERSION)
# Exit codes: 0 fastai imports (installed now or already), 1 no torch / torchvision to build on,
#             2 the install failed or would have changed torch, 3 `from fastai.vision.all import *`
#             fails after the install.
#
# fastai itself goes in with --no-deps: its requirements name torch and torchvision, which pip
# would otherwise upgrade or replace (torchvision is already there from scripts/bench_deps.sh).
# Its pure-Python requirements (fastcore, fasttransform, fastprogress, fastdownload,
# plum-dispatch, pandas, matplotlib, scikit-learn, scipy, ...) are installed normally, with a pip
# constraint pinning torch to the installed version so that nothing can pull another one.
# spacy is left out: only fastai.text imports it. Idempotent: does nothing when fastai imports.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
FASTAI_VERSION="${FASTAI_VERSION:-2.8.12}"
FASTAI_REQUIREMENTS=("fastcore>=2.2.22" "fasttransform>=0.0.3" "fastdownload>=0.0.8,<2"
                     "fastprogress>=0.2.4" "plum-dispatch<2.10" matplotlib pandas scikit-learn
                     scipy packaging cloudpickle pyyaml requests "pillow>=9.0.0")

check_import() {
  "$PYTHON" -W ignore - <<'PY'
import torch, torchvision, fastai
from fastai.vision.all import *  # noqa: F401,F403  (what bench/fastai_train.py uses)
assert callable(vision_learner) and callable(aug_transforms)  # noqa: F405
print(f"ok: fastai {fastai.__version__}, torch {torch.__version__}, "
      f"torchvision {torchvision.__version__}")
PY
}

if ! "$PYTHON" -W ignore -c "import torch, torchvision" 2>/dev/null; then
  echo "error: '$PYTHON' cannot import torch and torchvision; run scripts/bench_deps.sh" >&2
  exit 1
fi
if "$PYTHON" -m pip show --quiet fastai >/dev/null 2>&1 && check_import 2>/dev/null; then
  exit 0
fi

torch_before="$("$PYTHON" -c 'import torch; print(torch.__version__)')"
constraints="$(mktemp "${TMPDIR:-/tmp}/fastai-constraints.XXXXXX")"
trap 'rm -f "$constraints"' EXIT
echo "torch==$torch_before" > "$constraints"

echo "installing fastai==$FASTAI_VERSION (--no-deps) and its pure-Python requirements ..." >&2
if ! "$PYTHON" -m pip install --quiet -c "$constraints" "${FASTAI_REQUIREMENTS[@]}" ||
   ! "$PYTHON" -m pip install --quiet --no-deps "fastai==$FASTAI_VERSION"; then
  echo "error: pip could not install fastai or its requirements (see above)" >&2
  exit 2
fi
torch_after="$("$PYTHON" -c 'import torch; print(torch.__version__)')"
if [[ "$torch_before" != "$torch_after" ]]; then
  echo "error: installing fastai changed torch ($torch_before -> $torch_after)" >&2
  exit 2
fi
if ! check_import; then
  echo "error: fastai is installed but 'from fastai.vision.all import *' fails (above)" >&2
  exit 3
fi
