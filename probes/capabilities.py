"""The capability ladder: one rung per feature compute kernels lean on, each with an exact or
float64 reference and its own tolerance (`vkdoctor run-probe --capabilities`).

Each rung reports `pass`, `fail` (the error figure and the worst element), `unsupported` (the
adapter lacks a feature or a limit the kernel declares in its `// requires:` and
`// requires-limit:` header lines) or `error` (the shader did not compile or the dispatch failed:
wgpu's message). The rungs run on a device of their own, created with every feature and the
largest limits they may use, so that the main probe's device stays the default one.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import wgpu
import wgpu_kernels as kernels

#: the rungs, in the order they run
RUNGS = (
    "f16",
    "bf16-storage",
    "subgroups",
    "atomics",
    "workgroup-memory-limit",
    "max-invocations",
    "large-dispatch",
    "large-binding",
    "small-d",
    "timestamps",
)
#: features the rungs may ask for; the capability device gets those the adapter has
FEATURES = ("shader-f16", "subgroup", "timestamp-query")
#: limits raised to the adapter's own on the capability device
LIMITS = (
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x",
    "max-storage-buffer-binding-size",
    "max-buffer-size",
)
#: the largest binding large-binding tries (time: an upload and a readback of this many bytes)
BINDING_CAP = 64 << 20
F16_TOLERANCE = 1e-2
BF16_TOLERANCE = 1.6e-2

_REQUIRES = re.compile(r"^//\s*requires:\s*(.+)$", re.MULTILINE)
_REQUIRES_LIMIT = re.compile(r"^//\s*requires-limit:\s*([\w-]+)\s*>=\s*(\d+)\s*$", re.MULTILINE)


class Unsupported(Exception):
    """The adapter lacks what a rung needs."""


class Failed(Exception):
    """A rung computed the wrong answer; `detail` holds the figures."""

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.detail = detail


class Ladder:
    """One capability device and the shader directory its rungs read."""

    def __init__(self, adapter: Any, shader_dir: Path, rng: Any) -> None:
        self.adapter = adapter
        self.shader_dir = Path(shader_dir)
        self.rng = rng
        self.features = set(adapter.features)
        self.limits = {k: int(adapter.limits[k]) for k in adapter.limits}
        self.device = adapter.request_device_sync(
            required_features=[f for f in FEATURES if f in self.features],
            required_limits={k: self.limits[k] for k in LIMITS if k in self.limits},
        )

    def source(self, name: str, **values: int) -> str:
        """shaders/NAME.wgsl with its __PLACEHOLDERS__ filled; Unsupported when the adapter
        lacks a feature or limit the file requires."""
        path = self.shader_dir / f"{name}.wgsl"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise kernels.ShaderFileError(f"cannot read {path}: {exc}") from exc
        for line in _REQUIRES.findall(text):
            missing = [f for f in line.split() if f not in self.features]
            if missing:
                raise Unsupported(f"the adapter lacks the feature {', '.join(missing)}")
        for limit, needed in _REQUIRES_LIMIT.findall(text):
            have = self.limits.get(limit, 0)
            if have < int(needed):
                raise Unsupported(f"{limit} is {have}, the kernel needs {needed}")
        for key, value in values.items():
            text = text.replace(f"__{key}__", str(value))
        return text

    def kernel(self, name: str, **values: int) -> kernels.Kernel:
        text = self.source(name, **values)
        module = self.device.create_shader_module(code=text, label=name)
        pipeline = self.device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"}, label=name
        )
        return kernels.Kernel(
            name, self.shader_dir / f"{name}.wgsl", pipeline, pipeline.get_bind_group_layout(0), {}
        )

    def storage(self, array: np.ndarray, *, out: bool = False) -> Any:
        return kernels._storage(self.device, array, out=out)

    def run(self, kernel: kernels.Kernel, groups: tuple[int, int, int], *res: Any) -> None:
        bind = kernels._bind(self.device, kernel, *res)
        kernels._run(self.device, kernel, [(bind, groups)])

    def read(self, buffer: Any, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
        return kernels._read(self.device, buffer, dtype, shape)

    def uniform(self, *words: int | float) -> Any:
        return kernels._uniform(self.device, *words)


def _relative(y: np.ndarray, ref: np.ndarray, tolerance: float) -> dict[str, Any]:
    """Max relative error (denominator at least 1e-2 of the reference's scale) and the worst
    element; Failed when over `tolerance` or not finite."""
    y64 = y.astype(np.float64)
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    denom = np.maximum(np.abs(ref), 1e-2 * scale)
    with np.errstate(invalid="ignore"):
        err = np.abs(y64 - ref) / denom
    finite = np.isfinite(y64)
    worst = int(np.argmax(np.where(finite, err, np.inf)))
    index = [int(i) for i in np.unravel_index(worst, ref.shape)]
    max_err = float(np.max(err[finite])) if finite.any() else None
    nonfinite = int(np.count_nonzero(~finite))
    value, reference = float(y64.flat[worst]), float(ref.flat[worst])
    figures: dict[str, Any] = {
        "max_rel_err": max_err,
        "tolerance": tolerance,
        "nonfinite": nonfinite,
        "worst": {"index": index, "value": value, "reference": reference},
    }
    if nonfinite or max_err is None:
        raise Failed(f"{nonfinite} non-finite element(s)", **figures)
    if max_err > tolerance:
        raise Failed(
            f"max relative error {max_err:.3g} over {tolerance:g} at {index}: "
            f"{value:.6g} vs {reference:.6g}",
            **figures,
        )
    return figures


def _exact(got: np.ndarray, want: np.ndarray, what: str) -> dict[str, Any]:
    wrong = np.flatnonzero(got.ravel() != want.ravel())
    if wrong.size:
        i = int(wrong[0])
        raise Failed(
            f"{wrong.size} of {want.size} {what} wrong; first at {i}: {int(got.ravel()[i])} "
            f"instead of {int(want.ravel()[i])}",
            wrong=int(wrong.size),
            first={"index": i, "value": int(got.ravel()[i]), "expected": int(want.ravel()[i])},
        )
    return {"checked": int(want.size)}


def _rmsnorm_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return kernels.rmsnorm_reference(x, w)


def rung_f16(lad: Ladder) -> dict[str, Any]:
    kernel = lad.kernel("cap_f16")
    rows, d = 16, 64
    x = lad.rng.standard_normal((rows, d)).astype(np.float32)
    w = lad.rng.uniform(0.5, 1.5, d).astype(np.float32)
    yb = lad.storage(np.full(rows * d, np.nan, dtype=np.float16), out=True)
    lad.run(
        kernel,
        (rows, 1, 1),
        lad.storage(x),
        lad.storage(w),
        yb,
        lad.uniform(rows, d, float(kernels.EPS)),
    )
    y = lad.read(yb, np.float16, (rows, d))
    return _relative(y, _rmsnorm_ref(x, w), F16_TOLERANCE)


def _bf16_bits(v: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns, round to nearest even (as the kernel packs)."""
    bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32)


