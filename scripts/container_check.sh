#!/usr/bin/env bash
# Builds and checks ltfit's container images and its no-Python bundle with podman (or docker),
# by hand, outside CI (about 15-25 minutes on two cores, most of it compiling ltfit twice):
#   1. the debian:bookworm base: pulled, or made with debootstrap where no registry answers;
#   2. the CPU image (docker/Dockerfile.cpu): built; `ltfit envinfo`; the quickstart's synth,
#      train and evaluate inside it with a mounted data folder and run folder;
#   3. the CPU bundle (cpack .tar.gz from an LTFIT_CPU_ONLY + LTFIT_BUNDLE build here), unpacked
#      in a bare container that holds only the runtime packages it declares (no Python, no
#      compiler): synth, train, evaluate;
#   4. serve (needs step 2's image and run): docs/serve.md's line, `podman run -p 18080:8080 -v
#      runs:/runs:ro ltfit:cpu serve --checkpoint ... --host 0.0.0.0 --port 8080`, answering
#      /healthz, /readyz and POST /v1/predict through the published port as `ltfit predict`
#      does inside the image (1e-6), then `podman stop` (SIGTERM) and exit status 0;
#   5. with CUDA_IMAGE=1, the CUDA image (docker/Dockerfile.cuda) built and `ltfit envinfo` run
#      (no GPU is needed for either).
# Prints each step's time and the image and bundle sizes; the report also goes to
# $OUT/container-check.md (OUT defaults to runs/container-check).
#
#   scripts/container_check.sh                 # steps 1-3
#   CUDA_IMAGE=1 scripts/container_check.sh    # and 4 (downloads ~3 GB of CUDA wheels)
#   STEPS="bundle" scripts/container_check.sh  # a subset: base, cpu, serve, bundle, cuda
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ENGINE="${ENGINE:-podman}"
OUT="${OUT:-$ROOT/runs/container-check}"
BASE="${BASE:-localhost/debian:bookworm}"
BUNDLE_BUILD="${BUNDLE_BUILD:-$ROOT/build-bundle-cpu}"
STEPS="${STEPS:-base cpu serve bundle}"
if [[ "${CUDA_IMAGE:-0}" == 1 ]]; then STEPS="$STEPS cuda"; fi
CA="${HOST_CA:-/etc/ssl/certs/ca-certificates.crt}"
mkdir -p "$OUT"
REPORT="$OUT/container-check.md"
: >"$REPORT"

