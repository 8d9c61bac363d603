#!/usr/bin/env bash
# `cmake --install` as a user runs it, then the installed binary used from another directory
# with nothing in the environment pointing at the build:
# 1. P/bin/ltfit, P/share/ltfit/configs/{cats_dogs,cats_dogs_modern,quickstart}.yaml (+ experiments/) and the docs
#    in P/share/doc/ltfit are installed;
# 2. the binary resolves every library (no "not found" in ldd) through its RUNPATH, and its
#    RUNPATH names LibTorch's folder;
# 3. `ltfit configs` lists the installed configs and plans with their first comment lines;
#    `ltfit configs quickstart` prints the installed file;
# 4. `ltfit train --config quickstart` (a name, from a folder without configs/) finds the
#    installed config, logs its path, writes it in config.yaml's header, trains and exits 0;
#    ./configs/quickstart.yaml in the working directory wins over the installed one;
# 5. a name that matches nothing exits 2 naming the shipped configs; `--plan` finds a plan by name;
# 6. the binary copied alone, with nothing beside it, still finds the configs it was built with;
# 7. a CUDA build installs its CUDA half in P/lib, which the installed binary loads when told to
#    (LTFIT_CUDA=on; no GPU needed) and which resolves LibTorch's CUDA libraries.
#
#   tests/install/install_test.sh BUILD_DIR
set -uo pipefail

BUILD="$(realpath "${1:?usage: $0 BUILD_DIR}")"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
P="$WORK/prefix"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { "$@" || fail "$*"; }

if ! cmake --install "$BUILD" --prefix "$P" >"$WORK/install.log" 2>&1; then
  cat "$WORK/install.log"
  echo "FAIL: cmake --install"
  exit 1
fi
LTFIT="$P/bin/ltfit"
check test -x "$LTFIT"
for f in share/ltfit/configs/cats_dogs.yaml share/ltfit/configs/cats_dogs_modern.yaml \
         share/ltfit/configs/quickstart.yaml \
         share/ltfit/configs/experiments/kaggle_vs_colab.yaml share/doc/ltfit/README.md; do
  check test -f "$P/$f"
done
ls "$P/share/doc/ltfit/docs/"*.md >/dev/null 2>&1 || fail "no docs in share/doc/ltfit/docs"

# 2. libraries
missing="$(env -u LD_LIBRARY_PATH ldd "$LTFIT" | grep "not found")"
[[ -z "$missing" ]] || fail "unresolved libraries: $missing"
readelf -d "$LTFIT" | grep -E "R(UN)?PATH" | grep -q "torch/lib" || fail "RUNPATH lacks torch/lib"

# Everything below runs from a folder with no configs/ and a clean environment.
mkdir -p "$WORK/elsewhere"
cd "$WORK/elsewhere" || exit 1
run() { env -i HOME="$WORK" PATH=/usr/bin:/bin "$LTFIT" "$@"; }

check run --version
# 7. the CUDA half (a build against a CUDA LibTorch has one)
if [[ -f "$BUILD/libltfit_cuda.so" ]]; then
  half="$P/lib/libltfit_cuda.so"
  [[ -f "$half" ]] || fail "the CUDA half is not installed in P/lib"
  missing="$(env -u LD_LIBRARY_PATH ldd "$half" 2>&1 | grep "not found")"
  [[ -z "$missing" ]] || fail "the CUDA half's unresolved libraries: $missing"
  env -i HOME="$WORK" PATH=/usr/bin:/bin LTFIT_CUDA=on "$LTFIT" envinfo >"$WORK/envinfo.txt" 2>&1
  grep -q "CUDA half     loaded from $half" "$WORK/envinfo.txt" ||
    { cat "$WORK/envinfo.txt"; fail "the installed binary did not load $half"; }
