"""`vkdoctor --version`: vkdoctor's version and what a Vulkan compute run here would use."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from vkdoctor import __version__
from vkdoctor.model.context import Context


def wgpu_native_version(path: str) -> str | None:
    """The version a wgpu-native library reports (wgpuGetVersion: major, minor, patch, build,
    a byte each); None when it cannot be loaded or has no such function."""
    import ctypes

    try:
        lib = ctypes.CDLL(path)
        get = lib.wgpuGetVersion
    except (OSError, AttributeError):
        return None
    get.restype = ctypes.c_uint32
    get.argtypes = []
    v = int(get())
    return ".".join(str((v >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def version_text() -> str:
    """One line each: vkdoctor, Python, wgpu, wgpu-native and the Vulkan loader, each 'not
    found' when absent."""
    from vkdoctor.elf.wgpu import find_wgpu_native
    from vkdoctor.loader.version import loader_version
    from vkdoctor.machine.host import _version_of

    ctx = Context(env=dict(os.environ), cwd=Path.cwd())
    native = find_wgpu_native(ctx)
    if native.path is None:
        native_line = "not found"
    else:
        version = wgpu_native_version(native.path) or "version unknown"
        native_line = f"{version} ({native.path})"
    loader = ctx.fact(loader_version)
    loader_line = f"{loader.text} ({loader.path})" if loader.path else "not found (libvulkan.so.1)"
    rows = [
        ("vkdoctor", __version__),
        ("Python", f"{sys.version.split()[0]} ({sys.executable})"),
        ("wgpu", _version_of("wgpu") or "not installed"),
        ("wgpu-native", native_line),
        ("Vulkan loader", loader_line),
    ]
    return "\n".join(f"{name + ':':<15}{value}" for name, value in rows)
