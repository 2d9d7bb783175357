"""VKG001 on classes of machine the first trees did not cover (tests/gputrees.py, each taken from
a public report): NVIDIA's module and libraries of different versions, NVIDIA's driver installed
with its module not loaded, a container without NVIDIA's graphics capability, an SoC GPU off the
PCI bus, virtio-gpu in a virtual machine, and a force_probe=!ID that keeps i915 off the GPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gputrees
from conftest import run_json, validate_report
from nobody import as_nobody, world_readable_dir


def _check(tmp_path: Path, name: str, *extra: str) -> tuple[int, list[dict], Path]:
    root = tmp_path / name
    if not root.exists():
        root.mkdir()
        gputrees.MACHINES[name](root)
    proc, doc = run_json(["check", "--root", str(root), "--select", "VKG001", *extra])
    validate_report(doc)
    return proc.returncode, [f for f in doc["findings"] if f["code"] == "VKG001"], root


def test_nvidia_module_and_libraries_of_different_versions_fail_the_gate(tmp_path: Path) -> None:
    rc, (f,), root = _check(tmp_path, "nvidia_api_mismatch", "--gpu")
    assert rc == 1 and f["severity"] == "fail"
    assert f["evidence"]["broken_link"] == "kernel driver"
    assert f["title"] == "NVIDIA's kernel module is 510.73.05 but its libraries are 515.48.07"
    assert "NVRM: API mismatch" in f["message"] and f["remedy"].startswith("Reboot")
    # after the reboot the module is the libraries' version: the chain holds
    (root / "sys/module/nvidia/version").write_text("515.48.07\n")
    rc, (f,), _ = _check(tmp_path, "nvidia_api_mismatch", "--gpu")
    assert rc == 0 and f["severity"] == "ok"
    # in a container the image's own libraries are the mismatch: the fix is the toolkit's
    (root / "sys/module/nvidia/version").write_text("580.126.09\n")
    (root / ".dockerenv").write_text("")
    _, (f,), _ = _check(tmp_path, "nvidia_api_mismatch")
    assert (
        f["severity"] == "warn"
        and "Remove NVIDIA's driver packages from the image" in (f["remedy"])
    )


def test_nvidia_driver_installed_without_its_module_is_not_blamed_on_nouveau(
    tmp_path: Path,
) -> None:
    rc, (f,), root = _check(tmp_path, "kepler_on_535", "--gpu")
    assert rc == 1 and f["evidence"]["broken_link"] == "kernel driver"
    assert f["evidence"]["vulkan_driver"] == "NVIDIA"
    assert "535.129.03 is installed, its module is not loaded" in f["title"]
    assert "Legacy drivers" in f["message"] and "nvidia-blacklists-nouveau.conf" in f["message"]
    assert (
        f["remedy"].startswith("sudo modprobe nvidia")
        and "Delete the blacklist" not in (f["remedy"])
    )
    # without NVIDIA's libraries, the nouveau blacklist is the cause again
    for lib in (root / "usr/lib/x86_64-linux-gnu").glob("lib*nvidia*"):
        lib.unlink()
    _, (f,), _ = _check(tmp_path, "kepler_on_535")
    assert "nouveau is blacklisted" in f["title"]


def test_a_container_without_the_graphics_capability_is_told_to_ask_for_it(
    tmp_path: Path,
) -> None:
    rc, (f,), root = _check(tmp_path, "nvidia_compute_only", "--gpu")
    assert rc == 1 and f["evidence"]["broken_link"] == "Vulkan driver"
    assert "no graphics capability" in f["title"]
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility" in f["remedy"]
    assert "libnvidia-gl" not in f["remedy"]
    _, doc = run_json(
        ["check", "--root", str(root), "--select", "VKG001"],
        env={"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
    )
    (f,) = [f for f in doc["findings"] if f["code"] == "VKG001"]
    assert "NVIDIA_DRIVER_CAPABILITIES is 'compute,utility' here" in f["message"]
    # outside a container the same missing manifest is a missing package
    (root / ".dockerenv").unlink()
    _, (f,), _ = _check(tmp_path, "nvidia_compute_only")
    assert "is not installed" in f["title"] and "libnvidia-gl" in f["remedy"]


def test_an_soc_gpu_off_the_pci_bus_has_its_chain(tmp_path: Path) -> None:
    rc, (f,), root = _check(tmp_path, "pi4_v3d", "--gpu")
    assert rc == 0 and f["severity"] == "ok", f
    gpu = f["evidence"]["gpu"]
    assert gpu["address"] == "fec00000.v3d" and gpu["driver"] == "v3d"
    assert gpu["chip"] == "brcm,2711-v3d" and f["evidence"]["vulkan_driver"] == "V3DV"
    assert "No GPU on the PCI bus" not in f["title"]
    assert "/dev/dri/renderD128 crw-rw---- root:render (usable)" in f["message"]
    # the display controller (vc4, no render node) is not a second GPU; without V3DV's manifest
    # the Vulkan driver is the broken link
    (root / "usr/share/vulkan/icd.d/broadcom_icd.aarch64.json").unlink()
    rc, (f,), _ = _check(tmp_path, "pi4_v3d", "--gpu")
    assert rc == 1 and f["evidence"]["broken_link"] == "Vulkan driver"
    assert "V3DV" in f["title"] and "apt install mesa-vulkan-drivers" in f["remedy"]
    # a DRM driver vkdoctor does not know (Jetson's GPU on nouveau, a platform device) is named
    # by its driver, and nothing is claimed about it
    driver = root / "sys/devices/platform/v3dbus/fec00000.v3d/driver"
    driver.unlink()
    (root / "sys/bus/platform/drivers/nouveau").mkdir()
    driver.symlink_to("../../../../bus/platform/drivers/nouveau")
    rc, (f,), _ = _check(tmp_path, "pi4_v3d", "--gpu")
    assert rc == 0 and f["severity"] == "info"
    assert f["title"] == "SoC GPU at fec00000.v3d: no Vulkan driver known for its driver nouveau"


def test_virtio_gpu_is_known_by_its_drm_driver(tmp_path: Path) -> None:
    rc, (f,), root = _check(tmp_path, "virtio_vm", "--gpu")
    assert rc == 0 and f["severity"] == "ok", f
    assert f["evidence"]["gpu"]["driver"] == "virtio_gpu"
    assert f["evidence"]["vulkan_driver"] == "Venus"
    assert "no Vulkan driver known" not in f["title"]
    (root / "usr/share/vulkan/icd.d/virtio_icd.x86_64.json").unlink()
    rc, (f,), _ = _check(tmp_path, "virtio_vm", "--gpu")
    assert rc == 1 and "Venus" in f["title"] and f["evidence"]["broken_link"] == "Vulkan driver"


def test_a_force_probe_that_blocks_the_gpu_is_the_cause(tmp_path: Path) -> None:
    rc, (f,), root = _check(tmp_path, "mtl_blocked", "--gpu")
    assert rc == 1 and f["evidence"]["broken_link"] == "kernel driver"
    assert f["title"] == "No kernel driver: i915.force_probe=!7d45 keeps i915 off the GPU"
    assert f["remedy"].startswith("Remove i915.force_probe=!7d45 from the kernel command line")
    assert "xe.force_probe=7d45" in f["remedy"]
    # set by an options line instead: the fix points there
    cmdline = root / "proc/cmdline"
    cmdline.write_text(cmdline.read_text().replace(" i915.force_probe=!7d45", ""))
    _, (f,), _ = _check(tmp_path, "mtl_blocked")
    assert "/etc/modprobe.d" in f["remedy"] and f["severity"] == "warn"
    # without the block, i915's silence is for the kernel log again
    (root / "sys/module/i915/parameters/force_probe").write_text("\n")
    _, (f,), _ = _check(tmp_path, "mtl_blocked")
    assert "did not take the GPU" in f["title"]


def test_a_node_of_the_hosts_group_unmapped_in_a_rootless_container(tmp_path: Path) -> None:
    with world_readable_dir() as top:
        root = top / "podman"
        root.mkdir()
        gputrees.podman_rootless(root)
        args = ["python", "-m", "vkdoctor", "check", "--root", str(root), "--select", "VKG001"]
        proc = as_nobody([*args, "--gpu", "--json", "-"], uid=1000)
        doc = json.loads(proc.stdout)
        validate_report(doc)
        (f,) = [f for f in doc["findings"] if f["code"] == "VKG001"]
        assert proc.returncode == 1 and f["evidence"]["broken_link"] == "device node", proc.stderr
        assert "unmapped" in f["title"] and "--group-add keep-groups" in f["remedy"]
        assert "usermod -aG nogroup" not in f["remedy"]
        # outside a user namespace the same node's group is a group to join
        (root / "proc/self/uid_map").write_text("         0          0 4294967295\n")
        doc = json.loads(as_nobody([*args, "--json", "-"], uid=1000).stdout)
        (f,) = [f for f in doc["findings"] if f["code"] == "VKG001"]
        assert "not in group nogroup" in f["title"]


def test_live_an_soc_gpu_and_virtio_gpu_in_a_mount_namespace(tmp_path: Path) -> None:
    """Live: the trees' /sys, /dev and /proc/cmdline over the machine's own (test_gpu_chain's
    namespace), so the platform device is found through /sys/class/drm as on a Pi; this
    machine's Mesa (amd64) has neither V3DV nor Venus, and the load test finds no device."""
    from test_gpu_chain import _live

    argv = [sys.executable, "-m", "vkdoctor", "check", "--no-probe", "--select", "VKG001"]
    proc = _live(tmp_path, "pi4_v3d", [*argv, "--gpu", "--json", "-"])
    assert proc.returncode == 1, proc.stderr
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "VKG001"]
    gpu = f["evidence"]["gpu"]
    assert gpu["address"] == "fec00000.v3d" and gpu["driver"] == "v3d"
    assert gpu["nodes"][0]["path"] == "/dev/dri/renderD128"
    assert f["evidence"]["broken_link"] == "Vulkan driver" and "V3DV" in f["title"]
    (tmp_path / "v").mkdir()
    proc = _live(tmp_path / "v", "virtio_vm", [*argv, "--gpu", "--json", "-"])
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "VKG001"]
    assert f["evidence"]["gpu"]["driver"] == "virtio_gpu" and "Venus" in f["title"], f
    assert "libvulkan_virtio.so" in f["remedy"]
    # a Venus manifest whose library does not open is not the host's doing
    icd = tmp_path / "virtio_icd.json"
    icd.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": '
        '"/nonexistent/libvulkan_virtio.so", "api_version": "1.3.230"}}'
    )
    (tmp_path / "w").mkdir()
    env = ["env", f"VK_DRIVER_FILES={icd}"]
    proc = _live(tmp_path / "w", "virtio_vm", [*env, *argv, "--gpu", "--json", "-"])
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "VKG001"]
    assert f["evidence"]["broken_link"] == "Vulkan device", f
    assert "host" not in f["title"] and "VKT001" in f["remedy"]


