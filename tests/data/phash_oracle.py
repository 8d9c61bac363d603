#!/usr/bin/env python3
"""The Python `imagehash.phash` as the oracle of ltfit's perceptual hash (src/data/duplicates.cpp;
Python, tests only). Run by tests/data/phash_oracle.sh:

  phash_oracle.py write DIR    DIR/*.png: generated pictures, and DIR/files.txt listing them
  phash_oracle.py compare DIR  DIR/ltfit.txt (the hidden "[.phash_oracle]" test's hashes, one
                               "file hex" line per picture) against imagehash.phash

Two kinds of pictures (gradients, filled shapes and noise, drawn with Pillow and NumPy):
  gray32_*.png   32x32 grey: both resize steps are the identity, so ltfit's DCT, median and bit
                 order must give imagehash's hash exactly (all 64 bits).
  picture_*.png  colour, 64 to 900 px a side: ltfit shrinks with OpenCV's area filter where
                 imagehash uses Pillow's antialiased Lanczos, so a few bits may differ; the mean
                 and largest Hamming distance are reported, and must stay within MEAN_BITS and
                 MAX_BITS.

Exits 0 when they agree, 1 otherwise, 77 when imagehash (or Pillow, NumPy) cannot be imported.
"""
import sys
from pathlib import Path

try:
    import imagehash
    import numpy as np
    from PIL import Image, ImageDraw
except ImportError as e:  # the environment decides
    print(f"SKIPPED: {e} (pip install imagehash)")
    sys.exit(77)

SEED = 20261211
MEAN_BITS = 3.0
MAX_BITS = 10


def picture(rng, width, height):
    y, x = np.mgrid[0:height, 0:width]
    angle = rng.uniform(0, np.pi)
    t = 0.5 + 0.5 * ((x - width / 2) * np.cos(angle) + (y - height / 2) * np.sin(angle)) / width
    a, b = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    rgb = a * (1 - t[..., None]) + b * t[..., None]
    image = Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    for s in range(6):
        cx, cy = rng.uniform(0, width), rng.uniform(0, height)
        r = rng.uniform(height / 10, height / 3)
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if s % 2 == 0 else draw.rectangle)([cx - r, cy - r, cx + r, cy + r / 2], colour)
    noise = rng.normal(0, 6, (height, width, 3))
    return Image.fromarray(np.clip(np.asarray(image) + noise, 0, 255).astype(np.uint8), "RGB")


def write(out):
    rng = np.random.default_rng(SEED)
    names = []
    for i in range(40):
        width, height = int(rng.integers(64, 900)), int(rng.integers(64, 900))
        image = picture(rng, width, height)
        names.append(f"picture_{i:02d}.png")
        image.save(out / names[-1])
        names.append(f"gray32_{i:02d}.png")
        image.convert("L").resize((32, 32), Image.LANCZOS).save(out / names[-1])
    (out / "files.txt").write_text("\n".join(names) + "\n")
    print(f"wrote {len(names)} pictures to {out}")


def compare(out):
    got = dict(line.split() for line in (out / "ltfit.txt").read_text().splitlines())
    failures, distances = [], []
    for name in (out / "files.txt").read_text().split():
        want = str(imagehash.phash(Image.open(out / name)))
        mine = got.get(name)
        if mine is None:
            failures.append(f"{name}: no ltfit hash")
            continue
        d = bin(int(mine, 16) ^ int(want, 16)).count("1")
        if name.startswith("gray32_"):
            if d != 0:
                failures.append(f"{name}: ltfit {mine}, imagehash {want} ({d} bits)")
        else:
            distances.append(d)
    mean, largest = float(np.mean(distances)), int(np.max(distances))
    print(f"32x32 grey: {40 - sum(f.startswith('gray32') for f in failures)}/40 identical; "
          f"full pictures: mean {mean:.2f} bits, largest {largest} bits of 64 "
          f"({100 * (1 - mean / 64):.1f}% of bits agree)")
    if mean > MEAN_BITS or largest > MAX_BITS:
        failures.append(f"full pictures differ by {mean:.2f} bits on average (at most {MEAN_BITS}),"
                        f" {largest} at most (at most {MAX_BITS})")
    for f in failures:
        print("FAIL:", f)
    print("FAIL" if failures else "OK")
    return 1 if failures else 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "compare"):
        print(__doc__)
        return 2
    out = Path(sys.argv[2])
    if sys.argv[1] == "write":
        write(out)
        return 0
    return compare(out)


if __name__ == "__main__":
    sys.exit(main())
