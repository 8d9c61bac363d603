#!/usr/bin/env bash
# Training-loader throughput: ltfit's C++ loader against torchvision's DataLoader, same images,
# same batch size, same augmentation cost, same number of cores. See bench/README.md.
#
# Usage: bench/loader_bench.sh [--workers N] [--size PX] [--batches N] [--data DIR]
#                              [--pil-draft] [--rrc] [--no-ltfit] [--no-python]
# --rrc: both sides RandomResizedCrop + flip only (ltfit: data.augment.crop random_resized, the
# fastai transforms off; torchvision: RandomResizedCrop(size), RandomHorizontalFlip).
# Runs each tool with N workers (default: nproc) and with 1 worker, then prints a table.
# Exits 0 when the benchmark ran, even if one side could not (it says why); 2 on bad usage.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-$ROOT/build/ltfit}"
PYTHON="${PYTHON:-python3}"

workers="$(nproc)"
size=224
batches=60
data=/tmp/ltfit-bench-data
pil_draft=""
rrc=""
run_ltfit=1
run_python=1

usage() { sed -n '5,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --workers) workers="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --batches) batches="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --pil-draft) pil_draft="--pil-draft"; shift ;;
    --rrc) rrc="--rrc"; shift ;;
    --no-ltfit) run_ltfit=0; shift ;;
    --no-python) run_python=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for value in "$workers" "$size" "$batches"; do
  if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
    echo "error: --workers, --size and --batches take positive integers, got '$value'" >&2
    exit 2
  fi
done

scratch="$(mktemp -d "${TMPDIR:-/tmp}/ltfit-bench.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

# --- the dataset: 2000 + 200 synthetic 300-500 px JPEGs, made once ---------------------------
if [[ ! -d "$data/train" ]]; then
  if [[ ! -x "$LTFIT" ]]; then
    echo "error: no dataset at $data and no $LTFIT to make one (build it first)" >&2
    exit 1
  fi
  echo "generating the benchmark images in $data ..."
  "$LTFIT" synth --out "$data" --train 2000 --valid 200 --seed 0
fi

