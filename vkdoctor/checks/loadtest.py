"""VKT: the real load test. Each driver and implicit layer is dlopened and put through
vkCreateInstance for real, in one child process (vkdoctor.children.loadtest)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.children.loadtest import (
    WRECK_WORDS,
    LoadTestRun,
    Prediction,
    TargetOutcome,
    classify,
    disagreements,
    opens_its_device,
    symbol_lookup_error,
    wrecks_all,
)
from vkdoctor.elf import shadow
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context


def _loader_version(ctx: Context, run: LoadTestRun) -> str | None:
    """The real loader's own answer, else the version its file name says (vkdoctor.loader)."""
    if run.loader_version:
        return run.loader_version
    static = facts.loader_version(ctx)
    return static.text if static.version else None


def _verdict_finding(
    check: Check, ctx: Context, run: LoadTestRun, outcome: TargetOutcome
) -> Finding:
    version = _loader_version(ctx, run)
    others = [
        o.target.manifest
        for o in run.outcomes
        if o.target.kind == "driver"
        and o is not outcome
        and o.dlopen == "ok"
        and wrecks_all(o, version) is None
    ]
    owner = None
    if (
        wrecks_all(outcome, version) is not None or not opens_its_device(outcome)
    ) and outcome.target.dlopen_name.startswith("/"):
        from vkdoctor.packages.owner import owner as package_owner

        owner = package_owner(ctx, outcome.target.dlopen_name)
    verdict = classify(outcome, others=others, env=ctx.env, loader_version=version, owner=owner)
    evidence = {**outcome.as_dict(), "verdict": verdict.kind}
    if outcome.target.kind == "driver" and (
        outcome.failed_step is not None or not opens_its_device(outcome)
    ):
        # no other driver that works: no device and no adapter are this crash's consequence
        evidence["only_driver"] = not others
    predicted = PredictionAgrees().predictions(ctx).get(outcome.target)
    if (
        predicted is not None
        and predicted.foresees(outcome)
        and (verdict.kind == "dlopen-failed" or predicted.signal is not None)
        and verdict.severity.rank > Severity.INFO.rank
        and predicted.by
        and facts.all_selected(ctx, *predicted.by)
    ):
        # the library findings said so before anything was loaded, with the cause and the fix:
        # the real load confirms them and is no second failure for one cause
        return check.info(
            f"{verdict.title}, as the library findings predicted",
            f"{verdict.message} Predicted from the files alone: {predicted.reason}.",
            **evidence,
            confirms=predicted.reason,
        )
    message, remedy = verdict.message, verdict.remedy
    line = symbol_lookup_error(outcome)
    if line is not None:
        # this driver's own closure first
        pairs = sorted(facts.target_resolutions(ctx), key=lambda pair: pair[0] != outcome.target)
        found = shadow.behind_lookup_error(ctx, (res for _, res in pairs), line)
        if found is not None:
            lib, system = found
            message += f" {shadow.missing_because(lib, system)}: the driver's package is intact."
            remedy = shadow.unshadow(ctx, lib)
            evidence["shadowed_by"] = lib.path
    return check.finding(verdict.severity, verdict.title, message, remedy=remedy, evidence=evidence)


