#!/usr/bin/env python3
"""PyTorch as the oracle of ltfit's temperature scaling and expected calibration error
(src/eval/calibration.cpp; Python, tests only). Run by tests/eval/calibration_oracle.sh:

  calibration_oracle.py write DIR    DIR/cases.json: logit and probability sets (fixed seed)
  calibration_oracle.py compare DIR  DIR/ltfit.json (the hidden "[.][calibration_oracle]" test's
                                     figures for those sets) against the references

Fits: float32 logits of well-calibrated sets (labels drawn from softmax(logits), or multi-label
from sigmoid(logits)) scaled to be over-confident (x3, x2.5) or under-confident (x0.5, x0.4),
left as they are (T ~ 1), with 2, 10 and 50 classes, a small noisy set, and multi-label sets.
The reference is the textbook fit (as Guo et al.'s github.com/gpleiss/temperature_scaling):
an nn.Parameter temperature, torch.optim.LBFGS on nn.CrossEntropyLoss (multi-label:
nn.BCEWithLogitsLoss) of logits / T, in float64; lr 1, max_iter 100 and a strong Wolfe line search,
because gpleiss's literal lr 0.01, max_iter 50 without a line search stops short of the minimum
on some of these sets (printed for information). A golden-section search over log T checks that
the reference is the minimum. ltfit's T must be within 1e-3 of it, and its NLL there within 1e-6
of the reference's; its NLL at its own T within 1e-9 of torch's at that T.

ECE: Guo's _ECELoss binning (float32 torch.linspace(0, 1, 16) edges, c in (lower, upper],
compared in float32) with ltfit's one addition, a confidence of exactly 0 in the first bin; sums
in float64. Single-label confidence = top-class probability, correct = argmax == label;
multi-label = every probability against its 0/1 target (torchmetrics' BinaryCalibrationError's
definition). Cases: the fits' probabilities at T = 1 and at ltfit's T (softmax / sigmoid of the
float32 logits / T in float32, as ltfit's evaluator computes them), and probability sets placed
exactly on every bin edge, one float32 step either side of it, at 0 and at 1. ECE within 1e-9,
bin counts equal.

Exits 0 when every figure agrees, 1 otherwise (listing each difference), 77 when torch cannot
be imported.
"""
import json
import math
import sys
from pathlib import Path

try:
    import torch
    from torch import nn, optim
except ImportError as e:  # the environment decides
    print(f"SKIPPED: {e} (pip install torch)")
    sys.exit(77)

SEED = 20261205
N_BINS = 15
TOL_T = 1e-3
TOL_NLL = 1e-6
TOL_EXACT = 1e-9


def calibrated_logits(g, n, classes, multi, factor):
    logits = torch.randn(n, classes, generator=g, dtype=torch.float64) * 2.0
    if multi:
        targets = torch.bernoulli(torch.sigmoid(logits), generator=g)
    else:
        targets = torch.multinomial(torch.softmax(logits, 1), 1, True, generator=g).squeeze(1)
    return (logits * factor).float(), targets


def fit_cases(g):
    specs = [  # name, images, classes, multi-label, factor
        ("2 classes overconfident x3", 600, 2, False, 3.0),
        ("10 classes overconfident x3", 600, 10, False, 3.0),
        ("10 classes underconfident x0.5", 600, 10, False, 0.5),
        ("2 classes underconfident x0.4", 600, 2, False, 0.4),
        ("10 classes calibrated", 600, 10, False, 1.0),
        ("50 classes overconfident x2", 400, 50, False, 2.0),
        ("3 classes small noisy set", 20, 3, False, 1.7),
        ("multi-label 6 classes overconfident x2.5", 300, 6, True, 2.5),
        ("multi-label 4 classes underconfident x0.6", 300, 4, True, 0.6),
    ]
    cases = []
    for name, n, classes, multi, factor in specs:
        logits, targets = calibrated_logits(g, n, classes, multi, factor)
        cases.append({"name": name, "multi_label": multi, "rows": n, "classes": classes,
                      "logits": logits.flatten().tolist(),
                      "targets": targets.double().flatten().tolist()})
    return cases


