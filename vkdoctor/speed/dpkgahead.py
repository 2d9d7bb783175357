"""The dpkg database read on another core as a first `vkdoctor check` starts.

A run with nothing kept yet (a fresh cache, as in a CI container) spends its first ~150 ms on
one core: the interpreter, its imports, the manifest scan. The package checks then parse the
status file and look for unmet dependencies (~70 ms), which depend on the database's files
alone. So vkdoctor.launch forks, as it starts, a process that computes them, with `dpkg
--audit`'s verdict, and keeps them in vkdoctor's fact cache (vkdoctor.speed.factcache, under the
identities of the files they come from, as every run keeps them); the package checks wait for
it (`wait`) and then find what a second run finds. What is kept decides only how soon the
checks have it: a fork that fails, or a cache it cannot write, leaves them to compute it, as
before.
"""

from __future__ import annotations

import os

from vkdoctor.speed.forks import fork_piped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: how long the checks wait for it at most (it parses one file and runs `dpkg --audit`)
WAIT_LIMIT = 10.0

#: (pid, the read end of a pipe that only the fork holds open for writing, who forked it)
_pending: list[tuple[int, int, int]] = []


def start(env: Mapping[str, str], cwd: str, timeout: float) -> None:
    """Fork the process that reads the dpkg database of the live machine in `env`."""
    if _pending:
        return
    parent = os.getpid()
    # _work never returns: the pipe closes with the process
    forked = fork_piped(lambda _: _work(env, cwd, timeout, parent), False)
    if forked is not None:
        pid, (read,) = forked
        _pending.append((pid, read, parent))


def wait(limit: float = WAIT_LIMIT) -> None:
    """Until the process `start` forked has kept what it found, or `limit` seconds (at most
    WAIT_LIMIT) have passed: a `dpkg --audit` that hangs there would hang here too. Also in a
    fork of this process (vkdoctor.speed.offload): the pipe is read, not the child."""
    if not _pending:
        return
    pid, read, parent = _pending.pop()
    import select

    try:
        select.select([read], [], [], min(limit, WAIT_LIMIT))
    except (OSError, ValueError):
        pass
    os.close(read)
    if os.getpid() == parent:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _work(env: Mapping[str, str], cwd: str, timeout: float, parent: int) -> None:
    status = 70
    try:
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # vkdoctor's handler unwinds vkdoctor
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        # vkdoctor's standard streams are not this process's: a pipe it held open would keep
        # a reader of vkdoctor's output waiting
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        _die_with_parent(parent)
        from pathlib import Path

        from vkdoctor.cachedir import cache_home
        from vkdoctor.model.context import Context, Options
        from vkdoctor.packages.dpkg import ADMINDIR, DpkgDB
        from vkdoctor.speed import factcache

        ctx = Context(
            env=dict(env),
            cwd=Path(cwd),
            machine=os.uname().machine or "x86_64",
            options=Options(timeout=timeout, cache_dir=cache_home(env)),
            store=factcache.FactCache(cache_home(env)),
        )
        if ctx.under(f"{ADMINDIR}/status").exists():  # as vkdoctor.packages.detect finds it
            DpkgDB(ctx).warm()
        factcache.save_all()
        status = 0
    except BaseException:  # the checks compute whatever is not kept
        pass
    finally:
        os._exit(status)


def _die_with_parent(parent: int) -> None:
    """SIGKILL this process when vkdoctor ends first (a usage error, Ctrl-C): nothing of it
    outlives the command (a store it was writing stays whole: factcache renames)."""
    import ctypes

    libc = ctypes.CDLL(None)
    if hasattr(libc, "prctl"):
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != parent:
        os._exit(1)  # it ended before that was set
