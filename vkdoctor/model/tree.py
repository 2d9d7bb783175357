"""Reading the inspected tree: one rule for every read of a path of it.

A path of the tree is resolved inside the tree (`Context.resolve`: an absolute link is the
tree's, never this machine's), the file at the end is opened without following a link or
blocking, and read only if it is a regular file within a bound (vkdoctor.model.files); a folder
gives at most a bound of names. On the live machine the paths are this machine's own.

A program handed a path of the tree (dpkg --root, apt with Dir set to the tree) opens it with
links followed on this machine: `judge` says why it must not be handed the path.
"""

from __future__ import annotations

import errno
import os
import stat
from itertools import islice
from pathlib import Path

from vkdoctor.model import files
from vkdoctor.model.context import Context

#: the names of one folder read at most
NAMES = 4096
#: folders of a tree whose files are the kernel's (a chroot in use has them mounted)
_KERNEL = ("proc", "sys", "dev")


def read_bytes(ctx: Context, path: str, limit: int = files.SMALL) -> bytes:
    """The bytes of the tree's regular file at `path` (links followed inside the tree), at most
    `limit` of them; OSError otherwise (files.read_bytes)."""
    return files.read_bytes(ctx.resolve(path), limit, follow=ctx.live)


def read_text(ctx: Context, path: str, limit: int = files.SMALL) -> str:
    """The text of the tree's regular file at `path` (UTF-8, undecodable bytes replaced)."""
    return read_bytes(ctx, path, limit).decode("utf-8", "replace")


def names(ctx: Context, folder: str, limit: int = NAMES) -> list[str]:
    """The sorted names in the tree's `folder` (links followed inside the tree), at most
    `limit` of them; OSError when it is no folder."""
    try:
        with os.scandir(ctx.resolve(folder)) as it:
            return sorted(e.name for e in islice(it, limit))
    except ValueError as exc:
        raise OSError(errno.EINVAL, "the name holds a NUL byte", folder) from exc


#: what a package tool may hash in all (dpkg --verify, rpm -V) before it is not run on a tree's
#: files: it reads every byte, ~2 s a GiB
HASH_BUDGET = 1 << 30


def judge(
    ctx: Context, path: str, tool: str, *, shown: str | None = None
) -> tuple[str | None, int]:
    """Why `tool` must not be handed the tree's `path` (None: it may; the reason names it
    `shown`, by default `path`), and the file's size: what the tool would open (links followed
    on this machine) is not what the path is in the tree, is not a regular file or a folder (a
    FIFO or a device would block it), or is the kernel's. A missing path is fine: the tool
    opens nothing."""
    shown = shown or path
    if ctx.live:
        real = Path(os.path.realpath(path))
    else:
        rel = ctx.resolve(path).relative_to(ctx.root)
        real = Path(os.path.realpath(ctx.under(path)))
        if real != Path(os.path.realpath(ctx.root)) / rel:
            return f"{shown} leads out of the tree to {real}, which {tool} would read", 0
        if rel.parts[:1] and rel.parts[0] in _KERNEL:
            kernel = f"/{rel}, a file of the kernel's"
            return f"{shown} leads to {kernel}, and {tool} would block reading it", 0
    try:
        st = real.lstat()
    except OSError:
        return None, 0
    if stat.S_ISDIR(st.st_mode):
        return None, 0
    if not stat.S_ISREG(st.st_mode):
        return f"{shown} is not a regular file, and {tool} would block reading it", 0
    if str(real).startswith(tuple(f"/{k}/" for k in _KERNEL)):
        # "regular" files of the kernel's that never end or block (/proc/kmsg)
        return f"{shown} leads to {real}, and {tool} would block reading it", 0
    return None, st.st_size
