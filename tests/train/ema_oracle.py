#!/usr/bin/env python3
"""timm's own ModelEmaV3 as the oracle for tests/train/ema_test.cpp (Python, tests only).

  ema_oracle.py CASES.json

Each case holds a decay, the warm-up flag, a model's state (parameters w, b; buffers rm, a
float, and n, an int64) at the start and after each of N optimizer steps, and the average ltfit
computed. The script loads timm/utils/model_ema.py by itself (it needs only torch), builds a
module with that state, makes ModelEmaV3(module, decay, use_warmup), and for t = 1..N loads the
step's state and calls update(module, step=t), as timm's train.py does. Exits 0 when every
case matches ltfit's to 1e-7, 1 otherwise, 77 when timm or torch is missing.
"""
import json
import sys

from timm_source import load_timm_file

timm_ema = load_timm_file("utils/model_ema.py", "timm_model_ema")
import torch  # noqa: E402 - after the check above


class Model(torch.nn.Module):
    def __init__(self, shapes):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(shapes["w"]))
        self.b = torch.nn.Parameter(torch.zeros(shapes["b"]))
        self.register_buffer("rm", torch.zeros(shapes["rm"]))
        self.register_buffer("n", torch.zeros(shapes["n"], dtype=torch.int64))


def state(values, shapes):
    out = {}
    for name in ("w", "b", "rm", "n"):
        dtype = torch.int64 if name == "n" else torch.float32
        out[name] = torch.tensor(values[name], dtype=dtype).reshape(shapes[name])
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    failed = 0
    for case in cases:
        shapes = case["shapes"]
        model = Model(shapes)
        model.load_state_dict(state(case["steps"][0], shapes))
        ema = timm_ema.ModelEmaV3(model, decay=case["decay"], use_warmup=case["warmup"])
        for t, values in enumerate(case["steps"][1:], start=1):
            model.load_state_dict(state(values, shapes))
            ema.update(model, step=t)
        ours = state(case["ema"], shapes)
        worst = 0.0
        for name, value in ema.module.state_dict().items():
            worst = max(worst, float((value.double() - ours[name].double()).abs().max()))
        ok = worst <= 1e-7
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {case['name']}: largest difference {worst:.3g}")
    print(f"{len(cases) - failed} of {len(cases)} cases match timm's ModelEmaV3")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
