#!/usr/bin/env bash
# Two or more `ltfit serve` binaries on the same fixture, alternating, twice each: wrk's
# requests/s at 1 and at 64 connections (10 s and 12 s after a 3 s warm-up at 8). For a change
# to the server whose effect is smaller than this machine's run-to-run noise: alternating the
# binaries spreads the noise over both. Uses the fixture bench/serve_load.sh made (its checkpoint,
# load.jpg and post.lua in WORK); needs wrk.
#   bench/serve_ab.sh /tmp/old/ltfit build/ltfit
#   bench/serve_ab.sh "GOMP_SPINCOUNT=300000 build/ltfit" build/ltfit   # environment too
set -euo pipefail
WORK="${WORK:-/tmp/ltfit-serve-load}"
ROUNDS="${ROUNDS:-2}"
cd "$WORK"
[[ -f run/checkpoints/last.ckpt && -f post.lua && -f load.jpg ]] ||
  { echo "error: no fixture in $WORK: run bench/serve_load.sh first" >&2; exit 2; }
for round in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    # exec: $! is the server itself, whatever environment words $bin starts with
    eval "exec $bin serve --checkpoint run/checkpoints/last.ckpt --port 0" > ab.log 2>&1 &
    server=$!
    port=""
    for _ in $(seq 300); do
      port=$(grep -o 'http://127.0.0.1:[0-9]*' ab.log | head -1 | cut -d: -f3 || true)
      [[ -n "$port" ]] && break
      sleep 0.1
    done
    [[ -n "$port" ]] || { echo "error: '$bin' did not start:" >&2; cat ab.log >&2; exit 1; }
    url="http://127.0.0.1:$port/v1/predict"
    WRK_BODY=load.jpg wrk -t1 -c8 -d3s -s post.lua "$url" > /dev/null 2>&1
    one=$(WRK_BODY=load.jpg wrk -t1 -c1 -d10s -s post.lua "$url" 2>&1 | awk '/Requests\/sec/ {print $2}')
    many=$(WRK_BODY=load.jpg wrk -t2 -c64 -d12s --timeout 60s -s post.lua "$url" 2>&1 |
           awk '/Requests\/sec/ {print $2}')
    kill -TERM "$server"
    wait "$server" || true
    echo "round $round  $bin:  1 client $one req/s, 64 clients $many req/s"
    sleep 3
  done
done
