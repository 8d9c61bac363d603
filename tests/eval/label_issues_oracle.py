#!/usr/bin/env python3
"""cleanlab's own code as the oracle of ltfit's label issues (src/eval/label_issues.cpp; Python,
tests only). Run by tests/eval/label_issues_oracle.sh:

  label_issues_oracle.py write DIR    DIR/cases.json: random cases (fixed seed)
  label_issues_oracle.py compare DIR  DIR/ltfit.json (the hidden "[.label_issues_oracle]" test's
                                      results for those cases) against cleanlab's

The cases are noisy-label simulations: true classes drawn from class weights (balanced or
imbalanced), a fraction of the given labels flipped to another class, and float32 softmax
probabilities peaked at the true class with Gaussian logit noise of varying strength. They cover
2, 3 and 10 classes, strongly imbalanced classes, a class with a single example (never pruned:
min_examples_per_class=1), a class no example is labelled with (threshold 2, never confident),
a weak model (many issues, calibration rounding at work), and 20 random shapes (2-12 classes,
50-3000 rows, random class weights, noise and model strength). cleanlab gets the float32 values
widened to float64, as ltfit widens them.

Compared for each case, all exactly (no tolerance):
  thresholds     cleanlab.count.get_confident_thresholds(labels, pred_probs)
  joint          cleanlab.count.compute_confident_joint(labels, pred_probs) (calibrated)
  issues         cleanlab.filter.find_label_issues(labels, pred_probs): the set of flagged rows
  ranking        return_indices_ranked_by="self_confidence" and "normalized_margin"
  filters        find_label_issues(labels, pred_probs, filter_by=F) for each of cleanlab's
                 filters F: prune_by_noise_rate, prune_by_class, both, confident_learning,
                 predicted_neq_given (the set; the multi-label cases too)

and for the multi-label cases (multi-hot labels with flipped entries, sigmoid probabilities; 1 to
12 classes, a class no image has; never a class every image has, which cleanlab refuses as a
one-class problem while ltfit goes on):
  issues         cleanlab.multilabel_classification.filter.find_label_issues (the set)
  ranking        the same with return_indices_ranked_by= both rankings
  classes        which classes flagged each issue: find_multilabel_issues_per_class

cleanlab sorts with np.argsort, whose default sort is not stable: on a tie (two calibrated
counts with the same fractional part in round_preserving_sum, equal margins, equal scores) the
order depends on NumPy's build and the CPU (its SIMD sorting networks). ltfit breaks every tie
by row index, which is what np.argsort(kind="stable") does. So cleanlab runs twice: with
np.argsort made stable, where everything must be identical, and as installed, where a case may
differ only if it differs nowhere under the stable sort (a tie decided the other way); those
cases are counted and listed, not failed.

Exits 0 when everything agrees, 1 otherwise (listing each difference), 77 when cleanlab cannot be
imported.
"""
import contextlib
import functools
import json
import sys
import warnings
from pathlib import Path

try:
    import numpy as np
    from cleanlab.count import compute_confident_joint, get_confident_thresholds
    from cleanlab.filter import find_label_issues
    from cleanlab.multilabel_classification import filter as multilabel_filter
except ImportError as e:  # the environment decides
    print(f"SKIPPED: {e} (pip install cleanlab)")
    sys.exit(77)

SEED = 20261210
RANKINGS = ["self_confidence", "normalized_margin"]
FILTERS = ["prune_by_noise_rate", "prune_by_class", "both", "confident_learning",
           "predicted_neq_given"]


def simulate(rng, n, weights, flip, strength):
    """True classes by `weights`, `flip` of the given labels changed, softmax of noisy logits."""
    k = len(weights)
    w = np.asarray(weights, dtype=float)
    true = rng.choice(k, size=n, p=w / w.sum())
    logits = rng.normal(0.0, 1.0, size=(n, k))
    logits[np.arange(n), true] += strength
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    given = true.copy()
    flipped = rng.random(n) < flip
    given[flipped] = (true[flipped] + rng.integers(1, k, size=flipped.sum())) % k
    return probs, given


