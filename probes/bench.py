"""vkdoctor bench child: RMSNorm throughput against a device-to-device copy, timed on the device.

Run by `vkdoctor bench` in its own process session. Imports only wgpu, numpy and the stdlib, and
prints exactly one JSON document on stdout. Progress goes to stderr as `stage: NAME` lines so that
the parent can say where a crash or hang happened.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: workgroup size for the copy kernel; RMSNorm picks its own per d (workgroup_size_for)
WG = 256
#: vec4 values each RMSNorm invocation keeps in registers; more spills on real GPUs
MAX_VPT = 4
EPS = 1e-6
REL_TOL = 1e-5
#: relative error is taken against max(|ref|, FLOOR * rms(ref row)) so that near-zero outputs do
#: not turn rounding noise into huge ratios (the probe's metric, docs/probe.md)
FLOOR = 1e-3

Encode = Callable[[Any, "tuple[int, int] | None"], None]


def stage(name: str) -> None:
    print(f"stage: {name}", file=sys.stderr, flush=True)


def emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for item in text.split(","):
        rows, _, d = item.strip().lower().partition("x")
        sizes.append((int(rows), int(d)))
    return sizes


def adapter_info(adapter: Any) -> dict[str, Any]:
    info = adapter.info
    return {
        "name": info.get("device", ""),
        "type": info.get("adapter_type", ""),
        "backend": info.get("backend_type", ""),
        "driver": info.get("description") or None,
        "vendor_id": info.get("vendor_id"),
        "device_id": info.get("device_id"),
    }


def choose_adapter(wgpu: Any, args: argparse.Namespace) -> Any:
    adapters = wgpu.gpu.enumerate_adapters_sync()
    backend = args.backend.lower()
    on_backend = [a for a in adapters if a.info.get("backend_type", "").lower() == backend]
    if args.cpu:
        pick = [a for a in on_backend if a.info.get("adapter_type") == "CPU"]
    elif args.adapter:
        pick = [a for a in on_backend if args.adapter.lower() in a.info.get("device", "").lower()]
    else:
        order = {"DiscreteGPU": 0, "IntegratedGPU": 1, "Unknown": 2, "CPU": 3}
        pick = sorted(on_backend, key=lambda a: order.get(a.info.get("adapter_type"), 2))
    if pick:
        return pick[0]
    if args.cpu:
        want = "CPU adapter"
    elif args.adapter:
        want = f"adapter whose name contains {args.adapter!r}"
    else:
        want = "adapter"
    emit(
        {
            "status": "no-adapter",
            "message": f"no {want} on the {args.backend} backend",
            "adapters": [adapter_info(a) for a in adapters],
        }
    )
    sys.exit(0)


class Timer:
    """Timestamp queries around compute passes, and around copies inside the encoder when the
    adapter has `timestamp-query-inside-encoders`."""

    def __init__(self, wgpu: Any, device: Any, features: set[str], count: int) -> None:
        self.device = device
        self.passes = "timestamp-query" in features
        self.encoders = self.passes and "timestamp-query-inside-encoders" in features
        self.period = 1.0
        if self.passes:
            from wgpu.backends.wgpu_native import _api

            getter = getattr(_api.lib, "wgpuQueueGetTimestampPeriod", None)
            if getter is not None:
                self.period = float(getter(device.queue._internal))
            self.qs = device.create_query_set(type="timestamp", count=2 * count)
            self.resolve = device.create_buffer(
                size=16 * count, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
            )

    def durations(self, n: int) -> list[float]:
        import numpy as np

        enc = self.device.create_command_encoder()
        enc.resolve_query_set(self.qs, 0, 2 * n, self.resolve, 0)
        self.device.queue.submit([enc.finish()])
        raw = self.device.queue.read_buffer(self.resolve, 0, 16 * n)
        ticks = np.frombuffer(raw, dtype=np.uint64).astype(np.float64)
        return list((ticks[1::2] - ticks[0::2]) * self.period * 1e-9)


def workgroup_size_for(d4: int, max_invocations: int) -> int:
    """The smallest power-of-two workgroup (64..max) that keeps each invocation at MAX_VPT vec4s."""
    wg = 64
    while wg * MAX_VPT < d4 and wg * 2 <= max_invocations:
        wg *= 2
    return wg


def chunk_rows(rows: int, row_bytes: int, limit: int, align: int) -> list[tuple[int, int]]:
    """Split rows into (first_row, count) chunks whose bindings fit `limit` and start aligned."""
    per = max(1, limit // row_bytes)
    while per > 1 and (per * row_bytes) % align:
        per -= 1
    return [(r, min(per, rows - r)) for r in range(0, rows, per)]


def pass_encoder(
    timer: Timer, pipeline: Any, groups: list[tuple[Any, tuple[int, int, int]]]
) -> Encode:
    """One compute pass that runs `pipeline` over every (bind group, grid) chunk."""

    def encode(enc: Any, q: tuple[int, int] | None) -> None:
        if q is not None:
            tw = {
                "query_set": timer.qs,
                "beginning_of_pass_write_index": q[0],
                "end_of_pass_write_index": q[1],
            }
            cp = enc.begin_compute_pass(timestamp_writes=tw)
        else:
            cp = enc.begin_compute_pass()
        cp.set_pipeline(pipeline)
        for bg, grid in groups:
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(*grid)
        cp.end()

    return encode


def copy_encoder(timer: Timer, src: Any, dst: Any, size: int) -> Encode:
    """copy_buffer_to_buffer, between encoder timestamps."""
    from wgpu.backends.wgpu_native.extras import write_timestamp

    def encode(enc: Any, q: tuple[int, int] | None) -> None:
        if q is not None:
            write_timestamp(enc, timer.qs, q[0])
        enc.copy_buffer_to_buffer(src, 0, dst, 0, size)
        if q is not None:
            write_timestamp(enc, timer.qs, q[1])

    return encode


def measure(
    device: Any, timer: Timer, encode: Encode, *, repeat: int, warm_s: float, on_device: bool
) -> dict[str, Any]:
    """Warm up until `warm_s` of wall time has passed (clocks ramp up under load), then run
    `repeat` times back to back in one command buffer, each between two timestamps when
    `on_device`. Returns the median device time per run, and the host's wall time per run of the
    same batch as a cross-check."""
    start = time.perf_counter()
    while True:
        enc = device.create_command_encoder()
        for _ in range(repeat):
            encode(enc, None)
        device.queue.submit([enc.finish()])
        device._poll_wait()
        if time.perf_counter() - start >= warm_s:
            break
    enc = device.create_command_encoder()
    for i in range(repeat):
        encode(enc, (2 * i, 2 * i + 1) if on_device else None)
    t0 = time.perf_counter()
    device.queue.submit([enc.finish()])
    device._poll_wait()
    host_s = (time.perf_counter() - t0) / repeat
    device_s = statistics.median(timer.durations(repeat)) if on_device else None
    return {
        "s": device_s if device_s is not None else host_s,
        "device_s": device_s,
        "host_s": host_s,
    }


def compare(x: Any, w: Any, y: Any) -> dict[str, Any]:
    import numpy as np

    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + EPS) * w.astype(np.float64)
    floor = FLOOR * np.sqrt(np.mean(ref * ref, axis=1, keepdims=True))
    rel = np.abs(y.astype(np.float64) - ref) / np.maximum(np.abs(ref), floor)
    rel = np.where(np.isnan(rel), np.inf, rel)
    worst = int(np.argmax(rel))
    r, c = divmod(worst, y.shape[1])
    max_rel = float(rel.flat[worst])
    diff = np.nan_to_num(y.astype(np.float64) - ref, nan=np.inf)
    norm_rel = float(np.linalg.norm(diff) / np.linalg.norm(ref))
    return {
        "max_rel_err": max_rel if np.isfinite(max_rel) else None,
        "norm_rel_err": norm_rel if np.isfinite(norm_rel) else None,
        "ok": bool(max_rel <= REL_TOL),
        "worst": {"row": r, "col": c, "value": float(y[r, c]), "reference": float(ref[r, c])},
    }


def numpy_time(x: Any, w: Any, repeat: int) -> float:
    import numpy as np

    out = np.empty_like(x)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        inv = 1.0 / np.sqrt(np.einsum("ij,ij->i", x, x) / x.shape[1] + np.float32(EPS))
        np.multiply(x, inv[:, None], out=out)
        out *= w
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_size(
    wgpu: Any,
    device: Any,
    timer: Timer,
    args: argparse.Namespace,
    rows: int,
    d: int,
    rng: Any,
    shaders: dict[str, str],
) -> dict[str, Any]:
    import numpy as np

    limits = device.limits
    bind_limit = int(limits["max-storage-buffer-binding-size"])
    align = int(limits["min-storage-buffer-offset-alignment"])
    max_dim = int(limits["max-compute-workgroups-per-dimension"])
    d4, row_bytes = d // 4, d * 4
    total = rows * row_bytes
    wg = workgroup_size_for(d4, int(limits["max-compute-invocations-per-workgroup"]))
    if wg * 4 > int(limits["max-compute-workgroup-storage-size"]):
        raise ValueError(
            f"RMSNorm at d={d} needs {wg * 4} bytes of workgroup storage, more than the device allows"
        )
    src = shaders["rmsnorm"].replace("{{WG}}", str(wg)).replace("{{VPT}}", str(-(-d4 // wg)))
    module = device.create_shader_module(code=src)
    pipe = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    copy_module = device.create_shader_module(code=shaders["copy"])
    copy_pipe = device.create_compute_pipeline(
        layout="auto", compute={"module": copy_module, "entry_point": "main"}
    )
    x = rng.standard_normal((rows, d), dtype=np.float32)
    w = (1.0 + 0.1 * rng.standard_normal(d)).astype(np.float32)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    bx = device.create_buffer_with_data(data=x, usage=usage)
    bw = device.create_buffer_with_data(data=w, usage=usage)
    by = device.create_buffer_with_data(data=np.full_like(x, np.nan), usage=usage)
    bdst = device.create_buffer(size=total, usage=usage)
    chunks = chunk_rows(rows, row_bytes, bind_limit, align)
    rms_groups, copy_groups = [], []
    for first, count in chunks:
        off, size = first * row_bytes, count * row_bytes
        per_dim = min(count, max_dim)
        params = np.array([count, d4, 0, per_dim], dtype=np.uint32)
        params[2] = np.array([EPS], dtype=np.float32).view(np.uint32)[0]
        bp = device.create_buffer_with_data(data=params, usage=wgpu.BufferUsage.UNIFORM)
        bg = device.create_bind_group(
            layout=pipe.get_bind_group_layout(0),
            entries=[
                {"binding": 0, "resource": {"buffer": bx, "offset": off, "size": size}},
                {"binding": 1, "resource": {"buffer": bw, "offset": 0, "size": row_bytes}},
                {"binding": 2, "resource": {"buffer": by, "offset": off, "size": size}},
                {"binding": 3, "resource": {"buffer": bp}},
            ],
        )
        rms_groups.append((bg, (per_dim, -(-count // per_dim), 1)))
        n4 = count * d4
        wgs = min(max_dim, -(-n4 // 256))
        cbp = device.create_buffer_with_data(
            data=np.array([n4, wgs * 256], dtype=np.uint32), usage=wgpu.BufferUsage.UNIFORM
        )
        cbg = device.create_bind_group(
            layout=copy_pipe.get_bind_group_layout(0),
            entries=[
                {"binding": 0, "resource": {"buffer": bx, "offset": off, "size": size}},
                {"binding": 1, "resource": {"buffer": bdst, "offset": off, "size": size}},
                {"binding": 2, "resource": {"buffer": cbp}},
            ],
        )
        copy_groups.append((cbg, (wgs, 1, 1)))

    opts = {"repeat": args.repeat, "warm_s": args.warm}
    stage(f"rmsnorm {rows}x{d}")
    rms = measure(
        device, timer, pass_encoder(timer, pipe, rms_groups), on_device=timer.passes, **opts
    )
    stage(f"readback {rows}x{d}")
    y = np.frombuffer(device.queue.read_buffer(by), dtype=np.float32).reshape(rows, d)
    check = compare(x, w, y)
    stage(f"copy {rows}x{d}")
    copy = measure(
        device, timer, copy_encoder(timer, bx, bdst, total), on_device=timer.encoders, **opts
    )
    kcopy = measure(
        device, timer, pass_encoder(timer, copy_pipe, copy_groups), on_device=timer.passes, **opts
    )
    copied = np.frombuffer(device.queue.read_buffer(bdst), dtype=np.float32).reshape(rows, d)
    copy_ok = bool(np.array_equal(copied, x))
    stage(f"numpy {rows}x{d}")
    host_s = numpy_time(x, w, max(3, min(args.repeat, 7)))
    for b in (bx, bw, by, bdst):
        b.destroy()
    rms_bytes, copy_bytes = 2 * total + row_bytes, 2 * total
    rms_gbps = rms_bytes / rms["s"] / 1e9
    copy_gbps = copy_bytes / copy["s"] / 1e9
    kcopy_gbps = copy_bytes / kcopy["s"] / 1e9
    return {
        "rows": rows,
        "d": d,
        "chunks": len(chunks),
        "workgroup_size": wg,
        "rmsnorm": rms,
        "rmsnorm_gbps": rms_gbps,
        "copy": copy,
        "copy_gbps": copy_gbps,
        "copy_timing": "timestamp-query-inside-encoders" if timer.encoders else "host",
        "kernel_copy": kcopy,
        "kernel_copy_gbps": kcopy_gbps,
        "copy_ok": copy_ok,
        "rmsnorm_pct_of_copy": 100.0 * rms_gbps / max(copy_gbps, kcopy_gbps),
        "numpy_s": host_s,
        "numpy_gbps": rms_bytes / host_s / 1e9,
        **check,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--adapter")
    ap.add_argument("--backend", default="Vulkan")
    ap.add_argument("--sizes", default="16384x4096")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument(
        "--warm", type=float, default=0.5, help="seconds of warm-up per kernel and size"
    )
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--shader-dir", required=True)
    args = ap.parse_args()
    sizes = parse_sizes(args.sizes)
    bad = [f"{r}x{d}" for r, d in sizes if d % 4 or r < 1 or d < 4]
    if bad:
        emit(
            {
                "status": "error",
                "message": f"bench sizes need rows >= 1 and d a multiple of 4: {', '.join(bad)}",
            }
        )
        return 0

    stage("import")
    import numpy as np
    import wgpu

    if args.backend.lower() == "vulkan":
        from wgpu.backends.wgpu_native.extras import set_instance_extras

        set_instance_extras(backends=["Vulkan"])
    stage("adapter")
    adapter = choose_adapter(wgpu, args)
    wanted = [
        f for f in ("timestamp-query", "timestamp-query-inside-encoders") if f in adapter.features
    ]
    stage("device")
    device = adapter.request_device_sync(required_features=wanted)
    wg_storage = int(device.limits["max-compute-workgroup-storage-size"])
    if wg_storage < WG * 4:
        emit(
            {
                "status": "error",
                "message": f"the kernel needs {WG * 4} bytes of workgroup storage, the device allows {wg_storage}",
            }
        )
        return 0
    shader_dir = Path(args.shader_dir)
    shaders = {
        "rmsnorm": (shader_dir / "bench_rmsnorm_vec4.wgsl").read_text(),
        "copy": (shader_dir / "bench_copy_vec4.wgsl").read_text(),
    }
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    timer = Timer(wgpu, device, set(wanted), args.repeat)
    results = []
    for rows, d in sizes:
        stage(f"setup {rows}x{d}")
        results.append(bench_size(wgpu, device, timer, args, rows, d, rng, shaders))
    ok = all(r["ok"] and r["copy_ok"] for r in results)
    emit(
        {
            "status": "pass" if ok else "fail",
            "adapter": adapter_info(adapter),
            "timing": "timestamp-query" if timer.passes else "host",
            "timestamp_period_ns": timer.period,
            "seed": seed,
            "repeat": args.repeat,
            "max_storage_buffer_binding_size": int(
                device.limits["max-storage-buffer-binding-size"]
            ),
            "results": results,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
