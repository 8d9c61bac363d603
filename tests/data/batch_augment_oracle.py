#!/usr/bin/env python3
"""fastai v2's own batch transforms as the oracle of ltfit's augment_batch (batch_augment.h).

    batch_augment_oracle.py write DIR     # the problems: images and per-image draws
    batch_augment_oracle.py compare DIR   # fastai's Flip, Warp, Rotate, Zoom, Brightness and
                                          # Contrast, composed by setup_aug_tfms as aug_transforms
                                          # composes them, given the same draws (p=1, draw=...),
                                          # against DIR/ltfit.json: within 2e-5

Cases: a non-square input (the aspect correction), an input over twice the output (fastai's area
downsampling before grid_sample), a zoom of 2 (no downsampling), every transform at its neutral
value, strong warps and rotations. Run by tests/data/batch_augment_oracle.sh.
"""
import json
import sys

import torch

CASES = [  # name, N, H, W, size, max_warp, max_rotate, max_zoom, max_lighting, p
    ("default", 8, 40, 48, 32, 0.2, 10.0, 1.1, 0.2, 0.75),
    ("large-input", 6, 100, 90, 32, 0.2, 10.0, 1.1, 0.2, 0.75),
    ("zoom-2", 6, 100, 100, 32, 0.1, 5.0, 2.0, 0.1, 1.0),
    ("neutral", 4, 36, 36, 36, 0.2, 10.0, 1.1, 0.2, 0.0),
    ("strong", 8, 48, 40, 40, 0.4, 30.0, 1.5, 0.5, 1.0),
]


def draws(g, n, max_warp, max_rotate, max_zoom, max_lighting, p):
    def applied():
        return (torch.rand(n, generator=g) < p).float()
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(n, generator=g)
    flip = (torch.rand(n, generator=g) < 0.5).float()
    wx = u(-max_warp, max_warp) * applied()
    wy = u(-max_warp, max_warp) * applied()
    rot = u(-max_rotate, max_rotate) * applied()
    a = applied()
    zoom = u(1.0, max_zoom) * a + (1 - a)
    col, row = torch.rand(n, generator=g), torch.rand(n, generator=g)
    a = applied()
    bright = u(0.5 * (1 - max_lighting), 0.5 * (1 + max_lighting)) * a + 0.5 * (1 - a)
    a = applied()
    lo = torch.log(torch.tensor(1 - max_lighting))
    contrast = torch.exp(u(lo.item(), -lo.item())) * a + (1 - a)
    return {"flip": flip, "rotate": rot, "zoom": zoom, "zoom_col": col, "zoom_row": row,
            "warp_x": wx, "warp_y": wy, "brightness": bright, "contrast": contrast}


def write(directory):
    g = torch.Generator().manual_seed(7)
    problems = []
    for name, n, h, w, size, mw, mr, mz, ml, p in CASES:
        # Smooth pictures with edges: a gradient, a disc and noise, in (0, 1).
        ys, xs = torch.meshgrid(torch.linspace(0, 1, h), torch.linspace(0, 1, w), indexing="ij")
        base = torch.stack([xs, ys, (xs - 0.5) ** 2 + (ys - 0.5) ** 2 < 0.1], 0).float()
        images = (0.1 + 0.8 * base.unsqueeze(0) + 0.05 * torch.rand(n, 3, h, w, generator=g))
        d = draws(g, n, mw, mr, mz, ml, p)
        problems.append({"name": name, "size": size, "shape": [n, 3, h, w],
                         "max_warp": mw, "max_rotate": mr, "max_zoom": mz, "max_lighting": ml,
                         "images": images.flatten().tolist(),
                         "draws": {k: v.tolist() for k, v in d.items()}})
    json.dump({"problems": problems}, open(f"{directory}/problem.json", "w"))


def fastai_batch(problem):
    from fastai.torch_core import TensorImage
    from fastai.vision.augment import (Brightness, Contrast, Flip, Rotate, Warp, Zoom,
                                       setup_aug_tfms)
    d, size = problem["draws"], problem["size"]
    tkw = dict(size=size, mode="bilinear", align_corners=True)
    tfms = [Flip(p=1.0, draw=d["flip"], **tkw),
            Warp(magnitude=problem["max_warp"], p=1.0, draw_x=d["warp_x"], draw_y=d["warp_y"],
                 **tkw),
            Rotate(max_deg=problem["max_rotate"], p=1.0, draw=d["rotate"], **tkw),
            Zoom(max_zoom=problem["max_zoom"], p=1.0, draw=d["zoom"], draw_x=d["zoom_col"],
                 draw_y=d["zoom_row"], **tkw),
            Brightness(max_lighting=problem["max_lighting"], p=1.0, draw=d["brightness"]),
            Contrast(max_lighting=problem["max_lighting"], p=1.0, draw=d["contrast"])]
    x = TensorImage(torch.tensor(problem["images"]).view(problem["shape"]))
    for t in setup_aug_tfms(tfms):
        x = t(x, split_idx=0)
    return x


def compare(directory):
    problems = json.load(open(f"{directory}/problem.json"))["problems"]
    ours = {r["name"]: r for r in json.load(open(f"{directory}/ltfit.json"))}
    worst = 0.0
    for problem in problems:
        expected = fastai_batch(problem)
        got = torch.tensor(ours[problem["name"]]["values"]).view(ours[problem["name"]]["shape"])
        if tuple(got.shape) != tuple(expected.shape):
            sys.exit(f"FAILED: {problem['name']}: shape {tuple(got.shape)}, fastai "
                     f"{tuple(expected.shape)}")
        gap = (got - expected).abs().max().item()
        print(f"{problem['name']}: {tuple(expected.shape)}, largest difference from fastai "
              f"{gap:.3g}")
        worst = max(worst, gap)
    if worst > 2e-5:
        sys.exit(f"FAILED: largest difference {worst:.3g} > 2e-5")
    print("augment_batch equals fastai v2's aug_transforms within 2e-5")


if __name__ == "__main__":
    {"write": write, "compare": compare}[sys.argv[1]](sys.argv[2])