def make_cases():
    rng = np.random.default_rng(SEED)
    specs = [  # name, n, class weights, flipped fraction, logit strength
        ("binary", 200, [1, 1], 0.05, 2.5),
        ("binary imbalanced", 400, [9, 1], 0.08, 3.0),
        ("three classes", 300, [1, 1, 1], 0.05, 3.0),
        ("ten classes", 1000, [1] * 10, 0.05, 4.0),
        ("ten imbalanced", 1200, [2.0 ** -i for i in range(10)], 0.1, 3.5),
        ("weak model", 500, [1, 2, 3, 4], 0.2, 1.0),
        ("strong model", 600, [1] * 6, 0.03, 7.0),
        ("large", 5000, [1] * 10, 0.05, 3.0),
    ]
    cases = []
    for name, n, weights, flip, strength in specs:
        probs, labels = simulate(rng, n, weights, flip, strength)
        cases.append((name, probs, labels))
    for i in range(20):  # random shapes: 2-12 classes, 50-3000 rows, any weights and noise
        k = int(rng.integers(2, 13))
        weights = rng.uniform(0.05, 1.0, size=k)
        probs, labels = simulate(rng, int(rng.integers(50, 3001)), weights,
                                 rng.uniform(0.0, 0.25), rng.uniform(0.5, 6.0))
        cases.append((f"random {i}", probs, labels))
    probs, labels = simulate(rng, 150, [1, 1, 1, 1], 0.1, 2.5)  # class 3 given to one row only
    labels[labels == 3] = 0
    labels[7] = 3
    cases.append(("a class with one example", probs, labels))
    probs, labels = simulate(rng, 150, [1, 1, 1, 1], 0.1, 2.5)  # class 2 given to no row
    labels[labels == 2] = 1
    cases.append(("a class with no example", probs, labels))
    return cases


def simulate_multi_label(rng, n, rates, flip, strength):
    """Multi-hot true labels at `rates`, `flip` of the entries changed, sigmoid of noisy logits."""
    rates = np.asarray(rates)
    true = (rng.random((n, len(rates))) < rates).astype(np.int64)
    logits = strength * (2 * true - 1) + rng.normal(0.0, 1.0, size=true.shape)
    probs = (1 / (1 + np.exp(-logits))).astype(np.float32)
    given = np.where(rng.random(true.shape) < flip, 1 - true, true)
    given[0] = 0  # no class that every image has: cleanlab refuses a one-class problem
    return probs, given


def make_multi_label_cases():
    rng = np.random.default_rng(SEED + 1)
    cases = [("multi-label three classes", *simulate_multi_label(rng, 300, [0.3, 0.5, 0.2], 0.03, 3.0)),
             ("multi-label weak model", *simulate_multi_label(rng, 400, [0.4] * 5, 0.1, 1.0))]
    for i in range(6):
        k = int(rng.integers(1, 13))
        probs, labels = simulate_multi_label(rng, int(rng.integers(50, 2001)),
                                             rng.uniform(0.02, 0.7, size=k),
                                             rng.uniform(0.0, 0.15), rng.uniform(0.5, 5.0))
        cases.append((f"multi-label random {i}", probs, labels))
    probs, labels = simulate_multi_label(rng, 200, [0.3, 0.3, 0.3], 0.05, 2.5)
    labels[:, 1] = 0  # a class no image has
    cases.append(("multi-label class without images", probs, labels))
    return cases


def write_cases(out):
    cases = [{"name": name, "rows": int(p.shape[0]), "classes": int(p.shape[1]),
              "probs": [float(v) for v in p.ravel()], "labels": [int(v) for v in y.ravel()],
              "multi_label": y.ndim == 2}
             for name, p, y in make_cases() + make_multi_label_cases()]
    (out / "cases.json").write_text(json.dumps(cases))
    print(f"wrote {len(cases)} cases to {out / 'cases.json'}")


@contextlib.contextmanager
def stable_argsort():
    """np.argsort(..., kind="stable") for the code run inside (cleanlab calls np.argsort)."""
    original = np.argsort
    np.argsort = functools.partial(original, kind="stable")
    try:
        yield
    finally:
        np.argsort = original


def cleanlab_results(p, y):
    out = {"thresholds": get_confident_thresholds(y, p), "joint": compute_confident_joint(y, p),
           "issues": set(np.flatnonzero(find_label_issues(y, p, n_jobs=1)).tolist())}
    for rank_by in RANKINGS:
        out[rank_by] = find_label_issues(y, p, return_indices_ranked_by=rank_by, n_jobs=1)
    out["filters"] = {f: sorted(np.flatnonzero(find_label_issues(y, p, filter_by=f, n_jobs=1))
                                .tolist()) for f in FILTERS}
    return out


