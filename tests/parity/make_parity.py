"""Writes torchvision weight files and the logits torchvision computes with them.

Test oracle only (never used by the product). For each arch: <out>/<arch>.pth (torch.save of a
randomly initialised torchvision model's state_dict, the same zip format torchvision publishes),
and <out>/<arch>.json: the input and the expected logits. Every registered arch (`ltfit models`)
must be listed in ARCHS: the parity test fails for a registered arch without its files.

    python3 tests/parity/make_parity.py OUT_DIR [arch ...]
"""
import json
import os
import sys

import torch
import torchvision


ARCHS = ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
         "wide_resnet50_2", "convnext_tiny", "convnext_small", "efficientnet_b0",
         "efficientnet_b1", "efficientnet_b2", "efficientnet_b3"]


def randomise_norms(model: torch.nn.Module) -> None:
    """Non-trivial normalisation parameters and statistics, and ConvNeXt layer scales away from
    their 1e-6 init, so that eval-mode parity tests every one of them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
            elif isinstance(m, torch.nn.LayerNorm):  # torchvision's LayerNorm2d derives from it
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
        for name, p in model.named_parameters():
            if name.endswith("layer_scale"):
                p.uniform_(0.1, 1.0)
        # A ResNet's residual branches each end in a BatchNorm; at weight ~1 the 50 blocks of a
        # ResNet-152 add up to logits of 1e8, where an absolute 1e-4 tolerance means nothing.
        # Scaled down (as zero_init_residual does, but not to zero) the logits stay O(1).
        for m in model.modules():
            if isinstance(m, (torchvision.models.resnet.BasicBlock,
                              torchvision.models.resnet.Bottleneck)):
                (m.bn3 if hasattr(m, "bn3") else m.bn2).weight.uniform_(0.1, 0.3)


def main() -> None:
    out = sys.argv[1]
    archs = sys.argv[2:] or ARCHS
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(2, 3, 64, 64)
    for arch in archs:
        model = getattr(torchvision.models, arch)(weights=None)
        randomise_norms(model)
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
