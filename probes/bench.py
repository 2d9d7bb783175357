"""vkdoctor bench child: RMSNorm throughput against a device-to-device copy, timed on the device.

Run by `vkdoctor bench` in its own process session (vkdoctor/children/bench.py). Imports only wgpu, numpy,
the standard library and its sibling probe modules, and prints exactly one JSON document. Adapter
choice, stage reporting and the error metric are the compute probe's own (rmsnorm_probe.py), so a
benchmarked size is checked for correctness exactly as `vkdoctor run-probe` checks its cases.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rmsnorm_probe as probe

#: workgroup size for the copy kernel; RMSNorm picks its own per d (workgroup_size_for)
WG = 256
#: vec4 values each RMSNorm invocation keeps in registers; more spills on real GPUs
MAX_VPT = 4
EPS = 1e-6

Encode = Callable[[Any, "tuple[int, int] | None"], None]


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for item in text.split(","):
        rows, _, d = item.strip().lower().partition("x")
        sizes.append((int(rows), int(d)))
    return sizes


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


def workgroup_size_for(d4: int, max_invocations: int, vpt: int = MAX_VPT) -> int:
    """The smallest power-of-two workgroup (64..max) that keeps each invocation at `vpt` vec4s."""
    wg = 64
    while wg * vpt < d4 and wg * 2 <= max_invocations:
        wg *= 2
    return wg


@dataclass(frozen=True)
class Shape:
    """How a kernel covers a row: `tpr` invocations per row, `vpt` vec4 each, `wg` invocations
    per workgroup (wg // tpr rows per workgroup)."""

    wg: int
    tpr: int
    vpt: int

    @property
    def rows_per_group(self) -> int:
        return self.wg // self.tpr


#: the unrolled kernels (shaders/bench_rmsnorm_unrolled.wgsl): (most vec4 per invocation, rows
#: per workgroup). Every one is timed and checked; the fastest correct one is the figure.
#: docs/gpu-h200.md gives what these and the variants left out gave on an H200.
UNROLLED = {
    "unrolled": (4, 1),
    "unrolled-2rows": (4, 2),
    "unrolled-4rows": (4, 4),
    "unrolled-vpt8-2rows": (8, 2),
}


def shape_for(variant: str, d4: int, max_invocations: int) -> Shape:
    vpt, rows = UNROLLED.get(variant, (MAX_VPT, 1))
    tpr = workgroup_size_for(d4, max(64, max_invocations // rows), vpt)
    return Shape(tpr * rows, tpr, -(-d4 // tpr))


def unrolled_source(template: str, shape: Shape) -> str:
    """The unrolled kernel for `shape`: its loads and stores written out, one vec4 value each."""
    loads, stores = [], []
    for k in range(shape.vpt):
        loads += [
            f"    let i{k} = t + {k}u * TPR;",
            f"    var v{k} = vec4<f32>(0.0);",
            f"    if (live && i{k} < p.d4) {{",
            f"        v{k} = x[base + i{k}];",
            "    }",
        ]
        stores += [
            f"    if (live && i{k} < p.d4) {{",
            f"        y[base + i{k}] = v{k} * inv * w[i{k}];",
            "    }",
        ]
    loads += [f"    acc = acc + dot(v{k}, v{k});" for k in range(shape.vpt)]
    return (
        template.replace("{{WG}}", str(shape.wg))
        .replace("{{TPR}}", str(shape.tpr))
        .replace("    // LOADS", "\n".join(loads))
        .replace("    // STORES", "\n".join(stores))
    )


def kernel_source(shaders: dict[str, str], variant: str, shape: Shape) -> str:
    if variant in UNROLLED:
        return unrolled_source(shaders["unrolled"], shape)
    return shaders[variant].replace("{{WG}}", str(shape.wg)).replace("{{VPT}}", str(shape.vpt))


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
    variants: list[str],
) -> dict[str, Any]:
    import numpy as np

    limits = device.limits
    bind_limit = int(limits["max-storage-buffer-binding-size"])
    align = int(limits["min-storage-buffer-offset-alignment"])
    max_dim = int(limits["max-compute-workgroups-per-dimension"])
    d4, row_bytes = d // 4, d * 4
    total = rows * row_bytes
    max_inv = int(limits["max-compute-invocations-per-workgroup"])
    shapes = {v: shape_for(v, d4, max_inv) for v in variants}
    biggest = max(s.wg for s in shapes.values())
    if biggest * 4 > int(limits["max-compute-workgroup-storage-size"]):
        raise ValueError(
            f"RMSNorm at d={d} needs {biggest * 4} bytes of workgroup storage, more than the "
            "device allows"
        )
    pipes = {}
    for variant in variants:
        module = device.create_shader_module(code=kernel_source(shaders, variant, shapes[variant]))
        pipes[variant] = device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"}
        )
    copy_module = device.create_shader_module(code=shaders["copy"])
    copy_pipe = device.create_compute_pipeline(
        layout="auto", compute={"module": copy_module, "entry_point": "main"}
    )
    # the probe's inputs (rmsnorm_probe.py): rows scaled over four decades, so that eps shows
    # in small rows, and signed weights; with mean(x^2) near 1 a wrong eps would pass
    x = rng.standard_normal((rows, d), dtype=np.float32)
    x *= (10.0 ** rng.uniform(-2, 2, (rows, 1))).astype(np.float32)
    w = (rng.uniform(0.5, 1.5, d) * rng.choice([-1.0, 1.0], d)).astype(np.float32)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    bx = device.create_buffer_with_data(data=x, usage=usage)
    bw = device.create_buffer_with_data(data=w, usage=usage)
    by = device.create_buffer_with_data(data=np.full_like(x, np.nan), usage=usage)
    bdst = device.create_buffer(size=total, usage=usage)
    chunks = chunk_rows(rows, row_bytes, bind_limit, align)
    rms_groups: dict[str, list[Any]] = {v: [] for v in variants}
    copy_groups = []
    for first, count in chunks:
        off, size = first * row_bytes, count * row_bytes
        for variant, pipe in pipes.items():
            groups = -(-count // shapes[variant].rows_per_group)
            per_dim = min(groups, max_dim)
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
            rms_groups[variant].append((bg, (per_dim, -(-groups // per_dim), 1)))
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
    import wgpu_kernels

    ref = wgpu_kernels.rmsnorm_reference(x, w, EPS)
    nan = np.full_like(x, np.nan)
    kernels: dict[str, dict[str, Any]] = {}
    for variant, pipe in pipes.items():
        probe.stage(f"rmsnorm-{variant}-{rows}x{d}")
        # each variant starts from a poisoned output, so one that skips elements fails
        device.queue.write_buffer(by, 0, nan)
        timing = measure(
            device,
            timer,
            pass_encoder(timer, pipe, rms_groups[variant]),
            on_device=timer.passes,
            **opts,
        )
        y = np.frombuffer(device.queue.read_buffer(by), dtype=np.float32).reshape(rows, d)
        kernels[variant] = {**timing, **probe.errors(y, ref)}
    del nan
    wrong = [k for k in kernels if not kernels[k]["ok"]]
    best = min(kernels, key=lambda k: kernels[k]["s"] if kernels[k]["ok"] else float("inf"))
    # with a wrong variant, its numbers are the row's: the error column names the failure
    shown = wrong[0] if wrong else best
    rms = {k: kernels[best][k] for k in ("s", "device_s", "host_s")}
    check = {k: v for k, v in kernels[shown].items() if k not in ("s", "device_s", "host_s")}
    check["ok"] = not wrong
    check["wrong_kernels"] = wrong
    probe.stage(f"copy-{rows}x{d}")
    # each copy starts from a poisoned destination and is checked on its own: a copy that
    # moves half the bytes is neither "ok" nor credited with their bandwidth
    poison = np.full_like(x, np.nan)
    device.queue.write_buffer(bdst, 0, poison)
    copy = measure(
        device, timer, copy_encoder(timer, bx, bdst, total), on_device=timer.encoders, **opts
    )
    copied = np.frombuffer(device.queue.read_buffer(bdst), dtype=np.float32).reshape(rows, d)
    buffer_copy_ok = bool(np.array_equal(copied, x))
    device.queue.write_buffer(bdst, 0, poison)
    kcopy = measure(
        device, timer, pass_encoder(timer, copy_pipe, copy_groups), on_device=timer.passes, **opts
    )
    copied = np.frombuffer(device.queue.read_buffer(bdst), dtype=np.float32).reshape(rows, d)
    kernel_copy_ok = bool(np.array_equal(copied, x))
    del poison, copied
    copy_ok = buffer_copy_ok and kernel_copy_ok
    probe.stage(f"numpy-{rows}x{d}")
    host_s = numpy_time(x, w, max(3, min(args.repeat, 7)))
    for b in (bx, bw, by, bdst):
        b.destroy()
    rms_bytes, copy_bytes = 2 * total + row_bytes, 2 * total
    for k in kernels.values():
        k["gbps"] = rms_bytes / k["s"] / 1e9
    rms_gbps = rms_bytes / rms["s"] / 1e9
    copy_gbps = copy_bytes / copy["s"] / 1e9
    kcopy_gbps = copy_bytes / kcopy["s"] / 1e9
    return {
        "rows": rows,
        "d": d,
        "chunks": len(chunks),
        "workgroup_size": shapes[best].wg,
        "shapes": {
            v: {"workgroup": sh.wg, "per_row": sh.tpr, "vec4_each": sh.vpt}
            for v, sh in shapes.items()
        },
        "kernel": best,
        "kernels": kernels,
        "rmsnorm": rms,
        "rmsnorm_gbps": rms_gbps,
        "copy": copy,
        "copy_gbps": copy_gbps,
        "copy_timing": "timestamp-query-inside-encoders" if timer.encoders else "host",
        "kernel_copy": kcopy,
        "kernel_copy_gbps": kcopy_gbps,
        "copy_ok": copy_ok,
        "buffer_copy_ok": buffer_copy_ok,
        "kernel_copy_ok": kernel_copy_ok,
        "rmsnorm_pct_of_copy": 100.0 * rms_gbps / max(copy_gbps, kcopy_gbps),
        "numpy_s": host_s,
        "numpy_gbps": rms_bytes / host_s / 1e9,
        **check,
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="RMSNorm throughput against a device-to-device copy")
    choice = ap.add_mutually_exclusive_group()
    choice.add_argument("--cpu", action="store_true")
    choice.add_argument("--gpu", action="store_true")
    choice.add_argument("--adapter")
    ap.add_argument("--backend", choices=sorted(probe.BACKENDS), default="vulkan")
    ap.add_argument("--sizes", help="ROWSxD[,ROWSxD...]; default: sizes that fill the adapter")
    ap.add_argument("--repeat", type=int, help="timed runs per kernel and size")
    ap.add_argument("--warm", type=float, help="seconds of warm-up per kernel and size")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--shader-dir", type=Path, required=True)
    ap.add_argument("--parent", type=int, help="die with this process (vkdoctor)")
    return ap.parse_args(argv)


#: (sizes, repeat, warm-up seconds) when not given: a GPU gets tensors of 256 MiB and 1 GiB; a
#: CPU adapter (lavapipe) runs about a gigabyte a second, so it gets smaller ones and fewer runs
GPU_DEFAULTS = ("16384x4096,65536x4096", 30, 1.0)
CPU_DEFAULTS = ("256x4096,1024x4096", 5, 0.2)


def run(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    if args.sizes is not None:
        try:
            sizes = parse_sizes(args.sizes)
        except ValueError:
            sizes = []
        bad = [f"{r}x{d}" for r, d in sizes if d % 4 or r < 1 or d < 4]
        if bad or not sizes:
            doc["reason"] = "bad-size"
            doc["summary"] = (
                f"bench sizes are ROWSxD with rows >= 1 and d a multiple of 4, got {args.sizes!r}"
            )
            return
    probe.stage("import")
    import numpy as np
    import wgpu

    probe.stage("enumerate-adapters")
    adapters = list(wgpu.gpu.enumerate_adapters_sync())
    records = [probe.adapter_record(a) for a in adapters]
    doc["adapters"] = records
    index, why, refused = probe.choose(adapters, records, args)
    doc["choice"] = why
    if index is None:
        doc.update(status="no-adapter", reason="no-adapter", summary=why, refused=refused)
        return
    adapter = adapters[index]
    chosen = records[index]
    chosen["used"] = True
    doc["backend"] = chosen["backend"]
    doc["adapter"] = {k: chosen[k] for k in ("name", "type", "driver", "vendor_id", "device_id")}
    defaults = CPU_DEFAULTS if chosen["type"] == "CPU" else GPU_DEFAULTS
    if args.sizes is None:
        sizes = parse_sizes(defaults[0])
    args.repeat = args.repeat or defaults[1]
    args.warm = defaults[2] if args.warm is None else args.warm
    doc["repeat"] = args.repeat
    wanted = [
        f
        for f in ("timestamp-query", "timestamp-query-inside-encoders", "subgroup")
        if f in adapter.features
    ]
    probe.stage("request-device")
    device = adapter.request_device_sync(required_features=wanted)
    shaders = {
        "workgroup-tree": (args.shader_dir / "bench_rmsnorm_vec4.wgsl").read_text(),
        "subgroup": (args.shader_dir / "bench_rmsnorm_subgroup_vec4.wgsl").read_text(),
        "copy": (args.shader_dir / "bench_copy_vec4.wgsl").read_text(),
        "unrolled": (args.shader_dir / "bench_rmsnorm_unrolled.wgsl").read_text(),
    }
    #: the RMSNorm kernels this adapter can run; each is timed and checked
    variants = ["workgroup-tree"]
    if "subgroup" in wanted:
        # a CPU adapter's figures are no measure of a GPU: two kernels show it works
        variants += (
            ["subgroup", "unrolled-2rows"] if chosen["type"] == "CPU" else ["subgroup", *UNROLLED]
        )
    doc["kernels"] = variants
    rng = np.random.default_rng(doc["seed"])
    timer = Timer(wgpu, device, set(wanted), args.repeat)
    doc["timing"] = "timestamp-query" if timer.passes else "host"
    doc["timestamp_period_ns"] = timer.period
    doc["max_storage_buffer_binding_size"] = int(device.limits["max-storage-buffer-binding-size"])
    too_big = [why for rows, d in sizes if (why := _does_not_fit(device.limits, rows, d))]
    if too_big:
        doc["reason"] = "limits"
        doc["summary"] = f"does not fit {adapter.info.get('device', 'the adapter')}: " + "; ".join(
            too_big
        )
        return
    for rows, d in sizes:
        probe.stage(f"size-{rows}x{d}")
        doc["results"].append(
            bench_size(wgpu, device, timer, args, rows, d, rng, shaders, variants)
        )
    ok = all(r["ok"] and r["copy_ok"] for r in doc["results"])
    doc["status"] = "pass" if ok else "fail"
    if not ok:
        doc["reason"] = "wrong-numbers"
        doc["summary"] = "RMSNorm or the copy gave wrong numbers at " + ", ".join(
            f"{r['rows']}x{r['d']}" for r in doc["results"] if not (r["ok"] and r["copy_ok"])
        )


def _does_not_fit(limits: Any, rows: int, d: int) -> str | None:
    """Why a rows x d tensor cannot be a buffer of this device (rows are bound in chunks, so a
    single row must fit one binding), or None."""
    total, row = rows * d * 4, d * 4
    largest = int(limits["max-buffer-size"])
    binding = int(limits["max-storage-buffer-binding-size"])
    if total > largest:
        return f"{rows}x{d} is {total:,} bytes per tensor, over the largest buffer ({largest:,})"
    if row > binding:
        return f"a row of d={d} is {row:,} bytes, over the largest binding ({binding:,})"
    return None


def main(argv: list[str], out: Any) -> int:
    args = parse_args(argv)
    probe.die_with_parent(args.parent)
    doc: dict[str, Any] = {
        "bench_version": 1,
        "status": "error",
        "reason": None,
        "summary": None,
        "seed": args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little"),
        "tolerance": probe.TOLERANCE,
        "adapter": None,
        "adapters": [],
        "results": [],
    }
    try:
        run(args, doc)
    except Exception as exc:
        doc.update(
            status="error",
            reason="python-error",
            summary=f"the bench raised {type(exc).__name__}: {exc}",
        )
        doc["traceback"] = traceback.format_exc()
        sys.stderr.write(doc["traceback"])
    probe.stage("done")
    out.write(json.dumps(probe._finite(doc), allow_nan=False) + "\n")
    out.flush()
    return 0 if doc["status"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdout))
