"""VKR: the compute probe. Seeing a driver is not computing with it: run RMSNorm and check it."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator
from typing import Any

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.children import probe_report
from vkdoctor.elf import shadow
from vkdoctor.model import Finding, Remedy, Severity, consequence
from vkdoctor.model.context import Context
from vkdoctor.model.probe_records import disabled_setting
from vkdoctor.model.record import replace
from vkdoctor.packages.commands import install_each


def _shadow_named(ctx: Context, finding: Finding, lookup: str) -> Finding:
    """The probe ended by ld.so's "symbol lookup error": the copy that lacks the symbol, found
    among the drivers' libraries, and the fix that lets the system's copy win."""
    resolutions = (res for _, res in facts.target_resolutions(ctx))
    found = shadow.behind_lookup_error(ctx, resolutions, lookup)
    if found is None:
        return finding
    lib, system = found
    return replace(
        finding,
        message=f"{finding.message}. {shadow.missing_because(lib, system)}",
        remedy=shadow.unshadow(ctx, lib),
        evidence={**finding.evidence, "shadowed_by": lib.path},
    )


class ComputeProbe(Check):
    """The compute probe: RMSNorm on the chosen adapter, checked against float64.

    A child process lists every adapter wgpu sees, picks one (--cpu: a CPU adapter on Vulkan;
    --adapter TEXT: by name; default: wgpu's high-performance choice on Vulkan), climbs a ladder
    (add one, workgroup reduction, small matmul) and runs RMSNorm cases whose maximum relative
    error must be at most 1e-5. Wrong numbers, a crash, a hang, or no suitable adapter fail.

    A failed probe is re-run with each layer the loader puts into every application turned off
    in turn (at most one extra run per layer); a layer whose removal makes it pass
    is named as the cause, with the disable just proven, and the probe's failure is its
    consequence. Wrong numbers that no layer explains are also tried on another Vulkan adapter,
    where there is one; the failure names what was tried (the layers off, the other adapter,
    the smaller cases that passed) before it names the driver.
    """

    code = probe_report.CODE
    family = probe_report.FAMILY
    title = probe_report.TITLE
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        result = facts.probe_result(ctx)
        finding = probe_report.finding(result, in_check=True)
        lookup = probe_report.symbol_lookup_error(result)
        if lookup is not None and finding.severity is Severity.FAIL:
            finding = _shadow_named(ctx, finding, lookup)
        localised = result.get("localised")
        if localised and finding.severity is Severity.FAIL:
            if localised.get("culprit"):
                yield from _layer_is_the_cause(ctx, finding, localised)
                return
            finding = replace(
                finding,
                message=f"{finding.message}. {_tried(localised, result, _manifest_of(ctx, result))}",
                evidence={**finding.evidence, "localised": localised},
            )
        off: dict[str, list[str]] = result.get("disabled") or {}
        if off:
            names = ", ".join(n for ns in off.values() for n in ns)
            setting, commands = disabled_setting(off)
            note = (
                f"The probe ran with {setting}: as things are, every Vulkan program crashes, "
                f"hangs or fails in {names} first (VKT001, VKT003)"
            )
            reported = facts.all_selected(
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
                    remedy=Remedy(commands=commands, text=f", or remove what installs {names}."),
                )
            elif finding.severity is Severity.OK:
                # the failure is the load test's, with this very remedy: counted once, there
                finding = consequence(
                    replace(finding, message=f"{finding.message}. {note}"),
                    "VKT001" if "VK_LOADER_DRIVERS_DISABLE" in off else "VKT003",
                    title=f"Compute probe passed once {names} was turned off",
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
                    remedy=Remedy(
                        text=f"Turn the layer off first ({offs}) and run the probe again: every "
                        "Vulkan program loads it."
                    ),
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
                said, code = foreseen
                finding = consequence(finding, code, title=f"{finding.title}, as {said} predicted")
        yield finding


def _layer_is_the_cause(
    ctx: Context, probe: Finding, localised: dict[str, Any]
) -> Iterator[Finding]:
    """The layer whose removal alone turned the probe's failure into a pass: the cause, first,
    with the disable just proven to work; the probe's failure after it, as its consequence."""
    from vkdoctor.packages.owner import owner

    layer = localised["culprit"]
    name, manifest = layer["name"], layer["manifest"]
    package = owner(ctx, manifest)
    from_ = f"package {package}" if package else "no package (a file put there by hand)"
    if package is None:
        from_ = "no package database to say which package"
    kind = "explicit" if layer["explicit"] else "implicit"
    origin = str(layer.get("origin") or "")
    # a search variable, not a standard folder
    manifest_at = f"{manifest}, found through {origin}" if origin.startswith("VK_") else manifest
    commands = tuple(layer["disable"])
    turned_off = "; ".join(commands) or layer["disable_text"]
    cause = replace(
        probe,
        title=f"The {kind} layer {name} breaks compute: {probe.title.lower()} with it, "
        "passed without it",
        message=(
            f"{name} ({manifest_at}, from {from_}; {layer['activation']}) is loaded into every "
            f"Vulkan application. With it the probe failed; re-run with it turned off "
            f"({turned_off}) the probe passed. {_runs(localised)}"
        ),
        remedy=Remedy(
            commands=commands,
            text=(", or " if commands else layer["disable_text"] + ", or ")
            + f"remove {manifest}"
            + (f" (from {package})" if package else "")
            + ": every Vulkan application loads it.",
        ),
        evidence={**probe.evidence, "localised": localised, "package": package},
    )
    yield cause
    yield consequence(probe, cause, title=f"{probe.title}: the consequence of the layer {name}")


def _runs(localised: dict[str, Any]) -> str:
    """The re-runs, one clause each: which layers were off, the status, the seconds."""
    return (
        "Re-runs: "
        + "; ".join(
            f"without {', '.join(t['off'])}: {t['status']} ({t['seconds']:.1f} s)"
            for t in localised["tried"]
        )
        + "."
    )


def _tried(localised: dict[str, Any], result: dict[str, Any], manifest: str | None) -> str:
    """What was tried to localise a failure that no single layer explains and, for wrong
    numbers, what that leaves: the driver only when the rest is ruled out."""
    said = []
    if localised["tried"]:
        runs = "; ".join(
            f"without {', '.join(t['off'])}: {t['status']} ({t['seconds']:.1f} s)"
            for t in localised["tried"]
        )
        said.append(f"Re-run with each layer turned off in turn, the probe still failed ({runs})")
    elif "other_adapter" in localised:
        said.append("No layer is loaded into it")
    if "other_adapter" not in localised:
        return "; ".join(said) + "."  # a crash or a hang: the layers are all that was tried
    other = localised["other_adapter"]
    if other is None:
        said.append("there is no other Vulkan adapter to compare with")
    else:
        gave = "passed" if other["status"] == "pass" else f"gave {other['status']}"
        said.append(
            f"on the other Vulkan adapter, {other['name']}, the probe {gave} "
            f"({other['seconds']:.1f} s)"
        )
    passed, failed = localised["cases_passed"], localised["cases_failed"]
    if passed and failed:
        said.append(f"the smaller cases passed ({', '.join(passed)}), {', '.join(failed)} failed")
    adapter = (result.get("adapter") or {}).get("name") or "this adapter"
    driver = (result.get("adapter") or {}).get("driver")
    left = f"the driver of {adapter}" + (f" ({driver})" if driver else "")
    if manifest:
        left += f", {manifest},"
    if other is not None and other["status"] != "pass":
        verdict = (
            f"the same probe fails on both adapters: wgpu-native or the probe is as much a "
            f"suspect as {left}"
        )
    else:
        verdict = f"with the layers ruled out, {left} is what is left"
    said[0] = said[0][:1].upper() + said[0][1:]
    return "; ".join(said) + f". So {verdict}."


def _manifest_of(ctx: Context, result: dict[str, Any]) -> str | None:
    """The manifest of the one driver whose device the load test saw under the probe's adapter's
    name, or None."""
    name = (result.get("adapter") or {}).get("name")
    try:
        outcomes = facts.load_test(ctx).outcomes
    except Exception:  # the VKT checks report a broken load test
        return None
    found = {
        o.target.manifest
        for o in outcomes
        if o.target.kind == "driver" and any(d.name == name for d in o.devices)
    }
    return found.pop() if len(found) == 1 else None


def _crashing_layers(ctx: Context) -> dict[str, str]:
    """Layers (implicit, or explicit ones the environment turns on) that crashed or hung in the
    load test, each with how to turn it off: a probe crash in the same environment is theirs
    first."""
    try:
        outcomes = facts.load_test(ctx).outcomes
    except Exception:  # the VKT checks report a broken load test
        return {}
    return {
        o.target.name: o.target.off
        or f"export VK_LOADER_LAYERS_DISABLE={shlex.quote(o.target.name)}"
        for o in outcomes
        if o.target.kind == "layer" and o.failed_step
    }


def _foreseen(ctx: Context) -> tuple[str, str] | None:
    """Which findings foresaw "no adapter", with the cause and its fix, and the code of the first:
    VKH002 when there is no Vulkan loader, the library findings when no driver gives a device
    and each failed to load as they predicted."""
    from vkdoctor.elf.resolve import loader_lookup

    if loader_lookup(ctx).found is None:
        return ("VKH002", "VKH002") if facts.all_selected(ctx, "VKH002") else None
    try:
        drivers = [o for o in facts.load_test(ctx).outcomes if o.target.kind == "driver"]
    except Exception:  # the VKT checks report a broken load test
        return None
    if not drivers or any(o.devices for o in drivers) or ctx.options.gpu:
        return None
    if all(o.dlopen == "failed" for o in drivers) and facts.predicted(ctx, drivers):
        ahead = facts.predictions(ctx)
        return "the library findings", min(code for o in drivers for code in ahead[o.target].by)
    return None


def _no_adapter(ctx: Context) -> tuple[str, Remedy] | None:
    """Why the probe found no adapter, from the checks before it, most basic cause first:
    (what to add to the message, the one remedy). None when they say nothing more."""
    from vkdoctor.checks.drivers import hidden_drivers
    from vkdoctor.elf.resolve import loader_lookup

    if loader_lookup(ctx).found is None:
        # no loader, no Vulkan adapter: VKH002 names the one package to install
        return (
            ". The Vulkan loader (libvulkan.so.1) is missing",
            Remedy(
                text="Install the Vulkan loader first (see VKH002: "
                f"{install_each('vulkan-loader')}), then run vkdoctor check again."
            ),
        )
    if not any(t.kind == "driver" for t in facts.load_targets(ctx)):
        # VKD001 names why no driver loads, and its fix; installing one may be wrong
        return (
            ". The Vulkan loader will load no driver (VKD001)",
            Remedy(
                text="Fix what VKD001 reports first: the loader loads no driver at all, so wgpu "
                "can see no Vulkan adapter."
            ),
        )
    manifest = facts.stopped_by_a_layer_manifest(ctx)
    if manifest is not None:
        # the loader fails every vkCreateInstance on this file before it asks any driver
        return (
            f". The Vulkan loader fails every vkCreateInstance on the layer manifest {manifest} "
            "before it asks any driver (VKI002, VKI004)",
            Remedy(text=f"Fix or remove {manifest} first (VKI002, VKI004 say why)."),
        )
    try:
        outcomes = facts.load_test(ctx).outcomes
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
            Remedy(
                text=f"Fix why {names} {'do' if len(broken) > 1 else 'does'} not load first "
                "(VKT001 and the library findings say why): wgpu sees only drivers that load."
            ),
        )
    hidden = hidden_drivers(ctx)
    if hidden is not None:
        return ("", replace(hidden, text=f"{hidden.text}."))
    from vkdoctor.checks.drivers import install_command

    if ctx.options.adapter:
        return None  # the adapters seen are listed: pick one, or install its driver
    command = install_command(ctx)
    # the package is installed, yet no device: its files are gone or broken
    verb = "Reinstall" if "reinstall" in command else "Install"
    if ctx.options.cpu:
        return ("", Remedy(text=f"{verb} lavapipe, the Vulkan CPU driver: {command}."))
    return (
        "",
        Remedy(
            text=f"Install the Vulkan driver for this machine's GPU, or {verb.lower()} lavapipe "
            f"for a CPU device: {command}."
        ),
    )


CHECKS: tuple[type[Check], ...] = (ComputeProbe,)
