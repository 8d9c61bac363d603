"""torch.optim's fused AdamW and SGD as the oracle of ltfit's (train/fused_optimizer.h).

write DIR: problem.json, runs of 100 steps over three parameter groups (discriminative LRs on a
one-cycle shape, one-cycle momentum, decoupled weight decay, a grad scale of 2^k with found_inf
on some steps), solved here with torch.optim.AdamW(fused=True) / SGD(fused=True, momentum), the
scaler's grad_scale and found_inf set as torch.amp.GradScaler sets them; expected.json holds the
final parameters. compare DIR: ltfit.json (the hidden "[fused_optimizer_oracle]" test's) against
them: largest difference at most 1e-6.
"""
import json
import math
import sys

import torch

STEPS = 100
SHAPES = [[[8, 3, 3, 3], [8]], [[16, 8], [16]], [[4, 16], [4]]]


def schedule(t):
    phase = t / STEPS
    if phase < 0.3:
        peak, mom = 1e-2 * (0.04 + 0.96 * phase / 0.3), 0.95 - 0.1 * phase / 0.3
    else:
        c = 0.5 * (1 + math.cos(math.pi * (phase - 0.3) / 0.7))
        peak, mom = 1e-2 * c, 0.85 + 0.1 * (1 - c)
    return [peak / 100, peak / 10, peak], mom


def run(spec, params):
    groups = [[p.clone().requires_grad_() for p in g] for g in params]
    if spec["optimizer"] == "adamw":
        opt = torch.optim.AdamW([{"params": g} for g in groups], lr=1e-3, fused=True,
                                betas=(0.9, spec["beta2"]), eps=spec["eps"],
                                weight_decay=spec["weight_decay"])
    else:
        opt = torch.optim.SGD([{"params": g} for g in groups], lr=1e-3, momentum=0.9, fused=True,
                              weight_decay=spec["weight_decay"])
    for t in range(STEPS):
        lrs, mom = spec["lrs"][t], spec["momentum"][t]
        scale, inf = spec["grad_scale"][t], spec["found_inf"][t]
        k = 0
        for g in groups:
            for p in g:
                p.grad = torch.sin(p.detach() * float(t + 1) + float(k)) * scale
                if inf:
                    p.grad.view(-1)[0] = float("inf")
                k += 1
        for group, lr in zip(opt.param_groups, lrs):
            group["lr"] = lr
            if spec["optimizer"] == "adamw":
                group["betas"] = (mom, group["betas"][1])
            else:
                group["momentum"] = mom
        opt.grad_scale = torch.tensor(scale, dtype=torch.float32)
        opt.found_inf = torch.tensor(float(inf), dtype=torch.float32)
        opt.step()
    return [p.detach().flatten().tolist() for g in groups for p in g]


def write(directory):
    torch.manual_seed(3)
    params = [[torch.randn(s) for s in g] for g in SHAPES]
    runs = []
    for name, optimizer, wd, beta2, eps in [("adamw", "adamw", 0.1, 0.99, 1e-5),
                                          ("adamw-no-wd", "adamw", 0.0, 0.999, 1e-8),
                                          ("sgd", "sgd", 0.1, 0.99, 1e-5)]:
        spec = {"name": name, "optimizer": optimizer, "weight_decay": wd, "beta2": beta2,
                "eps": eps, "steps": STEPS, "lrs": [], "momentum": [], "grad_scale": [],
                "found_inf": []}
        for t in range(STEPS):
            lrs, mom = schedule(t)
            spec["lrs"].append(lrs)
            spec["momentum"].append(mom)
            spec["grad_scale"].append(2.0 ** (4 + t % 9))
            spec["found_inf"].append(1.0 if t % 13 == 5 else 0.0)
        spec["params"] = [[{"shape": list(p.shape), "values": p.flatten().tolist()} for p in g]
                          for g in params]
        runs.append(spec)
    expected = {spec["name"]: run(spec, params) for spec in runs}
    json.dump({"runs": runs}, open(f"{directory}/problem.json", "w"))
    json.dump(expected, open(f"{directory}/expected.json", "w"))


def compare(directory):
    expected = json.load(open(f"{directory}/expected.json"))
    got = {r["name"]: r["params"] for r in json.load(open(f"{directory}/ltfit.json"))}
    worst = 0.0
    for name, params in expected.items():
        gap = max(abs(a - b) for pe, pg in zip(params, got[name]) for a, b in zip(pe, pg))
        print(f"{name}: {STEPS} steps, largest difference from torch.optim (fused=True) {gap:.3g}")
        worst = max(worst, gap)
    if worst > 1e-6:
        sys.exit(f"FAILED: largest difference {worst:.3g} > 1e-6")
    print("fused optimizers equal torch.optim's within 1e-6")


if __name__ == "__main__":
    {"write": write, "compare": compare}[sys.argv[1]](sys.argv[2])
