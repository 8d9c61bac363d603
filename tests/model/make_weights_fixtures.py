#!/usr/bin/env python3
"""Fixtures for tests/model/torch_weights_test.cpp, made by the reference (PyTorch's torch.save).

  make_weights_fixtures.py <outdir>
      Writes *.pth files into <outdir> and <outdir>/expected.json: for each file that ltfit should
      read, {name: {"dtype": str, "shape": [...], "values": [flat, as float]}}.
  make_weights_fixtures.py verify <written.pth> <reference.pth> [module]
      Loads <written.pth> (ltfit's output) with torch.load(weights_only=True), checks it equals
      <reference.pth> exactly (names, order, dtypes, shapes, values); with "module", also loads
      it into the nn.Sequential the module fixture came from. Prints OK or exits non-zero.
"""
import collections
import fractions
import json
import os
import sys
import zipfile

import torch
import torch.nn as nn


def tiny_module():
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))


def describe(sd):
    return {name: {"dtype": str(t.dtype).replace("torch.", ""),
                   "shape": list(t.shape),
                   "values": t.detach().to(torch.float64).flatten().tolist()}
            for name, t in sd.items()}


def make(outdir):
    torch.manual_seed(0)
    os.makedirs(outdir, exist_ok=True)
    base = torch.arange(10, dtype=torch.float32) * 0.5
    basic = collections.OrderedDict([
        ("f32", torch.randn(2, 3)),
        ("f64", torch.randn(3, dtype=torch.float64)),
        ("f16", torch.randn(5).half()),
        ("bf16", torch.randn(4).bfloat16()),
        ("i64", torch.arange(6).reshape(2, 3) * 1_000_000_007 - 7),
        ("i32", torch.tensor([-3, 0, 2**31 - 1], dtype=torch.int32)),
        ("u8", torch.tensor([0, 255, 7], dtype=torch.uint8)),
        ("mask", torch.tensor([True, False, True])),
        ("transposed", torch.randn(3, 4).t()),         # non-contiguous
        ("shared_a", base[2:6]),                       # two views of one storage,
        ("shared_b", base[5:].view(5, 1)),             # with offsets
        ("scalar", torch.tensor(3.5)),
        ("empty", torch.zeros(0, 3)),
    ])
    torch.save(basic, os.path.join(outdir, "basic.pth"))

    module = tiny_module()
    with torch.no_grad():
        module[1].running_mean.uniform_(-1, 1)
        module[1].running_var.uniform_(0.5, 2)
        module[1].num_batches_tracked.fill_(12345)
    sd = module.state_dict()  # an OrderedDict with _metadata
    torch.save(sd, os.path.join(outdir, "module.pth"))
    # torchvision's published name: the zip's top folder is "resnet18-f37072fd/"
    torch.save(sd, os.path.join(outdir, "resnet18-f37072fd.pth"))
    fastai = {"model": sd, "opt": {"state": [{"step": 3}], "hypers": [{"lr": 0.1, "mom": 0.9}]}}
    torch.save(fastai, os.path.join(outdir, "fastai.pth"))

    torch.save(sd, os.path.join(outdir, "legacy.pth"), _use_new_zipfile_serialization=False)
    torch.save({"w": torch.zeros(2), "odd": fractions.Fraction(1, 3)},
               os.path.join(outdir, "unsupported.pth"))
    with zipfile.ZipFile(os.path.join(outdir, "module.pth")) as src, \
            zipfile.ZipFile(os.path.join(outdir, "no_storage.pth"), "w") as dst:
        for info in src.infolist():
            if not info.filename.endswith("/data/0"):
                dst.writestr(info, src.read(info.filename))

    expected = {"basic.pth": describe(basic), "module.pth": describe(sd)}
    with open(os.path.join(outdir, "expected.json"), "w") as f:
        json.dump(expected, f)


def verify(written, reference, with_module):
    got = torch.load(written, weights_only=True)
    want = torch.load(reference, weights_only=True)
    assert list(got.keys()) == list(want.keys()), (list(got.keys()), list(want.keys()))
    for name, w in want.items():
        g = got[name]
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, g.shape, w.dtype, w.shape)
        assert torch.equal(g, w), name
    if with_module:
        tiny_module().load_state_dict(got, strict=True)
    print("OK")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "verify":
        verify(sys.argv[2], sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "module")
    elif len(sys.argv) == 2:
        make(sys.argv[1])
    else:
        sys.exit(__doc__)
