#!/usr/bin/env bash
# Data-parallel scaling: the same training (same global batch, same cores) as 1 rank and as
# N ranks under torchrun, and what the gradient all-reduce costs per step.
#
#   bench/dist_scaling.sh                  # CPU: 1 rank x 2 threads vs 2 ranks x 1 thread
#   bench/dist_scaling.sh --gpus           # GPU machine: 1, 2, ... all GPUs (NCCL), images/s each
#   bench/dist_scaling.sh --arch resnet34 --size 96 --batch 64 --train 1024 --out FILE.md
#   bench/dist_scaling.sh --peer           # also PyTorch DDP on the same cores (bench/torch_ddp_train.py)
#
# CPU mode pins both runs to the same two cores (taskset -c 0,1): one process with 2 intra-op
# threads, then 2 ranks over Gloo on 127.0.0.1 with 1 thread each (ltfit divides the machine's
# cores by LOCAL_WORLD_SIZE). Scaling efficiency = images/s of the N-rank run / images/s of the
# 1-rank run on the same cores (1.0: data parallelism costs nothing). GPU mode runs one rank per
# GPU, for 1, 2, ... all GPUs, and reports images/s per GPU count and the speed-up over one GPU
# (the study's sibling guide: 2 x T4 = 1.8 x one T4). Figures come from each run's
# epochs.csv (the last epoch's images/s; the first includes warm-up) and timing.json
# (grad_sync seconds / optimizer steps). The model is torchvision's (head: linear) and the
# augmentation a flip (plus the crop) so that --peer, PyTorch's DistributedDataParallel on the same
# images, cores, model and global batch, does the same work; its images/s stand beside ltfit's.
# Needs Python torch for torchrun (and torchvision for --peer). Prints a Markdown table (and
# writes it to --out).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-$ROOT/build/ltfit}"
PYTHON="${PYTHON:-python3}"
ARCH=resnet18 SIZE=64 BATCH=32 TRAIN=768 EPOCHS=2 GPUS=0 OUT="" PEER=0
while (($#)); do
  case "$1" in
    --arch) ARCH="$2"; shift 2 ;;
    --size) SIZE="$2"; shift 2 ;;
    --batch) BATCH="$2"; shift 2 ;;
    --train) TRAIN="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --gpus) GPUS=1; shift ;;
    --peer) PEER=1; shift ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
