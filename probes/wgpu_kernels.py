"""Host side of the shaders in shaders/: compile, check against the device's limits, dispatch.

Imports only wgpu, numpy and the standard library, so the probe child and the benchmark can both
use it. `rmsnorm(device, kernel, x, w)` is the reusable entry point: it returns y and its timing.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import wgpu

EPS = 1e-6

_SCALAR_BYTES = {
    "f32": 4,
    "i32": 4,
    "u32": 4,
    "f16": 2,
    "bool": 4,
    "atomic<u32>": 4,
    "atomic<i32>": 4,
}
#: a WGSL integer literal: decimal or hexadecimal, with an optional u or i suffix
_INT = r"(?:0[xX][0-9a-fA-F]+|[0-9]+)[ui]?"
_CONST = re.compile(r"\bconst\s+(\w+)\s*(?::\s*\w+\s*)?=\s*(" + _INT + r")\s*;")
_WORKGROUP_VAR = re.compile(r"\bvar\s*<\s*workgroup\s*>\s*(\w+)\s*:\s*([^;]+);")
_WORKGROUP_SIZE = re.compile(r"@workgroup_size\s*\(([^)]*)\)")


class ShaderFileError(Exception):
    """A kernel's .wgsl file cannot be read."""


class ShaderLimitError(Exception):
    """A kernel needs more than the device allows, or we cannot tell how much it needs."""


def _literal(token: str) -> int | None:
    token = token.strip().rstrip("ui")
    try:
        return int(token, 0) if token[:2].lower() == "0x" or token.isdigit() else None
    except ValueError:
        return None


def _consts(source: str) -> dict[str, int]:
    return {name: v for name, value in _CONST.findall(source) if (v := _literal(value)) is not None}


def _count(token: str, consts: dict[str, int]) -> int:
    value = _literal(token)
    if value is not None:
        return value
    token = token.strip()
    if token in consts:
        return consts[token]
    raise ShaderLimitError(
        f"cannot evaluate {token!r}: only integer literals and consts are understood"
    )


def _type_size(wgsl_type: str, consts: dict[str, int]) -> tuple[int, int]:
    """(size, alignment) in bytes of a WGSL type, for the types a workgroup variable uses here."""
    t = wgsl_type.strip()
    if t in _SCALAR_BYTES:
        n = _SCALAR_BYTES[t]
        return n, n
    vec = re.fullmatch(r"vec([234])\s*<\s*(\w+)\s*>", t)
    if vec:
        n, elem = int(vec.group(1)), _SCALAR_BYTES.get(vec.group(2))
        if elem is None:
            raise ShaderLimitError(f"unknown vector element type in {t!r}")
        align = elem * (4 if n >= 3 else 2)
        return elem * n, align
    arr = re.fullmatch(r"array\s*<\s*(.+)\s*,\s*([^,<>]+)\s*>", t)
    if arr:
        size, align = _type_size(arr.group(1), consts)
        stride = math.ceil(size / align) * align
        return stride * _count(arr.group(2), consts), align
    raise ShaderLimitError(f"cannot size workgroup type {t!r}")


def workgroup_storage_bytes(source: str) -> int:
    """Bytes of `var<workgroup>` memory a WGSL module declares (wgpu 29 does not check this)."""
    consts = _consts(source)
    total = 0
    for _name, wgsl_type in _WORKGROUP_VAR.findall(source):
        size, align = _type_size(wgsl_type, consts)
        total = math.ceil(total / align) * align + size
    return total


def workgroup_size(source: str) -> tuple[int, int, int]:
    match = _WORKGROUP_SIZE.search(source)
    if match is None:
        raise ShaderLimitError("no @workgroup_size in the shader")
    consts = _consts(source)
    dims = [_count(t, consts) for t in match.group(1).split(",") if t.strip()]
    dims += [1] * (3 - len(dims))
    return dims[0], dims[1], dims[2]


def check_limits(name: str, source: str, limits: Any) -> dict[str, Any]:
    """Raise ShaderLimitError when `source` needs more than `limits` allow; else what it needs."""
    storage = workgroup_storage_bytes(source)
    size = workgroup_size(source)
    max_storage = int(limits["max-compute-workgroup-storage-size"])
    if storage > max_storage:
        raise ShaderLimitError(
            f"{name}: {storage} bytes of workgroup memory, the device allows {max_storage}"
        )
    max_inv = int(limits["max-compute-invocations-per-workgroup"])
    if size[0] * size[1] * size[2] > max_inv:
        raise ShaderLimitError(
            f"{name}: workgroup of {size[0] * size[1] * size[2]} invocations, the device allows {max_inv}"
        )
    for axis, dim in zip("xyz", size, strict=False):
        allowed = int(limits[f"max-compute-workgroup-size-{axis}"])
        if dim > allowed:
            raise ShaderLimitError(
                f"{name}: workgroup size {axis}={dim}, the device allows {allowed}"
            )
    return {"workgroup_storage_bytes": storage, "workgroup_size": list(size)}


