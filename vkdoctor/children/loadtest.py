"""The real load test: dlopen each load target and create an instance through it, in one child.

`run_load_test` spawns probes/loadtest.py (one process for all targets), reads the JSON line it
writes before and after every step, and when the child dies or stops answering, blames the target
whose step was in flight (crash with the signal, or timeout), kills the process group, and starts a
new child for the targets that remain. Everything after the spawn is pure: `apply_event` folds the
child's lines into per-target records, `classify` turns one outcome into a verdict, and
`disagreements` compares a static prediction with what really happened.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vkdoctor import children, terminate
from vkdoctor.cachedir import load_test_env
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model import Remedy, Severity, files
from vkdoctor.model.context import Context, offer_facts
from vkdoctor.model.factstore import NOTHING_KEPT, FactStore
from vkdoctor.model.record import field, record, replace
from vkdoctor.resources import probes_dir

#: a step longer than this is a hang; a real GPU driver creates its instance in well under a second
STEP_TIMEOUT = 10.0
#: how much of a step's captured output the report keeps (its tail)
OUTPUT_TAIL = 2000
#: loader version that has VK_LOADER_DRIVERS_DISABLE / VK_LOADER_LAYERS_DISABLE
FILTERS_SINCE = (1, 3, 234)
#: loader version from which a driver whose vkEnumeratePhysicalDevices fails (other than out of
#: host memory) loses only its own devices (Vulkan-Loader fa3b7bdef); before it, the whole call
#: fails for every driver (docs/load-test.md)
ENUMERATE_SKIPS_SINCE = (1, 3, 284)
VK_SUCCESS = 0
VK_ERROR_OUT_OF_HOST_MEMORY = -1
VK_INCOMPLETE = 5
#: the variables that name a driver's manifest for the loader, in the loader's order of precedence
DRIVER_FILE_VARS = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES")

StepState = Literal["ok", "failed", "crash", "timeout", "skipped", "error", "not-run"]
#: how one target, loaded beside the others, breaks every application (`wrecks_all`)
Wreck = Literal["crash", "timeout", "instance", "enumerate", "device"]

VK_RESULTS = {
    0: "VK_SUCCESS",
    5: "VK_INCOMPLETE",
    -1: "VK_ERROR_OUT_OF_HOST_MEMORY",
    -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
    -3: "VK_ERROR_INITIALIZATION_FAILED",
    -4: "VK_ERROR_DEVICE_LOST",
    -6: "VK_ERROR_LAYER_NOT_PRESENT",
    -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
    -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
}


def vk_result_name(code: int | None) -> str:
    if code is None:
        return "no result"
    return VK_RESULTS.get(code, f"VkResult {code}")


@record(frozen=True, kw_only=True)
class Device:
    """A physical device as vkGetPhysicalDeviceProperties(2) describes it."""

    name: str
    type: str
    api_version: str
    driver_version: str
    vendor_id: str
    device_id: str
    driver_name: str | None = None
    driver_info: str | None = None

    def describe(self) -> str:
        driver = " ".join(p for p in (self.driver_name, self.driver_info) if p)
        parts = [
            self.type,
            f"{driver}, driver version {self.driver_version}"
            if driver
            else f"driver version {self.driver_version}",
            f"Vulkan {self.api_version}",
            f"{self.vendor_id}:{self.device_id}",
        ]
        return f"{self.name} ({', '.join(parts)})"

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the fields a device does not report (None) are left out
        return {k: v for k, v in vars(self).items() if v is not None}


@record(frozen=True, kw_only=True)
class TargetOutcome:
    """What happened to one load target: each step's state, and the facts behind it."""

    target: LoadTarget
    dlopen: StepState = "not-run"
    #: dlerror() text, verbatim
    dlerror: str | None = None
    instance: StepState = "not-run"
    vk_result: int | None = None
    enumerate_result: int | None = None
    devices: tuple[Device, ...] = ()
    #: vkCreateDevice on the first device (one queue of family 0): None when not tried
    device_result: int | None = None
    #: for crash: the signal's name (SIGSEGV); for timeout: None
    signal: str | None = None
    #: the call in flight when the child crashed or hung: "dlopen", "vkCreateInstance",
    #: "vkEnumeratePhysicalDevices", "vkCreateDevice"
    crashed_in: str | None = None
    #: why a step was skipped or not run
    reason: str | None = None
    #: why vkdoctor loaded nothing of it: another user could have chosen its code (vkdoctor.trust)
    foreign: str | None = None
    #: the child's word that the driver, failing alone, may break the other drivers too
    suspect: bool = False
    #: for a suspect, the loader with it beside the drivers that gave a device: "result",
    #: "enumerate_result", "devices" (how many), "drivers" (the manifests); or "skipped": why
    beside: Mapping[str, Any] | None = None
    #: what the libraries printed during each step (tail), by step name
    output: Mapping[str, str] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.instance != "not-run" or self.dlopen in ("failed", "crash", "timeout", "error")

    @property
    def failed_step(self) -> str | None:
        for step in ("dlopen", "instance"):
            if getattr(self, step) in ("crash", "timeout"):
                return step
        return None

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the target flattened, results by name (VK_...), empty outputs left out
        return {
            "kind": self.target.kind,
            "name": self.target.name,
            "manifest": self.target.manifest,
            "library": self.target.dlopen_name,
            "dlopen": self.dlopen,
            "dlerror": self.dlerror,
            "instance": self.instance,
            "vk_result": vk_result_name(self.vk_result) if self.vk_result is not None else None,
            "enumerate_result": vk_result_name(self.enumerate_result)
            if self.enumerate_result is not None
            else None,
            "devices": [d.as_dict() for d in self.devices],
            "device_result": vk_result_name(self.device_result)
            if self.device_result is not None
            else None,
            "signal": self.signal,
            "reason": self.reason,
            "beside": dict(self.beside) if self.beside is not None else None,
            "output": {k: v for k, v in self.output.items() if v},
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
        }


@record(frozen=True, kw_only=True)
class LoadTestRun:
    """All outcomes of one load test, in target order, and how the run went."""

    outcomes: tuple[TargetOutcome, ...]
    loader_version: str | None = None
    #: why libvulkan.so.1 could not be loaded in the child (then no instance step ran)
    loader_error: str | None = None
    #: child processes started (1 unless a target crashed or hung)
    children: int = 0
    seconds: float = 0.0
    #: set when the global time bound stopped the run, or a child could not be started
    stopped: str | None = None
    #: why a child could not be started (then `stopped` says so too)
    spawn_error: str | None = None
    #: how the first child began: "forked" (waiting since vkdoctor started, vkdoctor.speed.zygote),
    #: "ahead" (forked, and handed the request the last run in this environment began with,
    #: which is this one's: zygote.hand_ahead) or "started" (a new program)
    first_child: str | None = None

    def evidence(self) -> dict[str, Any]:
        return {
            "loader_version": self.loader_version,
            "loader_error": self.loader_error,
            "children": self.children,
            "first_child": self.first_child,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "spawn_error": self.spawn_error,
        }