def multi_label_results(p, y):
    labels = [np.flatnonzero(row).tolist() for row in y]
    per_class = multilabel_filter.find_multilabel_issues_per_class(labels, p, n_jobs=1)
    out = {"issues": set(np.flatnonzero(per_class.any(axis=1)).tolist()),
           "classes": {str(i): np.flatnonzero(per_class[i]).tolist()
                       for i in np.flatnonzero(per_class.any(axis=1))}}
    for rank_by in RANKINGS:
        out[rank_by] = multilabel_filter.find_label_issues(
            labels, p, return_indices_ranked_by=rank_by, n_jobs=1)
    out["filters"] = {}
    for f in FILTERS:
        try:
            out["filters"][f] = sorted(np.flatnonzero(multilabel_filter.find_label_issues(
                labels, p, filter_by=f, n_jobs=1)).tolist())
        except ValueError:  # cleanlab refuses a class column of one value (predicted_neq_given)
            out["filters"][f] = None
    return out


def differences(where, got, want):
    found = []
    if "classes" in want and got.get("classes", {}) != want["classes"]:
        found.append(f"{where}: flagged classes differ")
    if "thresholds" in want and not np.array_equal(np.asarray(got["thresholds"]),
                                                   want["thresholds"]):
        diff = np.max(np.abs(np.asarray(got["thresholds"]) - want["thresholds"]))
        found.append(f"{where}: thresholds differ by up to {diff:.3g}")
    if "joint" in want and not np.array_equal(np.asarray(got["joint"]), want["joint"]):
        found.append(f"{where}: confident joint\n ltfit {got['joint']}\n"
                     f" cleanlab {want['joint'].tolist()}")
    issues = set(got["issues"]["self_confidence"])
    if issues != want["issues"]:
        found.append(f"{where}: issues: only ltfit {sorted(issues - want['issues'])}, "
                     f"only cleanlab {sorted(want['issues'] - issues)}")
    for rank_by in RANKINGS:
        if got["issues"][rank_by] != want[rank_by].tolist():
            found.append(f"{where}: {rank_by} ranking differs")
    for f in FILTERS:
        if want["filters"][f] is not None and got["filters"][f] != want["filters"][f]:
            ours, theirs = set(got["filters"][f]), set(want["filters"][f])
            found.append(f"{where}: filter_by={f}: only ltfit {sorted(ours - theirs)}, "
                         f"only cleanlab {sorted(theirs - ours)}")
    return found


def compare_case(case, got, failures, tie_cases):
    where = case["name"]
    p = np.asarray(case["probs"], dtype=np.float32).astype(np.float64)
    p = p.reshape(case["rows"], case["classes"])
    y = np.asarray(case["labels"], dtype=np.int64)
    results = cleanlab_results
    if case.get("multi_label"):
        y, results = y.reshape(p.shape), multi_label_results
    with stable_argsort():
        stable = results(p, y)
    failures += differences(where + " (stable argsort)", got, stable)
    as_installed = differences(where, got, results(p, y))
    if as_installed and not differences(where, got, stable):
        tie_cases.append("; ".join(d.splitlines()[0] for d in as_installed))
    print(f"{where}: N={case['rows']} K={case['classes']} issues={len(stable['issues'])}")
    return len(stable["issues"])


def compare(out):
    cases = json.loads((out / "cases.json").read_text())
    results = json.loads((out / "ltfit.json").read_text())
    if len(results) != len(cases):
        print(f"FAIL: {len(results)} results for {len(cases)} cases")
        return 1
    failures, tie_cases, total = [], [], 0
    for case, got in zip(cases, results):
        total += compare_case(case, got, failures, tie_cases)
    for t in tie_cases:
        print("TIE ORDER:", t)
    for f in failures:
        print("FAIL:", f)
    verdict = "FAIL" if failures else "OK"
    print(f"{verdict}: {len(cases)} cases, {total} issues; thresholds, confident joints, issue "
          f"sets, both rankings and the {len(FILTERS)} filters' issue sets {'differ' if failures else 'identical to cleanlab'} with a "
          f"stable argsort; as installed, {len(cases) - len(tie_cases)} of {len(cases)} cases "
          f"identical, {len(tie_cases)} differ only by NumPy's order of ties")
    return 1 if failures else 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "compare"):
        print(__doc__)
        return 2
    warnings.filterwarnings("ignore")  # cleanlab warns about classes with too few examples
    out = Path(sys.argv[2])
    if sys.argv[1] == "write":
        write_cases(out)
        return 0
    return compare(out)


if __name__ == "__main__":
    sys.exit(main())
