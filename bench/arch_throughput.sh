#!/usr/bin/env bash
# Training throughput per registered arch: ltfit's training images/s (EPOCHS epochs of one_cycle
# on synthetic images: decode, augment, forward, backward, AdamW step; the last epoch's
# images_per_second in epochs.csv) beside PyTorch's (torchvision's model, the same batch size,
# size and optimizer, on random tensors already in memory: no data loading, so an upper bound
# for a PyTorch script). Same machine, same run, same thread count. Prints a Markdown table.
#   bench/arch_throughput.sh                          # every arch, 128 px, batch 16, CPU
#   ARCHS="resnet18 convnext_tiny" SIZE=224 DEVICE=cuda bench/arch_throughput.sh
#   LTFIT_SET="data.workers=1 data.cache=ram" bench/arch_throughput.sh   # extra --set for ltfit
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-${BUILD_DIR:-$ROOT/build}/ltfit}"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-/tmp/ltfit-arch-throughput}"
SIZE="${SIZE:-128}"
BATCH="${BATCH:-16}"
IMAGES="${IMAGES:-96}"   # training images per class side: 2 x IMAGES per epoch
DEVICE="${DEVICE:-cpu}"
# ltfit's figure is its last epoch's: the first pays the warm-up (the loader's first batches,
# oneDNN/cuDNN choosing kernels, the allocator growing) that PyTorch's loop leaves untimed (2
# warm-up steps), so both sides are timed in steady state. The first epoch is shown beside.
EPOCHS="${EPOCHS:-2}"
PRECISION="${PRECISION:-fp32}"
threads="$(nproc)"
export OMP_NUM_THREADS="$threads"

[[ -x "$LTFIT" ]] || { echo "no ltfit binary at $LTFIT: run scripts/setup.sh first" >&2; exit 1; }
if [[ -z "${ARCHS:-}" ]]; then
  ARCHS="$("$LTFIT" models --json | "$PYTHON" -c 'import json,sys; print(" ".join(r["arch"] for r in json.load(sys.stdin)))')"
fi
mkdir -p "$WORK"
if [[ ! -f "$WORK/data/.complete" ]]; then
  rm -rf "$WORK/data"
  "$LTFIT" synth --out "$WORK/data" --train "$IMAGES" --valid 16 --seed 0 >/dev/null
  touch "$WORK/data/.complete"
fi
have_torch=1
"$PYTHON" -c "import torchvision" 2>/dev/null || have_torch=0

torch_rate() {  # images/s of torchvision's model under a plain training loop
  "$PYTHON" - "$1" "$SIZE" "$BATCH" "$DEVICE" "$threads" "$PRECISION" <<'PY'
import sys, time, torch, torchvision
arch, size, batch, device, threads, precision = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
torch.set_num_threads(threads)
# torchvision's ViT takes one image size, fixed when it is built
extra = {"image_size": size} if arch.startswith("vit") else {}
model = getattr(torchvision.models, arch)(num_classes=2, **extra).to(device).train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(batch, 3, size, size, device=device)
y = torch.randint(0, 2, (batch,), device=device)
dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
def step():
    with torch.autocast(device_type=device, dtype=dtype, enabled=dtype is not None):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
def sync():
    if device.startswith("cuda"):
        torch.cuda.synchronize()
for _ in range(2):
    step()
sync()
steps, start = 0, time.perf_counter()
while steps < 3 or time.perf_counter() - start < 10:
    step(); steps += 1
sync()
print(f"{steps * batch / (time.perf_counter() - start):.2f}")
PY
}

extra_sets=()
for kv in ${LTFIT_SET:-}; do extra_sets+=(--set "$kv"); done
echo "| arch | ltfit img/s (last epoch) | ltfit epoch 1 (cold) | PyTorch img/s (model only) | ltfit / PyTorch |"
echo "|---|--:|--:|--:|--:|"
for arch in $ARCHS; do
  run="$WORK/runs/$arch"
  rm -rf "$run"
  ours="failed" cold="-"
  if "$LTFIT" train --config quickstart --set "data.root=$WORK/data" --set "model.arch=$arch" \
      --set "data.image_size=$SIZE" --set "data.batch_size=$BATCH" --set "train.epochs=$EPOCHS" \
      --set "train.device=$DEVICE" --set "train.precision=$PRECISION" --set run.tensorboard=false \
      "${extra_sets[@]}" --run-dir "$run" >"$WORK/$arch.log" 2>&1; then
    read -r cold ours < <("$PYTHON" -c 'import csv,sys
r = list(csv.DictReader(open(sys.argv[1])))
print(r[0]["images_per_second"], r[-1]["images_per_second"])' "$run/epochs.csv")
  fi
  theirs="n/a"
  [[ "$have_torch" == 1 ]] && theirs="$(torch_rate "$arch" 2>>"$WORK/$arch.log" || echo failed)"
  ratio="$("$PYTHON" -c 'import sys
try: print(f"{float(sys.argv[1]) / float(sys.argv[2]):.2f}")
except Exception: print("-")' "$ours" "$theirs")"
  echo "| $arch | $ours | $cold | $theirs | $ratio |"
done
echo
echo "$SIZE px, batch $BATCH, $DEVICE, $PRECISION, $threads threads, $(( 2 * IMAGES )) images per ltfit epoch, $EPOCHS epochs; logs in $WORK"