#: a Vulkan driver (built with gcc) that loads, creates its instance and lists no device: Mesa's
#: Venus in a guest whose host offers no Venus capability set does the same
NO_DEVICE_DRIVER = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef int32_t VkResult;
typedef void (*PFN)(void);
struct instance { uintptr_t loader_magic; };
__attribute__((visibility("default")))
VkResult vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *v) { if (*v > 5) *v = 5; return 0; }
static VkResult create_instance(const void *info, const void *alloc, void **out) {
    struct instance *i = calloc(1, sizeof *i);
    i->loader_magic = 0x01CDC0DE;
    *out = i;
    return 0;
}
static void destroy_instance(void *i, const void *alloc) { free(i); }
static VkResult no_devices(void *i, uint32_t *n, void **d) { *n = 0; return 0; }
static VkResult no_extensions(const char *layer, uint32_t *n, void *p) { *n = 0; return 0; }
static int nothing(void) { return 0; }
__attribute__((visibility("default")))
PFN vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    if (!strcmp(name, "vkCreateInstance")) return (PFN)create_instance;
    if (!strcmp(name, "vkDestroyInstance")) return (PFN)destroy_instance;
    if (!strcmp(name, "vkEnumeratePhysicalDevices")) return (PFN)no_devices;
    if (!strcmp(name, "vkEnumerateInstanceExtensionProperties")) return (PFN)no_extensions;
    return (PFN)nothing;
}
"""


def test_live_venus_without_the_hosts_venus_is_the_hosts_to_fix(tmp_path: Path) -> None:
    from elfbuild import build_lib
    from test_gpu_chain import _live

    library = build_lib(
        tmp_path / "venus/libvulkan_virtio.so",
        source=NO_DEVICE_DRIVER,
        flags=("-fvisibility=hidden",),
    )
    manifest = tmp_path / "venus/virtio_icd.x86_64.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(library), "api_version": "1.3.230"},
            }
        )
    )
    argv = ["env", f"VK_DRIVER_FILES={manifest}", sys.executable, "-m", "vkdoctor", "check"]
    proc = _live(tmp_path, "virtio_vm", [*argv, "--no-probe", "--select", "VKG001", "--json", "-"])
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "VKG001"]
    assert f["severity"] == "warn" and f["evidence"]["broken_link"] == "Vulkan device", f
    assert "host does not offer Vulkan over virtio-gpu" in f["title"]
    assert "venus=on,blob=on,hostmem" in f["remedy"]


def test_a_gpu_older_than_turing_on_nvidias_open_module(tmp_path: Path) -> None:
    rc, (f,), root = _check(tmp_path, "pascal_open_module", "--gpu")
    assert rc == 1 and f["evidence"]["broken_link"] == "kernel driver"
    assert f["title"].startswith("NVIDIA's open kernel module cannot run this GPU (1bb3")
    assert "GSP" in f["message"] and "proprietary kernel module 580.178.04" in f["remedy"]
    # the proprietary module drives it: the chain holds
    version = root / "proc/driver/nvidia/version"
    version.write_text(
        version.read_text().replace("Open Kernel Module for x86_64", "Kernel Module")
    )
    rc, (f,), _ = _check(tmp_path, "pascal_open_module", "--gpu")
    assert rc == 0 and f["severity"] == "ok"
    # a Turing card (Tesla T4, TU104) on the open module is what it is made for
    version.write_text(version.read_text().replace("Kernel Module", "Open Kernel Module"))
    device = root / "sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0/device"
    device.write_text("0x1eb8\n")
    rc, (f,), _ = _check(tmp_path, "pascal_open_module", "--gpu")
    assert rc == 0 and f["severity"] == "ok", f
