"""VKC: containers and GPU device access: what a container runtime gives the Vulkan driver."""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterable
from pathlib import Path

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.elf.resolve import resolve
from vkdoctor.loader.search import driver_plan, implicit_layer_plan
from vkdoctor.machine.host import container_kind
from vkdoctor.model import Finding, Remedy, tree
from vkdoctor.model.context import Context
from vkdoctor.packages import commands

#: NVIDIA_DRIVER_CAPABILITIES values that make the container runtime mount the Vulkan ICD
_VULKAN_CAPS = {"graphics", "all"}
#: what nvidia-container-toolkit assumes when NVIDIA_DRIVER_CAPABILITIES is unset
_DEFAULT_CAPS = "utility,compute"


def nvidia_driver_version(ctx: Context) -> str | None:
    """From /proc/driver/nvidia/version: 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03 ...'."""
    try:
        text = tree.read_text(ctx, "/proc/driver/nvidia/version")
    except OSError:
        return None
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None


def _nvidia_runtime_used(ctx: Context) -> bool:
    """The NVIDIA container runtime (or the host's driver) is really here: its device nodes, its
    /proc entry, or an NVIDIA driver manifest the loader will see."""
    if ctx.under("/dev/nvidiactl").exists() or ctx.under("/proc/driver/nvidia/version").exists():
        return True
    return any("nvidia" in (d.library or "").lower() for d in facts.driver_scan(ctx).drivers)


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
    # the container runtime's variables and the kernel's /dev and /proc: this process's
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        if not facts.nvidia_gpu_expected(ctx):
            yield self.ok(
                "No NVIDIA GPU expected here",
                "no NVIDIA_VISIBLE_DEVICES, /dev/nvidiactl or /proc/driver/nvidia",
            )
            return
        kind = container_kind(ctx)
        if not _nvidia_runtime_used(ctx):
            # NVIDIA_VISIBLE_DEVICES comes with the image (nvidia/cuda sets it); without the
            # NVIDIA runtime nothing is mounted whatever the capabilities say
            yield self.info(
                "NVIDIA_VISIBLE_DEVICES is set, but no NVIDIA GPU was given to this "
                + (f"{kind} container" if kind else "machine"),
                f"NVIDIA_VISIBLE_DEVICES={ctx.env.get('NVIDIA_VISIBLE_DEVICES')} (images such as "
                "nvidia/cuda set it), but there is no /dev/nvidiactl, no /proc/driver/nvidia and "
                "no NVIDIA driver manifest: the container was started without the NVIDIA "
                "runtime (docker run --gpus all, or --runtime nvidia), or the machine has no "
                "NVIDIA GPU. NVIDIA_DRIVER_CAPABILITIES matters only once it is.",
                container=kind,
                NVIDIA_VISIBLE_DEVICES=ctx.env.get("NVIDIA_VISIBLE_DEVICES"),
                NVIDIA_DRIVER_CAPABILITIES=ctx.env.get("NVIDIA_DRIVER_CAPABILITIES"),
            )
            return
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
                Remedy(
                    text="Start the container with NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility "
                    "(docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility ...; "
                    "in Kubernetes set it in the pod's env)."
                )
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
    # /dev and this user's access to it: nothing an image tree under --root has
    live_only = True

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
                    Remedy(
                        text="Add the user to the group that owns the node (sudo usermod -aG render,video $USER, "
                        "then log in again); in a container pass the device (--device /dev/dri) with its group "
                        "(--group-add render)."
                    )
                ),
                **evidence,
            )
        else:
            yield self.ok("GPU device nodes accessible", ", ".join(results), **evidence)


#: where driver bundles put Vulkan manifests that the Khronos loader does not search
#: (container toolkits mount the NVIDIA driver under /usr/local/nvidia; /usr/local/etc is only
#: searched by loaders built with a /usr/local prefix)
OFF_PATH_PATTERNS = (
    "/usr/local/nvidia/share/vulkan/{kind}",
    "/usr/local/nvidia/etc/vulkan/{kind}",
    "/usr/local/etc/vulkan/{kind}",
    "/opt/*/share/vulkan/{kind}",
    "/opt/*/etc/vulkan/{kind}",
)


def _off_path_manifests(ctx: Context, kind: str, searched: tuple[str, ...]) -> list[str]:
    """Manifests in OFF_PATH_PATTERNS dirs that the loader reaches neither directly nor by a link."""
    searched_real = {ctx.resolve(d) for d in searched}
    seen_real: set[Path] = set()
    for d in searched:
        try:
            names = tree.names(ctx, d)
        except OSError:
            continue
        seen_real |= {ctx.resolve(f"{d.rstrip('/')}/{n}") for n in names}
    found = []
    for pattern in OFF_PATH_PATTERNS:
        host_pattern = str(ctx.under(pattern.format(kind=kind)))
        for host_dir in sorted(Path("/").glob(host_pattern.lstrip("/"))):
            inside = ctx.inside(host_dir)
            if ctx.resolve(inside) in searched_real:
                continue
            for f in sorted(host_dir.glob("*.json")):
                manifest = f"{inside}/{f.name}"
                if ctx.resolve(manifest) not in seen_real:
                    found.append(manifest)
    return found