class DriversLoad(Check):
    """Each Vulkan driver loads for real and creates an instance.

    vkdoctor starts one child process that, for every driver the loader will try, calls
    dlopen(library, RTLD_LAZY|RTLD_LOCAL) exactly as the loader does and keeps dlerror's text
    verbatim, then creates a Vulkan instance through the real loader restricted to that driver's
    manifest (VK_DRIVER_FILES=<manifest>, implicit layers off) and lists its physical devices.
    A driver that crashes (a signal) or hangs in its constructors or in vkCreateInstance is
    reported by name and the test goes on with the others in a fresh child. A driver that loads
    but sees no device is normal when the machine has no hardware for it. One whose failure the
    loader does not confine to it (vkCreateInstance out of host memory, a failing
    vkEnumeratePhysicalDevices on loader 1.3.239) is tried beside the drivers that gave a device,
    and fails when it takes their instance or devices with it.
    """

    code = "VKT001"
    family = "load"
    title = "Drivers load for real"
    live_only = True
    #: the one driver the loader tries crashes or hangs: "no device" and "no adapter" follow
    explains = ("VKT002", "VKR001")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        if cause.evidence.get("only_driver") is not True:
            return False
        if symptom.code == "VKT002":
            return not symptom.evidence.get("devices")
        if symptom.evidence.get("reason") == "device-error":
            return cause.evidence.get("verdict") == "device-refused"
        return symptom.evidence.get("status") == "no-adapter"

    #: a layer manifest that makes every vkCreateInstance fail: no driver's instance says more
    requires = frozenset({"VKI002", "VKI004"})

    def run(self, ctx: Context) -> Iterable[Finding]:
        run = facts.load_test(ctx)
        drivers = [o for o in run.outcomes if o.target.kind == "driver"]
        if not drivers:
            yield self.info(
                "No driver to load",
                "no driver manifest survives the loader's reading of it (the driver findings, VKD, "
                "say why)",
            )
            return
        for outcome in drivers:
            yield _verdict_finding(self, ctx, run, outcome)


