"""The mounts a library lies on: a file on a filesystem mounted noexec cannot be mapped with
PROT_EXEC, so ld.so fails with "failed to map segment from shared object"."""

from __future__ import annotations

from vkdoctor.model import mountinfo
from vkdoctor.model.context import Context


def mounts(ctx: Context) -> list[tuple[str, str]]:
    """(mount point, per-mount options) of this process's mounts, from /proc/self/mountinfo;
    later (over-)mounts last. Empty under --root: a tree is not run where it lies."""
    return ctx.fact(_mounts)


def _mounts(ctx: Context) -> list[tuple[str, str]]:
    if not ctx.live:
        return []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError:
        return []
    return [(m.point, ",".join(m.options)) for m in mountinfo.parse(text)]


def noexec_mount(ctx: Context, path: str) -> str | None:
    """The mount point holding `path` (its real path) when it is mounted noexec."""
    table = ctx.fact(_deciding_first)
    if not table:
        return None
    from vkdoctor.elf.reader import resolved

    try:
        real = str(resolved(ctx, path))
    except OSError:
        return None
    for point, inside, noexec in table:
        if real == point or real.startswith(inside):
            return point if noexec else None
    return None


def _deciding_first(ctx: Context) -> list[tuple[str, str, bool]]:
    """(mount point, its prefix, noexec) with the mount that holds a path first among those
    whose prefix it has: the deepest point, and of one point mounted twice the later mount.
    Empty when no mount is noexec (then none holds anything)."""
    table = mounts(ctx)
    if not any("noexec" in options.split(",") for _, options in table):
        return []
    ranked = sorted(enumerate(table), key=lambda e: (-len(e[1][0]), -e[0]))
    return [
        (point, point.rstrip("/") + "/", "noexec" in options.split(","))
        for _, (point, options) in ranked
    ]
