"""The probe's result in this run's context (vkdoctor.children.probe), run once: a run-wide fact."""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vkdoctor.children.probe import ProbeRequest, run_probe
from vkdoctor.elf.resolve import loader_lookup
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
        return _localised(ctx, ctx.env, request, run_probe(ctx.env, request))
    env = dict(ctx.env)
    for var, names in off.items():
        if var == FORCING:
            env.pop(var, None)  # DISABLE cannot turn off what it forces on
        elif not var.startswith("VK_LOADER_"):
            env[var] = "1"  # a layer's own disable_environment: defined at all is enough
        else:
            env[var] = ",".join(n for n in (ctx.env.get(var, ""), *names) if n)
    result = run_probe(env, request)
    # the report's variables are the user's: the filters added here are in `disabled`, and a
    # fix must not tell the user to unset what vkdoctor set
    shown = {k: ctx.env[k] for k in result.get("env") or {} if k in ctx.env}
    return _localised(ctx, env, request, {**result, "env": shown, "disabled": off})


#: probe statuses a layer can cause: wrong numbers, a crash, a hang
_LAYER_CAN_CAUSE = ("fail", "crash", "timeout")


def _localised(
    ctx: Context, env: Mapping[str, str], request: ProbeRequest, result: dict[str, Any]
) -> dict[str, Any]:
    """A failed probe re-run with each layer the loader puts into it turned off alone, until
    one passes: at most one extra run per layer. `localised` says what was tried, in seconds,
    and the layer whose removal made the probe pass (`culprit`), if one did. Wrong numbers
    that no layer explains are also tried on another Vulkan adapter, where there is one (one
    more run), and the cases that passed and failed are kept: the evidence a driver is blamed
    on."""
    if result.get("status") not in _LAYER_CAN_CAUSE or loader_lookup(ctx).found is None:
        return result  # no loader that works (VKH002): no layer is reached to blame
    suspects = _suspect_layers(ctx, env)
    if not suspects and result.get("status") != "fail":
        return result
    tried: list[dict[str, Any]] = []

    def attempt(layers: list[dict[str, Any]]) -> bool:
        changed = dict(env)
        for layer in layers:
            changed = _without(changed, layer)
        began = time.monotonic()
        status = str(run_probe(changed, request).get("status"))
        seconds = round(time.monotonic() - began, 2)
        tried.append({"off": [x["name"] for x in layers], "status": status, "seconds": seconds})
        return status == "pass"

    culprit = next((x for x in suspects if attempt([x])), None)
    localised: dict[str, Any] = {"suspects": suspects, "tried": tried, "culprit": culprit}
    if culprit is None and result.get("status") == "fail":
        cases = [c for c in result.get("cases") or () if isinstance(c, Mapping)]
        localised["cases_passed"] = [f"{c.get('rows')}x{c.get('d')}" for c in cases if c.get("ok")]
        localised["cases_failed"] = [
            f"{c.get('rows')}x{c.get('d')}" for c in cases if not c.get("ok")
        ]
        localised["other_adapter"] = _on_another_adapter(env, request, result)
    return {**result, "localised": localised}


def _on_another_adapter(
    env: Mapping[str, str], request: ProbeRequest, result: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The probe run again on another Vulkan adapter (one wgpu can pick by a name the failing
    one does not share): its name, status and seconds; None when there is none."""
    used = (result.get("adapter") or {}).get("name")
    names = [
        a.get("name")
        for a in result.get("adapters") or ()
        if isinstance(a, Mapping) and a.get("backend") == "Vulkan" and not a.get("used")
    ]
    other = next(
        (
            n
            for n in names
            if isinstance(n, str)
            and n
            and used not in (None, n)
            and n not in str(used)
            and str(used) not in n
        ),
        None,
    )
    if other is None:
        return None
    began = time.monotonic()
    status = run_probe(env, request._replace(adapter=other, cpu=False, gpu=False)).get("status")
    return {"name": other, "status": str(status), "seconds": round(time.monotonic() - began, 2)}


def _suspect_layers(ctx: Context, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each layer the loader will put into the probe (active implicit layers, explicit ones
    the environment enables), with its manifest, where it came from and how to turn it off."""
    from vkdoctor.loader import explicit_layers, layer_scan

    found = []
    for layer in (*layer_scan(ctx).active, *explicit_layers(ctx).active):
        if not layer.name or (layer.disable_env and layer.disable_env in env):
            continue
        found.append(
            {
                "name": layer.name,
                "manifest": layer.manifest,
                "origin": layer.origin,
                "activation": layer.activation,
                "library": layer.library_found or layer.library,
                "explicit": layer.explicit,
                "disable": list(layer.fix.commands),
                "disable_text": layer.fix.text,
            }
        )
    return found


def _without(env: dict[str, str], layer: Mapping[str, Any]) -> dict[str, str]:
    """`env` with `layer` turned off the way its remedy says (an implicit layer's
    disable_environment, VK_INSTANCE_LAYERS without it, VK_LOADER_LAYERS_DISABLE)."""
    env = dict(env)
    for command in layer["disable"]:
        if command.startswith("export "):
            var, _, value = shlex.split(command.removeprefix("export "))[0].partition("=")
            env[var] = (
                ",".join(v for v in (env.get(var, ""), value) if v)
                if var.startswith("VK_LOADER_LAYERS_DISABLE")
                else value
            )
        elif command.startswith("unset "):
            env.pop(command.removeprefix("unset "), None)
    return env


def stopped_by_a_layer_manifest(ctx: Context) -> str | None:
    """The layer manifest (implicit, or explicit: the loader reads them all) that makes this
    loader fail every vkCreateInstance before it asks any driver, or None."""
    from vkdoctor.facts.loadtest import running_loader
    from vkdoctor.loader import explicit_layers, layer_scan
    from vkdoctor.loader import layers as L

    aborts = ctx.fact(running_loader).json_error_aborts
    for scan in (layer_scan(ctx), explicit_layers(ctx)):
        for f in scan.files:
            if f.outcome in (L.FILE_FIFO, L.FILE_CRASH) or (
                f.outcome == L.FILE_JSON_ERROR and aborts
            ):
                return f.manifest
    return None


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
    if stopped_by_a_layer_manifest(ctx):
        return {}  # every instance fails in the loader itself: no target is the one to blame
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