@dataclass
class Kernel:
    name: str
    path: Path
    pipeline: Any
    layout: Any
    needs: dict[str, Any]


def load_kernel(device: Any, shader_dir: Path, name: str) -> Kernel:
    """Read shaders/NAME.wgsl, check it against the device's limits, and build its pipeline."""
    path = Path(shader_dir) / f"{name}.wgsl"
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ShaderFileError(f"cannot read {path}: {exc}") from exc
    needs = check_limits(name, source, device.limits)
    module = device.create_shader_module(code=source, label=name)
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}, label=name
    )
    return Kernel(name, path, pipeline, pipeline.get_bind_group_layout(0), needs)


def _uniform(device: Any, *words: int | float) -> Any:
    data = np.zeros(max(4, len(words)), dtype=np.uint32)
    for i, v in enumerate(words):
        data[i] = np.float32(v).view(np.uint32) if isinstance(v, float) else v
    return device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.UNIFORM)


def _storage(device: Any, array: np.ndarray, *, out: bool = False) -> Any:
    usage = wgpu.BufferUsage.STORAGE | (wgpu.BufferUsage.COPY_SRC if out else 0)
    return device.create_buffer_with_data(data=np.ascontiguousarray(array), usage=usage)


def _bind(device: Any, kernel: Kernel, *resources: Any) -> Any:
    entries = []
    for i, r in enumerate(resources):
        res = r if isinstance(r, dict) else {"buffer": r, "offset": 0, "size": r.size}
        entries.append({"binding": i, "resource": res})
    return device.create_bind_group(layout=kernel.layout, entries=entries)


def _run(device: Any, kernel: Kernel, groups: list[tuple[Any, tuple[int, int, int]]]) -> float:
    """Encode one pass per (bind group, workgroup counts), submit, wait; seconds submit->idle."""
    encoder = device.create_command_encoder()
    cpass = encoder.begin_compute_pass()
    cpass.set_pipeline(kernel.pipeline)
    for bind_group, (gx, gy, gz) in groups:
        cpass.set_bind_group(0, bind_group)
        cpass.dispatch_workgroups(gx, gy, gz)
    cpass.end()
    buf = encoder.finish()
    start = time.perf_counter()
    device.queue.submit([buf])
    device._poll_wait()
    return time.perf_counter() - start