# ---------------------------------------------------------------------------------------------
# Parsing the child's lines (pure)


def parse_line(line: str) -> dict[str, Any] | None:
    """One protocol line, or None for anything that is not a JSON object with an event."""
    try:
        doc = files.json_value(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("event"), str) else None


def _device(doc: Mapping[str, Any]) -> Device:
    return Device(
        name=str(doc.get("name", "")),
        type=str(doc.get("type", "other")),
        api_version=str(doc.get("api_version", "")),
        driver_version=str(doc.get("driver_version", "")),
        vendor_id=str(doc.get("vendor_id", "")),
        device_id=str(doc.get("device_id", "")),
        driver_name=doc.get("driver_name"),
        driver_info=doc.get("driver_info"),
    )


def apply_event(outcome: TargetOutcome, event: Mapping[str, Any]) -> TargetOutcome:
    """The outcome after one "end" or "skip" line of the child about this target."""
    step = event.get("step")
    seconds = dict(outcome.seconds)
    if "seconds" in event and isinstance(step, str):
        seconds[step] = float(event["seconds"])
    if event["event"] == "skip" and step == "instance":
        return replace(outcome, instance="skipped", reason=str(event.get("reason", "")))
    if step == "beside":
        return replace(outcome, beside=_beside(event))
    if event["event"] == "error" and step in ("dlopen", "instance"):
        return replace(outcome, **{step: "error"}, reason=str(event.get("error", "")))
    if event["event"] != "end":
        return outcome
    if step == "dlopen":
        ok = bool(event.get("ok"))
        return replace(
            outcome,
            dlopen="ok" if ok else "failed",
            dlerror=None if ok else str(event.get("error") or ""),
            seconds=seconds,
        )
    if step == "instance":
        result = event.get("result")
        return replace(
            outcome,
            instance="ok" if result == 0 else "failed",
            vk_result=result if isinstance(result, int) else None,
            enumerate_result=event.get("enumerate_result"),
            devices=tuple(_device(d) for d in event.get("devices") or ()),
            device_result=event.get("device_result")
            if isinstance(event.get("device_result"), int)
            else None,
            suspect=event.get("suspect") is True,
            seconds=seconds,
        )
    return outcome


def _beside(event: Mapping[str, Any]) -> dict[str, Any]:
    if event["event"] == "skip":
        return {"skipped": str(event.get("reason", ""))}
    if event["event"] == "error":
        return {"skipped": f"vkdoctor's error: {event.get('error', '')}"}
    result = event.get("result")
    enum = event.get("enumerate_result")
    return {
        "result": result if isinstance(result, int) else None,
        "enumerate_result": enum if isinstance(enum, int) else None,
        "devices": len(event.get("devices") or ()),
        "drivers": [str(d) for d in event.get("drivers") or ()],
    }


#: the call the child said comes next ("begin" of these steps within its instance step)
_CALLS = {
    "enumerate": "vkEnumeratePhysicalDevices",
    "device": "vkCreateDevice",
    "destroy-device": "vkDestroyDevice",
    "destroy": "vkDestroyInstance",
}


def blame(outcome: TargetOutcome, step: str, *, signal_name: str | None) -> TargetOutcome:
    """The target whose `step` was in flight when the child died (signal) or hung (None)."""
    state: StepState = "crash" if signal_name else "timeout"
    if step == "dlopen":
        return replace(outcome, dlopen=state, signal=signal_name, crashed_in="dlopen")
    call = _CALLS.get(step, "vkCreateInstance")
    return replace(outcome, instance=state, signal=signal_name, crashed_in=call)


def signal_name(returncode: int) -> str | None:
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def ended_by(returncode: int | None) -> str:
    """What ended a child that died in mid-step: its signal or its exit status, when known."""
    if returncode is None or returncode == children.STATUS_LOST:
        # not reaped within the bound, or reaped by another waiter
        return "an unknown signal or exit"
    return signal_name(returncode) or f"exit status {returncode}"


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= OUTPUT_TAIL else "..." + text[-OUTPUT_TAIL:]


# ---------------------------------------------------------------------------------------------
# Running the child (I/O)


class _Folder:
    """The folder of a child's output that the spawner made (for a request handed ahead, or
    `_log_folder`): removed as a TemporaryDirectory would be."""

    def __init__(self, name: str, spawner: Spawner) -> None:
        self.name = name
        self._spawner = spawner

    def cleanup(self) -> None:
        self._spawner.remove_logs(self.name)


def _log_folder(
    spawner: Spawner | None, env: Mapping[str, str]
) -> _Folder | tempfile.TemporaryDirectory[str]:
    """A new folder of the user's alone for the child's output (in `env`'s TMPDIR): the
    spawner's (the zygote's makes it as tempfile would, without importing tempfile, with shutil
    and random ~8 ms), else tempfile's (also where TMPDIR names no folder: it tries others)."""
    if spawner is not None:
        made = spawner.log_folder(env)
        if made is not None:
            return _Folder(made, spawner)
    import tempfile

    return tempfile.TemporaryDirectory(prefix="vkdoctor-load-")


if TYPE_CHECKING:  # subprocess and tempfile are imported only when a program is started
    import subprocess
    import tempfile

    from vkdoctor.children import Running, Spawner

    #: the load-test child: a program started for it, or one the spawner forked
    ChildProcess = subprocess.Popen[bytes] | Running


@record
class _Child:
    """One child's progress, as its lines arrive."""

    proc: ChildProcess
    in_flight: tuple[int, str] | None = None
    last_event: float = 0.0
    done: bool = False
    hello: dict[str, Any] = field(default_factory=dict)


def child_command() -> list[str]:
    """The load-test child's command line; its request goes to its stdin (`child_request`)."""
    # -I: no user site, no PYTHON* variables; -S: no site import. The child needs the stdlib only.
    return [sys.executable, "-I", "-S", str(probes_dir() / "loadtest.py")]


def child_request(
    targets: Mapping[int, LoadTarget],
    *,
    good: Sequence[str],
    logdir: Path,
    loader: str,
    suspects: Mapping[int, LoadTarget] | None = None,
) -> dict[str, Any]:
    """What one child is asked to do (probes/loadtest.py): `targets` by index, in order, on top
    of the `good` driver manifests, with the library output logged under `logdir`; then each of
    the `suspects` (drivers an earlier child suspected) beside the good drivers."""
    return {
        "logdir": str(logdir),
        "parent": os.getpid(),
        "loader": loader,
        "good_drivers": list(good),
        "suspects": [{"index": i, "manifest": t.manifest} for i, t in (suspects or {}).items()],
        "targets": [
            {
                "index": i,
                "kind": t.kind,
                "name": t.name,
                "manifest": t.manifest,
                "dlopen_name": t.dlopen_name,
            }
            for i, t in targets.items()
        ],
    }


