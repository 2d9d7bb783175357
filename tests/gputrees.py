"""Trees laid out as the kernel and udev lay out real machines with a GPU: sysfs's PCI device
directory under /sys/devices with the relative links the kernel makes (/sys/bus/pci/devices/X,
its `driver`, /sys/class/drm/renderD128), /sys/module/M/parameters, device nodes made with mknod
(tests run as root), /proc/cmdline, /etc/group, /lib/firmware and /etc/modprobe.d.

The machines they copy (the layouts of these classes of machine, as public issue threads show them):

- `si_on_radeon`: a Radeon HD 7970 (Tahiti XT, 1002:6798) in a PCIe slot behind root port
  00:01.0, bound to radeon as Linux does by default (waydroid/waydroid#2310, nixpkgs#82305);
  amdgpu is loaded with si_support=0, radeon with si_support=1.
- `haswell`: the HD Graphics 4600 (8086:0416) at 00:02.0 on i915, with Debian 12's Mesa manifests
  (intel_hasvk_icd) (eval-exec/neomacs#109).
- `wsl2`: WSL2's kernel (5.15.167.4-microsoft-standard-WSL2), /dev/dxg, /usr/lib/wsl/lib and a
  dzn manifest, no PCI GPU (tracel-ai/burn#792).
- `polaris_container`: an RX 580 (Polaris 10, 1002:67df) on amdgpu, seen from a Docker container
  (/.dockerenv) whose /etc/group lacks the host's render gid 993 (ValveSoftware/Proton#9008).
- `polaris_no_firmware`: the same card with amdgpu loaded, no driver bound and no
  /lib/firmware/amdgpu/polaris10_*.bin.
- `polaris_no_dri`: the RX 580 bound to amdgpu, seen from a container started without /dev/dri.
- `rdna3_no_firmware`: an RX 7900 XTX (Navi 31, 1002:744c, found by IP discovery) behind its
  switch, amdgpu loaded, nothing bound, on a merged /usr (/lib -> usr/lib) whose
  /usr/lib/firmware/amdgpu holds only another chip's navi10_sos.bin.zst.
- `arc_on_6_1`: an Arc A770 (DG2, 8086:56a0) behind its card's PCIe switch on Debian 12's Linux
  6.1, i915 loaded with an empty force_probe and not bound to it.
- `prime_nouveau`: an Ubuntu 24.04 PRIME laptop: Alder Lake-P graphics (8086:46a6) on i915 and an
  RTX 3060 Laptop GPU (GA106, 10de:2560) behind root port 00:01.0 on nouveau, with nouveau's
  nvidia/ga106 firmware folders but no gsp/ (so NVK has no device).
- `blackwell_nouveau`: an Ubuntu 25.10 desktop (Linux 6.17) with an RTX 5090 (GB202, 10de:2b85)
  behind root port 00:01.0 on nouveau, Mesa's NVK manifest, and no nvidia/gb202/gsp/ (laid out
  as `prime_nouveau`'s discrete GPU is, on a desktop).
- `navi33_laptop`: a laptop's RX 7600M XT (Navi 33, 1002:73f0, found by IP discovery) behind its
  switch, amdgpu loaded and nothing bound, whose /lib/firmware/amdgpu has the GC 11.0.2 and
  SDMA 6.0.2 files but not PSP 13.0.7's psp_13_0_7_sos.bin.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

DRM_MAJOR = 226
RENDER_GID = 993


def _w(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def pci_gpu(
    root: Path,
    *,
    parent: str,
    address: str,
    vendor: str,
    device: str,
    subsystem: tuple[str, str],
    pci_class: str = "0x030000",
    driver: str | None,
    minor: int | None = 0,
) -> Path:
    """The PCI function's directory and the links the kernel makes to it."""
    sysdev = (
        root / "sys/devices/pci0000:00" / parent / address
        if parent
        else (root / "sys/devices/pci0000:00" / address)
    )
    rel = f"pci0000:00/{parent + '/' if parent else ''}{address}"
    for name, value in (
        ("vendor", vendor),
        ("device", device),
        ("subsystem_vendor", subsystem[0]),
        ("subsystem_device", subsystem[1]),
        ("class", pci_class),
        ("enable", "1"),
        ("boot_vga", "1"),
    ):
        _w(sysdev / name, value + "\n")
    _link(root / "sys/bus/pci/devices" / address, f"../../../devices/{rel}")
    (root / "sys/bus/pci/drivers").mkdir(parents=True, exist_ok=True)
    if driver is not None:
        (root / "sys/bus/pci/drivers" / driver).mkdir(exist_ok=True)
        depth = "../" * (rel.count("/") + 2)
        _link(sysdev / "driver", f"{depth}bus/pci/drivers/{driver}")
        _link(root / "sys/bus/pci/drivers" / driver / address, f"../../../../devices/{rel}")
        if minor is not None:
            for node, num in ((f"card{minor}", minor), (f"renderD{128 + minor}", 128 + minor)):
                _w(sysdev / "drm" / node / "dev", f"{DRM_MAJOR}:{num}\n")
                _link(root / "sys/class/drm" / node, f"../../devices/{rel}/drm/{node}")
    return sysdev


