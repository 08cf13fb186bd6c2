"""Images per second of one training step (forward, backward, SGD update), fp32 vs bf16 autocast + channels_last.

Models: ResNet-9 at width 16 on 28x28 grey images (the `book` scale), full-width ResNet-9 and ResNet-56 on
32x32 colour images (the `gpu`/`paper` scales). Each row also gives the step's achieved FLOP/s as a fraction of
the device's matrix-multiply roofline, measured in the same run with a large matmul in the same precision.

    python benchmarks/train_throughput.py [--device cpu|cuda] [--batch 128] [--steps 5]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from fibook.forgetting.cost import training_flops_per_image
from fibook.forgetting.models import build_model, init_sigma_w_
from fibook.notebook import markdown_table
from fibook.provenance import device_name

CASES = [("resnet9", 16, 1, 28), ("resnet9", 64, 3, 32), ("resnet56", 16, 3, 32)]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_roofline(device, dtype, n=2048, reps=5) -> float:
    """FLOP/s of an n x n matrix product in ``dtype``: the ceiling a convnet step is compared against."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    sync(device)
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - t)


def images_per_second(arch, width, channels, size, batch, device, bf16, steps) -> tuple[float, int]:
    model = build_model(arch, width, channels)
    init_sigma_w_(model, 1.0)
    model.to(device)
    x = torch.randn(batch, channels, size, size, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    flops = batch * training_flops_per_image(arch, width, "fashion_mnist" if channels == 1 else "cifar10")
    if bf16:
        model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return batch * steps / (time.perf_counter() - t), flops


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    peaks = {False: matmul_roofline(device, torch.float32), True: matmul_roofline(device, torch.bfloat16)}
    rows = []
    for arch, width, channels, size in CASES:
        ips = {}
        for bf16 in (False, True):
            steps = args.steps if device.type == "cuda" or width <= 16 and arch == "resnet9" else 2
            ips[bf16], flops = images_per_second(arch, width, channels, size, args.batch, device, bf16, steps)
        per_image = flops / args.batch
        rows.append({
            "model": f"{arch} width {width}, {channels}x{size}x{size}",
            "GFLOP / image (fwd+bwd)": f"{per_image / 1e9:.3f}",
            "fp32 img/s": f"{ips[False]:,.0f}",
            "bf16+CL img/s": f"{ips[True]:,.0f}",
            "bf16+CL / fp32": f"{ips[True] / ips[False]:.2f}x",
            "fp32 % of roofline": f"{100 * ips[False] * per_image / peaks[False]:.1f}",
            "bf16 % of roofline": f"{100 * ips[True] * per_image / peaks[True]:.1f}",
        })
    threads = f", {torch.get_num_threads()} thread(s)" if device.type == "cpu" else ""
    print(f"device: {device_name(device)}{threads}; batch {args.batch}; torch {torch.__version__}")
    print(f"matmul roofline: fp32 {peaks[False] / 1e9:,.0f} GFLOP/s, bf16 {peaks[True] / 1e9:,.0f} GFLOP/s")
    print(markdown_table(rows))


if __name__ == "__main__":
    main()
