"""Throughput of the sweep engine.

(a) CPU: runs per hour of the engine with 2 worker processes (one thread each) vs a naive loop in one process
    with torch's default thread count, over the same small sweep, measured in one run: on an idle machine, and
    with one core held by another busy process (the situation of a shared machine).
(b) CUDA (when present): aggregate training images/s of fused populations of K = 1, 4, 16 ResNets at batch 128,
    against K models trained one after another.

    python benchmarks/sweep_throughput.py [--part a|b|both]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from fibook.forgetting import experiments
from fibook.forgetting.experiments import Experiment
from fibook.forgetting.fused import Single, fuse
from fibook.forgetting.models import build_model, init_sigma_w_
from fibook.forgetting.sweep import run_sweep
from fibook.forgetting.train import train
from fibook.notebook import markdown_table
from fibook.provenance import device_name

# A small sweep: 6 runs of a width-16 ResNet-9 on 2,000 Fashion-MNIST images for 4 epochs (about 20 s each on
# one core, so that starting workers, importing torch and loading the data -- about 5 s a worker -- is amortized
# as in a real sweep).
SIZES = dict(n_train=2000, n_val=500, n_test=500, width=16, epochs=4, precision="bf16")
BENCH = Experiment("bench", "engine benchmark", lambda f, g: [{"optimizer": "sgd", "lr": 0.05, **SIZES}],
                   lambda f, g: (0.1, 0.2, 0.4, 0.8, 1.6, 2.5))


@contextmanager
def busy_core(active: bool):
    """Another process spinning on one core while the block runs."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if active else None
    try:
        yield
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def part_a() -> list[dict]:
    experiments.EXPERIMENTS["bench"] = BENCH
    configs = experiments.runs("bench", "smoke")
    n = len(configs)
    rows = []
    for shared in (False, True):
        with busy_core(shared):
            torch.set_num_threads(os.cpu_count() or 1)  # the naive loop: torch's default threads, one process
            threads = torch.get_num_threads()
            start = time.perf_counter()
            for c in configs:
                train(c, "cpu")
            naive = time.perf_counter() - start
            with tempfile.TemporaryDirectory() as tmp:
                os.environ["FIBOOK_RESULTS"] = tmp
                start = time.perf_counter()
                run_sweep("bench", "smoke", workers=2, device="cpu", progress=False)
                engine = time.perf_counter() - start
        rows.append({"machine": "one core busy with another process" if shared else "idle",
                     "sweep": f"{n} runs, ResNet-9 w16, 2,000 images x 4 epochs",
                     f"naive loop ({threads} threads) runs/h": f"{3600 * n / naive:.0f}",
                     "engine (2 workers x 1 thread) runs/h": f"{3600 * n / engine:.0f}",
                     "engine / naive": f"{naive / engine:.2f}x"})
    return rows


def fused_images_per_second(k: int, fused: bool, device, batch=128, steps=10, arch="resnet9", width=64) -> float:
    models = [init_sigma_w_(build_model(arch, width, 3), 0.5 + i, seed=i) for i in range(k)]
    nets = [fuse(models)] if fused else [Single(m) for m in models]
    for n in nets:
        n.to(device, memory_format=torch.channels_last)
    opts = [torch.optim.SGD(n.parameters(), lr=1e-3) for n in nets]
    per_net = k if fused else 1
    x = torch.randn(batch, 3 * per_net, 32, 32, device=device).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch, per_net), device=device)

    def step():
        for n, o in zip(nets, opts, strict=True):
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = F.cross_entropy(n(x).float().permute(0, 2, 1), y)
            o.zero_grad(set_to_none=True)
            loss.backward()
            o.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return k * batch * steps / (time.perf_counter() - start)


def part_b() -> list[dict]:
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    rows = []
    one = fused_images_per_second(1, True, device)
    for k in (1, 4, 16):
        f = fused_images_per_second(k, True, device)
        loop = fused_images_per_second(k, False, device)
        rows.append({"K": k, "fused img/s": f"{f:,.0f}", "one-at-a-time img/s": f"{loop:,.0f}",
                     "fused / one model": f"{f / one:.2f}x", "fused / loop": f"{f / loop:.2f}x"})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("a", "b", "both"), default="both")
    args = parser.parse_args()
    print(f"torch {torch.__version__}; {os.cpu_count()} CPU cores")
    if args.part in ("a", "both"):
        print(f"(a) CPU: {device_name('cpu')}")
        print(markdown_table(part_a()))
    if args.part in ("b", "both"):
        if torch.cuda.is_available():
            print(f"(b) CUDA: {device_name('cuda')}; ResNet-9 width 64, 32x32, batch 128, bf16 + channels_last")
            print(markdown_table(part_b()))
        else:
            print("(b) skipped: no CUDA device")


if __name__ == "__main__":
    main()
