#!/usr/bin/env bash
# Offline test of scripts/fetch_data.sh: a small dogscats-shaped .tgz served on loopback.
#
# Usage: tests/data_fetch/test_fetch_data.sh [LTFIT_BINARY]   (CTest: fetch_data_loopback)
# Builds dogscats/{train,valid}/{cats,dogs}/cat.N.jpg … plus sample/, test1/ and models/ like
# fastai's archive (JPEGs from Python + Pillow, or from `ltfit synth` without Pillow), serves it
# with `python3 -m http.server` on a free 127.0.0.1 port and checks that fetch_data.sh
#   1. fetches, verifies and unpacks it (exit 0, counts, .complete marker, archive removed);
#   2. does nothing on a second run (no request reaches the server);
#   3. exits 5 on wrong expected counts, 4 on a wrong checksum, 3 (with a hint) on an
#      unreachable URL, 2 on a bad option;
#   4. leaves a root that `ltfit train` accepts (1 epoch, 32 px; skipped without the binary).
# Exit codes: 0 all passed, 1 a check failed, 77 skipped (no python3, curl or tar).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FETCH="$ROOT/scripts/fetch_data.sh"
LTFIT="${1:-${LTFIT:-$ROOT/build/ltfit}}"
# Runs of the binary hold the build lock (never a half-linked binary); LTFIT_LOCK= (empty) skips it.
LOCK="${LTFIT_LOCK-/tmp/ltfit-build.lock}"
N_TRAIN=8   # per class
N_VALID=4   # per class

for tool in python3 curl tar md5sum; do
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is not installed"; exit 77; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/ltfit-fetch-test.XXXXXX")"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

failures=0
pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
# expect_rc WANT DESCRIPTION: compares $rc (set by the caller) with WANT.
expect_rc() { if [[ "$rc" -eq "$1" ]]; then pass "$2 (exit $rc)"; else fail "$2: exit $rc, expected $1"; fi; }

# --- the archive -----------------------------------------------------------------------------
src="$work/src/dogscats"
python3 - "$src" "$N_TRAIN" "$N_VALID" "$LTFIT" "$LOCK" <<'PY'
import os, shutil, subprocess, sys, tempfile
root, n_train, n_valid, ltfit, lock = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:6]

try:
    from PIL import Image, ImageDraw

    def write(path, cls, i):
        img = Image.new("RGB", (48 + i % 5, 40), (40 + 7 * i % 200, 90, 160))
        d = ImageDraw.Draw(img)
        if cls == "cat":
            d.polygon([(10, 20), (16, 4), (22, 20)], fill=(250, 230, 40))
        else:
            d.rectangle([6, 14, 14, 36], fill=(20, 250, 40))
        img.save(path, quality=80)