def module(root: Path, name: str, **parameters: str) -> None:
    """/sys/module/NAME as a loaded module shows it."""
    _w(root / "sys/module" / name / "initstate", "live\n")
    for key, value in parameters.items():
        _w(root / "sys/module" / name / "parameters" / key, value + "\n")


def dev_dri(root: Path, minor: int = 0, *, gid: int = RENDER_GID, mode: int = 0o660) -> None:
    """/dev/dri/cardN (root:video 0660) and renderD(128+N) as udev makes them."""
    dri = root / "dev/dri"
    dri.mkdir(parents=True, exist_ok=True)
    for name, num, group, m in (
        (f"card{minor}", minor, 44, 0o660),
        (f"renderD{128 + minor}", 128 + minor, gid, mode),
    ):
        path = dri / name
        os.mknod(path, 0o600 | 0o020000, os.makedev(DRM_MAJOR, num))
        os.chown(path, 0, group)
        path.chmod(m)


def etc(root: Path, *, render: bool = True, debian: bool = True) -> None:
    groups = "root:x:0:\nvideo:x:44:\n" + (f"render:x:{RENDER_GID}:\n" if render else "")
    _w(root / "etc/group", groups)
    _w(root / "etc/passwd", "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/:/bin/false\n")
    if debian:
        _w(
            root / "etc/os-release",
            'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12"\n',
        )


def cmdline(root: Path, text: str) -> None:
    _w(root / "proc/cmdline", text + "\n")


def icd(root: Path, name: str, library: str) -> None:
    doc = {
        "file_format_version": "1.0.0",
        "ICD": {"library_path": library, "api_version": "1.3.230"},
    }
    _w(root / "usr/share/vulkan/icd.d" / name, json.dumps(doc) + "\n")


CMDLINE = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=0d1c ro quiet"


def si_on_radeon(root: Path) -> None:
    etc(root)
    cmdline(root, CMDLINE)
    pci_gpu(
        root,
        parent="0000:00:01.0",
        address="0000:01:00.0",
        vendor="0x1002",
        device="0x6798",
        subsystem=("0x1002", "0x3000"),
        driver="radeon",
    )
    module(root, "radeon", si_support="1", cik_support="1", modeset="-1")
    module(root, "amdgpu", si_support="0", cik_support="0")
    dev_dri(root)
    icd(root, "radeon_icd.x86_64.json", "libvulkan_radeon.so")


def haswell(root: Path) -> None:
    etc(root)
    cmdline(root, CMDLINE)
    pci_gpu(
        root,
        parent="",
        address="0000:00:02.0",
        vendor="0x8086",
        device="0x0416",
        subsystem=("0x1043", "0x8534"),
        driver="i915",
    )
    module(root, "i915", modeset="-1")
    dev_dri(root)
    icd(root, "intel_icd.x86_64.json", "libvulkan_intel.so")
    icd(root, "intel_hasvk_icd.x86_64.json", "libvulkan_intel_hasvk.so")