fi
# 3. listing
run configs >"$WORK/list.txt" 2>&1 || fail "ltfit configs exited $?"
grep -q "^  cats_dogs .*cats-vs-dogs" "$WORK/list.txt" || fail "configs: no cats_dogs line"
grep -q "^  quickstart " "$WORK/list.txt" || fail "configs: no quickstart line"
grep -q "$P/share/ltfit/configs/quickstart.yaml" "$WORK/list.txt" || fail "configs: no installed path"
grep -q "^  kaggle_vs_colab " "$WORK/list.txt" || fail "configs: no plan kaggle_vs_colab"
if grep -q "study_2019" "$WORK/list.txt"; then fail "configs: study_2019 is not a plan"; fi
run configs quickstart >"$WORK/printed.yaml" 2>/dev/null || fail "configs quickstart exited $?"
cmp -s "$WORK/printed.yaml" "$P/share/ltfit/configs/quickstart.yaml" || fail "configs quickstart: not the file"

# 4. a tiny training run from the installed config, by name
run synth --out data/synth --train 24 --valid 8 --seed 1 >/dev/null 2>&1 ||
  fail "synth exited $?"
run train --config quickstart --set train.epochs=1 --set data.image_size=32 \
  --set data.batch_size=8 --set train.device=cpu --set run.tensorboard=false \
  --set run.out_dir=runs >"$WORK/train.log" 2>&1
code=$?
[[ $code -eq 0 ]] || { tail -20 "$WORK/train.log"; fail "train --config quickstart exited $code"; }
grep -q "config quickstart: $P/share/ltfit/configs/quickstart.yaml" "$WORK/train.log" ||
  fail "the resolved config path is not logged"
grep -q "^# from: $P/share/ltfit/configs/quickstart.yaml" runs/quickstart/config.yaml ||
  fail "config.yaml's header does not name the installed config"

# ./configs/ wins over the installed configs
mkdir -p configs
sed 's/name: quickstart/name: local_copy/' "$P/share/ltfit/configs/quickstart.yaml" >configs/quickstart.yaml
run train --config quickstart --set train.epochs=1 --set data.image_size=32 \
  --set data.batch_size=8 --set train.device=cpu --set run.tensorboard=false >"$WORK/train2.log" 2>&1 ||
  fail "train with ./configs/quickstart.yaml exited $?"
check test -f runs/local_copy/config.yaml

# 5. errors
run train --config no_such_config >"$WORK/missing.log" 2>&1
code=$?
[[ $code -eq 2 ]] || fail "a missing config name exited $code, not 2"
grep -q "cats_dogs, cats_dogs_modern, cifar10, quickstart" "$WORK/missing.log" || fail "the missing-name message lists no configs"
run experiment --plan no_such_plan >"$WORK/plan.log" 2>&1
[[ $? -eq 2 ]] || fail "a missing plan name did not exit 2"
grep -q "kaggle_vs_colab" "$WORK/plan.log" || fail "the missing-plan message lists no plans"

# 6. the binary copied alone (no share/ beside it, no checkout): the configs it was built with
mkdir -p "$WORK/copied" "$WORK/alone"
cp "$LTFIT" "$WORK/copied/ltfit"
cd "$WORK/alone" || exit 1
alone() { env -i HOME="$WORK" XDG_CACHE_HOME="$WORK/cache" PATH=/usr/bin:/bin "$WORK/copied/ltfit" "$@"; }
alone configs >"$WORK/alone-list.txt" 2>&1 || fail "a copied binary's ltfit configs exited $?"
grep -q "^  cats_dogs " "$WORK/alone-list.txt" || fail "a copied binary lists no cats_dogs"
grep -q "^  kaggle_vs_colab " "$WORK/alone-list.txt" || fail "a copied binary lists no plan"
alone configs quickstart >"$WORK/alone.yaml" 2>/dev/null || fail "a copied binary's configs quickstart exited $?"
cmp -s "$WORK/alone.yaml" "$P/share/ltfit/configs/quickstart.yaml" || fail "the embedded quickstart differs"
alone synth --out data --train 16 --valid 8 --seed 1 >/dev/null 2>&1 || fail "copied synth exited $?"
alone train --config quickstart --set data.root=data --set train.epochs=1 --set data.image_size=32 \
  --set data.batch_size=8 --set train.device=cpu --set run.tensorboard=false \
  --set run.out_dir=runs >"$WORK/alone-train.log" 2>&1 ||
  { tail -20 "$WORK/alone-train.log"; fail "a copied binary's train --config quickstart exited $?"; }

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "install test passed: $P"