class ManifestsOutsideSearchPath(Check):
    """Vulkan manifests in places the Khronos loader never searches.

    Driver bundles and container runtimes sometimes install a driver's manifest under their own
    prefix, for example /usr/local/nvidia/share/vulkan/icd.d from the NVIDIA container toolkit,
    or /opt/<vendor>/share/vulkan. The loader searches only XDG_CONFIG_HOME, XDG_CONFIG_DIRS,
    /etc, XDG_DATA_HOME and XDG_DATA_DIRS (each with vulkan/icd.d or vulkan/implicit_layer.d), so
    such a driver is invisible unless a link or a variable points at it. vkdoctor lists those
    manifests that are not reachable through a searched directory (a symlink there counts).
    """

    code = "VKC003"
    family = "container"
    title = "Vulkan manifests outside the loader's search path"

    def run(self, ctx: Context) -> Iterable[Finding]:
        drivers = _off_path_manifests(ctx, "icd.d", tuple(e.path for e in driver_plan(ctx).entries))
        layers = _off_path_manifests(
            ctx, "implicit_layer.d", tuple(e.path for e in implicit_layer_plan(ctx).entries)
        )
        for manifest in drivers:
            yield self.warn(
                f"Driver manifest outside the search path: {manifest}",
                f"{manifest} is not in any directory the Vulkan loader searches, and no searched "
                "directory links to it: the loader never reads it, so its driver is not used.",
                remedy=Remedy(
                    commands=(f"export VK_ADD_DRIVER_FILES={shlex.quote(manifest)}",),
                    text="(for one shell or CI step), or link it into the system directory: "
                    f"sudo ln -s {shlex.quote(manifest)} /usr/share/vulkan/icd.d/",
                ),
                manifest=manifest,
                kind="driver",
            )
        for manifest in layers:
            yield self.info(
                f"Implicit layer manifest outside the search path: {manifest}",
                f"{manifest} is not searched, so its layers are never active. Compute does not need "
                "them; link it into /usr/share/vulkan/implicit_layer.d if you do "
                "(loaders from 1.3.296 also read VK_ADD_IMPLICIT_LAYER_PATH).",
                manifest=manifest,
                kind="implicit layer",
            )


#: NVIDIA's Vulkan driver is its GLX/EGL vendor library
_NVIDIA_ICD_PREFIXES = ("libGLX_nvidia.so", "libEGL_nvidia.so")
_GLVND_EGL = "libEGL.so.1"


class NvidiaNeedsGlvnd(Check):
    """NVIDIA's Vulkan driver needs the GLVND EGL library (libEGL.so.1) to create an instance.

    The NVIDIA ICD is libGLX_nvidia.so.0. It loads without GLVND, but without libEGL.so.1 (and its
    libGLdispatch.so.0) its vk_icdGetInstanceProcAddr returns no vkCreateInstance, and the loader
    prints `loader_scanned_icd_add: Could not get 'vkCreateInstance' via
    'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0` and then `Found no drivers!`.
    Measured with driver 580.159.04 on an H200 (docs/gpu-h200.md): unpacking GLVND's libEGL
    turned VK_ERROR_INCOMPATIBLE_DRIVER into one NVIDIA H200 device. Minimal container images
    with only the CUDA libraries hit this.
    """

    code = "VKC004"
    family = "container"
    title = "GLVND EGL library for the NVIDIA Vulkan driver"
    requires = frozenset({"VKH002"})

    def run(self, ctx: Context) -> Iterable[Finding]:
        nvidia = [
            t
            for t in facts.load_targets(ctx)
            if t.kind == "driver"
            and t.dlopen_name.rsplit("/", 1)[-1].startswith(_NVIDIA_ICD_PREFIXES)
        ]
        if not nvidia:
            yield self.ok(
                "No NVIDIA Vulkan driver to check", "no driver manifest names libGLX_nvidia"
            )
            return
        # a manifest left behind by a removed driver names a library that is not there: that
        # is VKD005's and VKL001's finding, and libEGL is beside the point
        nvidia = [
            t
            for t in nvidia
            if resolve(ctx, t.dlopen_name, caller="loader", near=False).root is not None
        ]
        if not nvidia:
            yield self.ok(
                "No NVIDIA Vulkan driver library to check",
                "the NVIDIA manifests name a library that is not here (VKL001 says so)",
            )
            return
        egl = resolve(ctx, _GLVND_EGL, caller="loader", near=False)
        names = ", ".join(t.name for t in nvidia)
        if egl.ok:
            root = egl.root
            where = root.path if root is not None else _GLVND_EGL
            yield self.ok("GLVND libEGL.so.1 present", f"{names}: {where}", egl=where)
            return
        yield self.fail(
            "NVIDIA Vulkan driver will find no vkCreateInstance: libEGL.so.1 (GLVND) is missing",
            f"The NVIDIA driver ({names}, {nvidia[0].dlopen_name}) needs GLVND's libEGL.so.1 to "
            f"create a Vulkan instance, and ld.so cannot load it: {egl.predicted_error}. "
            "The loader will report \"Could not get 'vkCreateInstance' via "
            '\'vk_icdGetInstanceProcAddr\'" and then "Found no drivers!".',
            remedy=_install_egl(ctx),
            error=egl.predicted_error,
            drivers=[t.manifest for t in nvidia],
        )


def _install_egl(ctx: Context) -> Remedy:
    """How to install GLVND's libEGL.so.1."""
    family = commands.NATIVE.get(facts.distro_family(ctx) or "")
    if family is not None:
        return Remedy(commands=(commands.install_for(family, "glvnd-egl"),), needs_root=True)
    each = ", ".join(
        f"sudo {commands.install_for(f, 'glvnd-egl')} ({commands.NAMES[f]})"
        for f in ("dpkg", "rpm", "pacman")
    )
    return Remedy(text=f"Install GLVND's EGL library: {each}.")


CHECKS: tuple[type[Check], ...] = (
    NvidiaContainerCapabilities,
    GpuDeviceNodes,
    ManifestsOutsideSearchPath,
    NvidiaNeedsGlvnd,
)
