#!/usr/bin/env python3
"""fastai's side of bench/fastai_side_by_side.sh: the fastai v2 fine-tune that ltfit reproduces.

    python3 bench/fastai_train.py --root DIR [--arch resnet18] [--size 64] [--bs 32]
                                  [--epochs 2] [--freeze-epochs 1] [--lr 2e-3] [--workers N]
                                  [--device cpu|cuda] [--seed 42] [--no-tta]
                                  [--label-smoothing EPS] [--mixup ALPHA] [--cutmix ALPHA]
                                  [--random-erasing P] [--ema DECAY]

DIR holds train/<class>/*.jpg and valid/<class>/*.jpg (`ltfit synth` writes that). What runs:

    dls = ImageDataLoaders.from_folder(DIR, train="train", valid="valid", item_tfms=Resize(size),
                                       batch_tfms=[*aug_transforms(), Normalize(imagenet)], ...)
    learn = vision_learner(dls, arch, pretrained=False, metrics=accuracy)
    learn.fine_tune(epochs, lr, freeze_epochs)      # timed: train_seconds
    learn.tta()                                     # timed: tta_seconds (n=4, beta=0.25)

The modern-recipe flags add fastai's own feature where it has one: `--label-smoothing` the loss
`LabelSmoothingCrossEntropyFlat(eps)`, `--mixup` / `--cutmix` the `MixUp(alpha)` / `CutMix(alpha)`
callbacks (not both: fastai's second MixHandler wraps the first's loss and fails on integer
labels), `--random-erasing` the batch transform `RandomErasing(p, sl=0.02, sh=0.33,
min_aspect=0.3)` (torchvision's scale and ratio; fastai erases one box per batch). fastai has no weight EMA: `--ema` adds timm's `ModelEmaV3(decay)` (warm-up
on), updated after each optimizer step as timm's train.py does, and validates and runs TTA with
the EMA weights, as ltfit's `train.ema.validate: true` does.
"step_seconds" is the time in fastai's training phases (data wait included, validation not)
divided by the optimizer steps.

Normalize is added by hand: vision_learner adds ImageNet normalisation only for pretrained
models, and ltfit always normalises, so without it the two would not train the same inputs.
Prints one JSON line on stdout (timings, accuracies, versions); the per-epoch table on stderr.
Exit codes: 0 done, 1 fastai missing (run scripts/bench_deps.sh), 2 bad usage or data root.
"""
import argparse
import json
import os
import sys
import time
import warnings

