"""Below the Vulkan driver: each GPU on the PCI bus (and each off it with a render node), the
kernel driver bound to it, the firmware it needs, its DRM nodes and who may open them, and the
Vulkan driver that serves its generation.

Everything is read through `ctx.under`, so a snapshot of another machine under `--root` reads the
same as this one: sysfs (/sys/bus/pci/devices, /sys/module), /dev/dri, /proc/cmdline, the
modprobe configuration, /lib/firmware, /etc/group. Reads are bounded; values are data.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import struct
from functools import cache
from itertools import islice
from pathlib import Path
from typing import Any

from vkdoctor.model import files
from vkdoctor.model.context import Context
from vkdoctor.model.record import record

PCI_DEVICES = "/sys/bus/pci/devices"
#: PCI vendor IDs
AMD, INTEL, NVIDIA, MICROSOFT, VIRTIO = "0x1002", "0x8086", "0x10de", "0x1414", "0x1af4"
VENDOR_NAMES = {
    AMD: "AMD",
    INTEL: "Intel",
    NVIDIA: "NVIDIA",
    MICROSOFT: "Microsoft",
    VIRTIO: "Red Hat (virtio)",
}
MODPROBE_DIRS = ("/etc/modprobe.d", "/lib/modprobe.d", "/usr/lib/modprobe.d", "/run/modprobe.d")
#: the kernel drivers of GPUs
GPU_DRIVERS = ("radeon", "amdgpu", "i915", "xe", "nouveau", "nvidia")
#: module parameters that decide which driver takes a chip
PARAMETERS = ("si_support", "cik_support", "modeset", "force_probe")
#: at most this many PCI devices, DRM nodes, modprobe files are read
MANY = 256
#: at most this many entries of one folder are looked at
LISTED = 65536
SHORT = 64 << 10
#: the parts of a chip's firmware amdgpu loads first, by name after `<chip>_`, for the chips its
#: ID list names (gpu_ids.json): a chip with none of these present does not start
FIRST_PARTS = ("sos", "smc", "mc", "rlc", "pfp", "me", "mec")
FIRMWARE_SUFFIXES = (".bin", ".bin.zst", ".bin.xz")
#: POSIX ACL xattr tags (linux/posix_acl_xattr.h)
_ACL_USER_OBJ, _ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP, _ACL_MASK, _ACL_OTHER = (
    0x01,
    0x02,
    0x04,
    0x08,
    0x10,
    0x20,
)


#: GPUs that the PCI ID tables do not place, known by the DRM driver bound to them (SoC GPUs
#: on the platform bus, virtio-gpu in a virtual machine): the driver -> what the GPU is, and the
#: Mesa Vulkan driver that opens that DRM driver's render nodes (Mesa's src/broadcom/vulkan,
#: src/freedreno/vulkan, src/panfrost/vulkan, src/asahi/vulkan, src/imagination/vulkan,
#: src/virtio/vulkan), None where Mesa has no Vulkan driver for it (lima, etnaviv, vc4)
DRM_VULKAN: dict[str, tuple[str, str | None]] = {
    "v3d": ("Broadcom VideoCore V3D", "V3DV"),
    "msm": ("Qualcomm Adreno", "Turnip"),
    "panfrost": ("Arm Mali", "PanVK"),
    "panthor": ("Arm Mali (CSF)", "PanVK"),
    "asahi": ("Apple AGX", "Honeykrisp"),
    "powervr": ("Imagination PowerVR", "PowerVR"),
    "virtio_gpu": ("virtio-gpu (virtual machine)", "Venus"),
    "lima": ("Arm Mali Utgard", None),
    "etnaviv": ("Vivante", None),
}
#: the PCI drivers under which a GPU's DRM device is a child device with its own driver
PCI_TRANSPORTS = ("virtio-pci",)


@record(frozen=True, kw_only=True)
class Node:
    """A device node a Vulkan driver opens, and whether this user can open it for read+write."""

    path: str
    exists: bool
    mode: str | None = None
    uid: int | None = None
    gid: int | None = None
    owner: str | None = None
    group: str | None = None
    acl: tuple[str, ...] = ()
    usable: bool = False
    why: str | None = None


@record(frozen=True, kw_only=True)
class Gpu:
    """One PCI display or 3D controller and what sits on it."""

    address: str
    vendor: str
    device: str
    subsystem: str
    pci_class: str
    vendor_name: str
    chip: str | None
    family: str | None
    vulkan: str | None
    conformant: bool | None
    claimed_by: tuple[str, ...]
    driver: str | None
    parameters: dict[str, dict[str, str]]
    modules_loaded: tuple[str, ...]
    nodes: tuple[Node, ...]
    sysfs_nodes: tuple[str, ...]
    firmware: dict[str, Any]
    #: the device's sysfs files that could not be read, each with why
    unreadable: tuple[str, ...] = ()


@record(frozen=True, kw_only=True)
class GpuMachine:
    """The GPUs and what the kernel's configuration says about all of them."""

    gpus: tuple[Gpu, ...]
    cmdline: str
    #: the running kernel's release (/proc/sys/kernel/osrelease)
    release: str
    nomodeset: bool
    blacklisted: dict[str, str]
    dev_dri: bool
    wsl: dict[str, Any] | None
    #: the loaded nvidia module's version (/sys/module/nvidia/version), None when not loaded
    nvidia_module: str | None = None
    #: the versions of NVIDIA's GL/Vulkan libraries installed (libGLX_nvidia.so.V,
    #: libnvidia-glcore.so.V), which work only with a kernel module of the same version
    nvidia_userspace: tuple[str, ...] = ()
    #: the loaded nvidia module's own first line in /proc/driver/nvidia/version ("NVRM version:
    #: NVIDIA UNIX Open Kernel Module for x86_64  580.178.04 ..." for the open module)
    nvidia_proc_version: str | None = None


