#!/usr/bin/env bash
# One set of learnable images stored four ways, trained with one recipe and seed: do the formats
# give the same model? The images are `ltfit synth --layout cifar10`'s (32×32 cats and dogs):
#   binary   CIFAR's binary batches (cifar-10-batches-bin)
#   python   CIFAR's Python pickles of the same records (cifar-10-batches-py)
#   shards   the same pixels as PNG members of WebDataset shards (written by WebDataset's
#            ShardWriter, 256 samples a shard, .cls labels)
#   folders  the same pixels as PNG files in train/<class>/ and valid/<class>/
# Every run: resnet18 with the CIFAR stem, from scratch, 32 px, batch 64, one-cycle AdamW, the
# host loader with fastai's augmentation (data.cache none), run.seed 1, CPU. binary and python
# must give the very same run (the same samples in the same order); shards and folders name their
# samples otherwise, so their epochs draw other orders: their accuracy must be within 2 points.
# A fifth run, binary with data.cache device (the padded-4 crop and flip on the device), is shown
# for reference. Prints a Markdown table. Needs numpy, PIL and webdataset (scripts/bench_deps.sh).
#   bench/cifar_formats_accuracy.sh                  # 2,000 + 500 images, 6 epochs
#   TRAIN=5000 EPOCHS=10 bench/cifar_formats_accuracy.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-/tmp/ltfit-cifar-formats}"
TRAIN="${TRAIN:-2000}"
VALID="${VALID:-500}"
EPOCHS="${EPOCHS:-6}"
[[ -x "$LTFIT" ]] || { echo "no ltfit binary at $LTFIT: run scripts/setup.sh first" >&2; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
"$LTFIT" synth --layout cifar10 --out c10 --train "$TRAIN" --valid "$VALID" --seed 7 >/dev/null 2>&1

"$PYTHON" - c10 <<'PY'
import os, sys
import numpy as np, webdataset as wds
from PIL import Image
root = sys.argv[1]
binary = os.path.join(root, "cifar-10-batches-bin")
names = [n for n in open(os.path.join(binary, "batches.meta.txt")).read().split("\n") if n]
def records(files):
    rec = np.concatenate([np.fromfile(os.path.join(binary, f), np.uint8).reshape(-1, 3073) for f in files])
    return rec[:, 0], rec[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
train_files = sorted(f for f in os.listdir(binary) if f.startswith("data_batch"))
os.makedirs("shards", exist_ok=True)
for split, files in (("train", train_files), ("valid", ["test_batch.bin"])):
    labels, images = records(files)
    with wds.ShardWriter(f"shards/{split}-%06d.tar", maxcount=256, verbose=0) as sink:
        for i, (label, image) in enumerate(zip(labels, images)):
            path = f"folders/{split}/{names[label]}/{i:06d}.png"
            os.makedirs(os.path.dirname(path), exist_ok=True)
            Image.fromarray(image).save(path)
            sink.write({"__key__": f"{i:06d}", "png": open(path, "rb").read(), "cls": str(int(label)).encode()})
open("shards/classes.txt", "w").write("\n".join(names) + "\n")
PY

# run NAME ROOT LAYOUT CACHE: prints "accuracy train_loss" of the last epoch.
run() {
  if "$LTFIT" train --config quickstart --set "data.root=$2" --set "data.layout=$3" \
      --set "data.cache=$4" --set model.arch=resnet18 --set model.stem=cifar \
      --set model.pretrained=none --set data.image_size=32 --set data.batch_size=64 \
      --set "train.epochs=$EPOCHS" --set train.lr=2e-3 --set run.seed=1 --set train.device=cpu \
      --set data.workers=2 --set run.tensorboard=false --set train.checkpoint.every_minutes=0 \
      --run-dir "runs/$1" >"$1.log" 2>&1; then
    "$PYTHON" -c 'import csv,sys
r = list(csv.DictReader(open(sys.argv[1])))
print(r[-1]["accuracy"], r[-1]["train_loss"])' \
      "runs/$1/epochs.csv"
  else
    echo "failed -"
  fi
}
declare -A acc loss
for spec in "binary c10/cifar-10-batches-bin cifar10 none" "python c10/cifar-10-batches-py cifar10 none" \
            "shards shards shards none" "folders folders folders none" \
            "binary_device c10/cifar-10-batches-bin cifar10 device"; do
  read -r name root layout cache <<<"$spec"
  read -r acc[$name] loss[$name] < <(run "$name" "$WORK/$root" "$layout" "$cache")
done
echo "| format | layout | accuracy | train loss (last epoch) | vs binary (points) |"
echo "|---|---|--:|--:|--:|"
for name in binary python shards folders binary_device; do
  diff="$("$PYTHON" -c 'import sys
try: print(f"{100 * (float(sys.argv[1]) - float(sys.argv[2])):+.1f}")
except Exception: print("-")' "${acc[$name]}" "${acc[binary]}")"
  echo "| $name | $(grep -o 'data: [a-z0-9]* layout' "$name.log" | head -1 | cut -d' ' -f2) | ${acc[$name]} | ${loss[$name]} | $diff |"
done
echo
echo "resnet18 (CIFAR stem), 32 px, batch 64, $EPOCHS epochs, seed 1, CPU ($(nproc) threads); $TRAIN + $VALID synthetic CIFAR images; logs in $WORK"
