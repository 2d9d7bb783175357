"""Facts about the host (or the --root tree) for the report header. Never fails: unknown is None."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from vkdoctor import __version__
from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.factstore import FactKind
from vkdoctor.model.report_records import Distro, HostCpu, HostLoader, HostMemory, HostReport

#: an os-release file is a few hundred bytes; one larger than this is not read
OS_RELEASE_MAX = 64 * 1024
#: what `os_release` parsed (`distro` costs ~10 ms to import), kept by the file's identity
_OS_RELEASE = FactKind("os-release", (__file__,))


def os_release(ctx: Context) -> dict[str, str]:
    """/etc/os-release (or /usr/lib/os-release) of the root, as KEY -> value, parsed by `distro`
    (shell quoting and escapes undone: NAME="Foo \\"Rolling\\" Linux" is Foo "Rolling" Linux).
    Only a regular file of at most OS_RELEASE_MAX bytes is read."""
    import stat

    for candidate in ("/etc/os-release", "/usr/lib/os-release"):
        path = ctx.resolve(candidate)
        try:
            st = Path(path).stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size > OS_RELEASE_MAX:
            continue
        # distro (with logging) costs ~10 ms to import: a run keeps what it read, by the file's
        # identity, for the next run on an unchanged machine
        kept = ctx.store.get(_OS_RELEASE, (path,), str(path))
        if isinstance(kept, dict):
            return dict(kept)
        import distro

        # only os_release_info() is asked: distro reads no other file and runs no command
        found = distro.LinuxDistribution(
            include_lsb=False,
            os_release_file=str(path),
            distro_release_file=os.devnull,
            include_uname=False,
            include_oslevel=False,
        )
        try:
            info = found.os_release_info()
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        parsed = {str(k).upper(): str(v) for k, v in info.items()}
        ctx.store.put(_OS_RELEASE, (path,), str(path), parsed)
        return parsed
    return {}


def distro_ids(ctx: Context) -> list[str]:
    """ID and ID_LIKE of the root's os-release ("ubuntu", "debian"): which family's commands fit."""
    rel = os_release(ctx)
    return [*rel.get("ID", "").split(), *rel.get("ID_LIKE", "").split()]


def distro_family(ctx: Context) -> str | None:
    """ "debian", "arch" or "fedora" (the families vkdoctor names commands for), or None: by
    the one table of distributions, vkdoctor.packages.commands.DISTROS."""
    from vkdoctor.packages.commands import NATIVE, family_of

    manager = family_of(distro_ids(ctx))
    return next((family for family, m in NATIVE.items() if m == manager), None)


def _distro(ctx: Context) -> Distro:
    rel = os_release(ctx)
    return Distro(
        id=rel.get("ID") or None,
        name=rel.get("PRETTY_NAME") or rel.get("NAME") or None,
        version=rel.get("VERSION_ID") or None,
        like=rel.get("ID_LIKE") or None,
    )


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or None


def _memory() -> HostMemory:
    """MemTotal and MemAvailable from /proc/meminfo, in bytes (what psutil.virtual_memory reads)."""
    values: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable"):
                    values[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return HostMemory(
        total_bytes=values.get("MemTotal"), available_bytes=values.get("MemAvailable")
    )


def _version_of(dist: str) -> str | None:
    """importlib.metadata.version(dist), without importing importlib.metadata (and email,
    zipfile, socket: 25 ms) when a plain NAME-VERSION.dist-info on sys.path answers."""
    want = _normalized(dist)
    for entry in sys.path:
        found = _distribution_dir(Path(entry or "."), want)
        if found is None:
            continue
        if found.suffix == ".dist-info":
            version = _metadata_version(found / "METADATA")
            if version:
                return version
        break
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _distribution_dir(directory: Path, normalized: str) -> Path | None:
    try:
        names = [p.name for p in directory.iterdir()]
    except OSError:
        return None
    for name in names:
        stem, dot, ext = name.rpartition(".")
        if (
            dot
            and ext in ("dist-info", "egg-info")
            and _normalized(stem.split("-")[0]) == normalized
        ):
            return directory / name
    return None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_version(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
                if not line.strip():
                    break
    except OSError:
        pass
    return None


#: the variables that change what the Vulkan loader, ld.so, Mesa, the NVIDIA container runtime
#: and wgpu do; the report records them so that two machines' reports can be compared
ENVIRONMENT_PREFIXES = ("VK_", "VULKAN_", "LD_", "XDG_", "WGPU_", "MESA_", "LP_", "NVIDIA_")
ENVIRONMENT_NAMES = ("NODEVICE_SELECT", "DISPLAY", "WAYLAND_DISPLAY", "CONDA_PREFIX")


def relevant_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` that decide which driver loads and how, sorted by name."""
    return {
        k: v
        for k, v in sorted(env.items())
        if k.startswith(ENVIRONMENT_PREFIXES) or k in ENVIRONMENT_NAMES
    }


def user_environment(ctx: Context) -> dict[str, str]:
    """The environment vkdoctor was run in: `ctx.env`, except in the Context the checks run in
    under an overlay, which is given the user's own (vkdoctor.facts.overlay): the report's host
    says what the user set, not the overlay vkdoctor put on LD_LIBRARY_PATH."""
    return dict(ctx.env)


def collect(ctx: Context) -> HostReport:
    """Distro, kernel, architecture, CPU, memory, Python and tool versions. With --root, what
    only the live machine can say (kernel, CPU, memory, and the Python and wgpu that would run
    the probe) is None: this process's own would describe another system."""
    from vkdoctor.loader.version import loader_version

    loader = ctx.fact(loader_version)
    live = ctx.live
    return HostReport(
        root=str(ctx.root),
        distro=_distro(ctx),
        machine=ctx.machine,
        # the Vulkan loader (libvulkan.so.1) of the root: path None when there is none
        loader=HostLoader(path=loader.path, version=loader.text if loader.version else None),
        vkdoctor=__version__,
        # platform.python_version()'s words
        python=sys.version.split()[0] if live else None,
        python_executable=sys.executable if live else None,
        wgpu=_version_of("wgpu") if live else None,
        kernel=os.uname().release if live else None,
        cpu=HostCpu(model=_cpu_model(), count=os.cpu_count()) if live else None,
        memory=_memory() if live else None,
        environment=relevant_environment(ctx.fact(user_environment)),
    )


def nvidia_gpu_expected(ctx: Context) -> bool:
    visible = (ctx.env.get("NVIDIA_VISIBLE_DEVICES") or "").strip().lower()
    if visible and visible not in ("void", "none"):
        return True
    return ctx.under("/dev/nvidiactl").exists() or ctx.under("/proc/driver/nvidia/version").exists()


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
        cgroup = tree.read_text(ctx, "/proc/1/cgroup")
    except OSError:
        return None
    for marker in ("kubepods", "docker", "containerd", "libpod", "lxc"):
        if marker in cgroup:
            return marker
    return None
