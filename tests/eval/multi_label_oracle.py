#!/usr/bin/env python3
"""fastai's and scikit-learn's own code as the oracle of ltfit's multi-label figures
(src/eval/multi_label_metrics.cpp; Python, tests only). Run by tests/eval/multi_label_oracle.sh:

  multi_label_oracle.py write DIR    DIR/cases.json: random cases (fixed seed)
  multi_label_oracle.py compare DIR  DIR/ltfit.json (the hidden "[.multi_label_oracle]" test's
                                     figures for those cases) against the references

The cases (N up to 200 images, C up to 12 classes) have float32 probabilities, continuous or on a
grid (ties), values exactly at a class's threshold (float32 of it: > and >= then disagree),
thresholds such as 0.3 that float32 cannot hold, one threshold for all classes or one per class,
classes without a positive or without a negative, images with no label, and C = 1.

References, each fed the same float32 probabilities and deciding as its code does:
  accuracy_multi  fastai.metrics.accuracy_multi(inp, targ, thresh, sigmoid=False) on torch tensors
                  (per-class thresholds as a float32 tensor tiled to the flattened input). It
                  returns a float32 mean, so ltfit's double must round to it; the exact fraction
                  of its comparison `(inp > thresh) == targ` is held to 1e-9 too.
  F-beta          fastai's F1ScoreMulti / FBetaMulti objects (reset, accumulate, value; sigmoid
                  off) for samples and macro, and scikit-learn's fbeta_score on torch's
                  `p >= thresh` for samples, macro, micro, weighted and beta 1, 2, 0.5. With
                  per-class thresholds the fastai objects get the decisions (0/1 at thresh 0.5):
                  their `if self.thresh:` cannot take a tensor. C = 1: scikit-learn would see an
                  [N,1] array as binary, so labels=[1] (and a padded empty column for
                  "samples") keep its multilabel meaning, and fastai's objects are left out.
  per class       precision_recall_fscore_support(average=None), average_precision_score of every
                  class (0 without a positive), mAP = average_precision_score(average='macro')
                  over the classes with a positive (0 when none has).
  loss            ltfit's training loss (logit(p), smoothing 0.1, balanced pos_weight) against
                  fastai's BCEWithLogitsLossFlat(pos_weight, flatten=False), float32, to 1e-6.
  tuned           each class's F1 at ltfit's tuned threshold (p > t, as ltfit predicts) must be at
                  least the best F1 of any threshold precision_recall_curve offers (p >= t); the
                  same F1 with p >= t; a class without a positive keeps 0.5.

Exits 0 when every figure agrees within 1e-9, 1 otherwise (listing each difference), 77 when
fastai, scikit-learn or torch cannot be imported.
"""
import json
import sys
import types
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", category=FutureWarning)  # torch.jit, imported by fastai
try:
    import numpy as np
    import torch
    from fastai.metrics import F1ScoreMulti, FBetaMulti, accuracy_multi
    from fastai.torch_core import to_detach
    from sklearn import metrics as skm
except ImportError as e:  # the environment decides
    print(f"SKIPPED: {e} (pip install fastai scikit-learn)")
    sys.exit(77)

TOL = 1e-9
BETAS = [1.0, 2.0, 0.5]
AVERAGES = ["samples", "macro", "micro", "weighted"]
SEED = 20261204


# ----------------------------------------------------------------------------- writing cases

def make_probs(rng, n, k, kind):
    if kind == "grid":  # multiples of 0.05: many ties, 0.5 and 0.25 among them
        return (np.round(rng.random((n, k)) * 20) / 20).astype(np.float32)
    if kind == "few":  # five distinct values per class
        return rng.choice(np.array([0.1, 0.3, 0.5, 0.7, 0.9], np.float32), size=(n, k))
    return rng.random((n, k), dtype=np.float32)


def make_case(rng, n, k, kind, per_class, edges):
    p = make_probs(rng, n, k, kind)
    rate = rng.uniform(0.05, 0.6, size=k)
    y = (rng.random((n, k)) < rate).astype(np.uint8)
    choices = [0.5, 0.3, 0.35, 0.7, 0.2, 0.45, 0.55, 0.123456789]
    t = rng.choice(choices, size=k) if per_class else np.full(k, rng.choice(choices))
    if edges and n >= 4:
        at = rng.random((n, k)) < 0.12  # exactly at the threshold as float32
        p[at] = np.broadcast_to(t.astype(np.float32), (n, k))[at]
        y[:, 0] = 0  # a class without a positive
        y[0, :] = 0  # an image with no label...
        p[0, :] = 0.01  # ...and none predicted
        if k > 2:
            y[:, 2] = 1  # a class every image has
            p[1, 1], p[2, 1] = 0.5, np.nextafter(np.float32(0.5), np.float32(1))  # neighbours
    return {"rows": n, "classes": k, "probs": [float(v) for v in p.ravel()],
            "targets": [int(v) for v in y.ravel()], "thresholds": [float(v) for v in t],
            "betas": BETAS}


