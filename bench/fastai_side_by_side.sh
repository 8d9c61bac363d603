#!/usr/bin/env bash
# The same fine-tune in fastai and in ltfit, on the same images, cores and recipe; one table.
# See bench/README.md ("Side by side with fastai").
#
# Usage: bench/fastai_side_by_side.sh [--arch A] [--size PX] [--bs N] [--epochs N]
#          [--freeze-epochs N] [--lr LR] [--train N] [--valid N] [--workers N] [--device D]
#          [--seed S] [--data DIR] [--no-tta] [--no-fastai] [--no-ltfit] [--keep]
#          [--feature F] [--record FILE]
# Defaults: resnet18, 64 px, bs 32, 1 frozen + 2 unfrozen epochs, lr 2e-3 (fastai's fine_tune
# base_lr), 1000 train / 400 valid synthetic images (`ltfit synth`), workers = threads = nproc,
# cpu. Full-size GPU settings: --device cuda --arch resnet34 --size 224 --bs 64. --arch takes
# any `ltfit models` arch (fastai gets torchvision's model of that name).
# --feature adds one modern-recipe feature to both sides, with the same parameters: none (default),
# label_smoothing (0.1), mixup (alpha 0.4, fastai's default), cutmix (alpha 1), random_erasing
# (p 0.25) or ema (0.99 with warm-up; fastai has none: timm's ModelEmaV3 in a callback, see
# bench/fastai_train.py). --record appends the run's figures to FILE as one JSON line
# (bench/modern_side_by_side.sh reads them).
# Exit codes: 0 the benchmark ran (a side that could not run is named under the table),
#             1 no ltfit binary to make the images with, 2 bad usage.
# Environment: LTFIT (build/ltfit), PYTHON (python3), LTFIT_LOCK (/tmp/ltfit-build.lock: each
# run, ltfit's and fastai's, holds the build lock, so ltfit never starts a binary being relinked
# and neither side shares the cores with a build that takes the lock; the wait is not timed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-$ROOT/build/ltfit}"
PYTHON="${PYTHON:-python3}"
LOCK="${LTFIT_LOCK:-/tmp/ltfit-build.lock}"

arch=resnet18
size=64
bs=32
epochs=2
freeze_epochs=1
lr=2e-3
n_train=1000
n_valid=400
workers="$(nproc)"
device=cpu
seed=42
data=""
tta=1
run_fastai=1
run_ltfit=1
keep=0
feature=none
record=""

usage() { sed -n '5,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
need_value() { [[ $# -ge 2 ]] || { echo "error: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --arch) need_value "$@"; arch="$2"; shift 2 ;;
    --size) need_value "$@"; size="$2"; shift 2 ;;
    --bs) need_value "$@"; bs="$2"; shift 2 ;;
    --epochs) need_value "$@"; epochs="$2"; shift 2 ;;
    --freeze-epochs) need_value "$@"; freeze_epochs="$2"; shift 2 ;;
    --lr) need_value "$@"; lr="$2"; shift 2 ;;
    --train) need_value "$@"; n_train="$2"; shift 2 ;;
    --valid) need_value "$@"; n_valid="$2"; shift 2 ;;
    --workers) need_value "$@"; workers="$2"; shift 2 ;;
    --device) need_value "$@"; device="$2"; shift 2 ;;
    --seed) need_value "$@"; seed="$2"; shift 2 ;;
    --data) need_value "$@"; data="$2"; shift 2 ;;
    --no-tta) tta=0; shift ;;
    --no-fastai) run_fastai=0; shift ;;
    --no-ltfit) run_ltfit=0; shift ;;
    --keep) keep=1; shift ;;
    --feature) need_value "$@"; feature="$2"; shift 2 ;;
    --record) need_value "$@"; record="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for pair in "size:$size" "bs:$bs" "epochs:$epochs" "train:$n_train" "valid:$n_valid" \
            "workers:$workers"; do
  if ! [[ "${pair#*:}" =~ ^[1-9][0-9]*$ ]]; then
    echo "error: --${pair%%:*} takes a positive integer, got '${pair#*:}'" >&2
    exit 2
  fi
done
[[ "$freeze_epochs" =~ ^[0-9]+$ && "$seed" =~ ^[0-9]+$ ]] ||
  { echo "error: --freeze-epochs and --seed take integers >= 0" >&2; exit 2; }