def edge_probabilities():
    edges = torch.linspace(0, 1, N_BINS + 1)
    below = torch.nextafter(edges, torch.zeros_like(edges)).clamp(min=0.0)
    above = torch.nextafter(edges, torch.ones_like(edges)).clamp(max=1.0)
    return torch.cat([edges, below, above, torch.tensor([0.0, 1.0, 0.5])])


def ece_cases(g):
    values = edge_probabilities()
    multi = values.view(-1, 1).repeat(1, 3)  # [M,3]
    multi_targets = torch.bernoulli(torch.full(multi.shape, 0.5), generator=g)
    # Single-label rows [c, 1 - c] with c >= 0.5 on and around the upper half's edges.
    top = values[values >= 0.5]
    single = torch.stack([top, 1 - top], 1)
    single_targets = torch.randint(0, 2, (len(top),), generator=g)
    random_probs = torch.softmax(torch.randn(500, 10, generator=g) * 3, 1)
    random_targets = torch.randint(0, 10, (500,), generator=g)
    cases = []
    for name, probs, targets, is_multi in [
        ("multi-label probabilities on every edge", multi, multi_targets, True),
        ("single-label confidences on the upper edges", single, single_targets, False),
        ("single-label random softmax", random_probs, random_targets, False),
    ]:
        cases.append({"name": name, "multi_label": is_multi, "rows": probs.shape[0],
                      "classes": probs.shape[1], "probs": probs.flatten().tolist(),
                      "targets": targets.double().flatten().tolist()})
    return cases


def tensors(case, key):
    x = torch.tensor(case[key], dtype=torch.float64).view(case["rows"], -1)
    targets = torch.tensor(case["targets"], dtype=torch.float64).view(case["rows"], -1)
    if not case["multi_label"]:
        targets = targets.squeeze(1).long()
    return x.float(), targets


def criterion(multi):
    return nn.BCEWithLogitsLoss() if multi else nn.CrossEntropyLoss()


def nll(logits64, targets, t, multi):
    with torch.no_grad():
        return criterion(multi)(logits64 / t, targets.double() if multi else targets).item()


def textbook_fit(logits64, targets, multi, lr=1.0, max_iter=100, line_search="strong_wolfe",
                 start=1.0, dtype=torch.float64):
    """The textbook temperature fit: nn.Parameter T, optim.LBFGS, the NLL of logits / T."""
    temperature = nn.Parameter(torch.ones(1, dtype=dtype) * start)
    optimizer = optim.LBFGS([temperature], lr=lr, max_iter=max_iter, line_search_fn=line_search)
    crit = criterion(multi)
    z = logits64.to(dtype)
    y = targets.to(dtype) if multi else targets

    def closure():
        optimizer.zero_grad()
        loss = crit(z / temperature, y)
        loss.backward()
        return loss

    optimizer.step(closure)
    return temperature.item()


def golden_log_t(logits64, targets, multi, lo=-7.0, hi=7.0, steps=200):
    phi = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    for _ in range(steps):
        c, d = b - phi * (b - a), a + phi * (b - a)
        if nll(logits64, targets, math.exp(c), multi) < nll(logits64, targets, math.exp(d), multi):
            b = d
        else:
            a = c
    return math.exp((a + b) / 2)


def guo_ece(probs32, targets, multi):
    """Guo's _ECELoss binning (plus 0 in the first bin), float64 sums; ECE and bin counts."""
    if multi:
        conf = probs32.flatten()
        acc = targets.flatten().gt(0.5).double()
    else:
        conf, pred = probs32.max(1)
        acc = pred.eq(targets).double()
    bounds = torch.linspace(0, 1, N_BINS + 1)
    ece, counts = 0.0, []
    for k, (lower, upper) in enumerate(zip(bounds[:-1], bounds[1:])):
        in_bin = conf.gt(lower.item()) * conf.le(upper.item())
        if k == 0:
            in_bin = in_bin | conf.eq(0)
        counts.append(int(in_bin.sum()))
        if counts[-1] > 0:
            prop = in_bin.double().mean().item()
            gap = conf[in_bin].double().mean().item() - acc[in_bin].mean().item()
            ece += abs(gap) * prop
    return ece, counts


