"""The load test of this run (vkdoctor.children.loadtest), started once and early: a run-wide fact; and
what the ld.so emulation predicts it will see."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from vkdoctor.children.loadtest import (
    LoadTest,
    LoadTestRun,
    Prediction,
    TargetOutcome,
    load_test_for,
)
from vkdoctor.facts.selection import all_selected
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace

if TYPE_CHECKING:
    from vkdoctor.elf.resolve import Resolution
    from vkdoctor.loader.version import LoaderVersion


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


def _sigbus(ctx: Context, r: Resolution) -> str | None:
    """Why the dlopen of `r` dies of SIGBUS: the first library it maps is cut short past whole
    headers (ld.so maps pages beyond the end of the file); None when nothing is."""
    from vkdoctor.elf.defect import diagnose
    from vkdoctor.elf.platform import ldso_platform

    machine = ctx.fact(ldso_platform).e_machine
    for m in r.misses:
        bad = m.bad_file
        if bad is None or bad.path is None:
            return None
        d = diagnose(ctx, bad.path, m.name, machine)
        if d is not None and d.effect == "sigbus":
            return f"{bad.path} is {d.what()}: ld.so maps it past its end and dies of SIGBUS"
        return None  # ld.so stops at the first mapping error
    return None


def predictions(ctx: Context) -> Mapping[LoadTarget, Prediction]:
    """The ld.so emulation's verdict on each target (vkdoctor.closures): the
    closure and symbol versions, then the undefined symbols dlopen binds (VKL006)."""
    from vkdoctor.closures.targets import target_resolutions, undefined_by_target

    unbound = {
        t: [u for u in missing if u.fails_dlopen] for t, _, missing in ctx.fact(undefined_by_target)
    }
    out = {}
    for target, r in ctx.fact(target_resolutions):
        now = unbound.get(target)
        if r.ok and now:
            # which undefined symbol ld.so names first depends on relocation order: the
            # prediction is "fails", not its exact dlerror
            out[target] = Prediction(
                loadable=False,
                reason=f"{len(now)} undefined symbol(s) that dlopen binds (BIND_NOW, or "
                f"a data relocation), e.g. {now[0].error} (VKL006)",
                error=None,
                by=("VKL006",),
            )
            continue
        if r.misses:
            by: tuple[str, ...] = (
                ("VKL001",) if any(m.needed_by is None for m in r.misses) else ("VKL002",)
            )
        else:
            by = ("VKL003",) if r.versions else ()
        crash = _sigbus(ctx, r)
        if crash is not None:
            out[target] = Prediction(loadable=False, reason=crash, by=by, signal="SIGBUS")
            continue
        out[target] = Prediction(
            loadable=r.ok,
            reason=r.predicted_error
            or "the library, its DT_NEEDED closure, every symbol version and every symbol "
            "dlopen binds resolve",
            error=r.predicted_error,
            by=by,
        )
    return out


def predicted(ctx: Context, failing: Iterable[TargetOutcome]) -> bool:
    """Whether the library findings (selected in this run) foresaw each of these failures, with
    the cause and its fix, before anything was loaded."""
    ahead = predictions(ctx)
    return all(
        (p := ahead.get(o.target)) is not None
        and p.foresees(o)
        and bool(p.by)
        and all_selected(ctx, *p.by)
        for o in failing
    )


def running_loader(ctx: Context) -> LoaderVersion:
    """The loader's version as the emulation reads it (its file's name, else its code); when
    neither says and the load test ran here, the version the loader answered it
    (vkEnumerateInstanceVersion in the child that loaded it)."""
    from vkdoctor.loader.version import loader_version

    static = ctx.fact(loader_version)
    if static.version is not None or not ctx.live:
        return static
    try:
        said = load_test(ctx).loader_version or ""
    except Exception:  # the VKT checks report a load test that broke
        return static
    parts = said.split(".")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) < 6 for p in parts):
        return static
    return replace(static, version=(int(parts[0]), int(parts[1]), int(parts[2])))