"$PYTHON" -c "import torch.distributed.run" 2>/dev/null ||
  { echo "needs Python torch (torchrun): pip install torch" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$LTFIT" synth --out "$WORK/data" --train "$TRAIN" --valid 64 --seed 1 >/dev/null 2>&1
device=cpu
((GPUS)) && device=cuda
cat >"$WORK/c.yaml" <<YAML
run: {name: bench, out_dir: $WORK/runs, seed: 1}
data: {root: $WORK/data, layout: folders, image_size: $SIZE, batch_size: $BATCH, workers: auto,
       augment: {max_rotate: 0, max_zoom: 1, max_lighting: 0, max_warp: 0}}
model: {arch: $ARCH, pretrained: none, head: linear}
train: {recipe: one_cycle, epochs: $EPOCHS, lr: 1.0e-3, device: $device,
        precision: $( ((GPUS)) && echo fp16 || echo fp32 ), checkpoint: {every_minutes: 0}}
eval: {tta: false}
YAML

# figures RUN_DIR: "images/s grad_sync_s_per_step steps"
figures() {
  "$PYTHON" - "$1" <<'PY'
import csv, json, sys
run = sys.argv[1]
epochs = list(csv.DictReader(open(f"{run}/epochs.csv")))
steps = len(list(csv.DictReader(open(f"{run}/steps.csv"))))
timing = json.load(open(f"{run}/timing.json"))
sync = timing["phases"].get("grad_sync", 0.0)
print(f'{float(epochs[-1]["images_per_second"]):.1f} {sync / max(steps, 1):.4f} {steps}')
PY
}
run_one() {  # run_one NAME RANKS [launcher prefix...]
  local name="$1" ranks="$2"; shift 2
  if ((ranks == 1)); then
    "$@" "$LTFIT" train --config "$WORK/c.yaml" --run-dir "$WORK/runs/$name" >"$WORK/$name.log" 2>&1
  else
    "$@" "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$ranks" --no-python \
      "$LTFIT" train --config "$WORK/c.yaml" --run-dir "$WORK/runs/$name" >"$WORK/$name.log" 2>&1
  fi || { echo "run $name failed:" >&2; tail -5 "$WORK/$name.log" >&2; exit 1; }
  figures "$WORK/runs/$name"
}

{
  echo "# Data-parallel scaling ($(date -u +%Y-%m-%d), $(nproc) cores$( ((GPUS)) && echo ", GPUs" ))"
  echo
  echo "$ARCH at $SIZE px, global batch $BATCH, $TRAIN training images, $EPOCHS epochs; images/s of"
  echo "the last epoch; all-reduce = the grad_sync phase (gradients + BatchNorm statistics) per step."
  echo
} >"$WORK/report.md"
if ((GPUS)); then
  n="$(nvidia-smi -L 2>/dev/null | wc -l)"
  ((n > 0)) || { echo "no GPU visible" >&2; exit 2; }
  echo "| GPUs | images/s | per GPU | speed-up over 1 GPU | all-reduce s/step |" >>"$WORK/report.md"
  echo "|---:|---:|---:|---:|---:|" >>"$WORK/report.md"
  base=""
  for ((k = 1; k <= n; k = k < n && 2 * k > n ? n : 2 * k)); do
    if ((k == 1)); then read -r ips sync _ < <(run_one "g$k" 1 env CUDA_VISIBLE_DEVICES=0)
    else read -r ips sync _ < <(run_one "g$k" "$k"); fi
    [[ -z "$base" ]] && base="$ips"
    "$PYTHON" -c "import sys; k,i,b,s=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]),float(sys.argv[4]); print(f'| {k} | {i:.1f} | {i/k:.1f} | {i/b:.2f}x | {s:.4f} |')" \
      "$k" "$ips" "$base" "$sync" >>"$WORK/report.md"
    ((k == n)) && break
  done
  echo >>"$WORK/report.md"
  echo "Reference: the study's sibling guide, Kaggle 2 x T4: 1.8 x one T4." >>"$WORK/report.md"
else
  PIN=()
  command -v taskset >/dev/null && (($(nproc) >= 2)) && PIN=(taskset -c 0,1)
  read -r ips1 sync1 steps1 < <(run_one one 1 "${PIN[@]}")
  read -r ips2 sync2 steps2 < <(run_one two 2 "${PIN[@]}")
  t1=0 t2=0
  if ((PEER)); then
    peer=("$PYTHON" "$ROOT/bench/torch_ddp_train.py" --root "$WORK/data" --arch "$ARCH" --size "$SIZE"
          --bs "$BATCH" --epochs "$EPOCHS")
    ips() { "$PYTHON" -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["images_per_second"])'; }
    t1="$("${PIN[@]}" "${peer[@]}" 2>"$WORK/peer1.log" | ips)" || { tail -5 "$WORK/peer1.log" >&2; exit 1; }
    t2="$("${PIN[@]}" "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node 2 \
          "${peer[@]:1}" 2>"$WORK/peer2.log" | ips)" || { tail -5 "$WORK/peer2.log" >&2; exit 1; }
  fi
  "$PYTHON" - "$ips1" "$ips2" "$sync2" "$t1" "$t2" >>"$WORK/report.md" <<'PY'
import sys
i1, i2, s2, t1, t2 = (float(a) for a in sys.argv[1:])
print("| run | images/s | all-reduce s/step | scaling efficiency |" + (" ltfit / PyTorch |" if t1 else ""))
print("|---|---:|---:|---:|" + ("---:|" if t1 else ""))
print(f"| ltfit, 1 rank x 2 threads | {i1:.1f} | - | 1.00 |" + (f" {i1 / t1:.2f} |" if t1 else ""))
print(f"| ltfit, 2 ranks x 1 thread (Gloo, loopback) | {i2:.1f} | {s2:.4f} | {i2 / i1:.2f} |"
      + (f" {i2 / t2:.2f} |" if t1 else ""))
if t1:
    print(f"| PyTorch, 1 process x 2 threads | {t1:.1f} | - | 1.00 | |")
    print(f"| PyTorch DDP, 2 ranks x 1 thread (Gloo, loopback) | {t2:.1f} | - | {t2 / t1:.2f} | |")
PY
fi
cat "$WORK/report.md"
[[ -n "$OUT" ]] && cp "$WORK/report.md" "$OUT"
exit 0
