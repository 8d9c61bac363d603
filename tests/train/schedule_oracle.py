#!/usr/bin/env python3
"""The anchors' own schedulers as the oracle of ltfit's LR at every step of a real run.

  schedule_oracle.py KIND RUN_DIR [key=value ...]

RUN_DIR is an `ltfit train` run (one stage, recipe one_cycle) with train.schedule KIND; the keys
are the run's schedule settings (lr, steps_per_epoch, and the KIND's own). The LR ltfit used at
each optimizer step (steps.csv, lr_0) is compared with what the anchor's code gives, stepped as
its own training loop steps it:

  cosine     timm's CosineLRScheduler(t_initial=steps, lr_min, warmup_t, warmup_lr_init,
             t_in_epochs=False), step_update(s) before step s (timm/train.py);
  flat_cos   fastai's Learner.fit_flat_cos(epochs, lr, div_final, pct_start) on a learner with
             the same batches per epoch: the LRs its ParamScheduler set (recorder.hps['lr']);
  multistep  torch's MultiStepLR(milestones, gamma), stepped at each epoch end;
  plateau    torch's ReduceLROnPlateau(mode, factor, patience, cooldown, min_lr), stepped at each
             epoch end with the run's own validation loss (epochs.csv).

Exits 0 when every step agrees within 1e-6 relative (steps.csv keeps 9 significant digits; fastai
computes its phase position in float32), 1 otherwise, 77 when the anchor is not installed.
"""
import csv
import sys


def skip(message):
    print(f"SKIPPED: {message}")
    sys.exit(77)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def optimizer(torch, lr):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def cosine(settings, steps):
    import torch
    from timm_source import load_timm_package_module
    cosine_lr = load_timm_package_module("scheduler", "cosine_lr")
    opt = optimizer(torch, settings["lr"])
    sched = cosine_lr.CosineLRScheduler(
        opt, t_initial=steps, lr_min=settings["min_lr"], warmup_t=int(settings["warmup_steps"]),
        warmup_lr_init=settings["warmup_lr"], t_in_epochs=False)
    out = []
    for s in range(steps):
        sched.step_update(num_updates=s)
        out.append(opt.param_groups[0]["lr"])
    return out


def flat_cos(settings, steps):
    try:
        import fastai.callback.progress  # noqa: F401 - patches Learner.no_bar
        import fastai.callback.schedule  # noqa: F401 - patches Learner.fit_flat_cos
        import fastai.test_utils as tu
    except ImportError as e:
        skip(f"fastai is not installed ({e}); scripts/bench_deps.sh installs it")
    per_epoch = int(settings["steps_per_epoch"])
    learn = tu.synth_learner(n_trn=per_epoch)
    with learn.no_bar(), learn.no_logging():
        learn.fit_flat_cos(steps // per_epoch, lr=settings["lr"], div_final=settings["div_final"],
                           pct_start=settings["pct_start"])
    return [float(v) for v in learn.recorder.hps["lr"]]


def per_epoch_lrs(epoch_lrs, steps, per_epoch):
    return [epoch_lrs[s // per_epoch] for s in range(steps)]


def multistep(settings, steps):
    import torch
    per_epoch = int(settings["steps_per_epoch"])
    opt = optimizer(torch, settings["lr"])
    milestones = [int(m) for m in str(settings["milestones"]).split(",")]
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones,
                                                 gamma=settings["gamma"])
    epoch_lrs = []
    for _ in range(steps // per_epoch):
        epoch_lrs.append(opt.param_groups[0]["lr"])
        sched.step()
    return per_epoch_lrs(epoch_lrs, steps, per_epoch)


def plateau(settings, steps, epochs):
    import torch
    per_epoch = int(settings["steps_per_epoch"])
    opt = optimizer(torch, settings["lr"])
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode="min", factor=settings["factor"], patience=int(settings["patience"]),
        cooldown=int(settings["cooldown"]), min_lr=settings["min_lr"])
    epoch_lrs = []
    for row in epochs:
        epoch_lrs.append(opt.param_groups[0]["lr"])
        sched.step(float(row["valid_loss"]))
    return per_epoch_lrs(epoch_lrs, steps, per_epoch)


def main():
    kind, run = sys.argv[1], sys.argv[2]
    settings = {}
    for arg in sys.argv[3:]:
        key, value = arg.split("=", 1)
        settings[key] = value if key == "milestones" else float(value)
    steps_rows = read_csv(f"{run}/steps.csv")
    epochs = read_csv(f"{run}/epochs.csv")
    got = [float(r["lr_0"]) for r in steps_rows]
    steps = len(got)
    if kind == "plateau":
        want = plateau(settings, steps, epochs)
    else:
        want = {"cosine": cosine, "flat_cos": flat_cos, "multistep": multistep}[kind](settings,
                                                                                      steps)
    if len(want) != steps:
        print(f"FAIL {kind}: the anchor gave {len(want)} LRs for the run's {steps} steps")
        return 1
    worst = max(abs(g - w) / max(abs(w), 1e-30) for g, w in zip(got, want))
    distinct = len({round(w, 12) for w in want})
    print(f"{kind}: {steps} steps, {distinct} distinct LRs, largest relative difference "
          f"{worst:.2e}")
    if worst > 1e-6:
        for s, (g, w) in enumerate(zip(got, want)):
            mark = "  <-" if abs(g - w) > 1e-6 * max(abs(w), 1e-30) else ""
            print(f"  step {s:3d}: ltfit {g:.9g}  anchor {w:.9g}{mark}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
