"""The CPU's arithmetic ceiling for a convolution network, beside what a model reaches
(bench/results/serve-2026-12-07d.md).

PyTorch only, no ltfit: oneDNN's fp32 rate on large convolutions (1x1 and 3x3, batch 16,
channels-last: the best case for its JIT kernels), MKL's sgemm for comparison, and a torchvision
model's whole forward in GFLOP/s as the peer runs it (eager NCHW, batch 1) and as `ltfit serve`
runs it (BatchNorm folded, channels-last, batch 16). A server bound by the forward cannot beat the
peer by more than (the batch-16 rate's ceiling) / (the peer's batch-1 rate).
    python3 bench/probes/cpu_peak_conv.py [resnet50]     # about a minute on two cores
"""
import sys
import time

import torch
import torchvision
from torch.nn.utils.fusion import fuse_conv_bn_eval

torch.set_num_threads(2)
CL = torch.channels_last


def seconds(f, reps=5):
    with torch.inference_mode():
        f(), f()
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - t)
    return best


def macs_of(model, x):
    """Multiply-adds of every convolution and linear layer in one forward of x."""
    total = [0]

    def hook(module, inputs, output):
        if isinstance(module, torch.nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups
            total[0] += output.numel() * k
        elif isinstance(module, torch.nn.Linear):
            total[0] += output.numel() * module.in_features

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    with torch.inference_mode():
        model(x)
    for h in handles:
        h.remove()
    return total[0]


def folded(model):
    """Each convolution followed by its BatchNorm in a torchvision ResNet, folded (as ltfit does)."""
    for name, module in list(model.named_modules()):
        for conv, norm in (("conv1", "bn1"), ("conv2", "bn2"), ("conv3", "bn3")):
            if hasattr(module, conv) and hasattr(module, norm):
                setattr(module, conv, fuse_conv_bn_eval(getattr(module, conv), getattr(module, norm)))
                setattr(module, norm, torch.nn.Identity())
        if name.endswith("downsample"):
            module[0] = fuse_conv_bn_eval(module[0], module[1])
            module[1] = torch.nn.Identity()
    return model


def main():
    arch = sys.argv[1] if len(sys.argv) > 1 else "resnet50"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for cin, cout, hw, k in ((512, 512, 28, 1), (1024, 1024, 14, 1), (256, 256, 28, 3),
                             (512, 512, 14, 3)):
        x = torch.randn(16, cin, hw, hw).contiguous(memory_format=CL)
        conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2, bias=False).to(memory_format=CL)
        rate = 2 * 16 * cout * cin * k * k * hw * hw / seconds(lambda: conv(x)) / 1e9
        print(f"oneDNN conv {cin}->{cout} {k}x{k} at {hw} px, batch 16: {rate:.0f} GFLOP/s")
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    print(f"MKL sgemm 2048: {2 * 2048 ** 3 / seconds(lambda: torch.mm(a, b)) / 1e9:.0f} GFLOP/s")
    model = getattr(torchvision.models, arch)().eval()
    one = torch.randn(1, 3, 224, 224)
    gflop = 2 * macs_of(model, one) / 1e9
    t1 = seconds(lambda: model(one))
    print(f"{arch}: {gflop:.2f} GFLOP per image")
    print(f"{arch} eager NCHW batch 1 (the peer's forward): {1e3 * t1:.1f} ms per image, "
          f"{gflop / t1:.0f} GFLOP/s")
    fast = folded(model).to(memory_format=CL)
    sixteen = torch.randn(16, 3, 224, 224).contiguous(memory_format=CL)
    t16 = seconds(lambda: fast(sixteen)) / 16
    print(f"{arch} folded channels-last batch 16 (ltfit serve's forward): {1e3 * t16:.1f} ms per "
          f"image, {gflop / t16:.0f} GFLOP/s; {t1 / t16:.2f}x the batch-1 forward")


if __name__ == "__main__":
    main()
