"""VKG001 on trees laid out as real machines with a GPU (tests/gputrees.py): under --root, and live
in a private mount namespace whose /sys, /dev, /proc/cmdline are the tree's, so the code reads
the very paths it reads on a user's machine. Nobody's runs see the kernel refuse a node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gputrees
from conftest import REPO, clean_env, run_json, validate_report
from nobody import vkdoctor_as_nobody, world_readable_dir

from vkdoctor.machine.gpuchain import posix_acl, tables


def _chain(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["code"] == "VKG001"]


def _tree(tmp: Path, name: str) -> Path:
    root = tmp / name
    root.mkdir()
    gputrees.MACHINES[name](root)
    return root


def test_the_tables_name_their_sources_and_know_real_ids() -> None:
    t = tables()
    assert set(t["sources"]) == {"amd_ids", "intel_ids", "amd_vulkan", "intel_vulkan"}
    assert all("commit" in t["sources"][k] or "Mesa" in t["sources"][k] for k in t["sources"])
    assert len(t["amd"]) > 800 and len(t["intel"]) > 350
    for dev, (chip, kernels) in t["amd"].items():
        assert len(dev) == 4 and int(dev, 16) >= 0 and chip in t["amd_chips"], dev
        assert set(kernels) <= {"radeon", "amdgpu"} and kernels, dev
    for dev, (platform, kernels) in t["intel"].items():
        assert platform in t["intel_platforms"] and set(kernels) <= {"i915", "xe"}, dev
    # HD 7970 (Tahiti): both drivers claim it, RADV serves it but is not conformant there
    assert t["amd"]["6798"] == ["tahiti", ["radeon", "amdgpu"]]
    assert t["amd_chips"]["tahiti"]["amdgpu_parameter"] == "si_support"
    assert t["amd_chips"]["tahiti"]["conformant"] is False
    assert t["amd"]["67b1"][0] == "hawaii" and t["amd_chips"]["hawaii"]["gfx"] == "GFX7"
    # RX 580: amdgpu only; Radeon HD 5870 (Cypress): radeon only, no Vulkan
    assert t["amd"]["67df"] == ["polaris10", ["amdgpu"]]
    assert t["amd"]["6898"] == ["cypress", ["radeon"]]
    assert t["amd_chips"]["cypress"]["vulkan"] is None
    # HD 4600 on hasvk (not conformant), HD 5500 Broadwell on hasvk (conformant), UHD 630 ANV
    assert t["intel"]["0416"][0] == "hsw" and t["intel_platforms"]["hsw"]["vulkan"] == "hasvk"
    assert t["intel_platforms"]["hsw"]["conformant"] is False
    assert t["intel"]["1616"][0] == "bdw" and t["intel_platforms"]["bdw"]["conformant"] is True
    assert t["intel_platforms"][t["intel"]["3e92"][0]]["vulkan"] == "ANV"
    assert t["intel_platforms"][t["intel"]["0126"][0]]["vulkan"] is None  # Sandy Bridge


def _root_run(
    tmp_path: Path, name: str, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict]:
    root = _tree(tmp_path, name)
    proc, doc = run_json(["check", "--root", str(root), "--select", "VKG001", *extra])
    validate_report(doc)
    return proc, doc


def test_si_card_on_radeon_needs_the_kernel_parameters(tmp_path: Path) -> None:
    proc, doc = _root_run(tmp_path, "si_on_radeon")
    (f,) = _chain(doc)
    assert proc.returncode == 0 and f["severity"] == "warn"
    assert f["evidence"]["broken_link"] == "kernel driver"
    assert f["evidence"]["gpu"]["driver"] == "radeon" and f["evidence"]["gpu"]["chip"] == "tahiti"
    assert f["evidence"]["gpu"]["parameters"]["amdgpu"]["si_support"] == "0"
    assert "radeon.si_support=0 amdgpu.si_support=1" in f["remedy"]
    (tmp_path / "gate").mkdir()
    gate, doc = _root_run(tmp_path / "gate", "si_on_radeon", "--gpu")
    assert gate.returncode == 1 and _chain(doc)[0]["severity"] == "fail"


def test_haswell_on_hasvk_is_hidden_by_wgpu(tmp_path: Path) -> None:
    _, doc = _root_run(tmp_path, "haswell")
    (f,) = _chain(doc)
    assert f["evidence"]["broken_link"] == "wgpu" and f["evidence"]["vulkan_driver"] == "hasvk"
    assert "WGPU_ALLOW_UNDERLYING_NONCOMPLIANT_ADAPTER=1" in f["remedy"]
    assert "kernel i915" in f["message"] and "renderD128" in f["message"]
    # with the variable set, wgpu (built from the environment) lists it: the chain holds
    args = ["check", "--root", str(tmp_path / "haswell"), "--select", "VKG001"]
    _, doc = run_json(args, env={"WGPU_ALLOW_UNDERLYING_NONCOMPLIANT_ADAPTER": "1"})
    assert _chain(doc)[0]["severity"] == "ok"


def test_wsl2_with_dzn(tmp_path: Path) -> None:
    _, doc = _root_run(tmp_path, "wsl2")
    (f,) = _chain(doc)
    assert f["evidence"]["wsl"]["dxg"] is True and "microsoft" in f["evidence"]["wsl"]["release"]
    assert f["evidence"]["broken_link"] == "wgpu" and "dzn" in f["title"]
    # without the dzn manifest, the missing driver is the cause, not wgpu
    (tmp_path / "wsl2/usr/share/vulkan/icd.d/dzn_icd.x86_64.json").unlink()
    _, doc = run_json(["check", "--root", str(tmp_path / "wsl2"), "--select", "VKG001"])
    (f,) = _chain(doc)
    assert f["evidence"]["broken_link"] == "Vulkan driver" and "dzn" in f["title"]


def test_missing_firmware_is_the_cause_when_amdgpu_does_not_bind(tmp_path: Path) -> None:
    _, doc = _root_run(tmp_path, "polaris_no_firmware")
    (f,) = _chain(doc)
    assert f["evidence"]["broken_link"] == "firmware"
    assert "/lib/firmware/amdgpu/polaris10_*.bin" in f["title"]
    assert "firmware-amd-graphics" in f["remedy"]
    (tmp_path / "polaris_no_firmware/etc/os-release").write_text("ID=fedora\nVERSION_ID=41\n")
    f = _edit_and_check(tmp_path / "polaris_no_firmware")
    assert "dnf install amd-gpu-firmware" in f["remedy"]
    # one stray file named after the chip is not its firmware
    stray = tmp_path / "polaris_no_firmware/lib/firmware/amdgpu/polaris10_\x1b[2Jnotes.bin"
    stray.write_text("")
    _, doc = run_json(
        ["check", "--root", str(tmp_path / "polaris_no_firmware"), "--select", "VKG001"]
    )
    assert _chain(doc)[0]["evidence"]["broken_link"] == "firmware"
    # with the firmware there, the same unbound card is amdgpu's own failure to read in its log
    (tmp_path / "polaris_no_firmware/lib/firmware/amdgpu/polaris10_mc.bin").write_text("")
    _, doc = run_json(
        ["check", "--root", str(tmp_path / "polaris_no_firmware"), "--select", "VKG001"]
    )
    assert "did not take the GPU" in _chain(doc)[0]["title"]


def test_an_ip_discovery_chip_needs_its_psp_and_gc_firmware(tmp_path: Path) -> None:
    proc, doc = _root_run(tmp_path, "rdna3_no_firmware", "--gpu")
    (f,) = _chain(doc)
    assert proc.returncode == 1 and f["evidence"]["broken_link"] == "firmware"
    assert "psp_13_0_0_sos.bin" in f["title"] and "gc_11_0_0_pfp.bin" in f["title"]
    assert "apt-get install firmware-amd-graphics" in f["remedy"]
    folder = tmp_path / "rdna3_no_firmware/usr/lib/firmware/amdgpu"
    (folder / "psp_13_0_0_sos.bin.zst").write_text("")
    _, doc = run_json(["check", "--root", str(folder.parents[3]), "--select", "VKG001"])
    assert _chain(doc)[0]["evidence"]["broken_link"] == "firmware"  # gc_11_0_0_pfp still missing
    (folder / "gc_11_0_0_pfp.bin.xz").write_text("")
    _, doc = run_json(["check", "--root", str(folder.parents[3]), "--select", "VKG001"])
    (f,) = _chain(doc)
    assert f["evidence"]["broken_link"] == "firmware"  # and GC's me, mec, SDMA's
    assert f["title"].endswith("gc_11_0_0_me.bin, gc_11_0_0_mec.bin, sdma_6_0_0.bin"), f
    for name in ("gc_11_0_0_me.bin", "gc_11_0_0_mec.bin", "sdma_6_0_0.bin"):
        (folder / name).write_text("")
    _, doc = run_json(["check", "--root", str(folder.parents[3]), "--select", "VKG001"])
    assert "did not take the GPU" in _chain(doc)[0]["title"]


def test_an_rdna3_laptop_chip_the_old_ranges_missed_needs_its_psp_firmware(
    tmp_path: Path,
) -> None:
    """Navi 33 as 1002:73f0 (RX 7600M XT) lies outside 0x7480-0x749f, the range vkdoctor once
    wrote by hand: pci.ids names its chip, the kernel's table its IP versions, and the file
    missing is PSP 13.0.7's, whatever else is there."""
    proc, doc = _root_run(tmp_path, "navi33_laptop", "--gpu")
    (f,) = _chain(doc)
    assert proc.returncode == 1 and f["evidence"]["broken_link"] == "firmware", f
    assert f["title"] == "Firmware missing: /lib/firmware/amdgpu/psp_13_0_7_sos.bin"
    gpu = f["evidence"]["gpu"]
    assert gpu["chip"] == "navi33" and gpu["family"] == "RDNA 3 (GFX11)"
    assert gpu["firmware"]["variants"] == [{"gc": "11_0_2", "sdma": "6_0_2", "psp": "13_0_7"}]
    assert "IP discovery" in f["message"] and "PSP" in f["message"]
    (tmp_path / "navi33_laptop/lib/firmware/amdgpu/psp_13_0_7_sos.bin.zst").write_text("")
    f = _edit_and_check(tmp_path / "navi33_laptop")
    assert "did not take the GPU" in f["title"]