def write_cases(out):
    rng = np.random.default_rng(SEED)
    specs = [  # rows, classes, probabilities, per-class thresholds, edges
        (1, 3, "continuous", False, False), (7, 1, "grid", False, False),
        (9, 1, "continuous", True, True), (40, 2, "continuous", True, True),
        (60, 5, "grid", False, True), (120, 7, "continuous", True, True),
        (200, 12, "grid", True, True), (200, 12, "continuous", False, True),
        (150, 4, "few", True, True), (90, 3, "continuous", False, False),
        (33, 6, "grid", True, False), (180, 10, "few", False, True),
    ]
    cases = [make_case(rng, *spec) for spec in specs]
    none = make_case(rng, 10, 3, "continuous", False, False)  # no positive at all
    none["targets"] = [0] * 30
    cases.append(none)
    (out / "cases.json").write_text(json.dumps(cases))
    print(f"wrote {len(cases)} cases to {out / 'cases.json'}")


# ----------------------------------------------------------------------------- comparing

class Diffs:
    def __init__(self):
        self.failures, self.largest, self.count = [], {}, 0

    def close(self, kind, where, got, want, tol=TOL):
        self.count += 1
        d = abs(float(got) - float(want))
        self.largest[kind] = max(self.largest.get(kind, 0.0), d)
        if not d <= tol:
            self.failures.append(f"{where} {kind}: ltfit {got!r}, reference {want!r} (diff {d:.3g})")

    def expect(self, ok, message):
        self.count += 1
        if not ok:
            self.failures.append(message)


def fastai_value(metric, pred, targ):
    """A fastai AccumMetric on one batch, as a Learner drives it."""
    metric.reset()
    metric.accumulate(types.SimpleNamespace(pred=pred, y=targ, to_detach=to_detach))
    return metric.value


def check_accuracy(diffs, where, c, pt, yt, t32):
    n, k = pt.shape
    single = bool((t32 == t32[0]).all())
    thresh = float(c["thresholds"][0]) if single else t32.repeat(n)  # flattened [N*C] layout
    exact = ((pt.reshape(-1) > thresh) == yt.reshape(-1).bool()).sum().item() / (n * k)
    diffs.close("accuracy_multi (exact fraction)", where, c["got"]["accuracy_multi"], exact)
    ours = np.float32(c["got"]["accuracy_multi"])
    theirs = np.float32(accuracy_multi(pt, yt, thresh=thresh, sigmoid=False).item())
    diffs.expect(abs(ours - theirs) <= np.spacing(theirs),
                 f"{where} fastai accuracy_multi {theirs!r}, ltfit {ours!r} as float32")


def sklearn_fbeta(y, d, beta, average):
    if y.shape[1] > 1:
        return skm.fbeta_score(y, d, beta=beta, average=average)
    if average == "samples":  # an empty column keeps every image's F and makes it multilabel
        pad = np.zeros_like(y)
        return skm.fbeta_score(np.hstack([y, pad]), np.hstack([d, pad]), beta=beta, average=average)
    return skm.fbeta_score(y[:, 0], d[:, 0], beta=beta, average=average, labels=[1])


def check_fbeta(diffs, where, c, pt, yt, t32, y, d):
    for row in c["got"]["fbeta"]:
        beta = row["beta"]
        for average in AVERAGES:
            diffs.close(f"F{beta:g} {average} (sklearn)", where, row[average],
                        sklearn_fbeta(y, d, beta, average))
    if y.shape[1] == 1:
        return
    single = bool((t32 == t32[0]).all())
    pred, thresh = (pt, c["thresholds"][0]) if single else (torch.from_numpy(d).float(), 0.5)
    for average in ["samples", "macro"]:
        f1 = fastai_value(F1ScoreMulti(thresh=thresh, sigmoid=False, average=average), pred, yt)
        diffs.close(f"F1 {average} (fastai F1ScoreMulti)", where, c["got"][f"f1_{average}"], f1)
        for row in c["got"]["fbeta"]:
            fb = fastai_value(FBetaMulti(row["beta"], thresh=thresh, sigmoid=False, average=average),
                              pred, yt)
            diffs.close(f"F{row['beta']:g} {average} (fastai FBetaMulti)", where, row[average], fb)


