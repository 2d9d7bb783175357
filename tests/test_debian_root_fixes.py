"""The package fixes on a real Debian 12 root: broken for real, diagnosed with --root, the printed
fix run inside the tree, and lavapipe back (vulkaninfo in the chroot, dpkg --audit and apt-get
check clean)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import debroot
import pytest
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


def _deb_field(deb: Path, field: str) -> str:
    proc = subprocess.run(
        ["dpkg-deb", "-f", str(deb), field], capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def test_a_backports_mesa_beside_bookworms_libdrm_takes_libdrm_from_backports(debian_root: Path):
    """bookworm-backports's Mesa (25.0.7-2~bpo12+1 when this was written) depends on libdrm2
    and libdrm-amdgpu1 (>= 2.4.121), which bookworm (2.4.114) does not meet; backports has
    libdrm 2.4.123, whose libdrm2 needs backports's libdrm-common as well. Forced in with
    dpkg --force-depends beside bookworm's libdrm, lavapipe still loads (the loader binds
    libdrm's functions lazily and lavapipe calls none of the new ones), but apt's database is
    broken and `apt --fix-broken install` removes Mesa (backports's priority is 100: apt will
    not take libdrm from there by itself). The fix printed takes libdrm from backports."""
    debroot.add_suite(debian_root, "bookworm-backports")
    [deb] = debroot.suite_debs("bookworm-backports", ["mesa-vulkan-drivers"])
    # what is real: the backports Mesa needs a libdrm2 newer than the tree's
    need = re.search(r"libdrm2 \(>= ([^)]+)\)", _deb_field(deb, "Depends"))
    have = debroot.chroot(debian_root, "dpkg-query", "-W", "-f=${Version}", "libdrm2").stdout
    assert need, _deb_field(deb, "Depends")
    older = subprocess.run(["dpkg", "--compare-versions", have, "lt", need.group(1)], check=False)
    assert older.returncode == 0, f"bookworm's libdrm2 {have} meets backports's Mesa's"
    shutil.copy(deb, debian_root / "tmp/mesa.deb")
    _ok(debroot.chroot(debian_root, "dpkg", "--force-depends", "-i", "/tmp/mesa.deb"), "dpkg -i")
    assert debroot.clean(debian_root), "apt-get check must see the unmet libdrm2"
    doc = _check(debian_root, "VKP", "VKL")
    [broken] = _failures(doc, "VKP006")
    ev = broken["evidence"]
    first = ev["simulations"][0]
    assert "--fix-broken" in first["fix"] and not first["ok"]
    assert "mesa-vulkan-drivers" in first["removes"]
    assert ev["fix"].startswith("apt update && apt install -t bookworm-backports ")
    assert {"libdrm2", "libdrm-amdgpu1", "libdrm-common"} <= set(ev["fix"].split()[7:])
    assert ev["verified_by"] and ev["simulations"][-1]["ok"]
    installs = " ".join(ev["simulations"][-1]["installs"])
    assert "libdrm2 2.4.1" in installs and "bpo12" in installs
    message = broken["message"]
    assert f"Not `{first['fix']}`, which would remove mesa-vulkan-drivers" in message
    assert "bookworm-backports offers libdrm-amdgpu1 " in message
    assert f"mesa-vulkan-drivers:amd64 {_deb_field(deb, 'Version')}'s libdrm2 (>= " in message
    _run_fix(debian_root, ev["fix"])
    _lavapipe_back(debian_root)
    drm = debroot.chroot(debian_root, "dpkg-query", "-W", "-f=${Version}", "libdrm2").stdout
    assert "bpo12" in drm


def test_i386_and_amd64_twins_apart_go_back_together_at_a_version_the_lists_offer(
    debian_root: Path,
):
    """libvulkan1:amd64 forced to trixie's version beside libvulkan1:i386 from bookworm: dpkg
    configures neither (Multi-Arch: same). The newest installed version is not in the tree's
    lists, so its install fails in apt-get -s; the fix printed takes both twins to the lists'
    version, with --force-overwrite, without which dpkg refuses to unpack the amd64 twin over
    the changelog they share (run for real below, then the printed fix)."""
    _ok(debroot.chroot(debian_root, "dpkg", "--add-architecture", "i386"), "add i386")
    _ok(debroot.shell(debian_root, "apt-get update -q"), "apt-get update with i386")
    debroot.install_cached(debian_root, "libvulkan1:i386", tag="bookworm-i386")
    deb = debroot.newer_deb("libvulkan1", "trixie")
    newer = _deb_field(deb, "Version")
    shutil.copy(deb, debian_root / "tmp/vulkan.deb")
    forced = debroot.chroot(debian_root, "dpkg", "--force-depends", "-i", "/tmp/vulkan.deb")
    assert "cannot be configured because libvulkan1:i386 is at a different version" in (
        forced.stdout + forced.stderr
    )
    query = "-f=${Package}:${Architecture} ${Version} ${db:Status-Abbrev}\n"
    states = debroot.chroot(debian_root, "dpkg-query", "-W", query, "libvulkan1").stdout
    madison = debroot.chroot(debian_root, "apt-cache", "madison", "libvulkan1").stdout
    offered = {ln.split("|")[1].strip() for ln in madison.splitlines()}
    assert newer not in offered and len(offered) == 1, madison
    [version] = offered
    assert f"libvulkan1:amd64 {newer} iU" in states and f"libvulkan1:i386 {version} iF" in states

    doc = _check(debian_root, "VKP", "VKL")
    [twins] = _failures(doc, "VKP003")
    assert [f["code"] for f in doc["findings"] if f["severity"] == "fail"] == ["VKP003"]
    ev = twins["evidence"]
    first = ev["simulations"][0]
    assert f"libvulkan1:i386={newer}" in first["fix"] and not first["ok"]
    assert "was not found" in first["why"]
    fix = (
        "apt install -o Dpkg::Options::=--force-overwrite --allow-downgrades "
        f"libvulkan1:amd64={version} libvulkan1:i386={version}"
    )
    assert ev["fix"] == fix and ev["verified_by"]
    assert "removes nothing" in twins["message"]
    assert "/usr/share/doc/libvulkan1/changelog.Debian.gz" in twins["message"]
    assert f"The lists offer {version} for libvulkan1:amd64, libvulkan1:i386" in twins["message"]

    # the same without --force-overwrite: apt accepts it, dpkg refuses it
    (debian_root / "etc/apt/apt.conf.d/99yes").write_text('APT::Get::Assume-Yes "true";\n')
    plain = debroot.shell(debian_root, fix.replace("-o Dpkg::Options::=--force-overwrite ", ""))
    assert plain.returncode != 0
    assert "trying to overwrite shared '/usr/share/doc/libvulkan1/" in plain.stdout + plain.stderr
    _run_fix(debian_root, fix)
    states = debroot.chroot(debian_root, "dpkg-query", "-W", query, "libvulkan1").stdout
    assert f"libvulkan1:amd64 {version} ii" in states and f"libvulkan1:i386 {version} ii" in states
    _lavapipe_back(debian_root)


def test_a_held_driver_behind_its_siblings_is_let_go_of_and_upgraded(debian_root: Path):
    """mesa-vulkan-drivers held (apt-mark hold) and recorded one revision behind libglapi-mesa
    (its status stanza's Version lowered, as an older install leaves it): VKP003 and VKP007 name
    it, and their fix lets go of the hold and upgrades, which apt full-upgrade alone (it keeps a
    held package back) and --fix-broken alone (it upgrades nothing) do not. Run in the tree,
    the fix leaves no skew and no hold."""
    # a sibling built from mesa beside the driver (the tree has only the driver)
    debroot.install_cached(debian_root, "libglapi-mesa", tag="libglapi-mesa")
    _ok(debroot.chroot(debian_root, "apt-mark", "hold", "mesa-vulkan-drivers"), "apt-mark hold")
    status = debian_root / "var/lib/dpkg/status"
    text = status.read_text()
    stanza = re.search(r"Package: mesa-vulkan-drivers\n(?:.+\n)*?Version: (\S+)\n", text)
    assert stanza is not None, "mesa-vulkan-drivers is not installed in the tree"
    real = stanza.group(1)
    older = (
        real[:-1] + str(int(real[-1]) - 1)
        if real[-1].isdigit() and real[-1] != "0"
        else real + "~0"
    )
    status.write_text(text[: stanza.start(1)] + older + text[stanza.end(1) :])
    doc = _check(debian_root, "VKP003", "VKP007")
    [skew] = [f for f in doc["findings"] if f["code"] == "VKP003" and f["severity"] != "ok"]
    [held] = [f for f in doc["findings"] if f["code"] == "VKP007" and f["severity"] != "ok"]
    assert f"mesa-vulkan-drivers:amd64 {older}" in skew["message"]
    for finding in (skew, held):
        assert finding["remedy"].startswith("apt-mark unhold mesa-vulkan-drivers && "), finding
        assert finding["remedy"].rstrip(".").endswith("apt full-upgrade"), finding["remedy"]
    _run_fix(debian_root, skew["remedy"].rstrip("."))
    after = _check(debian_root, "VKP003", "VKP007")
    assert [f["severity"] for f in after["findings"]] == ["ok", "ok"], after["findings"]
    _lavapipe_back(debian_root)


def test_a_half_installed_driver_is_reinstalled_by_the_fix(debian_root: Path):
    """mesa-vulkan-drivers recorded half installed (an installation cut short): dpkg --audit
    says the installation "can probably be completed by retrying it", which --configure -a
    cannot do. VKP006's fix reinstalls it (checked with apt-get -s), and run in the tree it
    leaves dpkg --audit clean and lavapipe working."""
    status = debian_root / "var/lib/dpkg/status"
    text = status.read_text()
    stanza = "Package: mesa-vulkan-drivers\nStatus: install ok installed\n"
    assert stanza in text
    status.write_text(text.replace(stanza, stanza.replace("installed\n", "half-installed\n", 1)))
    doc = _check(debian_root, "VKP006")
    [audit] = _failures(doc, "VKP006")
    fix = audit["evidence"]["fix"]
    assert fix == "apt install --reinstall mesa-vulkan-drivers:amd64", audit
    _run_fix(debian_root, fix)
    again = _check(debian_root, "VKP006")
    assert [f["severity"] for f in again["findings"] if f["code"] == "VKP006"] == ["ok"]
    _lavapipe_back(debian_root)


@pytest.mark.parametrize("trap", ["fifo", "link to /proc/kmsg"])
def test_a_file_dpkg_would_block_on_does_not_stall_dpkg_verify(debian_root: Path, trap: str):
    """A hostile tree: the package whose manifest is gone lists a library that is a FIFO, or an
    absolute link that dpkg follows out of the tree to /proc/kmsg. dpkg --verify would block on
    it until the timeout; it is not run, and the finding says why."""
    import os
    import time

    lvp = debian_root / "usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
    saved = lvp.with_name("lvp.saved")
    manifest = debian_root / LVP_ICD.lstrip("/")
    kept = manifest.read_bytes()
    lvp.rename(saved)
    if trap == "fifo":
        os.mkfifo(lvp)
    else:
        lvp.symlink_to("/proc/kmsg")
    manifest.unlink()
    try:
        started = time.monotonic()
        doc = _check(debian_root, "VKP010")
        assert time.monotonic() - started < 30
        [gone] = [f for f in doc["findings"] if f["code"] == "VKP010"]
        assert gone["evidence"]["missing"] == [LVP_ICD]
        said = (
            "is not a regular file, and dpkg would block reading it"
            if trap == "fifo"
            else "leads out of the tree to /proc/kmsg, which dpkg would read"
        )
        assert (
            f"dpkg --verify could not run: /usr/lib/x86_64-linux-gnu/libvulkan_lvp.so {said}"
            in gone["message"]
        )
    finally:
        lvp.unlink()
        saved.rename(lvp)
        manifest.write_bytes(kept)