def test_an_amd_id_newer_than_pci_ids_is_unknown_not_guessed(tmp_path: Path) -> None:
    root = _tree(tmp_path, "navi33_laptop")
    device = root / "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0"
    device = device / "device"
    device.write_text("0x7a00\n")
    f = _edit_and_check(root)
    gpu = f["evidence"]["gpu"]
    assert gpu["chip"] is None and "7a00 is not in pci.ids 2026.10.24" in gpu["firmware"]["unknown"]
    # no firmware is claimed missing: the kernel log is where amdgpu says why it did not bind
    assert f["evidence"]["broken_link"] == "kernel driver" and "did not take" in f["title"]
    assert "-> firmware not checked ->" in f["message"]
    assert "Firmware not checked: 1002:7a00 is not in pci.ids 2026.10.24" in f["message"]
    # Raphael (RDNA 2, GC 10.3.6): pci.ids lists it, the tables have no GC 11+ versions for it
    device.write_text("0x164e\n")
    f = _edit_and_check(root)
    assert f["evidence"]["gpu"]["chip"] is None and f["evidence"]["gpu"]["conformant"] is None
    assert "Firmware not checked: 1002:164e is found by IP discovery" in f["message"]


def test_nouveau_without_gsp_firmware_fails_the_gate(tmp_path: Path) -> None:
    proc, doc = _root_run(tmp_path, "prime_nouveau", "--gpu")
    intel, nvidia = sorted(_chain(doc), key=lambda f: f["evidence"]["gpu"]["address"])
    assert proc.returncode == 1 and nvidia["severity"] == "fail"
    assert intel["severity"] == "ok" and intel["evidence"]["broken_link"] is None
    assert nvidia["evidence"]["gpu"]["chip"] == "ga106"
    # each module's parameters go with the GPUs it drives
    assert set(intel["evidence"]["gpu"]["parameters"]) == {"i915"}
    assert set(nvidia["evidence"]["gpu"]["parameters"]) == {"nouveau"}
    assert nvidia["evidence"]["broken_link"] == "firmware"
    assert "/lib/firmware/nvidia/ga106/gsp/gsp-*.bin" in nvidia["title"]
    assert "apt-get install linux-firmware" in nvidia["remedy"]  # Ubuntu's, not Debian's
    # the kernel's file, compressed as distributions ship it, repairs the link
    gsp = tmp_path / "prime_nouveau/lib/firmware/nvidia/ga106/gsp"
    gsp.mkdir()
    (gsp / "gsp-535.113.01.bin.zst").write_bytes(b"")
    gate, doc = run_json(
        ["check", "--root", str(tmp_path / "prime_nouveau"), "--select", "VKG001", "--gpu"]
    )
    assert gate.returncode == 0 and all(f["severity"] == "ok" for f in _chain(doc)), doc