# --- ltfit's config: the study's config with this dataset, size and batch size -------------
# Replaces `key:` values inside their top-level section, keeping everything else (comments too).
config="$scratch/bench.yaml"
awk -v root="$data" -v size="$size" '
  /^[a-z_]+:/ { section = $1 }
  function set(value) { sub(/:[^#]*/, ": " value "  "); sub(/ +$/, ""); }
  section == "data:"  && $1 == "root:"       { set(root) }
  section == "data:"  && $1 == "image_size:" { set(size) }
  section == "data:"  && $1 == "batch_size:" { set(64) }
  section == "model:" && $1 == "pretrained:" { set("none") }
  { print }
' "$ROOT/configs/cats_dogs.yaml" > "$config"

# --- running one side ------------------------------------------------------------------------
# Each run appends "tool workers images_per_second" to $results, or a note to $notes.
results="$scratch/results.txt"
notes="$scratch/notes.txt"
: > "$results"
: > "$notes"

# Prints "<images_per_second> <workers>" from a JSON document on stdin (log lines around it ok).
json_fields() {
  "$PYTHON" -c '
import json, sys
text = sys.stdin.read()
start = text.find("{")
doc, _ = json.JSONDecoder().raw_decode(text[start:]) if start >= 0 else (None, 0)
print(doc["images_per_second"], doc["workers"])
'
}

# The top-level help lists the subcommands (`ltfit bench-loader --help` would not tell: an
# unknown subcommand's --help prints the top-level help and exits 0).
ltfit_available() {
  [[ -x "$LTFIT" ]] && "$LTFIT" --help 2>/dev/null | grep -q '^ *bench-loader'
}

# run_one_ltfit N [cache]: with `cache`, data.cache: ram (bench-loader then fills the cache with
# one untimed epoch and times the batches after it), reported as ltfit-ram.
run_one_ltfit() {
  local n="$1" tool=ltfit extra=()
  [[ "${2:-}" == cache ]] && tool=ltfit-ram extra=(--set data.cache=ram)
  if [[ -n "$rrc" ]]; then
    extra+=(--set data.augment.crop=random_resized --set data.augment.max_rotate=0
            --set data.augment.max_zoom=1 --set data.augment.max_warp=0
            --set data.augment.max_lighting=0)
  fi
  local out="$scratch/$tool-$n.json"
  if ! OMP_NUM_THREADS=1 "$LTFIT" bench-loader --config "$config" --batches "$batches" \
         --workers "$n" "${extra[@]}" --json > "$out" 2> "$scratch/$tool-$n.err"; then
    echo "$tool (workers $n) failed: $(tail -n 3 "$scratch/$tool-$n.err")" >> "$notes"
    return 0
  fi
  local fields
  if fields="$(json_fields < "$out" 2>/dev/null)"; then
    echo "$tool $fields" >> "$results"
  else
    echo "$tool (workers $n): no JSON with images_per_second and workers on stdout" >> "$notes"
  fi
}

run_one_python() {
  local n="$1" out="$scratch/python-$1.json"
  if ! "$PYTHON" "$ROOT/bench/torchvision_loader.py" --root "$data" --size "$size" \
         --batches "$batches" --workers "$n" $pil_draft $rrc > "$out" 2> "$scratch/python-$n.err"; then
    echo "torchvision (workers $n) failed: $(tail -n 3 "$scratch/python-$n.err")" >> "$notes"
    return 0
  fi
  echo "torchvision $(json_fields < "$out")" >> "$results"
}

worker_counts=("$workers")
[[ "$workers" != 1 ]] && worker_counts+=(1)

if [[ "$run_ltfit" == 1 ]] && ! ltfit_available; then
  echo "note: '$LTFIT bench-loader' is not available (not built yet, or an older binary);" \
       "measuring torchvision only" >> "$notes"
  run_ltfit=0
fi
if [[ "$run_python" == 1 ]] && ! "$PYTHON" -W ignore -c "import torchvision, PIL" 2>/dev/null; then
  echo "note: $PYTHON cannot import torchvision and PIL (run scripts/bench_deps.sh);" \
       "measuring ltfit only" >> "$notes"
  run_python=0
fi

for n in "${worker_counts[@]}"; do
  echo "size $size, $n worker(s), $batches batches of 64 ..." >&2
  [[ "$run_ltfit" == 1 ]] && run_one_ltfit "$n"
  [[ "$run_ltfit" == 1 ]] && run_one_ltfit "$n" cache
  [[ "$run_python" == 1 ]] && run_one_python "$n"
done

# --- the table ------------------------------------------------------------------------------
echo
echo "loader throughput, ${size}px, batch 64, $(nproc) cores on this machine ($data)${pil_draft:+, torchvision with PIL draft decoding}${rrc:+, RandomResizedCrop + flip only}"
awk '
  { tool[NR] = $1; rate[NR] = $2; n[NR] = $3; by[$1 " " $3] = $2 }
  END {
    printf "%-12s %7s %10s %14s %14s\n", "tool", "workers", "img/s", "img/s/core", "ltfit/python"
    for (i = 1; i <= NR; ++i) {
      ratio = "-"
      if (tool[i] ~ /^ltfit/ && by["torchvision " n[i]] > 0)
        ratio = sprintf("%.2fx", rate[i] / by["torchvision " n[i]])
      per_core = rate[i] / (n[i] > 0 ? n[i] : 1)
      printf "%-12s %7d %10.1f %14.1f %14s\n", tool[i], n[i], rate[i], per_core, ratio
    }
  }
' "$results"
if [[ -s "$notes" ]]; then
  echo
  cat "$notes"
fi
exit 0