def _kill_group(proc: ChildProcess) -> None:
    children.kill_group_and_reap(proc, 5)


def _read_log(logdir: Path, index: int, step: str) -> str:
    try:
        return (logdir / f"{index}.{step}.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _spawn(
    request: Mapping[str, Any],
    *,
    env: Mapping[str, str],
    cwd: Path,
    logdir: Path,
    spawner: Spawner | None,
) -> tuple[ChildProcess, str]:
    """The child for `request`, in `env` (the child's own environment, driver_env's), and how
    it began: "forked" by the spawner, or "started" (a new program)."""
    child_env = dict(env)
    forked = spawner.fork(request, env=child_env, cwd=cwd) if spawner is not None else None
    if forked is not None:
        return forked, "forked"
    with open(logdir / "startup.log", "wb") as startup:
        proc = children.start(
            child_command(), env=child_env, stdin=children.PIPE, stderr=startup, cwd=cwd
        )
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps(request).encode())
        proc.stdin.close()
    except BrokenPipeError:
        pass
    return proc, "started"


def _drive(
    child: _Child,
    outcomes: dict[int, TargetOutcome],
    *,
    step_timeout: float,
    deadline: float,
) -> str:
    """Read the child's lines until it ends; return how it ended ("eof", "step", "global")."""
    assert child.proc.stdout is not None
    fd = child.proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    buf = b""
    try:
        while True:
            now = time.monotonic()
            step_end = child.last_event + step_timeout
            # a bound is judged on what the child has said by then: what it wrote while
            # vkdoctor did other work is read first (the bounds count from its last word)
            late = "global" if now >= deadline else "step" if now >= step_end else None
            if not sel.select(timeout=0 if late else min(step_end, deadline) - now):
                if late:
                    return late
                continue
            said = child.last_event
            chunk = os.read(fd, 65536)
            if not chunk:
                return "eof"
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                event = parse_line(raw.decode("utf-8", "replace"))
                if event is None:
                    continue
                child.last_event = time.monotonic()
                kind = event["event"]
                if kind == "hello":
                    child.hello = event
                elif kind == "done":
                    child.done = True
                elif kind == "begin":
                    child.in_flight = (int(event["index"]), str(event["step"]))
                elif kind in ("end", "skip", "error"):
                    index = int(event["index"])
                    outcomes[index] = apply_event(outcomes[index], event)
                    child.in_flight = None
            # past a bound, only what moves the child on counts: not more output without an
            # event, and after the global bound nothing but its last words
            if late and (child.last_event == said or (late == "global" and not child.done)):
                return late
    finally:
        sel.close()


class LoadTest:
    """One load test: `start()` spawns the first child and returns at once, so the test runs
    while the caller does other work; `result()` drives it to the end (once) and cleans up.

    The child dies with the thread that spawned it (PR_SET_PDEATHSIG follows the thread), so
    call `start()` from a thread that lives until `result()`: the main thread."""

    def __init__(
        self,
        targets: Sequence[LoadTarget],
        *,
        env: Mapping[str, str],
        cwd: Path,
        step_timeout: float = STEP_TIMEOUT,
        total_timeout: float = 60.0,
        loader: str = "libvulkan.so.1",
        remember_in: Path | None = None,
        spawner: Spawner | None = None,
    ) -> None:
        self.targets = tuple(targets)
        #: the cache directory that keeps the first request for the next run (Spawner.remember)
        self.remember_in = remember_in
        #: who forks children besides a new program each (vkdoctor.children.Spawner)
        self.spawner = spawner
        self.env = dict(env)
        self.cwd = cwd
        self.step_timeout = step_timeout
        self.total_timeout = total_timeout
        self.loader = loader
        self.outcomes = {i: _unloaded(t) for i, t in enumerate(self.targets)}
        # Drivers first: a layer's instance step runs on top of the drivers that already passed.
        self.order = sorted(self.outcomes, key=lambda i: (self.targets[i].kind != "driver", i))
        self.loader_version: str | None = None
        self.loader_error: str | None = None
        self.children = 0
        self.stopped: str | None = None
        self.spawn_error: str | None = None
        self.first_child: str | None = None
        self._started = 0.0
        self._deadline = 0.0
        self._tmp: tempfile.TemporaryDirectory[str] | _Folder | None = None
        self._child: _Child | None = None
        self._pending: list[int] = []
        self._result: LoadTestRun | None = None

    @property
    def _logdir(self) -> Path:
        assert self._tmp is not None
        return Path(self._tmp.name)

    def _out_of_time(self) -> str:
        return f"the load test's time bound ({self.total_timeout:g} s) ran out"

    def start(self) -> LoadTest:
        if self._tmp is None and self._adopt_ahead():
            return self
        if self._tmp is None:
            self._started = time.monotonic()
            self._deadline = self._started + self.total_timeout
            with terminate.held():  # not between mkdtemp and the finalizer that removes it
                self._tmp = _log_folder(self.spawner, self.env)
                # at exit (a SIGTERM unwinds as one) the child is killed before its directory
                # is removed: a child still writing there makes the removal fail half-way.
                # atexit runs this before the directory's own finalizer, registered earlier.
                atexit.register(self.cancel)
            self._spawn_next()
        return self

    def _adopt_ahead(self) -> bool:
        """Take the child the spawner handed this test's first request as vkdoctor started, if
        that is the request this test would send now."""
        if self.spawner is None:
            return False
        first = self._next_request(Path("/"))
        if first is None:
            return False
        ahead = self.spawner.adopt(first[1], load_test_env(self.env), self.cwd)
        if ahead is None:
            return False
        self._started = ahead.started
        self._deadline = self._started + self.total_timeout
        with terminate.held():
            self._tmp = _Folder(ahead.logdir, self.spawner)
            atexit.register(self.cancel)
        self._pending = first[0]
        self._child = _Child(proc=ahead.child, last_event=time.monotonic())
        self.children = 1
        self.first_child = "ahead"
        return True

    def cancel(self) -> None:
        """Stop without a result (the run's environment changed): the child is killed and its
        directory removed. `result()` must not be called afterwards."""
        if self._child is not None:
            _kill_group(self._child.proc)
            self._child = None
        if self._tmp is not None:
            with terminate.held():  # a removal cut short would leave the rest behind
                self._tmp.cleanup()

    def _next_request(self, logdir: Path) -> tuple[list[int], dict[str, Any]] | None:
        """The targets the next child is for and its request; None when nothing is left."""
        pending = [i for i in self.order if not self.outcomes[i].finished]
        suspects = {
            i: self.targets[i]
            for i in self.order
            if self.outcomes[i].suspect
            and self.outcomes[i].beside is None
            and self.outcomes[i].failed_step is None
        }
        if not (pending or suspects):
            return None
        t = self.targets
        good = [
            t[i].manifest
            for i in self.order
            if t[i].kind == "driver"
            and self.outcomes[i].instance == "ok"
            and self.outcomes[i].devices
        ]
        request = child_request(
            {i: t[i] for i in pending},
            good=good,
            logdir=logdir,
            loader=self.loader,
            suspects=suspects,
        )
        return pending, request

    def _spawn_next(self) -> None:
        """Start a child for the targets not finished yet; no child when none is left."""
        self._child = None
        self._pending = []
        if self.stopped:
            return
        following = self._next_request(self._logdir)
        if following is None:
            return
        if time.monotonic() >= self._deadline:
            self.stopped = self._out_of_time()
            return
        self._pending, request = following
        child_env = load_test_env(self.env)
        try:
            proc, began = _spawn(
                request, env=child_env, cwd=self.cwd, logdir=self._logdir, spawner=self.spawner
            )
        except OSError as exc:
            self.spawn_error = f"cannot start the load test child ({child_command()[0]}): {exc}"
            self.stopped = self.spawn_error
            return
        self.children += 1
        if self.first_child is None:
            self.first_child = began
            if self.spawner is not None:
                self.spawner.remember(self.remember_in, self.env, self.cwd, request)
        self._child = _Child(proc=proc, last_event=time.monotonic())

    def result(self) -> LoadTestRun:
        if self._result is not None:
            return self._result
        self.start()
        try:
            while self._child is not None:
                self._finish_child(self._child)
        finally:
            if self._child is not None:
                _kill_group(self._child.proc)
            if self._tmp is not None:
                with terminate.held():
                    self._tmp.cleanup()
        for i in self.order:
            if not self.outcomes[i].finished:
                self.outcomes[i] = replace(self.outcomes[i], reason=self.stopped or "not run")
        self._result = LoadTestRun(
            outcomes=tuple(self.outcomes[i] for i in range(len(self.targets))),
            loader_version=self.loader_version,
            loader_error=self.loader_error,
            children=self.children,
            seconds=time.monotonic() - self._started,
            stopped=self.stopped,
            spawn_error=self.spawn_error,
            first_child=self.first_child,
        )
        return self._result

    def _finish_child(self, child: _Child) -> None:
        """Read one child to its end, blame what it died on, and start the next if needed."""
        try:
            how = _drive(
                child, self.outcomes, step_timeout=self.step_timeout, deadline=self._deadline
            )
        finally:
            # Before reaping: the group id cannot be reused while the child is unreaped.
            _kill_group(child.proc)
        self._child = None
        if child.hello:
            self.loader_version = child.hello.get("loader_version") or self.loader_version
            self.loader_error = child.hello.get("loader_error") or self.loader_error
        for i in self._pending:
            out = {s: _tail(_read_log(self._logdir, i, s)) for s in ("dlopen", "instance")}
            self.outcomes[i] = replace(self.outcomes[i], output={**self.outcomes[i].output, **out})
        if how == "global":
            self.stopped = self._out_of_time()
        if child.in_flight is not None:
            index, step = child.in_flight
            sig = None
            if how == "eof":
                # a driver that calls exit() in mid-step is reported like a crash
                sig = ended_by(child.proc.returncode)
            self.outcomes[index] = blame(self.outcomes[index], step, signal_name=sig)
            self._spawn_next()
            return
        if how == "global":
            return
        if not child.done:
            self.stopped = _child_broke(self._logdir, child.proc.returncode, how, self.step_timeout)
            return
        for i in self._pending:
            if not self.outcomes[i].finished and self.outcomes[i].dlopen == "ok":
                reason = (
                    f"the Vulkan loader could not be loaded: {self.loader_error}"
                    if self.loader_error
                    else "the load test child did not try it"
                )
                self.outcomes[i] = replace(self.outcomes[i], instance="skipped", reason=reason)


