"""ltfit's ONNX export against ONNX itself and ONNX Runtime.

write DIR: the cases (cases.json) and their inputs (in_<case>_<n>.bin, float32 [B,3,H,W]), for one
    arch of each family, both heads, the CIFAR stem, multi-label, batches 1 and 7, two sizes with
    --dynamic-size, later opsets, and weights in external data. The hidden Catch2 test "[onnx_oracle]" builds each model,
    exports it to DIR/<case>.onnx and writes ltfit's logits for each input (out_<case>_<n>.bin).
compare DIR: onnx.checker.check_model(full_check=True) passes on every file; ONNX Runtime's
    logits equal ltfit's within 1e-4 on every input; the graph's inputs, outputs and metadata are
    what the export promises.
"""
import json
import os
import sys

import numpy as np

CASES = [
    # id, arch, head, stem, multi_label, image size, dynamic sizes, opset
    ("resnet18_linear", "resnet18", "linear", "imagenet", False, 64, [], 17),
    ("resnet18_fastai", "resnet18", "fastai", "imagenet", False, 64, [], 17),
    ("resnet50_cifar_stem", "resnet50", "linear", "cifar", False, 32, [], 17),
    ("resnet18_multi_label", "resnet18", "fastai", "imagenet", True, 64, [], 17),
    ("resnet18_dynamic", "resnet18", "linear", "imagenet", False, 64, [96, 80], 17),
    ("resnet18_external_data", "resnet18", "linear", "imagenet", False, 64, [], 17),
    ("convnext_tiny_linear", "convnext_tiny", "linear", "imagenet", False, 64, [], 17),
    ("convnext_tiny_fastai_opset20", "convnext_tiny", "fastai", "imagenet", False, 64, [96], 20),
    ("efficientnet_b0_linear", "efficientnet_b0", "linear", "imagenet", False, 64, [], 17),
    ("efficientnet_b0_fastai", "efficientnet_b0", "fastai", "imagenet", False, 64, [96], 18),
    ("efficientnet_v2_s_linear", "efficientnet_v2_s", "linear", "imagenet", False, 64, [], 17),
    ("efficientnet_v2_s_fastai", "efficientnet_v2_s", "fastai", "imagenet", False, 64, [96], 18),
    ("mobilenet_v3_large_linear", "mobilenet_v3_large", "linear", "imagenet", False, 64, [], 17),
    ("mobilenet_v3_small_fastai", "mobilenet_v3_small", "fastai", "imagenet", False, 64, [96], 18),
    ("regnet_y_800mf_linear", "regnet_y_800mf", "linear", "imagenet", False, 64, [], 17),
    ("regnet_y_800mf_fastai", "regnet_y_800mf", "fastai", "imagenet", False, 64, [96], 18),
    ("swin_t_linear", "swin_t", "linear", "imagenet", False, 100, [], 17),
    ("swin_t_fastai_opset20", "swin_t", "fastai", "imagenet", False, 64, [], 20),
    ("vit_b_16_linear", "vit_b_16", "linear", "imagenet", False, 64, [], 17),
    ("vit_b_16_fastai", "vit_b_16", "fastai", "imagenet", False, 64, [], 20),
]
BATCHES = [1, 7]
CLASSES = 5


def write(work):
    rng = np.random.default_rng(0)
    cases = []
    for cid, arch, head, stem, multi, size, dynamic, opset in CASES:
        inputs = []
        for n, (batch, side) in enumerate([(b, size) for b in BATCHES] + [(3, s) for s in dynamic]):
            x = rng.standard_normal((batch, 3, side, side), dtype=np.float32)
            name = f"in_{cid}_{n}.bin"
            x.tofile(os.path.join(work, name))
            inputs.append({"file": name, "shape": list(x.shape)})
        cases.append({"id": cid, "arch": arch, "head": head, "stem": stem, "multi_label": multi,
                      "classes": CLASSES, "image_size": size, "dynamic_size": bool(dynamic),
                      "opset": opset, "inputs": inputs,
                      # weights over 1 MB go to external data, as a model over 2 GB's do
                      "external_data_above": (1 << 20) if cid.endswith("external_data") else None})
    with open(os.path.join(work, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


def compare(work):
    import onnx
    import onnxruntime as ort

    with open(os.path.join(work, "cases.json")) as f:
        cases = json.load(f)
    failures = []
    for case in cases:
        path = os.path.join(work, case["id"] + ".onnx")
        onnx.checker.check_model(path, full_check=True)
        model = onnx.load(path, load_external_data=False)  # as written, external data kept apart
        assert model.opset_import[0].version == case["opset"], model.opset_import
        meta = {p.key: p.value for p in model.metadata_props}
        assert meta["arch"] == case["arch"], meta
        [inp] = model.graph.input
        dims = [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim]
        side = "height" if case["dynamic_size"] else case["image_size"]
        assert dims[0] == "batch" and dims[1] == 3 and dims[2] == side, dims
        # every initializer is a tensor of the model, named as in its state dict
        names = {i.name for i in model.graph.initializer}
        assert any(n.endswith(".weight") for n in names), sorted(names)[:5]
        external = [i.name for i in model.graph.initializer if i.data_location == 1]
        if case["external_data_above"]:
            assert external and os.path.exists(path + ".data"), "no external data"
            assert os.path.getsize(path) < case["external_data_above"], os.path.getsize(path)
        else:
            assert not external, external
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        worst = 0.0
        for item in case["inputs"]:
            x = np.fromfile(os.path.join(work, item["file"]), dtype=np.float32).reshape(item["shape"])
            ours = np.fromfile(os.path.join(work, "out_" + item["file"][len("in_"):]),
                               dtype=np.float32).reshape(item["shape"][0], case["classes"])
            [theirs] = session.run(["logits"], {"input": x})
            diff = float(np.abs(theirs - ours).max())
            worst = max(worst, diff)
            if not diff <= 1e-4:
                failures.append(f"{case['id']} {item['shape']}: max |ORT - ltfit| = {diff:.3g}")
        print(f"{case['id']}: opset {case['opset']}, {len(case['inputs'])} inputs, "
              f"max |ORT - ltfit| = {worst:.2e}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"all {len(cases)} exports pass onnx.checker (full_check) and match ONNX Runtime")


if __name__ == "__main__":
    {"write": write, "compare": compare}[sys.argv[1]](sys.argv[2])
