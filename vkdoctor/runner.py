"""Runs checks in dependency order; turns a crash in a check into an error finding."""

from __future__ import annotations

import contextlib
import graphlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

from vkdoctor.checks.base import Check
from vkdoctor.context import Context
from vkdoctor.model import CheckResult, CheckStatus, Finding, Severity

INTERNAL_ERROR_CODE = "VKX000"


def select(
    checks: Iterable[type[Check]], selected: Sequence[str] = (), ignored: Sequence[str] = ()
) -> list[type[Check]]:
    """Filter by code or code prefix (`VKD`, `VKD003`), before anything runs."""

    def matches(code: str, patterns: Sequence[str]) -> bool:
        return any(code.upper().startswith(p.upper()) for p in patterns)

    out = [c for c in checks if not selected or matches(c.code, selected)]
    return [c for c in out if not matches(c.code, ignored)]


def run_checks(
    ctx: Context, checks: Sequence[type[Check]], *, debug: bool = False
) -> tuple[CheckResult, ...]:
    """Run `checks` in an order that honours `requires`; never raises for a check's bug."""
    known = {c.code for c in checks}
    order = graphlib.TopologicalSorter({c.code: c.requires & known for c in checks})
    by_code = {c.code: c for c in checks}
    position = {c.code: i for i, c in enumerate(checks)}
    results: dict[str, CheckResult] = {}
    for c in checks:
        if not c.requires and (ctx.live or not c.live_only):
            # the check's run meets the same problem and reports it
            with contextlib.suppress(Exception):
                c().prefetch(ctx)
    order.prepare()
    while order.is_active():
        ready = sorted(order.get_ready(), key=position.__getitem__)
        for code in ready:
            results[code] = _run_one(ctx, by_code[code], results, debug=debug)
            order.done(code)
    return tuple(results[c.code] for c in checks)


def _blocking(check: type[Check], results: dict[str, CheckResult]) -> list[str]:
    blocked = []
    for req in sorted(check.requires):
        r = results.get(req)
        if r is None:
            continue
        if r.status is not CheckStatus.RAN or r.worst.rank >= Severity.FAIL.rank:
            blocked.append(req)
    return blocked


def _run_one(
    ctx: Context, check: type[Check], results: dict[str, CheckResult], *, debug: bool
) -> CheckResult:
    def result(status: CheckStatus, **kw: Any) -> CheckResult:
        return CheckResult(
            code=check.code, family=check.family, title=check.title, status=status, **kw
        )

    if check.live_only and not ctx.live:
        return result(
            CheckStatus.SKIPPED,
            skip_reason=f"not applicable with --root {ctx.root}: needs the live machine",
        )
    blocked = _blocking(check, results)
    if blocked:
        return result(
            CheckStatus.SKIPPED,
            skip_reason="requires " + ", ".join(blocked) + ", which did not pass",
        )
    start = time.perf_counter()
    try:
        findings = tuple(check().run(ctx))
    except Exception as exc:  # a bug of ours: report it, keep going
        import traceback  # only on a check's crash: it costs 15 ms to import

        tb = traceback.format_exc()
        evidence: dict[str, object] = {"exception": f"{type(exc).__name__}: {exc}"}
        if debug:
            evidence["traceback"] = tb
        err = Finding(
            code=INTERNAL_ERROR_CODE,
            severity=Severity.ERROR,
            title=f"vkdoctor's check {check.code} ({check.title}) broke",
            message=f"{type(exc).__name__}: {exc}. This is a bug in vkdoctor, not in your system.",
            remedy="Re-run with --debug and report the traceback to the vkdoctor maintainers.",
            evidence=evidence,
        )
        return result(
            CheckStatus.ERROR,
            findings=(err,),
            seconds=time.perf_counter() - start,
        )
    if not findings:
        findings = (
            Finding(code=check.code, severity=Severity.OK, title=check.title, message="none"),
        )
    return result(CheckStatus.RAN, findings=findings, seconds=time.perf_counter() - start)
