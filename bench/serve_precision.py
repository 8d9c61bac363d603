#!/usr/bin/env python3
"""What `ltfit serve --precision bf16` (or fp16) costs in answers: one checkpoint served twice,
at fp32 and at the precision asked for, every image of a folder POSTed to both, and the
agreement printed: the share of images whose top class is the same, the largest difference of
any class's probability, and the mean.

    bench/serve_precision.py --checkpoint runs/quickstart/checkpoints/last.ckpt \
        --images data/synth/valid [--precision bf16] [--ltfit build/ltfit]

Speed is bench/serve_load.sh's (PRECISION=bf16); this is the answer side of that trade.
Both servers run on this machine's CPU one after the other is started, on free loopback ports.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import time
import urllib.request

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def start(ltfit, checkpoint, precision, log_path):
    log = open(log_path, "w")
    process = subprocess.Popen(
        [ltfit, "serve", "--checkpoint", checkpoint, "--port", "0", "--device", "cpu",
         "--precision", precision], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", pathlib.Path(log_path).read_text())
        if match:
            return process, f"http://127.0.0.1:{match.group(1)}"
        if process.poll() is not None:
            sys.exit(f"ltfit serve --precision {precision} exited: see {log_path}")
        time.sleep(0.2)
    process.terminate()
    sys.exit(f"ltfit serve --precision {precision} did not listen within 120 s: see {log_path}")


def probabilities(base, path):
    request = urllib.request.Request(base + "/v1/predict?top_k=1000", data=path.read_bytes(),
                                     headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(request, timeout=300) as answer:
        top = json.load(answer)["predictions"][0]["top"]
    return top[0]["class"], {entry["class"]: entry["probability"] for entry in top}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--images", required=True, help="a folder, searched recursively")
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp16"])
    parser.add_argument("--ltfit", default="build/ltfit")
    parser.add_argument("--logs", default="/tmp", help="where the two servers' logs go")
    args = parser.parse_args()
    images = sorted(p for p in pathlib.Path(args.images).rglob("*")
                    if p.suffix.lower() in IMAGE_SUFFIXES)
    if not images:
        sys.exit(f"no images under {args.images}")
    servers = []
    try:
        for precision in ("fp32", args.precision):
            servers.append(start(args.ltfit, args.checkpoint, precision,
                                 f"{args.logs}/serve-precision-{precision}.log"))
        same, worst, total = 0, 0.0, 0.0
        for path in images:
            (a, pa), (b, pb) = (probabilities(base, path) for _, base in servers)
            diff = max(abs(pa[c] - pb[c]) for c in pa)
            same += a == b
            worst = max(worst, diff)
            total += diff
        print(f"{args.checkpoint}: {len(images)} images, fp32 vs {args.precision}: "
              f"top class the same on {same}/{len(images)} ({100 * same / len(images):.2f} %), "
              f"largest |dp| {worst:.2e}, mean largest |dp| {total / len(images):.2e}")
    finally:
        for process, _ in servers:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    main()
