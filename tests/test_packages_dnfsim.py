"""dnf fixes are checked by dnf itself (`dnf --assumeno`, the host's dnf 4 in a private
installroot holding the tree's rpm database, repositories and metadata cache) before they are
printed: real rpm trees (rpmbuild, rpm --root), a real repository (createrepo_c) that the
tree's dnf cached (dnf makecache), and the printed fix then carried out for real by dnf."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pkgtools import ENV, build_lib, build_rpms, sh
from pkgtrees import RPM_LIB, fedora_skew_tree

from vkdoctor.checks.packages import MissingSonameSkew
from vkdoctor.model import Finding
from vkdoctor.model.context import Context
from vkdoctor.packages.facts import MissingSoname, StackFacts

LVP = f"{RPM_LIB}/libvulkan_lvp.so"


def ctx_for(root: Path) -> Context:
    return Context(root=root, env={"PATH": "/usr/bin:/bin"})


def _dnf(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The tree's dnf, as run on that machine (Debian's rpm keeps its database in ~/.rpmdb:
    a HOME whose .rpmmacros says where the tree's is)."""
    home = root.parent / "home"
    home.mkdir(exist_ok=True)
    (home / ".rpmmacros").write_text("%_dbpath /var/lib/rpm\n")
    return subprocess.run(
        ["dnf", "--installroot", str(root), "--releasever=43", *args],
        capture_output=True,
        text=True,
        env={**ENV, "HOME": str(home)},
        timeout=120,
        check=False,
    )


def fedora(tmp_path: Path, *extra: Path, cache: bool = True) -> Path:
    """The Fedora skew tree, its repository `fedora` (every package it has installed, and
    `extra`) and, unless told, the metadata its dnf downloaded (dnf makecache)."""
    work = tmp_path / "fedora"
    root = fedora_skew_tree(work)
    repo = work / "repo"
    repo.mkdir()
    for rpm in [*work.glob("rpmbuild-*/RPMS/*/*.rpm"), *extra]:
        shutil.copy2(rpm, repo / rpm.name)
    sh("createrepo_c", "-q", repo)
    (root / "etc/yum.repos.d").mkdir(parents=True)
    (root / "etc/yum.repos.d/fedora.repo").write_text(
        f"[fedora]\nname=Fedora\nbaseurl=file://{repo}\ngpgcheck=0\n"
    )
    (root / "etc/os-release").write_text('NAME="Fedora Linux"\nID=fedora\nVERSION_ID=43\n')
    if cache:
        made = _dnf(root, "makecache", "-q")
        assert made.returncode == 0, made.stderr
    return root


def llvm23(tmp_path: Path) -> list[Path]:
    """llvm-libs 23.1.0 and the mesa-dri-drivers built against it, as the next Fedora update."""
    lib = build_lib(
        tmp_path / "s23" / "libLLVM.so.23.1", "libLLVM.so.23.1", version_node="LLVM_23.1"
    )
    gallium = build_lib(
        tmp_path / "g23" / "libgallium-26.2.3.so", "libgallium-26.2.3.so", needs=[lib]
    )
    llvm = build_rpms(
        tmp_path / "new",
        "llvm",
        "23.1.0",
        "1.fc43",
        {"llvm-libs": {f"{RPM_LIB}/libLLVM.so.23.1": lib}},
        vendor="Fedora Project",
    )
    mesa = build_rpms(
        tmp_path / "new",
        "mesa",
        "26.2.3",
        "1.fc43",
        {"mesa-dri-drivers": {f"{RPM_LIB}/libgallium-26.2.3.so": gallium}},
        vendor="Fedora Project",
    )
    return [llvm["llvm-libs"], mesa["mesa-dri-drivers"]]


def skew(root: Path) -> Finding:
    facts = StackFacts(
        missing_sonames=(
            MissingSoname(
                consumer=LVP,
                soname="libLLVM.so.23.1",
                near_misses=(f"{RPM_LIB}/libLLVM.so.22.1",),
                target=LVP,
            ),
        )
    )
    (f,) = MissingSonameSkew().findings(ctx_for(root), facts)
    return f


def snapshot(root: Path) -> list[tuple[str, int, float]]:
    # rpm and dnf read a private copy of the tree's database: not even sqlite's index changes
    return sorted(
        (str(p.relative_to(root)), p.lstat().st_size, p.lstat().st_mtime) for p in root.rglob("*")
    )


