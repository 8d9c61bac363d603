#!/usr/bin/env bash
# CIFAR-10-format training throughput, three ways on the same machine in one run:
#   ltfit      `ltfit train` from CIFAR's binary batches (data.layout cifar10: the records held in
#              memory, no image files), ResNet at 32 px, batch BATCH, twice: the host loader
#              (data.cache none: fastai's augmentation in loader threads) and data.cache device
#              (the set on the device, padded-4 crop and flip there, no loader threads); the last
#              epoch's images_per_second from epochs.csv (the first pays the warm-up).
#   torchvision  torchvision's CIFAR10 (the Python pickles, as `datasets.CIFAR10` downloads them;
#              written here from the same records) + DataLoader(RandomCrop(32, padding=4),
#              RandomHorizontalFlip, ToTensor, Normalize; WORKERS workers): the guides' way.
#   model only  PyTorch's loop on random tensors already in memory: no data at all, the ceiling.
# The same model (torchvision's ARCH, with the CIFAR stem when STEM=cifar, the default: a 3×3
# stride-1 conv1 and no max-pool, as most PyTorch CIFAR code has it), AdamW, fp32 and thread
# count on every side.
# Prints a Markdown table. Needs torchvision (scripts/bench_deps.sh) for the two Python rows.
#   bench/cifar_throughput.sh                         # resnet18, CIFAR stem, 5,000 images, CPU
#   STEM=imagenet bench/cifar_throughput.sh           # torchvision's stem (16x less compute)
#   ARCH=resnet50 TRAIN=10000 DEVICE=cuda bench/cifar_throughput.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-/tmp/ltfit-cifar-throughput}"
ARCH="${ARCH:-resnet18}"
STEM="${STEM:-cifar}"
BATCH="${BATCH:-128}"
TRAIN="${TRAIN:-5000}"
DEVICE="${DEVICE:-cpu}"
EPOCHS="${EPOCHS:-2}"
WORKERS="${WORKERS:-2}"
threads="$(nproc)"
export OMP_NUM_THREADS="$threads"

[[ -x "$LTFIT" ]] || { echo "no ltfit binary at $LTFIT: run scripts/setup.sh first" >&2; exit 1; }
mkdir -p "$WORK"
data="$WORK/data-$TRAIN"
if [[ ! -f "$data/.complete" ]]; then
  rm -rf "$data"
  "$LTFIT" synth --layout cifar10 --out "$data" --train "$TRAIN" --valid 1000 --seed 0 >/dev/null
  touch "$data/.complete"
fi
have_torch=1
"$PYTHON" -c "import torchvision" 2>/dev/null || have_torch=0

# ltfit_rate CACHE: "first last" images per second of a run with data.cache CACHE.
ltfit_rate() {
  local run="$WORK/run-$1"
  rm -rf "$run"
  if "$LTFIT" train --config quickstart --set "data.root=$data" --set data.layout=cifar10 \
      --set "model.arch=$ARCH" --set "model.stem=$STEM" --set model.pretrained=none \
      --set data.image_size=32 --set "data.cache=$1" \
      --set "data.batch_size=$BATCH" --set "train.epochs=$EPOCHS" --set "data.workers=$WORKERS" \
      --set "train.device=$DEVICE" --set run.tensorboard=false --run-dir "$run" \
      >"$WORK/ltfit-$1.log" 2>&1; then
    "$PYTHON" -c 'import csv,sys
r = list(csv.DictReader(open(sys.argv[1])))
print(r[0]["images_per_second"], r[-1]["images_per_second"])' "$run/epochs.csv"
  else
    echo "- failed"
  fi
}
read -r cold ours < <(ltfit_rate none)
read -r dev_cold dev < <(ltfit_rate device)