archs="$("$LTFIT" models --json 2>/dev/null | "$PYTHON" -c \
  'import json, sys; print(" ".join(r["arch"] for r in json.load(sys.stdin)))' 2>/dev/null || true)"
[[ -z "$archs" || " $archs " == *" $arch "* ]] ||
  { echo "error: --arch: one of $archs (ltfit models), got '$arch'" >&2; exit 2; }
[[ "$device" =~ ^(cpu|cuda(:[0-9]+)?)$ ]] ||
  { echo "error: --device: cpu | cuda | cuda:N, got '$device'" >&2; exit 2; }
"$PYTHON" -c "import sys; float(sys.argv[1]) > 0 or sys.exit(1)" "$lr" 2>/dev/null ||
  { echo "error: --lr takes a positive number, got '$lr'" >&2; exit 2; }
data="${data:-${TMPDIR:-/tmp}/ltfit-fastai-bench-$n_train-$n_valid}"
# The feature: ltfit's keys and fastai_train.py's flag, the same parameters.
case "$feature" in
  none) ltfit_sets=(); fastai_feature=() ;;
  label_smoothing) ltfit_sets=(train.label_smoothing=0.1); fastai_feature=(--label-smoothing 0.1) ;;
  mixup) ltfit_sets=(train.mixup.mixup_alpha=0.4); fastai_feature=(--mixup 0.4) ;;
  cutmix) ltfit_sets=(train.mixup.cutmix_alpha=1.0); fastai_feature=(--cutmix 1.0) ;;
  random_erasing) ltfit_sets=(data.augment.random_erasing.p=0.25)
                  fastai_feature=(--random-erasing 0.25) ;;
  ema) ltfit_sets=(train.ema.decay=0.99 train.ema.warmup=true); fastai_feature=(--ema 0.99) ;;
  *) echo "error: --feature: none | label_smoothing | mixup | cutmix | random_erasing | ema," \
          "got '$feature'" >&2; exit 2 ;;
esac
set_args=()
for s in "${ltfit_sets[@]}"; do set_args+=(--set "$s"); done

scratch="$(mktemp -d "${TMPDIR:-/tmp}/ltfit-fastai-sbs.XXXXXX")"
if [[ "$keep" == 1 ]]; then
  echo "keeping the run files in $scratch" >&2
else
  trap 'rm -rf "$scratch"' EXIT
fi
notes="$scratch/notes.txt"
: > "$notes"

# Both sides get the same CPU thread budget: torch's intra-op threads = OMP_NUM_THREADS = nproc,
# and nproc loader workers (fastai: DataLoader worker processes; ltfit: loader threads).
threads="$(nproc)"
export OMP_NUM_THREADS="$threads"

# --- the images: ltfit synth, folders layout (train/{cat,dog}, valid/{cat,dog}), made once ---
# Runs "$@" (a command that starts $LTFIT) holding the build lock once $LTFIT exists: a build
# relinking it holds the lock, and a missing binary (deleted before a relink) is waited for, up
# to LTFIT_WAIT seconds (600). Returns 127 when it never appeared, else the command's status.
with_ltfit() {
  local waited=0 rc
  while :; do
    rc=0
    # shellcheck disable=SC2016
    flock "$LOCK" bash -c '[[ -x "$0" ]] || exit 127; "$@"' "$LTFIT" "$@" || rc=$?
    if [[ $rc -ne 127 || -x "$LTFIT" || $waited -ge ${LTFIT_WAIT:-600} ]]; then
      return "$rc"
    fi
    ((waited == 0)) && echo "waiting for $LTFIT (being rebuilt?) ..." >&2
    sleep 10
    waited=$((waited + 10))
  done
}

if [[ ! -d "$data/train" || ! -d "$data/valid" ]]; then
  echo "generating $n_train + $n_valid synthetic images in $data ..." >&2
  if ! with_ltfit "$LTFIT" synth --out "$data" --train "$n_train" --valid "$n_valid" --seed 0 >&2
  then
    echo "error: no dataset at $data and $LTFIT could not make one (build it first)" >&2
    exit 1
  fi
fi

