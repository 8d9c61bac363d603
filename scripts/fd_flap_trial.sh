#!/usr/bin/env bash
# The descriptor-shortage trial of issue 40 (A1), as the fault trial ran it: while `ltfit train`
# runs (3 epochs, 2 loader workers), its open-file limit is lowered to one below what it holds
# for 0.25 s at a time, then put back to 1024, 14 times. A run must end either 0 with nothing
# skipped (the shortage retried away) or 5 naming the limit; never 0 with images "skipped".
#
#   scripts/fd_flap_trial.sh [RUNS]        # default 3 runs; prints one line per run, exits 1 on
#                                          # a wrong outcome
# Environment: LTFIT (binary, build/ltfit), WORK (a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
LTFIT=${LTFIT:-$PWD/build/ltfit}
RUNS=${1:-3}
WORK=${WORK:-$(mktemp -d /tmp/ltfit-fdflap.XXXXXX)}
command -v prlimit >/dev/null || { echo "prlimit (util-linux) is needed" >&2; exit 2; }
[ -d "$WORK/D2" ] || "$LTFIT" synth --out "$WORK/D2" --train 256 --valid 32 >/dev/null 2>&1
bad=0
for run in $(seq 1 "$RUNS"); do
  rm -rf "$WORK/runs"
  "$LTFIT" train --config quickstart --set data.root="$WORK/D2" --set run.out_dir="$WORK/runs" \
    --set train.epochs=3 --set data.batch_size=8 --set train.device=cpu --set data.image_size=32 \
    --set model.arch=resnet18 --set model.pretrained=none --set data.workers=2 --json \
    >"$WORK/out-$run.json" 2>"$WORK/log-$run.txt" &
  pid=$!
  sleep 2
  dips=0
  while [ $dips -lt 14 ] && kill -0 $pid 2>/dev/null; do
    held=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
    [ "$held" -gt 1 ] || break
    prlimit --pid $pid --nofile=$((held - 1)): 2>/dev/null || break
    sleep 0.25
    prlimit --pid $pid --nofile=1024: 2>/dev/null || break
    dips=$((dips + 1))
    sleep 0.25
  done
  set +e
  wait $pid
  rc=$?
  set -e
  skipped=$(python3 -c "
import json,sys
try:
    s=json.load(open(sys.argv[1]))
    print(s.get('train_skipped_images',0)+s.get('valid_skipped_images',0), s.get('accuracy'))
except Exception:
    print('-', '-')" "$WORK/out-$run.json")
  verdict=ok
  if [ $rc -eq 0 ] && [ "${skipped%% *}" != "0" ]; then verdict=WRONG; bad=1; fi
  if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then verdict=WRONG; bad=1; fi
  reason=$(grep -m1 -o "error: .*" "$WORK/log-$run.txt" | cut -c1-160 || true)
  echo "run $run: $dips dips, exit $rc, skipped+accuracy: $skipped $verdict ${reason}"
done
exit $bad
