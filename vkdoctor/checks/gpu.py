"""VKT005: a GPU among the Vulkan devices. A GPU gate needs one; a GPU that is there but gives no
device is news even when lavapipe computes. VKG001: for each GPU in the machine, the chain below
the Vulkan driver (PCI device, kernel driver, firmware, render node, Vulkan driver, wgpu)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.children.loadtest import TargetOutcome, classify
from vkdoctor.machine.gpuchain import (
    AMD,
    INTEL,
    MICROSOFT,
    NVIDIA,
    PCI_DEVICES,
    Gpu,
    GpuMachine,
    Node,
    drm_vulkan,
    linux,
    nvidia_before_gsp,
    tables,
)
from vkdoctor.machine.host import container_kind
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context
from vkdoctor.model.record import record, to_json

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
    requires = frozenset({"VKI002", "VKI004"})
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


#: the Vulkan driver -> the libraries that are it (hasvk was part of libvulkan_intel before Mesa 22.3)
VULKAN_LIBRARIES = {
    "RADV": ("libvulkan_radeon.so",),
    "ANV": ("libvulkan_intel.so",),
    "hasvk": ("libvulkan_intel_hasvk.so", "libvulkan_intel.so"),
    "NVIDIA": ("libGLX_nvidia.so", "libEGL_nvidia.so"),
    "NVK": ("libvulkan_nouveau.so",),
    "dzn": ("libvulkan_dzn.so",),
    "V3DV": ("libvulkan_broadcom.so",),
    "Turnip": ("libvulkan_freedreno.so",),
    "PanVK": ("libvulkan_panfrost.so",),
    "Honeykrisp": ("libvulkan_asahi.so",),
    "PowerVR": ("libvulkan_powervr_mesa.so",),
    "Venus": ("libvulkan_virtio.so",),
}
#: the variable that makes wgpu list an adapter that reports conformance version 0
WGPU_NONCOMPLIANT = "WGPU_ALLOW_UNDERLYING_NONCOMPLIANT_ADAPTER"
GRUB_STEP = (
    "add them to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, run update-grub (grub2-mkconfig "
    "-o /boot/grub2/grub.cfg on Fedora) and reboot"
)


@record(frozen=True, kw_only=True)
class Break:
    """The first link of a GPU's chain that does not hold: what it is and what repairs it."""

    link: str
    title: str
    why: str
    remedy: Remedy


def _vulkan_for(gpu: Gpu, m: GpuMachine) -> str | None:
    if gpu.vendor == NVIDIA:
        if gpu.driver is None and m.nvidia_userspace:
            return "NVIDIA"
        return {"nvidia": "NVIDIA", "nouveau": "NVK"}.get(gpu.driver or "")
    return gpu.vulkan


def _kernel_wanted(gpu: Gpu) -> tuple[str, ...]:
    if gpu.vulkan == "RADV":
        return ("amdgpu",)
    return tuple(d for d in gpu.claimed_by if d != "radeon")


def _kernel_params(gpu: Gpu) -> str:
    param = "si_support" if "si_support" in (gpu.family or "") else ""
    table = tables()["amd_chips"].get(gpu.chip or "", {})
    param = table.get("amdgpu_parameter") or param or "si_support"
    return f"radeon.{param}=0 amdgpu.{param}=1"


def _unblacklist(module: str, where: str) -> Remedy:
    """Where the blacklist lives is where it is removed: the boot loader's configuration for the
    kernel command line (/proc/cmdline is only what the boot loader passed), else the file."""
    if where.startswith("/proc/cmdline"):
        word = where.removeprefix("/proc/cmdline (").removesuffix(")")
        return Remedy(
            text=f"Remove {word} from the kernel command line in the boot loader's "
            "configuration: for GRUB, from GRUB_CMDLINE_LINUX_DEFAULT (and GRUB_CMDLINE_LINUX) "
            "in /etc/default/grub, then run update-grub (grub2-mkconfig -o /boot/grub2/grub.cfg "
            "on Fedora); for systemd-boot, from the options line of /boot/loader/entries/*.conf "
            "(or /etc/kernel/cmdline, then reinstall the kernel); then reboot."
        )
    return Remedy(
        text=f"Delete the blacklist of {module} at {where}, then rebuild the initramfs "
        "(update-initramfs -u on Debian and Ubuntu, dracut -f on Fedora, mkinitcpio -P on Arch) "
        "and reboot."
    )


def _refused_by_force_probe(m: GpuMachine, gpu: Gpu, loaded: list[str]) -> Break | None:
    """i915 and xe skip a device their force_probe parameter names as `!ID` (or `!*`), however
    well they support it (drivers/gpu/drm/i915/i915_pci.c, xe_pci.c: id_blocked)."""
    device = gpu.device.removeprefix("0x")
    blocked = [
        d
        for d in loaded
        if {f"!{device}", "!*"} & set(gpu.parameters.get(d, {}).get("force_probe", "").split(","))
    ]
    if not blocked:
        return None
    words = [
        w for w in m.cmdline.split() if w.startswith(tuple(f"{d}.force_probe=" for d in blocked))
    ]
    setting = (
        words[0]
        if words
        else f"{blocked[0]}.force_probe={gpu.parameters[blocked[0]]['force_probe']}"
    )
    others = [d for d in loaded if d not in blocked]
    then = (
        f"; {others[0]} is loaded too and did not take it either ({others[0]} takes some "
        f"platforms only when forced: {others[0]}.force_probe={device})"
        if others
        else ""
    )
    where = (
        "the kernel command line"
        if words
        else "an `options` line in /etc/modprobe.d (modprobe -c | grep force_probe shows where)"
    )
    return Break(
        link="kernel driver",
        title=f"No kernel driver: {setting} keeps {blocked[0]} off the GPU",
        why=f"{blocked[0]} is loaded with force_probe={gpu.parameters[blocked[0]]['force_probe']} "
        f"(set by {setting} on {where}), which tells it to skip {gpu.vendor[2:]}:{device}; no "
        "other driver took the GPU, so there is no render node and no Vulkan device.",
        remedy=Remedy(
            text=f"Remove {setting} from {where}"
            + (
                " (for GRUB, GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, then update-grub; "
                "grub2-mkconfig -o /boot/grub2/grub.cfg on Fedora) and reboot"
                if words
                else ", rebuild the initramfs and reboot"
            )
            + then
            + "."
        ),
    )