def wsl2(root: Path) -> None:
    etc(root, render=False)
    cmdline(root, "initrd=\\initrd.img WSL_ROOT_INIT=1 panic=-1 nr_cpus=16 swiotlb=force")
    _w(root / "proc/sys/kernel/osrelease", "5.15.167.4-microsoft-standard-WSL2\n")
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    (root / "dev").mkdir(exist_ok=True)
    os.mknod(root / "dev/dxg", 0o666 | 0o020000, os.makedev(10, 124))
    (root / "dev/dxg").chmod(0o666)
    for lib in ("libd3d12.so", "libd3d12core.so", "libdxcore.so", "libcuda.so.1"):
        _w(root / "usr/lib/wsl/lib" / lib, "")
    icd(root, "dzn_icd.x86_64.json", "libvulkan_dzn.so")
    icd(root, "lvp_icd.x86_64.json", "libvulkan_lvp.so")


def _polaris(root: Path, *, driver: str | None, render_group: bool = True) -> None:
    etc(root, render=render_group)
    cmdline(root, CMDLINE)
    pci_gpu(
        root,
        parent="0000:00:03.1",
        address="0000:0a:00.0",
        vendor="0x1002",
        device="0x67df",
        subsystem=("0x1da2", "0xe366"),
        driver=driver,
    )
    module(root, "amdgpu", si_support="0", cik_support="0")
    icd(root, "radeon_icd.x86_64.json", "libvulkan_radeon.so")


def polaris_container(root: Path) -> None:
    _polaris(root, driver="amdgpu", render_group=False)
    _w(root / ".dockerenv", "")
    dev_dri(root)


def polaris_no_firmware(root: Path) -> None:
    _polaris(root, driver=None)
    for name in ("tahiti_mc.bin", "vega10_sos.bin", "navi10_gpu_info.bin"):
        _w(root / "lib/firmware/amdgpu" / name, "")


def polaris_no_dri(root: Path) -> None:
    _polaris(root, driver="amdgpu", render_group=False)
    _w(root / ".dockerenv", "")
    (root / "dev").mkdir(exist_ok=True)


def nvidia_container(root: Path) -> None:
    """An NVIDIA GPU (H100 SXM, 10de:2330) on the nvidia module seen from a container as the
    NVIDIA container toolkit makes one: /dev/nvidiactl and /dev/nvidia0 0666, no /dev/dri, the
    driver's manifest under /usr/local/nvidia linked from /usr/share/vulkan/icd.d."""
    etc(root, render=False)
    cmdline(root, CMDLINE)
    pci_gpu(
        root,
        parent="0000:00:04.0",
        address="0000:05:00.0",
        vendor="0x10de",
        device="0x2330",
        subsystem=("0x10de", "0x16c1"),
        pci_class="0x030200",
        driver="nvidia",
        minor=None,
    )
    module(root, "nvidia")
    _w(root / "sys/module/nvidia/version", "580.159.04\n")
    _w(
        root / "proc/driver/nvidia/gpus/0000:05:00.0/information",
        "Model: \t\t NVIDIA H100 80GB HBM3\nDevice Minor: \t 0\nBus Location: \t 0000:05:00.0\n",
    )
    _w(root / ".dockerenv", "")
    (root / "dev").mkdir(exist_ok=True)
    for name, minor in (("nvidiactl", 255), ("nvidia0", 0)):
        os.mknod(root / "dev" / name, 0o666 | 0o020000, os.makedev(195, minor))
        (root / "dev" / name).chmod(0o666)
    icd(root, "nvidia_icd.json", "libGLX_nvidia.so.0")