def run_load_test(
    targets: Sequence[LoadTarget],
    *,
    env: Mapping[str, str],
    cwd: Path,
    step_timeout: float = STEP_TIMEOUT,
    total_timeout: float = 60.0,
    loader: str = "libvulkan.so.1",
    spawner: Spawner | None = None,
) -> LoadTestRun:
    """Load every target for real, in as few child processes as the targets allow."""
    return (
        LoadTest(
            targets,
            env=env,
            cwd=cwd,
            step_timeout=step_timeout,
            total_timeout=total_timeout,
            loader=loader,
            spawner=spawner,
        )
        .start()
        .result()
    )


def _child_broke(logdir: Path, rc: int | None, how: str, step_timeout: float) -> str:
    text = ""
    for name in ("startup.log", "child.log"):
        with contextlib.suppress(OSError):
            text += (logdir / name).read_text(encoding="utf-8", errors="replace")
    tail = _tail(text)
    if how == "step" and not tail:
        # nothing said at all: it was still starting when the step bound (a third of
        # --timeout) ran out
        return (
            f"the load test child was still starting when its step bound ({step_timeout:.2g} s, "
            "a third of --timeout) ran out"
        )
    if how == "step":
        what = "stopped answering"
    elif rc is None or rc == children.STATUS_LOST:
        what = "ended with an unknown status"
    else:
        what = f"ended with status {rc}"
    return f"the load test child {what} between steps: {tail or 'no output'}"


def foreign_code(target: LoadTarget) -> str | None:
    """Why another user could have chosen what loading `target` runs (its manifest, or the
    library it names, is theirs to change: vkdoctor.trust), or None. vkdoctor's children run
    none of it: run as root, that ran the other user's code as root."""
    from vkdoctor.trust import untrusted

    for path in (target.manifest, target.dlopen_name):
        if path.startswith("/"):
            why = untrusted(path)
            if why:
                return f"{path}: {why}"
    return None


def _unloaded(target: LoadTarget) -> TargetOutcome:
    why = foreign_code(target)
    if why is None:
        return TargetOutcome(target=target)
    return TargetOutcome(target=target, instance="skipped", reason=why, foreign=why)


def load_test_for(ctx: Context, targets: Sequence[LoadTarget]) -> LoadTest:
    """The load test for `targets` in ctx's environment, bounded by ctx.options.timeout, started
    (or the one `start_early` started for exactly this)."""
    test = LoadTest(
        targets,
        env=ctx.env,
        cwd=ctx.cwd,
        # a hang costs one step; a third of the budget leaves room for the others
        step_timeout=min(STEP_TIMEOUT, ctx.options.timeout / 3),
        total_timeout=ctx.options.timeout,
        remember_in=ctx.options.cache_dir if ctx.live else None,
        spawner=ctx.spawner,
    )
    return _adopt(test) or test.start()


#: the load test `start_early` started, until the run's first load test adopts or cancels it
_early: list[LoadTest] = []


