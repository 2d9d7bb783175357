"""Where wgpu-py will load wgpu-native from, found the way wgpu-py finds it, without importing wgpu.

wgpu-py (0.32, backends/wgpu_native/_ffi.py): WGPU_LIB_PATH when set; otherwise
libwgpu_native-release.so (libwgpu_native-debug.so with WGPU_DEBUG=1), then libwgpu_native.so,
each first in the package's resources/ directory, then in sys.exec_prefix/lib.
This describes the Python environment running vkdoctor, so it only makes sense on the live host.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from vkdoctor.model.context import Context
from vkdoctor.model.record import record


@record(frozen=True, kw_only=True)
class WgpuNative:
    #: what will be dlopened (a path, or WGPU_LIB_PATH verbatim), None when nothing was found
    path: str | None
    #: "WGPU_LIB_PATH", "resources", "exec_prefix"
    source: str | None
    #: the wgpu package directory, None when wgpu is not installed
    package_dir: str | None
    #: every file name considered, in order
    candidates: tuple[str, ...]


def find_wgpu_native(ctx: Context) -> WgpuNative:
    override = (ctx.env.get("WGPU_LIB_PATH") or "").strip()
    spec = importlib.util.find_spec("wgpu")
    pkg = str(Path(spec.origin).parent) if spec is not None and spec.origin else None
    if override:
        return WgpuNative(
            path=override, source="WGPU_LIB_PATH", package_dir=pkg, candidates=(override,)
        )
    debug = (ctx.env.get("WGPU_DEBUG") or "").strip() == "1"
    builds = ["-debug"] if debug else ["-release", ""]
    candidates: list[str] = []
    for build in builds:
        name = f"libwgpu_native{build}.so"
        places = []
        if pkg is not None:
            places.append((str(Path(pkg) / "resources" / name), "resources"))
        places.append((str(Path(sys.exec_prefix) / "lib" / name), "exec_prefix"))
        for path, source in places:
            candidates.append(path)
            if ctx.under(path).exists():
                return WgpuNative(
                    path=path, source=source, package_dir=pkg, candidates=tuple(candidates)
                )
    return WgpuNative(path=None, source=None, package_dir=pkg, candidates=tuple(candidates))
