"""Spellings of one file path that a package database may have recorded.

pacman and rpm record canonical paths (/usr/lib/...), dpkg records what the package shipped
(/lib/x86_64-linux-gnu/libc.so.6 on a merged-/usr system), and ld.so reports whichever directory
it searched first. So a lookup tries the path as given, the path with its directories resolved
inside the tree, the /lib <-> /usr/lib alias, and the fully resolved file.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from vkdoctor.context import Context

#: top-level directories that merged-/usr systems turn into symlinks into /usr
USRMERGE = ("lib", "lib32", "lib64", "libx32", "bin", "sbin")
_MAX_LINKS = 40


def resolve_in_root(ctx: Context, path: str, *, last: bool = True) -> str:
    """`path` with symlinks resolved as if `ctx.root` were `/` (absolute links stay in the tree).

    With `last=False` the final component is kept as it is (the directory part only is resolved).
    """
    parts = [p for p in PurePosixPath(path).parts if p != "/"]
    done: list[str] = []
    hops = 0
    while parts:
        name = parts.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            if done:
                done.pop()
            continue
        candidate = "/" + "/".join([*done, name])
        if not parts and not last:
            done.append(name)
            break
        host = ctx.under(candidate)
        try:
            target = str(host.readlink())
        except OSError:
            done.append(name)
            continue
        hops += 1
        if hops > _MAX_LINKS:
            done.append(name)
            continue
        if target.startswith("/"):
            done = []
        parts = [p for p in PurePosixPath(target).parts if p != "/"] + parts
    return "/" + "/".join(done)


def usrmerge_alias(path: str) -> str | None:
    """/lib/x -> /usr/lib/x and /usr/lib/x -> /lib/x, for the merged top-level directories."""
    parts = PurePosixPath(path).parts
    if len(parts) > 2 and parts[1] in USRMERGE:
        return str(PurePosixPath("/usr", *parts[1:]))
    if len(parts) > 3 and parts[1] == "usr" and parts[2] in USRMERGE:
        return str(PurePosixPath("/", *parts[2:]))
    return None


def merged(ctx: Context, path: str) -> bool:
    """Whether the top-level directory of `path` (or of its /usr twin) is merged into /usr here."""
    parts = PurePosixPath(path).parts
    top = parts[2] if len(parts) > 2 and parts[1] == "usr" else parts[1] if len(parts) > 1 else ""
    return top in USRMERGE and ctx.under(f"/{top}").is_symlink()


def spellings(ctx: Context, path: str) -> tuple[str, ...]:
    """Every spelling of `path` to look up, most literal first, without duplicates."""
    norm = os.path.normpath(path) if path.startswith("/") else path
    out: list[str] = []
    for p in (norm, resolve_in_root(ctx, norm, last=False), resolve_in_root(ctx, norm)):
        out.append(p)
        alias = usrmerge_alias(p)
        if alias and merged(ctx, p):
            out.append(alias)
    return tuple(dict.fromkeys(out))