def check_classes(diffs, where, c, p, y, d):
    labels = {"labels": [1]} if y.shape[1] == 1 else {}
    yy, dd = (y[:, 0], d[:, 0]) if y.shape[1] == 1 else (y, d)
    prec, rec, f1, support = skm.precision_recall_fscore_support(yy, dd, average=None, **labels)
    for j, got in enumerate(c["got"]["per_class"]):
        at = f"{where} class {j}"
        diffs.close("precision", at, got["precision"], prec[j])
        diffs.close("recall", at, got["recall"], rec[j])
        diffs.close("f1", at, got["f1"], f1[j])
        diffs.close("AP", at, got["ap"], skm.average_precision_score(y[:, j], p[:, j]))
        diffs.expect(got["support"] == support[j], f"{at} support {got['support']} vs {support[j]}")
        diffs.expect(got["threshold"] == c["thresholds"][j], f"{at} threshold {got['threshold']}")
    cols = np.flatnonzero(y.any(axis=0))
    mean_ap = skm.average_precision_score(y[:, cols], p[:, cols], average="macro") if len(cols) else 0
    diffs.close("mAP", where, c["got"]["map"], mean_ap)


def check_tuned(diffs, where, c, pt, y):
    for j, t in enumerate(c["got"]["tuned"]):
        at = f"{where} class {j}"
        if not y[:, j].any():
            diffs.expect(t == 0.5, f"{at}: tuned {t} without a positive (expected 0.5)")
            continue
        precision, recall, _ = skm.precision_recall_curve(y[:, j], pt[:, j].numpy())
        s = precision + recall
        best = np.max(np.where(s > 0, 2 * precision * recall / np.where(s > 0, s, 1), 0))
        above = skm.f1_score(y[:, j], (pt[:, j] > t).numpy())
        diffs.close("tuned F1 short of the curve's best", at, min(0.0, above - best), 0.0)
        diffs.close("tuned F1, p >= t vs p > t", at, skm.f1_score(y[:, j], (pt[:, j] >= t).numpy()),
                    above)


def check_loss(diffs, where, c, pt, yt):
    """ltfit's training loss on logit(p): fastai's BCEWithLogitsLossFlat with torch's pos_weight
    (negatives / positives, 1 for a class without a positive or without a negative; flatten=False
    so it broadcasts over the classes) on targets smoothed to (1 - 0.1)·y + 0.1/K."""
    if c["rows"] == 0:
        return
    from fastai.losses import BCEWithLogitsLossFlat
    logits = torch.logit(pt.clamp(1e-6, 1 - 1e-6))
    n, k = yt.shape
    pos = yt.sum(0)
    pw = torch.where((pos > 0) & (pos < n), (n - pos) / pos.clamp_min(1), torch.ones_like(pos))
    smoothed = yt * (1 - 0.1) + 0.1 / k
    want = BCEWithLogitsLossFlat(pos_weight=pw, flatten=False)(logits, smoothed).item()
    diffs.close("BCE loss (pos_weight, smoothing)", where, c["got"]["loss"], want, tol=1e-6)


def check_case(diffs, i, c):
    n, k = c["rows"], c["classes"]
    p = np.array(c["probs"], dtype=np.float32).reshape(n, k)
    y = np.array(c["targets"], dtype=np.uint8).reshape(n, k)
    where = f"case {i} ({n}x{k})"
    pt, yt = torch.from_numpy(p), torch.from_numpy(y.astype(np.float32))
    t32 = torch.tensor(c["thresholds"], dtype=torch.float32)  # torch rounds a Python float so
    d = (pt >= t32).numpy().astype(np.uint8)  # AccumMetric: pred >= thresh
    check_accuracy(diffs, where, c, pt, yt, t32)
    check_fbeta(diffs, where, c, pt, yt, t32, y, d)
    check_classes(diffs, where, c, p, y, d)
    check_tuned(diffs, where, c, pt, y)
    check_loss(diffs, where, c, pt, yt)


def compare(out):
    cases = json.loads((out / "cases.json").read_text())
    got = json.loads((out / "ltfit.json").read_text())
    if len(got) != len(cases):
        print(f"FAIL: ltfit wrote {len(got)} results for {len(cases)} cases")
        return 1
    diffs = Diffs()
    for i, (case, mine) in enumerate(zip(cases, got)):
        check_case(diffs, i, dict(case, got=mine))
    width = max(len(kind) for kind in diffs.largest)
    for kind, d in sorted(diffs.largest.items()):
        print(f"  largest |ltfit - reference| {kind:<{width}} {d:.3g}")
    if diffs.failures:
        print("\n".join(diffs.failures[:60]))
        print(f"FAIL: {len(diffs.failures)} of {diffs.count} comparisons differ (tolerance {TOL})")
        return 1
    print(f"{len(cases)} cases, {diffs.count} comparisons: accuracy_multi, F-beta, per-class "
          f"P/R/F1/AP, mAP and tuned thresholds agree with fastai and scikit-learn within {TOL}")
    return 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "compare"):
        print(__doc__)
        return 2
    warnings.filterwarnings("ignore")  # scikit-learn's zero_division and no-positive warnings
    out = Path(sys.argv[2])
    if sys.argv[1] == "write":
        write_cases(out)
        return 0
    return compare(out)


if __name__ == "__main__":
    sys.exit(main())
