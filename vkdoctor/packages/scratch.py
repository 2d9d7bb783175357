"""This process's private directories for the package tools (apt's configuration and caches,
a copy of a tree's rpm database): made once per key, removed when the process ends.

A forked check's child exits without atexit handlers, so it calls `cleanup` itself; the parent's
directories are the parent's to remove.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

# shutil and tempfile (with the random, hashlib, bz2 and lzma they import) only where a directory
# is made or removed: most runs make none, and every run imports this module

#: key -> this process's private directory for it
_DIRS: dict[str, Path] = {}
_OWNER = [0]


def directory(key: str, prefix: str) -> tuple[Path, bool]:
    """This process's private directory for `key`, and whether it was just made (empty)."""
    if _OWNER[0] != os.getpid():
        _DIRS.clear()
        _OWNER[0] = os.getpid()
        atexit.register(cleanup)
    if key in _DIRS:
        return _DIRS[key], False
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=prefix))
    _DIRS[key] = path
    return path, True


def cleanup() -> None:
    """Remove this process's private directories."""
    if _OWNER[0] != os.getpid() or not _DIRS:
        return
    import shutil

    for path in _DIRS.values():
        shutil.rmtree(path, ignore_errors=True)
    _DIRS.clear()


def forget(path: Path) -> None:
    """Remove one of this process's private directories now (it could not be filled)."""
    for key, made in list(_DIRS.items()):
        if made == path:
            del _DIRS[key]
    import shutil

    shutil.rmtree(path, ignore_errors=True)
