"""Reads a run's tb/ folder with Python tensorboard (the oracle) and checks it against the run's
CSVs: the tag sets, every scalar's step and value, the images. Exits 1 naming each mismatch.

  python3 tensorboard_oracle.py RUN_DIR [--sessions N]

A scalar in the CSV is a rounded decimal and in the events file a float32 of the same double, so
"equal" is: the float32 lies within the CSV's rounding (half a unit of its last digit) plus half
a float32 ulp of it. The script also counts how many are bit-equal to float32(CSV value).
"""
import argparse
import csv
import glob
import math
import os
import struct
import sys

import numpy as np
from tensorboard.backend.event_processing import event_accumulator, event_file_loader

STEP_TAGS = ["train/loss", "momentum", "loss_scale"]  # + lr/group<i>
EPOCH_TAGS = {  # tag -> epochs.csv column
    "epoch": "epoch",
    "epoch/train_loss": "train_loss",
    "epoch/valid_loss": "valid_loss",
    "epoch/accuracy": "accuracy",
    "epoch/error_rate": "error_rate",
    "epoch/images_per_second": "images_per_second",
    "epoch/data_wait_seconds": "data_wait_seconds",
    "epoch/seconds": "seconds",
    "epoch/image_size": "image_size",
}

failures = []
exact = [0, 0]  # bit-equal to float32(csv), compared


def fail(message):
    failures.append(message)
    print("FAIL:", message)


def half_unit(text):
    """Half a unit of the last digit the CSV printed ("0.693147" -> 5e-7, "1e-05" -> 5e-6)."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def same(tag, step, value, text):
    expected = float(text)
    f32 = float(np.float32(value))
    ulp = float(np.spacing(np.float32(abs(expected)))) if expected != 0 else 1e-45
    exact[1] += 1
    exact[0] += f32 == float(np.float32(expected))
    if abs(f32 - expected) > half_unit(text) + ulp / 2:
        fail(f"{tag} at step {step}: events {f32!r}, csv {text}")


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return height, width


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--sessions", type=int, default=1)
    args = parser.parse_args()
    tb = os.path.join(args.run_dir, "tb")
    files = sorted(glob.glob(os.path.join(tb, "events.out.tfevents.*")))
    if len(files) != args.sessions:
        fail(f"{len(files)} events files in {tb}, expected {args.sessions}")
    for path in files:  # the raw records: the first is the file version
        first = next(iter(event_file_loader.EventFileLoader(path).Load()))
        if first.file_version != "brain.Event:2":
            fail(f"{path}: first event {first}")

    acc = event_accumulator.EventAccumulator(
        tb, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.IMAGES: 0})
    acc.Reload()
    steps = read_csv(os.path.join(args.run_dir, "steps.csv"))
    epochs = read_csv(os.path.join(args.run_dir, "epochs.csv"))
    groups = sorted(k for k in steps[0] if k.startswith("lr_"))
    step_tags = {"train/loss": "loss", "momentum": "momentum", "loss_scale": "loss_scale"}
    step_tags.update({f"lr/group{k[3:]}": k for k in groups})
    epoch_tags = dict(EPOCH_TAGS)
    if epochs and "top_k_accuracy" in epochs[0]:  # eval.top_k on (by default above 5 classes)
        epoch_tags["epoch/top_k_accuracy"] = "top_k_accuracy"
    tags = acc.Tags()
    if sorted(tags["scalars"]) != sorted(list(step_tags) + list(epoch_tags)):
        fail(f"scalar tags {sorted(tags['scalars'])}")
    for tag, column in step_tags.items():
        got = acc.Scalars(tag) if tag in tags["scalars"] else []
        if [e.step for e in got] != [int(r["step"]) for r in steps]:
            fail(f"{tag}: steps {[e.step for e in got]} != steps.csv's")
            continue
        for e, row in zip(got, steps):
            same(tag, e.step, e.value, row[column])
    # An epoch's scalars sit at its last step.
    last_step = {}
    for r in steps:
        last_step[int(r["epoch"])] = max(last_step.get(int(r["epoch"]), -1), int(r["step"]))
    for tag, column in epoch_tags.items():
        got = acc.Scalars(tag) if tag in tags["scalars"] else []
        if [e.step for e in got] != [last_step[int(r["epoch"])] for r in epochs]:
            fail(f"{tag}: steps {[e.step for e in got]}, expected {list(last_step.values())}")
            continue
        for e, row in zip(got, epochs):
            same(tag, e.step, e.value, row[column])

    images = {tag: acc.Images(tag) for tag in tags["images"]}
    if sorted(images) != ["train/batch", "valid/confusion_matrix"]:
        fail(f"image tags {sorted(images)}")
    grids = images.get("train/batch", [])
    if len(grids) != args.sessions:
        fail(f"{len(grids)} batch grids, expected one per session")
    matrices = images.get("valid/confusion_matrix", [])
    if len(matrices) != 1 or (matrices and matrices[0].step != int(steps[-1]["step"])):
        fail(f"confusion matrices at {[m.step for m in matrices]}, expected one at the last step")
    for tag, events in images.items():
        for e in events:
            if png_size(e.encoded_image_string) != (e.height, e.width):
                fail(f"{tag} at {e.step}: PNG is {png_size(e.encoded_image_string)}, event says "
                     f"{(e.height, e.width)}")
            print(f"image {tag} at step {e.step}: {e.width}x{e.height}, "
                  f"{len(e.encoded_image_string)} bytes")
    if grids and grids[0].step != 0:
        fail(f"the first batch grid is at step {grids[0].step}, not 0")
    sizes = sum(os.path.getsize(f) for f in files)
    print(f"{len(files)} events file(s), {sizes} bytes; {len(steps)} steps, {len(epochs)} epochs; "
          f"{exact[0]} of {exact[1]} scalars bit-equal to float32(csv), all within its rounding"
          if not failures else "")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