def test_blackwell_and_hopper_on_nouveau_need_their_gsp_firmware(tmp_path: Path) -> None:
    """GB202 (RTX 5090) and GH100 (H200) lie outside the ranges vkdoctor once wrote by hand, so
    their missing GSP firmware went unseen; pci.ids names the chip, nouveau's source the files."""
    proc, doc = _root_run(tmp_path, "blackwell_nouveau", "--gpu")
    (f,) = _chain(doc)
    assert proc.returncode == 1 and f["evidence"]["broken_link"] == "firmware", f
    assert f["title"] == "Firmware missing: /lib/firmware/nvidia/gb202/gsp/gsp-*.bin"
    assert f["evidence"]["gpu"]["firmware"]["versions"] == ["570.144"]
    assert "apt-get install linux-firmware" in f["remedy"]  # Ubuntu's
    (tmp_path / "blackwell_nouveau/etc/os-release").write_text('ID=debian\nVERSION_ID="13"\n')
    f = _edit_and_check(tmp_path / "blackwell_nouveau")
    assert "apt-get install firmware-nvidia-graphics" in f["remedy"]  # Debian's GSP firmware
    root = tmp_path / "blackwell_nouveau"
    gsp = root / "lib/firmware/nvidia/gb202/gsp"
    gsp.mkdir(parents=True)
    (gsp / "gsp-570.144.bin.zst").write_text("")
    f = _edit_and_check(root)
    assert f["evidence"]["broken_link"] is None and f["severity"] == "ok", f
    device = root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/device"
    device.write_text("0x2335\n")  # H200
    f = _edit_and_check(root)
    assert f["title"] == "Firmware missing: /lib/firmware/nvidia/gh100/gsp/gsp-*.bin"


