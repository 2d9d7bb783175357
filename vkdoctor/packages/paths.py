"""Spellings of one file path that a package database may have recorded.

pacman and rpm record canonical paths (/usr/lib/...), dpkg records what the package shipped
(/lib/x86_64-linux-gnu/libc.so.6 on a merged-/usr system), and ld.so reports whichever directory
it searched first. So a lookup tries the path as given, the path with its directories resolved
inside the tree, the /lib <-> /usr/lib alias, and the fully resolved file.
"""

from __future__ import annotations

import errno
import os
from pathlib import PurePosixPath

from vkdoctor.model.context import Context

#: top-level directories that merged-/usr systems turn into symlinks into /usr
USRMERGE = ("lib", "lib32", "lib64", "libx32", "bin", "sbin")
_MAX_LINKS = 40


def resolve_in_root(ctx: Context, path: str, *, last: bool = True) -> str:
    """`path` with symlinks resolved as if `ctx.root` were `/` (absolute links stay in the tree).

    With `last=False` the final component is kept as it is (the directory part only is resolved).
    The directory part's walk is kept per Context: the files asked about share a few directories.
    """
    parts = [p for p in PurePosixPath(path).parts if p != "/"]
    if parts and parts[-1] not in (".", ".."):
        done, hops = _directory(ctx, "/" + "/".join(parts[:-1]))
        if not last:
            return "/" + "/".join([*done, parts[-1]])
        return _walk(ctx, list(done), parts[-1:], hops, last=True)[0]
    return _walk(ctx, [], parts, 0, last=last)[0]


def _directories(ctx: Context) -> dict[str, tuple[tuple[str, ...], int]]:
    return {}


def _directory(ctx: Context, path: str) -> tuple[tuple[str, ...], int]:
    """The resolved components of directory `path` and the links followed, once per Context."""
    memo = ctx.fact(_directories)
    if path not in memo:
        parts = [p for p in PurePosixPath(path).parts if p != "/"]
        text, hops = _walk(ctx, [], parts, 0, last=True)
        memo[path] = (tuple(p for p in text.split("/") if p), hops)
    return memo[path]


def _walk(
    ctx: Context, done: list[str], parts: list[str], hops: int, *, last: bool
) -> tuple[str, int]:
    """Resolve `parts` after the already resolved `done`: the path, and the links followed."""
    while parts:
        name = parts.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            if done and not ctx.under("/" + "/".join(done)).is_dir():
                # the kernel stops at a file before `..` (ENOTDIR): no file has this spelling
                return "/" + "/".join([*done, name, *parts]), hops
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
        except OSError as exc:
            if exc.errno != errno.EINVAL and parts:
                # missing, or not a folder: the kernel stops here, a `..` after it undoes nothing
                return "/" + "/".join([*done, name, *parts]), hops
            done.append(name)
            continue
        hops += 1
        if hops > _MAX_LINKS:  # ELOOP in the tree: no file has this spelling
            return "/" + "/".join([*done, name, *parts]), hops
        if target.startswith("/"):
            done = []
        parts = [p for p in PurePosixPath(target).parts if p != "/"] + parts
    return "/" + "/".join(done), hops


def usrmerge_alias(path: str) -> str | None:
    """/lib/x -> /usr/lib/x and /usr/lib/x -> /lib/x, for the merged top-level directories."""
    parts = PurePosixPath(path).parts
    if len(parts) > 2 and parts[1] in USRMERGE:
        return str(PurePosixPath("/usr", *parts[1:]))
    if len(parts) > 3 and parts[1] == "usr" and parts[2] in USRMERGE:
        return str(PurePosixPath("/", *parts[2:]))
    return None


def _merged_tops(ctx: Context) -> dict[str, bool]:
    return {}


def merged(ctx: Context, path: str) -> bool:
    """Whether the top-level directory of `path` (or of its /usr twin) is merged into /usr here."""
    parts = PurePosixPath(path).parts
    top = parts[2] if len(parts) > 2 and parts[1] == "usr" else parts[1] if len(parts) > 1 else ""
    if top not in USRMERGE:
        return False
    memo = ctx.fact(_merged_tops)
    if top not in memo:
        memo[top] = ctx.under(f"/{top}").is_symlink()
    return memo[top]


def _spelled(ctx: Context) -> dict[str, tuple[str, ...]]:
    return {}


def spellings(ctx: Context, path: str) -> tuple[str, ...]:
    """Every spelling of `path` to look up, most literal first, without duplicates (once per
    path per Context: the package checks ask about the same files)."""
    memo = ctx.fact(_spelled)
    hit = memo.get(path)
    if hit is None:
        hit = memo[path] = _spellings(ctx, path)
    return hit


def _spellings(ctx: Context, path: str) -> tuple[str, ...]:
    norm = os.path.normpath(path) if path.startswith("/") else path
    out: list[str] = []
    for p in (norm, resolve_in_root(ctx, norm, last=False), resolve_in_root(ctx, norm)):
        out.append(p)
        alias = usrmerge_alias(p)
        if alias and merged(ctx, p):
            out.append(alias)
    return tuple(dict.fromkeys(out))
