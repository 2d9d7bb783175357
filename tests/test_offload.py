"""Checks in a forked copy of vkdoctor: the same results as in-process, and in-process whenever
the fork cannot deliver (a crash, evidence marshal cannot carry, a running thread)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from vkdoctor.checks.base import Check
from vkdoctor.context import Context
from vkdoctor.model import CheckResult, CheckStatus, Finding, Severity
from vkdoctor.offload import Fork
from vkdoctor.runner import run_checks


class Where(Check):
    """Says which process ran it."""

    code = "VKZ001"
    family = "test"
    title = "Where"
    fork = "test"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.warn("ran", "in a process", pid=os.getpid(), nested={"a": [1, 2.5, None]})


class NotMarshalable(Where):
    code = "VKZ002"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.info("a Path in the evidence", path=Path("/x"))


class Local(Check):
    code = "VKZ003"
    family = "test"
    title = "Local"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.ok("here", pid=os.getpid())


def test_forked_checks_run_in_another_process_with_identical_results():
    results = {r.code: r for r in run_checks(Context(), [Where, Local])}
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
    results = {r.code: r for r in run_checks(Context(), [Where, NotMarshalable])}
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
        results = {r.code: r for r in run_checks(Context(), [Where])}
        assert results["VKZ001"].findings[0].evidence["pid"] == os.getpid()
    finally:
        stop.set()
        t.join()
