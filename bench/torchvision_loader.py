#!/usr/bin/env python3
"""The Python peer of `ltfit bench-loader`: torchvision's training input pipeline, timed.

Reads <root>/train/<class>/*.jpg with torchvision's ImageFolder and a DataLoader configured as
a fastai user would (batch 64, shuffle, drop_last, persistent workers), with torchvision
transforms that cost about what fastai's get_transforms() costs:

  Resize(shorter side = size) -> RandomCrop(size) -> RandomHorizontalFlip
  -> RandomApply([RandomPerspective(0.2)], p=0.75)                  # symmetric warp +-0.2
  -> RandomApply([RandomAffine(degrees=10, scale=(1, 1.1))], p=0.75) # rotate +-10, zoom 1-1.1
  -> RandomApply([ColorJitter(brightness=0.2, contrast=0.2)], p=0.75)
  -> PILToTensor                                                     # uint8 [3,size,size]

RandomResizedCrop is deliberately not used: it is a different augmentation (and cheaper,
since it resizes once). Output batches are uint8 [64,3,size,size], as ltfit's loader's are;
normalization happens on the device in both.

After `--warmup` batches, times `--batches` batches and prints one JSON line:
  {"tool": "torchvision", "images_per_second": ..., "workers": N, "per_core": ..., ...}
per_core divides by max(workers, 1): the worker processes do the decoding; the main process
only collates. `--pil-draft` lets PIL's JPEG decoder downscale by 1/2, 1/4 or 1/8 while
decoding when the result still covers `size` (what ltfit does with libjpeg); it is off by
default because stock torchvision does not do it.
"""

import argparse
import json
import os
import sys
import time
import warnings


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True,
                        help="dataset root holding train/<class>/*.jpg")
    parser.add_argument("--workers", type=int, default=os.cpu_count(),
                        help="DataLoader worker processes (default: all cores); 0 = main process")
    parser.add_argument("--size", type=int, default=224, help="output side in pixels (224)")
    parser.add_argument("--batch-size", type=int, default=64, help="images per batch (64)")
    parser.add_argument("--batches", type=int, default=60, help="timed batches (60)")
    parser.add_argument("--warmup", type=int, default=5,
                        help="untimed batches first: worker start-up, page cache (5)")
    parser.add_argument("--seed", type=int, default=0, help="shuffle and augmentation seed (0)")
    parser.add_argument("--rrc", action="store_true",
                        help="RandomResizedCrop(size) + RandomHorizontalFlip instead of the "
                             "fastai-like transforms (ltfit's data.augment.crop: random_resized)")
    parser.add_argument("--pil-draft", action="store_true",
                        help="reduced-size JPEG decoding via PIL's Image.draft")
    args = parser.parse_args(argv)
    for name in ("size", "batch_size", "batches"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')}: expected a positive integer, "
                         f"got {getattr(args, name)}")
    if args.workers < 0 or args.warmup < 0:
        parser.error("--workers and --warmup must not be negative")
    return args


def build_transform(size, rrc=False):
    from torchvision import transforms as T
    if rrc:  # timm's and torchvision's training crop (ltfit's data.augment.crop: random_resized)
        return T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.PILToTensor()])
    return T.Compose([
        T.Resize(size),  # an int resizes the shorter side, keeping the aspect ratio
        T.RandomCrop(size),
        T.RandomHorizontalFlip(),
        T.RandomApply([T.RandomPerspective(distortion_scale=0.2, p=1.0)], p=0.75),
        T.RandomApply([T.RandomAffine(degrees=10, scale=(1.0, 1.1))], p=0.75),
        T.RandomApply([T.ColorJitter(brightness=0.2, contrast=0.2)], p=0.75),
        T.PILToTensor(),
    ])


class DraftLoader:
    """ImageFolder's default loader, plus JPEG draft decoding at the smallest scale >= size."""

    def __init__(self, size):
        self.size = size

    def __call__(self, path):
        from PIL import Image
        with open(path, "rb") as f:
            image = Image.open(f)
            # draft keeps both sides >= the requested ones, so ask for size x size scaled to the
            # aspect ratio: the shorter side stays >= size.
            short = min(image.size)
            image.draft("RGB", (image.size[0] * self.size // short,
                                image.size[1] * self.size // short))
            return image.convert("RGB")


def build_loader(args):
    import torch
    from torchvision import datasets

    train_dir = os.path.join(args.root, "train")
    if not os.path.isdir(train_dir):
        sys.exit(f"error: {train_dir} does not exist (expected <root>/train/<class>/*.jpg)")
    kwargs = {"loader": DraftLoader(args.size)} if args.pil_draft else {}
    dataset = datasets.ImageFolder(train_dir, transform=build_transform(args.size, args.rrc), **kwargs)
    if len(dataset) < args.batch_size:
        sys.exit(f"error: {train_dir} has {len(dataset)} images, fewer than one batch "
                 f"({args.batch_size})")
    generator = torch.Generator().manual_seed(args.seed)
    return torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, drop_last=True,
        num_workers=args.workers, persistent_workers=args.workers > 0,
        generator=generator)


def endless_batches(loader):
    """Batches across epoch boundaries (persistent workers survive each new iterator)."""
    while True:
        yield from loader


def measure(loader, warmup, batches):
    """Seconds taken by `batches` batches after `warmup` untimed ones."""
    stream = endless_batches(loader)
    expected_shape = None
    for _ in range(warmup):
        images, _labels = next(stream)
        expected_shape = images.shape
    start = time.perf_counter()
    for _ in range(batches):
        images, _labels = next(stream)
        if expected_shape is not None and images.shape != expected_shape:
            raise RuntimeError(f"batch shape changed: {expected_shape} -> {images.shape}")
    return time.perf_counter() - start, images


def main(argv):
    # torchvision built for a neighbouring torch may warn that its C++ ops did not load; the
    # PIL transforms used here do not need them.
    warnings.filterwarnings("ignore", message=".*torchvision.*", category=UserWarning)
    args = parse_args(argv)
    import torch
    import torchvision
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # the main process only collates; leave the cores to the workers

    loader = build_loader(args)
    seconds, last = measure(loader, args.warmup, args.batches)
    if last.dtype != torch.uint8 or tuple(last.shape[1:]) != (3, args.size, args.size):
        raise RuntimeError(f"unexpected batch {tuple(last.shape)} {last.dtype}")
    images_per_second = args.batches * args.batch_size / seconds
    print(json.dumps({
        "tool": "torchvision",
        "images_per_second": round(images_per_second, 1),
        "workers": args.workers,
        "per_core": round(images_per_second / max(args.workers, 1), 1),
        "image_size": args.size,
        "batch_size": args.batch_size,
        "batches": args.batches,
        "seconds": round(seconds, 3),
        "pil_draft": args.pil_draft,
        "rrc": args.rrc,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