def _nvidia_not_loaded(m: GpuMachine, gpu: Gpu) -> Break:
    """NVIDIA's driver is installed (its libraries are) but its kernel module is not loaded, so
    nothing drives the GPU: NVIDIA's packages blacklist nouveau, and the nvidia module failed."""
    installed = ", ".join(m.nvidia_userspace)
    where = m.blacklisted.get("nouveau")
    also = f" nouveau is blacklisted ({where}), as NVIDIA's driver packages do." if where else ""
    return Break(
        link="kernel driver",
        title=f"No kernel driver: NVIDIA's driver {installed} is installed, its module is not "
        "loaded",
        why=f"NVIDIA's libraries {installed} are installed and no driver is bound to "
        f"{gpu.address}: the nvidia kernel module is not loaded.{also} The module fails when it "
        "was not built for this kernel, when Secure Boot refuses it, or when this driver no "
        'longer supports the GPU (the kernel log then says "supported through the NVIDIA '
        'NNN.xx Legacy drivers ... will ignore this GPU").',
        remedy=Remedy(
            commands=("modprobe nvidia",),
            needs_root=True,
            text='; its error, and sudo journalctl -k -b | grep NVRM, name the cause: "Module nvidia not found": reinstall the '
            "driver's kernel module package (dkms status shows why it did not build); \"Key was "
            'rejected by service": enroll its signing key (mokutil --import) or disable '
            'Secure Boot; "Legacy drivers": install that NNN.xx driver branch instead.',
        ),
    )


def _kernel_before(release: str, version: tuple[int, int]) -> bool:
    """Whether the kernel release ("6.1.0-18-amd64") is older than `version`; False when unknown."""
    parts = release.split("-", 1)[0].split(".")
    try:
        return (int(parts[0]), int(parts[1])) < version
    except (IndexError, ValueError):
        return False


def _force_probe(m: GpuMachine, gpu: Gpu) -> Break:
    """Linux before 6.2 lists DG2 (Arc) in i915 only behind force_probe."""
    device = gpu.device.removeprefix("0x")
    return Break(
        link="kernel driver",
        title=f"No kernel driver: i915 on Linux {m.release} takes {gpu.family} only when forced",
        why=f"Linux before 6.2 supports {gpu.family} ({gpu.vendor}:{gpu.device}) in i915 only "
        "behind force_probe, so i915 is loaded and leaves the GPU alone.",
        remedy=Remedy(
            text=f"Set the kernel parameter i915.force_probe={device}: {GRUB_STEP}; or install "
            "a kernel 6.2 or newer (on Debian 12 from bookworm-backports)."
        ),
    )


def _unbound(ctx: Context, m: GpuMachine, gpu: Gpu) -> Break:
    """Why no kernel driver took the GPU, the first reason that holds."""
    wanted = _kernel_wanted(gpu)
    name = "/".join(wanted) or "a kernel driver"
    if gpu.vendor == NVIDIA and m.nvidia_userspace and "nvidia" not in gpu.modules_loaded:
        return _nvidia_not_loaded(m, gpu)
    if m.nomodeset:
        return Break(
            link="kernel driver",
            title=f"No kernel driver: `nomodeset` keeps {name} off the GPU",
            why="/proc/cmdline has nomodeset: the kernel's GPU drivers do not bind, so there is "
            "no render node and no Vulkan device.",
            remedy=Remedy(text=f"Remove nomodeset from the kernel command line ({GRUB_STEP})."),
        )
    for module in wanted:
        where = m.blacklisted.get(module)
        if where:
            return Break(
                link="kernel driver",
                title=f"No kernel driver: {module} is blacklisted ({where})",
                why=f"{module} serves this GPU, and {where} blacklists it.",
                remedy=_unblacklist(module, where),
            )
    params = gpu.parameters.get("amdgpu", {})
    key = (tables()["amd_chips"].get(gpu.chip or "", {}) or {}).get("amdgpu_parameter")
    if key and "amdgpu" in gpu.modules_loaded and params.get(key, "0") == "0":
        return Break(
            link="kernel driver",
            title=f"No kernel driver: amdgpu leaves {gpu.family} alone ({key}=0)",
            why=f"amdgpu is loaded with {key}={params.get(key, 'unset')}, so it does not take "
            "this chip; RADV needs amdgpu.",
            remedy=Remedy(text=f"Set the kernel parameters {_kernel_params(gpu)}: {GRUB_STEP}."),
        )
    fw = gpu.firmware
    if fw.get("complete") is False and any(w in gpu.modules_loaded for w in wanted):
        return _no_firmware(ctx, gpu, name)
    loaded = [w for w in wanted if w in gpu.modules_loaded]
    forced = gpu.parameters.get("i915", {}).get("force_probe", "")
    if (
        gpu.chip == "dg2"
        and "i915" in loaded
        and _kernel_before(m.release, (6, 2))
        and gpu.device.removeprefix("0x") not in forced.split(",")
        and forced != "*"
    ):
        return _force_probe(m, gpu)
    refused = _refused_by_force_probe(m, gpu, loaded)
    if refused is not None:
        return refused
    if loaded:
        return Break(
            link="kernel driver",
            title=f"No kernel driver: {loaded[0]} is loaded but did not take the GPU",
            why=f"{loaded[0]} is loaded and no driver is bound to {gpu.address}; the kernel log "
            "says why.",
            remedy=Remedy(commands=(f"journalctl -k -b | grep -i {loaded[0]}",), needs_root=True),
        )
    return Break(
        link="kernel driver",
        title=f"No kernel driver: {name} is not loaded",
        why=f"No driver is bound to {gpu.address} and {name} is not loaded.",
        remedy=Remedy(
            commands=(f"modprobe {wanted[0]}",) if wanted else (),
            needs_root=True,
            text="" if wanted else "Install and load the GPU vendor's kernel driver.",
        ),
    )


