"""The load test's first child, forked when vkdoctor starts and waiting for its request.

A `check` cannot end before its load-test child has loaded every driver, and that child is a
second Python: its interpreter start and imports (~25 ms) used to come after vkdoctor had
started, imported its own modules and scanned the manifests. Forked at launch, before anything
heavy is imported, the child starts and imports its script on the other core while vkdoctor
works, then waits on a pipe; the load test hands it its request instead of starting a program.

A fork is the same program as `python -I -S probes/loadtest.py` only while what ld.so read at
the start agrees: LD_LIBRARY_PATH, LD_PRELOAD and the other LD_* variables, GLIBC_TUNABLES and
malloc's variables are read once, when a program starts. So the child is forked only when
vkdoctor did not start again without them (vkdoctor.launch), it is used only for a request whose
environment has the same values (else it is told to exit and the load test starts its program as
before), and it is forked before vkdoctor has loaded any library a driver could need (zlib and
the like come with later imports). It is in a session of its own, dies with vkdoctor
(PR_SET_PDEATHSIG), and ends with os._exit: vkdoctor's exit handlers are never run in it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: the request's size limit (a load test's request is a few KB)
MAX_REQUEST = 16 * 1024 * 1024
#: the returncode of a child that another waiter reaped: it has ended, and how is lost (no
#: exit status is above 255, and a signal's is negative)
STATUS_LOST = 256


def startup_variables(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a program reads only when it starts (ld.so, glibc's tunables, malloc)."""
    return {k: v for k, v in env.items() if k.startswith(("LD_", "GLIBC_TUNABLES", "MALLOC_"))}


class ForkedChild:
    """The waiting child once it has its request: what vkdoctor.loadtest needs of a Popen."""

    def __init__(self, pid: int, stdout_fd: int) -> None:
        self.pid = pid
        self.stdout = os.fdopen(stdout_fd, "rb", buffering=0)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                # SIGCHLD ignored, or another waitpid: the child is gone, its status with it
                self.returncode = STATUS_LOST
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import subprocess
        import time

        end = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(f"load-test child {self.pid}", timeout or 0)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        assert self.returncode is not None
        return self.returncode


class Zygote:
    """The forked child, waiting: `hand` gives it a request, `discard` tells it to exit."""

    def __init__(self, pid: int, request_fd: int, output_fd: int, startup: dict[str, str]) -> None:
        self.pid = pid
        self._request_fd = request_fd
        self._output_fd = output_fd
        self.startup = startup

    def fits(self, env: Mapping[str, str]) -> bool:
        return startup_variables(env) == self.startup

    def hand(
        self, request: Mapping[str, Any], *, env: Mapping[str, str], cwd: Path
    ) -> ForkedChild | None:
        """Send the request; the child runs it as `probes/loadtest.py` would. None when the
        child is gone (then nothing was started)."""
        import json

        data = json.dumps({"request": request, "env": dict(env), "cwd": str(cwd)}).encode()
        try:
            _write_all(self._request_fd, data)
        except OSError:
            self.discard()
            return None
        finally:
            _close(self._request_fd)
            self._request_fd = -1
        return ForkedChild(self.pid, self._output_fd)

    def discard(self) -> None:
        """The child is not needed: it reads the end of its request pipe and exits (and is
        reaped at once if it has, else by init once vkdoctor has exited)."""
        _close(self._request_fd)
        _close(self._output_fd)
        self._request_fd = self._output_fd = -1
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, os.WNOHANG)


_waiting: list[Zygote] = []


def start(script: Path) -> None:
    """Fork the child that will run `script`'s `run(request)`, if this process is fit for it
    (no thread, ld.so's variables as the program started with them)."""
    import threading

    if threading.active_count() > 1 or _waiting:
        return
    try:
        request_r, request_w = os.pipe()
        output_r, output_w = os.pipe()
    except OSError:
        return
    startup = startup_variables(os.environ)
    try:
        pid = os.fork()
    except OSError:
        for fd in (request_r, request_w, output_r, output_w):
            _close(fd)
        return
    if pid == 0:
        _close(request_w)
        _close(output_r)
        _serve(script, request_r, output_w)  # never returns
    _close(request_r)
    _close(output_w)
    _waiting.append(Zygote(pid, request_w, output_r, startup))


def take(env: Mapping[str, str]) -> Zygote | None:
    """The waiting child, if there is one and `env` agrees with how it started; a child that
    does not fit is discarded. Each is taken at most once."""
    while _waiting:
        z = _waiting.pop()
        if z.fits(env):
            return z
        z.discard()
    return None


def discard() -> None:
    """Let a child that nobody took exit (the run had no load test, or ended early)."""
    while _waiting:
        _waiting.pop().discard()


def _serve(script: Path, request_fd: int, output_fd: int) -> None:
    status = 70
    try:
        os.setsid()
        import signal

        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        # vkdoctor's own standard streams are not this child's: a pipe it holds open would
        # keep a reader of vkdoctor's output waiting
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        _close(null)
        failure = ""
        try:
            module = _load(script)
            module.die_with_parent(os.getppid())
        except Exception:
            import traceback

            failure = traceback.format_exc()
        data = _read_all(request_fd)
        if not data:
            status = 0
            return
        import json

        message = json.loads(data)
        request = message["request"]
        log = os.open(
            f"{request['logdir']}/startup.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
        )
        os.dup2(log, 2)
        _close(log)
        if failure:
            os.write(2, failure.encode())
            return
        os.dup2(output_fd, 1)
        _close(output_fd)
        _close(request_fd)
        os.chdir(message["cwd"])
        os.environ.clear()
        os.environ.update(message["env"])
        status = module.run(request)
    except BaseException:
        import traceback

        with contextlib.suppress(Exception):
            os.write(2, traceback.format_exc().encode())
    finally:
        os._exit(status)


def _load(script: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("vkdoctor_loadtest_child", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise ValueError("load-test request too large")
        chunks.append(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _close(fd: int) -> None:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)
