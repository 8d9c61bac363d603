#!/usr/bin/env python3
"""Writes torch.save files made by Python's torch into OUT_DIR, as extra fuzz seeds.

PyTorch's pickler writes opcodes ltfit's writer never does (memo puts and gets, BUILD of an
OrderedDict's _metadata, _rebuild_parameter, shared storages, non-contiguous views), so these
seeds take the zip and pickle targets to code the ltfit-written seeds do not reach. Everything
written is what torch.load(weights_only=True) reads. Exits 77 when torch is not installed.

    python3 fuzz/torch_seeds.py OUT_DIR
"""
import collections
import os
import sys

try:
    import torch
except ImportError:
    print("torch_seeds.py: no torch for python3; no Python seeds", file=sys.stderr)
    sys.exit(77)


def seeds():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(4, 2))
    yield "state_dict", net.state_dict()
    yield "module_parameters", collections.OrderedDict(net.named_parameters())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    net(torch.ones(2, 3, 3, 3)).sum().backward()
    opt.step()
    yield "adamw_state", opt.state_dict()
    base = torch.arange(24, dtype=torch.float32)
    yield "views", {
        "transposed": base.reshape(4, 6).t(),
        "offset": base[5:9],
        "shared_a": base[:12], "shared_b": base.reshape(2, 12)[1],
        "expanded": torch.ones(1).expand(1000),
        "empty": torch.empty(0, 3),
    }
    yield "dtypes", {str(d): torch.ones(3, dtype=d) for d in (
        torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.int16,
        torch.int8, torch.uint8, torch.bool, torch.complex64)}
    yield "values", {"int": 1, "big": 2 ** 62, "neg": -5, "float": 0.5, "str": "x" * 300,
                     "none": None, "bool": True, "list": [1, [2, [3]]], "tuple": (1, 2, 3),
                     "nested": {"a": {"b": torch.zeros(2)}}}


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, obj in seeds():
        torch.save(obj, os.path.join(out, name + ".pt"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