#: the package that ships a GPU's firmware: (vendor, distribution family) -> package. Debian's
#: NVIDIA GSP firmware (nvidia/<chip>/gsp/) is in firmware-nvidia-graphics: trixie and newer,
#: and bookworm-backports (bookworm's own firmware-misc-nonfree 20230210 predates it)
FIRMWARE_PACKAGES = {
    (AMD, "debian"): "firmware-amd-graphics",
    (NVIDIA, "debian"): "firmware-nvidia-graphics",
    (AMD, "fedora"): "amd-gpu-firmware",
}
INSTALL = {"debian": "apt-get install", "fedora": "dnf install", "arch": "pacman -S"}


def _firmware_remedy(ctx: Context, gpu: Gpu) -> Remedy:
    """The distribution's firmware package for this GPU (Ubuntu's is linux-firmware)."""
    family = facts.distro_family(ctx)
    vendor = AMD if gpu.vendor == AMD else NVIDIA
    debian = FIRMWARE_PACKAGES[(vendor, "debian")]
    if family is None:
        fedora = FIRMWARE_PACKAGES.get((vendor, "fedora"), "linux-firmware")
        return Remedy(
            text="This root has no /etc/os-release vkdoctor knows, so it cannot tell the "
            f"distribution. Install its firmware package: on Debian {debian} (from the "
            f"non-free-firmware component), on Ubuntu and Arch linux-firmware, on Fedora "
            f"{fedora}; then reboot."
        )
    ubuntu = "ubuntu" in facts.distro_ids(ctx)
    package = (
        "linux-firmware" if ubuntu else FIRMWARE_PACKAGES.get((vendor, family), "linux-firmware")
    )
    where = "the non-free-firmware component"
    if vendor == NVIDIA:
        where += "; on Debian 12 add -t bookworm-backports"
    return Remedy(
        commands=(f"{INSTALL[family]} {package}",),
        needs_root=True,
        text=f"(from {where}), then reboot" if package == debian else ", then reboot",
    )


def _no_firmware(ctx: Context, gpu: Gpu, name: str) -> Break:
    pattern = gpu.firmware.get("pattern")
    why = (
        f"nouveau drives {gpu.address}, but NVK needs the GSP firmware of this {gpu.chip} chip, "
        f"and there is no {pattern} (nouveau of {linux()} requests "
        + " or ".join(f"gsp-{v}.bin" for v in gpu.firmware.get("versions", ()))
        + "): nouveau runs without GSP and NVK has no device."
        if gpu.driver == "nouveau"
        else f"{name} is loaded but cannot start the GPU without the firmware it loads first "
        f"({pattern}), and it is not all there."
        + (
            f" amdgpu finds this {gpu.chip} chip by IP discovery, names its firmware after the "
            "chip's GC, SDMA and PSP IP versions, and does not start without these files."
            if gpu.firmware.get("ip_chip")
            else ""
        )
    )
    return Break(
        link="firmware",
        title=f"Firmware missing: {pattern}",
        why=why,
        remedy=_firmware_remedy(ctx, gpu),
    )


def _firmware_unknown(gpu: Gpu) -> Break:
    """nouveau drives a GPU the chip tables cannot place and NVK found no device for it."""
    return Break(
        link="firmware",
        title=f"Cannot tell the GSP firmware nouveau needs for {gpu.vendor}:{gpu.device}",
        why=f"{gpu.firmware['unknown']}. NVK needs nouveau to run this GPU on its GSP firmware, "
        "and no Vulkan device was found for it.",
        remedy=Remedy(
            commands=("journalctl -k -b | grep -i -e nouveau -e firmware",),
            needs_root=True,
            text="(the kernel log names the firmware nouveau could not load); install a newer "
            "linux-firmware, or NVIDIA's driver, and run a vkdoctor whose tables know the GPU.",
        ),
    )


def _kernel(ctx: Context, m: GpuMachine, gpu: Gpu) -> Break | None:
    if gpu.driver is None:
        return _unbound(ctx, m, gpu)
    if gpu.driver == "radeon" and gpu.vulkan == "RADV":
        return Break(
            link="kernel driver",
            title=f"The {gpu.family} GPU is on the radeon kernel driver: RADV needs amdgpu",
            why=f"{gpu.address} ({gpu.chip}) is bound to radeon, as Linux does by default for "
            "this generation; Mesa's RADV opens only amdgpu devices.",
            remedy=Remedy(text=f"Set the kernel parameters {_kernel_params(gpu)}: {GRUB_STEP}."),
        )
    if gpu.driver == "nouveau" and gpu.firmware.get("complete") is False:
        return _no_firmware(ctx, gpu, "nouveau")
    if gpu.driver == "nvidia":
        return _nvidia_mismatch(ctx, m) or _open_module_too_new(m, gpu)
    if gpu.driver in ("vfio-pci", "pci-stub"):
        return Break(
            link="kernel driver",
            title=f"The GPU is held by {gpu.driver} for a virtual machine",
            why=f"{gpu.address} is bound to {gpu.driver}, not to a GPU driver.",
            remedy=Remedy(text="Give the GPU back to its driver (remove it from vfio-pci.ids)."),
        )
    return None


def _nvidia_mismatch(ctx: Context, m: GpuMachine) -> Break | None:
    """NVIDIA's libraries work only with a kernel module of their own version: with another,
    the kernel logs "NVRM: API mismatch" and NVIDIA's Vulkan driver gives no device."""
    module, libraries = m.nvidia_module, m.nvidia_userspace
    if not module or not libraries or module in libraries:
        return None
    installed = ", ".join(libraries)
    kind = container_kind(ctx)
    if kind:
        remedy = Remedy(
            text=f"This {kind} container's image carries NVIDIA's libraries {installed}; the "
            f"host runs {module}. Remove NVIDIA's driver packages from the image and let the "
            "NVIDIA container toolkit mount the host's (docker run --gpus all -e "
            "NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility)."
        )
    else:
        remedy = Remedy(
            text=f"Reboot: the driver was upgraded to {installed} while the {module} module "
            "stayed loaded. If /sys/module/nvidia/version still shows "
            f"{module} after the reboot, the module for this kernel was not rebuilt: "
            "`modinfo -F version nvidia` shows the one on disk and `dkms status` why; reinstall "
            "the driver's kernel module package of the same version."
        )
    return Break(
        link="kernel driver",
        title=f"NVIDIA's kernel module is {module} but its libraries are {installed}",
        why=f"/sys/module/nvidia/version is {module}, and the libraries of NVIDIA's Vulkan "
        f"driver (libGLX_nvidia.so, libnvidia-glcore.so) are {installed}: they refuse a module "
        'of another version (the kernel log says "NVRM: API mismatch"), so NVIDIA\'s Vulkan '
        'driver gives no device (nvidia-smi: "Driver/library version mismatch").',
        remedy=remedy,
    )


