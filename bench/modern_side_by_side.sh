#!/usr/bin/env bash
# The modern recipe's features side by side with fastai: for each feature both tools have (label
# smoothing, MixUp, CutMix, random erasing; EMA through timm's ModelEmaV3, since fastai has none),
# bench/fastai_side_by_side.sh runs the same fine-tune in fastai and in ltfit with that feature
# on, and once with none. One table: each tool's training seconds per optimizer step (validation
# excluded), its cost as a ratio to the same tool's plain step, and validation and TTA accuracy.
#   bench/modern_side_by_side.sh [OUT.md] [-- fastai_side_by_side.sh options]
#   bench/modern_side_by_side.sh bench/results/modern-side-by-side-$(date +%F).md
#   FEATURES="none ema" bench/modern_side_by_side.sh -- --epochs 3
# About 15 minutes on two CPU cores with the defaults (6 pairs of 1 frozen + 2 unfrozen epochs on
# 1,000 synthetic images at 64 px). Needs fastai and timm (scripts/bench_deps.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
FEATURES="${FEATURES:-none label_smoothing mixup cutmix random_erasing ema}"
OUT=""
if [[ $# -gt 0 && "$1" != -- ]]; then
  OUT="$1"
  shift
fi
[[ "${1:-}" == -- ]] && shift

record="$(mktemp "${TMPDIR:-/tmp}/ltfit-modern-sbs.XXXXXX")"
trap 'rm -f "$record"' EXIT
start=$(date +%s)
for feature in $FEATURES; do
  echo "== $feature" >&2
  "$ROOT/bench/fastai_side_by_side.sh" --feature "$feature" --record "$record" "$@" >&2
done

table="$("$PYTHON" - "$record" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
plain = next((r for r in rows if r["feature"] == "none"), None)
names = {"none": "plain", "label_smoothing": "label smoothing 0.1", "mixup": "MixUp α 0.4",
         "cutmix": "CutMix α 1", "random_erasing": "random erasing 0.25",
         "ema": "EMA 0.99 (fastai: timm's ModelEmaV3)"}

def cell(row, tool, key, spec):
    value = row.get(tool, {}).get(key)
    return "-" if value is None else format(value, spec)

def cost(row, tool):
    step, base = row.get(tool, {}).get("step"), (plain or {}).get(tool, {}).get("step")
    return "-" if step is None or not base else f"{step / base:.2f}×"

print("| feature | ltfit s/step | ltfit vs plain | fastai s/step | fastai vs plain "
      "| fastai/ltfit step | ltfit acc | ltfit TTA | fastai acc | fastai TTA |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    l, f = r.get("ltfit", {}).get("step"), r.get("fastai", {}).get("step")
    ratio = "-" if l is None or f is None else f"{f / l:.2f}×"
    print(f"| {names.get(r['feature'], r['feature'])} | {cell(r, 'ltfit', 'step', '.3f')} "
          f"| {cost(r, 'ltfit')} | {cell(r, 'fastai', 'step', '.3f')} | {cost(r, 'fastai')} "
          f"| {ratio} | {cell(r, 'ltfit', 'acc', '.4f')} | {cell(r, 'ltfit', 'tta_acc', '.4f')} "
          f"| {cell(r, 'fastai', 'acc', '.4f')} | {cell(r, 'fastai', 'tta_acc', '.4f')} |")
PY
)"
echo
echo "$table"
echo
echo "done in $(($(date +%s) - start)) s"
if [[ -n "$OUT" ]]; then
  {
    echo "# The modern recipe's features side by side with fastai ($(date +%F))"
    echo
    echo "\`bench/modern_side_by_side.sh${*:+ -- $*}\` on $(nproc) CPU cores ($(uname -m)):" \
         "bench/fastai_side_by_side.sh's fine-tune (defaults unless given) once per feature."
    echo
    echo "$table"
  } >"$OUT"
  echo "wrote $OUT"
fi
