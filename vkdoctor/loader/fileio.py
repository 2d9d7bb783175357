"""Reading a manifest safely: never block on a FIFO, never read more than a bound, always say why.

The loader opens every listed manifest with fopen and reads it to the end. vkdoctor looks at the
file type first (os.stat, following links like fopen does) and opens regular files only, with
O_NONBLOCK, and reads at most MAX_MANIFEST_BYTES + 1 bytes.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from vkdoctor.model.record import record

#: larger manifests are not parsed (a real one is a few hundred bytes)
MAX_MANIFEST_BYTES = 1024 * 1024


@record(frozen=True, kw_only=True)
class ReadResult:
    """The bytes of a manifest, or why there are none."""

    data: bytes | None = None
    #: None when data was read; else one of the problems below
    problem: str | None = None
    #: human text for the problem
    detail: str = ""
    size: int | None = None


#: problem -> what the loader 1.3.239 does with such a file
MISSING = "missing"  # fopen fails: "Failed to open JSON file", skipped
UNREADABLE = "unreadable"  # fopen fails (permissions): skipped
LOOP = "link-loop"  # fopen fails with ELOOP: skipped
DIRECTORY = "directory"  # fopen succeeds, reading gives 0 bytes: silently skipped
FIFO = "fifo"  # fopen blocks until a writer appears: the application hangs
SPECIAL = "special-file"  # device or socket: the loader's behaviour depends on the device
TOO_LARGE = "too-large"  # vkdoctor refuses to parse it
EMPTY = "empty"  # zero bytes: silently skipped


def read_manifest(host_path: Path) -> ReadResult:
    """Read `host_path` (already mapped through ctx.under) the way we can afford to."""
    try:
        st = host_path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return ReadResult(problem=LOOP, detail="symbolic link loop")
        if exc.errno in (errno.EACCES, errno.EPERM):
            return ReadResult(problem=UNREADABLE, detail=exc.strerror or "permission denied")
        if exc.errno == errno.ENAMETOOLONG:
            return ReadResult(problem=MISSING, detail=exc.strerror or "file name too long")
        if host_path.is_symlink():
            return ReadResult(problem=MISSING, detail="dangling symbolic link")
        return ReadResult(problem=MISSING, detail=exc.strerror or "no such file")
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return ReadResult(problem=DIRECTORY, detail="a directory", size=0)
    if stat.S_ISFIFO(mode):
        return ReadResult(problem=FIFO, detail="a FIFO (named pipe)")
    if not stat.S_ISREG(mode):
        kind = "a socket" if stat.S_ISSOCK(mode) else "a device node"
        return ReadResult(problem=SPECIAL, detail=kind)
    if st.st_size > MAX_MANIFEST_BYTES:
        return ReadResult(
            problem=TOO_LARGE,
            detail=f"{st.st_size} bytes, over the {MAX_MANIFEST_BYTES}-byte limit",
            size=st.st_size,
        )
    try:
        fd = os.open(host_path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            return ReadResult(problem=UNREADABLE, detail=exc.strerror or "permission denied")
        return ReadResult(problem=MISSING, detail=exc.strerror or "cannot open")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between stat and open
            return ReadResult(problem=SPECIAL, detail="not a regular file when opened")
        chunks = []
        total = 0
        while total <= MAX_MANIFEST_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        return ReadResult(problem=UNREADABLE, detail=exc.strerror or "read error")
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_MANIFEST_BYTES:
        return ReadResult(
            problem=TOO_LARGE,
            detail=f"over the {MAX_MANIFEST_BYTES}-byte limit (it grew while read)",
            size=len(data),
        )
    if not data:
        return ReadResult(problem=EMPTY, detail="0 bytes", size=0)
    return ReadResult(data=data, size=len(data))
