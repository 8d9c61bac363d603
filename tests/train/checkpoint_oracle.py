#!/usr/bin/env python3
"""PyTorch as the oracle for tests/train/checkpoint_format_test.cpp (Python torch, tests only).

  checkpoint_oracle.py load <file> <out.json>
      Loads an ltfit checkpoint (or any archive) with torch.load(weights_only=True), once plainly
      and once with mmap=True (which needs every storage record 64-byte aligned), and writes what
      it found as JSON: the plain values, and per tensor its dtype, shape and float64 sum.
  checkpoint_oracle.py torchscript <out.pt> <marker>
      Writes a TorchScript archive (torch.jit.save) of a module whose __setstate__ creates the
      file <marker> (torch.from_file(shared=True) writes "AAAAAAAA" into it): whoever loads the
      archive with torch.jit.load runs that code.
  checkpoint_oracle.py strip <in> <out> <key>
      Writes <in> again (torch.load(weights_only=True), then torch.save) without its top-level
      entry <key>: a checkpoint as an ltfit from before that entry wrote it.
"""
import json
import sys
from typing import Tuple

import torch


def describe(value):
    if isinstance(value, torch.Tensor):
        return {"dtype": str(value.dtype).replace("torch.", ""), "shape": list(value.shape),
                "sum": float(value.to(torch.float64).sum())}
    if isinstance(value, dict):
        return {str(k): describe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    return value


def load(path, out):
    plain = torch.load(path, weights_only=True)
    mapped = torch.load(path, weights_only=True, mmap=True)
    result = describe(plain)
    if isinstance(plain, dict):
        result["__top_level_type__"] = type(plain).__name__
        model = plain.get("model")
        if isinstance(model, dict):
            result["__model_type__"] = type(model).__name__
            for name, t in model.items():
                assert torch.equal(t, mapped["model"][name]), name
    with open(out, "w") as f:
        json.dump(result, f)
    print("OK")


class WritesAFile(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(2))
        self.path = "unset"
        self.mapped = torch.zeros(1, dtype=torch.uint8)

    def forward(self, x):
        return x

    @torch.jit.export
    def __getstate__(self):
        return (self.w, self.path, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[torch.Tensor, str, bool]):
        self.w = state[0]
        self.path = state[1]
        self.training = state[2]
        self.mapped = torch.from_file(self.path, True, 8, dtype=torch.uint8)
        self.mapped.fill_(65)


def torchscript(out, marker):
    module = torch.jit.script(WritesAFile())
    module.path = marker
    torch.jit.save(module, out)
    print("OK")


def strip(path, out, key):
    checkpoint = torch.load(path, weights_only=True)
    del checkpoint[key]
    torch.save(checkpoint, out)
    print("OK")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "load":
        load(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "torchscript":
        torchscript(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "strip":
        strip(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
