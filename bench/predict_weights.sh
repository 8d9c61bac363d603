#!/usr/bin/env bash
# `ltfit predict --weights` against torchvision's own inference recipe on the same images and
# weights: images/s end to end (decode, the arch's eval transform, normalisation, forward, top-5)
# and the largest difference between the two tools' logits.
#
# The weights are a torchvision model's random initialisation with randomised normalisation
# statistics (as the parity test's), saved as a .pth (nothing is downloaded); the images are NUM photo-sized JPEGs (WIDTHxHEIGHT, gradients and noise). The
# PyTorch side is what a torchvision user writes: ImageFolder-style PIL loading with
# weights.transforms() in a DataLoader with one worker per core, batches under no_grad.
#   bench/predict_weights.sh                       # resnet50 and efficientnet_b0, 64 images
#   ARCHS=efficientnet_b3 NUM=128 SIZE=4000x3000 bench/predict_weights.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-/tmp/ltfit-predict-weights}"
ARCHS="${ARCHS:-resnet50 efficientnet_b0}"
NUM="${NUM:-64}"
SIZE="${SIZE:-1600x1200}"
BATCH="${BATCH:-16}"
threads="$(nproc)"
export OMP_NUM_THREADS="$threads"

[[ -x "$LTFIT" ]] || { echo "no ltfit binary at $LTFIT: run scripts/setup.sh first" >&2; exit 1; }
"$PYTHON" -c "import torchvision" 2>/dev/null ||
  { echo "needs Python torchvision (scripts/bench_deps.sh installs it)" >&2; exit 1; }
mkdir -p "$WORK"

images="$WORK/images-$SIZE-$NUM"
if [[ ! -f "$images/.complete" ]]; then
  rm -rf "$images"
  "$PYTHON" - "$images" "$NUM" "$SIZE" <<'PY'
import os, sys
import numpy as np
from PIL import Image
out, num, (w, h) = sys.argv[1], int(sys.argv[2]), map(int, sys.argv[3].split("x"))
os.makedirs(out)
rng = np.random.default_rng(0)
y, x = np.mgrid[0:h, 0:w].astype(np.float32)
for i in range(num):
    a, b = rng.uniform(5, 40, 2)
    base = np.stack([127 + 120 * np.sin(x / a + i), 127 + 120 * np.cos(y / b), 255 * x / w], -1)
    noisy = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
    Image.fromarray(noisy).save(os.path.join(out, f"{i:04d}.jpg"), quality=90)
PY
  touch "$images/.complete"
fi

"$LTFIT" models --json > "$WORK/models.json"
printf '| arch | eval transform | ltfit img/s | torchvision img/s | ltfit / torchvision | max logit difference (logits up to) |\n'
printf '|---|---|--:|--:|--:|--:|\n'
for arch in $ARCHS; do
  pth="$WORK/$arch.pth"
  [[ -f "$pth" ]] || "$PYTHON" -c "
import sys, torch, torchvision
sys.path.insert(0, sys.argv[3])
from make_parity import randomise_norms
torch.manual_seed(0)
model = getattr(torchvision.models, sys.argv[1])(weights=None)
randomise_norms(model)  # at plain random init EfficientNet's features are ~1e-14 for any input
torch.save(model.state_dict(), sys.argv[2])
" "$arch" "$pth" "$ROOT/tests/parity"
  start=$(date +%s.%N)
  "$LTFIT" predict --weights "$pth" --arch "$arch" --json --logits --batch-size "$BATCH" --device cpu \
    "$images" > "$WORK/$arch.ltfit.jsonl" 2> "$WORK/$arch.ltfit.log"
  ltfit_s=$(awk "BEGIN {print $(date +%s.%N) - $start}")
  "$PYTHON" - "$arch" "$pth" "$images" "$BATCH" "$threads" "$WORK" "$ltfit_s" <<'PY'
import glob, json, os, sys, time
import torch, torchvision
from PIL import Image
arch, pth, folder, batch, threads, work, ltfit_s = sys.argv[1:]
batch, threads, ltfit_s = int(batch), int(threads), float(ltfit_s)
row = next(r for r in json.load(open(f"{work}/models.json")) if r["arch"] == arch)
# The preset torchvision publishes with the weight file ltfit's registry names for the arch.
weights = next(w for w in torchvision.models.get_model_weights(arch)
               if os.path.basename(w.url) == row["weights_file"])
transform = weights.transforms()
paths = sorted(glob.glob(os.path.join(folder, "*.jpg")))

class Images(torch.utils.data.Dataset):
    def __len__(self):
        return len(paths)
    def __getitem__(self, i):
        return transform(Image.open(paths[i]).convert("RGB"))

torch.set_num_threads(threads)
start = time.perf_counter()  # from loading the weights, as ltfit's wall time
model = getattr(torchvision.models, arch)(weights=None)
model.load_state_dict(torch.load(pth, weights_only=True))
model.eval()
loader = torch.utils.data.DataLoader(Images(), batch_size=batch, num_workers=threads)
logits = []
with torch.no_grad():
    for x in loader:
        logits.append(model(x))
logits = torch.cat(logits)
torch_s = time.perf_counter() - start
ltfit = {os.path.basename(j["image"]): torch.tensor(j["logits"])
         for j in map(json.loads, open(f"{work}/{arch}.ltfit.jsonl"))}
worst = max((ltfit[os.path.basename(p)] - l).abs().max().item() for p, l in zip(paths, logits))
n = len(paths)
print(f"| {arch} | {row['interpolation']} {row['eval_resize']}→{row['eval_crop']} | "
      f"{n / ltfit_s:.2f} | {n / torch_s:.2f} | {torch_s / ltfit_s:.2f} | "
      f"{worst:.1e} ({logits.abs().max().item():.2f}) |")
PY
done
echo
echo "$NUM JPEGs of $SIZE, batch $BATCH, CPU, $threads threads; wall time per tool from start to"
echo "the last prediction (ltfit: the whole process; torchvision: from loading the weights)."
echo "Outputs in $WORK"
