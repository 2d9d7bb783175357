"""Runs checks in dependency order; turns a crash in a check into an error finding."""

from __future__ import annotations

import contextlib
import graphlib
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from vkdoctor.checks.base import Check
from vkdoctor.facts.selection import selected_codes
from vkdoctor.model import CheckResult, CheckStatus, Finding, Remedy, Severity, consequence
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace
from vkdoctor.speed import factcache, inputs
from vkdoctor.speed.offload import Fork, Schedule

INTERNAL_ERROR_CODE = "VKX000"


#: every check here, in order, nothing ahead
IN_ORDER = Schedule()


def select(
    checks: Iterable[type[Check]], selected: Sequence[str] = (), ignored: Sequence[str] = ()
) -> list[type[Check]]:
    """Filter by code or code prefix (`VKD`, `VKD003`; `VKD,VKL` is two), before anything runs."""
    selected = code_patterns(selected)
    ignored = code_patterns(ignored)

    def matches(code: str, patterns: Sequence[str]) -> bool:
        return any(code.upper().startswith(p.upper()) for p in patterns)

    out = [c for c in checks if not selected or matches(c.code, selected)]
    return [c for c in out if not matches(c.code, ignored)]


def code_patterns(items: Sequence[str]) -> list[str]:
    """The codes and prefixes of repeated, comma-separated --select/--ignore values."""
    return [p.strip() for item in items for p in item.split(",") if p.strip()]


def unknown_patterns(checks: Iterable[type[Check]], items: Sequence[str]) -> list[str]:
    """The patterns of `items` that name no check: a typo, or a code of another version."""
    codes = [c.code.upper() for c in checks]
    return [p for p in code_patterns(items) if not any(c.startswith(p.upper()) for c in codes)]


def run_checks(
    ctx: Context,
    checks: Sequence[type[Check]],
    *,
    debug: bool = False,
    schedule: Schedule = IN_ORDER,
    forked: Mapping[str, Forked] | None = None,
) -> tuple[CheckResult, ...]:
    """Run `checks` in an order that honours `requires`; never raises for a check's bug.
    `schedule` says which of them start work ahead or run in a fork. `forked` are forks the
    caller started for some of them (`start_forks`), in ctx, before the others were known:
    their checks must not ask which checks run (`all_selected`) of a code outside `checks`."""
    known = {c.code for c in checks}
    selection: frozenset[str] | None = frozenset(known)
    ctx.set_fact(selected_codes, selection)
    order = graphlib.TopologicalSorter({c.code: c.requires & known for c in checks})
    by_code = {c.code: c for c in checks}
    position = {c.code: i for i, c in enumerate(checks)}
    given = dict(forked or {})
    started = {code: f for code, f in given.items() if code in known}
    for unwanted in set(given.values()) - set(started.values()):
        unwanted.discard()  # started for checks this run does not run
    forks = {
        **start_forks(ctx, [c for c in checks if c.code not in started], schedule, debug=debug),
        **started,
    }
    results: dict[str, CheckResult] = {}
    for c in checks:
        if not c.requires and (ctx.live or not c.live_only) and c.code not in forks:
            _prefetch(ctx, c, schedule)
    order.prepare()
    held: list[str] = []  # run in a fork: collected once nothing else is ready
    while order.is_active():
        ready = sorted(order.get_ready(), key=position.__getitem__)
        held += [code for code in ready if code in forks]
        now = [code for code in ready if code not in forks]
        if not now:
            now, held = held, []
        for code in now:
            if code in forks:
                results[code] = forks[code].result(code)
            else:
                results[code] = run_one(ctx, by_code[code], results, debug=debug)
            order.done(code)
    rec = inputs.recorder()
    if rec is not None:
        # what each check found before another explained it: a replay runs the volatile ones
        # again and compares these (vkdoctor.speed.replay)
        rec.notes.setdefault("results", []).append(dict(results))
    for c in checks:
        for code in c.explains:
            if code in results:
                results[code] = _explained(c(), results[c.code], results[code])
    factcache.save_all()
    return tuple(results[c.code] for c in checks)


