"""Writes torchvision weight files and the logits torchvision computes with them.

Test oracle only (never used by the product). For each arch: <out>/<arch>.pth (torch.save of a
randomly initialised torchvision model's state_dict, the same zip format torchvision publishes),
and <out>/<arch>.expected.json (not <arch>.json, which `predict --weights <arch>.pth` would read
as the file's export description): the input, the expected logits and the eval transform of
each of the arch's published weights (file name, resize, crop, interpolation, mean, std). Every registered
arch (`ltfit models`) must be listed in ARCHS: the parity test fails for a registered arch
without its files.

For one arch per family (GRADIENT_ARCHS), also the gradients of one training step
(write_gradients).

<out>/eval/: images (PNG and JPEG, shrunk, enlarged, square, odd sizes) and, in cases.json, what
torchvision's eval transform (Resize with an interpolation, CenterCrop) makes of each, as RGB
bytes, from Pillow.

    python3 tests/parity/make_parity.py OUT_DIR [arch ...]
"""
import json
import os
import sys

import torch
import torchvision


ARCHS = ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
         "wide_resnet50_2", "convnext_tiny", "convnext_small", "efficientnet_b0",
         "efficientnet_b1", "efficientnet_b2", "efficientnet_b3", "efficientnet_v2_s", "mobilenet_v3_large", "mobilenet_v3_small",
         "regnet_y_800mf", "regnet_y_1_6gf", "swin_t", "vit_b_16"]

# torchvision's ViT takes only its own image size; the other archs any.
INPUT_SIDE = {"vit_b_16": 224}


