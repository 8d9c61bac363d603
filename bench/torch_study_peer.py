#!/usr/bin/env python3
"""PyTorch's side of bench/gpu_study.sh: the study's training step as PyTorch users write it.

    python3 bench/torch_study_peer.py --root DIR [--device cuda] [--arch resnet34] [--size 224]
        [--batch-sizes 16,64,256] [--precision fp16] [--steps 200] [--warmup 20] [--frozen]

On the same images as ltfit (DIR/train/<class>/*.jpg): torchvision's ImageFolder with the
augmentation of bench/torchvision_loader.py (Resize, RandomCrop, flip, perspective, affine and
colour jitter, each p 0.75 like fastai's get_transforms), a DataLoader with one worker per core
(pinned memory, persistent workers, shuffled, drop_last), torchvision's model (random init, 2
classes) in channels_last, AdamW (fused on CUDA), autocast in the given precision with a
GradScaler for fp16, cross-entropy, normalisation on the device. --frozen trains as fastai's
first stage does (and as the study's runs in bench/gpu_study.sh): the body's weights frozen, its
BatchNorm layers and the classifier training (fastai's train_bn), so both sides do the same work. For each batch size: --warmup
steps, then --steps timed steps (synchronised at both ends); the time the loop waited for the
loader is measured per step (the host is blocked in next() while the GPU may still run).

Prints one JSON line per batch size: batch_size, images_per_second, data_wait_fraction, steps,
device, precision, versions. Exit codes: 0 done, 1 torch/torchvision missing, 2 bad usage,
3 the device is not available.
"""
import argparse
import json
import os
import sys
import time


def loader_for(args, batch_size, torch, datasets, transforms):
    augment = transforms.Compose([
        transforms.Resize(args.size), transforms.RandomCrop(args.size),
        transforms.RandomHorizontalFlip(),
        transforms.RandomApply([transforms.RandomPerspective(0.2, p=1.0)], p=0.75),
        transforms.RandomApply([transforms.RandomAffine(10, scale=(1.0, 1.1))], p=0.75),
        transforms.RandomApply([transforms.ColorJitter(0.2, 0.2)], p=0.75),
        transforms.PILToTensor()])
    data = datasets.ImageFolder(os.path.join(args.root, "train"), augment)
    workers = len(os.sched_getaffinity(0))
    return torch.utils.data.DataLoader(
        data, batch_size=batch_size, shuffle=True, drop_last=True, num_workers=workers,
        pin_memory=args.device.startswith("cuda"), persistent_workers=True,
        prefetch_factor=4)


def run_batch_size(args, batch_size, torch, torchvision, datasets, transforms):
    device = torch.device(args.device)
    torch.manual_seed(1)
    model = getattr(torchvision.models, args.arch)(num_classes=2)
    model = model.to(device, memory_format=torch.channels_last).train()
    if args.frozen:
        head = set(id(p) for p in model.get_submodule(args.head).parameters())
        for module in model.modules():
            norm = isinstance(module, torch.nn.modules.batchnorm._BatchNorm)
            for p in module.parameters(recurse=False):
                p.requires_grad_(norm or id(p) in head)
    fused = device.type == "cuda"
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, weight_decay=0.01, fused=fused)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler(device.type, enabled=args.precision == "fp16")
    mean = torch.tensor([0.485, 0.456, 0.406], device=device).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=device).view(1, 3, 1, 1) * 255
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = loader_for(args, batch_size, torch, datasets, transforms)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def batches():
        while True:
            yield from loader

    stream = batches()
    done, waited, start = 0, 0.0, None
    total = args.warmup + args.steps
    while done < total:
        if done == args.warmup:
            sync()
            start, waited = time.perf_counter(), 0.0
        before = time.perf_counter()
        x, y = next(stream)
        waited += time.perf_counter() - before
        x = x.to(device, non_blocking=True).float()
        x = ((x - mean) / std).contiguous(memory_format=torch.channels_last)
        y = y.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        done += 1
    sync()
    seconds = time.perf_counter() - start
    return {"batch_size": batch_size, "images_per_second": args.steps * batch_size / seconds,
            "data_wait_fraction": waited / seconds, "steps": args.steps,
            "frozen": args.frozen, "seconds": seconds,
            "device": args.device, "precision": args.precision, "arch": args.arch,
            "size": args.size, "workers": len(os.sched_getaffinity(0)),
            "torch": torch.__version__, "torchvision": torchvision.__version__}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True, help="train/<class>/ folders")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--arch", default="resnet34")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch-sizes", default="16,64,256")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp16")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--frozen", action="store_true",
                        help="train only BatchNorm layers and the classifier (fastai's frozen body)")
    parser.add_argument("--head", default="fc", help="the classifier module's name (resnets: fc)")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.batch_sizes.split(",")]
    except ValueError:
        print(f"--batch-sizes: expected numbers like 16,64,256, got {args.batch_sizes}",
              file=sys.stderr)
        return 2
    if args.steps < 1 or args.warmup < 0 or min(sizes) < 2:
        print("--steps >= 1, --warmup >= 0 and batch sizes >= 2 expected", file=sys.stderr)
        return 2
    try:
        import torch
        import torchvision
        from torchvision import datasets, transforms
    except ImportError as e:
        print(f"needs torch and torchvision: {e}", file=sys.stderr)
        return 1
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 3
    torch.backends.cudnn.benchmark = True
    for batch_size in sizes:
        print(json.dumps(run_batch_size(args, batch_size, torch, torchvision, datasets,
                                        transforms)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
