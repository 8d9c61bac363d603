#!/usr/bin/env bash
# `ltfit serve` under load beside the Python server a PyTorch user would write (issue 43's goal:
# at 64 concurrent clients, ltfit answers at least 2x the peer's images/s with a p99 latency no
# worse). One run, side by side, on this machine's CPU:
#
#   1. a fixture: `ltfit synth` cats and dogs, then a short `ltfit train` of ARCH (default
#      resnet50) from scratch (model.pretrained=none: speed does not depend on the weights) with
#      a linear head at SIZE (224) px, and `ltfit export --out model.pth` of that checkpoint;
#   2. `ltfit serve --max-batch MAX_BATCH (16) --max-wait-ms MAX_WAIT_MS (5)` and
#      bench/serve_peer.py (FastAPI + uvicorn, one process, one worker, batch 1, torchvision's
#      model loading model.pth) on free ports;
#   3. a parity check: both servers must give the same top class on 7 JPEGs (the load JPEG and
#      6 synthetic ones of 300-500 px, so crop, area resize and reduced JPEG decoding all run),
#      with every class's probability within PARITY_TOL (1e-3); the largest differences of the
#      probabilities and of their logarithms are reported (an untrained model's are often 1.0
#      and 1e-20, where only the logarithms tell);
#   4. wrk, POSTing one real JPEG (a synthetic one resized so that its shorter side is SIZE px,
#      332x224: both servers crop it and need not resize; LOAD_JPEG to choose another) to
#      /v1/predict, at each of CONNECTIONS ("1 8 64")
#      concurrent connections for SECONDS_PER_POINT (20) s, one server at a time (the other
#      idle): images/s (2xx answers per second: one image per request), p50 and p99 latency,
#      non-2xx answers, wrk's socket errors, and each server's peak RSS (VmHWM) so far.
#
# Writes $OUT/serve-load.md (OUT default runs/serve-load) with the machine, the versions and
# ltfit/peer per point, prints it, and keeps wrk's outputs and the servers' logs in $OUT.
# Needs wrk (Debian's package: installed with apt-get when missing and run as root) and the
# peer's Python packages (scripts/bench_deps.sh: torchvision, Pillow, fastapi, uvicorn).
#   bench/serve_load.sh
#   SECONDS_PER_POINT=5 CONNECTIONS="1 8" ARCH=resnet18 bench/serve_load.sh     # a rehearsal
# Environment: LTFIT (build/ltfit), PYTHON (python3), WORK (/tmp/ltfit-serve-load, the fixture),
# PEER_ENDPOINT (async: the tutorial route; sync: the thread pool; see serve_peer.py),
# PRECISION (empty: the checkpoint's, fp32; bf16 to pass `serve --precision bf16`), PEER_PRECISION
# (fp32; bf16: the peer's forward under torch.autocast): where the two differ, raise PARITY_TOL to
# what bf16 costs (bench/serve_precision.py measures it on a trained model),
# WARMUP_SECONDS (5, at 16 connections, not measured), WRK_TIMEOUT (120s: a request slower than
# this would be counted as a wrk timeout and left out of the latencies).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-build/ltfit}"
[[ "$LTFIT" = /* ]] || LTFIT="$ROOT/$LTFIT"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-/tmp/ltfit-serve-load}"
OUT="${OUT:-runs/serve-load}"
[[ "$OUT" = /* ]] || OUT="$ROOT/$OUT"
ARCH="${ARCH:-resnet50}"
SIZE="${SIZE:-224}"
SECONDS_PER_POINT="${SECONDS_PER_POINT:-20}"
CONNECTIONS="${CONNECTIONS:-1 8 64}"
MAX_BATCH="${MAX_BATCH:-16}"
MAX_WAIT_MS="${MAX_WAIT_MS:-5}"
PEER_ENDPOINT="${PEER_ENDPOINT:-async}"
WARMUP_SECONDS="${WARMUP_SECONDS:-5}"
WRK_TIMEOUT="${WRK_TIMEOUT:-120s}"
PARITY_TOL="${PARITY_TOL:-1e-3}"
PRECISION="${PRECISION:-}"
PEER_PRECISION="${PEER_PRECISION:-fp32}"

PID_ltfit="" PID_peer="" PORT_ltfit="" PORT_peer="" CKPT=""  # set below

die() { echo "serve_load: $*" >&2; exit 1; }

# wrk: installed from Debian when missing and we may, otherwise what to do is said.
need_wrk() {
  command -v wrk >/dev/null && return
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "wrk is missing: installing Debian's package" >&2
    apt-get install -y -q wrk >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q wrk >/dev/null 2>&1; } || true
  fi
  command -v wrk >/dev/null ||
    die "wrk is not installed: run 'apt-get install wrk' as root (Debian, Ubuntu)," \
      "or put a wrk 4.x on PATH"
}

check_tools() {
  [[ -x "$LTFIT" ]] || die "no ltfit binary at $LTFIT: build it (scripts/setup.sh) or set LTFIT"
  need_wrk
  "$PYTHON" -c "import fastapi, uvicorn, torchvision, PIL, numpy" 2>/dev/null ||
    die "the peer needs fastapi, uvicorn, torchvision, Pillow and numpy: run scripts/bench_deps.sh"
}

# The checkpoint, its export and the images, in $WORK.
make_fixture() {
  rm -rf "$WORK"
  mkdir -p "$WORK"
  "$LTFIT" synth --out "$WORK/data" --train 16 --valid 8 --seed 3 >"$WORK/synth.log" 2>&1
  "$LTFIT" train --config quickstart --set "data.root=$WORK/data" --set "model.arch=$ARCH" \
    --set model.pretrained=none --set model.head=linear --set "data.image_size=$SIZE" \
    --set data.batch_size=8 --set data.workers=1 --set train.epochs=1 \
    --set train.recipe=one_cycle --set train.device=cpu --set eval.tta=false \
    --set run.tensorboard=false --run-dir "$WORK/run" >"$WORK/train.log" 2>&1 ||
    die "training the fixture failed: see $WORK/train.log"
  CKPT="$WORK/run/checkpoints/last.ckpt"
  "$LTFIT" export --checkpoint "$CKPT" --out "$WORK/model.pth" >"$WORK/export.log" 2>&1 ||
    die "ltfit export failed: see $WORK/export.log"
  if [[ -z "${LOAD_JPEG:-}" ]]; then
    LOAD_JPEG="$WORK/load.jpg"
    "$PYTHON" - "$WORK/data/valid/cat/00001.jpg" "$LOAD_JPEG" "$SIZE" <<'PY'
import sys
from PIL import Image
source, out, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
image = Image.open(source).convert("RGB")
scale = size / min(image.size)
image.resize((round(image.width * scale), round(image.height * scale)), Image.LANCZOS).save(
    out, quality=90)
PY
  fi
}

# Starts a server (its command after the log name), waits for "http://HOST:PORT/" in its log;
# sets PID_<name> and PORT_<name>.
start_server() {
  local name=$1 log="$OUT/$1.log"
  shift
  "$@" >"$log" 2>&1 &
  local pid=$! port=""
  printf -v "PID_$name" %s "$pid"
  for _ in $(seq 1 600); do
    port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9][0-9]*\)/.*|\1|p' "$log" | head -1)
    [[ -n "$port" ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$name exited before listening"; }
    sleep 0.2
  done
  [[ -n "$port" ]] || die "$name did not log its port within 120 s (see $log)"
  printf -v "PORT_$name" %s "$port"
}

stop_servers() {
  local pid
  for pid in ${PID_ltfit:-} ${PID_peer:-}; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in ${PID_ltfit:-} ${PID_peer:-}; do wait "$pid" 2>/dev/null || true; done
}

# Same top class on each image, and the largest probability difference (all classes asked for).
check_parity() {
  local images=("$LOAD_JPEG" "$WORK"/data/valid/{cat,dog}/0000[0-2].jpg)
  "$PYTHON" - "http://127.0.0.1:$PORT_ltfit" "http://127.0.0.1:$PORT_peer" "$PARITY_TOL" \
    "${images[@]}" <<'PY' | tee "$OUT/parity.txt"
import json, math, os, sys, urllib.request
ltfit, peer, tol, files = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
def top(base, data):
    request = urllib.request.Request(base + "/v1/predict?top_k=1000", data=data,
                                     headers={"Content-Type": "image/jpeg"})
    with urllib.request.urlopen(request, timeout=300) as r:
        t = json.load(r)["predictions"][0]["top"]
    return t[0]["class"], {c["class"]: c["probability"] for c in t}
worst, worst_log, mismatches = 0.0, 0.0, []
for f in files:
    data = open(f, "rb").read()
    (a, pa), (b, pb) = top(ltfit, data), top(peer, data)
    diff = max(abs(pa[c] - pb.get(c, 0.0)) for c in pa)
    # log-probabilities: where an untrained model is sure (p = 1.0 and 1e-20), they still differ
    logs = [abs(math.log(pa[c]) - math.log(pb[c])) for c in pa if pa[c] > 0 and pb.get(c, 0) > 0]
    worst, worst_log = max(worst, diff), max([worst_log] + logs)
    if a != b:
        mismatches.append(f"{os.path.basename(f)}: ltfit {a}, peer {b}")
    print(f"parity {os.path.basename(f)}: ltfit {a} {pa[a]:.6f}, peer {b} {pb[b]:.6f}, "
          f"largest |dp| {diff:.2e}, largest |d log p| {max(logs, default=0):.2e}")
print(f"PARITY images={len(files)} top_mismatches={len(mismatches)} max_abs_diff={worst:.3e} "
      f"max_abs_log_diff={worst_log:.3e}")
if mismatches or worst > tol:
    sys.exit("parity failed (tolerance %g): %s" % (tol, "; ".join(mismatches) or "probabilities"))
PY
}

write_lua() {
  cat >"$WORK/post.lua" <<'LUA'
-- POSTs the bytes of $WRK_BODY as image/jpeg; prints a line "WRKJSON {...}" of figures at the end.
local f = assert(io.open(os.getenv("WRK_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "image/jpeg"

local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) non2xx = 0 end
function response(status, headers, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end
function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("non2xx") end
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests": %d, "duration_us": %d, "non2xx": %d, ' ..
    '"p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, "mean_us": %.1f, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}}\n',
    summary.requests, summary.duration, bad, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, latency.mean, e.connect, e.read, e.write, e.status,
    e.timeout))
end
LUA
}

# Waits until process $1 has used under 10 % of a core for half a second (at most 180 s): a server
# goes on answering the requests it had read when wrk stopped, and the next point must not
# overlap them.
wait_idle() {
  local before after
  for _ in $(seq 1 360); do
    before=$(awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0)
    sleep 0.5
    after=$(awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0)
    (( (after - before) * 100 < 5 * $(getconf CLK_TCK) )) && return 0
  done
  echo "serve_load: warning: pid $1 still busy after 180 s" >&2
}

vmhwm_mb() { awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }

batch_figures() {  # "images batches model_seconds" run by ltfit so far (/metrics), and the time
  local figures
  figures=$(curl -s "http://127.0.0.1:$PORT_ltfit/metrics" |
    awk '$1=="ltfit_batch_size_sum"{s=$2} $1=="ltfit_batch_size_count"{c=$2}
         $1=="ltfit_model_seconds_total"{m=$2} END{printf "%d %d %.6f", s, c, m}')
  echo "$figures $(date +%s.%N)"
}

# One wrk run against one server; appends a JSON line to $OUT/points.jsonl.
run_point() {
  local name=$1 connections=$2 seconds=$3 record=$4
  local port_var="PORT_$name" pid_var="PID_$name" threads=$((connections < 2 ? connections : 2))
  local before after figures
  before=$(batch_figures)
  WRK_BODY="$LOAD_JPEG" wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency \
    --timeout "$WRK_TIMEOUT" -s "$WORK/post.lua" "http://127.0.0.1:${!port_var}/v1/predict" \
    >"$OUT/wrk-$name-c$connections.txt" 2>&1 ||
    die "wrk failed: see $OUT/wrk-$name-c$connections.txt"
  kill -0 "${!pid_var}" 2>/dev/null || die "$name died under load (see $OUT/$name.log)"
  wait_idle "${!pid_var}"
  after=$(batch_figures)
  [[ "$record" == 1 ]] || return 0
  figures=$(grep '^WRKJSON ' "$OUT/wrk-$name-c$connections.txt" | cut -c9-)
  [[ -n "$figures" ]] || die "no figures in $OUT/wrk-$name-c$connections.txt"
  echo "{\"server\": \"$name\", \"connections\": $connections, \"threads\": $threads," \
    "\"vmhwm_mb\": $(vmhwm_mb "${!pid_var}"), \"batches_before\": [${before// /, }]," \
    "\"batches_after\": [${after// /, }], \"wrk\": $figures}" >>"$OUT/points.jsonl"
}

machine_facts() {
  local cpu memory size wrk_version precision_flag=${PRECISION:+ --precision $PRECISION}
  cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
  memory=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
  echo "- machine: $(nproc) cores ($cpu), $memory, Linux $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- ltfit: $("$LTFIT" --version 2>&1 | head -1) ($LTFIT);" \
    "\`serve --max-batch $MAX_BATCH --max-wait-ms $MAX_WAIT_MS$precision_flag\`"
  "$PYTHON" - "$PEER_ENDPOINT" "$PEER_PRECISION" <<'PY'
import platform, sys
from importlib.metadata import version
import torch
print(f"- peer: bench/serve_peer.py --endpoint {sys.argv[1]} --precision {sys.argv[2]}: "
      f"Python {platform.python_version()}, "
      f"torch {torch.__version__} ({torch.get_num_threads()} threads), torchvision "
      f"{version('torchvision')}, Pillow {version('pillow')}, fastapi {version('fastapi')}, "
      f"starlette {version('starlette')}, uvicorn {version('uvicorn')}")
PY
  size=$("$PYTHON" -c "import sys; from PIL import Image; print('%dx%d' % Image.open(sys.argv[1]).size)" \
    "$LOAD_JPEG")
  wrk_version=$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2 || true)  # wrk -v exits 1
  echo "- load: $wrk_version, ${SECONDS_PER_POINT} s per point, one server at a time, POSTing" \
    "$(basename "$LOAD_JPEG") ($size, $(stat -c %s "$LOAD_JPEG") bytes) as image/jpeg;" \
    "model $ARCH, linear head, ${SIZE} px, random weights"
}

write_table() {
  "$PYTHON" - "$OUT/points.jsonl" "$CONNECTIONS" "${PRECISION:-fp32}" "$PEER_PRECISION" <<'PY'
import json, sys
points = [json.loads(line) for line in open(sys.argv[1])]
ours, peers = sys.argv[3], sys.argv[4]
by = {(p["server"], p["connections"]): p for p in points}
def rate(p):
    w = p["wrk"]
    return (w["requests"] - w["non2xx"]) / (w["duration_us"] / 1e6)
print("| clients | server | images/s | p50 ms | p99 ms | non-2xx | wrk errors (c/r/w/t) "
      "| mean batch | model busy | model ms/image | VmHWM MB | images/s ltfit/peer "
      "| p99 ltfit/peer |")
print("|--:|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|")
goal = None
for n in [int(c) for c in sys.argv[2].split()]:
    for server in ("ltfit", "peer"):
        p = by.get((server, n))
        if p is None:
            continue
        w, e = p["wrk"], p["wrk"]["errors"]
        images = p["batches_after"][0] - p["batches_before"][0]
        batches = p["batches_after"][1] - p["batches_before"][1]
        batch = "1" if server == "peer" else (f"{images / batches:.1f}" if batches else "")
        busy = per_image = ""
        if server == "ltfit" and len(p["batches_after"]) > 3:
            # From before wrk to the server's idle after it (the queue drained).
            model_s = p["batches_after"][2] - p["batches_before"][2]
            wall_s = p["batches_after"][3] - p["batches_before"][3]
            busy = f"{100 * model_s / wall_s:.0f} %"
            per_image = f"{1e3 * model_s / images:.1f}" if images else ""
        ratio = p99 = ""
        other = by.get(("peer", n))
        if server == "ltfit" and other and rate(other) > 0:
            ratio = f"**{rate(p) / rate(other):.2f}×**"
            p99 = f"{w['p99_us'] / other['wrk']['p99_us']:.2f}×" if other["wrk"]["p99_us"] else ""
            if n == 64:
                goal = (rate(p) / rate(other), w["p99_us"], other["wrk"]["p99_us"])
        errors = f"{e['connect']}/{e['read']}/{e['write']}/{e['timeout']}"
        print(f"| {n} | {server} | {rate(p):.1f} | {w['p50_us'] / 1e3:.1f} "
              f"| {w['p99_us'] / 1e3:.1f} | {w['non2xx']} | {errors} | {batch} "
              f"| {busy} | {per_image} | {p['vmhwm_mb']} | {ratio} | {p99} |")
print()
if goal:
    met = goal[0] >= 2 and goal[1] <= goal[2]
    print(f"Issue 43's goal at 64 clients (ltfit >= 2x the peer's images/s, p99 no worse): "
          f"{'met' if met else 'not met'} ({goal[0]:.2f}x, p99 {goal[1] / 1e3:.0f} ms vs "
          f"{goal[2] / 1e3:.0f} ms)." +
          ("" if ours == peers else f" Not like for like: ltfit in {ours}, the peer in {peers}."))
else:
    print("Issue 43's goal is judged at 64 clients, which this run left out.")
PY
}

main() {
  check_tools
  mkdir -p "$OUT"
  rm -f "$OUT/points.jsonl"
  echo "serve_load: fixture ($ARCH, ${SIZE} px) in $WORK" >&2
  make_fixture
  write_lua
  trap stop_servers EXIT
  start_server ltfit "$LTFIT" serve --checkpoint "$CKPT" --port 0 --device cpu \
    --max-batch "$MAX_BATCH" --max-wait-ms "$MAX_WAIT_MS" ${PRECISION:+--precision "$PRECISION"}
  start_server peer "$PYTHON" "$ROOT/bench/serve_peer.py" --weights "$WORK/model.pth" \
    --arch "$ARCH" --port 0 --endpoint "$PEER_ENDPOINT" --precision "$PEER_PRECISION"
  echo "serve_load: ltfit on port $PORT_ltfit (pid $PID_ltfit)," \
    "peer on $PORT_peer (pid $PID_peer)" >&2
  check_parity
  local n server
  for server in ltfit peer; do  # warm-up, not recorded
    run_point "$server" 16 "$WARMUP_SECONDS" 0
  done
  for n in $CONNECTIONS; do
    for server in ltfit peer; do
      echo "serve_load: $server, $n connections, ${SECONDS_PER_POINT} s" >&2
      run_point "$server" "$n" "$SECONDS_PER_POINT" 1
    done
  done
  {
    echo "# ltfit serve vs a FastAPI + uvicorn peer (bench/serve_load.sh)"
    echo
    machine_facts
    echo "- parity before the load: $(grep '^PARITY' "$OUT/parity.txt" | cut -d' ' -f2-)"
    echo
    write_table
    echo
    echo "images/s counts 2xx answers (one image each) over wrk's duration; latencies are wrk's"
    echo "(from a request's first byte sent to its answer's last byte received), of the"
    echo "connections' requests only (each connection sends its next request when answered)."
    echo "wrk errors: connect/read/write/timeout. mean batch: ltfit's images per model run"
    echo "(/metrics); model busy: the share of the time from the load's start to the server's"
    echo "idle after it (its queue drained, then half a second) that ltfit's model was running,"
    echo "and model ms/image its time per image (ltfit_model_seconds_total): near 100 % the"
    echo "server is bound by the forward. VmHWM: the process's peak resident memory since it started."
  } >"$OUT/serve-load.md"
  cat "$OUT/serve-load.md"
}

main "$@"
