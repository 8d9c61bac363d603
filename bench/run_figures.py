"""Figures read back from an ltfit run directory, shared by the bench scripts' Python parts."""
import json
import os


def step_seconds(run):
    """Training seconds per optimizer step: summary.json's train_seconds less timing.json's
    validation and checkpoint phases, over steps.csv's rows."""
    summary = json.load(open(os.path.join(run, "summary.json")))
    phases = json.load(open(os.path.join(run, "timing.json")))["phases"]
    with open(os.path.join(run, "steps.csv")) as f:
        steps = sum(1 for _ in f) - 1
    return (summary["train_seconds"] - phases["validation"] - phases["checkpoint"]) / steps