# Runs "$@" and writes "<start> <end>" (seconds since the epoch, from bash's EPOCHREALTIME) to
# the file $1 names; stdout/stderr go to $2/$3. Returns the command's status. Called through
# `flock ... bash -c 'timed "$@"'` (exported), so the lock wait is not timed.
# shellcheck disable=SC2317
timed() {
  local times="$1" out="$2" err="$3"
  shift 3
  local start end rc=0
  start="$EPOCHREALTIME"
  "$@" > "$out" 2> "$err" || rc=$?
  end="$EPOCHREALTIME"
  echo "$start $end" > "$times"
  return "$rc"
}
export -f timed

load() { cut -d' ' -f1-3 /proc/loadavg; }

# --- ltfit -----------------------------------------------------------------------------------
# fastai's fine_tune: recipe fine_tune (freeze_epochs frozen at slice(lr), pct_start 0.99, then
# epochs unfrozen at slice(lr/200, lr/2), div 5), AdamW (0.9, 0.99), eps 1e-5, wd 0.01 with BN and
# bias exempt, fastai head (dropout 0.25/0.5), random init, get_transforms defaults, TTA v2
# (4 augmented passes, beta 0.25).
config="$scratch/ltfit.yaml"
cat > "$config" <<EOF
run: {name: side_by_side, out_dir: $scratch/runs, seed: $seed}
data:
  root: $data
  layout: folders
  image_size: $size
  batch_size: $bs
  workers: $workers
model: {arch: $arch, pretrained: none, head: fastai, dropout: 0.5}
train:
  recipe: fine_tune
  epochs: $epochs
  freeze_epochs: $freeze_epochs
  lr: $lr
  precision: fp32
  device: $device
  profile: true
eval:
  tta: $([[ "$tta" == 1 ]] && echo true || echo false)
  tta_mode: v2
  tta_n: 4
  tta_beta: 0.25
EOF

if [[ "$run_ltfit" == 1 ]]; then
  echo "ltfit: $arch, ${size}px, bs $bs, $freeze_epochs+$epochs epochs on $device (load $(load)) ..." >&2
  # The lock first, then the clock: waiting for someone else's build is not ltfit's time.
  rc=0
  with_ltfit timed "$scratch/ltfit.times" "$scratch/ltfit.json" "$scratch/ltfit.err" \
    "$LTFIT" train --config "$config" "${set_args[@]}" --run-dir "$scratch/run" --json || rc=$?
  if [[ $rc -eq 127 && ! -s "$scratch/ltfit.err" ]]; then
    echo "ltfit: no binary at $LTFIT (build it first)" >> "$notes"
    run_ltfit=0
  elif [[ $rc -ne 0 ]]; then
    echo "ltfit failed (exit $rc): $(tail -n 5 "$scratch/ltfit.err")" >> "$notes"
    run_ltfit=0
  fi
fi

# --- fastai ----------------------------------------------------------------------------------
if [[ "$run_fastai" == 1 ]] && ! "$PYTHON" -W ignore -c "import fastai" 2>/dev/null; then
  echo "fastai: $PYTHON cannot import fastai (run scripts/bench_deps.sh)" >> "$notes"
  run_fastai=0
fi
if [[ "$run_fastai" == 1 ]]; then
  echo "fastai: same settings (load $(load)) ..." >&2
  fastai_args=(--root "$data" --arch "$arch" --size "$size" --bs "$bs" --epochs "$epochs"
               --freeze-epochs "$freeze_epochs" --lr "$lr" --workers "$workers"
               --threads "$threads" --device "$device" --seed "$seed")
  [[ "$tta" == 1 ]] || fastai_args+=(--no-tta)
  fastai_args+=("${fastai_feature[@]}")
  if ! flock "$LOCK" bash -c 'timed "$@"' _ "$scratch/fastai.times" "$scratch/fastai.json" \
         "$scratch/fastai.err" "$PYTHON" "$ROOT/bench/fastai_train.py" "${fastai_args[@]}"; then
    echo "fastai failed: $(tail -n 5 "$scratch/fastai.err")" >> "$notes"
    run_fastai=0
  fi
fi

# --- the table -------------------------------------------------------------------------------
echo
echo "fine_tune side by side: $arch, ${size}px, bs $bs, $freeze_epochs frozen + $epochs unfrozen" \
     "epochs, lr $lr, $n_train train / $n_valid valid ($data), $device, $threads threads," \
     "$workers workers, $(nproc) cores, feature: $feature"
