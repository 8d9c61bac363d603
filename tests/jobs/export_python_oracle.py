#!/usr/bin/env python3
"""Python side of tests/jobs/export_python_oracle.sh (torch, torchvision, PIL: tests only).

  export_python_oracle.py images DIR
      Writes 4 seeded random 32x32 RGB PNGs into DIR.
  export_python_oracle.py compare FILE.pth DIR PREDICT.jsonl
      Rebuilds the model with load_export.py (docs/export.md, on PYTHONPATH), which loads FILE.pth
      strictly, and compares its logits on each image of DIR (through eval_transform) with those
      of `ltfit predict --weights FILE.pth --logits --json DIR` (to 1e-4 of the largest logit's
      magnitude, at least 1: a tiny run on noise gives logits near 1000), and its class names.
  export_python_oracle.py tops SCRIPT.txt PREDICT.jsonl
      The classes printed by `python3 load_export.py FILE.pth DIR/*.png` are ltfit's top ones.
"""
import json
import os
import sys

import numpy as np
from PIL import Image


def images(folder):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(7)
    for i in range(4):
        pixels = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, f"img{i}.png"))


def read_lines(path):
    with open(path) as f:
        return {os.path.basename(j["image"]): j for j in map(json.loads, f)}


def compare(pth, folder, jsonl):
    import torch
    from load_export import eval_transform, load_export

    model, meta = load_export(pth)
    prepare = eval_transform(meta)
    ltfit = read_lines(jsonl)
    names = sorted(os.listdir(folder))
    assert sorted(ltfit) == names, f"ltfit predicted {sorted(ltfit)}, the folder holds {names}"
    worst, scale = 0.0, 1.0
    with torch.no_grad():
        for name in names:
            x = prepare(Image.open(os.path.join(folder, name)).convert("RGB")).unsqueeze(0)
            ours = model(x)[0]
            theirs = torch.tensor(ltfit[name]["logits"])
            assert ours.shape == theirs.shape, f"{name}: {ours.shape} vs ltfit's {theirs.shape}"
            worst = max(worst, float((ours - theirs).abs().max()))
            scale = max(scale, float(theirs.abs().max()))
            top = ltfit[name]["top"][0]
            assert meta["classes"][top["label"]] == top["class"], f"{name}: {top}"
    print(f"{pth}: {meta['arch']}, {meta['head']['kind']} head, classes {meta['classes']}, "
          f"largest logit difference {worst:.2e} (largest logit {scale:.3g})")
    assert worst <= 1e-4 * scale, f"logits differ by {worst} (largest logit {scale})"


def tops(script_out, jsonl):
    ltfit = read_lines(jsonl)
    with open(script_out) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    assert len(rows) == len(ltfit), f"{len(rows)} lines for {len(ltfit)} images"
    for path, cls, _ in rows:
        expected = ltfit[os.path.basename(path)]["top"][0]["class"]
        assert cls == expected, f"{path}: the script says {cls}, ltfit {expected}"


if __name__ == "__main__":
    {"images": images, "compare": compare, "tops": tops}[sys.argv[1]](*sys.argv[2:])