say() { printf '%s\n' "$*" | tee -a "$REPORT"; }
wants() { [[ " $STEPS " == *" $1 "* ]]; }
run_engine() { "$ENGINE" "$@"; }
# Runs "$@", timed; its output goes to $OUT/<name>.log.
timed() {
  local name="$1"; shift
  local start=$SECONDS
  if ! "$@" >"$OUT/$name.log" 2>&1; then
    say "FAILED: $name after $((SECONDS - start)) s (log: $OUT/$name.log)"
    tail -30 "$OUT/$name.log" >&2
    exit 3
  fi
  say "- $name: $((SECONDS - start)) s"
}
# The training's and the evaluation's one-line results, into the report.
results_of() { grep -hE "info: (done in|accuracy [0-9])" "$@" | sed 's/^/    /' | tee -a "$REPORT"; }
image_size() { run_engine image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

# Where a proxy re-signs TLS, pip inside a build needs the host's CA bundle, mounted beside the
# image's own (mounting over /etc/ssl/certs breaks dpkg).
BUILD_FLAGS=(--network host)
if [[ "$ENGINE" == podman && -f "$CA" ]]; then
  BUILD_FLAGS+=(-v "$CA:/host-ca.crt:ro" --build-arg PIP_CERT=/host-ca.crt)
fi
RUN_FLAGS=(--rm --network host)

say "# ltfit container check, $(date -u +%Y-%m-%dT%H:%MZ)"
say ""
say "$("$ENGINE" --version), $(nproc) cores, $(uname -r)"
say ""

make_base() {
  if run_engine image exists "$BASE" 2>/dev/null; then say "- base: $BASE present"; return; fi
  if timeout 60 "$ENGINE" pull docker.io/library/debian:bookworm >/dev/null 2>&1; then
    run_engine tag docker.io/library/debian:bookworm "$BASE"
    say "- base: pulled docker.io/library/debian:bookworm"
    return
  fi
  command -v debootstrap >/dev/null || { say "no registry answers and no debootstrap: apt-get install debootstrap"; exit 3; }
  local rootfs="$OUT/rootfs"
  rm -rf "$rootfs"
  timed debootstrap debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian
  # The sources the registry's image lists (updates and security as well).
  cat >"$rootfs/etc/apt/sources.list" <<'SOURCES'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
  rm -rf "$rootfs/var/cache/apt/archives/"*.deb
  tar -C "$rootfs" -c . | run_engine import - "$BASE" >/dev/null 2>&1
  rm -rf "$rootfs"
  say "- base: $BASE made with debootstrap (minbase), $(image_size "$BASE")"
}

check_cpu_image() {
  say ""
  say "## CPU image (docker/Dockerfile.cpu)"
  timed cpu-image-build run_engine build "${BUILD_FLAGS[@]}" --build-arg BASE="$BASE" \
    -f docker/Dockerfile.cpu -t ltfit:cpu .
  say "- image ltfit:cpu: $(image_size ltfit:cpu) (base $(image_size "$BASE"))"
  timed cpu-envinfo run_engine run "${RUN_FLAGS[@]}" ltfit:cpu
  sed 's/^/    /' "$OUT/cpu-envinfo.log" | head -20 >>"$REPORT"
  if run_engine run "${RUN_FLAGS[@]}" --entrypoint sh ltfit:cpu -c \
      'command -v python3 || command -v c++ || command -v cc || command -v g++'; then
    say "FAILED: the runtime image holds a Python or a compiler"; exit 3
  fi
  say "- no python3, c++ or cc in the runtime image"
  local work="$OUT/cpu-work"
  rm -rf "$work"; mkdir -p "$work/data" "$work/runs"
  local mounts=(-v "$work/data:/data" -v "$work/runs:/runs")
  local start=$SECONDS
  timed cpu-synth run_engine run "${RUN_FLAGS[@]}" "${mounts[@]}" ltfit:cpu \
    synth --out /data/synth --train 1000 --valid 400 --seed 0
  timed cpu-train run_engine run "${RUN_FLAGS[@]}" "${mounts[@]}" ltfit:cpu \
    train --config quickstart --set data.root=/data/synth --set run.out_dir=/runs
  local run_dir
  run_dir="$(cd "$work/runs" && ls -d quickstart* | tail -1)"
  timed cpu-evaluate run_engine run "${RUN_FLAGS[@]}" "${mounts[@]}" ltfit:cpu \
    evaluate --checkpoint "/runs/$run_dir/checkpoints/last.ckpt"
  say "- quickstart inside the image (synth + train + evaluate): $((SECONDS - start)) s"
  results_of "$OUT/cpu-train.log" "$OUT/cpu-evaluate.log"
}

check_serve() {
  say ""
  say "## ltfit serve in the CPU image, on a published port"
  local work="$OUT/cpu-work" run_dir port=18080
  run_dir="$(cd "$work/runs" && ls -d quickstart* | tail -1)"
  local ckpt="/runs/$run_dir/checkpoints/last.ckpt"
  local image
  image="$(ls "$work/data/synth/valid/cat/"* | head -1)"
  run_engine rm -f ltfit-serve-check >/dev/null 2>&1 || true
  run_engine run -d --name ltfit-serve-check -p "$port:8080" -v "$work/runs:/runs:ro" ltfit:cpu \
    serve --checkpoint "$ckpt" --host 0.0.0.0 --port 8080 >/dev/null
  local i
  for i in $(seq 120); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.5; done
  curl -sf "http://127.0.0.1:$port/healthz" >"$OUT/serve-healthz.json" ||
    { say "FAILED: /healthz through the published port"; run_engine logs ltfit-serve-check >&2; exit 3; }
  curl -sf --data-binary @"$image" -H 'Content-Type: image/jpeg' \
    "http://127.0.0.1:$port/v1/predict?top_k=2" >"$OUT/serve-predict.json"
  run_engine run "${RUN_FLAGS[@]}" -v "$work/runs:/runs:ro" -v "$image:/image.jpg:ro" ltfit:cpu \
    predict --json --top 2 --checkpoint "$ckpt" /image.jpg >"$OUT/serve-expected.json" 2>/dev/null
  local stop_start=$SECONDS
  run_engine stop -t 40 ltfit-serve-check >/dev/null
  local code
  code="$(run_engine inspect --format '{{.State.ExitCode}}' ltfit-serve-check)"
  run_engine logs ltfit-serve-check >"$OUT/serve.log" 2>&1
  run_engine rm ltfit-serve-check >/dev/null
  python3 - "$OUT/serve-predict.json" "$OUT/serve-expected.json" <<'COMPARE' || exit 3
import json, sys
served = json.load(open(sys.argv[1]))["predictions"][0]["top"]
expected = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])["top"]
diff = max(abs(a["probability"] - b["probability"]) for a, b in zip(served, expected))
same = [a["class"] for a in served] == [b["class"] for b in expected]
print(f"served {served[0]['class']} {served[0]['probability']:.6f}, predict {expected[0]['class']} "
      f"{expected[0]['probability']:.6f}, largest difference {diff:.2e}")
sys.exit(0 if same and diff <= 1e-6 else 1)
COMPARE
  say "- podman run -p $port:8080 ... serve: /healthz $(cat "$OUT/serve-healthz.json"), POST /v1/predict as predict in the image; stop: exit $code in $((SECONDS - stop_start)) s"
  [[ "$code" == 0 ]] || { say "FAILED: serve exited $code on SIGTERM"; exit 3; }
}