def test_an_nvidia_id_newer_than_pci_ids_on_nouveau_is_unknown_not_a_pass(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path, "blackwell_nouveau")
    device = root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/device"
    device.write_text("0x3f00\n")
    f = _edit_and_check(root, "--gpu")
    assert f["severity"] == "fail" and f["evidence"]["gpu"]["chip"] is None
    assert f["title"] == "Cannot tell the GSP firmware nouveau needs for 0x10de:0x3f00"
    assert "10de:3f00 is not in pci.ids 2026.10.24" in f["message"]
    assert "journalctl -k -b" in f["remedy"]
    # a pre-Turing chip pci.ids lists (GP104) runs on nouveau without GSP: nothing to judge
    device.write_text("0x1b80\n")
    f = _edit_and_check(root)
    assert f["evidence"]["gpu"]["firmware"] == {} and f["evidence"]["broken_link"] is None


def test_an_unknown_vendor_still_has_its_node_judged(tmp_path: Path) -> None:
    root = _tree(tmp_path, "polaris_no_dri")
    (root / "sys/devices/pci0000:00/0000:00:03.1/0000:0a:00.0/vendor").write_text("0x1ed5\n")
    _, doc = run_json(["check", "--root", str(root), "--select", "VKG001", "--gpu"])
    (f,) = _chain(doc)
    assert f["severity"] == "fail" and f["evidence"]["broken_link"] == "device node"