class DeviceAvailable(Check):
    """At least one driver gives a Vulkan device.

    The sum of the load test: the devices that the drivers, each loaded alone through the real
    loader, report. No device from any driver means every Vulkan application on this machine
    fails with VK_ERROR_INCOMPATIBLE_DRIVER or finds no adapter.
    """

    code = "VKT002"
    family = "load"
    title = "A Vulkan device is available"
    live_only = True
    # out of time before any driver: each "was not load-tested" is that one cause
    explains = ("VKT001", "VKT003")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return cause.evidence.get("out_of_time") is True and symptom.evidence.get("dlopen") == (
            "not-run"
        )

    #: without a loader, with no driver the loader will load, or with a manifest that stops every
    #: instance (each driver loaded alone does not see it), VKH002, VKD001 or VKD003 has the cause
    #: no loader, no driver manifest, a manifest that stops the loader, NVIDIA without GLVND's
    #: libEGL, a layer manifest that fails every instance: each is the one cause that VKT002
    #: would only repeat
    requires = frozenset({"VKH002", "VKD001", "VKD003", "VKC004", "VKI002", "VKI004"})

    def run(self, ctx: Context) -> Iterable[Finding]:
        run = facts.load_test(ctx)
        drivers = [o for o in run.outcomes if o.target.kind == "driver"]
        # a device that vkCreateDevice refuses computes nothing: not one available
        found = [(o, d) for o in drivers if opens_its_device(o) for d in o.devices]
        evidence = {
            **run.evidence(),
            "devices": [{"manifest": o.target.manifest, **d.as_dict()} for o, d in found],
        }
        if found:
            yield self._devices_found(ctx, run, drivers, evidence)
            return
        untested = [o for o in drivers if o.dlopen == "not-run"]
        if drivers and len(untested) == len(drivers):
            yield self._nothing_tested(ctx, run, drivers, evidence)
            return
        yield self._no_device(ctx, run, drivers, evidence)

    def _devices_found(
        self,
        ctx: Context,
        run: LoadTestRun,
        drivers: list[TargetOutcome],
        evidence: Mapping[str, object],
    ) -> Finding:
        """The devices, unless a driver that the applications load too takes them all away."""
        found = [(o, d) for o in drivers for d in o.devices]
        listed = "; ".join(f"{d.describe()} from {Path(o.target.manifest).name}" for o, d in found)
        title = f"{len(found)} Vulkan device(s): {', '.join(d.name for _, d in found)}"
        # each driver was loaded alone; an application loads them all, and one that
        # crashes or hangs takes the process with it before any device is used, one whose
        # vkCreateInstance runs out of host memory or whose vkEnumeratePhysicalDevices fails
        # takes the instance or every device with it (vkdoctor.children.loadtest.wrecks_all)
        version = _loader_version(ctx, run)
        wrecks = [(o, w) for o in drivers if (w := wrecks_all(o, version)) is not None]
        if not wrecks:
            return self.finding(Severity.OK, title, listed, evidence=evidence)
        names = ", ".join(Path(o.target.manifest).name for o, _ in wrecks)
        how = " or ".join(dict.fromkeys(WRECK_WORDS[w] for _, w in wrecks))
        said = (
            f"{listed}. Each driver was loaded alone here; an application loads every "
            f"driver, and {names} {how} first"
        )
        if facts.all_selected(ctx, "VKT001"):
            return self.info(
                f"{title}, but only with {names} out of the way",
                f"{said} (VKT001), so as things are no Vulkan application gets to these devices.",
                **evidence,
            )
        dies = {w for _, w in wrecks} <= {"crash", "timeout"}
        return self.fail(
            f"{title}, but every Vulkan application {'dies' if dies else 'fails'} in {names} first",
            f"{said}.",
            remedy=_disable_all(o for o, _ in wrecks),
            **evidence,
        )

    def _nothing_tested(
        self,
        ctx: Context,
        run: LoadTestRun,
        drivers: list[TargetOutcome],
        evidence: Mapping[str, object],
    ) -> Finding:
        """No driver was load-tested: the test could not start, or ran out of time first."""
        if run.spawn_error:
            # it never ran: that, not the time, is the news
            return self.warn(
                "The load test could not run",
                f"None of the {len(drivers)} driver(s) was load-tested: {run.spawn_error}. "
                "Nothing is known about their devices; the static checks above still hold.",
                remedy=Remedy(
                    text="Run vkdoctor with a Python this user can start again (the load test "
                    "runs it as a child), or see the reason above."
                ),
                **evidence,
            )
        # a preflight that could not confirm any device must not pass
        return self.fail(
            "No Vulkan device confirmed: the load test ran out of time before it tried a driver",
            f"None of the {len(drivers)} driver(s) was load-tested within the time bound "
            f"(--timeout {ctx.options.timeout:g} s): nothing is known about their devices.",
            remedy=Remedy(text="Run again with a larger --timeout (the default is 60 s)."),
            **evidence,
            out_of_time=True,
        )

    def _no_device(
        self,
        ctx: Context,
        run: LoadTestRun,
        drivers: list[TargetOutcome],
        evidence: Mapping[str, object],
    ) -> Finding:
        if not drivers:
            why = "the loader has no driver to try"
        else:
            why = "; ".join(classify(o, loader_version=run.loader_version).title for o in drivers)
        if run.loader_error:
            why = f"the Vulkan loader itself does not load ({run.loader_error}); " + why
        version = _loader_version(ctx, run)
        failing = [
            o
            for o in drivers
            if o.instance == "failed"
            or o.dlopen in ("failed", "crash", "timeout")
            or wrecks_all(o, version) is not None
        ]
        from vkdoctor.checks.drivers import hidden_drivers

        hidden = hidden_drivers(ctx)
        remedy = _options_fix(
            _ways_to_a_device(ctx, drivers, failing, hidden), hidden if not failing else None
        )
        if failing and facts.predicted(ctx, failing):
            # the library findings named each failing driver's cause, with its fix, before
            # anything was loaded: no device is their consequence, not a second cause
            return self.finding(
                Severity.INFO,
                "No Vulkan device from any driver, as the library findings predicted",
                f"No driver, loaded alone through the real loader, reports a device: {why}.",
                remedy=remedy,
                evidence=evidence,
            )
        return self.fail(
            "No Vulkan device from any driver",
            f"No driver, loaded alone through the real loader, reports a device: {why}.",
            remedy=remedy,
            **evidence,
        )


def _ways_to_a_device(
    ctx: Context,
    drivers: list[TargetOutcome],
    failing: list[TargetOutcome],
    hidden: Remedy | None,
) -> list[str]:
    """The ways to get a device when no driver gives one: fix the failing drivers, show the
    `hidden` ones, or install one (lavapipe for a CPU device)."""
    from vkdoctor.checks.drivers import install_command

    options = []
    if failing:
        names = ", ".join(Path(o.target.manifest).name for o in failing)
        verb = "fails" if len(failing) == 1 else "fail"
        options.append(f"fix why {names} {verb} (VKT001 and the library findings)")
    if hidden is not None:
        options.append(hidden.shown())
    if not any(Path(o.target.dlopen_name).name == "libvulkan_lvp.so" for o in drivers):
        # with lavapipe among the drivers, installing it again changes nothing
        options.append(
            "install a Vulkan driver for this machine, or lavapipe for a CPU device: "
            + install_command(ctx)
        )
    return options


