"""Below the Vulkan driver: each GPU on the PCI bus, the kernel driver bound to it, the firmware it
needs, its DRM nodes and who may open them, and the Vulkan driver that serves its generation.

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
AMD, INTEL, NVIDIA, MICROSOFT = "0x1002", "0x8086", "0x10de", "0x1414"
VENDOR_NAMES = {AMD: "AMD", INTEL: "Intel", NVIDIA: "NVIDIA", MICROSOFT: "Microsoft"}
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
#: NVIDIA PCI device ID ranges -> the chip whose GSP firmware nouveau loads from
#: /lib/firmware/nvidia/<chip>/gsp/ (Turing and newer; NVIDIA numbers each chip's IDs in one block)
NVIDIA_GSP_CHIPS = (
    (0x1E00, 0x1E7F, "tu102"),
    (0x1E80, 0x1EFF, "tu104"),
    (0x1F00, 0x1F7F, "tu106"),
    (0x1F80, 0x1FFF, "tu117"),
    (0x2080, 0x20FF, "ga100"),
    (0x2180, 0x21FF, "tu116"),
    (0x2200, 0x223F, "ga102"),
    (0x2400, 0x247F, "ga103"),
    (0x2480, 0x24FF, "ga104"),
    (0x2500, 0x257F, "ga106"),
    (0x2580, 0x25FF, "ga107"),
    (0x2680, 0x26FF, "ad102"),
    (0x2700, 0x277F, "ad103"),
    (0x2780, 0x27FF, "ad104"),
    (0x2800, 0x287F, "ad106"),
    (0x2880, 0x28FF, "ad107"),
)
#: AMD chips amdgpu finds by IP discovery (RDNA 3 and newer): PCI device ID range -> the chip and
#: the IP versions that name its firmware (amdgpu's psp_v13_0.c, gfx_v11_0.c, psp_v14_0.c)
AMD_DISCOVERY_CHIPS = (
    (0x7440, 0x745F, "navi31", "psp_13_0_0", "gc_11_0_0"),
    (0x7460, 0x747F, "navi32", "psp_13_0_10", "gc_11_0_3"),
    (0x7480, 0x749F, "navi33", "psp_13_0_7", "gc_11_0_2"),
    (0x7550, 0x755F, "navi48", "psp_14_0_3", "gc_12_0_1"),
    (0x7590, 0x759F, "navi44", "psp_14_0_2", "gc_12_0_0"),
)
#: the parts of a chip's firmware amdgpu loads first, by name after `<chip>_`: a chip with none
#: of these present does not start, whatever else matches `<chip>_*`
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
    if vendor == AMD:
        # amdgpu takes every newer AMD display controller by its PCI class (IP discovery)
        return {
            "chip": None,
            "family": "RDNA 3 or newer (by IP discovery)",
            "vulkan": "RADV",
            "conformant": True,
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


def nvidia_chip(device: str) -> str | None:
    """The Turing-or-newer chip of an NVIDIA PCI device ID, as nouveau names its firmware folder."""
    try:
        number = int(device, 16)
    except ValueError:
        return None
    return next((chip for lo, hi, chip in NVIDIA_GSP_CHIPS if lo <= number <= hi), None)


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


def _why_not(st: os.stat_result, group: str | None, user: str) -> str:
    """Why `user` may not open a node it was refused."""
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
        why=None if usable else _why_not(st, group, users.get(uid, str(uid))),
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
    loads first is there; for a chip found by IP discovery, its PSP sos and GC pfp files."""
    if chip is not None:
        present = _listed(ctx, "/lib/firmware/amdgpu", f"{chip}_")
        first = [n for n in present if (_stem(n) or "").removeprefix(f"{chip}_") in FIRST_PARTS]
        return {
            "pattern": f"/lib/firmware/amdgpu/{chip}_*.bin",
            "present": present,
            "complete": bool(first),
        }
    try:
        number = int(device.removeprefix("0x"), 16)
    except ValueError:
        return {}
    found = next((c for c in AMD_DISCOVERY_CHIPS if c[0] <= number <= c[1]), None)
    if found is None:
        return {}
    needed = (f"{found[3]}_sos", f"{found[4]}_pfp")
    present = [
        n
        for prefix in (found[3], found[4])
        for n in _listed(ctx, "/lib/firmware/amdgpu", f"{prefix}_")
    ]
    stems = {_stem(n) for n in present}
    return {
        "pattern": " and ".join(f"/lib/firmware/amdgpu/{n}.bin" for n in needed),
        "present": present,
        "complete": all(n in stems for n in needed),
        "ip_chip": found[2],
    }


def _firmware(
    ctx: Context, vendor: str, device: str, chip: str | None, wanted: str | None
) -> dict[str, Any]:
    """The firmware the driver loads: amdgpu's for an AMD chip; NVIDIA's GSP firmware
    nvidia/<version>/gsp_*.bin for the loaded nvidia module; nouveau's
    nvidia/<chip>/gsp/gsp-*.bin for a Turing-or-newer chip."""
    if vendor == AMD and wanted == "amdgpu":
        return _amd_firmware(ctx, chip, device)
    if vendor == NVIDIA and chip is not None and wanted == "nouveau":
        folder = f"/lib/firmware/nvidia/{chip}/gsp"
        present = _listed(ctx, folder, "gsp-")
        return {"pattern": f"{folder}/gsp-*.bin", "present": present, "complete": bool(present)}
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


def machine(ctx: Context) -> GpuMachine:
    """Every PCI display/3D controller and the kernel configuration around it."""
    uid, gids = os.getuid(), {os.getgid(), *os.getgroups()}
    try:
        entries = sorted(islice(ctx.under(PCI_DEVICES).iterdir(), LISTED))[:MANY]
    except OSError:
        entries = []
    gpus = tuple(g for e in entries if (g := _gpu(ctx, e, uid, gids)) is not None)
    cmdline = _read(ctx.under("/proc/cmdline")) or ""
    return GpuMachine(
        gpus=gpus,
        cmdline=cmdline,
        release=_read(ctx.under("/proc/sys/kernel/osrelease")) or "",
        nomodeset="nomodeset" in cmdline.split(),
        blacklisted=blacklisted(ctx, cmdline),
        dev_dri=ctx.under("/dev/dri").is_dir(),
        wsl=wsl(ctx),
    )
