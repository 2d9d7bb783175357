"""Facts: what the checks and the face share from one run, each computed once (`ctx.fact`).

This module names every run-wide fact a check may ask for: a check imports `vkdoctor.facts`
(never the module that computes a fact) and asks `facts.load_test(ctx)`. Each name imports its
module only when first asked (a check module's import costs nothing) and memoizes the computing
function itself through `ctx.fact`, so the face and the services that ask `ctx.fact(compute)`
share the same value. A new fact gets its name here; tests/test_architecture.py holds the checks
to it.

The modules behind the names:

- `vkdoctor.facts.loadtest`: the load test of this run, started early; the ld.so predictions.
- `vkdoctor.facts.probe`: the probe's result in this run's context.
- `vkdoctor.facts.overlay`: how `check` plans and proves the overlay.
- `vkdoctor.facts.selection`: which checks this run runs.
- `vkdoctor.facts.drivers`: the report's `drivers` list.
- `vkdoctor.facts.report`: the report of `check` and `drivers`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vkdoctor.children.loadtest import LoadTestRun, Prediction, TargetOutcome
    from vkdoctor.closures.versions import VersionFailure
    from vkdoctor.elf.ldcache import LdCache, LdConf
    from vkdoctor.elf.platform import LdsoPlatform
    from vkdoctor.elf.resolve import Resolution
    from vkdoctor.elf.symbols import Undefined
    from vkdoctor.facts.overlay import Outcome
    from vkdoctor.loader.icd import DriverScan
    from vkdoctor.loader.layerrecords import LayerScan
    from vkdoctor.loader.targets import LoadTarget
    from vkdoctor.loader.version import LoaderVersion
    from vkdoctor.machine.gpuchain import GpuMachine
    from vkdoctor.model.context import Context
    from vkdoctor.model.report_records import HostReport
    from vkdoctor.overlay.plan import Plan
    from vkdoctor.packages.facts import StackFacts
    from vkdoctor.packages.model import Inventory


# The host and the tree


def host_description(ctx: Context) -> HostReport:
    """The report's `host`: distribution, kernel, CPU, memory, Python, the Vulkan loader."""
    from vkdoctor.machine.host import collect

    return ctx.fact(collect)


def distro_ids(ctx: Context) -> list[str]:
    """ID and ID_LIKE of the root's os-release ("ubuntu", "debian")."""
    from vkdoctor.machine.host import distro_ids as compute

    return ctx.fact(compute)


def distro_family(ctx: Context) -> str | None:
    """ "debian", "arch" or "fedora" (the families vkdoctor names commands for), or None."""
    from vkdoctor.machine.host import distro_family as compute

    return ctx.fact(compute)


def nvidia_gpu_expected(ctx: Context) -> bool:
    """NVIDIA_VISIBLE_DEVICES names a device, or the NVIDIA kernel driver's nodes are there."""
    from vkdoctor.machine.host import nvidia_gpu_expected as compute

    return ctx.fact(compute)


def gpu_machine(ctx: Context) -> GpuMachine:
    """Each PCI GPU with its kernel driver, firmware, device nodes and Vulkan driver family."""
    from vkdoctor.machine.gpuchain import machine

    return ctx.fact(machine)


def ldso_platform(ctx: Context) -> LdsoPlatform:
    """ld.so's platform of the tree: machine, hwcaps, system directories."""
    from vkdoctor.elf.platform import ldso_platform as compute

    return ctx.fact(compute)


def ld_cache(ctx: Context) -> LdCache | None:
    """/etc/ld.so.cache of the tree, parsed; None when there is none."""
    from vkdoctor.elf.ldcache import load_cache

    return ctx.fact(load_cache)


def ld_conf(ctx: Context) -> LdConf:
    """/etc/ld.so.conf of the tree with what it includes."""
    from vkdoctor.elf.ldcache import load_conf

    return ctx.fact(load_conf)


def package_inventory(ctx: Context) -> Inventory:
    """The tree's package databases."""
    from vkdoctor.packages.detect import inventory

    return ctx.fact(inventory)


def package_stack(ctx: Context) -> StackFacts:
    """The Vulkan stack's files, their packages, and the sonames and versions they miss."""
    from vkdoctor.packages.stack import stack_facts

    return ctx.fact(stack_facts)


# The Vulkan loader's view


def loader_version(ctx: Context) -> LoaderVersion:
    """Which Vulkan loader the tree has (the emulation's rules are for it)."""
    from vkdoctor.loader.version import loader_version as compute

    return ctx.fact(compute)


