"""PyTorch's RMSNorm and device copy on the same GPU, for comparison with `vkdoctor bench`.

Usage: python benchmarks/torch_rmsnorm.py [--sizes 16384x4096,65536x4096] [--repeat 30]
Times torch.nn.functional.rms_norm (float32, eps 1e-6, with a weight) and Tensor.clone with
CUDA events (median of --repeat after one second of warm-up), counting bytes as vkdoctor bench
does (x read and y written once, w once), and checks rms_norm against float64.
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import torch
import torch.nn.functional as F

EPS = 1e-6


def timed(fn, repeat: int) -> float:
    """Median seconds of `fn` on the GPU, after a second of warm-up."""
    start = time.perf_counter()
    while time.perf_counter() - start < 1.0:
        fn()
        torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16384x4096,65536x4096")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(dev)}")
    print(
        f"  {'rows x d':>12} {'rms_norm GB/s':>14} {'clone GB/s':>11} {'% of clone':>10} "
        f"{'max rel err':>11}"
    )
    for item in args.sizes.split(","):
        rows, d = (int(v) for v in item.lower().split("x"))
        g = torch.Generator(device=dev).manual_seed(1)
        x = torch.randn(rows, d, device=dev, generator=g)
        w = torch.rand(d, device=dev, generator=g) + 0.5
        y = F.rms_norm(x, (d,), w, EPS)
        x64 = x.double()
        ref = x64 * torch.rsqrt((x64 * x64).mean(dim=1, keepdim=True) + EPS) * w.double()
        err = ((y.double() - ref).abs() / ref.abs().clamp_min(1e-3)).max().item()
        del x64, ref
        nbytes = x.numel() * 4
        rms = (2 * nbytes + d * 4) / timed(partial(F.rms_norm, x, (d,), w, EPS), args.repeat) / 1e9
        clone = 2 * nbytes / timed(x.clone, args.repeat) / 1e9
        print(f"  {item:>12} {rms:>14,.0f} {clone:>11,.0f} {100 * rms / clone:>9.0f}% {err:>11.1e}")


if __name__ == "__main__":
    main()
