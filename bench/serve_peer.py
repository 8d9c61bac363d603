"""The Python peer of `ltfit serve` (bench/serve_load.sh): what a PyTorch user would write.

FastAPI under uvicorn, one process, one worker, batch 1: torchvision's model of the export's
arch, loaded strictly from the state dict `ltfit export --out FILE.pth` wrote (FILE.json beside it
gives the classes, the head, the image size, mean and std), with ltfit's eval transform done in
Pillow and torchvision:

  - the centre square of the shorter side (offsets rounded as ltfit's crop_rect rounds them),
    resized to image_size x image_size: when shrinking, by area averaging written in torch (two
    small matrix products: OpenCV's INTER_AREA, which ltfit uses, weighs each pixel by how much
    of it a box covers; the same pixels, give or take a rounding); --resize box takes Pillow's
    BOX filter instead (docs/export.md's recipe), which takes or leaves a box's edge pixels
    whole: on the synthetic set's hard edges that moves single pixels by up to ~90 levels;
    when enlarging, Pillow's bilinear (ltfit: INTER_LINEAR); untouched when already that size;
  - JPEGs are decoded at 1/2, 1/4 or 1/8 scale with Pillow's draft() when the square still has
    image_size pixels, as ltfit decodes them with libjpeg-turbo (draft() rounds the scale down a
    little more often: a shorter side of 2*size-1 is decoded whole here, halved by ltfit);
  - EXIF orientation applied, RGB, ToTensor, Normalize(mean, std), softmax of logits / T.

POST /v1/predict takes the image as the raw body (Content-Type image/* or
application/octet-stream; ?top_k=N, default 5) and answers ltfit's shape:
{"predictions": [{"image": "body", "top": [{"class", "label", "probability"}, ...]}]};
an unreadable image gets 400 {"error", "status"}. GET /healthz answers {"status": "ok"}.

--endpoint async (default) is the usual tutorial form: an `async def` route that runs the model
on the event loop, so requests are served one at a time. --endpoint sync runs decoding and the
model in Starlette's thread pool instead (what a plain `def` route gets): decodes overlap and
forwards run concurrently, each with torch's threads.
torch's thread count is left at its default. On start it prints
"listening on http://127.0.0.1:PORT/" (--port 0: a free port).

  python3 bench/serve_peer.py --weights model.pth [--arch resnet50] [--port 0]
Needs torch, torchvision, Pillow, fastapi and uvicorn (scripts/bench_deps.sh).
"""
import argparse
import functools
import io
import json
import socket
import sys

import numpy as np
import torch
import torchvision
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from PIL import Image, ImageOps
from torch import nn
from torch.nn import functional as F
from torchvision.transforms import functional as TF


class FastaiModel(nn.Module):
    """torchvision's body (before avgpool), fastai's concat pooling and head (docs/export.md)."""

    def __init__(self, meta, arch):
        super().__init__()
        body = torchvision.models.get_model(arch, weights=None)
        self.body_names = []
        for name, module in body.named_children():
            if name == "avgpool":
                break
            self.add_module(name, module)
            self.body_names.append(name)
        c, hidden, p = 2 * meta["feature_channels"], meta["head_hidden"], meta["dropout"]
        self.head = nn.Sequential(
            nn.BatchNorm1d(c), nn.Dropout(p / 2), nn.Linear(c, hidden), nn.ReLU(inplace=True),
            nn.BatchNorm1d(hidden), nn.Dropout(p), nn.Linear(hidden, meta["num_classes"]))

    def forward(self, x):
        for name in self.body_names:
            x = getattr(self, name)(x)
        x = torch.cat([F.adaptive_max_pool2d(x, 1), F.adaptive_avg_pool2d(x, 1)], 1)
        return self.head(x.flatten(1))


def load_model(pth, arch):
    """The exported model in eval mode and its FILE.json."""
    meta_path = pth[:-len(".pth")] + ".json" if pth.endswith(".pth") else pth + ".json"
    with open(meta_path) as f:
        meta = json.load(f)
    arch = arch or meta["arch"]
    if arch != meta["arch"]:
        sys.exit(f"--arch {arch}, but {meta_path} says {meta['arch']}")
    if meta.get("stem", "imagenet") != "imagenet":
        sys.exit(f"{meta_path}: stem {meta['stem']} is not served by this peer")
    if meta["head"]["kind"] == "fastai":
        model = FastaiModel(meta, arch)
    else:  # torchvision's own classifier, fc replaced for the class count
        model = torchvision.models.get_model(arch, weights=None, num_classes=meta["num_classes"])
    model.load_state_dict(torch.load(pth, weights_only=True), strict=True)
    return model.eval(), meta


@functools.lru_cache(maxsize=64)
def area_weights(n_in, n_out):
    """[n_out, n_in]: how much of input pixel j output pixel i covers, over its width (as OpenCV's
    INTER_AREA weighs a shrink: pixels partly inside a box count for the part inside)."""
    scale = n_in / n_out
    edges = torch.arange(n_out + 1, dtype=torch.float64) * scale
    left, right = edges[:-1, None], edges[1:, None]
    j = torch.arange(n_in, dtype=torch.float64)[None, :]
    overlap = (torch.minimum(right, j + 1) - torch.maximum(left, j)).clamp(min=0)
    return (overlap / scale).float()


