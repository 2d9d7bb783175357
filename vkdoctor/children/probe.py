"""Runs the compute probe (probes/rmsnorm_probe.py) in a child process and reads what happened.

The child may segfault or abort inside a driver, or hang: it runs in its own session with a
timeout, and on timeout its whole process group is killed. Whatever happens becomes the report's
`probe` object (status pass|fail|crash|timeout|no-adapter|error) with the stage the child reached
and the last lines of its stderr. Imports only the standard library: `vkdoctor run-probe` starts
the child before it loads anything else.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from vkdoctor import children
from vkdoctor.cachedir import driver_env
from vkdoctor.model import files
from vkdoctor.resources import probes_dir

PROBE_SCRIPT = "rmsnorm_probe.py"
#: the child's progress lines on stderr (probes/rmsnorm_probe.py STAGE_PREFIX, SEEN_PREFIX)
STAGE_PREFIX = "vkdoctor-probe: stage "
SEEN_PREFIX = "vkdoctor-probe: seen "
#: harmless stderr lines; counted, not shown. Mesa's VK_LAYER_MESA_device_select calls
#: wl_display_connect, and libwayland prints this when XDG_RUNTIME_DIR is unset.
NOISE = ("error: XDG_RUNTIME_DIR is invalid or not set in the environment.",)
#: environment variables that change what the loader, the drivers or wgpu do
ENV_NAMES = (
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "NODEVICE_SELECT",
    "XDG_RUNTIME_DIR",
    "PYTHONPATH",
    "PYTHONHOME",
    "XDG_CACHE_HOME",
)
ENV_PREFIXES = ("VK_", "WGPU", "MESA_", "LP_", "__EGL_")
TAIL_LINES = 20
TAIL_CHARS = 4000

#: seconds to wait for the child's stack dump before killing it on timeout
DUMP_SECONDS = 0.5
#: seconds to wait for the pipes to close after the process group was killed
REAP_SECONDS = 5.0
#: seconds of silence on pipes still open after the child exited before they are given up
EXIT_DRAIN_SECONDS = 0.2


class ProbeRequest(NamedTuple):
    """How to run the probe. The environment is passed separately and used exactly.

    (A NamedTuple, not a dataclass: `vkdoctor run-probe` imports this module before it starts the
    child, and dataclasses costs ~10 ms of imports on that path.)
    """

    cpu: bool = False
    #: an adapter that is not a CPU (discrete, integrated or virtual GPU)
    gpu: bool = False
    adapter: str | None = None
    backend: str = "vulkan"
    seed: int | None = None
    shader_dir: Path | None = None
    timeout: float = 60.0
    python: str = sys.executable
    script: Path | None = None
    #: more arguments for the script (the bench's sizes and repeats)
    extra_args: tuple[str, ...] = ()
    #: the capability ladder after the probe (f16, bf16 storage, subgroups, limits, ...)
    capabilities: bool = False

    def argv(self) -> list[str]:
        script = self.script or probes_dir() / PROBE_SCRIPT
        cmd = [self.python, "-X", "faulthandler", str(script), "--backend", self.backend]
        cmd += ["--parent", str(os.getpid())]
        if self.cpu:
            cmd.append("--cpu")
        if self.gpu:
            cmd.append("--gpu")
        if self.capabilities:
            cmd.append("--capabilities")
        if self.adapter:
            cmd += ["--adapter", self.adapter]
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        if self.shader_dir is not None:
            cmd += ["--shader-dir", str(self.shader_dir)]
        return cmd + list(self.extra_args)


class RunningProbe:
    """A started child, or why it could not start."""

    def __init__(
        self,
        request: ProbeRequest,
        argv: list[str],
        started: float,
        process: subprocess.Popen[bytes] | None,
        env: dict[str, str],
        spawn_error: str | None = None,
    ) -> None:
        self.request = request
        self.argv = argv
        self.started = started
        self.process = process
        self.env = env
        self.spawn_error = spawn_error


def start(env: Mapping[str, str], request: ProbeRequest) -> RunningProbe:
    """Start the child; `finish` waits for it. Never raises for a child that cannot start."""
    argv = request.argv()
    started = time.monotonic()
    try:
        proc = children.start(argv, env=driver_env(env))
    except OSError as exc:
        return RunningProbe(
            request, argv, started, None, relevant_env(env), f"cannot start {argv[0]}: {exc}"
        )
    return RunningProbe(request, argv, started, proc, relevant_env(env))


def finish(running: RunningProbe) -> dict[str, Any]:
    """Wait up to the request's timeout, kill the process group if needed, and interpret."""
    proc = running.process
    if proc is None:
        return _result(
            running,
            status="error",
            reason="spawn-failed",
            summary=running.spawn_error or "the probe did not start",
        )
    output = _Output(proc)
    try:
        timed_out = not output.read_until_exit(running.request.timeout)
        if timed_out:
            # the child dumps its Python stacks on SIGUSR1 (faulthandler), even in native code
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGUSR1)
            output.read_until_exit(DUMP_SECONDS)
            children.kill_group(proc.pid)
            output.read_until_exit(REAP_SECONDS)
    except BaseException:
        # interrupted (Ctrl-C reaches only our session): the child must not outlive us
        children.kill_group(proc.pid)
        raise
    finally:
        output.close()
    if proc.poll() is None:  # outlived even SIGKILL's wait: nothing more to learn
        proc.kill()
    proc.wait()
    # the child's own children (if any) go with it
    children.kill_group(proc.pid)
    return interpret(
        running,
        returncode=proc.returncode,
        stdout=bytes(output.stdout).decode("utf-8", "replace"),
        stderr=bytes(output.stderr).decode("utf-8", "replace"),
        timed_out=timed_out,
    )