@cache
def chips() -> dict[str, Any]:
    """vkdoctor/data/gpu_chips.json, generated by scripts/gen_gpu_chips.py from pci.ids and the
    Linux kernel's source: the chip of an NVIDIA (Turing and newer) or AMD (IP discovery, GC 11
    and newer) PCI device ID, and the firmware its driver requests, with the sources' versions."""
    path = Path(__file__).parent.parent / "data" / "gpu_chips.json"
    doc: dict[str, Any] = json.loads(files.read_text(path, limit=4 << 20))
    return doc


def linux() -> str:
    """The kernel whose source the chip tables read, as "Linux 7.2"."""
    package: str = chips()["sources"]["linux"]["package"]
    return "Linux " + package.removeprefix("linux-source-")


def _pci_ids() -> str:
    """The pci.ids database the chip tables were made from, as "pci.ids 2026.10.24"."""
    return f"pci.ids {chips()['sources']['pci.ids']['database']}"


def _unlisted(vendor: str, dev: str) -> str | None:
    """Why a device ID is unknown when pci.ids, as the tables took it, does not list it."""
    if dev in chips()["listed"].get(vendor, ()):
        return None
    return (
        f"{vendor.removeprefix('0x')}:{dev} is not in {_pci_ids()}, which vkdoctor's chip tables "
        "were made from: a GPU newer than them, so its chip and the firmware it needs are unknown"
    )


@cache
def tables() -> dict[str, Any]:
    """vkdoctor/data/gpu_ids.json: PCI ID to chip, family and Vulkan driver, with its sources."""
    path = Path(__file__).parent.parent / "data" / "gpu_ids.json"
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def _read(path: Path) -> str | None:
    try:
        return files.read_text(path, limit=SHORT).strip()
    except (OSError, UnicodeDecodeError):
        return None


def _sysfs(entry: Path, name: str, unreadable: list[str]) -> str | None:
    """The text of the device's sysfs file `name`; where it cannot be read, None, and the file
    and why are added to `unreadable`."""
    try:
        return files.read_text(entry / name, limit=SHORT).strip()
    except OSError as exc:
        why = {
            errno.ENOENT: "missing",
            errno.ESPIPE: "not a regular file",
            errno.EFBIG: f"over {SHORT >> 10} KiB",
            errno.EISDIR: "a directory",
        }.get(exc.errno or 0, exc.strerror or "cannot be read")
        unreadable.append(f"{name} ({why})")
        return None


def _link_name(path: Path) -> str | None:
    try:
        return path.readlink().name
    except OSError:
        return None