# torchvision's CIFAR10 reads cifar-10-batches-py: the same records as Python pickles.
py_rates() {
  "$PYTHON" - "$data" "$ARCH" "$BATCH" "$DEVICE" "$threads" "$WORKERS" "$EPOCHS" "$STEM" <<'PY'
import os, pickle, sys, time
import numpy as np, torch, torchvision
import torchvision.transforms as T
data, arch, batch, device, threads, workers, epochs, stem = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
torch.set_num_threads(threads)
binary, py = os.path.join(data, "cifar-10-batches-bin"), os.path.join(data, "cifar-10-batches-py")
if not os.path.isdir(py):
    os.makedirs(py)
    names = [n for n in open(os.path.join(binary, "batches.meta.txt")).read().split("\n") if n]
    files = sorted(f for f in os.listdir(binary) if f.startswith("data_batch")) + ["test_batch.bin"]
    for f in files:
        rec = np.fromfile(os.path.join(binary, f), np.uint8).reshape(-1, 3073)
        out = {"batch_label": f, "labels": rec[:, 0].astype(int).tolist(), "data": rec[:, 1:].copy(),
               "filenames": [f"{f}#{i}" for i in range(len(rec))]}
        with open(os.path.join(py, f[:-4]), "wb") as fh:
            pickle.dump(out, fh, protocol=2)
    with open(os.path.join(py, "batches.meta"), "wb") as fh:
        pickle.dump({"label_names": names}, fh, protocol=2)
# torchvision checks the archive's md5s; the files written here are ours, so the check is skipped.
import torchvision.datasets.cifar as tv_cifar
tv_cifar.check_integrity = lambda *args, **kwargs: True
torchvision.datasets.CIFAR10._check_integrity = lambda self: True
mean, std = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
tf = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(mean, std)])
ds = torchvision.datasets.CIFAR10(data, train=True, transform=tf, download=False)
loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True,
                                     num_workers=workers, persistent_workers=workers > 0)
model = getattr(torchvision.models, arch)(num_classes=10)
if stem == "cifar":  # ltfit's model.stem cifar: the same change
    model.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    model.maxpool = torch.nn.Identity()
model = model.to(device).train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
def step(x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
def sync():
    if device.startswith("cuda"):
        torch.cuda.synchronize()
rate = 0.0
for epoch in range(epochs):  # the last epoch's rate, as ltfit's
    seen, start = 0, time.perf_counter()
    for x, y in loader:
        step(x.to(device, non_blocking=True), y.to(device, non_blocking=True))
        seen += x.shape[0]
    sync()
    rate = seen / (time.perf_counter() - start)
x = torch.randn(batch, 3, 32, 32, device=device)
y = torch.randint(0, 10, (batch,), device=device)
for _ in range(2):
    step(x, y)
sync()
steps, start = 0, time.perf_counter()
while steps < 3 or time.perf_counter() - start < 10:
    step(x, y); steps += 1
sync()
print(f"{rate:.2f} {steps * batch / (time.perf_counter() - start):.2f}")
PY
}

tv="n/a" ceiling="n/a"
if [[ "$have_torch" == 1 ]]; then
  read -r tv ceiling < <(py_rates 2>>"$WORK/python.log" || echo "failed failed")
fi
ratio() {
  "$PYTHON" -c 'import sys
try: print(f"{float(sys.argv[1]) / float(sys.argv[2]):.2f}")
except Exception: print("-")' "$1" "$2"
}
echo "| side | img/s (last epoch) | ltfit / it |"
echo "|---|--:|--:|"
echo "| ltfit (cifar10 batches, records in memory, host loader; epoch 1: $cold) | $ours | 1.00 |"
echo "| ltfit, data.cache device (epoch 1: $dev_cold) | $dev | $(ratio "$ours" "$dev") |"
echo "| torchvision CIFAR10 + DataLoader ($WORKERS workers) | $tv | $(ratio "$ours" "$tv") |"
echo "| PyTorch, model only (random tensors in memory) | $ceiling | $(ratio "$ours" "$ceiling") |"
echo
echo "$ARCH ($STEM stem), 32 px, batch $BATCH, $DEVICE, fp32, $threads threads, $TRAIN training images, $EPOCHS epochs; logs in $WORK"