START = time.perf_counter()  # as close to the process start as Python allows


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True, help="train/<class>/, valid/<class>/ folders")
    parser.add_argument("--arch", default="resnet18",
                        help="fastai's or torchvision's model function (resnet18, convnext_tiny, "
                             "efficientnet_b0, ...)")
    parser.add_argument("--size", type=int, default=64, help="image side, pixels (64)")
    parser.add_argument("--bs", type=int, default=32, help="batch size (32)")
    parser.add_argument("--epochs", type=int, default=2, help="unfrozen epochs (2)")
    parser.add_argument("--freeze-epochs", type=int, default=1, help="frozen epochs first (1)")
    parser.add_argument("--lr", type=float, default=2e-3, help="fine_tune base_lr (2e-3)")
    parser.add_argument("--workers", type=int, default=os.cpu_count(),
                        help="DataLoader worker processes (nproc)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="torch.set_num_threads in the main process (nproc)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N (cpu)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-tta", action="store_true", help="skip learn.tta()")
    parser.add_argument("--label-smoothing", type=float, default=0.0, metavar="EPS",
                        help="LabelSmoothingCrossEntropyFlat(eps) as the loss (0: off)")
    parser.add_argument("--mixup", type=float, default=0.0, metavar="ALPHA",
                        help="MixUp(alpha) callback (0: off)")
    parser.add_argument("--cutmix", type=float, default=0.0, metavar="ALPHA",
                        help="CutMix(alpha) callback (0: off)")
    parser.add_argument("--random-erasing", type=float, default=0.0, metavar="P",
                        help="RandomErasing(p) batch transform (0: off)")
    parser.add_argument("--ema", type=float, default=0.0, metavar="DECAY",
                        help="timm's ModelEmaV3(decay, warm-up) of the weights (0: off)")
    args = parser.parse_args(argv)
    for name in ("label_smoothing", "random_erasing", "ema"):
        if not 0.0 <= getattr(args, name) < 1.0:
            parser.error(f"--{name.replace('_', '-')}: expected a number in [0, 1)")
    if args.mixup < 0 or args.cutmix < 0:
        parser.error("--mixup and --cutmix take an alpha >= 0")
    if args.mixup and args.cutmix:
        parser.error("--mixup and --cutmix: one of them (fastai's two callbacks do not combine)")
    for name in ("size", "bs", "epochs", "threads"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name}: expected a positive integer")
    if args.workers < 0 or args.freeze_epochs < 0:
        parser.error("--workers and --freeze-epochs must not be negative")
    for split in ("train", "valid"):
        if not os.path.isdir(os.path.join(args.root, split)):
            print(f"error: {args.root}/{split} does not exist "
                  "(expected <root>/{train,valid}/<class>/*.jpg)", file=sys.stderr)
            sys.exit(2)
    return args


def feature_callbacks(args, fv, torch):
    """The callbacks of the modern-recipe flags, a step timer first; and the flags' description."""
    class StepTimer(fv.Callback):
        "Seconds in the training phases (data wait included) and the optimizer steps."
        order = -100  # first in, last out: around every other callback's training work
        seconds, steps = 0.0, 0

        def before_train(self):
            self.t0 = time.perf_counter()

        def after_train(self):
            if self.model.parameters().__next__().is_cuda:
                torch.cuda.synchronize()
            self.seconds += time.perf_counter() - self.t0

        def after_step(self):
            self.steps += 1

    class Ema(fv.Callback):
        "timm's ModelEmaV3 after each step; validation (and so TTA) with the EMA weights."

        def __init__(self, decay):
            self.decay, self.ema, self.saved = decay, None, None

        def before_fit(self):
            if self.ema is None:
                from timm.utils import ModelEmaV3
                self.ema = ModelEmaV3(self.model, decay=self.decay, use_warmup=True)
                self.updates = 0

        def after_step(self):
            self.updates += 1
            self.ema.update(self.model, step=self.updates)

        def before_validate(self):
            self.saved = {k: v.clone() for k, v in self.model.state_dict().items()}
            self.model.load_state_dict(self.ema.module.state_dict())

        def after_validate(self):  # also around learn.tta()'s passes (get_preds validates)
            self.model.load_state_dict(self.saved)
            self.saved = None

    callbacks, features = [StepTimer()], []
    if args.label_smoothing:
        features.append(f"LabelSmoothingCrossEntropyFlat(eps={args.label_smoothing})")
    if args.mixup:
        callbacks.append(fv.MixUp(args.mixup))
        features.append(f"MixUp({args.mixup})")
    if args.cutmix:
        callbacks.append(fv.CutMix(args.cutmix))
        features.append(f"CutMix({args.cutmix})")
    if args.random_erasing:
        features.append(f"RandomErasing(p={args.random_erasing})")
    if args.ema:
        callbacks.append(Ema(args.ema))
        features.append(f"timm ModelEmaV3({args.ema}, warm-up)")
    return callbacks, features


def main(argv):
    warnings.filterwarnings("ignore")  # torchvision built for a neighbouring torch, fastai deprecations
    args = parse_args(argv)
    try:
        import fastai
        import torch
        import torchvision
        from fastai.vision import all as fv
    except ImportError as e:
        print(f"error: cannot import fastai ({e}); run scripts/bench_deps.sh", file=sys.stderr)
        return 1
    imported = time.perf_counter()
    callbacks, features = feature_callbacks(args, fv, torch)

    torch.set_num_threads(args.threads)
    fv.set_seed(args.seed, reproducible=False)
    device = torch.device(args.device)
    dls = fv.ImageDataLoaders.from_folder(
        args.root, train="train", valid="valid", seed=args.seed,
        item_tfms=fv.Resize(args.size),  # train: random square crop, valid: centre crop
        batch_tfms=[*fv.aug_transforms(), fv.Normalize.from_stats(*fv.imagenet_stats)]
        + ([fv.RandomErasing(p=args.random_erasing, sl=0.02, sh=0.33, min_aspect=0.3)]
           if args.random_erasing else []),
        bs=args.bs, num_workers=args.workers, device=device)
    # fastai's own resnets where it has one, else torchvision's function of that name (fastai
    # has no metadata for those: vision_learner cuts the body at the pooling layer and splits
    # body | head).
    arch = getattr(fv, args.arch, None) or getattr(torchvision.models, args.arch)
    loss = fv.LabelSmoothingCrossEntropyFlat(eps=args.label_smoothing) if args.label_smoothing \
        else None
    learn = fv.vision_learner(dls, arch, pretrained=False, metrics=fv.accuracy, loss_func=loss,
                              cbs=callbacks)
    rows = []  # the Recorder's per-epoch rows, across both fits of fine_tune

    def log_row(row):
        if row and isinstance(row[0], int):
            rows.append([float(v) for v in row[1:-1]])
        print("fastai:", *row, file=sys.stderr)

    learn.logger = log_row  # keeps stdout for the one JSON line
    ready = time.perf_counter()

    with learn.no_bar():
        learn.fine_tune(args.epochs, base_lr=args.lr, freeze_epochs=args.freeze_epochs)
    if device.type == "cuda":
        torch.cuda.synchronize()
    trained = time.perf_counter()
    names = ["train_loss", "valid_loss", "accuracy"]
    epochs = [dict(zip(names, row)) for row in rows]
    accuracy = epochs[-1]["accuracy"] if epochs else None

    tta_accuracy = tta_seconds = None
    if not args.no_tta:
        with learn.no_bar():
            preds, targs = learn.tta()  # fastai v2: n=4 augmented passes, lerp with plain, beta 0.25
        tta_accuracy = float((preds.argmax(dim=1) == targs).float().mean())
        if device.type == "cuda":
            torch.cuda.synchronize()
        tta_seconds = time.perf_counter() - trained

    n_train = len(dls.train_ds)
    total_epochs = args.freeze_epochs + args.epochs
    train_seconds = trained - ready
    print(json.dumps({
        "tool": "fastai",
        "fastai": fastai.__version__,
        "torch": torch.__version__,
        "device": str(device),
        "threads": torch.get_num_threads(),
        "workers": args.workers,
        "arch": args.arch, "size": args.size, "bs": args.bs,
        "freeze_epochs": args.freeze_epochs, "epochs": args.epochs, "lr": args.lr,
        "train_images": n_train, "valid_images": len(dls.valid_ds),
        "import_seconds": round(imported - START, 3),
        "setup_seconds": round(ready - imported, 3),
        "train_seconds": round(train_seconds, 3),
        "images_per_second": round(n_train * total_epochs / train_seconds, 1),
        "accuracy": accuracy,
        "tta_accuracy": tta_accuracy,
        "tta_seconds": None if tta_seconds is None else round(tta_seconds, 3),
        "features": features,
        "steps": callbacks[0].steps,
        "step_seconds": round(callbacks[0].seconds / max(callbacks[0].steps, 1), 6),
        "epochs_table": epochs,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
