"""Loader paths to host paths, with symbolic links resolved inside --root.

On the live machine the path is left for the kernel to resolve, so that a dangling link or a
loop is reported as such when the manifest is opened; inspecting another root, links are
followed inside that root by Context.resolve.
"""

from __future__ import annotations

from pathlib import Path

from vkdoctor.model.context import Context


def host_path(ctx: Context, path: str) -> Path:
    """Where `path` (absolute, or relative to ctx.cwd) lives on this machine."""
    if ctx.live:
        return ctx.under(path)
    return ctx.resolve(path)