def _open_module_too_new(m: GpuMachine, gpu: Gpu) -> Break | None:
    """NVIDIA's open kernel module drives only GPUs with a GSP (Turing and newer): it binds an
    older one and fails to start it ("not supported by open nvidia.ko because it does not
    include the required GPU System Processor (GSP)"), and Vulkan gets no device."""
    if "Open Kernel Module" not in (m.nvidia_proc_version or "") or not nvidia_before_gsp(
        gpu.device
    ):
        return None
    version = m.nvidia_module or "of this driver"
    return Break(
        link="kernel driver",
        title=f"NVIDIA's open kernel module cannot run this GPU ({gpu.device[2:]}, older than "
        "Turing)",
        why=f"{gpu.address} ({gpu.vendor[2:]}:{gpu.device[2:]}) is older than Turing: it has no "
        "GPU System Processor (GSP), which NVIDIA's open kernel module needs. The loaded module "
        f'{m.nvidia_module or ""} is the open one (/proc/driver/nvidia/version: "Open Kernel '
        'Module"); it binds the GPU and fails to start it '
        '(the kernel log: "not supported by open nvidia.ko", "RmInitAdapter failed"), so '
        "nvidia-smi finds no device and neither does Vulkan.",
        remedy=Remedy(
            text=f"Install NVIDIA's proprietary kernel module {version} instead of the open "
            "one (Debian: nvidia-kernel-dkms, not nvidia-open-kernel-dkms; Ubuntu: "
            "nvidia-driver-NNN, not nvidia-driver-NNN-open; Arch: nvidia-dkms, not "
            "nvidia-open-dkms; RPM Fusion/negativo17: the kernel, not kernel-open, flavour), "
            "then reboot; if this driver branch no longer ships it for the GPU, its legacy "
            "branch."
        ),
    )


def _node_break(ctx: Context, m: GpuMachine, gpu: Gpu) -> Break | None:
    if not gpu.nodes:
        return None
    bad = next((n for n in gpu.nodes if not n.exists or not n.usable), None)
    if bad is None:
        return None
    kind = container_kind(ctx)
    if not bad.exists:
        where = f"this {kind} container" if kind else "this machine"
        flag = "--device /dev/dri" if not m.dev_dri else f"--device {bad.path}"
        return Break(
            link="device node",
            title=f"No {bad.path}" + (" (no /dev/dri at all)" if not m.dev_dri else ""),
            why=f"The kernel made {bad.path.rsplit('/', 1)[1]} for {gpu.address}, but {where} "
            "has no such node: the Vulkan driver has nothing to open.",
            remedy=Remedy(
                text=f"Start the container with {flag} (docker or podman run)."
                if kind
                else "Check udev: udevadm trigger --subsystem-match=drm."
            ),
        )
    return _denied(ctx, bad, kind)


def _denied(ctx: Context, bad: Node, kind: str | None) -> Break:
    shown = f"{bad.path} ({bad.mode} {bad.owner or bad.uid}:{bad.group or bad.gid})"
    user = ctx.env.get("USER") or ctx.env.get("LOGNAME") or "$USER"
    if bad.why == "gid-without-name":
        return Break(
            link="device node",
            title=f"This user cannot open {bad.path}: group {bad.gid} has no name here",
            why=f"{shown}: gid {bad.gid} is the host's render group, and "
            + (f"this {kind} container" if kind else "this system")
            + " has no group of that number, so this user is not in it.",
            remedy=Remedy(
                text=f"Start the container with --group-add {bad.gid} (docker or "
                "podman run; podman can also keep the host's with --group-add keep-groups)."
            ),
        )
    if bad.why == "unmapped":
        return Break(
            link="device node",
            title=f"This user cannot open {bad.path}: its group is the host's, unmapped here",
            why=f"{shown}: this "
            + (f"{kind} container" if kind else "process")
            + " runs in a user namespace (/proc/self/uid_map) that does not map the host's "
            f"group of the node, so it shows as {bad.gid}; no group inside can give access.",
            remedy=Remedy(
                text="Run the rootless container as a host user in the node's group (on the "
                "host: sudo usermod -aG render $USER, log in again) and start it with "
                "--device /dev/dri --group-add keep-groups (podman with the crun runtime), "
                "which keeps the host groups for the container's processes."
            ),
        )
    if bad.why == "root-only":
        return Break(
            link="device node",
            title=f"{bad.path} is 0600 root:root: only root can open it",
            why=f"{shown}: udev gave it no render group (systemd does so for a node outside a "
            "seat).",
            remedy=Remedy(
                commands=(
                    'sh -c \'echo SUBSYSTEM==\\"drm\\", KERNEL==\\"renderD*\\", GROUP=\\"render\\", '
                    'MODE=\\"0660\\" > /etc/udev/rules.d/70-render.rules\'',
                    "udevadm control --reload",
                    "udevadm trigger --subsystem-match=drm",
                    f"usermod -aG render {user}",
                ),
                needs_root=True,
                text="then log in again",
            ),
        )
    return Break(
        link="device node",
        title=f"This user cannot open {bad.path}: not in group {bad.group}",
        why=f"{shown}"
        + (f", ACL {', '.join(bad.acl)}" if bad.acl else "")
        + f": this user is not {bad.owner or bad.uid} and not in {bad.group}.",
        remedy=Remedy(
            commands=(f"usermod -aG {bad.group} {user}",), needs_root=True, text="then log in again"
        ),
    )