def rdna3_no_firmware(root: Path) -> None:
    (root / "usr/lib/firmware/amdgpu").mkdir(parents=True)
    (root / "lib").symlink_to("usr/lib")
    etc(root)
    cmdline(root, CMDLINE)
    pci_gpu(
        root,
        parent="0000:00:01.1/0000:01:00.0/0000:02:00.0",
        address="0000:03:00.0",
        vendor="0x1002",
        device="0x744c",
        subsystem=("0x1da2", "0xe471"),
        driver=None,
    )
    module(root, "amdgpu", si_support="0", cik_support="0")
    _w(root / "usr/lib/firmware/amdgpu/navi10_sos.bin.zst", "")
    icd(root, "radeon_icd.x86_64.json", "libvulkan_radeon.so")


def arc_on_6_1(root: Path) -> None:
    etc(root)
    cmdline(root, "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=UUID=6b1f ro quiet")
    _w(root / "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n")
    pci_gpu(
        root,
        parent="0000:00:01.1/0000:01:00.0/0000:02:01.0",
        address="0000:03:00.0",
        vendor="0x8086",
        device="0x56a0",
        subsystem=("0x8086", "0x1020"),
        driver=None,
    )
    module(root, "i915", force_probe="", modeset="-1")
    icd(root, "intel_icd.x86_64.json", "libvulkan_intel.so")


def prime_nouveau(root: Path) -> None:
    etc(root, debian=False)
    _w(root / "etc/os-release", 'ID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n')
    cmdline(root, "BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=2f7d ro quiet splash")
    for address, parent, vendor, device, driver, minor in (
        ("0000:00:02.0", "", "0x8086", "0x46a6", "i915", 0),
        ("0000:01:00.0", "0000:00:01.0", "0x10de", "0x2560", "nouveau", 1),
    ):
        pci_gpu(
            root,
            parent=parent,
            address=address,
            vendor=vendor,
            device=device,
            subsystem=("0x1043", "0x1a13"),
            driver=driver,
            minor=minor,
        )
        module(root, driver, modeset="-1")
        dev_dri(root, minor)
    for folder in ("acr", "gr", "nvdec", "sec2"):
        _w(root / "lib/firmware/nvidia/ga106" / folder / "ucode_unload.bin", "")
    icd(root, "intel_icd.x86_64.json", "libvulkan_intel.so")
    icd(root, "nouveau_icd.x86_64.json", "libvulkan_nouveau.so")


def blackwell_nouveau(root: Path) -> None:
    etc(root, debian=False)
    _w(root / "etc/os-release", 'ID=ubuntu\nID_LIKE=debian\nVERSION_ID="25.10"\n')
    cmdline(root, "BOOT_IMAGE=/boot/vmlinuz-6.17.0-5-generic root=UUID=9a3e ro quiet splash")
    _w(root / "proc/sys/kernel/osrelease", "6.17.0-5-generic\n")
    pci_gpu(
        root,
        parent="0000:00:01.0",
        address="0000:01:00.0",
        vendor="0x10de",
        device="0x2b85",
        subsystem=("0x10de", "0x2057"),
        driver="nouveau",
    )
    module(root, "nouveau", modeset="-1")
    dev_dri(root)
    (root / "lib/firmware/nvidia").mkdir(parents=True)
    icd(root, "nouveau_icd.x86_64.json", "libvulkan_nouveau.so")


def navi33_laptop(root: Path) -> None:
    etc(root)
    cmdline(root, CMDLINE)
    pci_gpu(
        root,
        parent="0000:00:01.1/0000:01:00.0/0000:02:00.0",
        address="0000:03:00.0",
        vendor="0x1002",
        device="0x73f0",
        subsystem=("0x1043", "0x1c43"),
        driver=None,
    )
    module(root, "amdgpu", si_support="0", cik_support="0")
    for name in ("gc_11_0_2_pfp", "gc_11_0_2_me", "gc_11_0_2_mec", "gc_11_0_2_rlc", "sdma_6_0_2"):
        _w(root / f"lib/firmware/amdgpu/{name}.bin", "")
    icd(root, "radeon_icd.x86_64.json", "libvulkan_radeon.so")