def test_the_upgrade_that_brings_the_llvm_is_checked_by_dnf_and_works(tmp_path: Path):
    root = fedora(tmp_path, *llvm23(tmp_path))
    before = snapshot(root)
    f = skew(root)
    assert f.message.endswith(
        "Fix: sudo dnf distro-sync. Checked with dnf --assumeno: it installs llvm-libs "
        "23.1.0-1.fc43, mesa-dri-drivers 26.2.3-1.fc43 and removes nothing."
    ), f.message
    assert f.evidence["verified_by"] == [f"dnf --installroot {root} -C --assumeno distro-sync"]
    assert snapshot(root) == before  # nothing written in the tree
    # the oracle: dnf carries the printed fix out, and rpm finds nothing unmet
    done = _dnf(root, "-C", "-y", "distro-sync")
    assert done.returncode == 0, done.stdout + done.stderr
    rpm = ["rpm", "--root", str(root), "--dbpath", "/var/lib/rpm"]
    assert sh(*rpm, "-q", "llvm-libs").stdout.strip() == "llvm-libs-23.1.0-1.fc43.x86_64"
    assert sh(*rpm, "-Va", "--nofiles", "--noscripts").stdout == ""


def test_an_upgrade_that_changes_nothing_is_not_the_fix(tmp_path: Path):
    """The repository offers only what is installed: distro-sync does nothing (dnf says so
    too), so it is no fix; the finding gives VKP008's advice, which no check can run."""
    from vkdoctor.packages.dnfsim import simulate
    from vkdoctor.packages.rpm import RpmDB

    root = fedora(tmp_path)
    ctx = ctx_for(root)
    sim = simulate(ctx, RpmDB(ctx, "/var/lib/rpm"), "sudo dnf distro-sync", ["mesa-vulkan-drivers"])
    assert sim.ran and not sim.ok
    assert sim.why == "changes nothing (dnf has nothing to do with the metadata as last downloaded)"
    done = _dnf(root, "-C", "--assumeno", "distro-sync")
    assert "Nothing to do." in done.stdout, done.stdout + done.stderr
    f = skew(root)
    assert "the distribution's fix cannot bring libLLVM.so.23.1 yet (VKP008)" in f.message
    assert (
        "Unverified: the fix is advice in words, not a dnf command, so dnf could not check it."
        in f.message
    )
    assert f.evidence["verified_by"] == []


def test_without_dnf_metadata_the_fix_is_said_to_be_unverified(tmp_path: Path):
    root = fedora(tmp_path, cache=False)
    f = skew(root)
    assert f.fix() == "sudo dnf distro-sync."
    assert (
        "Fix: sudo dnf distro-sync. Unverified: there is no dnf metadata to simulate with (dnf "
        "makecache never ran), so dnf could not check it." in f.message
    )
    assert f.evidence["verified_by"] == []


def test_a_fix_that_removes_the_driver_is_not_printed(tmp_path: Path):
    """The repository's mesa-vulkan-next obsoletes mesa-vulkan-drivers: distro-sync would
    replace the driver package by one that has no lavapipe. dnf's table says "replacing"."""
    from vkdoctor.packages.dnfsim import simulate
    from vkdoctor.packages.rpm import RpmDB

    other = build_rpms(
        tmp_path / "next",
        "mesa-next",
        "27.0.0",
        "1.fc43",
        {"mesa-vulkan-next": {}},
        vendor="Fedora Project",
        # the spec's header line after Provides: rpmbuild reads it as its own tag
        provides={"mesa-vulkan-next": ["mesa-next-marker\nObsoletes: mesa-vulkan-drivers < 27"]},
    )
    root = fedora(tmp_path, other["mesa-vulkan-next"])
    ctx = ctx_for(root)
    sim = simulate(ctx, RpmDB(ctx, "/var/lib/rpm"), "sudo dnf distro-sync", ["mesa-vulkan-drivers"])
    assert sim.ran and not sim.ok, sim
    assert sim.why == "would remove mesa-vulkan-drivers"
    assert "mesa-vulkan-drivers 26.2.3-1.fc43" in sim.removes
    # the oracle: carried out, dnf replaces the driver package
    done = _dnf(root, "-C", "-y", "distro-sync")
    assert done.returncode == 0, done.stdout + done.stderr
    rpm = ["rpm", "--root", str(root), "--dbpath", "/var/lib/rpm", "-q", "mesa-vulkan-drivers"]
    assert sh(*rpm, check=False).returncode == 1