def _manifests_for(ctx: Context, vulkan: str) -> list[str]:
    libs = VULKAN_LIBRARIES.get(vulkan, ())
    return [
        d.manifest
        for d in facts.driver_scan(ctx).drivers
        if any(Path(d.library_path or "").name.startswith(lib) for lib in libs)
    ]


#: Arch packages each of Mesa's Vulkan drivers alone (vulkan-swrast is lavapipe, the CPU's);
#: Debian, Ubuntu and Fedora ship them together in mesa-vulkan-drivers
ARCH_VULKAN = {
    "RADV": "vulkan-radeon",
    "ANV": "vulkan-intel",
    "hasvk": "vulkan-intel",
    "NVK": "vulkan-nouveau",
    "V3DV": "vulkan-broadcom",
    "Turnip": "vulkan-freedreno",
    "PanVK": "vulkan-panfrost",
    "Honeykrisp": "vulkan-asahi",
    "Venus": "vulkan-virtio",
}


def _install_vulkan(ctx: Context, vulkan: str) -> Remedy:
    """The package of Mesa's Vulkan driver `vulkan` in this root's distribution."""
    from vkdoctor.packages import commands

    arch = ARCH_VULKAN.get(vulkan, "its vulkan-* package")
    manager = commands.NATIVE.get(facts.distro_family(ctx) or "")
    if manager is None:
        return Remedy(
            text="This root has no /etc/os-release vkdoctor knows, so it cannot tell the "
            f"distribution. Install {vulkan}'s package: on Debian, Ubuntu and Fedora "
            f"mesa-vulkan-drivers, on Arch {arch}."
        )
    package = arch if manager == "pacman" else "mesa-vulkan-drivers"
    library = VULKAN_LIBRARIES[vulkan][0]
    return Remedy(
        commands=(commands.TABLE[manager].install.format(names=package),),
        needs_root=True,
        # distributions leave Mesa's SoC and virtio drivers out of some builds
        text=f"(it must ship {library}; where it does not, this release's Mesa lacks {vulkan} "
        "and a newer release or Mesa is needed)"
        if vulkan in {v for _, v in drm_vulkan().values()}
        else "",
    )


def _vulkan_break(ctx: Context, gpu: Gpu, vulkan: str | None) -> Break | None:
    if vulkan is None:
        if gpu.family is None:
            return None
        return Break(
            link="Vulkan driver",
            title=f"No Vulkan driver supports {gpu.vendor_name} {gpu.family}",
            why=f"{gpu.vendor}:{gpu.device} is {gpu.family} ({gpu.chip}): no Vulkan driver serves "
            "this generation (vkdoctor's GPU tables).",
            remedy=Remedy(
                text="Compute on another GPU, or on the CPU with lavapipe "
                "(--cpu); this GPU will not run Vulkan."
            ),
        )
    if _manifests_for(ctx, vulkan):
        return None
    if vulkan == "NVIDIA" and gpu.driver == "nvidia" and container_kind(ctx):
        return _no_graphics_capability(ctx, gpu)
    fix = (
        _install_vulkan(ctx, vulkan)
        if vulkan not in ("NVIDIA", "dzn")
        else Remedy(
            text="Install NVIDIA's driver with its Vulkan part (libnvidia-gl / nvidia-utils)."
            if vulkan == "NVIDIA"
            else "Install a Mesa built with -Dvulkan-drivers=microsoft-experimental (dzn)."
        )
    )
    return Break(
        link="Vulkan driver",
        title=f"{vulkan}, the Vulkan driver for {gpu.family or gpu.vendor_name}, is not installed",
        why=f"No manifest the loader reads names {' or '.join(VULKAN_LIBRARIES[vulkan])}.",
        remedy=fix,
    )


def _no_graphics_capability(ctx: Context, gpu: Gpu) -> Break:
    """NVIDIA's GPU is in the container but its Vulkan driver is not: the NVIDIA container
    toolkit mounts nvidia_icd.json and libGLX_nvidia only for the `graphics` capability, and the
    libraries must be the host driver's own version, so nothing is installed in the image."""
    caps = ctx.env.get("NVIDIA_DRIVER_CAPABILITIES")
    said = (
        f"NVIDIA_DRIVER_CAPABILITIES is {caps!r} here"
        if caps is not None
        else "NVIDIA_DRIVER_CAPABILITIES is not set here (the toolkit's default is compute,utility)"
    )
    return Break(
        link="Vulkan driver",
        title="The container has NVIDIA's GPU but not its Vulkan driver (no graphics capability)",
        why=f"{gpu.address} is on the host's nvidia module and its device nodes are here, but no "
        "manifest the loader reads names libGLX_nvidia.so or libEGL_nvidia.so. The NVIDIA "
        "container toolkit mounts NVIDIA's Vulkan driver (nvidia_icd.json, libGLX_nvidia, "
        f"libnvidia-glcore, ...) only when the graphics capability is asked for; {said}.",
        remedy=Remedy(
            text="Start the container with the graphics capability: docker run --gpus all -e "
            "NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility (or =all; in Kubernetes the same "
            "variable in the pod's env). Do not install NVIDIA's libraries in the image: they "
            "must be the host driver's version."
        ),
    )


#: the first Mesa whose ANV opens GPUs on the xe kernel driver as built by distributions: Xe KMD
#: support became a default of the build in Mesa 24.1 (mesa!20418, merged March 2024, with
#: Linux 6.8's xe); before it only a build with -Dintel-xe-kmd=enabled had it
ANV_XE_SINCE = (24, 1)