MACHINES = {
    "si_on_radeon": si_on_radeon,
    "haswell": haswell,
    "wsl2": wsl2,
    "polaris_container": polaris_container,
    "polaris_no_firmware": polaris_no_firmware,
    "polaris_no_dri": polaris_no_dri,
    "nvidia_container": nvidia_container,
    "rdna3_no_firmware": rdna3_no_firmware,
    "arc_on_6_1": arc_on_6_1,
    "prime_nouveau": prime_nouveau,
    "blackwell_nouveau": blackwell_nouveau,
    "navi33_laptop": navi33_laptop,
}


def arc_on_xe_old_mesa(root: Path) -> None:
    """An Arc A770 (8086:56a0) that xe drives on Ubuntu 22.04's 6.8 HWE kernel, with Mesa
    23.0.4 from the archive (a ANV built without Xe KMD support), as a user forces xe:
    i915.force_probe=!56a0 xe.force_probe=56a0."""
    etc(root)
    cmdline(
        root,
        "BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=6b1f ro quiet "
        "i915.force_probe=!56a0 xe.force_probe=56a0",
    )
    _w(root / "proc/sys/kernel/osrelease", "6.8.0-49-generic\n")
    _w(root / "etc/os-release", 'NAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n')
    pci_gpu(
        root,
        parent="0000:00:01.1/0000:01:00.0/0000:02:01.0",
        address="0000:03:00.0",
        vendor="0x8086",
        device="0x56a0",
        subsystem=("0x8086", "0x1020"),
        driver="xe",
    )
    module(root, "xe", force_probe="56a0")
    dev_dri(root)
    lib = "/usr/lib/x86_64-linux-gnu/libvulkan_intel.so"
    icd(root, "intel_icd.x86_64.json", lib)
    (root / lib.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    (root / lib.lstrip("/")).write_bytes(Path("/usr/lib/x86_64-linux-gnu/libc.so.6").read_bytes())
    version = "23.0.4-0ubuntu1~22.04.1"
    _w(
        root / "var/lib/dpkg/status",
        "Package: dpkg\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1.21.1\n\n"
        "Package: mesa-vulkan-drivers\nStatus: install ok installed\nArchitecture: amd64\n"
        f"Multi-Arch: same\nSource: mesa\nVersion: {version}\n",
    )
    _w(
        root / "var/lib/dpkg/info/mesa-vulkan-drivers:amd64.list",
        f"/usr/share/vulkan/icd.d/intel_icd.x86_64.json\n{lib}\n",
    )


MACHINES["arc_on_xe_old_mesa"] = arc_on_xe_old_mesa


# Machines of classes first checked by a red team (issue 31), each from a public report:
#
# - `nvidia_api_mismatch`: Pop!_OS 22.04, RTX 3090 (GA102, 10de:2204) on nvidia, the module
#   510.73.05 still loaded after an upgrade of the libraries to 515.48.07 ("NVRM: API mismatch";
#   saharmor/dalle-playground#104, stackhpc/ansible-slurm-appliance#287).
# - `kepler_on_535`: Debian 12, GeForce GT 710 (GK208B, 10de:128b) with NVIDIA's 535.129.03
#   installed, nouveau blacklisted by it, the nvidia module not loaded ("supported through the
#   NVIDIA 470.xx Legacy drivers ... will ignore this GPU"; siderolabs/talos#8764).
# - `nvidia_compute_only`: a Tesla V100 (10de:1db4) in an Ubuntu 24.04 container started with
#   the toolkit's default capabilities: /dev/nvidia*, libcuda and libnvidia-ml, no
#   nvidia_icd.json or libGLX_nvidia (NVIDIA/libnvidia-container#55, gfx-rs/wgpu#2123).
# - `pi4_v3d`: a Raspberry Pi 4 on Ubuntu 22.04 arm64 (5.15.0-1012-raspi): the GPU is the v3d
#   platform device fec00000.v3d (renderD128), vc4 the display (card1); the only PCI function
#   is the VL805 USB controller (parasyte/pixels#139).
# - `virtio_vm`: a QEMU guest whose GPU is virtio-gpu (1af4:1050 on virtio-pci, DRM nodes on
#   its virtio0 child bound to virtio_gpu), with Mesa's Venus manifest (TrippleXC/VenusPatches#6).
# - `mtl_blocked`: Ubuntu 24.04 on Linux 6.12.13 with Meteor Lake graphics (8086:7d45), booted
#   with i915.force_probe=!7d45 and xe loaded unforced: nothing bound (intel/compute-runtime#811).


def _nvidia_nodes(root: Path) -> None:
    (root / "dev").mkdir(exist_ok=True)
    for name, minor in (("nvidiactl", 255), ("nvidia0", 0)):
        os.mknod(root / "dev" / name, 0o666 | 0o020000, os.makedev(195, minor))
        (root / "dev" / name).chmod(0o666)


def _nvidia_libraries(root: Path, version: str) -> None:
    """NVIDIA's GL/Vulkan libraries as its packages install them (real ELF files)."""
    folder = root / "usr/lib/x86_64-linux-gnu"
    folder.mkdir(parents=True, exist_ok=True)
    elf = Path("/usr/lib/x86_64-linux-gnu/libc.so.6").read_bytes()
    for name in ("libGLX_nvidia.so", "libnvidia-glcore.so", "libnvidia-glvkspirv.so"):
        (folder / f"{name}.{version}").write_bytes(elf)
    (folder / "libGLX_nvidia.so.0").symlink_to(f"libGLX_nvidia.so.{version}")
    icd(root, "nvidia_icd.json", "libGLX_nvidia.so.0")


def _ubuntu(root: Path, version: str) -> None:
    etc(root, debian=False)
    _w(
        root / "etc/os-release",
        f'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="{version}"\n',
    )


def nvidia_api_mismatch(root: Path) -> None:
    _ubuntu(root, "22.04")
    cmdline(root, "initrd=\\EFI\\Pop_OS-ce\\initrd.img root=UUID=3c2b ro quiet splash")
    _w(root / "proc/sys/kernel/osrelease", "5.17.15-76051715-generic\n")
    pci_gpu(
        root,
        parent="0000:00:01.0",
        address="0000:01:00.0",
        vendor="0x10de",
        device="0x2204",
        subsystem=("0x1458", "0x403b"),
        driver="nvidia",
    )
    module(root, "nvidia")
    _w(root / "sys/module/nvidia/version", "510.73.05\n")
    module(root, "nvidia_drm", modeset="N")
    _w(
        root / "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  510.73.05  Sat May  7 05:30:26 UTC 2022\n",
    )
    dev_dri(root)
    _nvidia_nodes(root)
    _nvidia_libraries(root, "515.48.07")


def kepler_on_535(root: Path) -> None:
    etc(root)
    cmdline(root, "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=UUID=6b1f ro quiet")
    _w(root / "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n")
    pci_gpu(
        root,
        parent="0000:00:01.0",
        address="0000:01:00.0",
        vendor="0x10de",
        device="0x128b",
        subsystem=("0x1462", "0x8c93"),
        driver=None,
    )
    _w(root / "etc/modprobe.d/nvidia-blacklists-nouveau.conf", "blacklist nouveau\n")
    _nvidia_libraries(root, "535.129.03")


def nvidia_compute_only(root: Path) -> None:
    _ubuntu(root, "24.04")
    cmdline(root, "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=6b1f ro quiet")
    pci_gpu(
        root,
        parent="0000:00:03.0",
        address="0000:3b:00.0",
        vendor="0x10de",
        device="0x1db4",
        subsystem=("0x10de", "0x1214"),
        pci_class="0x030200",
        driver="nvidia",
        minor=None,
    )
    module(root, "nvidia")
    _w(root / "sys/module/nvidia/version", "580.126.09\n")
    _w(root / ".dockerenv", "")
    _nvidia_nodes(root)
    folder = root / "usr/lib/x86_64-linux-gnu"
    folder.mkdir(parents=True)
    for name in ("libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so"):
        (folder / f"{name}.580.126.09").write_bytes(b"")
    icd(root, "lvp_icd.x86_64.json", "libvulkan_lvp.so")


def pi4_v3d(root: Path) -> None:
    _ubuntu(root, "22.04")
    cmdline(root, "coherent_pool=1M 8250.nr_uarts=1 console=tty1 root=LABEL=writable rootwait")
    _w(root / "proc/sys/kernel/osrelease", "5.15.0-1012-raspi\n")
    pci_gpu(
        root,
        parent="0000:00:00.0",
        address="0000:01:00.0",
        vendor="0x1106",
        device="0x3483",
        subsystem=("0x1106", "0x3483"),
        pci_class="0x0c0330",
        driver="xhci_hcd",
        minor=None,
    )
    for dev, drv, name, nodes, compat in (
        ("v3dbus/fec00000.v3d", "v3d", "v3d", (("card0", 0), ("renderD128", 128)), "brcm,2711-v3d"),
        ("gpu", "vc4-drm", "gpu", (("card1", 1),), "brcm,bcm2711-vc5"),
    ):
        sysdev = root / "sys/devices/platform" / dev
        _w(
            sysdev / "uevent",
            f"DRIVER={drv}\nOF_NAME={name}\nOF_COMPATIBLE_0={compat}\nOF_COMPATIBLE_N=1\n"
            f"MODALIAS=of:N{name}T(null)C{compat}\n",
        )
        (root / "sys/bus/platform/drivers" / drv).mkdir(parents=True, exist_ok=True)
        _link(sysdev / "driver", "../" * (dev.count("/") + 3) + f"bus/platform/drivers/{drv}")
        _link(root / "sys/bus/platform/devices" / sysdev.name, f"../../../devices/platform/{dev}")
        for node, num in nodes:
            _w(sysdev / "drm" / node / "dev", f"{DRM_MAJOR}:{num}\n")
            _link(root / "sys/class/drm" / node, f"../../devices/platform/{dev}/drm/{node}")
    module(root, "v3d")
    module(root, "vc4")
    dri = root / "dev/dri"
    dri.mkdir(parents=True)
    for node, num, gid in (("card0", 0, 44), ("card1", 1, 44), ("renderD128", 128, RENDER_GID)):
        os.mknod(dri / node, 0o600 | 0o020000, os.makedev(DRM_MAJOR, num))
        os.chown(dri / node, 0, gid)
        (dri / node).chmod(0o660)
    icd(root, "broadcom_icd.aarch64.json", "/usr/lib/aarch64-linux-gnu/libvulkan_broadcom.so")
    icd(root, "lvp_icd.aarch64.json", "/usr/lib/aarch64-linux-gnu/libvulkan_lvp.so")


def virtio_vm(root: Path) -> None:
    _ubuntu(root, "22.04")
    cmdline(root, "BOOT_IMAGE=/boot/vmlinuz-6.8.0-41-generic root=UUID=1e2f ro quiet splash")
    sysdev = pci_gpu(
        root,
        parent="",
        address="0000:00:01.0",
        vendor="0x1af4",
        device="0x1050",
        subsystem=("0x1af4", "0x1100"),
        driver="virtio-pci",
        minor=None,
    )
    child = sysdev / "virtio0"
    _w(child / "device", "0x0010\n")
    _w(child / "vendor", "0x554d4551\n")
    (root / "sys/bus/virtio/drivers/virtio_gpu").mkdir(parents=True)
    _link(child / "driver", "../../../../bus/virtio/drivers/virtio_gpu")
    for node, num in (("card0", 0), ("renderD128", 128)):
        _w(child / "drm" / node / "dev", f"{DRM_MAJOR}:{num}\n")
        _link(
            root / "sys/class/drm" / node,
            f"../../devices/pci0000:00/0000:00:01.0/virtio0/drm/{node}",
        )
    module(root, "virtio_gpu")
    dev_dri(root)
    icd(root, "virtio_icd.x86_64.json", "libvulkan_virtio.so")
    icd(root, "lvp_icd.x86_64.json", "libvulkan_lvp.so")


def mtl_blocked(root: Path) -> None:
    _ubuntu(root, "24.04")
    cmdline(
        root,
        "BOOT_IMAGE=/boot/vmlinuz-6.12.13 root=UUID=8a1c ro quiet splash i915.force_probe=!7d45",
    )
    _w(root / "proc/sys/kernel/osrelease", "6.12.13\n")
    pci_gpu(
        root,
        parent="",
        address="0000:00:02.0",
        vendor="0x8086",
        device="0x7d45",
        subsystem=("0x17aa", "0x2234"),
        driver=None,
    )
    module(root, "i915", force_probe="!7d45", modeset="-1")
    module(root, "xe", force_probe="")
    icd(root, "intel_icd.x86_64.json", "libvulkan_intel.so")


def podman_rootless(root: Path) -> None:
    """A rootless podman container (podman 5.6, openSUSE host) started with --device /dev/dri:
    the nodes keep the host's owner and group, which its user namespace does not map, so they
    show as nobody:nogroup (mviereck/x11docker#518, containers/podman#25000); Alder Lake-N
    graphics (8086:46d4) on i915, the container's user uid 1000."""
    etc(root)
    _w(root / "etc/group", "root:x:0:\nvideo:x:44:\nrender:x:993:\nnogroup:x:65534:\n")
    _w(root / "etc/passwd", "root:x:0:0::/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n")
    cmdline(root, "BOOT_IMAGE=/boot/vmlinuz-6.16.3-1-default root=UUID=1c0e ro quiet")
    pci_gpu(
        root,
        parent="",
        address="0000:00:02.0",
        vendor="0x8086",
        device="0x46d4",
        subsystem=("0x8086", "0x7270"),
        driver="i915",
        minor=1,
    )
    module(root, "i915", modeset="-1")
    _w(root / "run/.containerenv", 'engine="podman-5.6.0"\nrootless=1\n')
    for name in ("uid_map", "gid_map"):
        _w(
            root / "proc/self" / name,
            "         0       1000          1\n         1     100000      65536\n",
        )
    dev_dri(root, 1, gid=65534)
    for node in (root / "dev/dri").iterdir():
        os.chown(node, 65534, 65534)
        node.chmod(0o660)
    icd(root, "intel_icd.x86_64.json", "libvulkan_intel.so")


def pascal_open_module(root: Path) -> None:
    """TrueNAS SCALE 25.10.7 (Debian 12 based, Linux 6.12.105) with a Tesla P4 (GP104GL,
    10de:1bb3, Pascal: no GSP) bound to NVIDIA's open nvidia.ko 580.178.04, which cannot start
    it ("not supported by open nvidia.ko because it does not include the required GPU System
    Processor"; zzzhouuu/truenas-nvidia-drivers#20, negativo17/nvidia-driver#158)."""
    etc(root)
    cmdline(root, "BOOT_IMAGE=/ROOT/25.10.7@/boot/vmlinuz-6.12.105-production+truenas ro")
    _w(root / "proc/sys/kernel/osrelease", "6.12.105-production+truenas\n")
    pci_gpu(
        root,
        parent="0000:00:02.0",
        address="0000:03:00.0",
        vendor="0x10de",
        device="0x1bb3",
        subsystem=("0x10de", "0x11d8"),
        pci_class="0x030200",
        driver="nvidia",
        minor=None,
    )
    module(root, "nvidia")
    _w(root / "sys/module/nvidia/version", "580.178.04\n")
    _w(
        root / "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.178.04  Release Build  "
        "(dvs-builder@U22-I3-AE18-23-3)  Tue Jul  7 12:38:21 UTC 2026\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
    )
    _nvidia_nodes(root)
    _nvidia_libraries(root, "580.178.04")


MACHINES.update(
    pascal_open_module=pascal_open_module,
    podman_rootless=podman_rootless,
    nvidia_api_mismatch=nvidia_api_mismatch,
    kepler_on_535=kepler_on_535,
    nvidia_compute_only=nvidia_compute_only,
    pi4_v3d=pi4_v3d,
    virtio_vm=virtio_vm,
    mtl_blocked=mtl_blocked,
)
