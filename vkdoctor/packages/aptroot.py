"""The host's apt pointed at a --root tree: its configuration, lists, preferences and dpkg status.

APT_CONFIG is read before anything else, so a file there that sets `Dir` makes apt read the
tree's /etc/apt (apt.conf.d, sources, preferences) rather than the host's. apt's binary caches
go to a private directory of this run (the tree is never written; a second apt call in the same
run reuses what the first built instead of parsing the lists again).
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Mapping
from pathlib import Path

from vkdoctor.context import Context

#: root -> this process's private apt directory for it
_DIRS: dict[str, str] = {}
_OWNER = [0]


def cleanup() -> None:
    """Remove this process's apt directories (also called by a forked check's child, which
    exits without atexit handlers)."""
    if _OWNER[0] != os.getpid() or not _DIRS:
        return
    import shutil

    for path in _DIRS.values():
        shutil.rmtree(path, ignore_errors=True)
    _DIRS.clear()


def _private(root: str) -> str:
    """This run's apt directory for `root`: the config file and the caches."""
    import tempfile

    if _OWNER[0] != os.getpid():
        # a forked child: the parent's directories are the parent's to remove
        _DIRS.clear()
        _OWNER[0] = os.getpid()
        atexit.register(cleanup)
    if root not in _DIRS:
        path = tempfile.mkdtemp(prefix="vkdoctor-apt-")
        _DIRS[root] = path
        status = Path(root) / "var/lib/dpkg/status"
        (Path(path) / "apt.conf").write_text(
            f'Dir "{root}/";\n'
            f'Dir::State::status "{status}";\n'
            f'Dir::Cache "{path}/";\n'
            'Dir::Cache::archives "archives/";\n'
            'Dir::Cache::pkgcache "";\n'
            'Dir::Cache::srcpkgcache "srcpkgcache.bin";\n'
            'Debug::NoLocking "1";\n',
            encoding="utf-8",
        )
        (Path(path) / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    return _DIRS[root]


def apt_env(ctx: Context) -> Mapping[str, str]:
    """The environment an apt tool runs with to look at `ctx`'s tree (or the live machine)."""
    if ctx.live:
        return ctx.env
    return {**ctx.env, "APT_CONFIG": str(Path(_private(str(ctx.root))) / "apt.conf")}
