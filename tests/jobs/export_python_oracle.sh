#!/usr/bin/env bash
# `ltfit export` read back by Python, through the very script docs/export.md gives (extracted
# from the page, so the documented text is the tested one): six tiny trained checkpoints
# (resnet18 with fastai's head, efficientnet_b0 with torchvision's linear classifier,
# resnet18 with model.stem cifar under each head, and vit_b_16 under each head at 32 px: parity with the same change made to
# torchvision's model; 32 px, 1 epoch, CPU) are exported; load_export.py rebuilds each model from FILE.json and loads
# FILE.pth with strict=True; its logits on 32 px PNGs (which both sides use as they are) equal
# `ltfit predict --weights FILE.pth --logits` to 1e-4 (relative to the largest logit), with the same class names
# (export_python_oracle.py); and the script run as a command prints ltfit's top class per image.
# Exits 77 (CTest: skipped) when python3 cannot import torch, torchvision, PIL and numpy.
#
#   tests/jobs/export_python_oracle.sh path/to/ltfit
set -uo pipefail

LTFIT="$(realpath "${1:?usage: $0 path/to/ltfit}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DOC="$HERE/../../docs/export.md"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import torch, torchvision, PIL, numpy" 2>/dev/null; then
  echo "SKIPPED: Python torch, torchvision, PIL and numpy are needed (scripts/bench_deps.sh)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The fenced block between the page's begin/end markers, fences dropped.
awk '/<!-- begin load_export.py -->/ {on = 1; next} /<!-- end load_export.py -->/ {on = 0}
     on && !/^```/' "$DOC" > load_export.py
[[ -s load_export.py ]] || { echo "no load_export.py block in $DOC"; exit 1; }

"$LTFIT" synth --out data --train 32 --valid 8 --seed 5 >/dev/null 2>&1 || { echo "synth failed"; exit 1; }
cat > c.yaml <<YAML
run: {name: x, out_dir: $WORK/runs, seed: 3, tensorboard: false}
data: {root: $WORK/data, layout: folders, image_size: 32, batch_size: 8, workers: 1}
model: {arch: resnet18, pretrained: none, head: fastai, dropout: 0.5}
train: {recipe: one_cycle, epochs: 1, lr: 0.01, device: cpu, channels_last: false,
        checkpoint: {every_minutes: 0}}
eval: {tta: false}
YAML
"$PYTHON" "$HERE/export_python_oracle.py" images imgs || { echo "cannot write the images"; exit 1; }

check() {  # name, then --set overrides
  local name="$1"
  shift
  echo "== $name"
  "$LTFIT" train --config c.yaml --run-dir "runs/$name" "$@" >"$name.train.log" 2>&1 ||
    { fail "$name: train exited $? ($(tail -3 "$name.train.log"))"; return; }
  "$LTFIT" export --checkpoint "runs/$name/checkpoints/last.ckpt" --out "$name.pth" \
    >"$name.export.log" 2>&1 || { fail "$name: export exited $? ($(tail -3 "$name.export.log"))"; return; }
  [[ -f "$name.json" ]] || fail "$name: no $name.json beside $name.pth"
  "$LTFIT" predict --weights "$name.pth" --logits --json imgs >"$name.jsonl" 2>"$name.predict.log" ||
    { fail "$name: predict exited $? ($(tail -3 "$name.predict.log"))"; return; }
  PYTHONPATH="$WORK" "$PYTHON" "$HERE/export_python_oracle.py" compare "$name.pth" imgs "$name.jsonl" ||
    fail "$name: Python disagrees (above)"
  "$PYTHON" load_export.py "$name.pth" imgs/*.png >"$name.script.txt" ||
    { fail "$name: load_export.py exited $?"; return; }
  PYTHONPATH="$WORK" "$PYTHON" "$HERE/export_python_oracle.py" tops "$name.script.txt" "$name.jsonl" ||
    fail "$name: the script's classes (above)"
}
check fastai_resnet18
check linear_efficientnet_b0 --set model.arch=efficientnet_b0 --set model.head=linear
check cifar_stem_resnet18 --set model.stem=cifar
check cifar_stem_linear_resnet18 --set model.stem=cifar --set model.head=linear
# a body ending in a token, at a size other than its position embeddings' (32 px: a 2x2 grid)
check fastai_vit_b_16 --set model.arch=vit_b_16
check linear_vit_b_16 --set model.arch=vit_b_16 --set model.head=linear

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "ok"
