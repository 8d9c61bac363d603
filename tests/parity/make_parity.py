"""Writes torchvision ResNet weight files and the logits torchvision computes with them.

Test oracle only (never used by the product). For each arch: <out>/<arch>.pth (torch.save of a
randomly initialised torchvision model's state_dict, the same zip format torchvision publishes),
and <out>/<arch>.logits.pt-free text: the input and the expected logits as JSON.

    python3 tests/parity/make_parity.py OUT_DIR [arch ...]
"""
import json
import os
import sys

import torch
import torchvision


def main() -> None:
    out = sys.argv[1]
    archs = sys.argv[2:] or ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(2, 3, 64, 64)
    for arch in archs:
        model = getattr(torchvision.models, arch)(weights=None)
        # Non-trivial BatchNorm statistics, so that eval-mode parity tests them too.
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.1, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
        model.eval()
        torch.save(model.state_dict(), os.path.join(out, f"{arch}.pth"))
        with torch.no_grad():
            logits = model(x)
        with open(os.path.join(out, f"{arch}.json"), "w") as f:
            json.dump({"input_shape": list(x.shape), "input": x.flatten().tolist(),
                       "logits_shape": list(logits.shape), "logits": logits.flatten().tolist()}, f)
        print(arch, "ok", flush=True)


if __name__ == "__main__":
    main()
