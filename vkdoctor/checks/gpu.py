"""VKT005: a GPU among the Vulkan devices. A GPU gate needs one; a GPU that is there but gives no
device is news even when lavapipe computes."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.children.loadtest import TargetOutcome, classify
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context

#: the load test's device types (probes/loadtest.py DEVICE_TYPES) that are a GPU
GPU_DEVICE_TYPES = ("discrete-gpu", "integrated-gpu", "virtual-gpu")
#: drivers that compute on the CPU
CPU_DRIVERS = ("libvulkan_lvp.so", "libvk_swiftshader.so")
#: drivers that only a GPU vendor's own package installs (Mesa installs its whole set everywhere)
VENDOR_DRIVERS = ("nvidia", "amdvlk")


def gpu_hardware(ctx: Context) -> list[str]:
    """What says this machine has a GPU for a Vulkan driver to open: its device nodes, or the
    NVIDIA kernel module."""
    dri = ctx.under("/dev/dri")
    signs = [f"/dev/dri/{p.name}" for p in sorted(dri.glob("renderD*"))] if dri.is_dir() else []
    signs += [n for n in ("/dev/nvidia0",) if ctx.under(n).exists()]
    if not signs and facts.nvidia_gpu_expected(ctx):
        signs.append("the NVIDIA kernel module (/dev/nvidiactl or /proc/driver/nvidia)")
    return signs


def _is_cpu_driver(outcome: TargetOutcome) -> bool:
    return Path(outcome.target.dlopen_name).name in CPU_DRIVERS


class GpuDevice(Check):
    """A Vulkan device that is a GPU: discrete, integrated or virtual, not a CPU rasterizer.

    From the load test: each driver, loaded alone through the real loader, lists its devices with
    their type. With `--gpu` (a GPU test gate) a machine where only lavapipe gives a device fails,
    and the finding names each GPU driver and why it gives none. Without `--gpu` the same is a
    warning when the machine shows a GPU (a /dev/dri/renderD* or /dev/nvidia0 node, NVIDIA's
    kernel module) or a GPU vendor's own driver is installed: compute works, but on the CPU.
    """

    code = "VKT005"
    family = "load"
    title = "A GPU device is available"
    live_only = True
    requires = frozenset({"VKI002"})
    #: under --gpu, the probe's "no GPU adapter" is this finding's consequence
    explains = ("VKR001",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return cause.evidence.get("gpu_required") is True and (
            symptom.evidence.get("status") == "no-adapter"
        )

    def run(self, ctx: Context) -> Iterable[Finding]:
        run = facts.load_test(ctx)
        drivers = [o for o in run.outcomes if o.target.kind == "driver"]
        found = [(o, d) for o in drivers for d in o.devices]
        gpus = [(o, d) for o, d in found if d.type in GPU_DEVICE_TYPES]
        required = ctx.options.gpu
        evidence: dict[str, Any] = {
            "gpu_required": required,
            "gpu_devices": [{"manifest": o.target.manifest, **d.as_dict()} for o, d in gpus],
        }
        if gpus:
            listed = "; ".join(
                f"{d.describe()} from {Path(o.target.manifest).name}" for o, d in gpus
            )
            yield self.ok(f"GPU: {', '.join(d.name for _, d in gpus)}", listed, **evidence)
            return
        if not found:
            # no device at all: VKT002 has the one failure
            if required and not facts.all_selected(ctx, "VKT002"):
                yield self.fail(
                    "No GPU: no Vulkan device at all",
                    "No driver, loaded alone through the real loader, reports a device.",
                    remedy=Remedy(
                        text="Run vkdoctor check --gpu without --select or --ignore: VKT002 and the "
                        "library findings say why."
                    ),
                    **evidence,
                )
                return
            yield self.info("No Vulkan device at all (VKT002)", **evidence)
            return
        hardware = gpu_hardware(ctx)
        gpu_drivers = [o for o in drivers if not _is_cpu_driver(o)]
        whys = [classify(o, loader_version=run.loader_version).title for o in gpu_drivers]
        evidence |= {
            "cpu_devices": [d.name for _, d in found],
            "gpu_drivers": [
                {"manifest": o.target.manifest, "library": o.target.dlopen_name, "why": why}
                for o, why in zip(gpu_drivers, whys, strict=True)
            ],
            "hardware": hardware,
        }
        cpus = ", ".join(dict.fromkeys(d.name for _, d in found))
        message = f"Only CPU devices: {cpus}. " + (
            f"The GPU drivers give none: {'; '.join(whys)}. "
            if whys
            else "No GPU driver is installed: the loader tries only CPU drivers. "
        )
        if hardware:
            message += f"This machine shows a GPU ({', '.join(hardware)})."
        else:
            message += (
                "There is no /dev/dri/renderD* and no /dev/nvidia0: this machine, or this "
                "container, has no GPU a driver can open."
            )
        vendor = [
            o for o in gpu_drivers if any(v in o.target.dlopen_name.lower() for v in VENDOR_DRIVERS)
        ]
        remedy = Remedy(text=_remedy(ctx, gpu_drivers, hardware))
        if required:
            yield self.fail(
                "No GPU: Vulkan compute would run on the CPU only",
                message,
                remedy=remedy,
                **evidence,
            )
        elif hardware or vendor:
            yield self.warn(
                "A GPU is here but gives no Vulkan device: compute runs on the CPU",
                message,
                remedy=remedy,
                **evidence,
            )
        else:
            yield self.finding(
                Severity.INFO, f"No GPU device: only {cpus}", message, evidence=evidence
            )


def _remedy(ctx: Context, gpu_drivers: list[TargetOutcome], hardware: list[str]) -> str:
    """The fix, in words."""
    if not hardware:
        return (
            "Run the GPU gate on a machine with a GPU; in a container, pass the GPU in "
            "(docker run --gpus all with the NVIDIA runtime, or --device /dev/dri for AMD and "
            "Intel)."
        )
    failing = [o for o in gpu_drivers if o.dlopen != "ok" or o.instance == "failed"]
    if failing:
        names = ", ".join(Path(o.target.manifest).name for o in failing)
        return f"Fix why {names} does not load (VKT001 and the library findings above)."
    if not gpu_drivers:
        from vkdoctor.checks.drivers import install_command

        return "Install the Vulkan driver for this GPU (Mesa's for AMD and Intel: " + (
            f"{install_command(ctx)}; NVIDIA's own for NVIDIA)."
        )
    return (
        "Check that this user can open the GPU's device node (VKC002) and that the installed "
        "driver is the one for this GPU (NVIDIA's for NVIDIA, Mesa's radv/anv for AMD/Intel)."
    )


CHECKS: tuple[type[Check], ...] = (GpuDevice,)
