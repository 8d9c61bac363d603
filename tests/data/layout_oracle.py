"""fastai's own code as the oracle of ltfit's pattern layout (tests/data/layout_oracle.sh).

    layout_oracle.py make DIR    writes DIR/root (a tree of tiny images whose names do and do not
                                 match) and DIR/request.json (the cases: pattern, valid_pct, seed)
    layout_oracle.py check DIR   compares DIR/ltfit.json, written by the "[.layout_oracle]" test,
                                 with fastai on the same files

For each case fastai gets what ImageDataLoaders.from_name_re builds: a DataBlock of
(ImageBlock, CategoryBlock) with get_y = RegexLabeller(pat) on the file name and
splitter = RandomSplitter(valid_pct, seed), over ltfit's items: the image files fastai's
get_image_files finds, sorted, less the names the pattern does not match (fastai would stop at
the first of those; ltfit leaves them out and notes them, so the check also counts them). Labels
and both splits must be equal, path for path.
"""

import json
import re
import sys
from pathlib import Path

CASES = [
    {"label_pattern": r"^(.+)_\d+\.jpg$", "valid_pct": 0.2, "seed": 42},
    {"label_pattern": r"^(.+)_\d+\.jpg$", "valid_pct": 0.35, "seed": 0},
    {"label_pattern": r"^([A-Za-z]+)[_-]\d+\.(?:jpg|jpeg|png)$", "valid_pct": 0.5, "seed": 7},
    {"label_pattern": r"^(.*?)_(\d+)\.(jpg|png|bmp|tif|tiff)$", "valid_pct": 0.2,
     "seed": 2**32 + 5},
    {"label_pattern": r"^(.+)_\d+\.jpg$", "valid_pct": 0.25, "seed": 2**64 - 1},
]

# Names under the root: labels with underscores, digits, capitals and a non-ASCII letter, several
# extensions (those both ltfit and fastai take as images), nested folders, and names no pattern
# matches. Hidden files and folders, and non-images, are left out by both.
MATCHING = (
    [f"great_pyrenees_{k}.jpg" for k in range(7)]
    + [f"sub/Abyssinian_{k}.jpg" for k in range(5)]
    + [f"sub/deeper/havanese-{k}.jpeg" for k in range(4)]
    + [f"sub/shiba_inu_{k}.png" for k in range(6)]
    + [f"caf\u00e9_{k}.jpg" for k in range(3)]
    + [f"x2_{k}.bmp" for k in range(3)]
    + [f"leonberger_{k}.tif" for k in range(4)]
    + [f"b_{k}.jpg" for k in (10, 2, 33, 4)]
)
OTHERS = ["README.jpg", "photo.png", "dog_1.JPG", "sub/IMG-0001.jpeg", "odd_.jpg"]
IGNORED = [".hidden_1.jpg", ".git/x_1.jpg", "notes_1.txt"]


def make(work: Path) -> None:
    from PIL import Image

    root = work / "root"
    for name in MATCHING + OTHERS + IGNORED:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".txt":
            path.write_text("not an image")
        else:
            Image.new("RGB", (2, 2), (200, 10, 10)).save(path)
    (work / "request.json").write_text(json.dumps({"cases": CASES}))


def fastai_split(items, case):
    from fastai.data.block import CategoryBlock, DataBlock
    from fastai.data.transforms import RandomSplitter, RegexLabeller
    from fastai.vision.data import ImageBlock
    from fastcore.basics import using_attr

    dblock = DataBlock(blocks=(ImageBlock, CategoryBlock),
                       splitter=RandomSplitter(case["valid_pct"], seed=case["seed"]),
                       get_y=using_attr(RegexLabeller(case["label_pattern"]), "name"))
    dsets = dblock.datasets(items)
    label = using_attr(RegexLabeller(case["label_pattern"]), "name")
    return ({str(p): label(p) for p in dsets.train.items},
            {str(p): label(p) for p in dsets.valid.items})


def check_case(root: Path, ours: dict) -> list:
    from fastai.data.transforms import get_image_files

    case = {k: ours[k] for k in ("label_pattern", "valid_pct", "seed")}
    pattern = re.compile(case["label_pattern"])
    found = sorted(str(p) for p in get_image_files(root))
    items = [Path(p) for p in found if pattern.search(Path(p).name)]
    assert 1 <= int(case["valid_pct"] * len(items)) < len(items), "case outside the clamp-free range"
    train, valid = fastai_split(items, case)
    errors = []
    for split, theirs in (("train", train), ("valid", valid)):
        mine = {s["path"]: s["label"] for s in ours[split]}
        if mine != theirs:
            errors.append(f"{case}: {split} differs\n  ltfit:  {sorted(mine.items())}\n"
                          f"  fastai: {sorted(theirs.items())}")
    left_out = len(found) - len(items)
    counted = [n for n in ours["notes"] if "does not match data.label_pattern" in n]
    if left_out and not (counted and counted[0].startswith(f"{left_out} ")):
        errors.append(f"{case}: {left_out} names do not match, ltfit's notes: {ours['notes']}")
    return errors


def check(work: Path) -> int:
    results = json.loads((work / "ltfit.json").read_text())
    if len(results) != len(CASES):
        print(f"FAIL: ltfit.json holds {len(results)} cases, expected {len(CASES)}")
        return 1
    errors = [e for ours in results for e in check_case(work / "root", ours)]
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"layout oracle: {len(results)} cases, labels and splits equal to fastai's")
    return 1 if errors else 0


if __name__ == "__main__":
    mode, work = sys.argv[1], Path(sys.argv[2])
    if mode == "make":
        make(work)
        sys.exit(0)
    sys.exit(check(work))