def probabilities(logits32, t, multi):
    z = logits32 / t
    return torch.sigmoid(z) if multi else torch.softmax(z, 1)


def compare_fit(case, mine, bad):
    logits32, targets = tensors(case, "logits")
    multi = case["multi_label"]
    z = logits32.double()
    t_ref = textbook_fit(z, targets, multi)
    t_golden = golden_log_t(z, targets, multi)
    t_gpleiss = textbook_fit(z, targets, multi, lr=0.01, max_iter=50, line_search=None,
                             start=1.5, dtype=torch.float32)
    t = mine["temperature"]
    checks = [
        ("T vs the textbook LBFGS fit", t, t_ref, TOL_T),
        ("textbook fit vs golden-section minimum", t_ref, t_golden, TOL_T),
        ("NLL at ltfit's T vs at the textbook T", nll(z, targets, t, multi),
         nll(z, targets, t_ref, multi), TOL_NLL),
        ("NLL before", mine["nll_before"], nll(z, targets, 1.0, multi), TOL_EXACT),
        ("NLL after", mine["nll_after"], nll(z, targets, t, multi), TOL_EXACT),
        ("ECE before", mine["ece_before"], guo_ece(probabilities(logits32, 1.0, multi), targets,
                                                   multi)[0], TOL_EXACT),
        ("ECE after", mine["ece_after"], guo_ece(probabilities(logits32, t, multi), targets,
                                                 multi)[0], TOL_EXACT),
    ]
    for what, got, want, tol in checks:
        diff = abs(got - want)
        if not diff <= tol:
            bad.append(f"{case['name']}: {what}: ltfit {got!r}, reference {want!r} (|d| {diff:.3g})")
    print(f"  {case['name']}: T ltfit {t:.6f}, textbook {t_ref:.6f} (|d| {abs(t - t_ref):.2e}), "
          f"golden {t_golden:.6f}, gpleiss lr 0.01 {t_gpleiss:.6f}; NLL {mine['nll_before']:.5f} "
          f"-> {mine['nll_after']:.5f}, ECE {mine['ece_before']:.5f} -> {mine['ece_after']:.5f}")
    return abs(t - t_ref), abs(nll(z, targets, t, multi) - nll(z, targets, t_ref, multi))


def compare(work):
    cases = json.loads((work / "cases.json").read_text())
    mine = json.loads((work / "ltfit.json").read_text())
    bad = []
    if len(mine["fits"]) != len(cases["fits"]) or len(mine["eces"]) != len(cases["eces"]):
        print("ltfit.json does not answer every case")
        return 1
    print("temperature fits:")
    diffs = [compare_fit(c, m, bad) for c, m in zip(cases["fits"], mine["fits"])]
    print("ECE on bin edges and random sets:")
    for case, m in zip(cases["eces"], mine["eces"]):
        probs32, targets = tensors(case, "probs")
        ece, counts = guo_ece(probs32, targets, case["multi_label"])
        if abs(m["ece"] - ece) > TOL_EXACT:
            bad.append(f"{case['name']}: ECE ltfit {m['ece']!r}, Guo {ece!r}")
        if m["counts"] != counts:
            bad.append(f"{case['name']}: bin counts ltfit {m['counts']}, Guo {counts}")
        print(f"  {case['name']}: ECE {m['ece']:.6f} (Guo {ece:.6f}), counts {counts}")
    print(f"max |T - T_textbook| {max(d[0] for d in diffs):.2e}, "
          f"max |NLL difference| {max(d[1] for d in diffs):.2e}")
    for line in bad:
        print("MISMATCH", line)
    print(f"{len(cases['fits'])} fits and {len(cases['eces'])} ECE sets: "
          + ("all agree" if not bad else f"{len(bad)} mismatches"))
    return 1 if bad else 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "compare"):
        print(__doc__)
        return 2
    work = Path(sys.argv[2])
    if sys.argv[1] == "write":
        g = torch.Generator().manual_seed(SEED)
        cases = {"fits": fit_cases(g), "eces": ece_cases(g)}
        (work / "cases.json").write_text(json.dumps(cases))
        return 0
    return compare(work)


if __name__ == "__main__":
    sys.exit(main())
