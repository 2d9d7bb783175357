"""Reading a file of the inspected tree safely: regular files only, opened without blocking,
and never more than a bound.

Under --root the tree is someone else's: a FIFO where /etc/os-release belongs would block a
plain open() forever, and a link to /dev/zero where /etc/ld.so.cache belongs would be read until
memory runs out. Each reader here raises OSError for those (ESPIPE for a file that is not a
regular one, EFBIG for one over its bound), which its callers already handle as "cannot read".
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

#: bounds for what the readers read: far above any real file of each kind
SMALL = 1 << 20  # os-release, ld.so.conf, pacman.conf, a package's desc or file list
LARGE = 256 << 20  # the dpkg status database, ld.so.cache
#: digits in one JSON integer at most: Python's int() refuses more than 4,300 (a ValueError
#: that is no JSONDecodeError) and takes quadratic time below that; no real value has 100
MAX_INT_DIGITS = 640


def json_value(text: str | bytes) -> Any:
    """JSON read from outside (a report, a manifest of a package tool, a child's line). Every
    way it can be bad is a ValueError: not JSON, an integer of more than MAX_INT_DIGITS digits,
    a nesting deeper than Python's recursion limit."""
    try:
        return json.loads(text, parse_int=_integer)
    except RecursionError:
        raise ValueError("JSON nested deeper than Python's recursion limit") from None


def _integer(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"a JSON integer of {len(digits.lstrip('-')):,} digits")
    return int(digits)


def read_bytes(path: Path, limit: int = SMALL, *, follow: bool = True) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (`follow=False`: ELOOP
    where `path` itself is a link)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW)
    except ValueError as exc:  # a NUL in a name read from a database: no file has it
        raise OSError(errno.EINVAL, "the name holds a NUL byte", str(path)) from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.ESPIPE, "not a regular file (a FIFO or a device)", str(path))
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit >> 20} MiB, not read", str(path))
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:  # it grew while being read
            raise OSError(errno.EFBIG, f"larger than {limit >> 20} MiB, not read", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path, limit: int = SMALL, *, follow: bool = True) -> str:
    """The text of the regular file at `path` (UTF-8, undecodable bytes replaced)."""
    return read_bytes(path, limit, follow=follow).decode("utf-8", "replace")


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode
    except (OSError, ValueError):  # missing, not ours to look into, a name too long
        return None


def exists(path: Path) -> bool:
    """Whether `path` exists for this user; False where it may not look (pathlib raises)."""
    return _mode(path) is not None


def is_file(path: Path) -> bool:
    mode = _mode(path)
    return mode is not None and stat.S_ISREG(mode)


def is_dir(path: Path) -> bool:
    mode = _mode(path)
    return mode is not None and stat.S_ISDIR(mode)