def _identify(vendor: str, device: str) -> dict[str, Any]:
    """chip, family, Vulkan driver, conformance and the kernel drivers that claim the ID."""
    t = tables()
    dev = device.lower().removeprefix("0x")
    if vendor == AMD and dev in t["amd"]:
        chip, claimed = t["amd"][dev]
        return {"chip": chip, "claimed_by": tuple(claimed), **t["amd_chips"][chip]}
    if vendor == AMD and dev in chips()["amd"]["ids"]:
        chip = chips()["amd"]["ids"][dev]
        return {
            "chip": chip,
            "family": chips()["amd"]["chips"][chip]["family"],
            "vulkan": "RADV",
            "conformant": True,
            "claimed_by": ("amdgpu",),
        }
    if vendor == AMD:
        # amdgpu takes every newer AMD display controller by its PCI class (IP discovery)
        return {
            "chip": None,
            "family": "GPU (by IP discovery)",
            "vulkan": "RADV",
            "conformant": None,
            "claimed_by": ("amdgpu",),
        }
    if vendor == INTEL and dev in t["intel"]:
        platform, claimed = t["intel"][dev]
        return {"chip": platform, "claimed_by": tuple(claimed), **t["intel_platforms"][platform]}
    if vendor == NVIDIA:
        return {
            "chip": nvidia_chip(dev),
            "family": None,
            "vulkan": None,
            "conformant": None,
            "claimed_by": ("nvidia", "nouveau"),
        }
    return {"chip": None, "family": None, "vulkan": None, "conformant": None, "claimed_by": ()}


def nvidia_before_gsp(device: str) -> bool:
    """An NVIDIA GPU older than Turing (no GSP): pci.ids lists its ID, and the chip tables,
    which hold every Turing-and-newer chip, do not."""
    dev = device.lower().removeprefix("0x")
    return _unlisted(NVIDIA, dev) is None and nvidia_chip(dev) is None


def nvidia_chip(device: str) -> str | None:
    """The Turing-or-newer chip of an NVIDIA PCI device ID, as nouveau names its firmware folder
    (pci.ids names the device after it); None for an older chip or an ID the tables lack."""
    found: str | None = chips()["nvidia"]["chips"].get(device.lower().removeprefix("0x"))
    return found


def _names(ctx: Context, path: str) -> dict[int, str]:
    """id -> name from the tree's /etc/passwd or /etc/group."""
    text = _read(ctx.under(path)) or ""
    out: dict[int, str] = {}
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].isdigit():
            out.setdefault(int(parts[2]), parts[0])
    return out


def posix_acl(path: Path) -> tuple[tuple[int, int | None, int], ...]:
    """(tag, id, perm) entries of the file's access ACL, as getfacl lists them; () without one."""
    try:
        raw = os.getxattr(path, "system.posix_acl_access", follow_symlinks=False)
    except OSError:
        return ()
    if len(raw) < 4 or struct.unpack_from("<I", raw)[0] != 2:
        return ()
    entries = []
    for off in range(4, min(len(raw), 4 + 8 * 64) - 7, 8):
        tag, perm, ident = struct.unpack_from("<HHI", raw, off)
        entries.append((tag, ident if tag in (_ACL_USER, _ACL_GROUP) else None, perm))
    return tuple(entries)


def _acl_text(
    entries: tuple[tuple[int, int | None, int], ...], users: dict[int, str], groups: dict[int, str]
) -> tuple[str, ...]:
    kinds = {
        _ACL_USER_OBJ: "user",
        _ACL_USER: "user",
        _ACL_GROUP_OBJ: "group",
        _ACL_GROUP: "group",
        _ACL_MASK: "mask",
        _ACL_OTHER: "other",
    }
    out = []
    for tag, ident, perm in entries:
        who = (
            "" if ident is None else (users if tag == _ACL_USER else groups).get(ident, str(ident))
        )
        rwx = "".join(c if perm & b else "-" for c, b in (("r", 4), ("w", 2), ("x", 1)))
        out.append(f"{kinds.get(tag, '?')}:{who}:{rwx}")
    return tuple(out)


