"""The chains the overlay is for: every library the loader will dlopen, and its closure."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vkdoctor.context import Context
from vkdoctor.overlay.chain import Chain, from_resolution, resolve_chain
from vkdoctor.overlay.plan import Plan, make_plan


def target_chains(ctx: Context) -> dict[str, Chain]:
    """Each load target's chain in ctx's environment, from the library checks' resolutions
    (computed once per run, shared with the VKL checks)."""
    from vkdoctor.checks.libraries import target_resolutions

    chains: dict[str, Chain] = {}
    for target, res in ctx.fact(target_resolutions):
        chains.setdefault(target.dlopen_name, from_resolution(target.dlopen_name, res))
    return chains


def plan_for(ctx: Context, packages: Sequence[Path] = ()) -> Plan:
    """The overlay plan for this environment (built and proven when something is missing)."""
    return make_plan(ctx, target_chains(ctx), resolve_chain, packages=packages)
