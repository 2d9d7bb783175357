"""VKR: the compute probe. Seeing a driver is not computing with it: run RMSNorm and check it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vkdoctor import probe_report
from vkdoctor.checks.base import Check
from vkdoctor.context import Context
from vkdoctor.model import Finding, Severity
from vkdoctor.probe import ProbeRequest, run_probe
from vkdoctor.record import replace


def probe_result(ctx: Context) -> dict[str, Any]:
    """Run the probe once per Context, with the context's environment and options."""
    request = ProbeRequest(
        cpu=ctx.options.cpu, adapter=ctx.options.adapter, timeout=ctx.options.timeout
    )
    return run_probe(ctx.env, request)


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
        finding = probe_report.finding(ctx.fact(probe_result))
        if finding.severity is Severity.FAIL and finding.evidence.get("status") == "no-adapter":
            from vkdoctor.elf.resolve import loader_lookup
            from vkdoctor.loader import load_targets

            no_driver = not any(t.kind == "driver" for t in load_targets(ctx))
            if no_driver and loader_lookup(ctx).found is not None:
                # VKD001 names why no driver loads, and its fix; installing one may be wrong
                finding = replace(
                    finding,
                    message=finding.message + ". The Vulkan loader will load no driver (VKD001)",
                    remedy="Fix what VKD001 reports first: the loader loads no driver at all, so "
                    "wgpu can see no Vulkan adapter.",
                )
            from vkdoctor.checks.drivers import hidden_drivers

            hidden = hidden_drivers(ctx)
            if hidden is not None:
                finding = replace(
                    finding,
                    remedy=f"{hidden}. Otherwise: {finding.remedy}",
                )
            if loader_lookup(ctx).found is None:
                # no loader, no Vulkan adapter: VKH002 names the one package to install
                finding = replace(
                    finding,
                    message=finding.message + ". The Vulkan loader (libvulkan.so.1) is missing",
                    remedy="Install the Vulkan loader first (see VKH002: Debian/Ubuntu "
                    "`sudo apt install libvulkan1`, Arch `sudo pacman -S vulkan-icd-loader`, "
                    "Fedora `sudo dnf install vulkan-loader`), then run vkdoctor check again.",
                )
        yield finding


CHECKS: tuple[type[Check], ...] = (ComputeProbe,)
