"""How `vkdoctor check` uses the overlay: plan it on the user's environment, and prove it by the
load test and the probe run under it.

The overlay is opt-in. A plain `vkdoctor check` describes the environment the user's next command
gets: when only vkdoctor's own search (a package cache, a likely folder) finds a missing library,
the checks run without the overlay and fail, and VKO001 proves the overlay in a context of its own
and offers it as the fix. With `--search-path` or `--from-package` the user asked for it: every
check runs under it, and the verdict says that it holds only there.
"""

from __future__ import annotations

import re
from typing import Any

from vkdoctor.model import Remedy
from vkdoctor.model.context import Context
from vkdoctor.model.record import record, replace
from vkdoctor.model.report_records import OverlayLink, OverlayReport
from vkdoctor.overlay.errors import OverlayError
from vkdoctor.overlay.plan import Plan


@record(frozen=True, kw_only=True)
class Outcome:
    """The overlay as planned on the user's own environment (before any overlay)."""

    plan: Plan | None = None
    #: the overlay could not be built at all (store read-only or full, ...)
    error: str | None = None
    hint: str | None = None
    #: the hint's commands, when it is only commands to run
    hint_commands: tuple[str, ...] = ()
    #: the user's LD_LIBRARY_PATH, before the overlay
    original_ld_library_path: str | None = None
    #: what the package databases say about each library the overlay supplies, with their fix
    #: (the checks run under the overlay, where nothing is missing any more)
    lasting_fixes: tuple[str, ...] = ()

    @property
    def fix(self) -> Remedy | None:
        """The hint as a fix: its commands, when it is only commands to run."""
        if self.hint_commands:
            return Remedy(commands=self.hint_commands)
        return Remedy(text=self.hint) if self.hint else None

    @property
    def applied(self) -> bool:
        return self.plan is not None and self.plan.built


def overlay_outcome(ctx: Context) -> Outcome:
    """Plan (and build) the overlay for ctx's environment. Never raises for a store problem."""
    if not ctx.live:
        return Outcome()
    from vkdoctor.overlay.discover import plan_for

    try:
        plan = plan_for(ctx, ctx.options.packages)
    except OverlayError as exc:
        return Outcome(error=exc.message, hint=exc.hint, hint_commands=exc.commands)
    return Outcome(
        plan=plan,
        original_ld_library_path=ctx.getenv("LD_LIBRARY_PATH"),
        lasting_fixes=_lasting_fixes(ctx, plan) if plan.built else (),
    )


_OVERLAY_HINT = re.compile(r" Until then, an overlay can give one program .*? \(VKO001\)\.")


def _lasting_fixes(ctx: Context, plan: Plan) -> tuple[str, ...]:
    """VKP002's sentence (who needs what, which package has what instead, the fix) for each
    library the overlay supplies, from the user's own environment."""
    from vkdoctor.packages import inventory
    from vkdoctor.packages.skew import explain_missing_soname
    from vkdoctor.packages.stack import stack_facts

    try:
        inv = ctx.fact(inventory)
        if not inv.databases:
            return ()
        missing = [m for m in ctx.fact(stack_facts).missing_sonames if m.soname in plan.chosen]
        paths = [p for m in missing for p in (m.consumer, *m.near_misses)]
        owners = inv.owners(paths)
        out = []
        for m in missing:
            d = explain_missing_soname(m, inv, owners)
            # its pointer at the overlay is VKO001's own finding, where this text goes
            text = _OVERLAY_HINT.sub("", d.message)
            if "Fix:" not in text and d.remedy:
                text += " " + d.remedy.shown().split(". ")[0].rstrip(".") + "."
            out.append(text)
        return tuple(dict.fromkeys(out))
    except Exception:  # the package view is a bonus here; VKO001 says what it can without it
        return ()


def opted_in(ctx: Context) -> bool:
    """Whether the user asked for an overlay (--search-path, VKDOCTOR_SEARCH_PATH, --from-package)."""
    return bool(ctx.options.search_paths or ctx.options.packages)


def runs_under(ctx: Context, plan: Plan) -> bool:
    """Whether ctx's checks run under `plan`'s overlay."""
    return plan.ld_path is not None and ctx.env.get("LD_LIBRARY_PATH") == plan.ld_path.value


def overlay_context(ctx: Context) -> Context:
    """The Context-level fact: ctx with the overlay applied (ctx itself when its checks already
    run under it), for proving the overlay by the load test and the probe."""
    plan = ctx.fact(overlay_outcome).plan
    if plan is not None and runs_under(ctx, plan):
        return ctx
    return context_for_checks(ctx)


def context_for_checks(ctx: Context) -> Context:
    """ctx itself, or, when an overlay was built, ctx with LD_LIBRARY_PATH set to it.

    The overlay's outcome is carried over as the new context's first fact, so the VKO checks
    report the plan made on the user's own environment.
    """
    outcome = ctx.fact(overlay_outcome)
    if not outcome.applied or outcome.plan is None or outcome.plan.ld_path is None:
        return ctx
    from vkdoctor.machine.host import user_environment
    from vkdoctor.overlay.store import store_root

    env = dict(ctx.env)
    env["LD_LIBRARY_PATH"] = outcome.plan.ld_path.value
    facts: dict[Any, Any] = {overlay_outcome: outcome, user_environment: ctx.fact(user_environment)}
    root = ctx.known(store_root)
    if root is not None:  # where the overlay is: the library checks tell it from other entries
        facts[store_root] = root
    return replace(ctx, env=env, _facts=facts)


def report_overlay(ctx: Context) -> OverlayReport | None:
    """The report's `overlay`, when one was built: `applied` says whether the report's checks
    ran under it, `exec` how to run a command under it."""
    from vkdoctor.overlay.describe import exec_command

    plan = ctx.fact(overlay_outcome).plan
    if plan is None or not plan.built or plan.directory is None or plan.ld_path is None:
        return None
    return OverlayReport(
        dir=str(plan.directory),
        ld_library_path=plan.ld_path.value,
        libraries=tuple(
            OverlayLink(
                soname=link.soname, target=str(link.target), needed_by=tuple(link.needed_by)
            )
            for link in plan.links
        ),
        applied=runs_under(ctx, plan),
        exec=exec_command(plan),
    )
