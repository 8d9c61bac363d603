#!/usr/bin/env bash
# The shards layout against WebDataset (the oracle; scripts/bench_deps.sh installs it):
# 1. WebDataset reads `ltfit synth --layout shards`'s tars: every sample, its JPEG and its class;
# 2. WebDataset's ShardWriter writes a folder set as shards (pax headers for keys past 100 bytes,
#    .cls numbers and .json labels, 16 samples a shard); ltfit trains one epoch on them with a
#    brace pattern, and its split.csv names and labels every sample as the writer wrote it;
# 3. a brace range naming one shard more than there are exits 3 naming it.
# Exits 77 (CTest: skipped) when python3 cannot import webdataset and PIL.
#
#   tests/data/shards_oracle.sh path/to/ltfit
set -uo pipefail

LTFIT="$(realpath "${1:?usage: $0 path/to/ltfit}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import webdataset, PIL" 2>/dev/null; then
  echo "SKIPPED: Python webdataset and PIL are needed (scripts/bench_deps.sh)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
oracle() { "$PYTHON" "$HERE/shards_oracle.py" "$@"; }

echo "== 1. WebDataset reads ltfit synth's shards"
"$LTFIT" synth --layout shards --out s --train 40 --valid 12 --seed 2 >/dev/null 2>&1 ||
  { echo "synth shards failed"; exit 1; }
oracle read s/train-000000.tar s/valid-000000.tar s/classes.txt >read.txt || fail "webdataset read (above)"
[[ "$(wc -l <read.txt)" == 52 ]] || fail "webdataset read $(wc -l <read.txt) samples, not 52"
[[ "$(grep -c ' cat$' read.txt)" == 26 ]] || fail "webdataset read $(grep -c ' cat$' read.txt) cats, not 26"

echo "== 2. ltfit reads WebDataset's ShardWriter"
"$LTFIT" synth --out f --train 40 --valid 12 --seed 3 >/dev/null 2>&1 || { echo "synth failed"; exit 1; }
oracle write f w || fail "ShardWriter (above)"
cat > w.yaml <<YAML
run: {name: w, out_dir: $WORK/runs, seed: 1, tensorboard: false}
data: {root: $WORK/w, layout: shards, image_size: 32, batch_size: 8, workers: 1,
       shards: {train: "wds-train-{000000..000002}.tar", valid: "wds-valid-*.tar"}}
model: {arch: resnet18, pretrained: none}
train: {recipe: one_cycle, epochs: 1, lr: 0.01, device: cpu, checkpoint: {every_minutes: 0}}
eval: {tta: false}
YAML
if "$LTFIT" train --config w.yaml --run-dir runs/w >w.log 2>&1; then
  oracle compare runs/w/split.csv w/expected.csv || fail "split.csv (above)"
  grep -q "shards layout, 40 train / 12 valid" w.log || fail "the log: $(grep 'data:' w.log)"
else
  fail "train on WebDataset's shards exited $? ($(tail -3 w.log))"
fi

echo "== 3. a shard of the range that does not exist"
sed 's/{000000..000002}/{000000..000003}/' w.yaml > w4.yaml
"$LTFIT" train --config w4.yaml --run-dir runs/w4 >w4.log 2>&1
code=$?
[[ $code == 3 ]] || fail "a missing shard exited $code, not 3"
grep -q "wds-train-000003.tar' (data.shards.train" w4.log || fail "no shard named: $(grep error w4.log)"

if ((failures)); then
  echo "shards_oracle: $failures failure(s)"
  exit 1
fi
echo "shards_oracle: all passed"
