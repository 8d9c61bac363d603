#!/usr/bin/env python3
"""PyTorch's side of bench/dist_scaling.sh --peer: DistributedDataParallel on the same work.

    python3 bench/torch_ddp_train.py --root DIR [--arch resnet18] [--size 64] [--bs 32] [--epochs 2]
    torchrun --standalone --nproc-per-node 2 bench/torch_ddp_train.py --root DIR ...

What runs on each rank (the recipe PyTorch users write by hand, and what ltfit's data-parallel
`train` does in C++): torchvision's ResNet (random init, 2 classes, channels_last), ImageFolder
with Resize(size) + RandomCrop(size) + RandomHorizontalFlip, a DistributedSampler (shuffle,
drop_last) over the global batch --bs split across the ranks, DataLoader workers = cores / ranks
(at least 1), torch.set_num_threads(cores / ranks), AdamW + OneCycleLR, cross-entropy; the model
wrapped in DistributedDataParallel over Gloo when launched with more than one rank (one process
otherwise). Prints one JSON line (rank 0): images/s of the last epoch's training loop (the first
pays warm-up), world size, versions. Exit codes: 0 done, 1 torch/torchvision missing, 2 bad usage.
"""
import argparse
import json
import os
import sys
import time


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True, help="train/<class>/ folders")
    parser.add_argument("--arch", default="resnet18")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--bs", type=int, default=32, help="global batch (all ranks)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args(argv)
    try:
        import torch
        import torch.distributed as dist
        import torchvision
        from torchvision import datasets, transforms
    except ImportError as e:
        print(f"needs torch and torchvision: {e}", file=sys.stderr)
        return 1
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    if args.bs % world:
        print(f"--bs {args.bs} does not split over {world} ranks", file=sys.stderr)
        return 2
    cores = len(os.sched_getaffinity(0))
    torch.set_num_threads(max(1, cores // local_world))
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(1)
    model = getattr(torchvision.models, args.arch)(num_classes=2)
    model = model.to(memory_format=torch.channels_last)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    tf = transforms.Compose([
        transforms.Resize(args.size), transforms.RandomCrop(args.size),
        transforms.RandomHorizontalFlip(), transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    data = datasets.ImageFolder(os.path.join(args.root, "train"), tf)
    sampler = torch.utils.data.distributed.DistributedSampler(
        data, num_replicas=world, rank=rank, shuffle=True, drop_last=True, seed=1)
    loader = torch.utils.data.DataLoader(
        data, batch_size=args.bs // world, sampler=sampler, drop_last=True,
        num_workers=max(1, cores // local_world), persistent_workers=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=args.epochs * len(loader))
    loss_fn = torch.nn.CrossEntropyLoss()
    last = 0.0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        start = time.perf_counter()
        images = 0
        for x, y in loader:
            x = x.contiguous(memory_format=torch.channels_last)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            images += x.shape[0] * world
        last = images / (time.perf_counter() - start)
    if rank == 0:
        print(json.dumps({"images_per_second": last, "world_size": world,
                          "torch": torch.__version__, "torchvision": torchvision.__version__}))
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
