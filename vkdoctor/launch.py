"""The console entry point: gives `run-probe` a head start, then runs the click CLI."""

from __future__ import annotations

import errno
import gc
import io
import os
import sys

from vkdoctor import checkargs, terminate

# nothing heavier at the top: the load test's child is forked first, and pathlib, typing and
# contextlib cost 10-25 ms each on a slow machine before its drivers could start loading
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, NoReturn

    from vkdoctor.model.factstore import FactStore

#: the variables ld.so reads at start; this process loads its own extension modules (zlib,
#: _ctypes, ...) and must not get them from the directories it is asked to diagnose: a truncated
#: libz.so.1 on LD_LIBRARY_PATH would kill it with SIGBUS before it says a word
_LDSO_VARIABLES = (b"LD_LIBRARY_PATH", b"LD_PRELOAD")
_SAVED = b"VKDOCTOR_SAVED_LDSO"
#: the speed pieces (vkdoctor.speed) to leave out of this run, comma-separated: how
#: benchmarks/pieces.py measures what each saves; the report is the same either way
SPEED_OFF = "VKDOCTOR_SPEED_OFF"


def _off(piece: str) -> bool:
    return piece in os.environ.get(SPEED_OFF, "").split(",")


def _without_ldso_variables() -> bool:
    """Start again without ld.so's variables, and put them back in os.environ there: the checks
    read them from os.environ, and every child (load test, probe, `exec`) inherits them. True
    in the process started again (os.environ then differs from what ld.so read)."""
    env = os.environb
    saved = env.pop(_SAVED, None)
    if saved is not None:
        for name in saved.split(b","):
            value = env.pop(_SAVED + b"_" + name, None)
            if value is not None:
                env[name] = value
            else:  # it was not set: only the restart set it (PYTHONPATH, `_restart`)
                env.pop(name, None)
        passed = env.pop(b"VKDOCTOR_ZYGOTE", None)
        if passed is not None:
            from vkdoctor.speed import zygote

            zygote.take_over(passed.decode("ascii", "replace"), os.environ)
        return True
    present = [name for name in _LDSO_VARIABLES if name in env]
    if not present or not getattr(sys, "orig_argv", None) or not _may_supply(env):
        return False
    child = dict(env)
    for name in present:
        child[_SAVED + b"_" + name] = child.pop(name)
    argv = _restart(child, present)
    child[_SAVED] = b",".join(present)
    if checkargs.loads_drivers(sys.argv[1:]) and not _off("zygote"):
        # the load test's child is forked here, where ld.so's variables are the user's, and
        # waits for the process started again (it knows it by VKDOCTOR_ZYGOTE)
        from vkdoctor.speed import zygote

        zygote.start(os.environ)
        child.update((k.encode(), v.encode()) for k, v in zygote.passed_on().items())
    try:
        os.execve(sys.executable, argv, child)
    except OSError:
        zygote_module = sys.modules.get("vkdoctor.speed.zygote")
        if zygote_module is not None:
            zygote_module.passed_on(keep=False)  # nobody else is to have its pipes
        return False  # run as we are


def _restart(child: dict[bytes, bytes], saved: list[bytes]) -> list[str]:
    """The command line to start again with: this one, with -S and this process's sys.path as
    PYTHONPATH (the user's own PYTHONPATH, or its absence, is saved with ld.so's variables and
    put back at the start). `site` runs the .pth hooks of every installed package once more,
    5 ms here, 55 ms in a CUDA container whose hooks import importlib.resources; vkdoctor needs
    only the paths they made. As it was where the path cannot be said in PYTHONPATH, or where
    PYTHONPATH is not read (-I, -E) or site is off already."""
    argv = list(sys.orig_argv)
    flags = sys.flags
    # [0] is the script's own folder, which Python puts first again (not with -P)
    path = sys.path if flags.safe_path else sys.path[1:]
    if (
        len(argv) < 2
        or flags.no_site
        or flags.isolated
        or flags.ignore_environment
        or any(os.pathsep in p or not p for p in path)
    ):
        return argv
    name = b"PYTHONPATH"
    if name in child:
        child[_SAVED + b"_" + name] = child[name]
    child[name] = os.fsencode(os.pathsep.join(path))
    saved.append(name)
    return [argv[0], "-S", *argv[1:]]


def _may_supply(env: os._Environ[bytes]) -> bool:
    """Whether ld.so could take a library from these variables at all: a preload, or an
    LD_LIBRARY_PATH directory holding a shared object (an exec costs an interpreter start)."""
    if env.get(b"LD_PRELOAD", b"").strip():
        return True
    for entry in env.get(b"LD_LIBRARY_PATH", b"").replace(b";", b":").split(b":"):
        try:
            with os.scandir(entry or b".") as it:
                if any(b".so" in e.name for e in it):
                    return True
        except OSError:
            continue
    return False


