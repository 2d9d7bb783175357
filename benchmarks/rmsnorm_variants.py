"""RMSNorm kernel variants against the device copy, in one run, each checked against float64.

Usage: python benchmarks/rmsnorm_variants.py [--sizes 16384x4096,65536x4096] [--repeat 30]
                                              [--warm 0.5] [--cpu] [--only NAME,...]
Times every variant of benchmarks/shaders/ (bytes in flight per invocation, rows per workgroup,
subgroup or tree reduction, x kept in registers or read again, persistent and pipelined, two
passes) with timestamp queries, as vkdoctor bench times its kernels (probes/bench.py's Timer and
measure), beside copy_buffer_to_buffer and the copy kernel, and prints one table: GB/s counting x
read and y written once, % of the faster copy, the worst element-wise error against float64.
A variant whose output is wrong is marked WRONG and never the best.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import wgpu

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "probes"))
import bench  # noqa: E402
import rmsnorm_probe as probe  # noqa: E402
import wgpu_kernels  # noqa: E402

SHADERS = Path(__file__).resolve().parent / "shaders"
EPS = bench.EPS

TREE = """partial[lid] = acc;
    workgroupBarrier();
    var s = TPR / 2u;
    loop {
        if (s == 0u) {
            break;
        }
        if (t < s) {
            partial[lid] = partial[lid] + partial[lid + s];
        }
        workgroupBarrier();
        s = s / 2u;
    }
    let total = partial[r * TPR];"""

SUBGROUP = """acc = subgroupAdd(acc);
    if (sg_lid == 0u) {
        partial[lid / sg_size] = acc;
    }
    workgroupBarrier();
    let per = TPR / sg_size;
    var total = 0.0;
    for (var s = r * per; s < (r + 1u) * per; s = s + 1u) {
        total = total + partial[s];
    }"""

SG_ARGS = "@builtin(subgroup_invocation_id) sg_lid: u32, @builtin(subgroup_size) sg_size: u32,"


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # rows, unrolled, pipelined, twopass
    wg: int = 256
    tpr: int = 256
    vpt: int = 4
    subgroup: bool = True
    reread: bool = False
    exact: bool = False
    groups: int = 0  # pipelined: workgroups dispatched

    def in_flight(self) -> int:
        """Bytes of x each invocation has loaded before its first store."""
        return self.vpt * 16 * (2 if self.kind == "pipelined" else 1)


#: (workgroup, invocations per row) also tried without bounds tests where they cover d exactly
EXACT = {(256, 256), (512, 256), (256, 128)}


def variants(d4: int) -> list[Variant]:
    """Each variant covers d4 exactly (tpr * vpt == d4), except where the name says otherwise."""
    out = []
    if d4 % 256 == 0 and d4 // 256 <= 4:
        out.append(Variant(f"sg wg256 tpr256 vpt{d4 // 256} (bench)", "rows", 256, 256, d4 // 256))
    out += [
        Variant("tree wg256 tpr256 vpt4 (bench)", "rows", 256, 256, 4, subgroup=False),
        Variant("sg reread wg256 tpr256 vpt4", "rows", 256, 256, 4, reread=True),
        Variant("sg exact wg512 tpr256 vpt4", "rows", 512, 256, 4, exact=True),
    ]
    for wg, tpr in (
        (256, 256),
        (512, 256),
        (1024, 256),
        (128, 128),
        (256, 128),
        (512, 128),
        (64, 64),
        (256, 64),
        (128, 32),
        (256, 32),
    ):
        vpt = -(-d4 // tpr)
        if vpt > 32 or tpr > max(d4, 32):
            continue
        for reread in (False, True):
            exacts = (False, True) if tpr * vpt == d4 and (wg, tpr) in EXACT else (False,)
            for exact in exacts:
                name = f"unrolled{' exact' if exact else ''}{' reread' if reread else ''}"
                out.append(
                    Variant(
                        f"{name} wg{wg} tpr{tpr} vpt{vpt}",
                        "unrolled",
                        wg,
                        tpr,
                        vpt,
                        reread=reread,
                        exact=exact,
                    )
                )
    for groups in (1056, 4224):
        out.append(Variant(f"pipelined wg256 tpr256 vpt4 g{groups}", "pipelined", groups=groups))
    out.append(Variant("two-pass (sum of squares, then scale)", "twopass"))
    fits = [v for v in out if v.kind == "twopass" or v.tpr * v.vpt >= d4]
    return [v for v in fits if not v.exact or v.tpr * v.vpt == d4]


def unrolled(v: Variant) -> str:
    """shaders/bench_rmsnorm_unrolled.wgsl as vkdoctor bench writes it out; `exact` drops the
    bounds tests."""
    template = (REPO / "shaders" / "bench_rmsnorm_unrolled.wgsl").read_text()
    text = bench.unrolled_source(template, bench.Shape(v.wg, v.tpr, v.vpt))
    if v.reread:
        text = re.sub(r"= v(\d+) \* inv", r"= x[base + i\1] * inv", text)
    return re.sub(r"live && i\d+ < p\.d4", "live", text) if v.exact else text


def source(v: Variant) -> str:
    if v.kind == "unrolled":
        return unrolled(v)
    name = {"rows": "rmsnorm_rows.wgsl", "pipelined": "rmsnorm_pipelined.wgsl"}[v.kind]
    text = (SHADERS / name).read_text()
    subs = {
        "WG": str(v.wg),
        "TPR": str(v.tpr),
        "VPT": str(v.vpt),
        "REREAD": "true" if v.reread else "false",
        "GUARD": "false" if v.exact else "true",
        "SG_ARGS": SG_ARGS if v.subgroup else "",
        "REDUCE": SUBGROUP if v.subgroup else TREE,
    }
    for key, value in subs.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def uniform(device: Any, rows: int, d4: int, last: int) -> Any:
    params = np.array([rows, d4, 0, last], dtype=np.uint32)
    params[2] = np.array([EPS], dtype=np.float32).view(np.uint32)[0]
    return device.create_buffer_with_data(data=params, usage=wgpu.BufferUsage.UNIFORM)


def pipe(device: Any, code: str) -> Any:
    module = device.create_shader_module(code=code)
    return device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )


def bind(device: Any, pipeline: Any, *buffers: Any) -> Any:
    entries = [{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(buffers)]
    return device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)


def grid(groups: int, max_dim: int) -> tuple[int, int]:
    """(groups_x, groups_y) covering `groups` workgroups."""
    gx = min(groups, max_dim)
    return gx, -(-groups // gx)


def steps(device: Any, v: Variant, rows: int, d4: int, b: dict[str, Any]) -> list[Any]:
    """(pipeline, bind group, grid) for each dispatch of the variant."""
    max_dim = int(device.limits["max-compute-workgroups-per-dimension"])
    if v.kind == "twopass":
        gx, gy = grid(rows, max_dim)
        p1 = pipe(device, (SHADERS / "rmsnorm_twopass_sumsq.wgsl").read_text())
        g1 = bind(device, p1, b["x"], b["inv"], uniform(device, rows, d4, gx))
        sx, sy = grid(-(-rows * d4 // 256), max_dim)
        p2 = pipe(device, (SHADERS / "rmsnorm_twopass_scale.wgsl").read_text())
        g2 = bind(device, p2, b["x"], b["w"], b["y"], b["inv"], uniform(device, rows, d4, sx))
        return [(p1, g1, (gx, gy, 1)), (p2, g2, (sx, sy, 1))]
    rpw = v.wg // v.tpr
    p = pipe(device, source(v))
    if v.kind == "pipelined":
        groups = min(v.groups, -(-rows // rpw), max_dim)
        u = uniform(device, rows, d4, groups * rpw)
        return [(p, bind(device, p, b["x"], b["w"], b["y"], u), (groups, 1, 1))]
    gx, gy = grid(-(-rows // rpw), max_dim)
    u = uniform(device, rows, d4, gx)
    return [(p, bind(device, p, b["x"], b["w"], b["y"], u), (gx, gy, 1))]


def encoder(timer: bench.Timer, dispatches: list[Any]) -> bench.Encode:
    def encode(enc: Any, q: tuple[int, int] | None) -> None:
        if q is None:
            cp = enc.begin_compute_pass()
        else:
            cp = enc.begin_compute_pass(
                timestamp_writes={
                    "query_set": timer.qs,
                    "beginning_of_pass_write_index": q[0],
                    "end_of_pass_write_index": q[1],
                }
            )
        for pipeline, group, g in dispatches:
            cp.set_pipeline(pipeline)
            cp.set_bind_group(0, group)
            cp.dispatch_workgroups(*g)
        cp.end()

    return encode


def copies(device: Any, timer: bench.Timer, b: dict[str, Any], total: int, opts: dict) -> dict:
    """GB/s of copy_buffer_to_buffer and of the copy kernel, each checked."""
    x = b["host_x"]
    out = {}
    n4 = total // 16
    max_dim = int(device.limits["max-compute-workgroups-per-dimension"])
    wgs = min(max_dim, -(-n4 // 256))
    cp = pipe(device, (REPO / "shaders" / "bench_copy_vec4.wgsl").read_text())
    params = device.create_buffer_with_data(
        data=np.array([n4, wgs * 256], dtype=np.uint32), usage=wgpu.BufferUsage.UNIFORM
    )
    kernel = encoder(timer, [(cp, bind(device, cp, b["x"], b["dst"], params), (wgs, 1, 1))])
    for name, enc, on_device in (
        (
            "copy_buffer_to_buffer",
            bench.copy_encoder(timer, b["x"], b["dst"], total),
            timer.encoders,
        ),
        ("copy kernel", kernel, timer.passes),
    ):
        device.queue.write_buffer(b["dst"], 0, b["nan"])
        t = bench.measure(device, timer, enc, on_device=on_device, **opts)
        got = np.frombuffer(device.queue.read_buffer(b["dst"]), dtype=np.float32)
        ok = bool(np.array_equal(got.reshape(x.shape), x))
        out[name] = (2 * total / t["s"] / 1e9, ok)
    return out


def run_size(device: Any, timer: bench.Timer, rows: int, d: int, args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    x = rng.standard_normal((rows, d), dtype=np.float32)
    x *= (10.0 ** rng.uniform(-2, 2, (rows, 1))).astype(np.float32)
    w = (rng.uniform(0.5, 1.5, d) * rng.choice([-1.0, 1.0], d)).astype(np.float32)
    ref = wgpu_kernels.rmsnorm_reference(x, w, EPS)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    nan = np.full_like(x, np.nan)
    total = x.nbytes
    b = {
        "x": device.create_buffer_with_data(data=x, usage=usage),
        "w": device.create_buffer_with_data(data=w, usage=usage),
        "y": device.create_buffer(size=total, usage=usage),
        "dst": device.create_buffer(size=total, usage=usage),
        "inv": device.create_buffer(size=4 * rows, usage=usage),
        "host_x": x,
        "nan": nan,
    }
    opts = {"repeat": args.repeat, "warm_s": args.warm}
    cp = copies(device, timer, b, total, opts)
    ceiling = max(gbps for gbps, ok in cp.values() if ok)
    print(
        f"\n{rows}x{d}: "
        + ", ".join(f"{n} {g:,.0f} GB/s{'' if ok else ' WRONG'}" for n, (g, ok) in cp.items()),
        flush=True,
    )
    print(
        f"  {'variant':<40} {'B/inv':>5} {'rows/wg':>7} {'GB/s':>7} {'% copy':>6} "
        f"{'max rel err':>11}",
        flush=True,
    )
    best = None
    for v in variants(d // 4):
        if args.only and not any(o in v.name for o in args.only.split(",")):
            continue
        try:
            dispatches = steps(device, v, rows, d // 4, b)
        except Exception as exc:  # a variant the device cannot compile is a row, not the end
            print(f"  {v.name:<40} failed: {' '.join(str(exc).split())[:120]}", flush=True)
            continue
        device.queue.write_buffer(b["y"], 0, nan)
        t = bench.measure(device, timer, encoder(timer, dispatches), on_device=timer.passes, **opts)
        y = np.frombuffer(device.queue.read_buffer(b["y"]), dtype=np.float32).reshape(rows, d)
        err = probe.errors(y, ref)
        gbps = (2 * total + w.nbytes) / t["s"] / 1e9
        mark = "ok" if err["ok"] else "WRONG"
        e = err["max_rel_err"]
        print(
            f"  {v.name:<40} {v.in_flight():>5} {v.wg // v.tpr:>7} {gbps:>7,.0f} "
            f"{100 * gbps / ceiling:>5.1f}% {e if e is None else format(e, '.1e'):>11} {mark}",
            flush=True,
        )
        if err["ok"] and (best is None or gbps > best[1]):
            best = (v.name, gbps)
    if best:
        print(
            f"  best: {best[0]} {best[1]:,.0f} GB/s, {100 * best[1] / ceiling:.1f}% of "
            f"the faster copy ({ceiling:,.0f} GB/s)",
            flush=True,
        )
    for buf in b.values():
        if hasattr(buf, "destroy"):
            buf.destroy()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16384x4096,65536x4096")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--warm", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpu", action="store_true", help="the CPU adapter (lavapipe)")
    ap.add_argument("--only", help="comma-separated substrings of variant names")
    args = ap.parse_args()
    want = "CPU" if args.cpu else "DiscreteGPU"
    adapters = [
        a
        for a in wgpu.gpu.enumerate_adapters_sync()
        if a.info["backend_type"] == "Vulkan"
        and a.info["adapter_type"] in (want, "IntegratedGPU" if not args.cpu else want)
    ]
    if not adapters:
        print(f"no Vulkan {want} adapter", file=sys.stderr)
        return 1
    adapter = adapters[0]
    feats = [
        f
        for f in ("timestamp-query", "timestamp-query-inside-encoders", "subgroup")
        if f in adapter.features
    ]
    device = adapter.request_device_sync(required_features=feats)
    print(
        f"{adapter.summary}; features {', '.join(feats)}; median of {args.repeat} after "
        f"{args.warm} s warm-up; GB/s count x read and y written once (w once)",
        flush=True,
    )
    timer = bench.Timer(wgpu, device, set(feats), args.repeat)
    for rows, d in bench.parse_sizes(args.sizes):
        run_size(device, timer, rows, d, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
