"""The load test of this run (vkdoctor.loadtest), started once and early: a run-wide fact."""

from __future__ import annotations

from vkdoctor.context import Context
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.loadtest import LoadTest, LoadTestRun, load_test_for


def targets_of(ctx: Context) -> tuple[LoadTarget, ...]:
    """What the loader will dlopen, from the loader emulation."""
    from vkdoctor.loader import load_targets

    return tuple(ctx.fact(load_targets))


def started_load_test(ctx: Context) -> LoadTest:
    """The one load test of this vkdoctor run, started (a per-run fact)."""
    return load_test_for(ctx, targets_of(ctx))


def load_test(ctx: Context) -> LoadTestRun:
    """The load test's result; waits for it."""
    return ctx.fact(started_load_test).result()


def prefetch(ctx: Context) -> LoadTest | None:
    """Start the load test's child now, so that it runs while the other checks do, and return
    it (None with --root, or when it could not start). Never raises: a failure here is reported
    by the checks themselves when they ask for the result."""
    if not ctx.live:
        return None
    try:
        return ctx.fact(started_load_test)
    except Exception:  # the VKT checks hit it again and report it as theirs
        return None