def main() -> None:
    restored = _without_ldso_variables()
    # A run allocates about a million objects and keeps most of them to the end: the default
    # threshold (700) runs the cycle collector ~60 times over them for nothing (~10 ms). A
    # `check` leaves about 50,000 more tracked objects alive than it frees; at 20,000 the two
    # collections that still ran cost ~10 ms, so the threshold is above that.
    gc.set_threshold(100_000, 20, 20)
    # paths and variables are bytes: one that is not UTF-8 comes in surrogate-escaped and goes
    # out as the same bytes, as `ls` prints it, whatever the locale's error handler says
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")
    _occupy_closed_descriptors()
    terminate.install()
    _switch_off_inside()
    early: Any = None
    replayable = None
    replayed = False
    try:
        # inside the try: a SIGTERM while a child is started early unwinds like any other
        loads_drivers = checkargs.loads_drivers(sys.argv[1:])
        if loads_drivers and not _off("zygote"):
            from vkdoctor.speed import zygote

            if not restored:
                zygote.start(os.environ)
            if sys.argv[1] == "check" and checkargs.plain_selection(sys.argv[2:]):
                try:
                    _hand_ahead()
                except Exception:  # a head start, never a reason to fail
                    pass
        if len(sys.argv) > 1 and sys.argv[1] == "run-probe":
            request = checkargs.request_from_argv(sys.argv[2:])
            if request is not None:
                from vkdoctor.children import probe

                early = probe
                probe.start_early(request, os.environ)
        elif loads_drivers:
            replayable = _start_recording()
            tried = _replay(replayable) if replayable is not None else "untouched"
            if tried == "replayed":
                replayed = True
                raise SystemExit(0)
            timeout = checkargs.plain_timeout(sys.argv[2:]) if sys.argv[1] == "check" else None
            if tried == "untouched" and timeout is not None:
                from vkdoctor.children import loadtest
                from vkdoctor.speed import zygote

                early = loadtest
                loadtest.start_early(timeout, os.environ, zygote.SPAWNER, _fact_store())
            if replayable is not None:
                from vkdoctor.commands.common import OUTPUT_TAPS

                OUTPUT_TAPS.append(sys.modules["vkdoctor.speed.replay"].note_output)
        from vkdoctor.cli import main as cli_main

        cli_main()
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:  # Ctrl-C before the command line interface, which says the same
        os.write(2, b"vkdoctor: interrupted\n")
        code = 130
    except Exception:
        # before the command line interface could handle it: its import ran out of memory
        # (CPython then says MemoryError, SystemError "error return without exception set", or
        # ValueError from a compile() cut short); re-raised when no limit is tight
        code = _out_of_memory()
    else:
        code = 0
    finally:
        _clean_up(early)
    common = sys.modules.get("vkdoctor.commands.common")
    if common is not None and common.STDOUT_FAILED and code in (0, None):
        code = common.EXIT_OUTPUT  # the report was lost: not a success
    if replayable is not None and not replayed:
        try:
            sys.modules["vkdoctor.speed.replay"].save(code)
        except Exception:  # a later run's head start, never a reason to fail
            pass
    exit_now(code)


def _switch_off_inside() -> None:
    """SPEED_OFF's pieces that act below the command layer: the fact cache keeps nothing, the
    package checks are not forked."""
    if _off("factcache"):
        from vkdoctor.speed import factcache

        factcache.OFF = True
    if _off("offload"):
        from vkdoctor.speed import offload

        offload.OFF = True


def _start_recording() -> Path | None:
    """For a `check` that a later run may replay (vkdoctor.speed.replay): note from now on what it
    reads; its cache directory, or None."""
    if len(sys.argv) < 3 or sys.argv[1] != "check" or _off("replay"):
        return None
    from vkdoctor.speed import replay

    if not replay.eligible(sys.argv[1:]):
        return None
    from vkdoctor.cachedir import cache_home, distrusted, nothing_kept

    try:
        cache_dir = cache_home(os.environ)
        if nothing_kept(os.environ) or distrusted(os.environ):
            # a first run starts the package tools (dpkg --audit, grep over its lists), so it
            # is never kept: it is not recorded either
            return None
        recorder = replay.start_recording(cache_dir, sys.argv[1:], os.environ)
    except Exception:  # then this run is not kept, nothing more
        return None
    from vkdoctor.model.context import watch_facts

    watch_facts(recorder)  # which fact read what
    return cache_dir


