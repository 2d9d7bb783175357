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

import marshal
import os

# Nothing but os and marshal at the top, and none of typing, pathlib, json, tempfile or
# contextlib on the way to the fork and the request handed ahead: on a slow machine each costs
# 10-25 ms, and that is how much later the drivers start loading (vkdoctor.launch forks first).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping
    from pathlib import Path
    from typing import Any

#: the request's size limit (a load test's request is a few KB)
MAX_REQUEST = 16 * 1024 * 1024


def startup_variables(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a program reads only when it starts (ld.so, glibc's tunables, malloc)."""
    return {k: v for k, v in env.items() if k.startswith(("LD_", "GLIBC_TUNABLES", "MALLOC_"))}


class ForkedChild:
    """The waiting child once it has its request: what vkdoctor.children.loadtest needs of a Popen."""

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
                from vkdoctor.children import STATUS_LOST

                self.returncode = STATUS_LOST
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import time

        end = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                import subprocess

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
        self, request: Mapping[str, Any], *, env: Mapping[str, str], cwd: str | Path
    ) -> ForkedChild | None:
        """Send the request; the child runs it as `probes/loadtest.py` would. None when the
        child is gone (then nothing was started)."""
        data = marshal.dumps({"request": dict(request), "env": dict(env), "cwd": str(cwd)})
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
        try:
            os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pass


_waiting: list[Zygote] = []


def start(environ: MutableMapping[str, str], script: Path | None = None) -> None:
    """Fork the child that will run `script`'s `run(request)` (the load test's,
    probes/loadtest.py, when None: found by the child), if this process is fit for it
    (no thread, ld.so's variables as the program started with them). vkdoctor.launch calls it
    also just before it starts itself again without ld.so's variables: the child has them, as
    the user's programs do, and the process started again takes it over (`passed_on`,
    `take_over`). `environ` is this process's environment (os.environ, handed in by the face):
    the child's startup variables are read from it, and the child replaces it with its
    request's."""
    import sys

    threading = sys.modules.get("threading")  # not imported: no thread was started through it
    if (threading is not None and threading.active_count() > 1) or _waiting:
        return
    from vkdoctor.speed.forks import fork_piped

    startup = startup_variables(environ)
    # the child reads requests on the first pipe and writes its output on the second
    forked = fork_piped(lambda ends: _serve(environ, script, ends[0], ends[1]), True, False)
    if forked is not None:
        pid, (request_w, output_r) = forked
        _waiting.append(Zygote(pid, request_w, output_r, startup))


#: the variable that tells the process started again where its waiting child is
PASSED = "VKDOCTOR_ZYGOTE"


def passed_on(*, keep: bool = True) -> dict[str, str]:
    """The waiting child's pid and pipes as PASSED says them, the pipes kept open across the
    exec (`keep`; False: closed on exec again); {} when there is no child."""
    if not _waiting:
        return {}
    z = _waiting[0]
    try:
        os.set_inheritable(z._request_fd, keep)
        os.set_inheritable(z._output_fd, keep)
    except OSError:
        return {}
    return {PASSED: f"{z.pid},{z._request_fd},{z._output_fd}"}


def take_over(value: str | None, env: Mapping[str, str]) -> None:
    """In the process started again: the child its former self forked, if `value` (PASSED)
    names a child of this process and two pipes. Its startup variables are `env`'s, the
    environment the former self started with."""
    import stat

    try:
        pid, request_fd, output_fd = (int(part) for part in (value or "").split(","))
        for fd in (request_fd, output_fd):
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return
        if os.waitpid(pid, os.WNOHANG)[0] != 0:
            return  # it has exited already (and is reaped now)
        for fd in (request_fd, output_fd):
            os.set_inheritable(fd, False)
    except (ValueError, OSError, ChildProcessError):
        return  # not a child of ours, or not what passed_on wrote: nothing to take over
    _waiting.append(Zygote(pid, request_fd, output_fd, startup_variables(env)))


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
    """Let a child that nobody took exit (the run had no load test, or ended early), and stop
    one handed a request ahead that nobody adopted."""
    while _waiting:
        _waiting.pop().discard()
    while _ahead:
        _ahead.pop().cancel()


# A request handed ahead: the first request of the load test of the last run in this
# environment, given to the waiting child as vkdoctor starts, before the manifests are scanned
# again. The load test adopts the child only if the request it would send now is the same
# (`take_ahead`); otherwise the child is killed and a new one started. So what is kept decides
# only how soon the drivers are loaded, never what the load test reports.


class Ahead:
    """The child handed a request ahead, and what it was given."""

    def __init__(
        self,
        request: dict[str, Any],
        env: dict[str, str],
        cwd: str,
        logdir: str,
        child: ForkedChild,
    ) -> None:
        import time

        self.request = request
        self.env = env
        self.cwd = cwd
        self.logdir = logdir
        self.child = child
        self.started = time.monotonic()

    def cancel(self) -> None:
        import contextlib
        import signal

        with contextlib.suppress(OSError):
            os.killpg(self.child.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.child.pid, 0)
        with contextlib.suppress(OSError):
            self.child.stdout.close()
        remove_logs(self.logdir)


_ahead: list[Ahead] = []


def remove_logs(logdir: str) -> None:
    """Remove the child's log folder (its files are flat: `N.step.log`, startup and child
    logs), as shutil.rmtree would with ignore_errors, without importing shutil (with bz2 and
    lzma, ~4 ms at the end of every run); a folder inside it is left to shutil."""
    try:
        with os.scandir(logdir) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    import shutil

                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    try:
                        os.unlink(entry.path)
                    except OSError:
                        pass
        os.rmdir(logdir)
    except OSError:
        pass


def _key(env: Mapping[str, str], cwd: str) -> tuple[Any, ...]:
    """The folder and a checksum of the environment: the environment itself (its tokens and
    passwords) is never written down. Two environments with one checksum cost a child started
    in vain, never a wrong answer (the load test compares the requests)."""
    import binascii

    text = "\0".join(f"{k}={v}" for k, v in sorted(env.items()))
    return (cwd, len(env), binascii.crc32(text.encode("utf-8", "surrogateescape")))


def _plain(value: Any) -> Any:
    """`value` as JSON gives it back (tuples as lists): how a kept request is compared."""
    import json

    return json.loads(json.dumps(value))


def private_directory(env: Mapping[str, str]) -> str | None:
    """A new folder of the user's alone for the child's logs, where tempfile.mkdtemp would
    make it in the usual case ($TMPDIR, $TEMP, $TMP, else /tmp), without importing tempfile;
    None when it cannot be made there (then nothing is handed ahead)."""
    base = next((env[k] for k in ("TMPDIR", "TEMP", "TMP") if env.get(k)), "/tmp")
    for _ in range(8):
        path = os.path.join(base, "vkdoctor-load-" + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        except OSError:
            return None
        return path
    return None


def _unplaced(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request without what differs from one run to the next (its directory, the pid)."""
    return {k: v for k, v in request.items() if k not in ("logdir", "parent")}


def _requests(cache_dir: str | Path) -> Any:
    from vkdoctor.speed import factcache

    here = os.path.dirname(__file__)
    return factcache.store(
        cache_dir,
        "load-request",
        sources=(__file__, os.path.join(os.path.dirname(here), "children", "loadtest.py")),
        keep=8,
    )


def remember(
    cache_dir: Path | None, env: Mapping[str, str], cwd: Path, request: Mapping[str, Any]
) -> None:
    """Keep the first request of a load test in `env` for the next run (`hand_ahead`), with
    the identities of the manifests, their folders and the libraries named by path."""
    from vkdoctor.speed.factcache import identity

    store = _requests(cache_dir) if cache_dir is not None else None
    if store is None:
        return
    paths: set[str] = set()
    for target in request["targets"]:
        paths.update((target["manifest"], os.path.dirname(target["manifest"]) or "."))
        if target["dlopen_name"].startswith("/"):
            paths.add(target["dlopen_name"])
    value = (
        _plain(_unplaced(request)),
        tuple((p, identity(p)) for p in sorted(paths)),
    )
    key = _key(env, str(cwd))
    if store.get(key) != value:
        store.put(key, value)


def hand_ahead(
    cache_dir: str | Path, env: Mapping[str, str], cwd: str, child_env: dict[str, str]
) -> None:
    """Give the waiting child (in `child_env`, the load test's: cachedir.load_test_env) the
    request the last run in `env` and `cwd` began with, when none of the files it names has
    changed since."""
    if not _waiting or _ahead:
        return
    from vkdoctor.speed.factcache import identity

    store = _requests(cache_dir)
    entry = store.get(_key(env, cwd)) if store is not None else None
    if entry is None:
        return
    try:
        kept, identities = entry
        if not isinstance(kept, dict) or any(identity(p) != known for p, known in identities):
            return
    except (TypeError, ValueError):  # not what remember() writes
        return
    if _foreign_target(kept):
        return  # the load test leaves it out (loadtest.foreign_code): never run it ahead
    logdir = private_directory(env)
    if logdir is None:
        return  # the waiting child stays for the load test, which makes its folder elsewhere
    waiting = take(child_env)
    if waiting is None:
        os.rmdir(logdir)
        return
    request = {**kept, "logdir": logdir, "parent": os.getpid()}
    child = waiting.hand(request, env=child_env, cwd=cwd)
    if child is None:
        os.rmdir(logdir)
        return
    _ahead.append(Ahead(_unplaced(request), child_env, cwd, logdir, child))


def _foreign_target(request: Mapping[str, Any]) -> bool:
    """Whether a kept request names a manifest or library another user could now change."""
    from vkdoctor.trust import untrusted

    targets = request.get("targets")
    for t in targets if isinstance(targets, list) else [None]:
        if not isinstance(t, dict):
            return True  # not what remember() writes
        for key in ("manifest", "dlopen_name"):
            path = t.get(key)
            if isinstance(path, str) and path.startswith("/") and untrusted(path):
                return True
    return False


def take_ahead(request: Mapping[str, Any], env: Mapping[str, str], cwd: Path) -> Ahead | None:
    """The child handed a request ahead, if `request` (its directory and pid aside), `env` and
    `cwd` are what it was given; one that does not fit is stopped."""
    if not _ahead:
        return None
    plain = _plain(_unplaced(request))
    while _ahead:
        ahead = _ahead.pop()
        if ahead.request == plain and ahead.env == dict(env) and ahead.cwd == str(cwd):
            return ahead
        ahead.cancel()
    return None


def _serve(
    environ: MutableMapping[str, str], script: Path | None, request_fd: int, output_fd: int
) -> None:
    status = 70
    try:
        os.setsid()
        # signal itself would build its enums first, and the drivers wait for this child
        if TYPE_CHECKING:
            import signal as _signal
        else:
            import _signal

        for sig in (_signal.SIGTERM, _signal.SIGHUP):
            _signal.signal(sig, _signal.SIG_DFL)
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
        message = marshal.loads(data)
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
        environ.clear()
        environ.update(message["env"])
        status = module.run(request)
    except BaseException:
        import traceback

        try:
            os.write(2, traceback.format_exc().encode())
        except Exception:  # nowhere left to say it
            pass
    finally:
        os._exit(status)


def _load(script: Path | None) -> Any:
    # importlib.machinery is loaded with the interpreter (importlib.util would import
    # contextlib, pathlib's resources even more): the child is waited for
    import importlib.machinery
    import types

    from vkdoctor.resources import probe_script

    path = probe_script() if script is None else str(script)
    name = "vkdoctor_loadtest_child"
    module = types.ModuleType(name)
    module.__file__ = path
    importlib.machinery.SourceFileLoader(name, path).exec_module(module)
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
        try:
            os.close(fd)
        except OSError:
            pass


class Spawner:
    """The load test's children from here (vkdoctor.children.Spawner), which the face hands in on
    the Context: the child waiting since launch, the one handed a request ahead, the request
    kept for the next run, and a log folder made without importing tempfile."""

    def log_folder(self, env: Mapping[str, str]) -> str | None:
        return private_directory(env)

    def remove_logs(self, logdir: str) -> None:
        remove_logs(logdir)

    def fork(
        self, request: Mapping[str, Any], *, env: Mapping[str, str], cwd: Path
    ) -> ForkedChild | None:
        waiting = take(env)
        return waiting.hand(request, env=env, cwd=cwd) if waiting is not None else None

    def adopt(self, request: Mapping[str, Any], env: Mapping[str, str], cwd: Path) -> Ahead | None:
        return take_ahead(request, env, cwd)

    def remember(
        self, cache_dir: Path | None, env: Mapping[str, str], cwd: Path, request: Mapping[str, Any]
    ) -> None:
        remember(cache_dir, env, cwd, request)


SPAWNER = Spawner()
