#!/usr/bin/env bash
# Pretrained weights without a download, for the benches that fine-tune: trains ARCH on the
# synthetic cats-vs-dogs task (`ltfit synth --task cats_dogs`, 1,000/400 images, seed 0) with
# configs/quickstart.yaml (64 px, 6 one-cycle epochs from random init) and exports the model as a
# torchvision state dict, which `model.pretrained: FILE` then loads as a pretrained body.
#   bench/synthetic_pretrain.sh WORK [ARCH]     # writes WORK/source.pth (kept: a second call
#                                               # reuses it); ARCH default resnet18
# Used by bench/transfer_learning.sh and bench/modern_recipe.sh (MODE=finetune). About 100 s for
# ResNet-18 on two CPU cores. Environment: LTFIT (build/ltfit).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
WORK="${1:?usage: bench/synthetic_pretrain.sh WORK [ARCH]}"
ARCH="${2:-resnet18}"

[[ -x "$LTFIT" ]] || { echo "no ltfit binary at $LTFIT: run scripts/setup.sh first" >&2; exit 1; }
cd "$ROOT"
mkdir -p "$WORK"
[[ -f "$WORK/source.pth" ]] && exit 0
if [[ ! -f "$WORK/source/.complete" ]]; then
  rm -rf "$WORK/source"
  "$LTFIT" synth --out "$WORK/source" --task cats_dogs --train 1000 --valid 400 --seed 0
  touch "$WORK/source/.complete"
fi
echo "== pretraining $ARCH on cats vs dogs (configs/quickstart.yaml) =="
rm -rf "$WORK/pretrain"
"$LTFIT" train --config configs/quickstart.yaml --set "data.root=$WORK/source" \
  --set "model.arch=$ARCH" --run-dir "$WORK/pretrain"
# export writes to a temporary name and renames, so a source.pth present is whole
"$LTFIT" export --checkpoint "$WORK/pretrain/checkpoints/last.ckpt" --out "$WORK/source.pth"
