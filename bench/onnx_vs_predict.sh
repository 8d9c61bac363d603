#!/usr/bin/env bash
# ltfit's ONNX export beside ltfit predict, on this machine's CPU with the same threads: how long
# the export takes, and images/s of ONNX Runtime on the exported file against `ltfit predict` on
# the same images. A checkpoint of ARCH (default resnet50, from scratch: speed does not depend on
# the weights) is trained for one epoch on `ltfit synth`'s cats and dogs at SIZE px; VALID images
# are then predicted in batches of BATCH by
#   ltfit predict   decode, centre crop and resize (OpenCV), normalise, forward (LibTorch)
#   ORT model       the exported --preprocess file on the same pixels (decoded and resized by
#                   Pillow beforehand, not timed): ONNX Runtime's forward and normalisation alone
#   ORT + Pillow    the same with Pillow's decode and resize timed too (the whole job in Python)
# Prints a Markdown table. Needs onnxruntime, numpy and Pillow (pip install onnxruntime pillow).
#   bench/onnx_vs_predict.sh
#   ARCH=resnet18 VALID=512 bench/onnx_vs_predict.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-/tmp/ltfit-onnx-bench}"
ARCH="${ARCH:-resnet50}"
SIZE="${SIZE:-224}"
VALID="${VALID:-256}"
BATCH="${BATCH:-32}"
THREADS="${THREADS:-$(nproc)}"
[[ -x "$LTFIT" ]] || { echo "no ltfit binary at $LTFIT: run scripts/setup.sh first" >&2; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
"$LTFIT" synth --out data --train 16 --valid "$VALID" --seed 3 >/dev/null 2>&1
"$LTFIT" train --config quickstart --set data.root=data --set "model.arch=$ARCH" \
  --set model.pretrained=none --set "data.image_size=$SIZE" --set data.batch_size=8 \
  --set train.epochs=1 --set train.recipe=one_cycle --set train.device=cpu --set eval.tta=false \
  --set run.tensorboard=false --run-dir run >train.log 2>&1
CKPT=run/checkpoints/last.ckpt
start=$(date +%s.%N)
"$LTFIT" export --checkpoint "$CKPT" --out model.onnx --preprocess --probabilities >export.log 2>&1
export_s=$(echo "$(date +%s.%N) - $start" | bc)
"$LTFIT" predict --checkpoint "$CKPT" --device cpu --batch-size "$BATCH" data/valid >predict.csv 2>predict.log
predict_rate=$(grep -o '[0-9.]* images/s' predict.log | tail -1 | cut -d' ' -f1)
read -r ort_model ort_all < <("$PYTHON" - model.onnx "$SIZE" "$BATCH" "$THREADS" data/valid <<'PY'
import glob, os, sys, time
import numpy as np, onnxruntime as ort
from PIL import Image
path, size, batch, threads, folder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
files = sorted(glob.glob(os.path.join(folder, "**", "*.jpg"), recursive=True))
def prepared(f):
    image = Image.open(f).convert("RGB")
    side = min(image.size)
    left, top = (image.width - side) // 2, (image.height - side) // 2
    return np.asarray(image.crop((left, top, left + side, top + side)).resize((size, size), Image.BOX))
o = ort.SessionOptions()
o.intra_op_num_threads = threads
o.inter_op_num_threads = 1
s = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
s.run(None, {"image": np.stack([prepared(files[0])])})  # warm-up
pixels = np.stack([prepared(f) for f in files])
t = time.perf_counter()
for i in range(0, len(files), batch):
    s.run(None, {"image": pixels[i:i + batch]})
model = len(files) / (time.perf_counter() - t)
t = time.perf_counter()
for i in range(0, len(files), batch):
    s.run(None, {"image": np.stack([prepared(f) for f in files[i:i + batch]])})
print(f"{model:.1f} {len(files) / (time.perf_counter() - t):.1f}")
PY
)
echo "| $ARCH, $SIZE px, batch $BATCH, $THREADS threads, $VALID images | images/s | vs ltfit predict |"
echo "|---|--:|--:|"
echo "| ltfit predict (decode, resize, forward) | $predict_rate | 1.00× |"
ratio() { "$PYTHON" -c "print(f'{float(\"$1\") / float(\"$2\"):.2f}×')"; }
echo "| ONNX Runtime, model only (pixels ready) | $ort_model | $(ratio "$ort_model" "$predict_rate") |"
echo "| ONNX Runtime + Pillow decode and resize | $ort_all | $(ratio "$ort_all" "$predict_rate") |"
echo
echo "export: ${export_s} s wall for $(du -h model.onnx | cut -f1) ($(grep -o 'opset [0-9]*' export.log)); onnxruntime $("$PYTHON" -c 'import onnxruntime; print(onnxruntime.__version__)'); logs in $WORK"