def _xe_break(ctx: Context, gpu: Gpu, vulkan: str | None) -> Break | None:
    """An Intel GPU on the xe kernel driver under a Mesa whose ANV does not open xe devices."""
    if gpu.driver != "xe" or vulkan != "ANV":
        return None
    from vkdoctor.packages.owner import owner

    libraries = [
        d.library_path
        for d in facts.driver_scan(ctx).drivers
        if d.library_path and Path(d.library_path).name.startswith("libvulkan_intel.")
    ]
    label = owner(ctx, libraries[0]) if libraries else None
    version = _upstream(label.rsplit(" ", 1)[-1]) if label else None
    if version is None or version >= ANV_XE_SINCE:
        return None
    device = gpu.device.removeprefix("0x")
    return Break(
        link="Vulkan driver",
        title=f"ANV from {label} does not drive GPUs on the xe kernel driver",
        why=f"{gpu.address} is bound to xe; ANV opens xe devices from Mesa "
        f"{'.'.join(map(str, ANV_XE_SINCE))} on (built with Xe support by default); an older "
        "one lists no Vulkan device for it unless it was built with -Dintel-xe-kmd=enabled.",
        remedy=Remedy(
            text=f"Upgrade Mesa to {'.'.join(map(str, ANV_XE_SINCE))} or newer, or let i915 take "
            f"the GPU: kernel parameters i915.force_probe={device} xe.force_probe=!{device}."
        ),
    )


