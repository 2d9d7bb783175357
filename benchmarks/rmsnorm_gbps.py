"""Warm RMSNorm bandwidth on one adapter, with the probe's own kernel and host code.

Usage: python benchmarks/rmsnorm_gbps.py [--rows 1024] [--d 4096] [--repeats 10] [--adapter TEXT]
Prints the first dispatch and the median and best of the warm repeats, as GB/s (read x, write y,
read w once), and the maximum relative error of the first result.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np
import wgpu

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "probes"))
import wgpu_kernels as kernels  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--adapter", default="llvmpipe", help="substring of a Vulkan adapter's name")
    args = ap.parse_args()
    adapters = [
        a
        for a in wgpu.gpu.enumerate_adapters_sync()
        if a.info["backend_type"] == "Vulkan" and args.adapter.lower() in a.summary.lower()
    ]
    if not adapters:
        print(f"no Vulkan adapter matching {args.adapter!r}")
        return 1
    device = adapters[0].request_device_sync()
    kernel = kernels.load_kernel(device, REPO / "shaders", "rmsnorm")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, args.d), dtype=np.float32)
    w = rng.uniform(0.5, 1.5, args.d).astype(np.float32)
    y, t = kernels.rmsnorm(device, kernel, x, w, repeats=args.repeats)
    ref = kernels.rmsnorm_reference(x, w)
    err = float(np.max(np.abs(y - ref) / np.maximum(np.abs(ref), 1e-30)))
    gb = t.bytes / 1e9
    warm = [gb / s for s in t.repeats]
    print(f"{adapters[0].summary}: {args.rows}x{args.d}, {t.bytes / 2**20:.1f} MiB moved")
    print(f"first dispatch {t.dispatch * 1e3:.2f} ms = {gb / t.dispatch:.2f} GB/s")
    if warm:
        print(
            f"warm x{len(warm)}: median {statistics.median(warm):.2f} GB/s, best {max(warm):.2f} GB/s"
        )
    print(f"max relative error {err:.2e}")
    return 0 if err <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