def start_early(
    timeout: float,
    env: Mapping[str, str],
    spawner: Spawner | None,
    store: FactStore = NOTHING_KEPT,
) -> None:
    """Start the load test of a plain `vkdoctor check` (no --root, --select or --ignore) with
    this --timeout now, before the command line interface is imported (vkdoctor.launch reads
    the words), with `store` as the fact store. The command's own load test adopts it only if
    it is the same test: the same targets, the same environment, working directory and time
    bounds (`_adopt`); else it is cancelled."""
    from vkdoctor.cachedir import cache_home
    from vkdoctor.loader import load_targets
    from vkdoctor.model.context import Options

    try:
        ctx = Context(
            env=dict(env),
            cwd=Path.cwd(),
            machine=os.uname().machine or "x86_64",
            options=Options(timeout=timeout, cache_dir=cache_home(env)),
            store=store,
            spawner=spawner,
        )
        targets = load_targets(ctx)
    except Exception:  # the command meets the same problem and reports it
        return
    _early.append(load_test_for(ctx, targets))
    offer_facts(ctx)


def _adopt(test: LoadTest) -> LoadTest | None:
    while _early:
        early = _early.pop()
        if (
            early.targets == test.targets
            and early.env == test.env
            and early.cwd == test.cwd
            and early.step_timeout == test.step_timeout
            and early.total_timeout == test.total_timeout
        ):
            return early
        early.cancel()
    return None


def discard_early() -> None:
    """Stop a load test started early that no command adopted."""
    while _early:
        _early.pop().cancel()


# ---------------------------------------------------------------------------------------------
# Verdicts (pure)


@record(frozen=True, kw_only=True)
class Verdict:
    severity: Severity
    #: short machine word: device, no-device, wrong-class, dlopen-failed, crash, timeout,
    #: instance-failed, layer-ok, layer-failed, not-run, internal-error
    kind: str
    title: str
    message: str
    remedy: Remedy | None = None


def _version_tuple(text: str | None) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in (text or "").split("."))
    except ValueError:
        return None


#: variables that choose which drivers the loader tries at all
DRIVER_SELECTION = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_LOADER_DRIVERS_SELECT")


def disable_remedy(
    outcome: TargetOutcome,
    *,
    others: Sequence[str],
    env: Mapping[str, str],
    loader_version: str | None,
) -> Remedy:
    """How to keep the loader away from this target, in a form this loader understands."""
    target = outcome.target
    version = _version_tuple(loader_version)
    has_filters = version is None or version >= FILTERS_SINCE
    off = target.off_fix
    if target.kind == "layer" and off and not (target.off or "").startswith("export VK_LOADER_"):
        return off  # its own variable, or a variable that forces it on
    if target.kind == "layer":
        var, value = "VK_LOADER_LAYERS_DISABLE", target.name
    else:
        var, value = "VK_LOADER_DRIVERS_DISABLE", Path(target.manifest).name
    if target.kind == "driver" and not others:
        # turning off the one driver the loader tries leaves no Vulkan at all
        chosen = [f"{k}={env[k]}" for k in DRIVER_SELECTION if env.get(k)]
        if chosen:
            names = " and ".join(c.split("=", 1)[0] for c in chosen)
            return Remedy(
                text=f"{' and '.join(chosen)} lets the loader try this driver alone: unset "
                f"{names}, or point it at the manifest of a driver that works"
            )
        return Remedy(
            text="it is the only driver the loader tries: rebuild or remove it, and install a "
            "driver that works for this machine (lavapipe for a CPU device)"
        )
    if has_filters:
        current = env.get(var, "")
        joined = f"{current},{value}" if current else value
        return Remedy(commands=(f"export {var}={joined}",))
    if target.kind == "driver" and others:
        return Remedy(
            commands=(f"export VK_DRIVER_FILES={':'.join(others)}",),
            text=f"(this loader predates {var})",
        )
    return Remedy(text=f"remove or rename {target.manifest} (this loader predates {var})")


def _then(remedy: Remedy, more: str) -> Remedy:
    """`remedy` with more words after its own."""
    return replace(remedy, text=remedy.text + more)


def wrecks_all(outcome: TargetOutcome, loader_version: str | None) -> Wreck | None:
    """How this target, loaded beside the other drivers as every application loads it, breaks
    them all; None when it can at most drop itself. It crashes or hangs the process; or, as the
    child measured it beside the drivers that gave a device (`beside`), the loader's
    vkCreateInstance fails ("instance": terminator_CreateInstance aborts on a driver's
    VK_ERROR_OUT_OF_HOST_MEMORY and skips the driver for any other code) or its
    vkEnumeratePhysicalDevices gives no device ("enumerate": before 1.3.284,
    setup_loader_term_phys_devs stops at the first driver that fails, whatever the code).
    With no driver to compare with, the loader's rule stands in (docs/load-test.md); an unknown
    loader version counts as an old one: a false red costs less than a false green."""
    if outcome.failed_step is not None:
        return "crash" if outcome.signal else "timeout"
    if outcome.target.kind == "layer":
        # tried on the drivers that work alone: a refusal with the layer in is the layer's
        if outcome.instance == "failed":
            return "instance"
        return "device" if outcome.devices and not opens_its_device(outcome) else None
    if not outcome.suspect:
        return None
    beside = outcome.beside or {}
    if "result" in beside:
        # the real loader, with this driver beside the ones that gave a device, has the answer
        if beside["result"] != VK_SUCCESS:
            return "instance"
        if beside["enumerate_result"] not in (VK_SUCCESS, VK_INCOMPLETE) or not beside["devices"]:
            return "enumerate"
        return None
    # no driver gave a device to compare with: the loader's rule (docs/load-test.md)
    if outcome.instance == "failed" and outcome.vk_result == VK_ERROR_OUT_OF_HOST_MEMORY:
        return "instance"
    version = _version_tuple(loader_version)
    if outcome.instance == "ok" and (version is None or version < ENUMERATE_SKIPS_SINCE):
        return "enumerate"
    return None


#: what each kind of wreck does to an application that loads the driver, for the messages
WRECK_WORDS: Mapping[Wreck, str] = {
    "crash": "crashes it",
    "timeout": "hangs it",
    "instance": "makes its vkCreateInstance fail",
    "enumerate": "hides every device from it",
    "device": "makes its vkCreateDevice fail",
}


def asked_for(target: LoadTarget, env: Mapping[str, str]) -> str | None:
    """The variable with which the user asked for this driver: one of DRIVER_FILE_VARS that
    names its manifest file (a directory entry asks for nothing in particular), or
    VK_LOADER_DRIVERS_SELECT (every driver the loader tries then matched the user's pattern)."""
    if target.kind != "driver":
        return None
    mine = os.path.normpath(target.manifest)
    for var in DRIVER_FILE_VARS:
        entries = (env.get(var) or "").split(":")
        if any(e and os.path.normpath(e) == mine for e in entries):
            return var
    if env.get("VK_LOADER_DRIVERS_SELECT"):
        return "VK_LOADER_DRIVERS_SELECT"
    return None


