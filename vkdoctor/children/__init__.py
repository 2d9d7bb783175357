"""Child processes: started (in a session of their own where a hang must be killed with all it
started), killed as a group, and reaped with a bound.

The load test's and the probe's children, and the decompressors of overlay/archive, get their
own session: killing the group then takes the child and whatever it started (a driver's helper
processes), and Ctrl-C in the user's terminal reaches only vkdoctor, which kills them itself.
The package tools stay in vkdoctor's session and are killed alone, as `subprocess.run` does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # no Protocol class or subscripted alias to build at import time
    import subprocess
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import IO, Any, Protocol, TypeAlias

    #: what `stdin`, `stdout` and `stderr` may be: subprocess.PIPE, DEVNULL, a descriptor, a file
    Stream: TypeAlias = int | IO[bytes] | None

    class Reapable(Protocol):
        """What killing and reaping need of a child: a subprocess.Popen, or a load-test child
        a `Spawner` forked, which mimics one."""

        @property
        def pid(self) -> int: ...

        @property
        def stdout(self) -> IO[bytes] | None: ...

        def wait(self, timeout: float | None = None) -> int: ...

    class Running(Reapable, Protocol):
        """A load-test child under way: a subprocess.Popen, or one `Spawner` forked."""

        @property
        def returncode(self) -> int | None: ...

    class HandedAhead(Protocol):
        """A child handed the load test's first request before the load test asked for it."""

        @property
        def started(self) -> float:
            """time.monotonic() when it was handed the request."""

        @property
        def logdir(self) -> str:
            """The folder of its logs, made by the spawner (`Spawner.remove_logs` removes it)."""

        @property
        def child(self) -> Running: ...

    class Spawner(Protocol):
        """How the load test gets its children besides starting a new program for each: the
        face hands one in on the Context (vkdoctor.speed.zygote.SPAWNER, the child forked at
        launch); none, and every child is a new program in a folder tempfile makes."""

        def log_folder(self, env: Mapping[str, str]) -> str | None:
            """A new folder of the user's alone for a child's logs; None: tempfile's."""

        def remove_logs(self, logdir: str) -> None:
            """Remove a folder `log_folder` or `adopt` made."""

        def fork(
            self, request: Mapping[str, Any], *, env: Mapping[str, str], cwd: Path
        ) -> Running | None:
            """A child already waiting, handed `request` in `env`; None: start the program."""

        def adopt(
            self, request: Mapping[str, Any], env: Mapping[str, str], cwd: Path
        ) -> HandedAhead | None:
            """The child handed exactly this first request ahead, if there is one."""

        def remember(
            self,
            cache_dir: Path | None,
            env: Mapping[str, str],
            cwd: Path,
            request: Mapping[str, Any],
        ) -> None:
            """Keep the first request of a load test in `env` for the next run to hand ahead."""


#: the returncode of a child that another waiter reaped: it has ended, and how is lost (no
#: exit status is above 255, and a signal's is negative)
STATUS_LOST = 256


#: subprocess.PIPE and subprocess.DEVNULL: subprocess itself (~10 ms to import) is imported
#: when a program is started, not by the load test's forked child that needs none
PIPE = -1
DEVNULL = -3


def start(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    stdin: Stream = DEVNULL,
    stdout: Stream = PIPE,
    stderr: Stream = PIPE,
    cwd: Path | None = None,
    own_session: bool = True,
) -> subprocess.Popen[bytes]:
    """Start `argv` with exactly `env` (no shell); raises OSError when it cannot start."""
    import subprocess

    return subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=env,
        cwd=cwd,
        start_new_session=own_session,
    )


def start_text(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    stdin: Stream = DEVNULL,
    own_session: bool = True,
) -> subprocess.Popen[str]:
    """`start` with text pipes for stdout and stderr (undecodable bytes replaced)."""
    import subprocess

    return subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=env,
        start_new_session=own_session,
    )


def kill_group(pgid: int) -> None:
    """SIGKILL to the process group of a child started in its own session (gone already, or
    not ours: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def reap(child: Reapable, timeout: float) -> None:
    """Wait up to `timeout` seconds for the child to exit (a child stuck in the kernel may
    outlive SIGKILL for a while: then leave it)."""
    try:
        child.wait(timeout=timeout)
    except Exception as exc:
        subprocess = sys.modules.get("subprocess")  # imported by whatever raised TimeoutExpired
        if subprocess is None or not isinstance(exc, subprocess.TimeoutExpired):
            raise


def kill_group_and_reap(child: Reapable, timeout: float) -> None:
    """Kill the child's group, reap it with a bound, and close its stdout."""
    kill_group(child.pid)
    reap(child, timeout)
    if child.stdout is not None:
        child.stdout.close()


def kill_and_reap(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """As `subprocess.run` does on a timeout: kill the child alone, reap it, close its pipes (a
    grandchild holding one must not make us wait again)."""
    proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def symbol_lookup_error(lines: Iterable[str]) -> str | None:
    """ld.so's "symbol lookup error: LIB: undefined symbol: NAME" among a child's output (what
    it prints before exit status 127 when a lazily bound call finds no definition), without the
    program's name before it."""
    for line in lines:
        if "symbol lookup error" in line:
            return line[line.index("symbol lookup error") :].strip()
    return None