def may_open(
    st: os.stat_result, acl: tuple[tuple[int, int | None, int], ...], uid: int, gids: set[int]
) -> bool:
    """Read+write as the kernel decides it (POSIX.1e access check, acl(5))."""
    if uid == 0:
        return True
    want = 6
    if not acl:
        if uid == st.st_uid:
            bits = (st.st_mode >> 6) & 7
        elif st.st_gid in gids:
            bits = (st.st_mode >> 3) & 7
        else:
            bits = st.st_mode & 7
        return bits & want == want
    mask = next((p for t, _, p in acl if t == _ACL_MASK), 7)
    if uid == st.st_uid:
        return next(p for t, _, p in acl if t == _ACL_USER_OBJ) & want == want
    named = [p for t, i, p in acl if t == _ACL_USER and i == uid]
    if named:
        return named[0] & mask & want == want
    groups = [
        p
        for t, i, p in acl
        if (t == _ACL_GROUP_OBJ and st.st_gid in gids) or (t == _ACL_GROUP and i in gids)
    ]
    if groups:
        return any(p & mask & want == want for p in groups)
    return next((p for t, _, p in acl if t == _ACL_OTHER), 0) & want == want


#: the id a user namespace shows for a host id it does not map (/proc/sys/kernel/overflowgid)
OVERFLOW_ID = 65534


def user_namespace(ctx: Context) -> bool:
    """Whether this process runs in a user namespace that maps only part of the host's ids (a
    rootless container): /proc/self/uid_map is not the whole-range identity `0 0 4294967295`."""
    words = (_read(ctx.under("/proc/self/uid_map")) or "").split()
    return bool(words) and words != ["0", "0", "4294967295"]


def _why_not(st: os.stat_result, group: str | None, user: str, userns: bool = False) -> str:
    """Why `user` may not open a node it was refused."""
    if userns and st.st_gid == OVERFLOW_ID:
        # the host's group of the node has no id in this namespace: no group here is it
        return "unmapped"
    if st.st_uid == 0 and st.st_gid == 0 and stat.S_IMODE(st.st_mode) & 0o077 == 0:
        return "root-only"
    if group is None:
        return "gid-without-name"
    return "not-in-group"


def node(ctx: Context, path: str, uid: int, gids: set[int]) -> Node:
    """The device node at `path` and whether `uid` with `gids` may open it."""
    host = ctx.under(path)
    try:
        st = host.stat()
    except OSError:
        return Node(path=path, exists=False, why="missing")
    if not stat.S_ISCHR(st.st_mode):
        return Node(path=path, exists=False, why="not-a-device")
    users, groups = _names(ctx, "/etc/passwd"), _names(ctx, "/etc/group")
    acl = posix_acl(host)
    usable = may_open(st, acl, uid, gids)
    if ctx.live:
        # the kernel's own answer for this process
        usable = os.access(host, os.R_OK | os.W_OK)
    group = groups.get(st.st_gid)
    return Node(
        path=path,
        exists=True,
        mode=stat.filemode(st.st_mode),
        uid=st.st_uid,
        gid=st.st_gid,
        owner=users.get(st.st_uid),
        group=group,
        acl=_acl_text(acl, users, groups),
        usable=usable,
        why=None if usable else _why_not(st, group, users.get(uid, str(uid)), user_namespace(ctx)),
    )


