"""torchvision's RandomResizedCrop and fastai's Resize as oracles of ltfit's framing.

write DIR: PNG images (odd sizes, both orientations, a smooth one for resampled cases); cases.json
    with, for each RandomResizedCrop case, torchvision's box (top, left, height, width) from
    RandomResizedCrop.get_params after torch.manual_seed(seed) and its pixels (F.resized_crop,
    bilinear, antialiased, to 32 x 32) in rrc_<n>.bin; for each fastai case, Resize(32, method,
    pad_mode) on the validation split (split_idx 1) in fastai_<n>.bin.
compare DIR: ltfit's boxes (rrc_box_<n>.json) equal torchvision's; its pixels (ltfit_rrc_<n>.bin)
    equal them byte for byte; its validation framing (ltfit_fastai_<n>.bin) equals fastai's byte
    for byte where fastai does not resample, else (smooth images) within a mean absolute
    difference of 1 level (crop, squish) or 6 (pad: the image's edge rows, see compare).
"""
import json
import os
import sys

import numpy as np
import torch
from PIL import Image

SIZE = 32


def image(path, w, h, seed, smooth=False):
    rng = np.random.default_rng(seed)
    if smooth:
        y, x = np.mgrid[0:h, 0:w]
        pixels = np.stack([255 * x / max(w - 1, 1), 255 * y / max(h - 1, 1),
                           127 + 100 * np.sin((x + y) / 7.0)], axis=-1)
    else:
        pixels = rng.integers(0, 256, (h, w, 3))
    Image.fromarray(pixels.astype(np.uint8), "RGB").save(path)


def write(work):
    from torchvision.transforms import InterpolationMode, RandomResizedCrop
    from torchvision.transforms import functional as F
    from fastai.vision.augment import Resize, ResizeMethod, PadMode
    from fastai.vision.core import PILImage
    images = {"wide": (97, 61, False), "tall": (61, 97, False), "tiny": (5, 3, False),
              "pad_exact": (32, 19, False), "crop_exact": (44, 32, False),
              "tall_exact": (20, 32, False), "smooth_wide": (150, 90, True),
              "smooth_tall": (70, 130, True)}
    for n, (name, (w, h, smooth)) in enumerate(images.items()):
        image(os.path.join(work, name + ".png"), w, h, n, smooth)
    rrc = []
    ranges = [((0.08, 1.0), (3 / 4, 4 / 3)), ((0.5, 1.0), (0.2, 5.0)), ((0.9, 1.0), (3.0, 4.0)),
              ((0.01, 0.02), (0.5, 0.6))]
    for seed in range(24):
        for name in ("wide", "tall", "tiny"):
            scale, ratio = ranges[seed % len(ranges)]
            img = Image.open(os.path.join(work, name + ".png")).convert("RGB")
            torch.manual_seed(seed)
            top, left, h, w = RandomResizedCrop.get_params(img, list(scale), list(ratio))
            out = F.resized_crop(img, top, left, h, w, [SIZE, SIZE], InterpolationMode.BILINEAR,
                                 antialias=True)
            np.asarray(out, dtype=np.uint8).tofile(os.path.join(work, f"rrc_{len(rrc)}.bin"))
            rrc.append({"image": name + ".png", "width": img.size[0], "height": img.size[1],
                        "seed": seed, "scale": scale, "ratio": ratio, "box": [top, left, h, w]})
    fastai = []
    for name in ("pad_exact", "crop_exact", "tall_exact", "smooth_wide", "smooth_tall"):
        for method in ("crop", "squish", "pad"):
            for pad_mode in ("reflection", "zeros", "border"):
                img = PILImage.create(os.path.join(work, name + ".png"))
                out = Resize(SIZE, method=getattr(ResizeMethod, method.capitalize()),
                             pad_mode=getattr(PadMode, pad_mode.capitalize()))(img, split_idx=1)
                np.asarray(out, dtype=np.uint8).tofile(
                    os.path.join(work, f"fastai_{len(fastai)}.bin"))
                w, h = img.size
                # no resampling: the window's side is SIZE already
                side = {"crop": min(w, h), "pad": max(w, h), "squish": None}[method]
                exact = side == SIZE or (method == "squish" and (w, h) == (SIZE, SIZE))
                if not exact and not name.startswith("smooth"):
                    continue  # noise resampled by two filters differs by design: smooth only
                fastai.append({"image": name + ".png", "method": method, "pad_mode": pad_mode,
                               "exact": exact})
    with open(os.path.join(work, "cases.json"), "w") as f:
        json.dump({"size": SIZE, "rrc": rrc, "fastai": fastai}, f)


def pixels(path):
    return np.fromfile(path, dtype=np.uint8).reshape(SIZE, SIZE, 3).astype(np.int32)


def compare(work):
    with open(os.path.join(work, "cases.json")) as f:
        cases = json.load(f)
    fallback = 0
    for n, c in enumerate(cases["rrc"]):
        with open(os.path.join(work, f"rrc_box_{n}.json")) as f:
            box = json.load(f)
        assert box == c["box"], f"RandomResizedCrop case {n} ({c}): ltfit's box {box}"
        diff = np.abs(pixels(os.path.join(work, f"ltfit_rrc_{n}.bin")) -
                      pixels(os.path.join(work, f"rrc_{n}.bin"))).max()
        assert diff == 0, f"RandomResizedCrop case {n} ({c}): pixels differ by up to {diff}"
        fallback += c["scale"][0] >= 0.9
    print(f"RandomResizedCrop: {len(cases['rrc'])} boxes equal to torchvision's, pixels byte for "
          "byte")
    exact = worst = 0
    for n, c in enumerate(cases["fastai"]):
        got = pixels(os.path.join(work, f"ltfit_fastai_{n}.bin"))
        want = pixels(os.path.join(work, f"fastai_{n}.bin"))
        if c["exact"]:
            diff = np.abs(got - want).max()
            assert diff == 0, f"fastai case {c}: pixels differ by up to {diff}"
            exact += 1
        else:
            mean = np.abs(got - want).mean()
            # crop and squish: the same window, two resamplers (OpenCV's area filter, Pillow's
            # antialiased bilinear). pad: fastai pads and then resamples, blending the image's
            # edge row into the fill; ltfit resamples the image and then pads (a thin strip never
            # becomes a huge square in memory), so the edge rows differ, the rest does not.
            bound = 6 if c["method"] == "pad" else 1
            assert mean <= bound, f"fastai case {c}: mean difference {mean:.2f} levels"
            worst = max(worst, mean)
    print(f"fastai Resize: {exact} cases byte for byte, {len(cases['fastai']) - exact} resampled "
          f"within a mean of {worst:.2f} levels (crop and squish within 1, pad within 6)")


if __name__ == "__main__":
    {"write": write, "compare": compare}[sys.argv[1]](sys.argv[2])
