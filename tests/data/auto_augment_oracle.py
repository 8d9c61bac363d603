#!/usr/bin/env python3
"""torchvision's own RandAugment / TrivialAugmentWide as the oracle for auto_augment_test.cpp.

  auto_augment_oracle.py CASES.json

A case is either one op (torchvision.transforms.autoaugment._apply_op with its name and signed
magnitude, NEAREST, fill None) or a whole policy (RandAugment(num_ops, magnitude) or
TrivialAugmentWide() after torch.manual_seed(seed)), with the uint8 [C,H,W] image and the image
ltfit produced. Runs single-threaded, as a DataLoader worker does. Exits 0 when every case matches
exactly, 1 otherwise, 77 without torch/torchvision.
"""
import json
import sys

try:
    import torch
    from torchvision.transforms import InterpolationMode, RandAugment, TrivialAugmentWide
    from torchvision.transforms.autoaugment import _apply_op
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {e}")
    sys.exit(77)


def run(case, image):
    if "op" in case:
        return _apply_op(image, case["op"], case["magnitude"], InterpolationMode.NEAREST, None)
    if case["policy"] == "rand_augment":
        policy = RandAugment(num_ops=case["num_ops"], magnitude=case["magnitude_bin"])
    else:
        policy = TrivialAugmentWide()
    torch.manual_seed(case["seed"])
    return policy(image)


def main():
    torch.set_num_threads(1)
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    failed = 0
    ops = set()
    for case in cases:
        image = torch.tensor(case["image"], dtype=torch.uint8).reshape(case["shape"])
        theirs = run(case, image.clone())
        ours = torch.tensor(case["expected"], dtype=torch.uint8).reshape(case["shape"])
        same = torch.equal(theirs, ours)
        failed += not same
        name = case.get("op") or case["policy"]
        ops.add(name)
        if not same:
            diff = (theirs.int() - ours.int()).abs()
            print(f"FAIL {name} {case.get('magnitude', case.get('seed'))} {case['shape']}: "
                  f"{int((diff > 0).sum())} pixels differ, by up to {int(diff.max())}")
    print(f"{len(cases) - failed} of {len(cases)} cases ({len(ops)} ops and policies) match "
          f"torchvision's pixels exactly")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
