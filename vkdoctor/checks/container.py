"""VKC: containers and GPU device access: what a container runtime gives the Vulkan driver."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from vkdoctor.checks.base import Check
from vkdoctor.context import Context
from vkdoctor.model import Finding

#: NVIDIA_DRIVER_CAPABILITIES values that make the container runtime mount the Vulkan ICD
_VULKAN_CAPS = {"graphics", "all"}
#: what nvidia-container-toolkit assumes when NVIDIA_DRIVER_CAPABILITIES is unset
_DEFAULT_CAPS = "utility,compute"


def container_kind(ctx: Context) -> str | None:
    """The container runtime we appear to run in, or None."""
    if ctx.under("/.dockerenv").exists():
        return "docker"
    if ctx.under("/run/.containerenv").exists():
        return "podman"
    value = ctx.env.get("container")
    if value:
        return value
    if ctx.env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    try:
        cgroup = ctx.under("/proc/1/cgroup").read_text(errors="replace")
    except OSError:
        return None
    for marker in ("kubepods", "docker", "containerd", "libpod", "lxc"):
        if marker in cgroup:
            return marker
    return None


def nvidia_driver_version(ctx: Context) -> str | None:
    """From /proc/driver/nvidia/version: 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03 ...'."""
    try:
        text = ctx.under("/proc/driver/nvidia/version").read_text(errors="replace")
    except OSError:
        return None
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None


def nvidia_gpu_expected(ctx: Context) -> bool:
    visible = (ctx.env.get("NVIDIA_VISIBLE_DEVICES") or "").strip().lower()
    if visible and visible not in ("void", "none"):
        return True
    return ctx.under("/dev/nvidiactl").exists() or ctx.under("/proc/driver/nvidia/version").exists()


class NvidiaContainerCapabilities(Check):
    """The NVIDIA container runtime mounts the Vulkan driver only with the `graphics` capability.

    nvidia-container-toolkit decides from NVIDIA_DRIVER_CAPABILITIES which parts of the driver it
    mounts into a container. `compute` brings CUDA (libcuda, nvidia-smi with `utility`), but the
    Vulkan driver (nvidia_icd.json and libGLX_nvidia.so.0) comes only with `graphics` (or `all`).
    Unset, the runtime assumes `utility,compute`: CUDA works and Vulkan sees no GPU.
    """

    code = "VKC001"
    family = "container"
    title = "NVIDIA container capabilities"

    def run(self, ctx: Context) -> Iterable[Finding]:
        if not nvidia_gpu_expected(ctx):
            yield self.ok(
                "No NVIDIA GPU expected here",
                "no NVIDIA_VISIBLE_DEVICES, /dev/nvidiactl or /proc/driver/nvidia",
            )
            return
        kind = container_kind(ctx)
        raw = ctx.env.get("NVIDIA_DRIVER_CAPABILITIES")
        caps = {
            c.strip().lower()
            for c in (raw if raw is not None else _DEFAULT_CAPS).split(",")
            if c.strip()
        }
        evidence = {
            "container": kind,
            "NVIDIA_DRIVER_CAPABILITIES": raw,
            "NVIDIA_VISIBLE_DEVICES": ctx.env.get("NVIDIA_VISIBLE_DEVICES"),
            "driver_version": nvidia_driver_version(ctx),
        }
        if caps & _VULKAN_CAPS:
            yield self.ok(
                "NVIDIA graphics capability present",
                f"NVIDIA_DRIVER_CAPABILITIES={raw} includes graphics: the runtime mounts the Vulkan driver",
                **evidence,
            )
            return
        shown = raw if raw is not None else f"unset (the runtime assumes {_DEFAULT_CAPS})"
        where = f"in this {kind} container" if kind else "here"
        msg = (
            f"An NVIDIA GPU is expected {where}, but NVIDIA_DRIVER_CAPABILITIES is {shown}: "
            "without `graphics` the NVIDIA container runtime does not mount nvidia_icd.json and "
            "libGLX_nvidia.so.0, so Vulkan (wgpu, burn, cubecl) sees no NVIDIA GPU even though CUDA works."
        )
        yield self.fail(
            "NVIDIA Vulkan driver not mounted: container lacks the graphics capability",
            msg,
            remedy=(
                "Start the container with NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility "
                "(docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility ...; "
                "in Kubernetes set it in the pod's env)."
            ),
            **evidence,
        )


def _node_access(path: Path) -> tuple[bool, str]:
    """(usable, description) for a device node: read+write is what a Vulkan driver needs."""
    try:
        st = path.stat()
    except OSError as exc:
        return False, f"{path}: {exc.strerror}"
    if not stat.S_ISCHR(st.st_mode):
        return False, f"{path} is not a character device"
    ok = os.access(path, os.R_OK | os.W_OK)
    mode = stat.filemode(st.st_mode)
    return ok, f"{path} ({mode}, uid {st.st_uid}, gid {st.st_gid})"


class GpuDeviceNodes(Check):
    """GPU device nodes exist and this user can open them.

    Mesa's Vulkan drivers for AMD and Intel open /dev/dri/renderD*; the NVIDIA driver opens
    /dev/nvidiactl and /dev/nvidia0 (and /dev/nvidia-uvm). A node that exists but is not readable
    and writable by this user makes the driver load and then see no device — typically a user not
    in the `render` (or `video`) group, or a container started without the device.
    """

    code = "VKC002"
    family = "container"
    title = "GPU device nodes"

    def run(self, ctx: Context) -> Iterable[Finding]:
        dri = (
            sorted(ctx.under("/dev/dri").glob("renderD*")) if ctx.under("/dev/dri").is_dir() else []
        )
        nvidia = [p for p in (ctx.under("/dev/nvidiactl"), ctx.under("/dev/nvidia0")) if p.exists()]
        nodes = dri + nvidia
        if not nodes:
            yield self.info(
                "No GPU device nodes",
                "There is no /dev/dri/renderD* and no /dev/nvidia*: only CPU drivers (lavapipe) can "
                "give a Vulkan device here. In a container, pass the GPU in (docker --gpus all, or "
                "--device /dev/dri).",
                nodes=[],
            )
            return
        results = {str(p): _node_access(p) for p in nodes}
        denied = [desc for ok, desc in results.values() if not ok]
        evidence = {"nodes": [desc for _, desc in results.values()], "denied": denied}
        if denied:
            yield self.fail(
                "GPU device node not accessible",
                "This user cannot open "
                + "; ".join(denied)
                + ". The driver will load and find no device.",
                remedy=(
                    "Add the user to the group that owns the node (sudo usermod -aG render,video $USER, "
                    "then log in again); in a container pass the device (--device /dev/dri) with its group "
                    "(--group-add render)."
                ),
                **evidence,
            )
        else:
            yield self.ok("GPU device nodes accessible", ", ".join(results), **evidence)


CHECKS: tuple[type[Check], ...] = (NvidiaContainerCapabilities, GpuDeviceNodes)
