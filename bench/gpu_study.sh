#!/usr/bin/env bash
# The 2019 study at full size on whatever GPU is lent, beside a PyTorch peer on the same GPU and
# images, in one unattended command; writes bench/results/gpu-study-<date>.md.
#
#   bench/gpu_study.sh                     # a bare GPU machine: setup + build, then the study
#   SKIP_SETUP=1 BUILD_DIR=build bench/gpu_study.sh    # offline, with an existing build
#   bench/gpu_study.sh --tiny              # a CPU rehearsal in about a minute (the suite runs it)
#
# What runs, in order (times on an H200 with 16 cores are estimates until measured):
#  1. the build (scripts/setup.sh; SKIP_SETUP=1 uses BUILD_DIR as it is);
#  2. `ltfit synth`: 23,000 training and 2,000 validation JPEGs at the real set's sizes
#     (300-500 px; ~1 min), reused when present;
#  3. `ltfit experiment` on a plan written here: the study's recipe (fastai v1's fit_one_cycle,
#     body frozen, max LR 3e-3, channels_last, TTA v1) on ResNet-34 at 224 px, 3 epochs at
#     batch 16 in fp16, bf16 and fp32, then 1 epoch in fp16 at batch 64 and 256 (~5 min);
#     model.pretrained is none (no network: the weights change no timing);
#  4. bench/torch_study_peer.py: torchvision ImageFolder + DataLoader (a worker per core, pinned
#     memory), AMP fp16, channels_last, fused AdamW, the body frozen like ltfit's runs
#     (--frozen), at batch 16, 64 and 256 (~2 min);
#  5. the report: each run's mm:ss beside the P100's 11:17 and the K80's 19:54, images/s and
#     data wait (the last epoch's), the peer's images/s at each batch size and the ratio, the
#     issue's goals met or not, the phase times against the budget, and the experiment's own
#     report.md appended.
# The budget (--budget-minutes, default 12) is checked before the optional parts: the fp32 and
# large-batch runs and the peer's larger batches are left out, and named, when it is spent.
#
# Options: --tiny (CPU, 48/16 images at 64 px, ResNet-18, 1 epoch, batch 8; the report goes to
# WORK), --work DIR (default /tmp/ltfit-gpu-study, --tiny: a new temporary folder), --out FILE,
# --budget-minutes M, --train N, --valid N. Environment: BUILD_DIR (default ./build), LTFIT
# (default BUILD_DIR/ltfit), PYTHON (default python3), SKIP_SETUP=1, GPU_STUDY_PRECISIONS
# (default "fp16 bf16 fp32"), GPU_STUDY_LARGE_BATCHES (default "64 256"; empty: none) to fit a
# short loan.
# Exit codes: 0 the report was written (failed runs are in it), 1 it could not be (no binary, the
# synthetic set or the experiment failed to start), 2 bad usage.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
LTFIT="${LTFIT:-$BUILD_DIR/ltfit}"
PYTHON="${PYTHON:-python3}"
tiny=0 work="" out="" budget=12 train="" valid=""
while (($#)); do
  case "$1" in
    --tiny) tiny=1; shift ;;
    --work) work="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --budget-minutes) budget="$2"; shift 2 ;;
    --train) train="$2"; shift 2 ;;
    --valid) valid="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_study: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for value in "$budget" ${train:+"$train"} ${valid:+"$valid"}; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || { echo "gpu_study: expected a positive integer, got '$value'" >&2; exit 2; }
done

log() { printf '\033[1m[gpu_study]\033[0m %s\n' "$*" >&2; }
started=$SECONDS
phases=()
phase_done() { phases+=("$1=$((SECONDS - $2))"); }
left() { echo $((budget * 60 - (SECONDS - started))); }

