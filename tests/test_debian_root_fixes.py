"""The package fixes on a real Debian 12 root: broken for real, diagnosed with --root, the printed
fix run inside the tree, and lavapipe back (vulkaninfo in the chroot, dpkg --audit and apt-get
check clean)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import debroot
from conftest import run_json

LVP_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


def _check(root: Path, *select: str) -> dict[str, Any]:
    _, doc = run_json(["check", "--root", str(root), "--no-probe", "--select", ",".join(select)])
    return doc


def _failures(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code and f["severity"] == "fail"]


def _ok(proc: Any, what: str) -> None:
    assert proc.returncode == 0, f"{what}: {proc.stdout}\n{proc.stderr}"


def _run_fix(root: Path, fix: str) -> None:
    """The fix as the user would run it inside the tree, answering yes to apt."""
    (root / "etc/apt/apt.conf.d/99yes").write_text('APT::Get::Assume-Yes "true";\n')
    _ok(debroot.shell(root, fix), f"the printed fix `{fix}`")


def _lavapipe_back(root: Path) -> None:
    works = debroot.lavapipe_works(root)
    assert works.returncode == 0 and "llvmpipe" in works.stdout, works.stdout + works.stderr
    assert debroot.clean(root) == []


def test_the_base_tree_runs_lavapipe_and_vkdoctor_finds_no_package_problem(debian_root: Path):
    _lavapipe_back(debian_root)
    doc = _check(debian_root, "VKP")
    assert not [f for f in doc["findings"] if f["severity"] == "fail"], doc["findings"]


def test_a_dependency_removed_behind_apt_gets_a_simulated_fix_that_works(debian_root: Path):
    _ok(debroot.chroot(debian_root, "dpkg", "--force-depends", "-r", "libllvm15"), "dpkg -r")
    assert debroot.lavapipe_works(debian_root).stdout.count("llvmpipe") == 0
    doc = _check(debian_root, "VKP", "VKL")
    [skew] = _failures(doc, "VKP002")
    ev = skew["evidence"]
    fix = ev["fix"]
    assert "--fix-broken" in fix
    # for the tree: run inside it, and the tree has no sudo
    assert "sudo" not in fix and "sudo" not in skew["message"] and "sudo" not in skew["remedy"]
    # backed by the host's apt-get -s pointed at the tree
    [command] = ev["verified_by"]
    assert command.startswith("apt-get -s") and ev["simulations"][0]["tree"] == str(debian_root)
    assert "Checked with apt-get -s: it installs libllvm15" in skew["message"]
    _run_fix(debian_root, fix)
    _lavapipe_back(debian_root)


def test_a_held_missing_dependency_is_named_and_the_fix_gets_past_the_hold(debian_root: Path):
    _ok(debroot.chroot(debian_root, "dpkg", "--force-depends", "--purge", "libllvm15"), "purge")
    _ok(debroot.chroot(debian_root, "apt-mark", "hold", "libllvm15"), "apt-mark hold")
    status = (debian_root / "var/lib/dpkg/status").read_text()
    assert "Package: libllvm15\nStatus: hold ok not-installed" in status
    doc = _check(debian_root, "VKP", "VKL")
    [skew] = _failures(doc, "VKP002")
    ev = skew["evidence"]
    assert ev["holds"] == ["libllvm15"]
    assert "libllvm15 is held (apt-mark hold) although not installed" in skew["message"]
    # the plain --fix-broken removes the driver there: simulated, rejected, not printed
    first = ev["simulations"][0]
    assert "--fix-broken" in first["fix"] and not first["ok"]
    assert "mesa-vulkan-drivers" in first["removes"]
    assert f"Not `{first['fix']}`, which would remove mesa-vulkan-drivers" in skew["message"]
    assert ev["fix"].startswith("apt-mark unhold libllvm15 && ")
    _run_fix(debian_root, ev["fix"])
    _lavapipe_back(debian_root)


def test_a_driver_manifest_deleted_behind_dpkg_is_named_with_the_reinstall(debian_root: Path):
    (debian_root / LVP_ICD.lstrip("/")).unlink()
    assert "llvmpipe" not in debroot.lavapipe_works(debian_root).stdout
    doc = _check(debian_root, "VKP")
    [gone] = [f for f in doc["findings"] if f["code"] == "VKP010"]
    assert gone["severity"] == "warn"
    ev = gone["evidence"]
    assert ev["missing"] == [LVP_ICD]
    assert ev["package"]["name"] == "mesa-vulkan-drivers"
    assert f"missing     {LVP_ICD}" in ev["verify"]["stdout"]
    assert "dpkg --verify lists it as missing" in gone["message"]
    assert ev["fix"] == "apt install --reinstall mesa-vulkan-drivers:amd64"
    assert ev["verified_by"] and "Checked with apt-get -s" in gone["message"]
    _run_fix(debian_root, ev["fix"])
    assert (debian_root / LVP_ICD.lstrip("/")).is_file()
    _lavapipe_back(debian_root)
    again = [f for f in _check(debian_root, "VKP010")["findings"] if f["code"] == "VKP010"]
    assert [f["severity"] for f in again] == ["ok"]


def test_a_mesa_forced_in_from_a_newer_suite_goes_back_to_the_lists_version(debian_root: Path):
    """trixie's Mesa over bookworm's LLVM and glibc: apt --fix-broken install would remove Mesa
    there (simulated, rejected); the fix printed is the driver at the tree's own lists' version,
    and lavapipe works after it."""
    deb = debroot.newer_deb("mesa-vulkan-drivers", "trixie")
    shutil.copy(deb, debian_root / "tmp/mesa.deb")
    _ok(debroot.chroot(debian_root, "dpkg", "--force-depends", "-i", "/tmp/mesa.deb"), "dpkg -i")
    assert "llvmpipe" not in debroot.lavapipe_works(debian_root).stdout
    installed = debroot.chroot(debian_root, "dpkg-query", "-W", "mesa-vulkan-drivers").stdout
    assert "deb13" in installed
    doc = _check(debian_root, "VKP", "VKL")
    [skew] = _failures(doc, "VKP002")
    ev = skew["evidence"]
    rejected = [s for s in ev["simulations"] if "--fix-broken" in s["fix"]]
    assert rejected and not rejected[0]["ok"] and "mesa-vulkan-drivers" in rejected[0]["removes"]
    # the version the tree's own lists offer, as its apt says
    madison = debroot.chroot(debian_root, "apt-cache", "madison", "mesa-vulkan-drivers").stdout
    [offered] = [ln.split("|")[1].strip() for ln in madison.splitlines() if "bookworm" in ln]
    assert ev["fix"] == f"apt install --allow-downgrades mesa-vulkan-drivers={offered}"
    assert "--fix-broken" not in skew["remedy"]
    # the GLIBC_2.39 the new Mesa needs: not the full upgrade (it fails there), the same way back
    [glibc] = _failures(doc, "VKP005")
    assert glibc["evidence"]["fix"] == ev["fix"]
    assert "Not `apt update && apt full-upgrade`, which fails (exit 100" in glibc["message"]
    _run_fix(debian_root, ev["fix"])
    _lavapipe_back(debian_root)