def run_probe(env: Mapping[str, str], request: ProbeRequest) -> dict[str, Any]:
    """Run the probe with exactly `env` and return the report's `probe` object."""
    return finish(start(env, request))


class _Output:
    """The child's stdout and stderr, read until the child has exited (not until the pipes
    close: a process the driver started in another session can hold them open forever)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self._proc = proc
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._selector = selectors.DefaultSelector()
        self._selector.register(proc.stdout, selectors.EVENT_READ, self.stdout)
        self._selector.register(proc.stderr, selectors.EVENT_READ, self.stderr)

    def read_until_exit(self, seconds: float) -> bool:
        """Read for up to `seconds`; True once the child has exited and what it wrote is read
        (the pipes closed, or nothing more came for a moment after its exit)."""
        deadline = time.monotonic() + seconds
        exited: float | None = None
        while self._selector.get_map():
            now = time.monotonic()
            if exited is None and self._proc.poll() is not None:
                exited = now
            if exited is not None and now - exited > EXIT_DRAIN_SECONDS:
                return True  # someone else holds the pipes: the child's part is read
            if exited is None and now >= deadline:
                return False
            wait = EXIT_DRAIN_SECONDS if exited is not None else min(deadline - now, 0.5)
            for key, _ in self._selector.select(timeout=max(wait, 0.0)):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    key.data.extend(chunk)
                else:
                    self._selector.unregister(key.fileobj)
        return self._proc.poll() is not None or self._wait(deadline)

    def _wait(self, deadline: float) -> bool:
        try:
            self._proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        self._selector.close()
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()


def stages_of(stderr: str) -> list[str]:
    return [
        line[len(STAGE_PREFIX) :].strip()
        for line in stderr.splitlines()
        if line.startswith(STAGE_PREFIX)
    ]


def seen_of(stderr: str) -> dict[str, Any] | None:
    """The adapters the child saw and the one it chose, as it said before its first device
    call: what a child that then crashed or hung leaves of its document."""

    for line in reversed(stderr.splitlines()):
        if line.startswith(SEEN_PREFIX):
            try:
                seen = files.json_value(line[len(SEEN_PREFIX) :])
            except ValueError:
                return None
            return seen if isinstance(seen, dict) else None
    return None


def _is_dump_head(line: str) -> bool:
    """The first line of a thread's stack in a faulthandler dump ("Current thread 0x7f..
    (most recent call first):"; Python 3.13 puts the thread's name before the parenthesis)."""
    return line.endswith("(most recent call first):") and line.startswith(
        ("Current thread ", "Thread ", "Stack ")
    )