def _owner_tail(target: LoadTarget, owner: str | None) -> str:
    if owner:
        return f"; then update or reinstall {owner}, which ships {target.dlopen_name}"
    if owner == "":
        return f"; then rebuild or remove {target.dlopen_name} (no package owns it)"
    return f"; then update or reinstall the package that ships {target.dlopen_name}"


def _wreck_verdict(
    outcome: TargetOutcome,
    wreck: Wreck,
    *,
    what: str,
    remedy: Remedy,
    loader_version: str | None,
) -> Verdict:
    """A driver that, as the loader treats what it returns, fails every application."""
    loader = f"Vulkan loader {loader_version}" if loader_version else "The Vulkan loader"
    if wreck == "instance":
        return Verdict(
            severity=Severity.FAIL,
            kind="aborts-instances",
            title=f"{what} makes every vkCreateInstance fail ({vk_result_name(outcome.vk_result)})",
            message=f"Its vkCreateInstance returns {vk_result_name(outcome.vk_result)}. "
            f"{loader} skips a driver whose vkCreateInstance fails with any other code, but for "
            "this one it aborts the whole vkCreateInstance: every Vulkan application that lets "
            "the loader try this driver fails with it, whatever other drivers it has."
            + _beside_said(outcome),
            remedy=remedy,
        )
    code = vk_result_name(outcome.enumerate_result)
    return Verdict(
        severity=Severity.FAIL,
        kind="hides-devices",
        title=f"{what} hides every Vulkan device (vkEnumeratePhysicalDevices: {code})",
        message=f"vkCreateInstance succeeds, but the driver's vkEnumeratePhysicalDevices returns "
        f"{code}. {loader} does not skip the driver for that: its vkEnumeratePhysicalDevices "
        f"stops at the first driver that fails and fails for the whole instance, so every "
        "Vulkan application that lets the loader try this driver sees no device at all, from "
        f"any driver.{_beside_said(outcome)}",
        remedy=remedy,
    )


def _beside_said(outcome: TargetOutcome) -> str:
    """What the real loader did with the driver beside the ones that gave a device."""
    beside = outcome.beside or {}
    if "result" not in beside:
        return ""
    others = [Path(d).name for d in beside.get("drivers", ())[:-1]]
    if beside["result"] != VK_SUCCESS:
        got = f"vkCreateInstance returned {vk_result_name(beside['result'])}"
    else:
        got = (
            f"vkEnumeratePhysicalDevices returned {vk_result_name(beside['enumerate_result'])} "
            f"and {beside['devices']} device(s)"
        )
    return f" Measured: with it beside {', '.join(others)} (a device alone), {got}."


def loader_errors(log: str, limit: int = 3) -> list[str]:
    """The loader's own ERROR lines from a step's output (VK_LOADER_DEBUG=error in the child)."""
    lines = []
    for line in log.splitlines():
        text = line.strip()
        if text.startswith("ERROR") and ":" in text:
            lines.append(text.split(":", 1)[1].strip())
    return lines[:limit]


@record(frozen=True, kw_only=True)
class _Asked:
    """One target's outcome with what its remedies need: `others`, the manifests of the other
    drivers; `owner`, the package that ships its library ("" for none, None when unknown)."""

    outcome: TargetOutcome
    others: Sequence[str]
    env: Mapping[str, str]
    loader_version: str | None
    owner: str | None
    what: str

    def disable(self) -> Remedy:
        return disable_remedy(
            self.outcome, others=self.others, env=self.env, loader_version=self.loader_version
        )


def classify(
    outcome: TargetOutcome,
    *,
    others: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    loader_version: str | None = None,
    owner: str | None = None,
) -> Verdict:
    """The verdict for one target. `others`: the manifests of the other drivers, `owner`: the
    package that ships its library ("" for none, None when unknown), both for remedies."""
    t = outcome.target
    what = (
        f"{Path(t.manifest).name} ({t.dlopen_name})"
        if t.kind == "driver"
        else f"layer {t.name} ({t.dlopen_name})"
    )
    asked = _Asked(
        outcome=outcome,
        others=others,
        env=env or {},
        loader_version=loader_version,
        owner=owner,
        what=what,
    )
    if outcome.failed_step is not None:
        return _crashed_or_hung(asked, outcome.failed_step)
    if outcome.dlopen == "failed":
        return _dlopen_failed(asked)
    if "error" in (outcome.dlopen, outcome.instance):
        return _child_bug(asked)
    if outcome.dlopen == "not-run" or outcome.instance in ("not-run", "skipped"):
        return _not_tried(asked)
    if t.kind == "layer":
        return _layer_instance(asked)
    wreck = wrecks_all(outcome, loader_version)
    if wreck in ("instance", "enumerate"):
        assert wreck is not None
        return _wreck_verdict(
            outcome,
            wreck,
            what=what,
            remedy=_then(asked.disable(), _owner_tail(t, owner)),
            loader_version=loader_version,
        )
    if outcome.instance == "failed":
        return _instance_failed(asked)
    return _devices(asked)


def _crashed_or_hung(asked: _Asked, step: str) -> Verdict:
    """The target killed the process (a signal) or hung it (the step timeout)."""
    outcome, t = asked.outcome, asked.outcome.target
    where = (
        "in its constructors (dlopen)"
        if step == "dlopen"
        else f"in {outcome.crashed_in or 'vkCreateInstance'}"
    )
    lookup = symbol_lookup_error(outcome)
    if lookup is not None:
        # ld.so ends the process with 127 when a lazily bound call finds no definition
        how = f"was ended by ld.so {where} (exit status 127): {lookup}"
        kind, title = "crash", f"{asked.what} ends the process: a symbol it calls is missing"
    elif outcome.signal and outcome.signal.startswith("exit status"):
        how = f"ended the process ({outcome.signal}) {where}"
        kind, title = "crash", f"{asked.what} ends the process ({outcome.signal})"
    elif outcome.signal:
        how = f"was killed by {outcome.signal} {where}"
        kind, title = "crash", f"{asked.what} crashes the process ({outcome.signal})"
    else:
        how = f"hung {where} and was killed after the step timeout"
        kind, title = "timeout", f"{asked.what} hangs {where}"
    if outcome.crashed_in in ("vkCreateDevice", "vkDestroyDevice"):
        # before it an application chooses its adapter: one that picks another never gets here
        scope = (
            "Every Vulkan application that opens this driver's device does the same."
            if t.kind == "driver"
            else "Every Vulkan application that loads this layer and opens a device does the same."
        )
    elif t.kind == "driver":
        scope = "Every Vulkan application that lets the loader try this driver does the same."
    else:
        scope = "Every Vulkan application that loads this layer does the same."
    message = f"Loading {t.dlopen_name} for {t.manifest} {how}. {scope}"
    forced = t.kind == "layer" and (t.off or "").startswith(("unset ", "remove "))
    remedy = _then(
        asked.disable(),
        "; it is an explicit layer (a debugging or capture tool), meant only for the "
        "programs that ask for it"
        if forced
        else _owner_tail(t, asked.owner),
    )
    return Verdict(severity=Severity.FAIL, kind=kind, title=title, message=message, remedy=remedy)


