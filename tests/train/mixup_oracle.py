#!/usr/bin/env python3
"""timm's own Mixup as the oracle for tests/train/mixup_test.cpp (Python, tests only).

  mixup_oracle.py CASES.json

Each case holds a batch (images, labels), a MixupConfig, every random draw ltfit made while
mixing it (kind r: numpy's rand, b: beta, i: randint; in order) and ltfit's mixed images and
targets. The script loads timm/data/mixup.py by itself (it needs only numpy and torch, not the
rest of timm), replaces numpy.random's rand, beta and randint with functions that hand out
ltfit's draws in order (checking that timm asks for the same kind, count and range), runs
timm's Mixup on the same batch and compares. Exits 0 when every case matches, 1 when one does
not, 77 when timm, numpy or torch cannot be found (the test is then skipped, visibly).
"""
import json
import sys

from timm_source import load_timm_file

timm_mixup = load_timm_file("data/mixup.py", "timm_mixup")
import numpy as np  # noqa: E402 - after the check above (timm's mixup needs it too)
import torch  # noqa: E402


class Draws:
    """numpy.random's rand, beta and randint, answered from ltfit's recorded draws."""

    def __init__(self, draws):
        self.draws = list(draws)
        self.at = 0

    def take(self, kind, size):
        count = 1 if size is None else int(size)
        values = []
        for _ in range(count):
            if self.at >= len(self.draws):
                raise AssertionError(f"timm asked for more draws than ltfit made (a {kind})")
            got_kind, value = self.draws[self.at]
            if got_kind != kind:
                raise AssertionError(f"draw {self.at}: timm asked for {kind}, ltfit drew {got_kind}")
            self.at += 1
            values.append(value)
        return values[0] if size is None else np.array(values)

    def rand(self, *size):
        return self.take("r", size[0] if size else None)

    def beta(self, a, b, size=None):
        return self.take("b", size)

    def randint(self, low, high=None, size=None):
        value = self.take("i", size)
        assert size is None, "timm draws boxes one at a time"
        assert low <= value < high, f"randint({low}, {high}) answered with {value}"
        return int(value)


def run_case(case):
    draws = Draws(case["draws"])
    saved = np.random.rand, np.random.beta, np.random.randint
    np.random.rand, np.random.beta, np.random.randint = draws.rand, draws.beta, draws.randint
    try:
        c = case["config"]
        mixup = timm_mixup.Mixup(
            mixup_alpha=c["mixup_alpha"], cutmix_alpha=c["cutmix_alpha"],
            cutmix_minmax=c["cutmix_minmax"] or None, prob=c["prob"],
            switch_prob=c["switch_prob"], mode=c["mode"], correct_lam=True,
            label_smoothing=case["smoothing"], num_classes=case["classes"])
        x = torch.tensor(case["images"], dtype=torch.float32).reshape(case["shape"])
        labels = torch.tensor(case["labels"], dtype=torch.int64)
        x, target = mixup(x, labels)
    finally:
        np.random.rand, np.random.beta, np.random.randint = saved
    if draws.at != len(draws.draws):
        raise AssertionError(f"ltfit drew {len(draws.draws)} values, timm used {draws.at}")
    ours_x = torch.tensor(case["mixed"], dtype=torch.float32).reshape(case["shape"])
    ours_t = torch.tensor(case["targets"], dtype=torch.float32).reshape(target.shape)
    dx = float((x - ours_x).abs().max())
    dt = float((target - ours_t).abs().max())
    return dx, dt


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    failed = 0
    for case in cases:
        try:
            dx, dt = run_case(case)
            ok = dx <= 1e-6 and dt <= 1e-6
            detail = f"images {dx:.3g}, targets {dt:.3g}"
        except AssertionError as e:
            ok, detail = False, str(e)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {case['name']}: {detail}")
    print(f"{len(cases) - failed} of {len(cases)} cases match timm's Mixup")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
