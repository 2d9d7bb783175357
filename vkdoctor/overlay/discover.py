"""The chains the overlay is for: every library the loader will dlopen, and its closure."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vkdoctor.context import Context
from vkdoctor.overlay.chain import resolve_chain
from vkdoctor.overlay.plan import Plan, make_plan


def chain_targets(ctx: Context) -> list[str]:
    """What the Vulkan loader dlopens in ctx's environment (drivers, implicit layers), in order."""
    from vkdoctor.loader import load_targets

    return [t.dlopen_name for t in load_targets(ctx)]


def plan_for(ctx: Context, packages: Sequence[Path] = ()) -> Plan:
    """The overlay plan for this environment (built and proven when something is missing)."""
    return make_plan(ctx, chain_targets(ctx), resolve_chain, packages=packages)