def shrink_area(image, size):
    """A square PIL image shrunk to size x size by area averaging, rounded to uint8 as OpenCV."""
    w = area_weights(image.width, size)
    pixels = torch.from_numpy(np.asarray(image)).float()  # [side, side, 3]
    pixels = torch.einsum("ij,jkc->ikc", w, pixels)
    pixels = torch.einsum("ij,kjc->kic", w, pixels)
    return Image.fromarray((pixels + 0.5).floor().clamp(0, 255).to(torch.uint8).numpy())


def square_image(data, size, resize="area"):
    """The image's centre square resized to size x size, as ltfit's load_square_image."""
    image = Image.open(io.BytesIO(data))
    if image.format == "JPEG":
        image.draft("RGB", (size, size))  # DCT-scaled decode, as ltfit's libjpeg-turbo path
    image = ImageOps.exif_transpose(image).convert("RGB")
    side = min(image.size)
    left = int((image.width - side) * 0.5 + 0.5)  # std::lround of a non-negative value
    top = int((image.height - side) * 0.5 + 0.5)
    image = image.crop((left, top, left + side, top + side))
    if side < size:
        return image.resize((size, size), Image.BILINEAR)
    if side > size and resize == "area":
        return shrink_area(image, size)
    return image.resize((size, size), Image.BOX) if side > size else image


class Predictor:
    """The model, its facts and its transform: bytes in, ltfit's JSON answer out."""

    def __init__(self, pth, arch, resize="area", precision="fp32"):
        self.model, self.meta = load_model(pth, arch)
        self.resize = resize
        self.bf16 = precision == "bf16"  # torch.autocast on the CPU, as `ltfit serve` does
        self.size = self.meta["eval_transform"]["crop"]
        self.mean = self.meta["normalization"]["mean"]
        self.std = self.meta["normalization"]["std"]
        self.temperature = float(self.meta.get("temperature", 1.0))

    def prepare(self, data):
        """Encoded image -> the normalised [3, size, size] input; Pillow's exceptions pass."""
        pixels = TF.to_tensor(square_image(data, self.size, self.resize))
        return TF.normalize(pixels, self.mean, self.std)

    def __call__(self, x, top_k):
        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=self.bf16):
            logits = self.model(x.unsqueeze(0)).float()
        probs = (logits / self.temperature).softmax(1)[0]
        values, labels = probs.topk(min(top_k, probs.numel()))
        top = [{"class": self.meta["classes"][k], "label": k, "probability": v}
               for v, k in zip(values.tolist(), labels.tolist())]
        return {"predictions": [{"image": "body", "top": top}]}


def error(status, reason):
    return JSONResponse({"error": reason, "status": status}, status_code=status)


def answer(predictor, request, data):
    """The JSON response to one predict request whose body is `data`."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind and not (kind.startswith("image/") or kind == "application/octet-stream"):
        return error(415, f"send an image, not '{kind}'")
    try:
        top_k = int(request.query_params.get("top_k", "5"))
    except ValueError:
        return error(400, "top_k: expected a whole number")
    if not data or top_k < 1:
        return error(400, "empty body or top_k below 1")
    try:
        x = predictor.prepare(data)
    except Exception as e:  # Pillow raises OSError, ValueError, SyntaxError, DecompressionBomb...
        return error(400, f"not a readable image: {type(e).__name__}: {e}")
    return JSONResponse(predictor(x, top_k))


def make_app(predictor, endpoint):
    app = FastAPI()

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    if endpoint == "async":
        @app.post("/v1/predict")
        async def predict(request: Request):
            return answer(predictor, request, await request.body())
    else:
        @app.post("/v1/predict")
        async def predict(request: Request):
            data = await request.body()
            return await run_in_threadpool(answer, predictor, request, data)
    return app


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", required=True, help="the .pth of ltfit export")
    parser.add_argument("--arch", help="resnet18, resnet34, resnet50 (default: FILE.json's)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081, help="0: a free port")
    parser.add_argument("--endpoint", choices=["async", "sync"], default="async")
    parser.add_argument("--resize", choices=["area", "box"], default="area",
                        help="area: OpenCV's INTER_AREA, in torch (ltfit's pixels); "
                             "box: Pillow's BOX")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: the forward under torch.autocast (CPUs with AVX-512 BF16)")
    args = parser.parse_args()
    predictor = Predictor(args.weights, args.arch, args.resize, args.precision)
    with torch.inference_mode():  # a first forward, so the first request is not the slow one
        predictor.model(torch.zeros(1, 3, predictor.size, predictor.size))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"listening on http://{args.host}:{port}/", flush=True)
    config = uvicorn.Config(make_app(predictor, args.endpoint), workers=1, log_level="warning",
                            access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