def _upstream(version: str) -> tuple[int, int] | None:
    """(major, minor) of a package version: 1:23.0.4-0ubuntu1 -> (23, 0)."""
    import re

    m = re.match(r"(?:\d+:)?(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _found(ctx: Context, gpu: Gpu) -> list[tuple[TargetOutcome, Any]]:
    """(driver, device) pairs of the load test that are this GPU, by PCI vendor and device ID."""
    if not ctx.live:
        return []
    try:
        outcomes = facts.load_test(ctx).outcomes
    except Exception:  # the VKT checks report a broken load test
        return []
    if gpu.driver in drm_vulkan():
        # an SoC GPU has no PCI ID, and Venus reports the host's GPU: the driver's own devices
        libraries = VULKAN_LIBRARIES.get(gpu.vulkan or "", ())
        return [
            (o, d)
            for o in outcomes
            if o.target.kind == "driver" and Path(o.target.dlopen_name).name.startswith(libraries)
            for d in o.devices
        ]
    return [
        (o, d)
        for o in outcomes
        if o.target.kind == "driver"
        for d in o.devices
        if d.vendor_id.lower() == gpu.vendor and d.device_id.lower() == gpu.device
    ]


def _loaded(ctx: Context, vulkan: str) -> bool:
    """Whether the load test opened the Vulkan driver and created an instance with it."""
    libraries = VULKAN_LIBRARIES[vulkan]
    return any(
        o.dlopen == "ok" and o.instance == "ok"
        for o in facts.load_test(ctx).outcomes
        if Path(o.target.dlopen_name).name.startswith(libraries)
    )


def _device_break(ctx: Context, gpu: Gpu, vulkan: str) -> Break | None:
    if not ctx.live or _found(ctx, gpu):
        return None
    if vulkan == "Venus" and _loaded(ctx, "Venus"):
        return Break(
            link="Vulkan device",
            title="Venus lists no device: the VM's host does not offer Vulkan over virtio-gpu",
            why="This is a virtual machine whose GPU is virtio-gpu; Mesa's Venus driver gives a "
            "Vulkan device only when the host's virtio-gpu offers the Venus capability set "
            "(QEMU's venus=on with blob=on and hostmem, virglrenderer built with Venus). "
            "Without it only the CPU (llvmpipe, lavapipe) computes.",
            remedy=Remedy(
                text="On the host, start the VM with -device "
                "virtio-gpu-gl-pci,venus=on,blob=on,hostmem=4G (QEMU 9.2 or newer, "
                "virglrenderer 1.0 or newer with Venus, a host GPU with Vulkan), or pass a GPU "
                "through with vfio-pci."
            ),
        )
    return Break(
        link="Vulkan device",
        title=f"{vulkan} loads but lists no device {gpu.vendor}:{gpu.device}",
        why="Everything below the Vulkan driver holds, and the load test (each driver alone "
        "through the real loader) found no device with this PCI ID.",
        remedy=Remedy(text="VKT001 and the library findings say why the driver gives no device."),
    )


def _wgpu_break(ctx: Context, gpu_name: str, vulkan: str, conformant: bool | None) -> Break | None:
    if conformant is not False:
        return None
    if ctx.env.get(WGPU_NONCOMPLIANT, "0").strip().lower() not in ("", "0", "false"):
        # set: programs that build wgpu's flags from the environment list the adapter
        return None
    return Break(
        link="wgpu",
        title=f"wgpu hides {gpu_name}: {vulkan} is not conformant for it",
        why=f"{vulkan} reports conformance version 0 for this GPU, and wgpu hides such adapters "
        '("Adapter is not Vulkan compliant, hiding adapter"): wgpu, burn and cubecl fall '
        "back to the CPU.",
        remedy=Remedy(
            commands=(f"export {WGPU_NONCOMPLIANT}=1",),
            text="(read only by programs that build wgpu's instance flags from the environment, "
            "InstanceFlags::from_env / with_env)",
        ),
    )


def _chain_text(ctx: Context, gpu: Gpu, vulkan: str | None, devices: list[str]) -> str:
    key = tables()["amd_chips"].get(gpu.chip or "", {}).get("amdgpu_parameter")
    node = gpu.nodes[-1] if gpu.nodes else None
    where = (
        f"PCI {gpu.address} {gpu.vendor.removeprefix('0x') or '?'}:"
        f"{gpu.device.removeprefix('0x') or '?'} {gpu.vendor_name}"
        if gpu.vendor
        else f"platform device {gpu.address}"
    )
    parts = [
        f"{where} {gpu.family or gpu.model or 'GPU'}"
        + (f" ({gpu.chip})" if gpu.chip and not gpu.model else ""),
        f"kernel {gpu.driver or 'none'}"
        + "".join(f" {m}.{key}={p[key]}" for m, p in gpu.parameters.items() if key and key in p),
        (
            f"{node.path} {node.mode} {node.owner or node.uid}:{node.group or node.gid}"
            + (" (usable)" if node.usable else " (refused)")
        )
        if node and node.exists
        else "no device node",
        f"Vulkan {vulkan or 'none'}" + ("" if gpu.conformant is not False else " (not conformant)"),
    ]
    if "unknown" in gpu.firmware:
        parts.insert(2, "firmware not checked")
    parts += [
        f"device {', '.join(devices)}"
        if devices
        else ("no Vulkan device seen" if ctx.live else "device not tested (--root)"),
    ]
    return " -> ".join(parts)


def _probe_view(ctx: Context, gpu: Gpu, found: list[tuple[Any, Any]]) -> str | None:
    """What the compute probe's wgpu made of this GPU's Vulkan device: the adapter it listed
    (and whether the probe ran on it), hid (and why), or did not list; None when no probe
    runs in this check or no Vulkan device is this GPU's."""
    if not found or not ctx.live or not ctx.options.probe:
        return None
    if not facts.all_selected(ctx, "VKR001"):
        return None
    probe = facts.probe_result(ctx)
    ids = (_hex(gpu.vendor), _hex(gpu.device))
    used = (probe.get("adapter") or {}).get("name")
    for a in probe.get("adapters") or []:
        if a.get("backend") == "Vulkan" and (a.get("vendor_id"), a.get("device_id")) == ids:
            ran = " (the probe ran on it)" if a.get("name") == used else ""
            return f"wgpu adapter {a.get('name')}{ran}"
    names = {d.name for _, d in found}
    for h in probe.get("hidden_adapters") or []:
        if h.get("name") in names:
            return f"hidden by wgpu ({h.get('reason')})"
    return "not listed by wgpu" if probe.get("adapters") else None


def _hex(text: str) -> int | None:
    try:
        return int(text, 16)
    except ValueError:
        return None


def _unread_break(gpu: Gpu) -> Break | None:
    """The device's own sysfs files could not be read: what it is, and so its chain, is unknown."""
    if not gpu.unreadable:
        return None
    return Break(
        link="sysfs",
        title=f"Cannot read {', '.join(gpu.unreadable)} of the GPU at {gpu.address}",
        why=f"The kernel keeps {gpu.address}'s vendor, device and class as short text files in "
        f"{PCI_DEVICES}/{gpu.address}; without them vkdoctor cannot tell which GPU this is or "
        "which drivers serve it, so its chain is not proven.",
        remedy=Remedy(
            text="Check the GPU on the machine itself, or copy its sysfs files into the snapshot "
            "as regular files (cp -L)."
        ),
    )


def _first_break(
    ctx: Context, m: GpuMachine, gpu: Gpu, vulkan: str | None, found: list[tuple[Any, Any]]
) -> Break | None:
    """The first link of the chain that does not hold, from the kernel driver up."""
    unknown = gpu.driver == "nouveau" and "unknown" in gpu.firmware and not found
    cause = (
        _kernel(ctx, m, gpu)
        or (_firmware_unknown(gpu) if unknown else None)
        or _node_break(ctx, m, gpu)
        or _vulkan_break(ctx, gpu, vulkan)
        # a Mesa built with Xe KMD support before it was the default does list the device
        or (None if found else _xe_break(ctx, gpu, vulkan))
    )
    if cause is not None or vulkan is None:
        return cause
    name = found[0][1].name if found else gpu.family or "this GPU"
    return _device_break(ctx, gpu, vulkan) or _wgpu_break(ctx, name, vulkan, gpu.conformant)


class GpuChainCheck(Check):
    """Each GPU in the machine and the chain below its Vulkan device.

    For every PCI display or 3D controller, every GPU off the PCI bus with a render node (an
    SoC's: v3d, msm, panfrost, asahi; known by its DRM driver, as virtio-gpu is), and WSL2's
    /dev/dxg: the PCI IDs and the family
    vkdoctor's tables (vkdoctor/data/gpu_ids.json, from the Linux kernel's ID lists and Mesa's
    support rules; gpu_chips.json, generated from pci.ids and the kernel source, for NVIDIA
    Turing-and-newer and AMD RDNA 3+ chips) give it; the kernel driver bound to it and the module parameters that decide
    it (radeon/amdgpu si_support, cik_support); the firmware amdgpu or nouveau loads for it
    (unknown for a GPU newer than the tables, and said so); its render node,
    its mode, owner, group and ACL, and whether this user may open it; the Vulkan driver that
    serves the generation (RADV, ANV, hasvk, NVIDIA, NVK, dzn), whether its manifest is installed,
    whether the load test found the device, and what the compute probe's wgpu made of it (the
    adapter it listed and ran on, or hid and why); and whether the driver is conformant for it,
    since wgpu hides adapters that are not. The first link that does not hold is the cause, with the
    fix for that link: a failure under `--gpu`, a warning without. Reads sysfs, /dev, /proc and
    /etc through the root, so `--root` checks a snapshot of another machine.
    """

    code = "VKG001"
    family = "hardware"
    title = "The chain from each GPU to its Vulkan device"
    #: under --gpu, "no GPU device" (VKT005) and "node not accessible" (VKC002) are what a
    #: broken link below them leads to
    explains = ("VKT005", "VKC002")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        link = cause.evidence.get("broken_link")
        if symptom.code == "VKC002":
            return link == "device node"
        return link not in (None, "wgpu")

    def run(self, ctx: Context) -> Iterable[Finding]:
        m = facts.gpu_machine(ctx)
        if m.wsl is not None:
            yield self._wsl(ctx, m)
        gpus = [g for g in m.gpus if not (m.wsl is not None and g.vendor == MICROSOFT)]
        for gpu in gpus:
            yield self._one(ctx, m, gpu)
        if not gpus and m.wsl is None:
            yield self.info(
                "No GPU on the PCI bus",
                f"{PCI_DEVICES} lists no display or 3D controller (class 0x03): only CPU "
                "drivers can give a Vulkan device here.",
                gpus=[],
            )

    def _one(self, ctx: Context, m: GpuMachine, gpu: Gpu) -> Finding:
        vulkan = _vulkan_for(gpu, m)
        found = _found(ctx, gpu)
        known = gpu.vendor in (AMD, INTEL, NVIDIA) or gpu.vulkan is not None or bool(found)
        # a GPU vkdoctor cannot name still has a node to judge
        cause = _first_break(ctx, m, gpu, vulkan, found) if known else _node_break(ctx, m, gpu)
        cause = cause or _unread_break(gpu)
        chain = _chain_text(ctx, gpu, vulkan, [d.describe() for _, d in found])
        seen_by_wgpu = _probe_view(ctx, gpu, found)
        if seen_by_wgpu:
            chain += f" -> {seen_by_wgpu}"
        if gpu.unreadable:
            chain += f". Not read: {', '.join(gpu.unreadable)} in {PCI_DEVICES}/{gpu.address}"
        if "unknown" in gpu.firmware and not (cause and cause.link == "firmware"):
            chain += f". Firmware not checked: {gpu.firmware['unknown']}"
        evidence: dict[str, Any] = {
            "gpu": to_json(gpu),
            "vulkan_driver": vulkan,
            "vulkan_devices": [{"manifest": o.target.manifest, **d.as_dict()} for o, d in found],
            "cmdline": m.cmdline,
            "blacklisted": m.blacklisted,
            "broken_link": cause.link if cause else None,
        }
        name = (
            f"{gpu.vendor_name} {gpu.family or gpu.model or gpu.device or 'GPU'} at {gpu.address}"
        )
        if cause is None and vulkan is None and not found:
            # the tables do not know it and no driver listed it: nothing here is proven
            return self.info(
                f"{name}: no Vulkan driver known for "
                + (f"{gpu.vendor}:{gpu.device}" if gpu.vendor else f"its driver {gpu.driver}"),
                f"vkdoctor's GPU tables do not know this device, and no Vulkan device with its "
                f"PCI ID was found. Chain: {chain}.",
                **evidence,
            )
        if cause is None:
            seen = found[0][1].name if found else None
            title = (
                (f"{seen} ({gpu.vendor[2:]}:{gpu.device[2:]}) at {gpu.address}" if seen else name)
                + f": kernel {gpu.driver}, Vulkan {vulkan}"
                + (", device found" if seen else "")
            )
            return self.ok(title, chain, **evidence)
        return self._broken(ctx, cause, f"{cause.why} Chain: {chain}.", evidence)

    def _broken(
        self, ctx: Context, cause: Break, message: str, evidence: dict[str, Any]
    ) -> Finding:
        if ctx.options.gpu:
            return self.fail(cause.title, message, remedy=cause.remedy, **evidence)
        return self.warn(cause.title, message, remedy=cause.remedy, **evidence)

    def _wsl(self, ctx: Context, m: GpuMachine) -> Finding:
        wsl = m.wsl or {}
        devices = [
            (o, d)
            for o in (facts.load_test(ctx).outcomes if ctx.live else ())
            if o.target.kind == "driver" and "dzn" in o.target.dlopen_name
            for d in o.devices
        ]
        evidence: dict[str, Any] = {
            "wsl": wsl,
            "vulkan_driver": "dzn",
            "vulkan_devices": [{"manifest": o.target.manifest, **d.as_dict()} for o, d in devices],
            "broken_link": None,
        }
        missing = [n for n in ("libd3d12.so", "libdxcore.so") if n not in wsl.get("wsl_lib", [])]
        cause: Break | None = None
        if not wsl.get("dxg"):
            cause = Break(
                link="device node",
                title="WSL2 without /dev/dxg: no GPU is shared",
                why=f"The kernel is WSL2's ({wsl.get('release')}) and there is no /dev/dxg.",
                remedy=Remedy(
                    text="Update WSL (wsl --update in Windows) "
                    "and the Windows GPU driver; in a container pass --device /dev/dxg."
                ),
            )
        elif missing:
            cause = Break(
                link="WSL libraries",
                title=f"WSL2: /usr/lib/wsl/lib lacks {', '.join(missing)}",
                why="dzn reaches the GPU through D3D12 (libd3d12.so, libdxcore.so "
                "in /usr/lib/wsl/lib), which WSL mounts from Windows.",
                remedy=Remedy(
                    text="Mount /usr/lib/wsl into the container "
                    "(-v /usr/lib/wsl:/usr/lib/wsl) or update WSL."
                ),
            )
        else:
            cause = _wsl_vulkan(ctx, devices)
        chain = (
            f"WSL2 {wsl.get('release')} -> /dev/dxg {'present' if wsl.get('dxg') else 'missing'}"
            f" -> /usr/lib/wsl/lib {'complete' if not missing else 'incomplete'} -> Vulkan dzn"
            " (not conformant) -> "
            + (
                ", ".join(d.describe() for _, d in devices)
                or ("no dzn device seen" if ctx.live else "device not tested (--root)")
            )
        )
        if cause is None:
            return self.ok("WSL2 GPU through dzn", chain, **evidence)
        evidence["broken_link"] = cause.link
        return self._broken(ctx, cause, f"{cause.why} Chain: {chain}.", evidence)


def _wsl_vulkan(ctx: Context, devices: list[tuple[TargetOutcome, Any]]) -> Break | None:
    if not _manifests_for(ctx, "dzn"):
        return Break(
            link="Vulkan driver",
            title="WSL2: no dzn, the Vulkan driver for the GPU through D3D12",
            why="On WSL2 the GPU is reached only through /dev/dxg and Mesa's dzn (Dozen); no "
            "manifest the loader reads names libvulkan_dzn.so, so only the CPU computes.",
            remedy=Remedy(
                text="Install a Mesa built with -Dvulkan-drivers=microsoft-experimental "
                "(dzn); most distributions do not build it."
            ),
        )
    if ctx.live and not devices:
        return Break(
            link="Vulkan device",
            title="WSL2: dzn loads but lists no device",
            why="dzn is installed and the load test found no device from it.",
            remedy=Remedy(text="VKT001 says why; check the Windows GPU driver."),
        )
    name = devices[0][1].name if devices else "the WSL2 GPU"
    return _wgpu_break(ctx, name, "dzn", False)


CHECKS: tuple[type[Check], ...] = (GpuDevice, GpuChainCheck)
