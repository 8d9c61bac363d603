#!/usr/bin/env bash
# `ltfit serve` under hostile load (issue 43): a small fixture (ResNet-18 from scratch at 64 px,
# one epoch on 16 synthetic images, as tests/cli/serve_cli_test.cpp's train_tiny), the server on
# a free port with --request-timeout-s 3, then bench/serve_hostile.py: REQUESTS (10000) requests
# over CLIENTS (32) threads, HOSTILE (0.10) of them hostile (truncated and bomb images, random
# bytes, wrong types, bodies over the limit, malformed forms, path tricks, non-HTTP bytes, a huge
# header, a few slow clients). Every good answer must equal `ltfit predict --json`'s for the same
# image (1e-6), every hostile request must get a 4xx, the server's RSS must stay under
# RSS_BOUND_MB, and SIGTERM must then stop it with exit 0. RSS_BOUND_MB's default is docs/serve.md's
# bound ("Memory"): the server's idle RSS, measured once it listens, plus 1.1 GiB (twice
# --inflight-mb's 256 MiB, the decode budget's 512 MiB, the queue's 256 images of 64 px), plus
# --cache-mb's 512 MiB of freed memory kept for reuse (a 64 px model's own working memory is small).
# Writes $OUT/serve-hostile.json (OUT default runs/serve-hostile) and prints one line of figures;
# exits 0 only when everything held.
#   bench/serve_hostile.sh
#   REQUESTS=500 bench/serve_hostile.sh          # a quick rehearsal
# Environment: LTFIT (build/ltfit), PYTHON (python3), WORK (/tmp/ltfit-serve-hostile), SEED (0),
# BIG_PNGS (0): that many valid 9000x9000 PNGs among the hostile requests (serve_hostile.py's
# big_png: decoded, as they are under data.max_pixels; 200, a 4xx or a 503 are right answers).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LTFIT="${LTFIT:-build/ltfit}"
[[ "$LTFIT" = /* ]] || LTFIT="$ROOT/$LTFIT"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-/tmp/ltfit-serve-hostile}"
OUT="${OUT:-runs/serve-hostile}"
[[ "$OUT" = /* ]] || OUT="$ROOT/$OUT"
REQUESTS="${REQUESTS:-10000}"
CLIENTS="${CLIENTS:-32}"
HOSTILE="${HOSTILE:-0.10}"
SEED="${SEED:-0}"
BIG_PNGS="${BIG_PNGS:-0}"

die() { echo "serve_hostile: $*" >&2; exit 1; }
[[ -x "$LTFIT" ]] || die "no ltfit binary at $LTFIT: build it (scripts/setup.sh) or set LTFIT"

rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"
"$LTFIT" synth --out "$WORK/data" --train 16 --valid 8 --seed 2 >"$WORK/synth.log" 2>&1
"$LTFIT" train --config quickstart --set "data.root=$WORK/data" --set data.image_size=64 \
  --set model.arch=resnet18 --set model.pretrained=none --set train.device=cpu \
  --set data.workers=1 --set train.epochs=1 --set train.recipe=one_cycle --set data.batch_size=4 \
  --set eval.tta=false --set run.tensorboard=false --run-dir "$WORK/run" >"$WORK/train.log" 2>&1 ||
  die "training the fixture failed: see $WORK/train.log"
CKPT="$WORK/run/checkpoints/last.ckpt"

# The good images: two noise PNGs and the validation JPEGs; their expected answers from predict.
"$PYTHON" "$ROOT/bench/serve_hostile.py" --write-pngs "$WORK/png" --seed "$SEED"
IMAGES=("$WORK"/png/noise0.png "$WORK"/png/noise1.png "$WORK"/data/valid/*/*.jpg)
"$LTFIT" predict --checkpoint "$CKPT" --device cpu --json --top 1000 "${IMAGES[@]}" \
  >"$WORK/expected.jsonl" 2>"$WORK/predict.log" || die "ltfit predict failed: see $WORK/predict.log"

"$LTFIT" serve --checkpoint "$CKPT" --port 0 --device cpu --request-timeout-s 3 \
  >"$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null || true' EXIT
PORT=""
for _ in $(seq 1 300); do
  PORT=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9][0-9]*\)/.*|\1|p' "$WORK/server.log" | head -1)
  [[ -n "$PORT" ]] && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/server.log" >&2; die "the server exited at start"; }
  sleep 0.2
done
[[ -n "$PORT" ]] || die "the server did not log its port within 60 s (see $WORK/server.log)"
IDLE_MB=$(awk '/^VmRSS:/ {printf "%d", $2 / 1024}' "/proc/$SERVER/status")
RSS_BOUND_MB="${RSS_BOUND_MB:-$((IDLE_MB + 1127 + 512))}"
echo "serve_hostile: server on port $PORT (pid $SERVER), idle RSS $IDLE_MB MB," \
  "bound $RSS_BOUND_MB MB" >&2

status=0
"$PYTHON" "$ROOT/bench/serve_hostile.py" --base "http://127.0.0.1:$PORT" --pid "$SERVER" \
  --images "${IMAGES[@]}" --expected "$WORK/expected.jsonl" --requests "$REQUESTS" \
  --clients "$CLIENTS" --hostile "$HOSTILE" --seed "$SEED" --rss-bound-mb "$RSS_BOUND_MB" \
  --big-pngs "$BIG_PNGS" \
  >"$OUT/serve-hostile.json" 2>"$WORK/hostile.err" || status=$?
cat "$WORK/hostile.err" >&2

server_exit=0
if kill -0 "$SERVER" 2>/dev/null; then
  kill -TERM "$SERVER"
  wait "$SERVER" || server_exit=$?
else
  wait "$SERVER" || server_exit=$?
  echo "serve_hostile: the server was gone before SIGTERM (exit $server_exit)" >&2
  [[ $server_exit == 0 ]] && server_exit=gone
fi
trap - EXIT
cp "$WORK/server.log" "$OUT/server.log"

"$PYTHON" - "$OUT/serve-hostile.json" "$server_exit" <<'PY' || status=1
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit("serve_hostile: no summary was written (see the errors above)")
hostile = {k: v for k, v in s["kinds"].items() if k != "good"}
statuses = {}
for v in hostile.values():
    for status, n in v["statuses"].items():
        statuses[status] = statuses.get(status, 0) + n
print(f"serve_hostile: {s['requests']} requests ({sum(v['count'] for v in hostile.values())} hostile, "
      f"statuses {dict(sorted(statuses.items()))}) in {s['duration_s']} s, {s['requests_per_s']}/s; "
      f"wrong answers {s['wrong_answers']}, good not 200 {s['good_not_200']}, largest |dp| "
      f"{s['max_probability_diff']}; peak RSS {s.get('peak_vmrss_mb')} MB (VmHWM "
      f"{s.get('vmhwm_mb')}, bound {s.get('rss_bound_mb')}); server exit on SIGTERM "
      f"{sys.argv[2]}; {'ok' if s['ok'] else str(s['failure_count']) + ' failures'}")
if sys.argv[2] != "0":
    sys.exit(f"serve_hostile: the server exited {sys.argv[2]} on SIGTERM, not 0")
PY
exit "$status"