def split_at_dump(stderr: str) -> tuple[str, str]:
    """stderr before the first stack dump, and from it on ("" when there is none). The stages
    before it are where the child was when the dump signal came: a driver's wait that the signal
    cuts short (nanosleep's EINTR) lets the child go on to later stages before the kill."""
    at = 0
    for line in stderr.splitlines(keepends=True):
        if _is_dump_head(line.rstrip("\r\n")):
            return stderr[:at], stderr[at:]
        at += len(line)
    return stderr, ""


def stderr_tail(stderr: str) -> tuple[list[str], int]:
    """The last lines of stderr without progress lines and known noise; and how many were noise."""
    kept: list[str] = []
    noise = 0
    for line in stderr.splitlines():
        if line.startswith((STAGE_PREFIX, SEEN_PREFIX)):
            continue
        if line.strip() in NOISE:
            noise += 1
            continue
        kept.append(line)
    tail = kept[-TAIL_LINES:]
    while sum(len(s) for s in tail) > TAIL_CHARS and len(tail) > 1:
        tail = tail[1:]
    return tail, noise


def _document(stdout: str) -> dict[str, Any] | None:

    for line in reversed(stdout.splitlines()):
        if line.strip():
            try:
                doc = files.json_value(line)
            except ValueError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def interpret(
    running: RunningProbe, *, returncode: int, stdout: str, stderr: str, timed_out: bool
) -> dict[str, Any]:
    """Turn the child's exit, output and stderr into the `probe` object."""
    stages = stages_of(stderr)
    # "done" follows the last stage once the result is written
    finished = bool(stages) and stages[-1] == "done"
    after: list[str] = []
    if timed_out:
        # the stage it hung in is the one its stack dump was taken in, not a later one
        before, dumped = split_at_dump(stderr)
        if dumped:
            stages, after = stages_of(before), stages_of(dumped)
    work = [s for s in stages if s != "done"]
    reached = work[-1] if work else None
    tail, noise = stderr_tail(stderr)
    doc = _document(stdout)
    seen = seen_of(stderr)
    extra: dict[str, Any] = {
        "returncode": returncode,
        "stage": reached,
        "finished": finished,
        "stderr_tail": tail,
        "stderr_noise_lines": noise,
    }
    where = f"at stage {reached}" if reached else "before it reported any stage"
    if timed_out:
        if "done" in stages:
            where = "after it printed its result, while exiting"
        went_on = [s for s in after if s != "done"]
        if went_on:
            extra["stages_after_dump"] = after
            where += (
                f" (the signal that asked for its stack dump ended the wait, and it went on to "
                f"{went_on[-1]} before the kill)"
            )
        return _result(
            running,
            doc=doc or seen,
            status="timeout",
            reason="timeout",
            summary=(
                f"the probe did not finish within {running.request.timeout:g} s and was killed "
                f"{where}: the driver hangs, or this machine is far slower than expected"
            ),
            **extra,
        )
    if returncode < 0:
        sig = signal_name(returncode)
        why = {
            "SIGSEGV": "a segmentation fault",
            "SIGABRT": "an abort (a Rust panic in wgpu-native, or an assertion in the driver)",
            "SIGBUS": "a bus error",
            "SIGILL": "an illegal instruction (a library built for a newer CPU?)",
            "SIGFPE": "a floating-point exception",
            "SIGKILL": "SIGKILL (the kernel's out-of-memory killer?)",
        }.get(sig, sig)
        if finished:
            where = "after it printed its result, while exiting"
        return _result(
            running,
            doc=doc or seen,
            status="crash",
            reason="signal",
            signal=sig,
            summary=f"the probe process died of {why} {where}",
            **extra,
        )
    if doc is None:
        traceback_line = next(
            (line for line in reversed(tail) if line and not line.startswith(" ")), None
        )
        python_error = any(line.startswith("Traceback") for line in tail)
        return _result(
            running,
            doc=seen,
            status="error",
            reason="python-error" if python_error else "no-output",
            summary=(
                f"the probe exited with status {returncode} {where} without a result"
                + (f": {traceback_line}" if traceback_line else "")
            ),
            **extra,
        )
    return _result(running, doc=doc, **extra)