def test_unreadable_sysfs_files_are_named_and_not_a_pass(tmp_path: Path) -> None:
    root = _tree(tmp_path, "polaris_container")
    gpu = root / "sys/devices/pci0000:00/0000:00:03.1/0000:0a:00.0"
    (gpu / "vendor").unlink()
    os.mkfifo(gpu / "vendor")
    (gpu / "class").write_text("0x030000\n" * 10000)  # over the 64 KiB a sysfs file holds
    proc, doc = run_json(["check", "--root", str(root), "--select", "VKG001", "--gpu"])
    (f,) = _chain(doc)  # still found: its driver is amdgpu
    assert proc.returncode == 1 and f["severity"] == "fail", f
    assert f["evidence"]["broken_link"] == "sysfs"
    assert "class (over 64 KiB), vendor (not a regular file)" in f["title"]
    assert f["evidence"]["gpu"]["vendor_name"] == "unknown vendor"
    _, doc = run_json(["check", "--root", str(root), "--select", "VKG001"])
    assert _chain(doc)[0]["severity"] == "warn"


def test_the_vulkan_driver_is_named_by_its_package(tmp_path: Path) -> None:
    root = _tree(tmp_path, "polaris_container")
    (root / "usr/share/vulkan/icd.d/radeon_icd.x86_64.json").unlink()
    (root / "etc/os-release").write_text("ID=arch\n")
    f = _edit_and_check(root)
    assert f["evidence"]["broken_link"] == "Vulkan driver"
    assert "pacman -S vulkan-radeon" in f["remedy"] and "swrast" not in f["remedy"]
    (root / "etc/os-release").unlink()
    f = _edit_and_check(root)
    assert "no /etc/os-release" in f["remedy"] and "on Arch vulkan-radeon" in f["remedy"]
    assert "mesa-vulkan-drivers" in f["remedy"]


def test_arc_on_linux_6_1_needs_force_probe(tmp_path: Path) -> None:
    proc, doc = _root_run(tmp_path, "arc_on_6_1", "--gpu")
    (f,) = _chain(doc)
    assert proc.returncode == 1 and f["evidence"]["broken_link"] == "kernel driver"
    assert "i915.force_probe=56a0" in f["remedy"] and "6.2" in f["remedy"]
    root = tmp_path / "arc_on_6_1"
    (root / "sys/module/i915/parameters/force_probe").write_text("56a0\n")
    assert "did not take the GPU" in _edit_and_check(root)["title"]
    (root / "sys/module/i915/parameters/force_probe").write_text("\n")
    (root / "proc/sys/kernel/osrelease").write_text("6.8.0-49-generic\n")
    assert "did not take the GPU" in _edit_and_check(root)["title"]


def test_no_dev_dri_in_a_container(tmp_path: Path) -> None:
    _, doc = _root_run(tmp_path, "polaris_no_dri")
    (f,) = _chain(doc)
    assert f["evidence"]["broken_link"] == "device node"
    assert "--device /dev/dri" in f["remedy"] and "docker container" in f["message"]


def test_a_render_gid_without_a_name_in_a_container_as_nobody() -> None:
    with world_readable_dir() as top:
        root = _tree(top, "polaris_container")
        proc = vkdoctor_as_nobody(
            ["check", "--root", str(root), "--select", "VKG001", "--json", "-"]
        )
        assert proc.returncode == 0, proc.stderr
        (f,) = _chain(json.loads(proc.stdout))
        assert f["evidence"]["broken_link"] == "device node"
        assert "group 993 has no name here" in f["title"] and "--group-add 993" in f["remedy"]
        # root opens it: the chain goes on to the Vulkan driver and ends at RADV, conformant
        _, doc = run_json(["check", "--root", str(root), "--select", "VKG001"])
        (f,) = _chain(doc)
        assert f["severity"] == "ok" and "Vulkan RADV" in f["message"]