def symbol_lookup_error(outcome: TargetOutcome) -> str | None:
    """ld.so's "symbol lookup error" line from the step that ended with exit status 127."""
    if outcome.signal != "exit status 127":
        return None
    return children.symbol_lookup_error(
        line for text in outcome.output.values() for line in text.splitlines()
    )


def _dlopen_failed(asked: _Asked) -> Verdict:
    """dlopen refused the library: another architecture (expected), a layer the loader goes on
    without, or a driver the loader ignores."""
    outcome, t, what = asked.outcome, asked.outcome.target, asked.what
    err = outcome.dlerror or "(dlerror gave no text)"
    if "wrong ELF class" in err:
        return Verdict(
            severity=Severity.INFO,
            kind="wrong-class",
            title=f"{what} is for another architecture",
            message=f"dlopen: {err}. The loader skips it (it logs this at INFO); a 64-bit "
            "process cannot use a 32-bit driver, so this is expected on multiarch systems.",
        )
    if t.kind == "layer":
        return Verdict(
            severity=Severity.WARN,
            kind="dlopen-failed",
            title=f"{what} does not load",
            message=f"dlopen: {err}. The loader logs the error and goes on without the layer.",
            remedy=_then(asked.disable(), f", or install what {t.dlopen_name} needs"),
        )
    return Verdict(
        severity=Severity.FAIL,
        kind="dlopen-failed",
        title=f"{what} does not load",
        message=f"dlopen: {err}. The loader ignores this driver "
        '("Failed loading library associated with ICD JSON").',
        remedy=Remedy(
            text=f"vkdoctor's library findings for {t.dlopen_name} say what is missing; "
            "meanwhile, to stop the loader trying it: " + asked.disable().shown()
        ),
    )


def _child_bug(asked: _Asked) -> Verdict:
    """A bug of ours in the child, before dlopen or while reading the instance's results."""
    outcome = asked.outcome
    before = outcome.dlopen == "error"
    return Verdict(
        severity=Severity.ERROR,
        kind="internal-error",
        title=f"{asked.what}: vkdoctor could not "
        + ("load-test it" if before else "read the instance test"),
        message=(
            "the load test child broke before dlopen"
            if before
            else "dlopen succeeded; the load test child broke while reading "
            "vkCreateInstance's results"
        )
        + f": {outcome.reason}. This is a bug in vkdoctor, not in the driver.",
        remedy=Remedy(text="Report it with `vkdoctor check --json -` to the vkdoctor maintainers."),
    )


def _not_tried(asked: _Asked) -> Verdict:
    """The target was not load-tested, or loaded without trying vkCreateInstance."""
    outcome, what = asked.outcome, asked.what
    if outcome.foreign:
        return Verdict(
            severity=Severity.FAIL,
            kind="not-run",
            title=f"{what} is another user's code: not loaded",
            message=f"{outcome.foreign}. Every Vulkan application started in this environment "
            "loads it and runs what that user put there, as you; vkdoctor loaded none of it.",
            remedy=Remedy(
                text="Remove the manifest from the loader's search path, or make its folder and "
                "library yours or root's (the VKE checks name them)"
            ),
        )
    if outcome.dlopen == "not-run" or outcome.instance == "not-run":
        return Verdict(
            severity=Severity.WARN,
            kind="not-run",
            title=f"{what} was not load-tested",
            message=outcome.reason or "not run",
        )
    return Verdict(
        severity=Severity.INFO,
        kind="not-run",
        title=f"{what} loads (instance not tried)",
        message=f"dlopen succeeded; vkCreateInstance was not tried: {outcome.reason}.",
    )


def _layer_instance(asked: _Asked) -> Verdict:
    """A layer that loads: the loader skips it (no entry points), it passes vkCreateInstance,
    or it makes vkCreateInstance fail on drivers that work without it."""
    outcome, t, what = asked.outcome, asked.outcome.target, asked.what
    said = [
        line
        for line in loader_errors(outcome.output.get("instance", ""))
        if "Failed to find" in line and (t.dlopen_name in line or t.name in line)
    ]
    if outcome.instance == "ok" and said:
        return Verdict(
            severity=Severity.WARN,
            kind="layer-skipped",
            title=f"{what} loads, but the loader skips it",
            message=f"dlopen succeeds, but the loader does not find the layer's entry points "
            f"and leaves it out of every instance: {said[0]}. Whatever it is for does not "
            "happen.",
            remedy=Remedy(
                text="Replace the library with a build of the layer (it must export "
                "vkGetInstanceProcAddr or vkNegotiateLoaderLayerInterfaceVersion), or turn the "
                "layer off: " + asked.disable().shown()
            ),
        )
    if outcome.instance == "ok" and outcome.devices and not opens_its_device(outcome):
        first = outcome.devices[0].name
        result = vk_result_name(outcome.device_result)
        return Verdict(
            severity=Severity.FAIL,
            kind="layer-failed",
            title=f"{what} makes vkCreateDevice fail",
            message=f"With {t.name} active, vkCreateDevice on {first} returns {result}; the "
            "driver creates that device without the layer. Every Vulkan application started "
            'in this environment loads the layer, so every one fails there (wgpu: "Request '
            'device failed").',
            remedy=asked.disable(),
        )
    if outcome.instance == "ok":
        return Verdict(
            severity=Severity.OK,
            kind="layer-ok",
            title=f"{what} loads and passes vkCreateInstance",
            message=f"on the drivers that work alone, with {len(outcome.devices)} device(s)",
        )
    return Verdict(
        severity=Severity.FAIL,
        kind="layer-failed",
        title=f"{what} makes vkCreateInstance fail",
        message=f"With {t.name} active, vkCreateInstance returns "
        f"{vk_result_name(outcome.vk_result)} on drivers that work without it. Every Vulkan "
        "application started in this environment loads the layer, so every one fails the same "
        "way.",
        remedy=asked.disable(),
    )


