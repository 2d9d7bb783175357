"""Checks run in a forked copy of vkdoctor, on another core, while the rest run here.

The package checks (the database parsed, every dependency compared, file ownership, the tools
they start) are pure analysis: they read files and run tools, and share nothing with the other
checks but the facts computed before the checks start (the driver scan, the library closures),
which a fork inherits. Run in a fork they overlap the other checks: 30 ms of a ~270 ms run on
this 2-core box (docs/performance.md; forking the symbol check too cost more than it gained).

A fork is copy-on-write and costs about a millisecond. Its results come back through a pipe as
`marshal` data (findings' evidence is JSON-able by contract). Whenever that does not work (no
fork, a thread running, a crash, evidence marshal cannot carry) the checks run here instead, as
if no fork had been tried, so the report never depends on it.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vkdoctor.model import CheckResult, CheckStatus, Finding, Remedy, Severity
from vkdoctor.model.record import field, record
from vkdoctor.speed import inputs
from vkdoctor.speed.forks import fork_piped

if TYPE_CHECKING:
    from vkdoctor.model.context import Context


@record(frozen=True, kw_only=True)
class Schedule:
    """How a run uses the machine's other core, by check code: the face hands the runner the one
    vkdoctor.speed.schedule decides. The default runs every check here, in order, with nothing
    started ahead; a schedule changes when a check runs, never what it finds."""

    #: slow outside work (a tool, a child process) that the check's `run` will wait for, started
    #: before any check runs so that it overlaps the checks before this one; must not raise or
    #: report: `run` reports whatever went wrong
    prefetch: Mapping[str, Callable[[Context], None]] = field(default_factory=dict)
    #: the checks with the same group name here run together in one forked copy of vkdoctor, on
    #: another core (vkdoctor.speed.offload): pure analysis that needs no other check's result
    fork: Mapping[str, str] = field(default_factory=dict)
    #: for a forked check: the run-wide facts it shares with checks that run here, computed
    #: before the fork so that the two processes do not both compute them
    before_fork: Mapping[str, tuple[Callable[[Context], object], ...]] = field(default_factory=dict)


#: the exit status of a fork that could not send its results
_FAILED = 70
#: no fork: the checks run here (vkdoctor.launch.SPEED_OFF, to measure what forking saves)
OFF = False


def encode(result: CheckResult) -> tuple[Any, ...]:
    """A result as marshal data (`decode` gives it back)."""
    findings = tuple(
        (f.code, f.severity.value, f.title, f.message, _remedy(f.remedy), dict(f.evidence))
        for f in result.findings
    )
    return (
        result.code,
        result.family,
        result.title,
        result.status.value,
        findings,
        result.skip_reason,
        result.seconds,
    )


def _remedy(r: Remedy | None) -> tuple[tuple[str, ...], bool, str] | None:
    return (r.commands, r.needs_root, r.text) if r else None


def decode(data: tuple[Any, ...]) -> CheckResult:
    """The result `encode` made `data` of."""
    code, family, title, status, findings, skip_reason, seconds = data
    return CheckResult(
        code=code,
        family=family,
        title=title,
        status=CheckStatus(status),
        findings=tuple(
            Finding(
                code=c,
                severity=Severity(s),
                title=t,
                message=m,
                remedy=Remedy(commands=r[0], needs_root=r[1], text=r[2]) if r else None,
                evidence=e,
            )
            for c, s, t, m, r, e in findings
        ),
        skip_reason=skip_reason,
        seconds=seconds,
    )


class Fork:
    """`work()` run in a forked child; `results()` waits for it: None when it did not work."""

    def __init__(self, work: Callable[[], Sequence[CheckResult]]) -> None:
        self._work = work
        self._pid = 0
        self._fd = -1
        if OFF or threading.active_count() > 1:
            return  # a fork copies one thread: a lock another one holds would stay held
        forked = fork_piped(lambda ends: self._child(ends[0]), False)
        if forked is not None:
            self._pid, (self._fd,) = forked

    def _child(self, fd: int) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's handler unwinds the parent
        status = _FAILED
        rec = inputs.recorder()
        if rec is not None:
            rec.looks.clear()  # the parent has its own; this fork sends back what it read
        try:
            results = tuple(encode(r) for r in self._work())
            data = marshal.dumps((results, rec.export() if rec is not None else None))
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            status = 0
        finally:
            scratch = sys.modules.get("vkdoctor.packages.scratch")
            if scratch is not None:
                scratch.cleanup()  # its private directories (apt's): atexit does not run here
            # no interpreter teardown, no atexit handlers, no flush of the parent's buffers
            os._exit(status)

    def discard(self) -> None:
        """The results are not wanted: the fork is killed and reaped."""
        if not self._pid:
            return
        with contextlib.suppress(OSError):
            os.kill(self._pid, signal.SIGKILL)
        os.close(self._fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)
        self._pid = 0

    def results(self) -> list[CheckResult] | None:
        if not self._pid:
            return None
        chunks = []
        with os.fdopen(self._fd, "rb") as pipe:
            while chunk := pipe.read(1 << 16):
                chunks.append(chunk)
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        if status != 0:
            return None
        try:
            rows, read = marshal.loads(b"".join(chunks))
            results = [decode(row) for row in rows]
        except (ValueError, EOFError, TypeError):
            return None
        rec = inputs.recorder()
        if rec is not None:
            rec.merge(read)
        return results