def _pack(bits: np.ndarray) -> np.ndarray:
    packed: np.ndarray = (bits[..., 0::2] | (bits[..., 1::2] << 16)).astype(np.uint32)
    return packed


def _unpack(words: np.ndarray) -> np.ndarray:
    lo = (words << 16).view(np.float32)
    hi = (words & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.stack([lo, hi], axis=-1).reshape(*words.shape[:-1], words.shape[-1] * 2)


def rung_bf16(lad: Ladder) -> dict[str, Any]:
    kernel = lad.kernel("cap_bf16")
    rows, d = 16, 128
    xw = _pack(_bf16_bits(lad.rng.standard_normal((rows, d)).astype(np.float32)))
    ww = _pack(_bf16_bits(lad.rng.uniform(0.5, 1.5, d).astype(np.float32)))
    yb = lad.storage(np.zeros(rows * d // 2, dtype=np.uint32), out=True)
    eb = lad.storage(np.zeros(rows * d // 2, dtype=np.uint32), out=True)
    lad.run(
        kernel,
        (rows, 1, 1),
        lad.storage(xw),
        lad.storage(ww),
        yb,
        eb,
        lad.uniform(rows, d, float(kernels.EPS)),
    )
    echo = lad.read(eb, np.uint32, (rows, d // 2))
    try:
        _exact(echo, xw, "bf16 words packed back")
    except Failed as exc:
        raise Failed(f"the bf16 round trip is not exact: {exc}", **exc.detail) from exc
    y = _unpack(lad.read(yb, np.uint32, (rows, d // 2)))
    figures = _relative(y, _rmsnorm_ref(_unpack(xw), _unpack(ww)), BF16_TOLERANCE)
    return {**figures, "round_trip": "exact"}


def rung_subgroups(lad: Ladder) -> dict[str, Any]:
    kernel = lad.kernel("cap_subgroups")
    groups, wg = 8, 256
    n = groups * wg
    v = lad.rng.integers(0, 1 << 20, n, dtype=np.uint32)
    ob = lad.storage(np.zeros((n, 4), dtype=np.uint32), out=True)
    lad.run(kernel, (groups, 1, 1), lad.storage(v), ob)
    out = lad.read(ob, np.uint32, (n, 4))
    sums, leaders, members, sizes = out[:, 0], out[:, 1], out[:, 2], out[:, 3]
    expected_sum = np.zeros(n, dtype=np.uint64)
    expected_members = np.zeros(n, dtype=np.uint32)
    for leader in np.unique(leaders):
        mine = leaders == leader
        expected_sum[mine] = int(v[mine].astype(np.uint64).sum()) & 0xFFFFFFFF
        expected_members[mine] = int(np.count_nonzero(mine))
    _exact(sums, expected_sum.astype(np.uint32), "subgroupAdd sums")
    _exact(members, expected_members, "subgroupAdd(1) counts")
    seen = sorted({int(s) for s in sizes})
    if int(expected_members.max()) > max(seen):
        raise Failed(f"a subgroup of {int(expected_members.max())} is over the size {max(seen)}")
    return {"subgroup_sizes": seen, "subgroups": int(np.unique(leaders).size)}


def rung_atomics(lad: Ladder) -> dict[str, Any]:
    kernel = lad.kernel("cap_atomics")
    groups, wg = 1024, 64
    cb = lad.storage(np.zeros(2, dtype=np.uint32), out=True)
    lad.run(kernel, (groups, 1, 1), cb)
    got = lad.read(cb, np.uint32, (2,))
    want = np.array([groups * wg, groups * (wg * (wg - 1) // 2)], dtype=np.uint32)
    return {**_exact(got, want, "atomic counters"), "invocations": groups * wg}


def rung_workgroup_memory(lad: Ladder) -> dict[str, Any]:
    size = lad.limits["max-compute-workgroup-storage-size"]
    words = size // 4
    kernel = lad.kernel("cap_workgroup_memory", WORDS=words)
    groups = 4
    x = lad.rng.integers(0, 1 << 16, groups * words, dtype=np.uint32)
    ob = lad.storage(np.zeros(groups, dtype=np.uint32), out=True)
    lad.run(kernel, (groups, 1, 1), lad.storage(x), ob)
    got = lad.read(ob, np.uint32, (groups,))
    weights = np.arange(1, words + 1, dtype=np.uint64)
    want = (x.reshape(groups, words).astype(np.uint64) * weights).sum(axis=1) & 0xFFFFFFFF
    return {**_exact(got, want.astype(np.uint32), "workgroup sums"), "bytes": words * 4}


def rung_max_invocations(lad: Ladder) -> dict[str, Any]:
    wg = min(
        lad.limits["max-compute-invocations-per-workgroup"],
        lad.limits["max-compute-workgroup-size-x"],
    )
    kernel = lad.kernel("cap_max_invocations", INVOCATIONS=wg)
    groups = 3
    ob = lad.storage(np.zeros(groups * wg, dtype=np.uint32), out=True)
    lad.run(kernel, (groups, 1, 1), ob)
    got = lad.read(ob, np.uint32, (groups * wg,))
    lid = np.tile(np.arange(wg, dtype=np.uint64), groups)
    group = np.repeat(np.arange(groups, dtype=np.uint64), wg)
    want = ((lid + group * 1000003) & 0xFFFFFFFF).astype(np.uint32)
    return {**_exact(got, want, "invocation indices"), "invocations_per_workgroup": wg}


def rung_large_dispatch(lad: Ladder) -> dict[str, Any]:
    per_dim = lad.limits["max-compute-workgroups-per-dimension"]
    count = per_dim + 1 + per_dim // 3
    gx = per_dim
    gy = math.ceil(count / gx)
    kernel = lad.kernel("cap_large_dispatch")
    ob = lad.storage(np.zeros(gx * gy, dtype=np.uint32), out=True)
    lad.run(kernel, (gx, gy, 1), ob, lad.uniform(count, gx))
    got = lad.read(ob, np.uint32, (gx * gy,))
    want = np.zeros(gx * gy, dtype=np.uint32)
    want[:count] = np.arange(count, dtype=np.uint32) ^ np.uint32(0x5A5A5A5A)
    return {**_exact(got, want, "workgroup indices"), "workgroups": count, "grid": [gx, gy]}


def rung_large_binding(lad: Ladder) -> dict[str, Any]:
    limit = min(lad.limits["max-storage-buffer-binding-size"], lad.limits["max-buffer-size"])
    size = min(limit, BINDING_CAP) // 4 * 4
    words = size // 4
    big = np.zeros(words, dtype=np.uint32)
    big[0], big[-1] = 0x600DF00D, 0x12345678
    bb = lad.storage(big, out=True)
    ob = lad.storage(np.zeros(2, dtype=np.uint32), out=True)
    lad.run(lad.kernel("cap_large_binding"), (1, 1, 1), bb, ob)
    got = lad.read(ob, np.uint32, (2,))
    _exact(got, np.array([0x600DF00D, 0x12345678], dtype=np.uint32), "elements read")
    last = np.frombuffer(
        lad.device.queue.read_buffer(bb, buffer_offset=size - 4, size=4), dtype=np.uint32
    )
    _exact(last, np.array([0x12345678 + 0x01010101], dtype=np.uint32), "last element written")
    return {"bytes": size, "device_limit": limit, "capped": size < limit}


def rung_small_d(lad: Ladder) -> dict[str, Any]:
    kernel = lad.kernel("rmsnorm")
    kernel.needs["workgroup_size"] = kernels.workgroup_size(lad.source("rmsnorm"))
    worst: dict[str, Any] = {"max_rel_err": 0.0}
    for d in (1, 2, 3):
        rows = 4099
        x = lad.rng.standard_normal((rows, d)).astype(np.float32)
        w = lad.rng.uniform(0.5, 1.5, d).astype(np.float32)
        y, timing = kernels.rmsnorm(lad.device, kernel, x, w)
        if timing.overrun:
            raise Failed(f"d={d}: {timing.overrun} element(s) written past the last row", d=d)
        try:
            figures = _relative(y, _rmsnorm_ref(x, w), 1e-5)
        except Failed as exc:
            raise Failed(f"d={d}: {exc}", d=d, **exc.detail) from exc
        if figures["max_rel_err"] >= worst["max_rel_err"]:
            worst = {**figures, "d": d}
    return {**worst, "rows": 4099, "d": [1, 2, 3]}


def rung_timestamps(lad: Ladder) -> dict[str, Any]:
    if "timestamp-query" not in lad.features:
        raise Unsupported("the adapter lacks the feature timestamp-query")
    kernel = lad.kernel("add_one")
    n = 1 << 16
    xb = lad.storage(np.zeros(n, dtype=np.float32))
    yb = lad.storage(np.zeros(n, dtype=np.float32), out=True)
    bind = kernels._bind(lad.device, kernel, xb, yb, lad.uniform(n))
    queries = lad.device.create_query_set(type="timestamp", count=4)
    resolved = lad.device.create_buffer(
        size=32, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
    )
    encoder = lad.device.create_command_encoder()
    for first in (0, 2):
        cpass = encoder.begin_compute_pass(
            timestamp_writes={
                "query_set": queries,
                "beginning_of_pass_write_index": first,
                "end_of_pass_write_index": first + 1,
            }
        )
        cpass.set_pipeline(kernel.pipeline)
        cpass.set_bind_group(0, bind)
        cpass.dispatch_workgroups(n // 64, 1, 1)
        cpass.end()
    encoder.resolve_query_set(queries, 0, 4, resolved, 0)
    lad.device.queue.submit([encoder.finish()])
    ticks = np.frombuffer(lad.device.queue.read_buffer(resolved), dtype=np.uint64)
    stamps = [int(t) for t in ticks]
    if any(b < a for a, b in itertools.pairwise(stamps)):
        raise Failed(f"timestamps go backwards: {stamps}", timestamps=stamps)
    if stamps[-1] == stamps[0]:
        raise Failed(f"timestamps do not advance: {stamps}", timestamps=stamps)
    return {"timestamps": stamps}


_RUNG_FUNCS: dict[str, Callable[[Ladder], dict[str, Any]]] = {
    "f16": rung_f16,
    "bf16-storage": rung_bf16,
    "subgroups": rung_subgroups,
    "atomics": rung_atomics,
    "workgroup-memory-limit": rung_workgroup_memory,
    "max-invocations": rung_max_invocations,
    "large-dispatch": rung_large_dispatch,
    "large-binding": rung_large_binding,
    "small-d": rung_small_d,
    "timestamps": rung_timestamps,
}


def climb(
    adapter: Any, shader_dir: Path, rng: Any, stage: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Every rung on a capability device of its own; one entry per rung."""
    lad = Ladder(adapter, shader_dir, rng)
    results: list[dict[str, Any]] = []
    for name in RUNGS:
        stage(f"capability:{name}")
        entry: dict[str, Any] = {"name": name}
        try:
            figures = _RUNG_FUNCS[name](lad)
            entry.update(status="pass", detail=_pass_detail(name, figures), figures=figures)
        except Unsupported as exc:
            entry.update(status="unsupported", detail=str(exc))
        except Failed as exc:
            entry.update(status="fail", detail=str(exc), figures=exc.detail)
        except kernels.ShaderFileError as exc:
            entry.update(status="error", detail=str(exc))
        except Exception as exc:
            entry.update(status="error", detail=f"{type(exc).__name__}: {exc}")
        results.append(entry)
    return results


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"


def _pass_detail(name: str, f: dict[str, Any]) -> str:
    if "max_rel_err" in f:
        return f"max rel err {f['max_rel_err']:.2g} (tolerance {f['tolerance']:g})"
    if name == "subgroups":
        return f"exact; subgroup sizes {', '.join(map(str, f['subgroup_sizes']))}"
    if name == "workgroup-memory-limit":
        return f"exact through {f['bytes'] // 1024} KiB workgroup memory"
    if name == "max-invocations":
        return f"exact at {f['invocations_per_workgroup']} invocations"
    if name == "large-dispatch":
        return f"exact over {f['workgroups']} workgroups ({f['grid'][0]}x{f['grid'][1]})"
    if name == "large-binding":
        capped = f" (max {_mib(f['device_limit'])})" if f["capped"] else ""
        return f"ends of a {_mib(f['bytes'])} binding{capped}"
    if name == "timestamps":
        return f"{len(f['timestamps'])} timestamps, monotonic"
    return "exact"
