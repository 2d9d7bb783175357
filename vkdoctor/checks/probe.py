"""VKR: the compute probe. Seeing a driver is not computing with it: run RMSNorm and check it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vkdoctor import probe_report
from vkdoctor.checks.base import Check, all_selected
from vkdoctor.context import Context
from vkdoctor.model import Finding, Severity
from vkdoctor.probe import ProbeRequest, run_probe
from vkdoctor.record import replace


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
        if var == probe_report.FORCING:
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
    from vkdoctor.checks.loadtest import load_test
    from vkdoctor.loadtest import FILTERS_SINCE, _version_tuple, wrecks_all

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
            if (o.target.off or "").startswith("unset " + probe_report.FORCING):
                var = probe_report.FORCING
            elif own and " " not in own and not own.startswith("VK_LOADER_"):
                var = own  # an implicit layer's own disable_environment wins over everything
            else:
                var = "VK_LOADER_LAYERS_DISABLE"
            off.setdefault(var, []).append(o.target.name)
        else:
            off.setdefault("VK_LOADER_DRIVERS_DISABLE", []).append(Path(o.target.manifest).name)
    return off


class ComputeProbe(Check):
    """The compute probe: RMSNorm on the chosen adapter, checked against float64.

    A child process lists every adapter wgpu sees, picks one (--cpu: a CPU adapter on Vulkan;
    --adapter TEXT: by name; default: wgpu's high-performance choice on Vulkan), climbs a ladder
    (add one, workgroup reduction, small matmul) and runs RMSNorm cases whose maximum relative
    error must be at most 1e-5. Wrong numbers, a crash, a hang, or no suitable adapter fail.
    """

    code = probe_report.CODE
    family = probe_report.FAMILY
    title = probe_report.TITLE
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        result = ctx.fact(probe_result)
        finding = probe_report.finding(result, in_check=True)
        off: dict[str, list[str]] = result.get("disabled") or {}
        if off:
            names = ", ".join(n for ns in off.values() for n in ns)
            setting, commands = probe_report.disabled_setting(off)
            note = (
                f"The probe ran with {setting}: as things are, every Vulkan program crashes, "
                f"hangs or fails in {names} first (VKT001, VKT003)"
            )
            reported = all_selected(
                ctx,
                *(["VKT001"] if "VK_LOADER_DRIVERS_DISABLE" in off else []),
                *(["VKT003"] if set(off) - {"VK_LOADER_DRIVERS_DISABLE"} else []),
            )
            if finding.severity is Severity.OK and not reported:
                # the load test's failure is not in this run: the probe's is the one there is
                finding = replace(
                    finding,
                    severity=Severity.FAIL,
                    title=f"Compute probe passed only with {names} turned off",
                    message=f"{finding.message}. {note}",
                    remedy=f"{commands}, or remove what installs {names}.",
                )
            elif finding.severity is Severity.OK:
                # the failure is the load test's, with this very remedy: counted once
                finding = replace(
                    finding,
                    severity=Severity.INFO,
                    title=f"Compute probe passed once {names} was turned off",
                    message=f"{finding.message}. {note}",
                    remedy=f"{commands}, or remove what installs {names} (VKT001, VKT003).",
                )
            else:
                finding = replace(finding, message=f"{finding.message}. {note}")
            yield replace(finding, evidence={**finding.evidence, "disabled": off})
            return
        if finding.severity is Severity.FAIL and finding.evidence.get("status") in (
            "crash",
            "timeout",
        ):
            layers = _crashing_layers(ctx)
            if layers:
                names = ", ".join(layers)
                offs = "; ".join(dict.fromkeys(layers.values()))
                finding = replace(
                    finding,
                    message=finding.message
                    + f". The load test saw the layer {names} crash or hang too (VKT003)",
                    remedy=f"Turn the layer off first ({offs}) and run the probe again: every "
                    "Vulkan program loads it.",
                )
        if finding.severity is Severity.FAIL and finding.evidence.get("status") == "no-adapter":
            why = _no_adapter(ctx)
            if why is not None:
                said, remedy = why
                finding = replace(finding, message=f"{finding.message}{said}.", remedy=remedy)
            foreseen = _foreseen(ctx)
            if foreseen:
                # no loader (VKH002), or every driver fails to load as the library findings
                # said, with the fix: no adapter is their consequence, not a second cause
                finding = replace(
                    finding,
                    severity=Severity.INFO,
                    title=f"{finding.title}, as {foreseen} predicted",
                )
        yield finding


def _crashing_layers(ctx: Context) -> dict[str, str]:
    """Layers (implicit, or explicit ones the environment turns on) that crashed or hung in the
    load test, each with how to turn it off: a probe crash in the same environment is theirs
    first."""
    from vkdoctor.checks.loadtest import load_test

    try:
        outcomes = ctx.fact(load_test).outcomes
    except Exception:  # the VKT checks report a broken load test
        return {}
    return {
        o.target.name: o.target.off or f"export VK_LOADER_LAYERS_DISABLE={o.target.name}"
        for o in outcomes
        if o.target.kind == "layer" and o.failed_step
    }


def _foreseen(ctx: Context) -> str | None:
    """Which findings foresaw "no adapter", with the cause and its fix: VKH002 when there is no
    Vulkan loader, the library findings when no driver gives a device and each failed to load as
    they predicted."""
    from vkdoctor.checks.loadtest import load_test, predicted
    from vkdoctor.elf.resolve import loader_lookup

    if loader_lookup(ctx).found is None:
        return "VKH002" if all_selected(ctx, "VKH002") else None
    try:
        drivers = [o for o in ctx.fact(load_test).outcomes if o.target.kind == "driver"]
    except Exception:  # the VKT checks report a broken load test
        return None
    if not drivers or any(o.devices for o in drivers) or ctx.options.gpu:
        return None
    if all(o.dlopen == "failed" for o in drivers) and predicted(ctx, drivers):
        return "the library findings"
    return None


def _no_adapter(ctx: Context) -> tuple[str, str] | None:
    """Why the probe found no adapter, from the checks before it, most basic cause first:
    (what to add to the message, the one remedy). None when they say nothing more."""
    from vkdoctor.checks.drivers import hidden_drivers
    from vkdoctor.elf.resolve import loader_lookup
    from vkdoctor.loader import load_targets

    if loader_lookup(ctx).found is None:
        # no loader, no Vulkan adapter: VKH002 names the one package to install
        return (
            ". The Vulkan loader (libvulkan.so.1) is missing",
            "Install the Vulkan loader first (see VKH002: Debian/Ubuntu "
            "`sudo apt install libvulkan1`, Arch `sudo pacman -S vulkan-icd-loader`, "
            "Fedora `sudo dnf install vulkan-loader`), then run vkdoctor check again.",
        )
    if not any(t.kind == "driver" for t in load_targets(ctx)):
        # VKD001 names why no driver loads, and its fix; installing one may be wrong
        return (
            ". The Vulkan loader will load no driver (VKD001)",
            "Fix what VKD001 reports first: the loader loads no driver at all, so wgpu can see "
            "no Vulkan adapter.",
        )
    from vkdoctor.checks.loadtest import load_test

    try:
        outcomes = ctx.fact(load_test).outcomes
    except Exception:  # the VKT checks report a broken load test
        outcomes = ()
    broken = [
        o.target.name
        for o in outcomes
        if o.target.kind == "driver" and (o.dlopen != "ok" or o.instance == "failed")
    ]
    if broken and not any(o.devices for o in outcomes if o.target.kind == "driver"):
        names = ", ".join(broken)
        return (
            f". The driver{'s' if len(broken) > 1 else ''} the loader tries ({names}) "
            f"{'do' if len(broken) > 1 else 'does'} not load (VKT001)",
            f"Fix why {names} {'do' if len(broken) > 1 else 'does'} not load first (VKT001 and "
            "the library findings say why): wgpu sees only drivers that load.",
        )
    hidden = hidden_drivers(ctx)
    if hidden is not None:
        return ("", f"{hidden}.")
    from vkdoctor.checks.drivers import install_command

    if ctx.options.adapter:
        return None  # the adapters seen are listed: pick one, or install its driver
    command = install_command(ctx)
    # the package is installed, yet no device: its files are gone or broken
    verb = "Reinstall" if "reinstall" in command else "Install"
    if ctx.options.cpu:
        return ("", f"{verb} lavapipe, the Vulkan CPU driver: {command}.")
    return (
        "",
        f"Install the Vulkan driver for this machine's GPU, or {verb.lower()} lavapipe for a "
        f"CPU device: {command}.",
    )


CHECKS: tuple[type[Check], ...] = (ComputeProbe,)
