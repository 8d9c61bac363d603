#!/usr/bin/env bash
# ltfit and fastai side by side on the label layouts of docs/labels.md, same images, cores and
# recipe (resnet18 from random init, fine_tune 1 frozen + EPOCHS unfrozen epochs, lr 2e-3, 64 px,
# batch 32, fastai's aug_transforms, no TTA), over SEEDS seeds each:
#   shapes_csv    `ltfit synth --layout csv --task shapes`: 4 labels per image, each present or not
#                 (multi-label: BCE; accuracy_multi, F1 over samples, mAP)
#   cats_csv      `ltfit synth --layout csv`: one label per image in a CSV with an is_valid column
#   cats_pattern  `ltfit synth --layout pattern`: the label in the file name, split by valid_pct 0.2
# fastai's side is bench/fastai_labels.py (from_csv / from_name_re). Prints a Markdown table:
# the figures (mean ± std over the seeds) and the seconds per optimizer step, ltfit's over
# fastai's (below 1: ltfit faster).
#
# Usage: bench/labels_side_by_side.sh [OUT.md]   (environment: EPOCHS=3 SEEDS=2 TRAIN=600
#        VALID=200 LTFIT=build/ltfit PYTHON=python3 ONLY="shapes_csv cats_csv cats_pattern")
# Exit codes: 0 ran (a side that failed is named in the table), 1 no ltfit binary, 2 usage.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-$ROOT/build/ltfit}"
PYTHON="${PYTHON:-python3}"
EPOCHS="${EPOCHS:-3}" SEEDS="${SEEDS:-2}" TRAIN="${TRAIN:-600}" VALID="${VALID:-200}"
ONLY="${ONLY:-shapes_csv cats_csv cats_pattern}"
OUT="${1:-}"
[[ -x "$LTFIT" ]] || { echo "error: no ltfit binary at $LTFIT (build it first)" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/ltfit-labels-sbs.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$LTFIT" synth --out "$work/shapes_csv" --layout csv --task shapes --train "$TRAIN" --valid "$VALID" --seed 0 2>/dev/null
"$LTFIT" synth --out "$work/cats_csv" --layout csv --train "$TRAIN" --valid "$VALID" --seed 0 2>/dev/null
"$LTFIT" synth --out "$work/cats_pattern" --layout pattern --train "$TRAIN" --valid "$VALID" --seed 0 2>/dev/null

ltfit_data() {  # the data section of workload $1
  case "$1" in
    shapes_csv) echo "layout: csv, csv: {valid_column: is_valid, label_delim: ' '}" ;;
    cats_csv) echo "layout: csv, csv: {valid_column: is_valid}" ;;
    cats_pattern) echo "layout: pattern, valid_pct: 0.2" ;;
  esac
}
fastai_flags() {
  case "$1" in
    shapes_csv) echo "--layout csv --multi-label" ;;
    cats_csv) echo "--layout csv" ;;
    cats_pattern) echo "--layout pattern --valid-pct 0.2" ;;
  esac
}

records="$work/records.jsonl"
: >"$records"
for w in $ONLY; do
  for ((s = 0; s < SEEDS; s++)); do
    seed=$((42 + s))
    cat >"$work/$w.yaml" <<YAML
run: {name: $w-$seed, out_dir: $work/runs, seed: $seed}
data: {root: $work/$w, $(ltfit_data "$w"), image_size: 64, batch_size: 32, workers: $(nproc)}
model: {arch: resnet18, pretrained: none, head: fastai, dropout: 0.5}
train: {recipe: fine_tune, freeze_epochs: 1, epochs: $EPOCHS, lr: 2.0e-3, device: cpu, profile: true}
eval: {tta: false}
YAML
    echo "ltfit $w seed $seed ..." >&2
    if "$LTFIT" train --config "$work/$w.yaml" >"$work/$w-$seed.log" 2>&1; then
      "$PYTHON" -c "
import json, sys
sys.path.insert(0, '$ROOT/bench')
from run_figures import step_seconds
run = '$work/runs/$w-$seed'
s = json.load(open(run + '/summary.json'))
print(json.dumps({'tool': 'ltfit', 'workload': '$w', 'seed': $seed, 'accuracy': s['accuracy'],
                  'f1_samples': s.get('f1_samples'), 'map': s.get('map'),
                  'step_seconds': step_seconds(run), 'train_seconds': s['train_seconds']}))
" >>"$records"
    else
      echo "{\"tool\": \"ltfit\", \"workload\": \"$w\", \"seed\": $seed, \"failed\": true}" >>"$records"
    fi
    echo "fastai $w seed $seed ..." >&2
    # shellcheck disable=SC2046
    if line="$("$PYTHON" "$ROOT/bench/fastai_labels.py" --root "$work/$w" $(fastai_flags "$w") \
                 --epochs "$EPOCHS" --seed "$seed" 2>"$work/$w-$seed-fastai.log")"; then
      "$PYTHON" -c "
import json, sys
r = json.loads(sys.argv[1]); r.update(workload='$w', seed=$seed)
r['accuracy'] = r.get('accuracy_multi', r.get('accuracy'))
print(json.dumps(r))" "$line" >>"$records"
    else
      echo "{\"tool\": \"fastai\", \"workload\": \"$w\", \"seed\": $seed, \"failed\": true}" >>"$records"
    fi
  done
done

table="$("$PYTHON" - "$records" "$EPOCHS" "$SEEDS" "$TRAIN" "$VALID" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
epochs, seeds, n_train, n_valid = sys.argv[2:6]
def fig(values):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.4f} ± {sd:.4f}"
print(f"resnet18 from random init, fine_tune 1 + {epochs} epochs, lr 2e-3, 64 px, batch 32, "
      f"{n_train} train / {n_valid} valid images, {seeds} seed(s); accuracy is accuracy_multi "
      "for shapes_csv. Step: seconds per optimizer step in training (validation excluded).\n")
print("| workload | tool | accuracy | F1 (samples) | mAP | s/step | step ltfit/fastai |")
print("|---|---|---|---|---|---|---|")
for w in dict.fromkeys(r["workload"] for r in rows):
    step = {}
    for tool in ("ltfit", "fastai"):
        rs = [r for r in rows if r["workload"] == w and r["tool"] == tool and not r.get("failed")]
        failed = sum(1 for r in rows if r["workload"] == w and r["tool"] == tool and r.get("failed"))
        step[tool] = statistics.mean(r["step_seconds"] for r in rs) if rs else None
        ratio = ""
        if tool == "fastai" and step["ltfit"] and step["fastai"]:
            ratio = f"{step['ltfit'] / step['fastai']:.2f}"
        print(f"| {w} | {tool}{' (' + str(failed) + ' failed)' if failed else ''} | "
              f"{fig([r.get('accuracy') for r in rs])} | {fig([r.get('f1_samples') for r in rs])} | "
              f"{fig([r.get('map') for r in rs])} | "
              f"{'—' if step[tool] is None else format(step[tool], '.4f')} | {ratio} |")
PY
)"
echo "$table"
if [[ -n "$OUT" ]]; then printf '%s\n' "$table" >"$OUT"; fi