except ImportError:  # no Pillow: take JPEGs from `ltfit synth`
    tmp = tempfile.mkdtemp()
    locked = ["flock", "-w", "600", lock] if lock else []
    subprocess.run(locked + [ltfit, "synth", "--out", tmp, "--train", "8", "--valid", "4"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pools = {c: sorted(os.path.join(tmp, "train", c, f) for f in os.listdir(os.path.join(tmp, "train", c)))
             for c in ("cat", "dog")}

    def write(path, cls, i):
        shutil.copy(pools[cls][i % len(pools[cls])], path)

k = 0
for split, n in (("train", n_train), ("valid", n_valid), ("sample/train", 2), ("sample/valid", 1)):
    for cls in ("cat", "dog"):
        folder = os.path.join(root, split, cls + "s")
        os.makedirs(folder, exist_ok=True)
        for _ in range(n):
            write(os.path.join(folder, f"{cls}.{k}.jpg"), cls, k)
            k += 1
os.makedirs(os.path.join(root, "test1"))
for i in range(3):  # fastai's test1/: unlabelled N.jpg
    write(os.path.join(root, "test1", f"{i + 1}.jpg"), "cat", i)
os.makedirs(os.path.join(root, "models"))
PY
mkdir -p "$work/www"
tar -czf "$work/www/dogscats.tgz" -C "$work/src" dogscats
size="$(stat -c %s "$work/www/dogscats.tgz")"
md5="$(head -c 1048576 "$work/www/dogscats.tgz" | md5sum | cut -d' ' -f1)"
checksum="$size:$md5"
expect=(--expect-train $((2 * N_TRAIN)) --expect-valid $((2 * N_VALID)))

# --- the server ------------------------------------------------------------------------------
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/www" \
  > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do
  curl -sf -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done
url="http://127.0.0.1:$port/dogscats.tgz"
requests() { grep -c 'GET /dogscats.tgz' "$work/server.log" || true; }

# --- 1. fetch --------------------------------------------------------------------------------
out="$work/data"
rc=0
"$FETCH" --url "$url" --out "$out" --checksum "$checksum" "${expect[@]}" > "$work/run1.log" 2>&1 ||
  rc=$?
expect_rc 0 "fetch from $url"
[[ $rc -eq 0 ]] || sed 's/^/    /' "$work/run1.log"
count() { find "$1" -maxdepth 1 -name '*.jpg' | wc -l; }
for split_n in "train:$N_TRAIN" "valid:$N_VALID"; do
  for cls in cats dogs; do
    n="$(count "$out/dogscats/${split_n%%:*}/$cls" 2>/dev/null || echo 0)"
    if [[ "$n" -eq "${split_n#*:}" ]]; then pass "${split_n%%:*}/$cls has $n images"
    else fail "${split_n%%:*}/$cls has $n images, expected ${split_n#*:}"; fi
  done
done
if [[ -f "$out/dogscats/.complete" ]]; then pass ".complete marker written"; else fail "no .complete marker"; fi
if [[ -d "$out/dogscats/sample" && -d "$out/dogscats/test1" ]]; then
  pass "sample/ and test1/ kept beside train/ and valid/"
else
  fail "sample/ or test1/ missing"
fi
leftovers="$(find "$out" -maxdepth 1 -name '.*' ! -name . | wc -l)"
if [[ "$leftovers" -eq 0 ]]; then pass "no temporary files left in $out"
else fail "temporary files left: $(find "$out" -maxdepth 1 -name '.*' ! -name .)"; fi

# --- 2. idempotent ---------------------------------------------------------------------------
before="$(requests)"
rc=0
"$FETCH" --url "$url" --out "$out" --checksum "$checksum" "${expect[@]}" > "$work/run2.log" 2>&1 ||
  rc=$?
expect_rc 0 "second run"
if [[ "$(requests)" -eq "$before" ]] && grep -q 'already complete' "$work/run2.log"; then
  pass "second run is a no-op (no download, says 'already complete')"
else
  fail "second run downloaded again or did not say so: $(cat "$work/run2.log")"
fi

# --- 3. failures -----------------------------------------------------------------------------
rc=0
"$FETCH" --url "$url" --out "$work/wrong-counts" --checksum "$checksum" --expect-train 20 \
  --expect-valid 8 > "$work/counts.log" 2>&1 || rc=$?
expect_rc 5 "wrong expected counts"
if [[ ! -f "$work/wrong-counts/dogscats/.complete" ]]; then pass "wrong counts: not marked complete"
else fail "wrong counts: marked complete"; fi
if grep -q -- '--expect-train' "$work/counts.log"; then pass "wrong counts: says how to override"
else fail "wrong counts: no hint in: $(cat "$work/counts.log")"; fi

rc=0
"$FETCH" --url "$url" --out "$work/wrong-sum" --checksum "$size:0123456789abcdef0123456789abcdef" \
  "${expect[@]}" > "$work/sum.log" 2>&1 || rc=$?
expect_rc 4 "wrong checksum"

rc=0
"$FETCH" --url "$url" --out "$work/default-sum" "${expect[@]}" > "$work/default-sum.log" 2>&1 ||
  rc=$?
expect_rc 4 "a mirror serving another file than fastai's (default checksum)"

dead_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
rc=0
"$FETCH" --url "http://127.0.0.1:$dead_port/dogscats.tgz" --out "$work/dead" --checksum none \
  "${expect[@]}" > "$work/dead.log" 2>&1 || rc=$?
expect_rc 3 "unreachable URL"
if grep -q 'download of .* failed' "$work/dead.log" && grep -q -- '--url' "$work/dead.log"; then
  pass "unreachable URL: names the failure and suggests a mirror / --archive"
else
  fail "unreachable URL: unhelpful message: $(cat "$work/dead.log")"
fi

rc=0
"$FETCH" --url "http://127.0.0.1:$port/missing.tgz" --out "$work/404" --checksum none \
  "${expect[@]}" > "$work/404.log" 2>&1 || rc=$?
expect_rc 3 "HTTP 404"

rc=0
"$FETCH" --source nonsense > "$work/usage.log" 2>&1 || rc=$?
expect_rc 2 "bad --source"

rc=0
"$FETCH" --archive "$work/www/dogscats.tgz" --out "$work/local" --checksum "$checksum" \
  "${expect[@]}" > "$work/local.log" 2>&1 || rc=$?
expect_rc 0 "--archive FILE (offline install)"

# --- 4. ltfit reads it -----------------------------------------------------------------------
if [[ -x "$LTFIT" ]]; then
  locked=()
  [[ -n "$LOCK" ]] && locked=(flock -w 600 "$LOCK")
  rc=0
  "${locked[@]}" "$LTFIT" train --config "$ROOT/configs/quickstart.yaml" \
    --run-dir "$work/run" --set "data.root=$out/dogscats" --set data.layout=auto \
    --set train.epochs=1 --set data.image_size=32 --set data.batch_size=4 \
    --set train.device=cpu --set eval.tta=false --json > "$work/train.json" 2> "$work/train.log" ||
    rc=$?
  expect_rc 0 "ltfit train with data.root=<out>/dogscats"
  if python3 - "$work/train.json" $((2 * N_TRAIN)) $((2 * N_VALID)) <<'PY'
import json, sys
text = open(sys.argv[1]).read()
s, _ = json.JSONDecoder().raw_decode(text[text.find("{"):])
ok = (s["classes"] == ["cats", "dogs"] and s["train_images"] == int(sys.argv[2])
      and s["valid_images"] == int(sys.argv[3]))
print(f"    classes {s['classes']}, train {s['train_images']}, valid {s['valid_images']}")
sys.exit(0 if ok else 1)
PY
  then
    pass "ltfit sees classes cats/dogs and only train/ + valid/ (sample/, test1/ ignored)"
  else
    fail "ltfit indexed the wrong images: $(tail -n 5 "$work/train.log")"
  fi
else
  echo "skip - ltfit train on the result: no binary at $LTFIT"
fi

echo
if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
