#!/usr/bin/env bash
# CIFAR's Python version read by ltfit, with torchvision as the oracle:
# 1. `ltfit synth --layout cifar10|cifar100` writes both versions; torchvision's CIFAR10 and
#    CIFAR100 read the Python one and find the binary one's images and labels, record for record
#    (cifar_python_oracle.py check);
# 2. the binary version, ltfit synth's Python version (Python 2's protocol 2) and three re-saves
#    by this machine's Python and NumPy (protocol 2 with bytes keys, protocol 4, protocol 5 with a
#    Fortran-order array and int64 labels) each train one epoch (resnet18, model.stem cifar, CPU,
#    same seed): every run's epochs.csv losses and accuracy equal the binary run's: the same run;
# 3. CIFAR-100's Python version gives the binary version's run too (fine labels);
# 4. a pickle whose object would run `touch pwned` exits 3 naming the file and the refused
#    global, and runs nothing.
# Exits 77 (CTest: skipped) when python3 cannot import torchvision and numpy.
#
#   tests/data/cifar_python_oracle.sh path/to/ltfit
set -uo pipefail

LTFIT="$(realpath "${1:?usage: $0 path/to/ltfit}")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import torchvision, numpy" 2>/dev/null; then
  echo "SKIPPED: Python torchvision and numpy are needed (scripts/bench_deps.sh)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
oracle() { "$PYTHON" "$HERE/cifar_python_oracle.py" "$@"; }

# One epoch on DATA_ROOT; prints epochs.csv's losses and accuracy (no timings).
train_on() {
  local name="$1" root="$2" layout="$3"
  cat > "$name.yaml" <<YAML
run: {name: $name, out_dir: $WORK/runs, seed: 11, tensorboard: false}
data: {root: $root, layout: $layout, image_size: 32, batch_size: 16, workers: 1}
model: {arch: resnet18, pretrained: none, stem: cifar, head: fastai, dropout: 0.0}
train: {recipe: one_cycle, epochs: 1, lr: 0.01, device: cpu, channels_last: false,
        checkpoint: {every_minutes: 0}}
eval: {tta: false}
YAML
  if ! "$LTFIT" train --config "$name.yaml" --run-dir "runs/$name" >"$name.log" 2>&1; then
    fail "train on $root exited $? ($(tail -3 "$name.log"))"
    return
  fi
  "$PYTHON" - "runs/$name/epochs.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keep = [k for k in rows[0] if "loss" in k or "accuracy" in k]
print(";".join(f"{k}={r[k]}" for r in rows for k in keep))
PY
}

echo "== 1. torchvision reads ltfit synth's Python version as its binary one"
"$LTFIT" synth --layout cifar10 --out c10 --train 48 --valid 16 --seed 4 >/dev/null 2>&1 ||
  { echo "synth cifar10 failed"; exit 1; }
"$LTFIT" synth --layout cifar100 --out c100 --train 32 --valid 16 --seed 5 >/dev/null 2>&1 ||
  { echo "synth cifar100 failed"; exit 1; }
oracle check c10 0 || fail "torchvision's CIFAR10 on c10 (above)"
oracle check c100 1 || fail "torchvision's CIFAR100 on c100 (above)"

echo "== 2. the binary, Python 2 and re-saved versions give the same run"
expected="$(train_on bin "$WORK/c10/cifar-10-batches-bin" cifar10)"
echo "binary: $expected"
[[ -n "$expected" ]] || fail "no epochs.csv from the binary run"
for how in py2 p2-bytes p4-latin1 p5-fortran; do
  dir="$WORK/c10/cifar-10-batches-py"
  if [[ "$how" != py2 ]]; then
    dir="$WORK/$how/cifar-10-batches-py"
    oracle resave "$WORK/c10/cifar-10-batches-py" "$dir" "$how" || { fail "resave $how"; continue; }
  fi
  got="$(train_on "$how" "$dir" auto)"
  grep -q "layout cifar10\|cifar10" "$how.log" || fail "$how: the log does not name layout cifar10"
  [[ "$got" == "$expected" ]] && echo "$how: the same run" || fail "$how: $got != binary's $expected"
done

echo "== 3. CIFAR-100's Python version gives the binary run"
expected="$(train_on bin100 "$WORK/c100/cifar-100-binary" cifar100)"
got="$(train_on py100 "$WORK/c100/cifar-100-python" cifar100)"
[[ -n "$expected" && "$got" == "$expected" ]] && echo "cifar100: the same run" ||
  fail "cifar100: python $got != binary's $expected"

echo "== 4. a pickle that would run a command is refused and runs nothing"
mkdir -p evil && cp c10/cifar-10-batches-py/* evil/ && oracle evil evil/data_batch_1
sed -e "s#$WORK/c10/cifar-10-batches-bin#$WORK/evil#" -e 's/name: bin/name: evil/' bin.yaml > evil.yaml
"$LTFIT" train --config evil.yaml --run-dir runs/evil >evil.log 2>&1
code=$?
[[ $code == 3 ]] || fail "the evil pickle exited $code, not 3 ($(tail -3 evil.log))"
grep -q "evil/data_batch_1" evil.log && grep -q "refused global 'posix.system'" evil.log ||
  fail "the message does not name the file and the refused global: $(grep -i error evil.log)"
[[ ! -e pwned && ! -e runs/evil/pwned ]] || fail "the pickle's command ran"

if ((failures)); then
  echo "cifar_python_oracle: $failures failure(s)"
  exit 1
fi
echo "cifar_python_oracle: all passed"
