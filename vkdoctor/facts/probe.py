"""The probe's result in this run's context (vkdoctor.children.probe), run once: a run-wide fact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vkdoctor.children.probe import ProbeRequest, run_probe
from vkdoctor.model.context import Context
from vkdoctor.model.probe_records import FORCING


def probe_result(ctx: Context) -> dict[str, Any]:
    """Run the probe once per Context, with the context's environment and options.

    A driver or layer that the load test saw crash or hang takes every Vulkan process down, the
    probe's too (a hang would cost the whole --timeout): the probe runs with those turned off
    through the loader's own filters, and says so (`disabled`), so that it answers whether
    compute works once they are out of the way."""
    request = ProbeRequest(
        cpu=ctx.options.cpu,
        gpu=ctx.options.gpu,
        capabilities=ctx.options.capabilities,
        adapter=ctx.options.adapter,
        timeout=ctx.options.timeout,
    )
    off = _wrecks(ctx)
    if not off:
        return run_probe(ctx.env, request)
    env = dict(ctx.env)
    for var, names in off.items():
        if var == FORCING:
            env.pop(var, None)  # DISABLE cannot turn off what it forces on
        else:
            env[var] = ",".join(n for n in (ctx.env.get(var, ""), *names) if n)
    result = run_probe(env, request)
    # the report's variables are the user's: the filters added here are in `disabled`, and a
    # fix must not tell the user to unset what vkdoctor set
    shown = {k: ctx.env[k] for k in result.get("env") or {} if k in ctx.env}
    return {**result, "env": shown, "disabled": off}


def _wrecks(ctx: Context) -> dict[str, list[str]]:
    """The loader filter variable and names of each target the load test saw break every
    application (crash, hang, abort every vkCreateInstance or hide every device), when this
    loader has the filters (1.3.234)."""
    from vkdoctor.children.loadtest import FILTERS_SINCE, _version_tuple, wrecks_all
    from vkdoctor.facts.loadtest import load_test

    try:
        run = ctx.fact(load_test)
    except Exception:  # the VKT checks report a broken load test
        return {}
    version = _version_tuple(run.loader_version)
    if version is None or version < FILTERS_SINCE:
        return {}
    off: dict[str, list[str]] = {}
    for o in run.outcomes:
        if wrecks_all(o, run.loader_version) is None:
            continue
        if o.target.kind == "layer":
            own = (o.target.off or "").partition("=")[0].removeprefix("export ")
            if (o.target.off or "").startswith("unset " + FORCING):
                var = FORCING
            elif own and " " not in own and not own.startswith("VK_LOADER_"):
                var = own  # an implicit layer's own disable_environment wins over everything
            else:
                var = "VK_LOADER_LAYERS_DISABLE"
            off.setdefault(var, []).append(o.target.name)
        else:
            off.setdefault("VK_LOADER_DRIVERS_DISABLE", []).append(Path(o.target.manifest).name)
    return off