def _probe_plan() -> dict[str, Any] | None:
    """The ladder and the cases the shipped probe runs (its RUNGS and CASES)."""
    import importlib.util

    path = probes_dir() / PROBE_SCRIPT
    try:
        spec = importlib.util.spec_from_file_location("vkdoctor_probe_plan", path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return {
            "ladder": list(module.RUNGS),
            "cases": [[rows, d] for rows, d, _, _ in module.CASES],
        }
    except Exception:  # the plan is a courtesy to the JUnit report, never a reason to fail
        return None


def _result(
    running: RunningProbe, *, doc: Mapping[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """The `probe` object: the child's document (if any), overridden by what the parent saw."""
    out: dict[str, Any] = {
        "status": "error",
        "reason": None,
        "summary": None,
        "backend": None,
        "adapter": None,
        "adapters": [],
        "ladder": [],
        "cases": [],
    }
    out.update(doc or {})
    out.update(fields)
    if "plan" not in out and running.request.script is None:
        # the child died before it wrote its document: what it would have run, from its
        # source, so that a JUnit report lists every rung and case as not reached
        plan = _probe_plan()
        if plan is not None:
            out["plan"] = plan
    if out.get("status") not in ("pass", "fail", "crash", "timeout", "no-adapter", "error"):
        out["status"] = "error"
    out["child_seconds"] = out.get("seconds")
    out["seconds"] = round(time.monotonic() - running.started, 6)
    # to run by hand: without the tie to this vkdoctor process
    at = running.argv.index("--parent") if "--parent" in running.argv else len(running.argv)
    out["command"] = running.argv[:at] + running.argv[at + 2 :]
    out["timeout"] = running.request.timeout
    out["env"] = running.env
    if out.get("status") == "no-adapter":
        # a fix must not say "install lavapipe" when it is installed
        out["lavapipe_manifest"] = installed_lavapipe()
    out["pid"] = running.process.pid if running.process else None
    return out


#: the loader's default driver directories, where distributions put lavapipe's manifest
DRIVER_DIRS = ("/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/usr/share/vulkan/icd.d")


def installed_lavapipe() -> str | None:
    """lavapipe's manifest in the loader's default directories, when it is installed."""
    for directory in DRIVER_DIRS:
        found = sorted(Path(directory).glob("lvp_icd*.json"))
        if found:
            return str(found[0])
    return None


def relevant_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that decide what the probe sees, for the report."""
    return {k: v for k, v in sorted(env.items()) if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}


# --- starting the child before the command line is parsed -------------------------------------
# `vkdoctor run-probe` spends ~0.1 s importing click and vkdoctor before it could start the child.
# vkdoctor.launch reads a plain command line (vkdoctor.checkargs) and starts the child at once;
# the click command then adopts it if its validated request is the same, and otherwise kills it.

_early: list[tuple[RunningProbe, dict[str, str]]] = []


def start_early(request: ProbeRequest, env: Mapping[str, str]) -> None:
    """Start the child for a plain `run-probe` now; `adopt` picks it up."""
    running = start(env, request)
    if running.process is not None:
        _early.append((running, dict(env)))


def adopt(request: ProbeRequest, env: Mapping[str, str]) -> RunningProbe | None:
    """The child started early for exactly this request and environment; else None (and it dies)."""
    while _early:
        running, early_env = _early.pop()
        if running.request == request and early_env == dict(env):
            return running
        _discard(running)
    return None


def discard_early() -> None:
    """Kill a child started early that no command adopted (a usage error, --help)."""
    while _early:
        _discard(_early.pop()[0])


def _discard(running: RunningProbe) -> None:
    if running.process is not None:
        children.kill_group(running.process.pid)
        output = _Output(running.process)
        output.read_until_exit(REAP_SECONDS)
        output.close()
        running.process.wait()
