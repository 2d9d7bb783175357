"""Loader paths to host paths, with symbolic links resolved inside --root.

On the live machine this is ctx.under. Inspecting another root, an absolute link target such as
/etc/alternatives/x must be looked up inside that root, not on the host, so links are followed
one component at a time here. A loop gives back a path that fails with ELOOP, like the kernel.
"""

from __future__ import annotations

from pathlib import Path

from vkdoctor.context import Context

_MAX_LINKS = 40


def host_path(ctx: Context, path: str) -> Path:
    """Where `path` (absolute, or relative to ctx.cwd) lives on this machine."""
    if ctx.live:
        return ctx.under(path)
    if not path.startswith("/"):
        path = str(ctx.cwd).rstrip("/") + "/" + path
    todo = [p for p in path.split("/") if p]
    done: list[str] = []
    links = 0
    while todo:
        part = todo.pop(0)
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = "/" + "/".join([*done, part])
        host = ctx.under(candidate)
        try:
            target = str(host.readlink())
        except OSError:
            done.append(part)
            continue
        links += 1
        if links > _MAX_LINKS:
            return ctx.under(candidate)  # the host reports ELOOP or the like for it
        parts = [p for p in target.split("/") if p]
        if target.startswith("/"):
            done = []
        todo = parts + todo
    return ctx.under("/" + "/".join(done))