check_bundle() {
  say ""
  say "## CPU bundle (cpack, LTFIT_CPU_ONLY + LTFIT_BUNDLE) in a bare container"
  local prefix
  prefix="$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
  timed bundle-configure cmake -S . -B "$BUNDLE_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLTFIT_BUILD_TESTS=OFF -DLTFIT_CPU_ONLY=ON -DLTFIT_BUNDLE=ON -DCMAKE_PREFIX_PATH="$prefix"
  timed bundle-build cmake --build "$BUNDLE_BUILD" --target ltfit
  timed bundle-cpack cpack --config "$BUNDLE_BUILD/CPackConfig.cmake" -B "$BUNDLE_BUILD/package"
  local tarball
  tarball="$(ls "$BUNDLE_BUILD"/package/ltfit-*-cpu.tar.gz)"
  local unpacked
  unpacked="$(tar -tzvf "$tarball" | awk '{s += $3} END {printf "%.0f MB", s/1e6}')"
  say "- bundle $(basename "$tarball"): $(du -m "$tarball" | cut -f1) MB packed, $unpacked unpacked"
  tar -tzf "$tarball" | grep '/lib/.' | sed 's|^[^/]*/|    |' >>"$REPORT"
  local work="$OUT/bundle-work"
  rm -rf "$work"; mkdir -p "$work"
  cp "$tarball" "$work/ltfit.tar.gz"
  cat >"$work/check.sh" <<'CHECK'
set -eu
cd /work
tar -xzf ltfit.tar.gz
dir=$(ls -d ltfit-*/ | head -1)
apt-get update -qq
apt-get install -y -qq --no-install-recommends $(grep -v '^#' "$dir/share/ltfit/runtime-packages.txt") >/dev/null
for tool in python3 python c++ cc gcc; do
  if command -v "$tool"; then echo "FAILED: $tool present"; exit 3; fi
done
mv "$dir" /opt/ltfit-moved   # relocatable: runs from wherever it is unpacked
L=/opt/ltfit-moved/bin/ltfit
$L envinfo
$L synth --out /work/synth --train 1000 --valid 400 --seed 0
$L train --config quickstart --set data.root=/work/synth --set run.out_dir=/work/runs
$L evaluate --checkpoint "$(ls -d /work/runs/quickstart*/ | tail -1)checkpoints/last.ckpt"
CHECK
  timed bundle-run run_engine run "${RUN_FLAGS[@]}" -v "$work:/work" "$BASE" bash /work/check.sh
  results_of "$OUT/bundle-run.log"
}

check_cuda_image() {
  say ""
  say "## CUDA image (docker/Dockerfile.cuda), built without a GPU"
  timed cuda-image-build run_engine build "${BUILD_FLAGS[@]}" --build-arg BASE="$BASE" \
    -f docker/Dockerfile.cuda -t ltfit:cuda .
  say "- image ltfit:cuda: $(image_size ltfit:cuda)"
  timed cuda-envinfo run_engine run "${RUN_FLAGS[@]}" ltfit:cuda
  sed 's/^/    /' "$OUT/cuda-envinfo.log" | head -20 >>"$REPORT"
  # Every library in lib/ resolves its own dependencies inside the image, except the driver's
  # (libcuda, libnvidia-ml), which the NVIDIA Container Toolkit mounts on a GPU host, and the
  # optional network plugins of NVSHMEM and cuFile (MPI, PMIx, UCX, libfabric, RDMA), loaded
  # only when such a transport is configured, as in the wheel's own environment.
  timed cuda-libraries run_engine run "${RUN_FLAGS[@]}" --entrypoint bash ltfit:cuda -c '
    missing=$(for f in /opt/ltfit/bin/ltfit /opt/ltfit/lib/*.so*; do
                case "$f" in */nvshmem_bootstrap_* | */nvshmem_transport_* | */libcufile_rdma*) continue ;; esac
                ldd "$f" | grep "not found"; done |
              grep -v -E "libcuda\.so|libnvidia-ml\.so" | sort -u)
    echo "$(ls /opt/ltfit/lib | wc -l) libraries in /opt/ltfit/lib, $(du -sm /opt/ltfit/lib | cut -f1) MB"
    if [ -n "$missing" ]; then echo "unresolved: $missing"; exit 1; fi'
  sed 's/^/    /' "$OUT/cuda-libraries.log" >>"$REPORT"
  # The CUDA build trains on the CPU too: its whole library set loads without a GPU.
  local work="$OUT/cuda-work"
  rm -rf "$work"; mkdir -p "$work/runs"
  timed cuda-synth run_engine run "${RUN_FLAGS[@]}" -v "$work:/work" ltfit:cuda \
    synth --out /work/synth --train 200 --valid 80 --seed 0
  timed cuda-train-cpu run_engine run "${RUN_FLAGS[@]}" -v "$work:/work" ltfit:cuda \
    train --config quickstart --set data.root=/work/synth --set run.out_dir=/work/runs \
    --set train.device=cpu --set train.epochs=1
  results_of "$OUT/cuda-train-cpu.log"
}

if wants base || wants cpu || wants bundle || wants cuda; then make_base; fi
if wants cpu; then check_cpu_image; fi
if wants serve; then check_serve; fi
if wants bundle; then check_bundle; fi
if wants cuda; then check_cuda_image; fi
say ""
say "report: $REPORT"
