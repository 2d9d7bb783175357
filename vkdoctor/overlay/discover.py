"""The chains the overlay is for: every library the loader will dlopen, and its closure."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vkdoctor.model.context import Context
from vkdoctor.overlay.chain import Chain, from_resolution, resolve_chain
from vkdoctor.overlay.plan import Plan, make_plan


def target_chains(ctx: Context) -> dict[str, Chain]:
    """Each load target's chain in ctx's environment, from the library checks' resolutions
    (computed once per run, shared with the VKL checks)."""
    from vkdoctor.closures.targets import target_resolutions

    chains: dict[str, Chain] = {}
    for target, res in ctx.fact(target_resolutions):
        chains.setdefault(target.dlopen_name, from_resolution(target.dlopen_name, res))
    return chains


def near_miss_packages(ctx: Context) -> dict[str, list[str]]:
    """Missing soname -> the installed packages owning its near misses (llvm-libs owns
    libLLVM.so.22.1 where libLLVM.so.23.1 is missing): the family to look for in package caches."""
    from vkdoctor.closures.targets import target_resolutions
    from vkdoctor.packages import inventory

    near: dict[str, set[str]] = {}
    for _target, res in ctx.fact(target_resolutions):
        for miss in res.misses:
            paths = {n.path for n in miss.near if n.kind == "other-version"}
            if paths:
                near.setdefault(miss.name, set()).update(paths)
    if not near:
        return {}
    owners = ctx.fact(inventory).owners({p for paths in near.values() for p in paths})
    return {
        soname: sorted({pkg.name for p in paths for pkg in owners.get(p, ())})
        for soname, paths in near.items()
    }


def plan_for(ctx: Context, packages: Sequence[Path] = ()) -> Plan:
    """The overlay plan for this environment (built and proven when something is missing)."""
    return make_plan(
        ctx,
        target_chains(ctx),
        resolve_chain,
        packages=packages,
        near_miss_packages=near_miss_packages(ctx),
    )