if ((tiny)); then
  work="${work:-$(mktemp -d "${TMPDIR:-/tmp}/ltfit-gpu-study-tiny.XXXXXX")}"
  out="${out:-$work/gpu-study-tiny.md}"
  train="${train:-48}" valid="${valid:-16}"
  device=cpu size=64 arch=resnet18 epochs=1 batch=8 large_batches="16"
  run_precisions="fp32 bf16" peer_precision=fp32 peer_batches="4,8" peer_steps=3 peer_warmup=1
else
  work="${work:-/tmp/ltfit-gpu-study}"
  out="${out:-$ROOT/bench/results/gpu-study-$(date +%Y-%m-%d).md}"
  train="${train:-23000}" valid="${valid:-2000}"
  device=cuda size=224 arch=resnet34 epochs=3 batch=16
  large_batches="${GPU_STUDY_LARGE_BATCHES-64 256}"
  run_precisions="${GPU_STUDY_PRECISIONS:-fp16 bf16 fp32}" peer_precision=fp16 peer_batches="16,64,256" peer_steps=200
  peer_warmup=20
fi
mkdir -p "$work" "$(dirname "$out")"

# --- 1. the build ------------------------------------------------------------------------------
t=$SECONDS
if ((!tiny)) && [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  log "building (scripts/setup.sh)"
  BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/setup.sh" >&2 || { log "the build failed"; exit 1; }
fi
[[ -x "$LTFIT" ]] || { log "no ltfit binary at $LTFIT (build first, or set LTFIT)"; exit 1; }
phase_done build "$t"

# --- 2. the images -----------------------------------------------------------------------------
t=$SECONDS
data="$work/data"
marker="$data/.gpu_study-$train-$valid"
if [[ ! -f "$marker" ]]; then
  rm -rf "$data"
  log "synthesizing $train + $valid images into $data"
  "$LTFIT" synth --out "$data" --train "$train" --valid "$valid" --seed 0 >&2 ||
    { log "ltfit synth failed"; exit 1; }
  touch "$marker"
fi
phase_done synth "$t"

# --- 3. ltfit: the study's runs -----------------------------------------------------------------
t=$SECONDS
plan="$work/gpu_study_plan.yaml"
{
  echo "name: gpu_study"
  echo "base: $ROOT/configs/cats_dogs.yaml"
  echo "study: $ROOT/configs/experiments/study_2019.yaml"
  echo "set:"
  echo "  train.recipe: one_cycle"
  echo "  train.frozen: true"
  echo "  train.lr: 3.0e-3"
  echo "  train.channels_last: true"
  echo "  eval.tta: true"
  echo "  eval.tta_mode: v1"
  echo "runs:"
  for p in $run_precisions; do
    study_run=""
    [[ "$p" == fp32 ]] && study_run="    study_run: e3_bs16_fp32"
    [[ "$p" == fp16 ]] && study_run="    study_run: e3_bs16_mixed"
    echo "  - id: e${epochs}_bs${batch}_$p"
    echo "    label: $epochs epoch$( ((epochs == 1)) || echo s), bs $batch, $p"
    [[ -n "$study_run" ]] && echo "$study_run"
    echo "    set: {train.epochs: $epochs, data.batch_size: $batch, train.precision: $p}"
  done
  for b in $large_batches; do
    echo "  - id: e1_bs${b}_${run_precisions%% *}"
    echo "    label: 1 epoch, bs $b, ${run_precisions%% *}"
    echo "    set: {train.epochs: 1, data.batch_size: $b, train.precision: ${run_precisions%% *}}"
  done
} >"$plan"
experiment="$work/experiment"
rm -rf "$experiment"
log "ltfit experiment ($(grep -c '  - id:' "$plan") runs; budget left $(($(left) / 60)) min)"
"$LTFIT" experiment --plan "$plan" --out "$experiment" --set "data.root=$data" \
  --set model.pretrained=none --set "model.arch=$arch" --set "data.image_size=$size" \
  --set "train.device=$device" --set run.tensorboard=false >&2
experiment_rc=$?
[[ -f "$experiment/results.csv" ]] || { log "the experiment wrote no results.csv (exit $experiment_rc)"; exit 1; }
phase_done ltfit "$t"

# --- 4. the PyTorch peer -----------------------------------------------------------------------
t=$SECONDS
peer="$work/peer.jsonl"
: >"$peer"
peer_note=""
if (($(left) < 60)); then
  peer_note="not run: the budget of $budget min was spent"
else
  # Within the budget: the larger batches only while at least 3 minutes are left.
  ((tiny)) || (($(left) >= 180)) || peer_batches="16"
  log "PyTorch peer at batch $peer_batches ($peer_precision)"
  "$PYTHON" "$ROOT/bench/torch_study_peer.py" --root "$data" --device "$device" \
    --arch "$arch" --size "$size" --batch-sizes "$peer_batches" --precision "$peer_precision" \
    --steps "$peer_steps" --warmup "$peer_warmup" --frozen >"$peer" 2>"$work/peer.log"
  rc=$?
  ((rc == 0)) || peer_note="not run: torch_study_peer.py exited $rc ($(tail -1 "$work/peer.log"))"
fi
phase_done peer "$t"

# --- 5. the report -----------------------------------------------------------------------------
gpu_line="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
"$PYTHON" - "$experiment" "$peer" "$out" "$budget" "$tiny" "${gpu_line:-none}" "$peer_note" \
  "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$train" "$valid" \
  "${phases[@]}" "total=$((SECONDS - started))" <<'PY' || { log "writing the report failed"; exit 1; }
import csv, datetime, json, os, sys

(experiment, peer_path, out, budget, tiny, gpu, peer_note, commit, n_train, n_valid,
 *phase_args) = sys.argv[1:]
tiny = tiny == "1"
phases = dict(a.split("=", 1) for a in phase_args)
rows = list(csv.DictReader(open(os.path.join(experiment, "results.csv"))))
peer = [json.loads(line) for line in open(peer_path) if line.strip()]
P100, K80 = 11 * 60 + 17, 19 * 60 + 54


def mmss(seconds):
    s = int(round(float(seconds)))
    return f"{s // 60:02d}:{s % 60:02d}"


def last_epoch(row):
    """images/s and data-wait share of the run's last epoch, from its epochs.csv."""
    try:
        epochs = list(csv.DictReader(open(os.path.join(row["run_dir"], "epochs.csv"))))
        last = epochs[-1]
        return float(last["images_per_second"]), float(last["data_wait_seconds"]) / float(last["seconds"])
    except (OSError, KeyError, IndexError, ValueError, ZeroDivisionError):
        return None, None


lines = [f"# The 2019 study {'(tiny CPU rehearsal) ' if tiny else ''}on this machine, "
         f"{datetime.date.today().isoformat()}", "",
         f"- GPU (nvidia-smi: name, driver, memory): {gpu}",
         f"- ltfit commit {commit}; {n_train} training and {n_valid} validation images "
         "(`ltfit synth`, 300-500 px JPEGs like the real set's); random-init weights "
         "(`model.pretrained: none`: no network here; weights change no timing)", "",
         "## ltfit: the study's runs", "",
         "| run | status | total (train + TTA) | img/s (last epoch) | data wait | "
         "P100 11:17 / this | K80 19:54 / this | accuracy | TTA accuracy |",
         "|---|---|---|---|---|---|---|---|---|"]
ltfit_ips = {}
for r in rows:
    ips, wait = last_epoch(r) if r["status"] == "ok" else (None, None)
    total = r.get("total_seconds") or ""
    cells = [r["label"], r["status"] + (f" ({r['reason']})" if r.get("reason") else "")]
    if r["status"] == "ok" and total:
        t = float(total)
        cells += [mmss(t), f"{ips:.0f}" if ips else "?", f"{100 * wait:.1f} %" if wait is not None else "?",
                  f"{P100 / t:.1f}×", f"{K80 / t:.1f}×", r.get("accuracy", ""), r.get("tta_accuracy", "")]
        if ips:
            ltfit_ips[(int(r["batch_size"]), r["precision"])] = ips
    else:
        cells += ["", "", "", "", "", "", ""]
    lines.append("| " + " | ".join(cells) + " |")

lines += ["", "## Beside PyTorch on the same images", ""]
if peer:
    p0 = peer[0]
    pinned = ", pinned" if p0["device"].startswith("cuda") else ""
    amp = "fp32" if p0["precision"] == "fp32" else f"{p0['precision']} autocast"
    lines += [f"torchvision ImageFolder + DataLoader ({p0['workers']} workers{pinned}), "
              f"{amp}, channels_last, AdamW (fused on CUDA), {p0['arch']} "
              + ("with the body frozen as in ltfit's runs (BatchNorm and classifier train) "
                 if p0.get("frozen") else "training every weight (ltfit's runs: body frozen) ")
              + "at "
              f"{p0['size']} px; {p0['steps']} timed steps after warm-up (torch {p0['torch']}, "
              f"torchvision {p0['torchvision']}). ltfit's figure: the last epoch of its run at "
              "that batch size and precision.", "",
              "| batch | PyTorch img/s | PyTorch data wait | ltfit img/s | ltfit / PyTorch |",
              "|---|---|---|---|---|"]
    for p in peer:
        ours = ltfit_ips.get((p["batch_size"], p["precision"]))
        theirs = p["images_per_second"]
        ours_text = f"{ours:.0f}" if ours else "—"
        ratio_text = f"{ours / theirs:.2f}×" if ours else "—"
        lines.append(f"| {p['batch_size']} | {theirs:.0f} | "
                     f"{100 * p['data_wait_fraction']:.1f} % | {ours_text} | {ratio_text} |")
else:
    lines.append(f"PyTorch peer {peer_note or 'not run'}.")

lines += ["", "## The goals (issue 25)", ""]
# The main run: the first of the plan (fp16 on a GPU, fp32 in --tiny), if it succeeded.
main = rows[0] if rows and rows[0]["status"] == "ok" and rows[0].get("total_seconds") else None
if main:
    t = float(main["total_seconds"])
    ips, wait = last_epoch(main)
    same = [p for p in peer if p["batch_size"] == int(main["batch_size"])
            and p["precision"] == main["precision"]]
    ratio = ips / same[0]["images_per_second"] if (ips and same) else None
    lines += [f"- ≥ 1.3× the PyTorch peer's img/s at batch {main['batch_size']}: "
              + (f"{ratio:.2f}× ({'met' if ratio >= 1.3 else 'not met'})" if ratio else "no peer figure"),
              f"- data wait < 5 %: {100 * wait:.1f} % ({'met' if wait < 0.05 else 'not met'})"
              if wait is not None else "- data wait: no figure",
              f"- the study run ≥ 20× faster than the P100's 11:17: {main['label']} took {mmss(t)}, "
              f"{P100 / t:.1f}× ({'met' if P100 / t >= 20 else 'not met'})"]
    if tiny:
        lines.append("- (a CPU rehearsal at 64 px on a few images: these figures test the script, "
                     "not the goals)")
else:
    lines.append("- no successful main run: the goals could not be measured")

lines += ["", "## Time", "",
          "| phase | seconds |", "|---|---|"] + [f"| {k} | {v} |" for k, v in phases.items()]
lines += [f"| budget | {int(budget) * 60} |", ""]
report = os.path.join(experiment, "report.md")
if os.path.exists(report):
    lines += ["## The experiment's own report", ""]
    lines += ["> " + l if l else ">" for l in open(report).read().splitlines()]
open(out, "w").write("\n".join(lines) + "\n")
print(out)
PY
log "report: $out (total $((SECONDS - started)) s)"