def _disable_all(drivers: Iterable[TargetOutcome]) -> Remedy:
    """Keeps the loader away from these drivers."""
    names = ",".join(Path(o.target.manifest).name for o in drivers)
    return Remedy(commands=(f"export VK_LOADER_DRIVERS_DISABLE={shlex.quote(names)}",))


def _options_fix(options: list[str], first: Remedy | None) -> Remedy:
    """The options, joined by "; or ", as one fix: the commands of `first` (options[0]) lead it."""
    if first is not None and first.commands:
        rest = "".join(f"; or {o}" for o in options[1:])
        return Remedy(commands=first.commands, needs_root=first.needs_root, text=first.text + rest)
    return Remedy(text=_sentence("; or ".join(options)))


def _sentence(text: str) -> str:
    """`text` with a capital first letter, unless it starts with a name (VK_DRIVER_FILES=...)
    or a command (unset X)."""
    if text[:1].islower() and text.split(" ", 1)[0] not in ("unset", "export", "sudo"):
        return text[0].upper() + text[1:]
    return text


class LayersLoad(Check):
    """Each active implicit layer loads and lets vkCreateInstance succeed.

    Implicit layers are loaded into every Vulkan application. vkdoctor dlopens each one and then
    creates an instance with that layer alone on top of the drivers that already passed
    (VK_LOADER_LAYERS_ENABLE=<layer>). A layer that crashes, hangs or makes vkCreateInstance fail
    breaks every application; one whose library does not load is only skipped by the loader.
    """

    code = "VKT003"
    family = "load"
    title = "Implicit layers load for real"
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        run = facts.load_test(ctx)
        for outcome in run.outcomes:
            if outcome.target.kind == "layer":
                yield _verdict_finding(self, ctx, run, outcome)


class PredictionAgrees(Check):
    """The static analysis and the real load agree on which libraries load.

    vkdoctor predicts from the ELF files alone (the ld.so emulation) whether each driver and
    layer library can be loaded, then the load test really loads it. When the two disagree, the
    real result stands and the prediction's reason shows what the emulation missed: an
    environment difference (a preloaded library, a changed ld.so.cache) or a gap in vkdoctor.
    """

    code = "VKT004"
    family = "load"
    title = "Static prediction matches the real load"
    live_only = True

    def predictions(self, ctx: Context) -> Mapping[LoadTarget, Prediction]:
        """The ld.so emulation's verdict on each target (`facts.loadtest.predictions`)."""
        return facts.predictions(ctx)

    def run(self, ctx: Context) -> Iterable[Finding]:
        predicted = self.predictions(ctx)
        run = facts.load_test(ctx)
        found = list(disagreements(predicted, run))
        for d in found:
            yield self.finding(
                Severity.WARN if d.kind == "outcome" else Severity.INFO,
                f"{d.target.dlopen_name}: prediction and real load disagree"
                if d.kind == "outcome"
                else f"{d.target.dlopen_name}: predicted and real dlerror differ",
                d.message(),
                remedy=Remedy(
                    text="Trust the real load (VKT001/VKT003); please report the disagreement "
                    "with `vkdoctor check --json -` to the vkdoctor maintainers."
                ),
                evidence={
                    "manifest": d.target.manifest,
                    "library": d.target.dlopen_name,
                    "kind": d.kind,
                    "predicted_loadable": d.predicted.loadable,
                    "predicted_reason": d.predicted.reason,
                    "predicted_error": d.predicted.error,
                    "loaded": d.loaded,
                    "dlerror": d.dlerror,
                },
            )
        if not found:
            compared = sum(
                1 for o in run.outcomes if o.target in predicted and o.dlopen in ("ok", "failed")
            )
            if compared:
                yield self.ok("Prediction matches", f"{compared} load(s) went as predicted.")
            else:
                yield self.info(
                    "Nothing to compare", "The load test dlopened nothing the analysis predicted."
                )


CHECKS: tuple[type[Check], ...] = (DriversLoad, DeviceAvailable, LayersLoad, PredictionAgrees)