def running_loader(ctx: Context) -> LoaderVersion:
    """The loader's version: as `loader_version` reads it from its file, else as the loader
    answered the load test (what the JSON-error rule follows where the file does not say)."""
    from vkdoctor.facts.loadtest import running_loader as compute

    return ctx.fact(compute)


def driver_scan(ctx: Context) -> DriverScan:
    """Every driver manifest the loader finds and what it does with each, short of dlopen."""
    from vkdoctor.loader import driver_scan as compute

    return compute(ctx)


def layer_scan(ctx: Context) -> LayerScan:
    """The implicit layer manifests the loader finds, and which are active."""
    from vkdoctor.loader import layer_scan as compute

    return compute(ctx)


def explicit_layers(ctx: Context) -> LayerScan:
    """The explicit layer manifests, and which the environment enables."""
    from vkdoctor.loader import explicit_layers as compute

    return compute(ctx)


def load_targets(ctx: Context) -> tuple[LoadTarget, ...]:
    """Every library the loader dlopens for a vkCreateInstance, in its order."""
    from vkdoctor.loader import load_targets as compute

    return ctx.fact(compute)


# What ld.so maps for each target (vkdoctor.closures)


def target_resolutions(ctx: Context) -> tuple[tuple[LoadTarget, Resolution], ...]:
    """Each load target with its resolution."""
    from vkdoctor.closures.targets import target_resolutions as compute

    return ctx.fact(compute)


def undefined_by_target(
    ctx: Context,
) -> tuple[tuple[LoadTarget, Resolution, tuple[Undefined, ...]], ...]:
    """Each resolvable target with the strong undefined symbols of its closure."""
    from vkdoctor.closures.targets import undefined_by_target as compute

    return ctx.fact(compute)


def version_problems(ctx: Context) -> tuple[VersionFailure, ...]:
    """The copies that win the search but lack a symbol version a library needs."""
    from vkdoctor.closures.versions import version_problems as compute

    return ctx.fact(compute)


# The load test, the probe, the overlay, the selection


def load_test(ctx: Context) -> LoadTestRun:
    """The load test of this run (started early, waited for here)."""
    from vkdoctor.facts.loadtest import load_test as compute

    return ctx.fact(compute)


def predictions(ctx: Context) -> Mapping[LoadTarget, Prediction]:
    """The ld.so emulation's verdict on each target, before anything is loaded."""
    from vkdoctor.facts.loadtest import predictions as compute

    return ctx.fact(compute)


def predicted(ctx: Context, failing: Iterable[TargetOutcome]) -> bool:
    """Whether the library findings (selected in this run) foresaw each of these failures."""
    from vkdoctor.facts.loadtest import predicted as ask

    return ask(ctx, failing)


def probe_result(ctx: Context) -> dict[str, Any]:
    """The probe's result in this run's context."""
    from vkdoctor.facts.probe import probe_result as compute

    return ctx.fact(compute)


def stopped_by_a_layer_manifest(ctx: Context) -> str | None:
    """The layer manifest that makes this loader fail every vkCreateInstance before it asks any
    driver, or None."""
    from vkdoctor.facts.probe import stopped_by_a_layer_manifest as compute

    return ctx.fact(compute)


def overlay_outcome(ctx: Context) -> Outcome:
    """The overlay planned (and built, when asked) in the user's environment."""
    from vkdoctor.facts.overlay import overlay_outcome as compute

    return ctx.fact(compute)


def planned_overlay(ctx: Context) -> Outcome | None:
    """The overlay's outcome when this run planned one already; None otherwise (nothing is
    planned here)."""
    from vkdoctor.facts.overlay import overlay_outcome as compute

    return ctx.known(compute)


def overlay_context(ctx: Context) -> Context:
    """The context that proves the overlay (ctx itself when it already runs under it)."""
    from vkdoctor.facts.overlay import overlay_context as compute

    return ctx.fact(compute)


def runs_under(ctx: Context, plan: Plan) -> bool:
    """Whether ctx's checks run under `plan`'s overlay."""
    from vkdoctor.facts.overlay import runs_under as ask

    return ask(ctx, plan)


def all_selected(ctx: Context, *codes: str) -> bool:
    """Whether every one of `codes` runs in this run (unknown counts as yes)."""
    from vkdoctor.facts.selection import all_selected as ask

    return ask(ctx, *codes)