def test_acl_entries_decide_as_getfacl_shows_them(tmp_path: Path) -> None:
    with world_readable_dir() as top:
        node = top / "renderD128"
        os.mknod(node, 0o660 | 0o020000, os.makedev(226, 128))
        os.chown(node, 0, gputrees.RENDER_GID)
        subprocess.run(["setfacl", "-m", "u:65534:rw", str(node)], check=True)
        got = subprocess.run(
            ["getfacl", "-n", "-p", str(node)], capture_output=True, text=True, check=True
        ).stdout
        assert "user:65534:rw-" in got
        assert (0x02, 65534, 6) in posix_acl(node)
        from vkdoctor.machine.gpuchain import node as read_node
        from vkdoctor.model.context import Context

        seen = read_node(Context(root=top), "/renderD128", 65534, {65534})
        assert seen.usable and "user:65534:rw-" in seen.acl
        subprocess.run(["setfacl", "-x", "u:65534", str(node)], check=True)
        assert not read_node(Context(root=top), "/renderD128", 65534, {65534}).usable


_NAMESPACE = """set -e
tree=$1; shift
stage=$(dirname "$tree")/dev-stage
mkdir -p "$stage"
mount -t tmpfs tmpfs "$stage"
cp -a /dev/. "$stage"/ 2>/dev/null || true
rm -rf "$stage/dri"
cp -a "$tree/dev/." "$stage"/
mount --bind "$tree/sys" /sys
mount --bind "$stage" /dev
mount --bind "$tree/proc/cmdline" /proc/cmdline
if [ -d "$tree/lib/firmware" ]; then mount --bind "$tree/lib/firmware" /lib/firmware; fi
exec "$@"
"""


def _live(
    tmp_path: Path, name: str, argv: list[str], python_path: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """`argv` in a private mount namespace where the tree's sysfs, /dev and cmdline are the
    machine's own."""
    root = _tree(tmp_path, name)
    script = tmp_path / "ns.sh"
    script.write_text(_NAMESPACE)
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", str(script), str(root), *argv],
        capture_output=True,
        text=True,
        env=clean_env({"PYTHONPATH": str(python_path), "PYTHONDONTWRITEBYTECODE": "1"}),
        cwd="/",
        timeout=300,
        check=False,
    )


def test_live_si_card_on_radeon_in_a_mount_namespace(tmp_path: Path) -> None:
    proc = _live(
        tmp_path,
        "si_on_radeon",
        [
            sys.executable,
            "-m",
            "vkdoctor",
            "check",
            "--no-probe",
            "--select",
            "VKG001",
            "--json",
            "-",
        ],
    )
    assert proc.returncode == 0, proc.stderr
    (f,) = _chain(json.loads(proc.stdout))
    assert f["evidence"]["broken_link"] == "kernel driver"
    assert f["evidence"]["gpu"]["address"] == "0000:01:00.0"
    assert f["evidence"]["gpu"]["nodes"][0]["path"] == "/dev/dri/renderD128"
    assert "radeon.si_support=0 amdgpu.si_support=1" in f["remedy"]


def test_live_blackwell_on_nouveau_without_its_gsp_firmware(tmp_path: Path) -> None:
    """Live, where the load test runs too: NVK finds no device for the RTX 5090 (this machine
    has none), and the cause named is the GSP firmware missing from /lib/firmware."""
    argv = [sys.executable, "-m", "vkdoctor", "check", "--no-probe", "--select", "VKG001"]
    proc = _live(tmp_path, "blackwell_nouveau", [*argv, "--gpu", "--json", "-"])
    assert proc.returncode == 1, proc.stderr
    (f,) = _chain(json.loads(proc.stdout))
    assert f["title"] == "Firmware missing: /lib/firmware/nvidia/gb202/gsp/gsp-*.bin", f
    assert f["evidence"]["gpu"]["chip"] == "gb202" and f["evidence"]["vulkan_devices"] == []
    assert "no Vulkan device seen" in f["message"]


