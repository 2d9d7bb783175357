"""Checks in a forked copy of vkdoctor: the same results as in-process, and in-process whenever
the fork cannot deliver (a crash, evidence marshal cannot carry, a running thread)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from vkdoctor.checks.base import Check
from vkdoctor.model import CheckResult, CheckStatus, Finding, Severity
from vkdoctor.model.context import Context
from vkdoctor.runner import Schedule, run_checks
from vkdoctor.speed.offload import Fork


class Where(Check):
    """Says which process ran it."""

    code = "VKZ001"
    family = "test"
    title = "Where"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.warn("ran", "in a process", pid=os.getpid(), nested={"a": [1, 2.5, None]})


class NotMarshalable(Where):
    code = "VKZ002"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.info("a Path in the evidence", path=Path("/x"))


#: Where and NotMarshalable run in a fork
FORKED = Schedule(fork={"VKZ001": "test", "VKZ002": "test"})


class Local(Check):
    code = "VKZ003"
    family = "test"
    title = "Local"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.ok("here", pid=os.getpid())


def test_forked_checks_run_in_another_process_with_identical_results():
    results = {r.code: r for r in run_checks(Context(), [Where, Local], schedule=FORKED)}
    forked, local = results["VKZ001"], results["VKZ003"]
    assert local.findings[0].evidence["pid"] == os.getpid()
    (f,) = forked.findings
    assert f.evidence["pid"] != os.getpid()
    assert (f.code, f.severity, f.title, f.message) == (
        "VKZ001",
        Severity.WARN,
        "ran",
        "in a process",
    )
    assert f.evidence["nested"] == {"a": [1, 2.5, None]}
    assert forked.status is CheckStatus.RAN and forked.seconds >= 0


def test_what_the_fork_cannot_send_is_run_here():
    # a Path cannot cross marshal: the whole group runs in this process instead
    results = {r.code: r for r in run_checks(Context(), [Where, NotMarshalable], schedule=FORKED)}
    assert results["VKZ001"].findings[0].evidence["pid"] == os.getpid()
    assert results["VKZ002"].findings[0].evidence["path"] == Path("/x")


def test_a_fork_that_dies_or_a_running_thread_means_no_fork():
    def crash() -> list[CheckResult]:
        raise RuntimeError("boom")

    assert Fork(crash).results() is None
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert Fork(lambda: []).results() is None
        results = {r.code: r for r in run_checks(Context(), [Where], schedule=FORKED)}
        assert results["VKZ001"].findings[0].evidence["pid"] == os.getpid()
    finally:
        stop.set()
        t.join()


def test_a_fork_started_for_checks_the_run_does_not_run_is_stopped_and_reaped():
    """`run_checks(forked=...)` with forks of checks it is not given (`check` starts the package
    fork before it knows the registry): they are killed and reaped, not left as zombies."""
    import psutil

    from vkdoctor.runner import start_forks

    class Slow(Check):
        code = "VKX101"
        family = "t"
        title = "slow"

        def run(self, ctx: Context) -> Iterable[Finding]:
            import time

            time.sleep(30)
            return ()

    class Here(Check):
        code = "VKX102"
        family = "t"
        title = "here"

        def run(self, ctx: Context) -> Iterable[Finding]:
            return ()

    ctx = Context()
    forked = start_forks(ctx, [Slow], Schedule(fork={"VKX101": "slow"}), debug=False)
    (pid,) = {f._fork._pid for f in forked.values()}
    assert pid and psutil.pid_exists(pid)
    results = run_checks(ctx, [Here], forked=forked)
    assert [r.code for r in results] == ["VKX102"]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    assert pid not in [p.pid for p in psutil.Process().children()]


def test_without_a_schedule_every_check_runs_here():
    """The runner forks only what the schedule it is handed says: by default nothing."""
    results = {r.code: r for r in run_checks(Context(), [Where, Local])}
    assert results["VKZ001"].findings[0].evidence["pid"] == os.getpid()


def test_vkdoctor_schedule_forks_every_package_check_and_names_only_real_checks():
    from vkdoctor.checks import REGISTRY
    from vkdoctor.checks import packages as package_checks
    from vkdoctor.speed.schedule import SCHEDULE

    codes = {c.code for c in REGISTRY}
    assert set(SCHEDULE.fork) == {c.code for c in package_checks.CHECKS}
    assert set(SCHEDULE.prefetch) | set(SCHEDULE.before_fork) <= codes
    assert set(SCHEDULE.prefetch) == {"VKP004", "VKP006"}


def test_no_check_carries_its_schedule():
    """Which checks fork or start work ahead is the speed package's business, not Check's."""
    from vkdoctor.checks import REGISTRY

    for name in ("fork", "before_fork", "prefetch"):
        assert not any(hasattr(c, name) for c in (Check, *REGISTRY)), name
