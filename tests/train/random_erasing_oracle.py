#!/usr/bin/env python3
"""torchvision's own RandomErasing as the oracle for tests/train/random_erasing_test.cpp.

  random_erasing_oracle.py CASES.json

Each case holds an image, RandomErasing's settings, the seed ltfit gave its torch CPU generator
for that image, and the image ltfit erased. The script seeds torch's default generator with the
same seed (torch.manual_seed), runs torchvision.transforms.RandomErasing on the same image and
compares. Exits 0 when every case matches exactly, 1 otherwise, 77 without torch/torchvision.
"""
import json
import sys

try:
    import torch
    from torchvision import transforms
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {e}")
    sys.exit(77)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    failed = 0
    for case in cases:
        image = torch.tensor(case["image"], dtype=torch.float32).reshape(case["shape"])
        value = "random" if case["value"] is None else case["value"]
        erase = transforms.RandomErasing(p=case["p"], scale=tuple(case["scale"]),
                                         ratio=tuple(case["ratio"]), value=value)
        torch.manual_seed(case["seed"])
        theirs = erase(image.clone())
        ours = torch.tensor(case["erased"], dtype=torch.float32).reshape(case["shape"])
        same = torch.equal(theirs, ours)
        failed += not same
        changed = int((theirs != image).any(0).sum())
        print(f"{'ok  ' if same else 'FAIL'} {case['name']}: {changed} pixels erased by torchvision,"
              f" largest difference {float((theirs - ours).abs().max()):.3g}")
    print(f"{len(cases) - failed} of {len(cases)} cases match torchvision's RandomErasing")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