def _parameters(ctx: Context, modules: tuple[str, ...]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for m in modules:
        values = {
            p: v
            for p in PARAMETERS
            if (v := _read(ctx.under(f"/sys/module/{m}/parameters/{p}"))) is not None
        }
        if values:
            out[m] = values
    return out


def _nvidia_minor(ctx: Context, address: str) -> str:
    """The N of /dev/nvidiaN: "Device Minor" in /proc/driver/nvidia/gpus/ADDRESS/information."""
    text = _read(ctx.under(f"/proc/driver/nvidia/gpus/{address}/information")) or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Device Minor" and value.strip().isdigit():
            return value.strip()
    return "0"


def _listed(ctx: Context, folder: str, prefix: str) -> list[str]:
    try:
        entries = ctx.under(folder).iterdir()
        return sorted(p.name for p in islice(entries, LISTED) if p.name.startswith(prefix))[:MANY]
    except OSError:
        return []


def _stem(name: str) -> str | None:
    """The firmware file's name without .bin, .bin.zst or .bin.xz; None for another file."""
    suffix = next((x for x in FIRMWARE_SUFFIXES if name.endswith(x)), None)
    return name.removesuffix(suffix) if suffix else None


def _amd_firmware(ctx: Context, chip: str | None, device: str) -> dict[str, Any]:
    """amdgpu/<chip>_*.bin for a chip amdgpu knows by name, complete when one of the parts it
    loads first is there; for a chip found by IP discovery, the files named by its IP versions."""
    if chip is not None and chip not in chips()["amd"]["chips"]:
        present = _listed(ctx, "/lib/firmware/amdgpu", f"{chip}_")
        first = [n for n in present if (_stem(n) or "").removeprefix(f"{chip}_") in FIRST_PARTS]
        return {
            "pattern": f"/lib/firmware/amdgpu/{chip}_*.bin",
            "present": present,
            "complete": bool(first),
        }
    if chip is None:
        dev = device.lower().removeprefix("0x")
        why = _unlisted(AMD, dev) or (
            f"1002:{dev} is found by IP discovery, and the IP versions {linux()} documents "
            f"(GC 11 and newer) are not those of a chip {_pci_ids()} gives this ID, so the "
            "firmware files it needs are unknown"
        )
        return {"unknown": why}
    return _discovery_firmware(ctx, chip)


def _discovery_firmware(ctx: Context, chip: str) -> dict[str, Any]:
    """The files amdgpu requests first for the chip's GC, SDMA and PSP IP versions (one set per
    variant the kernel's tables give the chip): complete when one variant's are all there."""
    variants = chips()["amd"]["chips"][chip]["variants"]
    prefixes = sorted({f"{b}_{v[b]}" for v in variants for b in ("gc", "sdma", "psp")})
    present = [n for p in prefixes for n in _listed(ctx, "/lib/firmware/amdgpu", f"{p}")]
    stems = {_stem(n) for n in present}
    missing = min(
        ([f for f in v["required"] if f.removesuffix(".bin") not in stems] for v in variants),
        key=len,
    )
    shown = missing or variants[0]["required"]
    return {
        "pattern": "/lib/firmware/amdgpu/" + ", ".join(shown),
        "present": present,
        "complete": not missing,
        "missing": missing,
        "ip_chip": chip,
        "variants": [{b: v[b] for b in ("gc", "sdma", "psp")} for v in variants],
    }


def _nouveau_firmware(ctx: Context, device: str, chip: str | None) -> dict[str, Any]:
    """nouveau's GSP firmware nvidia/<chip>/gsp/gsp-<version>.bin, for the versions it
    requests; {} for a chip older than Turing, which nouveau drives without GSP."""
    dev = device.lower().removeprefix("0x")
    if chip is None:
        why = _unlisted(NVIDIA, dev)
        return {"unknown": why} if why else {}
    gsp = chips()["nvidia"]["nouveau_gsp"].get(chip)
    if gsp is None:
        return {
            "unknown": f"nouveau of {linux()} requests no GSP firmware for {chip}, so the "
            "firmware it needs is unknown"
        }
    folder = f"/lib/firmware/nvidia/{chip}/gsp"
    # any version counts: a kernel newer than the tables' may request one they do not name
    present = [n for n in _listed(ctx, folder, "gsp-") if _stem(n)]
    return {
        "pattern": f"{folder}/gsp-*.bin",
        "present": present,
        "complete": bool(present),
        "versions": gsp["versions"],
    }


def _firmware(
    ctx: Context, vendor: str, device: str, chip: str | None, wanted: str | None
) -> dict[str, Any]:
    """The firmware the driver loads: amdgpu's for an AMD chip; NVIDIA's GSP firmware
    nvidia/<version>/gsp_*.bin for the loaded nvidia module; nouveau's
    nvidia/<chip>/gsp/gsp-<version>.bin for a Turing-or-newer chip. A dict with "unknown" (and
    why) where the tables cannot tell."""
    if vendor == AMD and wanted == "amdgpu":
        return _amd_firmware(ctx, chip, device)
    if vendor == NVIDIA and wanted == "nouveau":
        return _nouveau_firmware(ctx, device, chip)
    version = _read(ctx.under("/sys/module/nvidia/version")) if vendor == NVIDIA else None
    if version:
        folder = f"/lib/firmware/nvidia/{version}"
        present = _listed(ctx, folder, "gsp_")
        return {
            "pattern": f"{folder}/gsp_*.bin",
            "present": present,
            "complete": bool(present),
            "module_version": version,
        }
    return {}


def _gpu(ctx: Context, entry: Path, uid: int, gids: set[int]) -> Gpu | None:
    unreadable: list[str] = []
    pci_class = _sysfs(entry, "class", unreadable)
    driver = _link_name(entry / "driver")
    if pci_class is None:
        # no class to go by: a device a GPU driver drives, or with DRM nodes, is a GPU
        if driver not in GPU_DRIVERS and not (entry / "drm").is_dir():
            return None
    elif not pci_class.startswith("0x03"):
        return None
    vendor = (_sysfs(entry, "vendor", unreadable) or "").lower()
    device = (_sysfs(entry, "device", unreadable) or "").lower()
    subsystem = (
        f"{_read(entry / 'subsystem_vendor') or '?'}:{_read(entry / 'subsystem_device') or '?'}"
    )
    ident = _identify(vendor, device)
    try:
        drm = sorted(p.name for p in islice((entry / "drm").iterdir(), LISTED))[:MANY]
    except OSError:
        drm = []
    if driver in PCI_TRANSPORTS:
        driver, drm = _transported(entry)
        ident = {**ident, **_drm_identity(driver)}
    if driver == "nvidia":
        # NVIDIA's Vulkan driver opens its own nodes, not /dev/dri
        paths = ["/dev/nvidiactl", f"/dev/nvidia{_nvidia_minor(ctx, entry.name)}"]
    else:
        paths = [f"/dev/dri/{n}" for n in drm if n.startswith("renderD")]
    nodes = tuple(node(ctx, p, uid, gids) for p in paths)
    modules = tuple(m for m in GPU_DRIVERS if ctx.under(f"/sys/module/{m}").is_dir())
    wanted = "amdgpu" if ident.get("vulkan") == "RADV" else None
    if vendor == NVIDIA and (driver == "nouveau" or (driver is None and "nvidia" not in modules)):
        wanted = "nouveau"
    return Gpu(
        address=entry.name,
        vendor=vendor,
        device=device,
        subsystem=subsystem,
        pci_class=pci_class or "",
        vendor_name=VENDOR_NAMES.get(vendor, vendor or "unknown vendor"),
        chip=ident["chip"],
        family=ident["family"],
        vulkan=ident["vulkan"],
        conformant=ident["conformant"],
        claimed_by=tuple(ident["claimed_by"]),
        driver=driver,
        # a module's parameters belong to the GPUs it may drive
        parameters=_parameters(
            ctx, tuple(m for m in modules if m in ident["claimed_by"] or m == driver)
        ),
        modules_loaded=modules,
        nodes=nodes,
        sysfs_nodes=tuple(drm),
        firmware=_firmware(ctx, vendor, device, ident["chip"], wanted),
        unreadable=tuple(unreadable),
    )


def _drm_identity(driver: str | None) -> dict[str, Any]:
    family, vulkan = DRM_VULKAN.get(driver or "", (None, None))
    return {
        "family": family,
        "vulkan": vulkan,
        "conformant": None,
        "claimed_by": (driver,) if driver else (),
    }


def _transported(entry: Path) -> tuple[str | None, list[str]]:
    """The driver and DRM nodes of the device a transport's PCI function carries (virtio-pci's
    virtioN child, which virtio_gpu drives)."""
    try:
        children = sorted(p for p in islice(entry.iterdir(), LISTED) if (p / "drm").is_dir())
    except OSError:
        return None, []
    for child in children[:MANY]:
        try:
            drm = sorted(p.name for p in islice((child / "drm").iterdir(), LISTED))[:MANY]
        except OSError:
            continue
        return _link_name(child / "driver"), drm
    return None, []


def _platform_gpus(ctx: Context, uid: int, gids: set[int]) -> tuple[Gpu, ...]:
    """GPUs off the PCI bus (an SoC's, on the platform bus): each device with a render node in
    /sys/class/drm that is not a PCI function's, known by the DRM driver bound to it."""
    devices: dict[Path, list[str]] = {}
    for name in _listed(ctx, "/sys/class/drm", "renderD"):
        try:
            device = ctx.under(f"/sys/class/drm/{name}").resolve().parent.parent
        except (OSError, RuntimeError):
            continue
        if not any(part.startswith("pci") for part in device.parts):
            devices.setdefault(device, []).append(name)
    modules = tuple(m for m in DRM_VULKAN if ctx.under(f"/sys/module/{m}").is_dir())
    out = []
    for device, renders in sorted(devices.items())[:MANY]:
        driver = _link_name(device / "driver")
        uevent = dict(
            line.partition("=")[::2] for line in (_read(device / "uevent") or "").splitlines()
        )
        ident = _drm_identity(driver)
        out.append(
            Gpu(
                address=device.name,
                vendor="",
                device="",
                subsystem="",
                pci_class="",
                vendor_name="SoC",
                chip=uevent.get("OF_COMPATIBLE_0") or None,
                family=ident["family"],
                vulkan=ident["vulkan"],
                conformant=None,
                claimed_by=ident["claimed_by"],
                driver=driver,
                parameters={},
                modules_loaded=modules,
                nodes=tuple(node(ctx, f"/dev/dri/{r}", uid, gids) for r in renders),
                sysfs_nodes=tuple(renders),
                firmware={},
            )
        )
    return tuple(out)


def blacklisted(ctx: Context, cmdline: str) -> dict[str, str]:
    """module -> where it is blacklisted: module_blacklist= on the command line, `blacklist` or
    `install M /bin/false` in the modprobe directories."""
    out: dict[str, str] = {}
    for word in cmdline.split():
        if word.startswith(("module_blacklist=", "modprobe.blacklist=")):
            for m in word.split("=", 1)[1].split(","):
                out.setdefault(m, f"/proc/cmdline ({word})")
    for d in MODPROBE_DIRS:
        try:
            confs = sorted(islice(ctx.under(d).glob("*.conf"), LISTED))[:MANY]
        except OSError:
            continue
        for conf in confs:
            for n, line in enumerate((_read(conf) or "").splitlines(), 1):
                words = line.split("#", 1)[0].split()
                if (len(words) >= 2 and words[0] == "blacklist") or (
                    len(words) >= 3
                    and words[0] == "install"
                    and words[2] in ("/bin/false", "/bin/true")
                ):
                    out.setdefault(words[1], f"{d}/{conf.name}:{n}")
    return out


def wsl(ctx: Context) -> dict[str, Any] | None:
    """WSL2, by its own signs: /dev/dxg and the kernel's release string."""
    release = _read(ctx.under("/proc/sys/kernel/osrelease")) or ""
    dxg = ctx.under("/dev/dxg").exists()
    if not dxg and "microsoft" not in release.lower():
        return None
    lib = ctx.under("/usr/lib/wsl/lib")
    try:
        libs = sorted(p.name for p in islice(lib.iterdir(), LISTED))[:MANY]
    except OSError:
        libs = []
    return {"release": release, "dxg": dxg, "wsl_lib": libs}


#: where distributions and NVIDIA's installer put NVIDIA's libraries
LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
)
NVIDIA_VERSIONED = ("libGLX_nvidia.so.", "libnvidia-glcore.so.")


