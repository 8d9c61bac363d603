#!/usr/bin/env python3
"""fastai's side of bench/labels_side_by_side.sh: the same fine-tune as ltfit on a CSV or
file-name-pattern dataset, single- or multi-label (Python, benchmarks only).

    python3 bench/fastai_labels.py --root DIR --layout csv|pattern [--multi-label]
        [--size 64] [--bs 32] [--epochs 3] [--freeze-epochs 1] [--lr 2e-3] [--seed 42]
        [--valid-pct 0.2] [--workers N]

csv:     ImageDataLoaders.from_df(labels.csv read with keep_default_na=False, DIR,
                                  fn_col="fname", label_col="labels", valid_col="is_valid",
                                  label_delim=" " with --multi-label) (from_csv itself reads an
                                  empty label set as NaN, which MultiCategorize cannot split)
pattern: ImageDataLoaders.from_name_re(DIR, get_image_files(DIR), r"^(.+)_\\d+\\.jpg$",
                                       valid_pct, seed)
then vision_learner(resnet18, pretrained=False, metrics=accuracy_multi (multi-label: with
F1ScoreMulti(samples) and APScoreMulti) or accuracy), fine_tune(epochs, lr, freeze_epochs), with
Resize(size), aug_transforms() and ImageNet Normalize (as bench/fastai_train.py). Prints one JSON
line: the last epoch's metrics, train seconds and seconds per optimizer step.
Exit codes: 0 done, 1 fastai missing, 2 bad usage.
"""
import argparse
import json
import os
import sys
import time
import warnings


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--layout", choices=["csv", "pattern"], required=True)
    p.add_argument("--multi-label", action="store_true")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--bs", type=int, default=32)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--freeze-epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--valid-pct", type=float, default=0.2)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    try:
        import fastai
        import torch
        from fastai.vision import all as fv
    except ImportError as e:
        print(f"error: cannot import fastai ({e}); run scripts/bench_deps.sh", file=sys.stderr)
        return 1
    torch.set_num_threads(os.cpu_count())
    fv.set_seed(args.seed, reproducible=False)
    common = dict(item_tfms=fv.Resize(args.size), bs=args.bs, num_workers=args.workers,
                  batch_tfms=[*fv.aug_transforms(), fv.Normalize.from_stats(*fv.imagenet_stats)])
    if args.layout == "csv":
        # from_csv's pandas turns an empty label set into NaN, which fastai's MultiCategorize
        # cannot split: read the CSV keeping empty cells as "" and hand fastai the frame.
        import pandas as pd
        df = pd.read_csv(os.path.join(args.root, "labels.csv"), keep_default_na=False)
        df["is_valid"] = df["is_valid"].astype(str).str.lower().isin(["true", "1"])
        dls = fv.ImageDataLoaders.from_df(
            df, args.root, fn_col="fname", label_col="labels", valid_col="is_valid",
            label_delim=" " if args.multi_label else None, **common)
    else:
        files = fv.get_image_files(args.root)
        dls = fv.ImageDataLoaders.from_name_re(args.root, files, r"^(.+)_\d+\.jpg$",
                                               valid_pct=args.valid_pct, seed=args.seed, **common)
    if args.multi_label:
        metrics = [fv.accuracy_multi, fv.F1ScoreMulti(average="samples"), fv.APScoreMulti()]
        names = ["train_loss", "valid_loss", "accuracy_multi", "f1_samples", "map"]
    else:
        metrics, names = [fv.accuracy], ["train_loss", "valid_loss", "accuracy"]

    class StepTimer(fv.Callback):
        order, seconds, steps = -100, 0.0, 0

        def before_train(self):
            self.t0 = time.perf_counter()

        def after_train(self):
            self.seconds += time.perf_counter() - self.t0

        def after_step(self):
            self.steps += 1

    timer = StepTimer()
    learn = fv.vision_learner(dls, fv.resnet18, pretrained=False, metrics=metrics, cbs=[timer])
    rows = []
    learn.logger = lambda row: rows.append(row) if row and isinstance(row[0], int) else None
    start = time.perf_counter()
    with learn.no_bar():
        learn.fine_tune(args.epochs, base_lr=args.lr, freeze_epochs=args.freeze_epochs)
    seconds = time.perf_counter() - start
    last = dict(zip(names, [float(v) for v in rows[-1][1:-1]])) if rows else {}
    print(json.dumps({"tool": "fastai", "fastai": fastai.__version__, "layout": args.layout,
                      "multi_label": args.multi_label, "classes": list(map(str, dls.vocab)),
                      "train_images": len(dls.train_ds), "valid_images": len(dls.valid_ds),
                      "train_seconds": round(seconds, 3), "steps": timer.steps,
                      "step_seconds": round(timer.seconds / max(timer.steps, 1), 6), **last}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