def randomise_norms(model: torch.nn.Module) -> None:
    """Non-trivial normalisation parameters and statistics, and ConvNeXt layer scales away from
    their 1e-6 init, so that eval-mode parity tests every one of them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
            elif isinstance(m, torch.nn.LayerNorm):  # torchvision's LayerNorm2d derives from it
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
        for name, p in model.named_parameters():
            if name.endswith("layer_scale"):
                p.uniform_(0.1, 1.0)
        # A ResNet's residual branches each end in a BatchNorm; at weight ~1 the 50 blocks of a
        # ResNet-152 add up to logits of 1e8, where an absolute 1e-4 tolerance means nothing.
        # Scaled down (as zero_init_residual does, but not to zero) the logits stay O(1).
        # ViT's class token and head start at zero: random, so that parity tests them.
        if isinstance(model, torchvision.models.VisionTransformer):
            model.class_token.normal_(0, 0.02)
            model.heads.head.weight.normal_(0, 0.02)
            model.heads.head.bias.uniform_(-0.1, 0.1)
        # MobileNetV3's classifier Linears start at N(0, 0.01): logits of 1e-2, where an absolute
        # 1e-4 tolerance checks little. Wider weights give logits of order 1.
        if isinstance(model, torchvision.models.MobileNetV3):
            for m in model.classifier:
                if isinstance(m, torch.nn.Linear):
                    m.weight.normal_(0, 3 / m.in_features ** 0.5)
                    m.bias.uniform_(-0.1, 0.1)
        for m in model.modules():
            if isinstance(m, (torchvision.models.resnet.BasicBlock,
                              torchvision.models.resnet.Bottleneck)):
                (m.bn3 if hasattr(m, "bn3") else m.bn2).weight.uniform_(0.1, 0.3)


# The image `predict --weights` is checked on end to end (written by write_eval_transform_cases).
PREDICT_IMAGE = "1203x887.jpg"


def weight_presets(arch: str, model: torch.nn.Module, out: str) -> list:
    """The eval transform of every weight file torchvision publishes for `arch`, and the logits
    `model` gives PREDICT_IMAGE through that transform (PIL image in, as torchvision's own
    inference recipe)."""
    from PIL import Image

    image = Image.open(os.path.join(out, "eval", PREDICT_IMAGE)).convert("RGB")
    presets = []
    for weights in torchvision.models.get_model_weights(arch):
        t = weights.transforms()
        logits = None
        if t.crop_size[0] == INPUT_SIDE.get(arch, t.crop_size[0]):  # ViT: its own size only
            with torch.no_grad():
                logits = model(t(image).unsqueeze(0))[0].tolist()
        presets.append({"file": os.path.basename(weights.url), "resize": t.resize_size[0],
                        "crop": t.crop_size[0], "interpolation": t.interpolation.value,
                        "mean": list(t.mean), "std": list(t.std),
                        "image": PREDICT_IMAGE, "image_logits": logits})
    return presets


# (width, height, format): shrunk a little and a lot, enlarged, square, a side equal to the crop.
EVAL_IMAGES = [(517, 301, "png"), (240, 333, "png"), (100, 77, "png"), (256, 256, "png"),
               (224, 300, "png"), (1203, 887, "jpg"), (333, 250, "jpg")]
# (resize, crop, interpolation): the registry's, and odd ones.
EVAL_TRANSFORMS = [(256, 224, "bilinear"), (232, 224, "bilinear"), (236, 224, "bilinear"),
                   (320, 300, "bicubic"), (255, 224, "bicubic"), (274, 240, "bicubic"),
                   (289, 288, "bicubic"), (384, 384, "bilinear")]


def write_eval_transform_cases(out: str) -> None:
    import numpy as np
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, InterpolationMode, PILToTensor, Resize

    folder = os.path.join(out, "eval")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    cases = []
    for w, h, fmt in EVAL_IMAGES:
        # Smooth gradients plus noise and a hard edge: ringing, clipping and rounding all show.
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        base = np.stack([255 * x / w, 255 * y / h, 128 + 100 * np.sin(x / 7 + y / 11)], axis=-1)
        base[: h // 3, : w // 3] = [255, 0, 255]
        pixels = np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype(np.uint8)
        name = f"{w}x{h}.{fmt}"
        path = os.path.join(folder, name)
        if fmt == "jpg":
            Image.fromarray(pixels).save(path, quality=90)
        else:
            Image.fromarray(pixels).save(path)
        image = Image.open(path).convert("RGB")
        for resize, crop, interpolation in EVAL_TRANSFORMS:
            mode = InterpolationMode(interpolation)
            transform = Compose([Resize(resize, interpolation=mode), CenterCrop(crop), PILToTensor()])
            expected = transform(image).permute(1, 2, 0).contiguous().numpy()  # HWC RGB
            rgb = f"{name}-{resize}-{crop}-{interpolation}.rgb"
            expected.tofile(os.path.join(folder, rgb))
            cases.append({"image": name, "resize": resize, "crop": crop,
                          "interpolation": interpolation, "expected": rgb})
    with open(os.path.join(folder, "cases.json"), "w") as f:
        json.dump(cases, f)
    print("eval transforms:", len(cases), "cases", flush=True)


# One arch per family: a training step's gradients are checked for these.
GRADIENT_ARCHS = ["resnet18", "convnext_tiny", "efficientnet_b0", "efficientnet_v2_s",
                  "mobilenet_v3_small", "regnet_y_800mf", "swin_t", "vit_b_16"]


def write_gradients(arch: str, out: str) -> None:
    """<out>/<arch>.grads.pth: the gradient of every parameter after one training-mode forward
    (BatchNorm on batch statistics; stochastic depth and dropout off, as they are random) and
    cross-entropy backward, from <out>/<arch>.pth; <out>/<arch>.train.json: input, labels, loss."""
    # none to drop, or (swin) no keyword for it: the StochasticDepth modules' p is zeroed below
    no_depth_drop = arch.startswith(("resnet", "regnet", "vit", "mobilenet", "swin"))
    kwargs = {} if no_depth_drop else {"stochastic_depth_prob": 0.0}
    model = getattr(torchvision.models, arch)(weights=None, **kwargs)
    model.load_state_dict(torch.load(os.path.join(out, f"{arch}.pth"), weights_only=True))
    for m in model.modules():
        if isinstance(m, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
            m.p = 0.0
    model.train()
    generator = torch.Generator().manual_seed(1)
    side = INPUT_SIDE.get(arch, 64)
    x = torch.randn(4, 3, side, side, generator=generator)
    labels = torch.tensor([1, 7, 3, 999])
    loss = torch.nn.functional.cross_entropy(model(x), labels)
    loss.backward()
    torch.save({name: p.grad for name, p in model.named_parameters()},
               os.path.join(out, f"{arch}.grads.pth"))
    with open(os.path.join(out, f"{arch}.train.json"), "w") as f:
        json.dump({"input_shape": list(x.shape), "input": x.flatten().tolist(),
                   "labels": labels.tolist(), "loss": loss.item()}, f)


def write_vit_resampling(model, arch: str, out: str) -> None:
    """<out>/<arch>.resample.json: timm's resample_abs_pos_embed of the model's position
    embeddings to a 10x8 and a 24x24 grid (skipped when timm is not installed)."""
    try:
        from timm.layers import resample_abs_pos_embed
    except ImportError:
        print("timm not installed: ViT resampling oracle skipped", flush=True)
        return
    pos = model.encoder.pos_embedding.detach()
    grids = {}
    for h, w in [(10, 8), (24, 24)]:
        grids[f"{h}x{w}"] = resample_abs_pos_embed(pos, (h, w), num_prefix_tokens=1).flatten().tolist()
    with open(os.path.join(out, f"{arch}.resample.json"), "w") as f:
        json.dump(grids, f)


def main() -> None:
    out = sys.argv[1]
    archs = sys.argv[2:] or ARCHS
    os.makedirs(out, exist_ok=True)
    write_eval_transform_cases(out)
    torch.manual_seed(0)
    for arch in archs:
        side = INPUT_SIDE.get(arch, 64)
        x = torch.randn(2, 3, side, side)
        model = getattr(torchvision.models, arch)(weights=None)
        randomise_norms(model)
        model.eval()
        torch.save(model.state_dict(), os.path.join(out, f"{arch}.pth"))
        with torch.no_grad():
            logits = model(x)
        with open(os.path.join(out, f"{arch}.expected.json"), "w") as f:
            json.dump({"input_shape": list(x.shape), "input": x.flatten().tolist(),
                       "logits_shape": list(logits.shape), "logits": logits.flatten().tolist(),
                       "presets": weight_presets(arch, model, out)}, f)
        if arch in GRADIENT_ARCHS:
            write_gradients(arch, out)
        if arch.startswith("vit"):
            write_vit_resampling(model, arch, out)
        print(arch, "ok", flush=True)


if __name__ == "__main__":
    main()