PYTHONPATH="$ROOT/bench" "$PYTHON" - "$scratch" "$run_ltfit" "$run_fastai" "$freeze_epochs" \
  "$epochs" "$feature" \
  "$record" <<'PY'
import json, os, sys
from run_figures import step_seconds

scratch, run_ltfit, run_fastai = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
total_epochs = int(sys.argv[4]) + int(sys.argv[5])
feature, record = sys.argv[6], sys.argv[7]

def last_json(path):
    """The last JSON document in a file (ltfit --json: one pretty-printed document)."""
    text = open(path).read()
    start = text.find("{")
    doc, _ = json.JSONDecoder().raw_decode(text[start:])
    return doc

def wall(tool):
    start, end = map(float, open(os.path.join(scratch, tool + ".times")).read().split())
    return end - start

rows = {}
if run_ltfit:
    s = last_json(os.path.join(scratch, "ltfit.json"))
    rows["ltfit"] = {
        "wall": wall("ltfit"), "train": s["train_seconds"], "tta": s.get("tta_seconds"),
        "ips": s["train_images"] * total_epochs / s["train_seconds"],
        "acc": s["accuracy"], "tta_acc": s.get("tta_accuracy")}
    rows["ltfit"]["step"] = step_seconds(os.path.join(scratch, "run"))
if run_fastai:
    f = last_json(os.path.join(scratch, "fastai.json"))
    rows["fastai"] = {
        "wall": wall("fastai"), "train": f["train_seconds"], "tta": f.get("tta_seconds"),
        "ips": f["images_per_second"], "acc": f["accuracy"], "tta_acc": f.get("tta_accuracy"),
        "import": f["import_seconds"], "step": f.get("step_seconds")}
if record:
    with open(record, "a") as out:
        out.write(json.dumps({"feature": feature, **rows}) + "\n")

def fmt(v, spec):
    return "-" if v is None else format(v, spec)

print(f"{'tool':<8} {'end-to-end s':>12} {'train s':>9} {'train img/s':>11} {'TTA s':>7} "
      f"{'val acc':>8} {'TTA acc':>8}")
for tool, r in rows.items():
    print(f"{tool:<8} {r['wall']:>12.1f} {r['train']:>9.1f} {r['ips']:>11.1f} "
          f"{fmt(r['tta'], '.1f'):>7} {fmt(r['acc'], '.4f'):>8} {fmt(r['tta_acc'], '.4f'):>8}")
if len(rows) == 2:
    a, b = rows["fastai"], rows["ltfit"]
    ratio = lambda x, y: "-" if x is None or not y else f"{x / y:.2f}x"
    print(f"{'fastai/ltfit':<8} {ratio(a['wall'], b['wall']):>8} {ratio(a['train'], b['train']):>9} "
          f"{ratio(b['ips'], a['ips']):>11} {ratio(a['tta'], b['tta']):>7}   "
          "(times: fastai/ltfit; img/s: ltfit/fastai)")
if "fastai" in rows:
    r = rows["fastai"]
    rest = r["wall"] - r["import"] - r["train"] - (r["tta"] or 0)
    print(f"\nfastai outside training: import {r['import']:.1f} s (Python + torch + fastai), "
          f"data/learner set-up, exit {rest:.1f} s")
timing_path = os.path.join(scratch, "run", "timing.json")
if run_ltfit and os.path.exists(timing_path):
    t = json.load(open(timing_path))
    phases = t["phases"]
    r = rows["ltfit"]
    other_train = t["train_seconds"] - sum(v for k, v in phases.items() if k != "tta")
    outside = r["wall"] - t["train_seconds"] - (t.get("tta_seconds") or 0)
    print(f"\nwhere ltfit's {r['wall']:.1f} s go (timing.json, train.profile: true, "
          f"device: {t['device']}):")
    items = [(k, v) for k, v in phases.items()] + [
        ("other (in training: schedule, logging)", other_train),
        ("outside training (start-up, data index, model build, exit)", outside)]
    for name, seconds in items:
        print(f"  {name:<58} {seconds:7.2f} s {100 * seconds / r['wall']:5.1f} %")
PY
if [[ -s "$notes" ]]; then
  echo
  cat "$notes"
fi
exit 0
