"""The compute probe: does this adapter compute correctly? Prints exactly one JSON document.

Run as a child process by vkdoctor (vkdoctor/children/probe.py); usable alone:
    python probes/rmsnorm_probe.py --cpu [--seed N] [--shader-dir DIR]

It lists every adapter wgpu sees, picks one (--cpu: a CPU adapter on the chosen backend; --adapter
TEXT: the first whose name contains TEXT; default: what wgpu prefers for high performance), then
climbs a ladder (add one, workgroup reduction, small matmul) and runs RMSNorm cases against a
float64 reference. Progress goes to stderr as "vkdoctor-probe: stage NAME" lines, so a parent can
tell where a crash or hang happened. Imports only wgpu, numpy and the standard library.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

PROBE_VERSION = 1
STAGE_PREFIX = "vkdoctor-probe: stage "
#: the adapters seen and the one chosen, one JSON line on stderr before the first device call
SEEN_PREFIX = "vkdoctor-probe: seen "
TOLERANCE = 1e-5
#: element-wise errors are relative to max(|ref|, FLOOR * rms of the reference row)
FLOOR = 1e-3
#: (rows, d, binding limit, workgroups per dimension): the seed's d in {8, 16, 32}, d = 1, odd d,
#: d larger than the workgroup, d = 4096 over many workgroups; the last case lowers the device's
#: binding and dispatch limits so that the split into bindings and the fold of rows into the
#: dispatch's y dimension run every time without tensors of hundreds of MiB
CASES: tuple[tuple[int, int, int | None, int | None], ...] = (
    (4, 8, None, None),
    (4, 16, None, None),
    (4, 32, None, None),
    (3, 1, None, None),
    (5, 33, None, None),
    (7, 1001, None, None),
    (512, 4096, None, None),
    (300, 4096, 1 << 20, 16),
)
#: the ladder's rungs, in order
RUNGS = ("add-one", "workgroup-reduction", "matmul")
BACKENDS = {"vulkan": "Vulkan", "opengl": "OpenGL"}
#: wgpu's preference order for power_preference="high-performance"
TYPE_ORDER = {"DiscreteGPU": 0, "IntegratedGPU": 1, "Unknown": 2, "VirtualGPU": 3, "CPU": 4}
#: what --gpu accepts: a GPU of any kind, never a CPU rasterizer nor an adapter of unknown type
GPU_TYPES = ("DiscreteGPU", "IntegratedGPU", "VirtualGPU")

_started = time.perf_counter()
_stages: list[dict[str, Any]] = []


def stage(name: str) -> None:
    now = time.perf_counter() - _started
    if _stages:
        _stages[-1]["seconds"] = round(now - _stages[-1]["at"], 6)
    _stages.append({"name": name, "at": round(now, 6)})
    sys.stderr.write(STAGE_PREFIX + name + "\n")
    sys.stderr.flush()


def parse_args(argv: list[str]) -> argparse.Namespace:
    default_shaders = Path(__file__).resolve().parent.parent / "shaders"
    if not default_shaders.is_dir():
        default_shaders = Path(__file__).resolve().parent.parent / "_shaders"
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    choice = p.add_mutually_exclusive_group()
    choice.add_argument("--cpu", action="store_true", help="a CPU adapter (lavapipe, llvmpipe)")
    choice.add_argument(
        "--gpu",
        action="store_true",
        help="an adapter that is not a CPU (discrete, integrated, virtual)",
    )
    choice.add_argument(
        "--adapter", metavar="TEXT", help="the first adapter whose name contains TEXT"
    )
    p.add_argument("--backend", choices=sorted(BACKENDS), default="vulkan")
    p.add_argument("--seed", type=int, help="repeat a run's random inputs")
    p.add_argument("--shader-dir", type=Path, default=default_shaders)
    p.add_argument("--parent", type=int, help="die with this process (vkdoctor)")
    p.add_argument(
        "--capabilities", action="store_true", help="then the capability ladder (f16, bf16, ...)"
    )
    return p.parse_args(argv)


def die_with_parent(parent: int | None) -> None:
    """SIGKILL this process when vkdoctor dies (a SIGTERM from a cancelled CI job reaches only
    vkdoctor: this child runs in its own session, so that a hang can be killed as a group)."""
    if parent is None:
        return
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


_HIDING = re.compile(r"^(?P<reason>.*?),? hiding adapter:? (?P<name>.+)$")


def enumerate_adapters(wgpu: Any) -> tuple[list[Any], list[dict[str, str]]]:
    """wgpu's adapters, and the ones it hides with the reason it logs at debug level
    ("Adapter is not Vulkan compliant, hiding adapter: NAME")."""
    import logging

    hidden: list[dict[str, str]] = []

    class Hiding(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            m = _HIDING.match(record.getMessage().strip())
            if m:
                hidden.append({"name": m["name"].strip(), "reason": m["reason"].strip()})

    handler = Hiding(level=logging.DEBUG)
    before = wgpu.logger.level
    wgpu.logger.addHandler(handler)
    wgpu.logger.setLevel(logging.DEBUG)
    try:
        adapters = list(wgpu.gpu.enumerate_adapters_sync())
    finally:
        wgpu.logger.setLevel(before)
        wgpu.logger.removeHandler(handler)
    return adapters, list({h["name"]: h for h in hidden}.values())


def adapter_record(a: Any) -> dict[str, Any]:
    info = a.info
    return {
        "name": str(info.get("device") or a.summary),
        "type": str(info.get("adapter_type") or "Unknown"),
        "backend": str(info.get("backend_type") or "Unknown"),
        "driver": info.get("description") or None,
        "vendor": info.get("vendor") or None,
        "vendor_id": _int_or_none(info.get("vendor_id")),
        "device_id": _int_or_none(info.get("device_id")),
        "summary": a.summary,
    }


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def choose(
    adapters: list[Any], records: list[dict[str, Any]], args: argparse.Namespace
) -> tuple[int | None, str, list[dict[str, Any]]]:
    """(index of the adapter to use or None, why, adapters refused for being on another backend)."""
    backend = BACKENDS[args.backend]

    def wanted(r: dict[str, Any]) -> bool:
        if args.cpu:
            return bool(r["type"] == "CPU")
        if args.gpu:
            return r["type"] in GPU_TYPES
        if args.adapter:
            text = args.adapter.lower()
            return text in r["name"].lower() or text in r["summary"].lower()
        return True

    matching = [i for i, r in enumerate(records) if wanted(r)]
    usable = [i for i in matching if records[i]["backend"] == backend]
    refused = [records[i] for i in matching if records[i]["backend"] != backend]
    what = (
        f"{backend} CPU adapter"
        if args.cpu
        else f"{backend} GPU adapter (discrete, integrated or virtual)"
        if args.gpu
        else f"{backend} adapter whose name contains {args.adapter!r}"
        if args.adapter
        else f"{backend} adapter"
    )
    if usable:
        if args.cpu or args.adapter:
            return usable[0], f"the first {what}", refused
        if args.gpu:
            best = min(usable, key=lambda i: (TYPE_ORDER[records[i]["type"]], i))
            return best, f"the {what} wgpu prefers for high performance", refused
        best = min(usable, key=lambda i: (TYPE_ORDER.get(records[i]["type"], 2), i))
        return best, f"the {what} wgpu prefers for high performance", refused
    why = f"no {what}"
    if refused:
        names = "; ".join(f"{r['backend']} {r['name']} ({r['driver']})" for r in refused)
        kinds = sorted({r["backend"] for r in refused})
        cpu_gl = [r for r in refused if r["backend"] == "OpenGL" and r["type"] == "CPU"]
        if cpu_gl and backend == "Vulkan":
            name = cpu_gl[0]["name"]
            short = "llvmpipe" if "llvmpipe" in name.lower() else name
            why += f"; OpenGL {short} is present but does not count"
        else:
            why += f"; {', '.join(kinds)} adapters are present but do not count"
        why += f" (refused: {names})"
    elif records:
        why += "; adapters seen: " + "; ".join(
            f"{r['backend']} {r['name']} ({r['type']})" for r in records
        )
    else:
        why += "; wgpu sees no adapter at all"
    return None, why, refused


class RungFailed(Exception):
    def __init__(self, rung: str, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.rung = rung
        self.detail = detail


def errors(y: Any, ref: Any) -> dict[str, Any]:
    """Element-wise error with a floor, and row-wise norm error; the worst element.

    element-wise: |y - ref| / max(|ref|, FLOOR * rms(ref row)), maximum over all elements;
    norm-wise: ||y_row - ref_row||_2 / ||ref_row||_2, maximum over rows. A NaN or inf in y (an
    element the kernel did not write stays NaN) makes both infinite, and is the worst element.
    """
    import numpy as np

    ref_sq = np.einsum("ij,ij->i", ref, ref)
    floor = np.maximum(FLOOR * np.sqrt(ref_sq / ref.shape[1]), 1e-30)[:, None]
    diff = y.astype(np.float64)
    diff -= ref
    denom = np.abs(ref)
    np.maximum(denom, floor, out=denom)
    with np.errstate(invalid="ignore", over="ignore"):
        norm = np.sqrt(np.einsum("ij,ij->i", diff, diff) / np.maximum(ref_sq, 1e-60))
        elem = np.abs(diff, out=diff)
        elem /= denom
    flat = int(np.argmax(elem))
    row, col = divmod(flat, ref.shape[1])
    max_elem = float(elem.flat[flat])
    max_norm = float(np.max(norm))
    nonfinite = int(y.size - np.count_nonzero(np.isfinite(y)))
    finite = math.isfinite(max_elem) and math.isfinite(max_norm) and nonfinite == 0
    return {
        "max_rel_err": max_elem if finite else None,
        "norm_rel_err": max_norm if finite else None,
        "nonfinite": nonfinite,
        "ok": bool(finite and max_elem <= TOLERANCE and max_norm <= TOLERANCE),
        "worst": {
            "index": [row, col],
            "value": _json_float(float(y[row, col])),
            "reference": float(ref[row, col]),
            "rel_err": _json_float(max_elem),
        },
    }


def _finite(v: Any) -> Any:
    """JSON has no NaN or infinity: such floats become the strings 'nan', 'inf', '-inf'."""
    if isinstance(v, float):
        return _json_float(v)
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def _json_float(v: float) -> float | str:
    return v if math.isfinite(v) else str(v)


def ladder(
    device: Any, kernels: Any, shader_dir: Path, rng: Any, rungs: list[dict[str, Any]]
) -> None:
    """Climb the rungs, appending each result to `rungs`; raise RungFailed at the first failure."""
    import numpy as np

    def rung(name: str, fn: Any) -> None:
        stage(f"ladder:{name}")
        t = time.perf_counter()
        failure: RungFailed | None = None
        try:
            detail = fn()
        except RungFailed as exc:
            failure = exc
        except kernels.ShaderLimitError as exc:
            failure = RungFailed(name, f"device limits: {exc}")
        except Exception as exc:
            if not _is_gpu_error(exc):
                raise
            failure = RungFailed(name, f"{type(exc).__name__}: {exc}")
        seconds = round(time.perf_counter() - t, 6)
        if failure is not None:
            rungs.append(
                {
                    "rung": name,
                    "ok": False,
                    "error": str(failure),
                    **failure.detail,
                    "seconds": seconds,
                }
            )
            raise failure
        rungs.append({"rung": name, "ok": True, **detail, "seconds": seconds})

    def do_add_one() -> dict[str, Any]:
        k = kernels.load_kernel(device, shader_dir, "add_one")
        x = rng.integers(-1000, 1000, 1000).astype(np.float32)
        y = kernels.add_one(device, k, x)
        bad = np.flatnonzero(~(y == x + 1))
        if bad.size:
            i = int(bad[0])
            raise RungFailed(
                "add-one",
                f"{bad.size} of {x.size} elements wrong; first at [{i}]: "
                f"{float(y[i]):g}, expected {float(x[i] + 1):g}",
                wrong=int(bad.size),
                index=i,
                value=_json_float(float(y[i])),
                expected=float(x[i] + 1),
            )
        return {"n": int(x.size), "wrong": 0}

    def do_reduce() -> dict[str, Any]:
        k = kernels.load_kernel(device, shader_dir, "reduce")
        x = rng.integers(0, 1000, 64 * 4 * 5 + 37).astype(np.uint32)
        got = kernels.reduce_sum(device, k, x)
        per = k.needs["workgroup_size"][0] * 4
        want = np.array([int(x[i : i + per].sum()) for i in range(0, x.size, per)], dtype=np.uint64)
        bad = np.flatnonzero(got.astype(np.uint64) != want)
        if bad.size:
            i = int(bad[0])
            raise RungFailed(
                "workgroup-reduction",
                f"{bad.size} of {want.size} workgroup sums wrong; "
                f"group {i}: {int(got[i])}, expected {int(want[i])}",
                group=i,
                value=int(got[i]),
                expected=int(want[i]),
            )
        return {
            "n": int(x.size),
            "groups": int(want.size),
            "workgroup_storage_bytes": k.needs["workgroup_storage_bytes"],
        }

    def do_matmul() -> dict[str, Any]:
        k = kernels.load_kernel(device, shader_dir, "matmul")
        pairs = [
            (np.array([[1, 2], [3, 4]]), np.array([[2, 3], [4, 5]])),
            (rng.integers(-8, 9, (13, 7)), rng.integers(-8, 9, (7, 11))),
        ]
        results = []
        for a, b in pairs:
            got = kernels.matmul(device, k, a, b)
            results.append(got)
            want = a @ b
            if not np.array_equal(got, want.astype(np.float32)):
                r, c = np.argwhere(~(got == want))[0]
                raise RungFailed(
                    "matmul",
                    f"{a.shape[0]}x{a.shape[1]} by {b.shape[0]}x{b.shape[1]}: "
                    f"c[{r},{c}] = {float(got[r, c]):g}, expected {int(want[r, c])}",
                    index=[int(r), int(c)],
                    value=_json_float(float(got[r, c])),
                    expected=int(want[r, c]),
                    got=got.tolist() if got.size <= 4 else None,
                )
        return {"result_2x2": results[0].astype(int).tolist()}

    for name, fn in zip(RUNGS, (do_add_one, do_reduce, do_matmul), strict=True):
        rung(name, fn)


def _is_gpu_error(exc: BaseException) -> bool:
    import wgpu

    return isinstance(exc, (wgpu.GPUError, RuntimeError)) and not isinstance(
        exc, (NotImplementedError, RecursionError)
    )


def run_cases(device: Any, kernels: Any, shader_dir: Path, rng: Any) -> list[dict[str, Any]]:
    import numpy as np

    stage("rmsnorm:compile")
    kernel = kernels.load_kernel(device, shader_dir, "rmsnorm")
    cases = []
    for rows, d, binding_limit, max_groups in CASES:
        split = binding_limit is not None or max_groups is not None
        stage(f"rmsnorm:{rows}x{d}" + (" split" if split else ""))
        x = rng.standard_normal((rows, d), dtype=np.float32)
        x *= (10.0 ** rng.uniform(-2, 2, (rows, 1))).astype(np.float32)
        w = (rng.uniform(0.5, 1.5, d) * rng.choice([-1.0, 1.0], d)).astype(np.float32)
        y, timing = kernels.rmsnorm(
            device, kernel, x, w, binding_limit=binding_limit, max_groups=max_groups
        )
        case = {"rows": rows, "d": d, **errors(y, kernels.rmsnorm_reference(x, w))}
        if timing.overrun:
            # it wrote past its last row: into memory that is not its output
            case["ok"] = False
            case["overrun"] = timing.overrun
        if split:
            case["binding_limit"] = binding_limit
            case["max_groups"] = max_groups
        case["timing"] = timing.as_dict()
        cases.append(case)
    return cases


def main(argv: list[str], out: Any) -> int:
    args = parse_args(argv)
    die_with_parent(args.parent)
    doc: dict[str, Any] = {
        "probe_version": PROBE_VERSION,
        "status": "error",
        "reason": None,
        "summary": None,
        "requested": {
            "cpu": args.cpu,
            "gpu": args.gpu,
            "adapter": args.adapter,
            "backend": args.backend,
        },
        "seed": args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little"),
        "tolerance": TOLERANCE,
        "floor": FLOOR,
        "backend": None,
        "adapter": None,
        "adapters": [],
        "ladder": [],
        "cases": [],
        "stages": _stages,
        # what a complete run reports, so that a run that stops early can say what it skipped
        "plan": {"ladder": list(RUNGS), "cases": [[rows, d] for rows, d, _, _ in CASES]},
    }
    try:
        run(args, doc)
    except Exception as exc:
        doc["status"] = "error"
        doc["traceback"] = traceback.format_exc()
        line = _dlerror_line(exc)
        if line is not None:
            # numpy wraps ld.so's one line in a 20-line banner: the line is the news
            doc["reason"] = "library-error"
            doc["summary"] = f"the probe raised {type(exc).__name__}: {line}"
            sys.stderr.write(f"{type(exc).__name__}: {line}\n")
        elif _stages and _stages[-1]["name"] == "request-device":
            # the adapter was there; its driver (or wgpu over it) would not open a device
            doc["reason"] = "device-error"
            doc["summary"] = f"the adapter's device could not be created: {exc}"
            sys.stderr.write(doc["traceback"])
        else:
            doc["reason"] = "python-error"
            doc["summary"] = f"the probe raised {type(exc).__name__}: {exc}"
            sys.stderr.write(doc["traceback"])
    doc["stage"] = _stages[-1]["name"] if _stages else None
    stage("done")
    _stages.pop()
    doc["seconds"] = round(time.perf_counter() - _started, 6)
    import json

    out.write(json.dumps(_finite(doc), allow_nan=False) + "\n")
    out.flush()
    return 0 if doc["status"] == "pass" else 1


#: what dlerror() says when a shared library cannot load (as opposed to a module not installed)
_DLERRORS = ("undefined symbol", "cannot open shared object file", "version `", "wrong ELF class")


def _library_error(exc: BaseException) -> bool:
    """An ImportError (or OSError) that is ld.so failing to load a shared library: a module that
    is installed but cannot load in this environment (LD_LIBRARY_PATH, LD_PRELOAD)."""
    return _dlerror_line(exc) is not None


def _dlerror_line(exc: BaseException) -> str | None:
    """ld.so's own line ("X: version `Y' not found (required by Z)") from the exception or what
    caused it, without the text a package wraps it in; None when it is no library error."""
    chain: list[BaseException] = [exc]
    while chain[-1].__cause__ or chain[-1].__context__:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)  # type: ignore[arg-type]
    for e in chain:
        for line in str(e).splitlines():
            if any(marker in line for marker in _DLERRORS):
                return line.strip().removeprefix("Original error was: ")
    return None


def _frames(exc: BaseException) -> list[str]:
    """The files of the traceback (and of what the import found), where the report looks for a
    PYTHONPATH entry that shadows the installed package."""
    out = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    path = getattr(exc, "path", None)
    return out + ([path] if isinstance(path, str) else [])


def run(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    stage("import")
    try:
        import wgpu
    except ImportError as exc:
        if _library_error(exc):
            raise
        doc["reason"] = "wgpu-missing"
        doc["import_files"] = _frames(exc)
        # (how to install it depends on this Python: the report's fix says)
        doc["summary"] = (
            f"wgpu is not importable in {sys.executable} ({exc}); the probe needs wgpu and numpy"
        )
        return
    try:
        import numpy as np
    except ImportError as exc:
        if _library_error(exc):
            raise
        doc["reason"] = "numpy-missing"
        doc["import_files"] = _frames(exc)
        doc["summary"] = (
            f"numpy is not importable in {sys.executable} ({exc}); the probe needs it for its "
            "float64 reference"
        )
        return
    doc["wgpu"] = wgpu.__version__
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import wgpu_kernels as kernels

    stage("enumerate-adapters")
    adapters, hidden = enumerate_adapters(wgpu)
    records = [adapter_record(a) for a in adapters]
    doc["adapters"] = records
    doc["hidden_adapters"] = hidden
    index, why, refused = choose(adapters, records, args)
    doc["choice"] = why
    if index is None and hidden:
        why += "; wgpu hides " + "; ".join(f"{h['name']} ({h['reason']})" for h in hidden)
        doc["choice"] = why
    if index is None:
        doc["refused"] = refused
        doc["status"] = "no-adapter"
        doc["reason"] = "no-adapter"
        doc["summary"] = why
        return
    chosen = records[index]
    chosen["used"] = True
    doc["backend"] = chosen["backend"]
    doc["adapter"] = {k: chosen[k] for k in ("name", "type", "driver", "vendor_id", "device_id")}
    # said now: a crash further on leaves no document, and the adapters are still known
    import json

    seen = {k: doc[k] for k in ("adapters", "hidden_adapters", "choice", "backend", "adapter")}
    sys.stderr.write(SEEN_PREFIX + json.dumps(seen) + "\n")
    sys.stderr.flush()

    stage("request-device")
    device = adapters[index].request_device_sync()
    doc["limits"] = {
        k: int(device.limits[k])
        for k in (
            "max-compute-workgroup-storage-size",
            "max-compute-invocations-per-workgroup",
            "max-compute-workgroups-per-dimension",
            "max-storage-buffer-binding-size",
            "max-buffer-size",
            "min-storage-buffer-offset-alignment",
        )
    }
    rng = np.random.default_rng(doc["seed"])
    try:
        kernels_run(device, kernels, args.shader_dir, rng, doc, chosen)
    except kernels.ShaderFileError as exc:
        doc["status"] = "error"
        doc["reason"] = "shader-unreadable"
        doc["summary"] = str(exc)
    if args.capabilities:
        capability_run(adapters[index], args.shader_dir, rng, doc, chosen)


def capability_run(
    adapter: Any, shader_dir: Path, rng: Any, doc: dict[str, Any], chosen: Any
) -> None:
    """The capability ladder after the probe; a rung that fails or errs fails the probe."""
    import capabilities

    doc["capabilities"] = capabilities.climb(adapter, shader_dir, rng, stage)
    bad = [c for c in doc["capabilities"] if c["status"] in ("fail", "error")]
    if bad and doc["status"] == "pass":
        doc["status"] = "fail"
        doc["reason"] = "capability"
        names = ", ".join(c["name"] for c in bad)
        doc["summary"] = (
            f"capability rung{'s' if len(bad) > 1 else ''} {names} failed on {chosen['name']}: "
            f"{bad[0]['name']}: {bad[0]['detail']}"
        )


def kernels_run(
    device: Any, kernels: Any, shader_dir: Path, rng: Any, doc: dict[str, Any], chosen: Any
) -> None:
    """The ladder, then the RMSNorm cases; fills doc's status, reason and summary."""
    try:
        ladder(device, kernels, shader_dir, rng, doc["ladder"])
    except RungFailed as exc:
        doc["status"] = "fail"
        doc["reason"] = "ladder"
        doc["failed_rung"] = exc.rung
        doc["summary"] = f"ladder rung {exc.rung} failed on {chosen['name']}: {exc}"
        return
    try:
        doc["cases"] = run_cases(device, kernels, shader_dir, rng)
    except kernels.ShaderLimitError as exc:
        doc["status"] = "fail"
        doc["reason"] = "limits"
        doc["summary"] = f"RMSNorm does not fit {chosen['name']}: {exc}"
        return
    except Exception as exc:
        if not _is_gpu_error(exc):
            raise
        doc["status"] = "fail"
        doc["reason"] = "gpu-error"
        doc["summary"] = f"RMSNorm failed on {chosen['name']}: {type(exc).__name__}: {exc}"
        return
    bad = [c for c in doc["cases"] if not c["ok"]]
    if bad:
        c = bad[0]
        wst = c["worst"]
        doc["status"] = "fail"
        doc["reason"] = "wrong-numbers"
        err = "not finite" if c["max_rel_err"] is None else f"{c['max_rel_err']:.3g}"
        if c.get("overrun"):
            doc["summary"] = (
                f"RMSNorm wrote past the end of its output on {chosen['name']}: "
                f"{c['overrun']} element(s) after the last row of {c['rows']}x{c['d']} (a kernel "
                "that writes one past its row overwrites the next row's first element)"
            )
            return
        doc["summary"] = (
            f"RMSNorm gave wrong numbers on {chosen['name']}: {len(bad)} of {len(doc['cases'])} cases "
            f"over {TOLERANCE:g}; first {c['rows']}x{c['d']}: max relative error {err}"
            f" ({c['nonfinite']} non-finite), worst y[{wst['index'][0]},{wst['index'][1]}] = "
            f"{wst['value']} vs reference {wst['reference']:.9g}"
        )
        return
    worst = max(c["max_rel_err"] for c in doc["cases"])
    doc["status"] = "pass"
    doc["reason"] = "pass"
    doc["summary"] = (
        f"{chosen['name']} on {chosen['backend']}: {len(doc['cases'])} RMSNorm cases within "
        f"{TOLERANCE:g} (worst {worst:.2g}), every stage passed"
    )


if __name__ == "__main__":
    import faulthandler
    import signal

    # a parent that is about to kill a hung probe asks for the Python stacks first
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # Native code that prints to stdout would corrupt the JSON: stdout goes to stderr, and the
    # document to a private copy of the original stdout.
    sys.stdout.flush()
    _json_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.exit(main(sys.argv[1:], _json_out))