def _read(device: Any, buffer: Any, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    return np.frombuffer(device.queue.read_buffer(buffer), dtype=dtype).reshape(shape).copy()


def add_one(device: Any, kernel: Kernel, x: np.ndarray) -> np.ndarray:
    n = x.size
    xb = _storage(device, x.astype(np.float32))
    yb = _storage(device, np.full(n, np.nan, dtype=np.float32), out=True)
    bg = _bind(device, kernel, xb, yb, _uniform(device, n))
    wg = kernel.needs["workgroup_size"][0]
    _run(device, kernel, [(bg, (math.ceil(n / wg), 1, 1))])
    return _read(device, yb, np.float32, (n,))


def reduce_sum(device: Any, kernel: Kernel, x: np.ndarray, per_thread: int = 4) -> np.ndarray:
    """Per-workgroup sums of u32 values, WG * per_thread values per workgroup (see reduce.wgsl)."""
    n = x.size
    per_group = kernel.needs["workgroup_size"][0] * per_thread
    groups = math.ceil(n / per_group)
    xb = _storage(device, x.astype(np.uint32))
    ob = _storage(device, np.full(groups, 0xDEADBEEF, dtype=np.uint32), out=True)
    bg = _bind(device, kernel, xb, ob, _uniform(device, n))
    _run(device, kernel, [(bg, (groups, 1, 1))])
    return _read(device, ob, np.uint32, (groups,))


def matmul(device: Any, kernel: Kernel, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m, k = a.shape
    k2, n = b.shape
    if k != k2:
        raise ValueError(f"matmul of {a.shape} by {b.shape}")
    ab = _storage(device, a.astype(np.float32))
    bb = _storage(device, b.astype(np.float32))
    cb = _storage(device, np.full(m * n, np.nan, dtype=np.float32), out=True)
    bg = _bind(device, kernel, ab, bb, cb, _uniform(device, m, n, k))
    wx, wy, _ = kernel.needs["workgroup_size"]
    _run(device, kernel, [(bg, (math.ceil(n / wx), math.ceil(m / wy), 1))])
    return _read(device, cb, np.float32, (m, n))


@dataclass
class RmsTiming:
    """Seconds spent in each part of one rmsnorm() call, and how the rows were split."""

    upload: float = 0.0
    #: submit -> device idle, first dispatch (includes any JIT on first use)
    dispatch: float = 0.0
    #: submit -> device idle of the repeats (warm), when repeats > 0
    repeats: list[float] = field(default_factory=list)
    readback: float = 0.0
    #: elements written past the end of the output (the guard after the last row)
    overrun: int = 0
    chunks: int = 1
    #: bytes one dispatch must move at least: read x, write y, read w once
    bytes: int = 0

    def gbps(self) -> float | None:
        best = min(self.repeats) if self.repeats else self.dispatch
        return self.bytes / best / 1e9 if best > 0 else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "upload_s": round(self.upload, 6),
            "dispatch_s": round(self.dispatch, 6),
            "repeat_s": [round(r, 6) for r in self.repeats],
            "readback_s": round(self.readback, 6),
            "chunks": self.chunks,
            "bytes": self.bytes,
            "gbps": None if self.gbps() is None else round(self.gbps() or 0.0, 4),
        }


def rows_per_chunk(rows: int, d: int, binding_limit: int, alignment: int) -> int:
    """Most rows whose x (or y) slice fits one storage binding, at an offset the device accepts."""
    row_bytes = d * 4
    fit = binding_limit // row_bytes
    if fit >= rows:
        return rows
    step = alignment // math.gcd(row_bytes, alignment)
    fit = (fit // step) * step
    if fit == 0:
        raise ShaderLimitError(
            f"a chunk of rows of d={d} ({row_bytes} bytes each) at offset alignment {alignment} "
            f"does not fit a {binding_limit}-byte storage binding"
        )
    return fit


#: poisoned elements after the output, to catch a kernel that writes past its last row
GUARD = 64


def rmsnorm(
    device: Any,
    kernel: Kernel,
    x: np.ndarray,
    w: np.ndarray,
    *,
    eps: float = EPS,
    binding_limit: int | None = None,
    max_groups: int | None = None,
    repeats: int = 0,
) -> tuple[np.ndarray, RmsTiming]:
    """y = x * rsqrt(mean(x^2, axis=1) + eps) * w on `device`, for x of shape (rows, d), f32.

    The output is poisoned with NaN before the dispatch, so an element the kernel does not write
    comes back as NaN. Rows are split into chunks so that no binding exceeds the device's
    max-storage-buffer-binding-size (or `binding_limit`, if smaller); each chunk is one dispatch,
    with rows past max-compute-workgroups-per-dimension (or `max_groups`, if smaller) folded into
    the y dimension. `repeats` more warm dispatches are timed after the readback.
    """
    rows, d = x.shape
    limits = device.limits
    limit = int(limits["max-storage-buffer-binding-size"])
    if binding_limit is not None:
        limit = min(limit, binding_limit)
    limit -= GUARD * 4  # each output binding carries the guard too
    align = int(limits["min-storage-buffer-offset-alignment"])
    groups_limit = int(limits["max-compute-workgroups-per-dimension"])
    if max_groups is not None:
        groups_limit = min(groups_limit, max_groups)
    per_chunk = rows_per_chunk(rows, d, limit, align)
    timing = RmsTiming(bytes=(2 * rows * d + d) * 4)

    start = time.perf_counter()
    xb = _storage(device, np.ascontiguousarray(x, dtype=np.float32))
    wb = _storage(device, np.ascontiguousarray(w, dtype=np.float32))
    # a guard of poisoned elements after the last row, inside each output binding: a kernel that
    # writes past its row writes there (robust access would drop a write past the binding, and
    # one row's overrun into the next races with that row's own write)
    yb = _storage(device, np.full(rows * d + GUARD, np.nan, dtype=np.float32), out=True)
    groups = []
    for first in range(0, rows, per_chunk):
        n = min(per_chunk, rows - first)
        gx = min(n, groups_limit)
        gy = math.ceil(n / gx)
        if gy > groups_limit:
            raise ShaderLimitError(
                f"{n} rows need more than {groups_limit}x{groups_limit} workgroups"
            )
        off, size = first * d * 4, n * d * 4
        bg = _bind(
            device,
            kernel,
            {"buffer": xb, "offset": off, "size": size},
            wb,
            {"buffer": yb, "offset": off, "size": size + GUARD * 4},
            _uniform(device, n, d, float(eps), gx),
        )
        groups.append((bg, (gx, gy, 1)))
    timing.chunks = len(groups)
    timing.upload = time.perf_counter() - start

    timing.dispatch = _run(device, kernel, groups)
    start = time.perf_counter()
    full = _read(device, yb, np.float32, (rows * d + GUARD,))
    timing.readback = time.perf_counter() - start
    timing.overrun = int(np.count_nonzero(~np.isnan(full[rows * d :])))
    y = full[: rows * d].reshape(rows, d)
    timing.repeats = [_run(device, kernel, groups) for _ in range(repeats)]
    return y, timing


def rmsnorm_reference(x: np.ndarray, w: np.ndarray, eps: float = EPS) -> np.ndarray:
    """The float64 reference, from the same f32 inputs (one float64 copy, then in place)."""
    ref: np.ndarray = x.astype(np.float64)
    mean_sq = np.einsum("ij,ij->i", ref, ref) / ref.shape[1]
    ref *= (1.0 / np.sqrt(mean_sq + eps))[:, None]
    ref *= w.astype(np.float64)
    return ref