def nvidia_userspace(ctx: Context) -> tuple[str, ...]:
    """The driver versions V of the libGLX_nvidia.so.V and libnvidia-glcore.so.V installed."""
    found: set[str] = set()
    for folder in LIBRARY_DIRS:
        for prefix in NVIDIA_VERSIONED:
            for name in _listed(ctx, folder, prefix):
                version = name.removeprefix(prefix)
                if version.count(".") in (1, 2) and version.replace(".", "").isdigit():
                    found.add(version)
    return tuple(sorted(found))


def machine(ctx: Context) -> GpuMachine:
    """Every PCI display/3D controller and the kernel configuration around it."""
    uid, gids = os.getuid(), {os.getgid(), *os.getgroups()}
    try:
        entries = sorted(islice(ctx.under(PCI_DEVICES).iterdir(), LISTED))[:MANY]
    except OSError:
        entries = []
    gpus = tuple(g for e in entries if (g := _gpu(ctx, e, uid, gids)) is not None)
    gpus += _platform_gpus(ctx, uid, gids)
    cmdline = _read(ctx.under("/proc/cmdline")) or ""
    return GpuMachine(
        gpus=gpus,
        cmdline=cmdline,
        release=_read(ctx.under("/proc/sys/kernel/osrelease")) or "",
        nomodeset="nomodeset" in cmdline.split(),
        blacklisted=blacklisted(ctx, cmdline),
        dev_dri=ctx.under("/dev/dri").is_dir(),
        wsl=wsl(ctx),
        nvidia_module=_read(ctx.under("/sys/module/nvidia/version")),
        nvidia_userspace=nvidia_userspace(ctx),
        nvidia_proc_version=(_read(ctx.under("/proc/driver/nvidia/version")) or "").split("\n")[0]
        or None,
    )
