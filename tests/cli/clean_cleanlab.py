#!/usr/bin/env python3
"""cleanlab as the oracle of `ltfit clean` end to end (Python, tests only).

  clean_cleanlab.py PROBABILITIES.csv FLIPPED.txt SUGGESTIONS.csv [--per-split]

Runs cleanlab.filter.find_label_issues (its defaults, ranked by self_confidence) on the
probabilities ltfit wrote (rows without probabilities left out, as ltfit leaves them out); with
--per-split once per split (ltfit's `--judge per_split`), the issues of both merged by
self-confidence (ties: file order),
prints cleanlab's and ltfit's recall of the flipped labels among the top 2 x (flipped)
suggestions, and exits 0 when both flag the same files in the same order, 1 otherwise, 77 when
cleanlab (or numpy) is not installed.
"""
import csv
import sys

try:
    import numpy as np
    from cleanlab.filter import find_label_issues
except ImportError:
    sys.exit(77)


def main():
    probs_path, flipped_path, suggestions_path = sys.argv[1:4]
    with open(probs_path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    classes = [h[len("prob_"):] for h in header[3:]]
    rows = [r for r in rows if all(v != "" for v in r[3:])]
    paths = [r[0] for r in rows]
    labels = np.array([classes.index(r[2]) for r in rows])
    probs = np.array([[float(v) for v in r[3:]] for r in rows])
    splits = np.array([r[1] for r in rows])
    groups = [splits == s for s in ("train", "valid")] if "--per-split" in sys.argv[4:] else [
        np.ones(len(rows), dtype=bool)]
    issues = []
    for group in groups:
        at = np.flatnonzero(group)
        if len(at) == 0:
            continue
        ranked = find_label_issues(labels[at], probs[at], return_indices_ranked_by="self_confidence")
        issues += [int(at[i]) for i in ranked]
    issues.sort(key=lambda i: (probs[i, labels[i]], i))
    theirs = [paths[i] for i in issues]
    with open(suggestions_path, newline="", encoding="utf-8") as f:
        ours = [r["path"] for r in csv.DictReader(f) if r["problem"] == "mislabeled"]
    flipped = set(open(flipped_path, encoding="utf-8").read().split())
    top = 2 * len(flipped)
    recall_theirs = len(flipped & set(theirs[:top])) / len(flipped)
    recall_ours = len(flipped & set(ours[:top])) / len(flipped)
    print(f"recall at {top}: cleanlab {recall_theirs:.3f}, ltfit {recall_ours:.3f}; "
          f"issues: cleanlab {len(theirs)}, ltfit {len(ours)}")
    if theirs != ours:
        print("different issues or order:\n cleanlab " + repr(theirs) + "\n ltfit    " + repr(ours))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
