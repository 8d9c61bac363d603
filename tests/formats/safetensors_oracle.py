"""ltfit's safetensors reader and writer against the safetensors library, and timm's weights.

write DIR: py.safetensors, written by safetensors.torch.save_file (every dtype ltfit reads, a
    scalar, an empty tensor, metadata); and for each timm case (cases.json) a model made by
    timm.create_model with random weights, BatchNorm statistics and affines, saved as
    timm_<id>.safetensors, an input in_<id>.bin (float32 [2,3,S,S]) and timm's logits ref_<id>.bin.
    The hidden Catch2 test "[safetensors_oracle]" reads py.safetensors and writes its tensors
    back as ltfit.safetensors (metadata kept), and loads each timm file strictly into ltfit's
    model of the same arch and writes its logits (out_<id>.bin).
compare DIR: the safetensors library reads ltfit.safetensors: the same names, dtypes, shapes,
    values (bit for bit) and metadata as py.safetensors; ltfit's logits equal timm's within 1e-4.
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

# id, timm model name, ltfit arch, image size
CASES = [
    ("resnet18", "resnet18", "resnet18", 64),
    ("resnet50", "resnet50", "resnet50", 64),
    ("convnext_tiny", "convnext_tiny", "convnext_tiny", 64),
    ("efficientnet_b0", "efficientnet_b0", "efficientnet_b0", 64),
    ("vit_b_16", "vit_base_patch16_224", "vit_b_16", 224),  # its position embeddings' size
    # timm's regnety_008 (pycls' widths) is not torchvision's regnet_y_800mf; regnety_008_tv is.
    ("regnet_y_800mf", "regnety_008_tv", "regnet_y_800mf", 64),
    ("regnet_y_1_6gf", "regnety_016", "regnet_y_1_6gf", 64),
    # timm's BatchNorm eps is 1e-5, torchvision's 1e-3: from_timm_names shifts running_var.
    ("mobilenet_v3_large", "mobilenetv3_large_100", "mobilenet_v3_large", 64),
    ("mobilenet_v3_small", "mobilenetv3_small_100", "mobilenet_v3_small", 64),
]


def tensors():
    g = torch.Generator().manual_seed(0)
    return {
        "conv.weight": torch.randn(4, 3, 2, 2, generator=g),
        "half": torch.randn(5, generator=g).half(),
        "brain": torch.randn(2, 3, generator=g).bfloat16(),
        "double": torch.randn(3, generator=g, dtype=torch.float64),
        "bn.num_batches_tracked": torch.tensor(7),
        "ints": torch.tensor([-1, 2, 3], dtype=torch.int32),
        "shorts": torch.tensor([-5, 6], dtype=torch.int16),
        "bytes": torch.tensor([-3, 4], dtype=torch.int8),
        "pixels": torch.tensor([0, 255], dtype=torch.uint8),
        "mask": torch.tensor([True, False, True]),
        "empty": torch.zeros(0, 4),
    }


def write(work):
    save_file(tensors(), os.path.join(work, "py.safetensors"),
              metadata={"format": "pt", "who": "python"})
    import timm
    cases = []
    for cid, name, arch, size in CASES:
        torch.manual_seed(1)
        model = timm.create_model(name, pretrained=False)
        with torch.no_grad():  # statistics that are not the identity, so that BatchNorm counts,
            for m in model.modules():  # and no zero-initialised last gamma hiding a branch
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.2, 0.2)
                    m.running_var.uniform_(0.5, 1.5)
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.1, 0.1)
        model.eval()
        save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                  os.path.join(work, f"timm_{cid}.safetensors"))
        x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(2))
        with torch.no_grad():
            logits = model(x)
        x.numpy().tofile(os.path.join(work, f"in_{cid}.bin"))
        logits.numpy().astype(np.float32).tofile(os.path.join(work, f"ref_{cid}.bin"))
        cases.append({"id": cid, "arch": arch, "size": size, "classes": int(logits.shape[1])})
    with open(os.path.join(work, "cases.json"), "w") as f:
        json.dump(cases, f)


def compare(work):
    expected = tensors()
    path = os.path.join(work, "ltfit.safetensors")
    got = load_file(path)
    assert set(got) == set(expected), f"names differ: {sorted(got)}"
    for name, tensor in expected.items():
        assert got[name].dtype == tensor.dtype, f"{name}: {got[name].dtype} vs {tensor.dtype}"
        assert got[name].shape == tensor.shape, f"{name}: {got[name].shape} vs {tensor.shape}"
        assert torch.equal(got[name], tensor), f"{name}: values differ"
    with safe_open(path, framework="pt") as f:
        assert f.metadata() == {"format": "pt", "who": "python"}, f.metadata()
    print(f"safetensors: {len(expected)} tensors read back bit for bit by the safetensors library")
    with open(os.path.join(work, "cases.json")) as f:
        cases = json.load(f)
    worst = 0.0
    for c in cases:
        ref = np.fromfile(os.path.join(work, f"ref_{c['id']}.bin"), dtype=np.float32)
        out = np.fromfile(os.path.join(work, f"out_{c['id']}.bin"), dtype=np.float32)
        assert ref.shape == out.shape, f"{c['id']}: {out.shape} logits, timm {ref.shape}"
        diff = float(np.abs(ref - out).max())
        print(f"timm {c['id']}: largest logit difference {diff:.2e}")
        assert diff <= 1e-4, f"{c['id']}: ltfit's logits differ from timm's by {diff}"
        worst = max(worst, diff)
    print(f"timm: {len(cases)} models, largest difference {worst:.2e}")


if __name__ == "__main__":
    {"write": write, "compare": compare}[sys.argv[1]](sys.argv[2])