def _fact_store() -> FactStore:
    """The fact store of the cache directory (vkdoctor.speed.factcache), as the commands give
    their Context (vkdoctor.commands.common.host_context)."""
    from vkdoctor.cachedir import cache_home
    from vkdoctor.model.factstore import NOTHING_KEPT
    from vkdoctor.speed.factcache import FactCache

    try:
        return FactCache(cache_home(os.environ))
    except Exception:  # the command meets the same problem and reports it
        return NOTHING_KEPT


def _replay(cache_dir: Path) -> str:
    """vkdoctor.speed.replay.attempt: whether the last run's report was printed again, or the load
    test started (then not again early: the command takes it), or neither."""
    from vkdoctor.speed import replay, zygote

    try:
        return replay.attempt(cache_dir, sys.argv[1:], os.environ, _run_one, zygote.SPAWNER)
    except Exception:  # the full run finds and says what is wrong (and starts what it needs)
        return replay.STARTED


def _run_one(*args: Any, **kwargs: Any) -> Any:
    """vkdoctor.runner.run_one, imported only when a replay runs a check."""
    from vkdoctor.runner import run_one

    return run_one(*args, **kwargs)


def _clean_up(early: Any) -> None:
    """What a run leaves to its end; out of memory, as much of it as can be done, in silence
    (the run has said what is wrong: a traceback of its cleanup would only hide it)."""
    try:
        # a child started early that no command adopted (usage error, --help, Ctrl-C)
        if early is not None:
            early.discard_early()
        zygote_module = sys.modules.get("vkdoctor.speed.zygote")
        if zygote_module is not None:
            zygote_module.discard()
        # what was learnt after the checks (the records the report and its rendering compiled)
        factcache_module = sys.modules.get("vkdoctor.speed.factcache")
        if factcache_module is not None:
            factcache_module.save_all()
    except (MemoryError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno != errno.ENOMEM:
            raise
        sys.unraisablehook = lambda _: None  # the finalizers and atexit's that fail the same way


def _out_of_memory() -> int:
    """Say which limit left too little memory (as the CLI does), or re-raise: 1 or raises."""
    try:
        from vkdoctor.model.limits import out_of_memory

        limited = out_of_memory()
    except Exception:  # too little even to read the limits (any error: see vkdoctor.cli.main)
        limited = (
            "a resource limit leaves it too little memory even to read the limits "
            "(`ulimit -a` shows them; `ulimit -S -v unlimited` lifts the address-space "
            "limit in the shell that runs your Vulkan programs)"
        )
    if limited is None:
        raise  # noqa: PLE0704 - called only from an except block: the error being handled
    os.write(2, f"vkdoctor: out of memory: {limited}\n".encode())
    return 1


def _hand_ahead() -> None:
    from vkdoctor.cachedir import cache_path, load_test_env
    from vkdoctor.speed import zygote

    try:
        cwd = os.getcwd()
    except OSError:  # the working directory is gone: the command says so
        return
    zygote.hand_ahead(cache_path(os.environ), os.environ, cwd, load_test_env(os.environ))


class _ClosedStdout(io.TextIOBase):
    """sys.stdout when vkdoctor started with it closed (`vkdoctor check >&-`): every write
    fails as a write to /dev/full does, so the lost report is an output failure (exit 2)."""

    encoding = "utf-8"
    errors = "surrogateescape"

    def write(self, s: str) -> int:
        raise OSError(errno.EBADF, "it was closed when vkdoctor started")

    def fileno(self) -> int:
        return 1

    def isatty(self) -> bool:
        return False


def _occupy_closed_descriptors() -> None:
    """Put /dev/null on a closed descriptor 0, 1 or 2: the next file vkdoctor opened would get
    that number, and a child would take it for its standard stream."""
    streams = {0: sys.stdin, 1: sys.stdout, 2: sys.stderr}
    for fd in (0, 1, 2):
        if streams[fd] is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()


def exit_now(code: str | int | None) -> NoReturn:
    """Exit as `sys.exit(code)` would, without tearing the interpreter down: atexit handlers
    (temporary directories' finalizers among them) run and stdout/stderr are flushed, but the
    objects of the run are not freed one by one (about 30 ms of a `vkdoctor check`). With a
    thread still running, or under a profiler, tracer or coverage tool (which write their
    results after the program returns), the ordinary exit is used."""
    import threading

    if threading.active_count() > 1 or _observed():
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF
    else:
        print(code, file=sys.stderr)
        status = 1
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the descriptor closed (vkdoctor check >&-)
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (vkdoctor check | head): nothing to do
            status = status or 120
    terminate.die_of_it()
    os._exit(status)


def _observed() -> bool:
    """A profiler, tracer, debugger or coverage tool is watching this process."""
    if sys.getprofile() is not None or sys.gettrace() is not None or "coverage" in sys.modules:
        return True
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+: sys.monitoring tools
    return monitoring is not None and any(monitoring.get_tool(i) for i in range(6))
