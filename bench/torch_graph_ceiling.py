#!/usr/bin/env python3
"""What a training step costs on this GPU in PyTorch, three ways, on tensors already on the device.

The ceiling for ltfit's GPU work: at the study's batch of 16 a fast GPU waits on kernel launches
and on the host. For torchvision's ResNet-34 (random init, 224 px, channels_last, fused AdamW,
autocast in the given precision) it times:
  eager+sync   the usual loop, reading loss.item() every step (as a progress bar does);
  eager        the same loop, reading the loss once at the end;
  graph        forward, loss, backward and the optimizer step captured once as a CUDA graph
               (torch.cuda.graph, capturable AdamW, static input buffers) and replayed.
Prints one JSON line per (precision, batch) with images/s of each and the ratios.

  python3 bench/torch_graph_ceiling.py --batches 16,64 --precisions fp16,bf16 --steps 200
"""
import argparse
import json
import time

import torch
import torchvision


def make(batch, size, dtype):
    model = torchvision.models.resnet34(num_classes=2).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True, capturable=True)
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
    x = torch.randn(batch, 3, size, size, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 2, (batch,), device="cuda")
    return model, opt, scaler, x, y


def step(model, opt, scaler, x, y, dtype):
    with torch.autocast("cuda", dtype=dtype):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=False)
    return loss


def timed(fn, steps):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def eager(batch, size, dtype, steps, warmup, sync):
    model, opt, scaler, x, y = make(batch, size, dtype)

    def one():
        loss = step(model, opt, scaler, x, y, dtype)
        if sync:
            loss.item()

    timed(one, warmup)
    return batch * steps / timed(one, steps)


def graphed(batch, size, dtype, steps, warmup):
    model, opt, _, x, y = make(batch, size, dtype)
    # A capturable step needs no host-side scaler logic: a fixed loss scale for fp16 (the
    # graph's point is the launch cost, the same kernels either way), none for bf16.
    scale = 1024.0 if dtype == torch.float16 else 1.0
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            opt.zero_grad(set_to_none=False)
            with torch.autocast("cuda", dtype=dtype):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            (loss * scale).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=False)
    with torch.cuda.graph(graph):
        with torch.autocast("cuda", dtype=dtype, cache_enabled=False):
            static_loss = torch.nn.functional.cross_entropy(model(x), y)
        (static_loss * scale).backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
    timed(graph.replay, warmup)
    rate = batch * steps / timed(graph.replay, steps)
    return rate, float(static_loss)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="16,64")
    parser.add_argument("--precisions", default="fp16,bf16")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for p in args.precisions.split(","):
        for b in (int(v) for v in args.batches.split(",")):
            row = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "precision": p, "batch": b, "size": args.size, "steps": args.steps}
            row["eager_sync_ips"] = eager(b, args.size, dtypes[p], args.steps, args.warmup, True)
            row["eager_ips"] = eager(b, args.size, dtypes[p], args.steps, args.warmup, False)
            row["graph_ips"], row["graph_last_loss"] = graphed(b, args.size, dtypes[p],
                                                                args.steps, args.warmup)
            row["graph_over_eager"] = row["graph_ips"] / row["eager_ips"]
            row["eager_over_eager_sync"] = row["eager_ips"] / row["eager_sync_ips"]
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                              for k, v in row.items()}), flush=True)


if __name__ == "__main__":
    main()
