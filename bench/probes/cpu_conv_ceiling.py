"""Where a CPU server's time goes and what else was tried (bench/results/serve-2026-12-07b.md).

PyTorch only, no ltfit: ResNet-18's forward as the peer runs it (eager NCHW, batch 1) and as
`ltfit serve` runs it (BatchNorm folded, channels-last, batch 16); the batch-16 forward's time per
convolution shape from oneDNN's verbose log; and two alternatives for the slowest convolutions
per FLOP: the 7x7 stride-2 stem as a 4x4 convolution over a space-to-depth input (12 channels
instead of 3), and NNPACK's Winograd 3x3 convolutions.
    python3 bench/probes/cpu_conv_ceiling.py            # about a minute on two cores
"""
import collections
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
import torchvision
from torch.nn.utils.fusion import fuse_conv_bn_eval

torch.set_num_threads(2)
CL = torch.channels_last


def ms_per_call(f, reps):
    with torch.inference_mode():
        f(), f()
        t = time.perf_counter()
        for _ in range(reps):
            f()
        return (time.perf_counter() - t) / reps * 1000


def folded_resnet18():
    m = torchvision.models.resnet18().eval()
    m.conv1, m.bn1 = fuse_conv_bn_eval(m.conv1, m.bn1), torch.nn.Identity()
    for layer in (m.layer1, m.layer2, m.layer3, m.layer4):
        for b in layer:
            b.conv1, b.bn1 = fuse_conv_bn_eval(b.conv1, b.bn1), torch.nn.Identity()
            b.conv2, b.bn2 = fuse_conv_bn_eval(b.conv2, b.bn2), torch.nn.Identity()
            if b.downsample is not None:
                b.downsample = torch.nn.Sequential(fuse_conv_bn_eval(*b.downsample))
    return m.to(memory_format=CL)


def main():
    plain = torchvision.models.resnet18().eval()
    folded = folded_resnet18()
    x1, x16 = torch.randn(1, 3, 224, 224), torch.randn(16, 3, 224, 224).contiguous(memory_format=CL)
    print("ResNet-18 ms per image:")
    print(f"  eager NCHW, batch 1 (the peer's model): {ms_per_call(lambda: plain(x1), 20):.1f}")
    print(f"  folded, channels-last, batch 16 (ltfit serve's): "
          f"{ms_per_call(lambda: folded(x16), 4) / 16:.1f}")

    # oneDNN writes its log to the C stdout: the verbose forward runs in a child process.
    child = subprocess.run([sys.executable, __file__, "--verbose-forward"], check=True,
                           capture_output=True, text=True, env={**os.environ, "ONEDNN_VERBOSE": "1"})
    per_shape = collections.Counter()
    for line in child.stdout.split("--- measured forward ---")[-1].splitlines():
        fields = line.split(",")
        if "exec" in fields and "convolution" in fields:
            per_shape[fields[-2]] += float(fields[-1])
    isa = [line.split(",", 4)[-1] for line in child.stdout.splitlines() if ",isa:" in line]
    print("oneDNN's instruction set here:", isa[0] if isa else "not logged")
    total = sum(per_shape.values())
    print(f"oneDNN convolutions of one batch-16 forward: {total:.1f} ms; the largest shares:")
    for shape, t in per_shape.most_common(6):
        print(f"  {t:6.1f} ms  {shape}")

    w = torch.randn(64, 3, 7, 7).contiguous(memory_format=CL)
    w4 = F.pad(w, (0, 1, 0, 1)).view(64, 3, 4, 2, 4, 2).permute(0, 3, 5, 1, 2, 4)
    w4 = w4.reshape(64, 12, 4, 4).contiguous(memory_format=CL)

    def space_to_depth_stem():
        p = F.pad(x16, (3, 3, 3, 3)).permute(0, 2, 3, 1)
        s = p.reshape(16, 115, 2, 115, 2, 3).permute(0, 1, 3, 2, 4, 5).reshape(16, 115, 115, 12)
        return F.conv2d(s.permute(0, 3, 1, 2), w4)

    print("the stem, batch 16: 7x7 stride 2 over 3 channels "
          f"{ms_per_call(lambda: F.conv2d(x16, w, stride=2, padding=3), 10):.1f} ms, "
          f"as 4x4 over space-to-depth {ms_per_call(space_to_depth_stem, 10):.1f} ms")
    print(f"NNPACK available: {torch._nnpack_available()}; 3x3 convolutions, batch 16, ms:")
    for c, hw in ((64, 56), (128, 28), (256, 14), (512, 7)):
        x = torch.randn(16, c, hw, hw)
        k = torch.randn(c, c, 3, 3)
        xc, kc = x.contiguous(memory_format=CL), k.contiguous(memory_format=CL)
        one = ms_per_call(lambda: F.conv2d(xc, kc, padding=1), 5)
        nn = ms_per_call(lambda: torch._nnpack_spatial_convolution(x, k, None, [1, 1], [1, 1]), 5)
        print(f"  {c:3d} channels {hw:2d} px: oneDNN channels-last {one:5.1f}, NNPACK {nn:5.1f}")


def verbose_forward():
    folded = folded_resnet18()
    x16 = torch.randn(16, 3, 224, 224).contiguous(memory_format=CL)
    with torch.inference_mode():
        folded(x16), folded(x16)  # warm-up: the log below is the third forward's
        print("--- measured forward ---", flush=True)
        folded(x16)


if __name__ == "__main__":
    if "--verbose-forward" in sys.argv:
        verbose_forward()
    else:
        main()