def _explained(check: Check, causes: CheckResult, symptoms: CheckResult) -> CheckResult:
    """`symptoms` with each failure or warning that one of `check`'s failures explains turned
    into info that names the cause's code, so that one cause is one failure."""
    failing = [f for f in causes.findings if f.severity is Severity.FAIL]
    if not failing:
        return symptoms
    findings = []
    for f in symptoms.findings:
        cause = next(
            (c for c in failing if f.severity.rank > Severity.INFO.rank and check.explained(f, c)),
            None,
        )
        findings.append(f if cause is None else consequence(f, cause))
    return replace(symptoms, findings=tuple(findings))


def _prefetch(ctx: Context, check: type[Check], schedule: Schedule) -> None:
    start = schedule.prefetch.get(check.code)
    if start is None:
        return
    # the check's run meets the same problem and reports it
    with contextlib.suppress(Exception), _reading_for(check.code):
        start(ctx)


@contextlib.contextmanager
def _reading_for(code: str) -> Iterator[None]:
    """What is read from here on is read for the check `code` (vkdoctor.speed.inputs)."""
    rec = inputs.recorder()
    if rec is None:
        yield
        return
    rec.entered(code)
    try:
        yield
    finally:
        rec.left()


class Forked:
    """The checks of one fork group (`Schedule.fork`): their results from the fork, or run here
    after all."""

    def __init__(
        self, ctx: Context, checks: list[type[Check]], schedule: Schedule, *, debug: bool
    ) -> None:
        self._ctx, self._checks, self._schedule, self._debug = ctx, checks, schedule, debug
        self._results: dict[str, CheckResult] | None = None
        self._fork = Fork(self._run)

    def _run(self) -> list[CheckResult]:
        for c in self._checks:
            _prefetch(self._ctx, c, self._schedule)
        results = [run_one(self._ctx, c, {}, debug=self._debug) for c in self._checks]
        factcache.save_all()  # in the fork: what its checks learnt
        return results

    def discard(self) -> None:
        """Its checks do not run: the fork is stopped."""
        if self._results is None:
            self._fork.discard()
            self._results = {}

    def result(self, code: str) -> CheckResult:
        if self._results is None:
            got = self._fork.results()
            self._results = {r.code: r for r in (got if got is not None else self._run())}
        return self._results[code]


def start_forks(
    ctx: Context, checks: Sequence[type[Check]], schedule: Schedule, *, debug: bool
) -> dict[str, Forked]:
    """Fork each group of `checks` that `schedule` forks, now, after the facts it shares
    (`Schedule.before_fork`); by check code."""
    groups: dict[str, list[type[Check]]] = {}
    for c in checks:
        group = schedule.fork.get(c.code)
        if group is not None and not c.requires and (ctx.live or not c.live_only):
            groups.setdefault(group, []).append(c)
    forks: dict[str, Forked] = {}
    for members in groups.values():
        for c in members:
            for shared in schedule.before_fork.get(c.code, ()):
                with contextlib.suppress(Exception), _reading_for(c.code):
                    ctx.fact(shared)  # a check that needs it meets the same problem
        forked = Forked(ctx, members, schedule, debug=debug)
        forks.update({c.code: forked for c in members})
    return forks


def _blocking(check: type[Check], results: dict[str, CheckResult]) -> list[str]:
    blocked = []
    for req in sorted(check.requires):
        r = results.get(req)
        if r is None:
            continue
        if r.status is not CheckStatus.RAN or r.worst.rank >= Severity.FAIL.rank:
            blocked.append(req)
    return blocked


def run_one(
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
        with _reading_for(check.code):
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
            remedy=Remedy(
                text="Re-run with --debug and report the traceback to the vkdoctor maintainers."
            ),
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