def test_live_the_kernel_refuses_nobody_the_render_node_of_a_container(tmp_path: Path) -> None:
    import shutil

    import click

    with world_readable_dir() as code:
        shutil.copytree(REPO / "vkdoctor", code / "vkdoctor")
        shutil.copytree(Path(click.__file__).parent, code / "click")
        setpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        argv = [*setpriv, sys.executable]
        proc = _live(
            tmp_path,
            "polaris_container",
            [*argv, "-m", "vkdoctor", "check", "--no-probe", "--select", "VKG001", "--json", "-"],
            python_path=code,
        )
    assert proc.returncode == 0, proc.stderr
    (f,) = _chain(json.loads(proc.stdout))
    (seen,) = f["evidence"]["gpu"]["nodes"]
    assert seen["path"] == "/dev/dri/renderD128" and seen["gid"] == gputrees.RENDER_GID
    assert seen["usable"] is False and seen["why"] == "gid-without-name"
    assert "--group-add 993" in f["remedy"]


def test_live_gate_counts_the_radeon_binding_once(tmp_path: Path) -> None:
    proc = _live(
        tmp_path,
        "si_on_radeon",
        [sys.executable, "-m", "vkdoctor", "check", "--gpu", "--no-probe", "--json", "-"],
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    validate_report(doc)
    (f,) = _chain(doc)
    assert f["severity"] == "fail" and f["evidence"]["broken_link"] == "kernel driver"
    (gpu,) = [g for g in doc["findings"] if g["code"] == "VKT005"]
    assert gpu["severity"] == "info" and gpu["evidence"]["explained_by"] == "VKG001"
    assert gpu["evidence"]["hardware"] == ["/dev/dri/renderD128"]


def _edit_and_check(root: Path, *extra: str) -> dict:
    _, doc = run_json(["check", "--root", str(root), "--select", "VKG001", *extra])
    (f,) = _chain(doc)
    return f


def test_what_keeps_the_kernel_driver_off_the_gpu(tmp_path: Path) -> None:
    root = _tree(tmp_path, "polaris_no_firmware")
    (root / "lib/firmware/amdgpu/polaris10_mc.bin").write_text("")
    (root / "etc/modprobe.d").mkdir(parents=True)
    (root / "etc/modprobe.d/gpu.conf").write_text("# no amdgpu here\nblacklist amdgpu\n")
    f = _edit_and_check(root)
    assert "amdgpu is blacklisted (/etc/modprobe.d/gpu.conf:2)" in f["title"]
    assert "/etc/modprobe.d/gpu.conf:2" in f["remedy"] and "update-initramfs -u" in f["remedy"]
    # on the kernel command line it is the boot loader's configuration that changes
    gputrees.cmdline(root, gputrees.CMDLINE + " modprobe.blacklist=amdgpu")
    f = _edit_and_check(root)
    assert "blacklisted (/proc/cmdline (modprobe.blacklist=amdgpu))" in f["title"]
    assert "GRUB_CMDLINE_LINUX_DEFAULT" in f["remedy"] and "update-grub" in f["remedy"]
    assert "/boot/loader/entries" in f["remedy"] and "from /proc/cmdline" not in f["remedy"]
    gputrees.cmdline(root, gputrees.CMDLINE + " nomodeset")
    f = _edit_and_check(root)
    assert "nomodeset" in f["title"] and f["evidence"]["broken_link"] == "kernel driver"


def test_an_si_card_no_driver_took(tmp_path: Path) -> None:
    root = _tree(tmp_path, "si_on_radeon")
    sysdev = root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    (sysdev / "driver").unlink()
    f = _edit_and_check(root)
    assert "amdgpu leaves Southern Islands (GCN 1) alone (si_support=0)" in f["title"]
    assert "radeon.si_support=0 amdgpu.si_support=1" in f["remedy"]


def test_a_card_no_vulkan_driver_serves(tmp_path: Path) -> None:
    root = _tree(tmp_path, "si_on_radeon")
    (root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/device").write_text("0x6898\n")
    f = _edit_and_check(root)
    assert f["evidence"]["broken_link"] == "Vulkan driver"
    assert "No Vulkan driver supports AMD TeraScale or older (pre-GCN)" in f["title"]


def test_an_nvidia_gpu_in_a_container_is_whole(tmp_path: Path) -> None:
    root = _tree(tmp_path, "nvidia_container")
    f = _edit_and_check(root)
    assert f["severity"] == "ok", f
    assert [n["path"] for n in f["evidence"]["gpu"]["nodes"]] == ["/dev/nvidiactl", "/dev/nvidia0"]
    assert f["evidence"]["gpu"]["firmware"]["module_version"] == "580.159.04"
    assert "Vulkan NVIDIA" in f["message"]
    # no Vulkan device is found under --root: pci.ids' name for 10de:2330 names it
    assert f["title"].startswith("NVIDIA H100 SXM5 80GB (GH100) at 0000:05:00.0: kernel nvidia")
    assert f["evidence"]["gpu"]["model"] == "H100 SXM5 80GB (GH100)"
    assert "10de:2330 NVIDIA H100 SXM5 80GB (GH100) -> kernel nvidia" in f["message"]
    # the toolkit started without the graphics capability: no manifest, the Vulkan driver is missing
    (root / "usr/share/vulkan/icd.d/nvidia_icd.json").unlink()
    f = _edit_and_check(root)
    assert f["evidence"]["broken_link"] == "Vulkan driver" and "NVIDIA" in f["title"]


def test_a_root_only_node_as_nobody() -> None:
    with world_readable_dir() as top:
        root = _tree(top, "haswell")
        node = root / "dev/dri/renderD128"
        os.chown(node, 0, 0)
        node.chmod(0o600)
        proc = vkdoctor_as_nobody(
            ["check", "--root", str(root), "--select", "VKG001", "--json", "-"]
        )
        (f,) = _chain(json.loads(proc.stdout))
        assert "0600 root:root" in f["title"] and "70-render.rules" in f["remedy"]
        node.chmod(0o660)
        os.chown(node, 0, gputrees.RENDER_GID)
        proc = vkdoctor_as_nobody(
            ["check", "--root", str(root), "--select", "VKG001", "--json", "-"]
        )
        (f,) = _chain(json.loads(proc.stdout))
        assert "not in group render" in f["title"] and "usermod -aG render" in f["remedy"]


def test_a_gpu_the_tables_do_not_know_is_no_pass(tmp_path: Path) -> None:
    root = _tree(tmp_path, "haswell")
    (root / "sys/devices/pci0000:00/0000:00:02.0/vendor").write_text("0x1a03\n")  # ASPEED BMC
    f = _edit_and_check(root)
    assert f["severity"] == "info" and "no Vulkan driver known for 0x1a03:0x0416" in f["title"]
    (root / "sys/devices/pci0000:00/0000:00:02.0/driver").unlink()  # and no driver bound
    f = _edit_and_check(root)
    assert f["severity"] == "info" and f["evidence"]["broken_link"] is None


def test_an_arc_on_xe_under_a_mesa_too_old_for_it(tmp_path: Path) -> None:
    """xe drives the card, ANV is installed, but from a Mesa (23.0.4) whose ANV opens no xe
    device: that is the broken link, with the upgrade or the way back to i915."""
    _, doc = _root_run(tmp_path, "arc_on_xe_old_mesa", "--gpu")
    (f,) = _chain(doc)
    assert f["severity"] == "fail" and f["evidence"]["broken_link"] == "Vulkan driver", f
    assert "mesa-vulkan-drivers:amd64 23.0.4-0ubuntu1~22.04.1" in f["title"]
    assert "xe kernel driver" in f["title"]
    assert "Upgrade Mesa to 24.1" in f["remedy"] and "i915.force_probe=56a0" in f["remedy"]