def _instance_failed(asked: _Asked) -> Verdict:
    """A driver that loads but whose vkCreateInstance fails alone: the loader drops it, which
    fails the user only when the user asked for this driver."""
    outcome, t, what = asked.outcome, asked.outcome.target, asked.what
    said = loader_errors(outcome.output.get("instance", ""))
    var = asked_for(t, asked.env)
    message = (
        f"dlopen succeeded, but vkCreateInstance with only this driver returned "
        f"{vk_result_name(outcome.vk_result)}; the loader drops it from every instance."
        + (f" The loader said: {' / '.join(said)}" if said else "")
    )
    if var is not None:
        # the other drivers still work, but not the one the user asked for
        return Verdict(
            severity=Severity.FAIL,
            kind="instance-failed",
            title=f"{what}, which {var} asks for, fails vkCreateInstance",
            message=f"{message} {var} asks for this driver, and no Vulkan application gets "
            "a device from it.",
            remedy=Remedy(
                text="Fix what the loader reports (VK_LOADER_DEBUG=error,warn,driver shows it "
                f"in any program), or stop asking for the driver: take {t.manifest} out of {var}"
                if var != "VK_LOADER_DRIVERS_SELECT"
                else "Fix what the loader reports (VK_LOADER_DEBUG=error,warn,driver shows it in "
                "any program), or change VK_LOADER_DRIVERS_SELECT so that it does not match "
                f"{Path(t.manifest).name}"
            ),
        )
    return Verdict(
        severity=Severity.WARN,
        kind="instance-failed",
        title=f"{what} loads but vkCreateInstance fails",
        message=message,
        remedy=asked.disable()
        if asked.others
        # words: the export is how to see what the loader says, not a fix to run
        else Remedy(
            text="export VK_LOADER_DEBUG=error,warn,driver shows what the loader reports in any "
            "program (the only driver: disabling it leaves none); for NVIDIA's "
            "libGLX_nvidia.so.0, see vkdoctor explain VKC004 (GLVND's libEGL.so.1)."
        ),
    )


def opens_its_device(outcome: TargetOutcome) -> bool:
    """No vkCreateDevice on the target's first device was refused (or none was tried)."""
    return outcome.device_result in (None, 0)


def _device_refused(asked: _Asked) -> Verdict:
    """The driver lists a device and vkCreateDevice on it fails: nothing computes on it."""
    outcome, what = asked.outcome, asked.what
    first = outcome.devices[0]
    result = vk_result_name(outcome.device_result)
    return Verdict(
        severity=Severity.FAIL,
        kind="device-refused",
        title=f"{what}: {first.name} is listed, but vkCreateDevice fails ({result})",
        message=f"dlopen and vkCreateInstance succeed and the driver lists "
        f"{len(outcome.devices)} device(s) ({'; '.join(d.describe() for d in outcome.devices)}), "
        f"but vkCreateDevice on {first.name} (one queue of family 0) returns {result}. Every "
        'Vulkan application that chooses this device fails there (wgpu: "Request device '
        'failed"), though it sees the adapter.',
        remedy=_then(asked.disable(), _owner_tail(outcome.target, asked.owner)),
    )


def _devices(asked: _Asked) -> Verdict:
    """A driver whose vkCreateInstance succeeds: the devices it gives, or why it gives none."""
    outcome, what = asked.outcome, asked.what
    if outcome.devices and outcome.device_result not in (None, 0):
        return _device_refused(asked)
    if outcome.devices:
        listed = "; ".join(d.describe() for d in outcome.devices)
        return Verdict(
            severity=Severity.OK,
            kind="device",
            title=f"{what}: {', '.join(d.name for d in outcome.devices)}",
            message=f"dlopen and vkCreateInstance succeed; {len(outcome.devices)} device(s): {listed}.",
        )
    if outcome.suspect and outcome.enumerate_result not in (None, 0):
        # its own failure, which the loader answers by dropping only its devices (wrecks_all)
        return Verdict(
            severity=Severity.WARN,
            kind="no-device",
            title=f"{what}: vkEnumeratePhysicalDevices fails "
            f"({vk_result_name(outcome.enumerate_result)})",
            message="dlopen and vkCreateInstance succeed, but the driver's "
            f"vkEnumeratePhysicalDevices returns {vk_result_name(outcome.enumerate_result)}; "
            f"Vulkan loader {asked.loader_version} leaves its devices out and keeps the other "
            "drivers'.",
            remedy=asked.disable(),
        )
    return Verdict(
        severity=Severity.INFO,
        kind="no-device",
        title=f"{what} loads, no device",
        message="dlopen and vkCreateInstance succeed, but the driver sees no device"
        + (
            f" (the loader's vkEnumeratePhysicalDevices, with only this driver: "
            f"{vk_result_name(outcome.enumerate_result)})"
            if outcome.enumerate_result not in (None, 0)
            else ""
        )
        + ". "
        "Normal when this machine has no hardware for it.",
    )


# ---------------------------------------------------------------------------------------------
# Prediction versus reality (pure)


@record(frozen=True, kw_only=True)
class Prediction:
    """What the static analysis (the ld.so emulation) expects from dlopen of one target."""

    loadable: bool
    reason: str
    #: the dlerror() text it expects when not loadable, if it predicts one
    error: str | None = None
    #: the checks that report the predicted failure, with its cause and fix
    by: tuple[str, ...] = ()
    #: the signal dlopen is expected to die of instead (a library cut short: SIGBUS)
    signal: str | None = None

    def foresees(self, outcome: TargetOutcome) -> bool:
        """The real dlopen failed, or died of the signal, as predicted."""
        if self.loadable:
            return False
        if self.signal is not None:
            return outcome.dlopen == "crash" and outcome.signal == self.signal
        return outcome.dlopen == "failed"


@record(frozen=True, kw_only=True)
class Disagreement:
    target: LoadTarget
    predicted: Prediction
    #: what dlopen really did: True loaded, False failed (dlerror below)
    loaded: bool
    dlerror: str | None
    #: "outcome": loads where it should not, or the reverse; "reason": both fail, differently
    kind: Literal["outcome", "reason"] = "outcome"

    def message(self) -> str:
        lib = f"{self.target.dlopen_name} ({self.target.name})"
        if self.kind == "reason":
            return (
                f"Both the static analysis and the real dlopen say {lib} does not load, but for "
                f"different reasons: predicted {self.predicted.error!r}, real {self.dlerror!r}."
            )
        said = "loadable" if self.predicted.loadable else "not loadable"
        real = "loads" if self.loaded else f"fails: {self.dlerror}"
        return (
            f"The static analysis predicted {lib} {said} ({self.predicted.reason}), "
            f"but the real dlopen {real}."
        )


def disagreements(
    predictions: Mapping[LoadTarget, Prediction], run: LoadTestRun
) -> Iterator[Disagreement]:
    """Targets whose dlopen went otherwise than predicted. Crashed, hung or untested loads say
    nothing about resolution and are not compared."""
    for outcome in run.outcomes:
        predicted = predictions.get(outcome.target)
        if predicted is None or outcome.dlopen not in ("ok", "failed"):
            continue
        loaded = outcome.dlopen == "ok"
        if loaded != predicted.loadable:
            yield Disagreement(
                target=outcome.target, predicted=predicted, loaded=loaded, dlerror=outcome.dlerror
            )
        elif not loaded and predicted.error is not None and predicted.error != outcome.dlerror:
            yield Disagreement(
                target=outcome.target,
                predicted=predicted,
                loaded=loaded,
                dlerror=outcome.dlerror,
                kind="reason",
            )
