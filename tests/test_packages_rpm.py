"""rpm: packages built by rpmbuild (requires/provides generated from the ELF files, as Fedora's
are), installed with --nodeps into a private --root/--dbpath by Debian's rpm."""

from __future__ import annotations

from pathlib import Path

import pytest
from pkgtools import build_lib
from pkgtrees import fedora_skew_tree

from vkdoctor.checks.packages import (
    ManagerConsistency,
    MissingSonameSkew,
    SiblingSkew,
    UnownedOrForeign,
)
from vkdoctor.model import Severity
from vkdoctor.model.context import Context
from vkdoctor.packages import inventory
from vkdoctor.packages.facts import MissingSoname, StackFacts, StackFile
from vkdoctor.packages.rpm import RpmDB

LIB = "/usr/lib64"
LVP = f"{LIB}/libvulkan_lvp.so"
#: lavapipe built for LLVM 23.1 beside llvm-libs 22.1: the skew of the Fedora tree
LLVM23_MISSING = StackFacts(
    missing_sonames=(
        MissingSoname(
            consumer=LVP,
            soname="libLLVM.so.23.1",
            near_misses=(f"{LIB}/libLLVM.so.22.1",),
            target=LVP,
        ),
    )
)


@pytest.fixture(scope="module")
def rpm_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fedora_skew_tree(tmp_path_factory.mktemp("rpm"))


def ctx_for(root: Path) -> Context:
    return Context(root=root, env={"PATH": "/usr/bin:/bin"})


def test_one_query_reads_every_package_with_generated_soname_requires(rpm_tree: Path):
    inv = inventory(ctx_for(rpm_tree))
    (db,) = inv.databases
    assert isinstance(db, RpmDB) and db.db_path == "/var/lib/rpm"
    (mesa,) = db.by_name("mesa-vulkan-drivers")
    assert (mesa.version, mesa.source, mesa.source_version) == (
        "26.2.3-1.fc43",
        "mesa",
        "26.2.3-1.fc43",
    )
    requires = [g[0].name for g in mesa.depends]
    assert (
        "libLLVM.so.23.1()(64bit)" in requires and "libLLVM.so.23.1(LLVM_23.1)(64bit)" in requires
    )
    (llvm,) = db.by_name("llvm-libs")
    assert "libLLVM.so.22.1()(64bit)" in [p.name for p in llvm.provides]
    assert len(db.runs) == 1


def test_owners_in_one_batched_query(rpm_tree: Path):
    db = RpmDB(ctx_for(rpm_tree), "/var/lib/rpm")
    owners = db.owners(
        [LVP, f"{LIB}/libLLVM-22.so", f"{LIB}/libgallium-26.2.2.so", "/usr/share", f"{LIB}/nope.so"]
    )
    assert {k: v[0].name for k, v in owners.items()} == {
        LVP: "mesa-vulkan-drivers",
        f"{LIB}/libLLVM-22.so": "llvm-libs",
        f"{LIB}/libgallium-26.2.2.so": "mesa-dri-drivers",
    }
    assert len(db.runs) == 2  # -qa and one -qf


def test_missing_soname_names_the_rpm_requirement_and_dnf_fix(rpm_tree: Path):
    facts = LLVM23_MISSING
    (f,) = MissingSonameSkew().findings(ctx_for(rpm_tree), facts)
    assert f.message == (
        f"lavapipe ({LVP}, mesa-vulkan-drivers.x86_64 26.2.3-1.fc43) needs libLLVM.so.23.1, but "
        "llvm-libs.x86_64 22.1.8-1.fc43 provides only libLLVM.so.22.1: mesa was upgraded without LLVM, "
        "a partial upgrade (mesa-vulkan-drivers requires libLLVM.so.23.1()(64bit), which no installed "
        "package provides: it was installed with --nodeps or from another repository). "
        "Fix: sudo dnf distro-sync. Unverified: there is no dnf metadata to simulate with (dnf "
        "makecache never ran), so dnf could not check it."
    )
    # the command alone; the COPR way back is on the page
    assert f.fix() == "sudo dnf distro-sync."
    page = (Path(__file__).parents[1] / "docs/codes/VKP002.md").read_text()
    assert "disable a COPR first" in page


def test_rpm_va_reports_the_unsatisfied_requirement(rpm_tree: Path):
    from vkdoctor.packages.stack import stack_facts

    (same,) = ManagerConsistency().run(ctx_for(rpm_tree))
    assert same.severity is Severity.INFO
    assert same.title == "rpm: the unmet dependency is the skew VKP002 explains"
    ctx = ctx_for(rpm_tree)
    ctx._facts[stack_facts] = StackFacts()
    (f,) = ManagerConsistency().run(ctx)
    assert f.severity is Severity.FAIL
    assert (
        "libLLVM.so.23.1()(64bit) is needed by (installed) mesa-vulkan-drivers-26.2.3-1.fc43.x86_64"
        in f.message
    )
    assert f.evidence["runs"][-1]["command"].endswith("-Va --nofiles --noscripts")
    assert "Fix: sudo dnf distro-sync." in f.message


def test_siblings_from_one_srpm(rpm_tree: Path):
    (f,) = SiblingSkew().run(ctx_for(rpm_tree))
    assert (
        "mesa-dri-drivers.x86_64 26.2.2-1.fc43 is behind mesa-vulkan-drivers.x86_64 26.2.3-1.fc43"
        in f.message
    )


def test_unowned_library_in_opt(rpm_tree: Path):
    lib = build_lib(rpm_tree / "opt/amdgpu/lib64/libdrm_amdgpu.so.1", "libdrm_amdgpu.so.1")
    facts = StackFacts(
        files=(
            StackFile(path=LVP, role="driver"),
            StackFile(path="/opt/amdgpu/lib64/libdrm_amdgpu.so.1", role="library", target=LVP),
        )
    )
    try:
        unowned, foreign = UnownedOrForeign().findings(ctx_for(rpm_tree), facts)
    finally:
        lib.unlink()
    assert unowned.message.startswith(
        "lavapipe loads files that no rpm package owns: /opt/amdgpu/lib64/libdrm_amdgpu.so.1 (/opt"
    )
    assert foreign.message == (
        "mesa-vulkan-drivers.x86_64 26.2.3-1.fc43 owns driver-stack files and is from vendor "
        "'Fedora Copr - user mesa-fan', not 'Fedora Project' like most installed packages."
    )
    assert "dnf copr disable" in (foreign.fix() or "")


def test_resolution_feeds_the_rule(rpm_tree: Path, monkeypatch: pytest.MonkeyPatch):
    from vkdoctor.closures import targets as closures
    from vkdoctor.loader.targets import LoadTarget

    target = LoadTarget(
        kind="driver",
        name="lvp_icd.x86_64.json",
        manifest="/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        dlopen_name=LVP,
    )
    monkeypatch.setattr(closures, "targets", lambda _ctx: (target,))
    (f,) = MissingSonameSkew().run(ctx_for(rpm_tree))
    assert f.message.startswith(
        f"lavapipe ({LVP}, mesa-vulkan-drivers.x86_64 26.2.3-1.fc43) needs libLLVM.so.23.1, but "
        "llvm-libs.x86_64 22.1.8-1.fc43 provides only libLLVM.so.22.1"
    )


def test_dnf_check_output_recorded_on_fedora():
    """dnf cannot run on this Debian machine: its real output, recorded in the skew lab."""
    from vkdoctor.packages.rpm import parse_dnf_check

    text = (Path(__file__).parent / "data" / "dnf-check.txt").read_text()
    assert parse_dnf_check(text) == [
        "mesa-vulkan-drivers-26.2.3-1.x86_64 has missing requires of libLLVM.so.23.1()(64bit)",
        "mesa-vulkan-drivers-26.2.3-1.x86_64 has missing requires of libLLVM.so.23.1(LLVM_23.1)(64bit)",
    ]


def test_dnf_versionlocks_hold_packages_of_the_stack(rpm_tree: Path, tmp_path: Path):
    import shutil

    from vkdoctor.checks.packages import HeldPackages

    root = tmp_path / "root"
    shutil.copytree(rpm_tree, root, symlinks=True)
    plugins = root / "etc" / "dnf" / "plugins"
    plugins.mkdir(parents=True)
    # dnf 4's list: NEVRA globs; "!" lines exclude versions and hold nothing
    (plugins / "versionlock.list").write_text(
        "# Added lock on Mon Nov 30\nllvm-libs-0:22.1.8-1.fc43.*\n!mesa-vulkan-drivers-0:26.*\n"
        "llvm-libs-22.1.8-1.fc43.x86_64\n"
    )
    (root / "etc" / "dnf" / "versionlock.toml").write_text(
        'version = "1.0"\n'
        "[[packages]]\n"
        'name = "mesa-vulkan-drivers"\n'
        "[[packages.conditions]]\n"
        'key = "evr"\n'
        'comparator = "="\n'
        'value = "26.2.3-1.fc43"\n'
    )
    facts = LLVM23_MISSING
    held = {f.evidence["package"]: f for f in HeldPackages().findings(ctx_for(root), facts)}
    assert sorted(held) == ["llvm-libs", "mesa-vulkan-drivers"]
    assert held["llvm-libs"].evidence["hold"] == (
        "dnf versionlock llvm-libs-0:22.1.8-1.fc43.* in /etc/dnf/plugins/versionlock.list"
    )
    assert held["mesa-vulkan-drivers"].evidence["hold"] == (
        "dnf versionlock of mesa-vulkan-drivers at 26.2.3-1.fc43 in /etc/dnf/versionlock.toml"
    )
    assert held["llvm-libs"].fix() == (
        "sudo dnf versionlock delete llvm-libs && sudo dnf distro-sync."
    )


def test_a_versionlock_written_without_the_epoch_still_holds():
    from vkdoctor.packages.model import Package
    from vkdoctor.packages.rpm import _locked

    pkg = Package(
        family="rpm",
        name="mesa-vulkan-drivers",
        version="26.2.3-1.fc43",
        arch="x86_64",
        source="mesa",
        source_version="26.2.3-1.fc43",
    )
    for line in ("mesa-vulkan-drivers-26.2.3-1.fc43.x86_64", "mesa-vulkan-drivers-26.2.3-1.fc43.*"):
        assert _locked(pkg, [(line, None, "/etc/dnf/plugins/versionlock.list")]) == (
            f"dnf versionlock {line} in /etc/dnf/plugins/versionlock.list"
        )
    assert _locked(pkg, [("mesa-vulkan-drivers-26.2.2-1.fc43.*", None, "x")]) is None


def test_dnf_metadata_says_whether_the_upgrade_can_bring_the_llvm(rpm_tree: Path, tmp_path: Path):
    """Rule P4 on Fedora: the primary metadata dnf cached (written here by createrepo_c, gzip and
    zstd as Fedora ships it) says whether the repositories offer a newer llvm-libs."""
    import os
    import shutil

    from pkgtools import build_rpms, sh

    from vkdoctor.checks.packages import RepositoryView

    facts = LLVM23_MISSING
    work = tmp_path / "work"
    newer = build_rpms(work, "llvm", "23.1.0", "1.fc43", {"llvm-libs": {}})["llvm-libs"]
    older_mesa = build_rpms(work, "mesa", "26.2.2", "1.fc43", {"mesa-vulkan-drivers": {}})[
        "mesa-vulkan-drivers"
    ]

    def with_cache(
        name: str, rpms: list[Path], *, repo: str = "fedora", zstd: bool = False
    ) -> Path:
        root = tmp_path / name
        if not root.exists():
            shutil.copytree(rpm_tree, root, symlinks=True)
        src = tmp_path / f"{name}-{repo}-repo"
        src.mkdir()
        for r in rpms:
            shutil.copy(r, src)
        sh("createrepo_c", "-q", "--no-database", src)
        if zstd:
            # Debian's createrepo_c 0.17 cannot write zstd; Fedora's does (primary.xml.zst)
            (gz,) = (src / "repodata").glob("*-primary.xml.gz")
            zst = gz.with_name(gz.name.replace(".gz", ".zst"))
            sh("sh", "-c", f"gzip -dc {gz} | zstd -q -o {zst}")
            gz.unlink()
            repomd = src / "repodata/repomd.xml"
            repomd.write_text(repomd.read_text().replace(gz.name, zst.name))
        cache = root / "var/cache/dnf" / f"{repo}-0123456789abcdef"
        cache.mkdir(parents=True)
        shutil.copytree(src / "repodata", cache / "repodata")
        os.utime(cache / "repodata/repomd.xml", (1_700_000_000, 1_700_000_000))
        return root

    # the metadata offer llvm-libs 23.1.0: the fix is pending
    for zstd in (False, True):
        root = with_cache(f"ahead-{zstd}", [newer], zstd=zstd)
        primary = list((root / "var/cache/dnf/fedora-0123456789abcdef/repodata").iterdir())
        assert any(p.name.endswith(".zst" if zstd else ".gz") for p in primary)
        (f,) = RepositoryView().findings(ctx_for(root), facts)
        assert f.severity is Severity.INFO
        assert f.title == "The repositories offer llvm-libs 23.1.0-1.fc43"
        assert "The repository metadata (refreshed 2023-11-14" in f.message
    # the metadata have only an older mesa and no newer llvm-libs: distro-sync goes back
    root = with_cache("behind", [older_mesa])
    (f,) = RepositoryView().findings(ctx_for(root), facts)
    assert f.severity is Severity.WARN
    assert f.title == "The repositories offer no llvm-libs: the upgrade cannot fix libLLVM.so.23.1"
    assert "mesa-vulkan-drivers 26.2.3-1.fc43 came from a newer mirror" in f.message
    assert "(the repositories offer 26.2.2-1.fc43)" in f.message
    assert (f.fix() or "").endswith(
        "sudo dnf distro-sync (it also downgrades to the repositories' versions)."
    )
    assert "sudo dnf makecache --refresh" in (f.fix() or "")
    # a cache left by a repository that /etc/yum.repos.d disables does not count
    root = with_cache("disabled", [older_mesa])
    with_cache("disabled", [newer], repo="copr-llvm")
    (root / "etc/yum.repos.d").mkdir(parents=True)
    (root / "etc/yum.repos.d/fedora.repo").write_text("[fedora]\nname=Fedora\nenabled=1\n")
    (root / "etc/yum.repos.d/copr.repo").write_text("[copr-llvm]\nname=COPR\nenabled=0\n")
    (f,) = RepositoryView().findings(ctx_for(root), facts)
    assert f.severity is Severity.WARN and f.evidence["offered"] is None
    (root / "etc/yum.repos.d/copr.repo").write_text("[copr-llvm]\nname=COPR\nenabled=1\n")
    (f,) = RepositoryView().findings(ctx_for(root), facts)
    assert f.severity is Severity.INFO and f.evidence["offered"] == "23.1.0-1.fc43"
    # no metadata at all: nothing to say
    assert list(RepositoryView().findings(ctx_for(rpm_tree), facts)) == []


def test_a_copr_driver_gets_the_copr_to_disable(rpm_tree: Path, tmp_path: Path):
    """dnf copr enable writes /etc/yum.repos.d/_copr:HOST:OWNER:PROJECT.repo; the vendor
    'Fedora Copr - user mesa-fan' names the owner, the file the project."""
    import shutil

    facts = StackFacts(files=(StackFile(path=LVP, role="driver"),))
    root = tmp_path / "root"
    shutil.copytree(rpm_tree, root, symlinks=True)
    repos = root / "etc/yum.repos.d"
    repos.mkdir(parents=True)
    (repos / "_copr:copr.fedorainfracloud.org:mesa-fan:mesa-git.repo").write_text("[x]\n")
    (repos / "_copr:copr.fedorainfracloud.org:someone-else:llvm.repo").write_text("[y]\n")
    (foreign,) = UnownedOrForeign().findings(ctx_for(root), facts)
    assert foreign.message.endswith(
        "from vendor 'Fedora Copr - user mesa-fan', not 'Fedora Project' like most installed "
        "packages (COPR mesa-fan/mesa-git, in /etc/yum.repos.d)."
    )
    assert foreign.fix() == (
        "sudo dnf copr disable mesa-fan/mesa-git, then sudo dnf distro-sync returns to the "
        "distribution's packages."
    )
    # two projects of the owner: both named, the user picks
    (repos / "_copr:copr.fedorainfracloud.org:mesa-fan:mesa-stable.repo").write_text("[z]\n")
    (foreign,) = UnownedOrForeign().findings(ctx_for(root), facts)
    assert "(COPR mesa-fan/mesa-git or mesa-fan/mesa-stable, in /etc/yum.repos.d)" in (
        foreign.message
    )
    assert (foreign.fix() or "").startswith(
        "Disable the COPR it came from (mesa-fan/mesa-git or mesa-fan/mesa-stable: "
    )


@pytest.mark.parametrize("trap", ["link to /dev/zero", "FIFO", "sparse 2 GiB", "honest"])
def test_rpm_verify_is_not_run_on_a_trap(tmp_path: Path, trap: str) -> None:
    """rpm -V opens the package's files with links followed on this machine: a tree's library
    made a link to /dev/zero, a FIFO or a 2 GiB sparse file kept it hashing or blocked until its
    60 s timeout. Each file is judged inside the tree first, as dpkg --verify's are."""
    import os
    import time

    root = fedora_skew_tree(tmp_path)
    lvp = root / "usr/lib64/libvulkan_lvp.so"
    if trap != "honest":
        lvp.unlink()
        if trap == "FIFO":
            os.mkfifo(lvp)
        elif trap == "sparse 2 GiB":
            with open(lvp, "wb") as f:
                f.truncate(2 << 30)
        else:
            lvp.symlink_to("/dev/zero")
    (db,) = inventory(ctx_for(root)).databases
    assert isinstance(db, RpmDB)
    (mesa,) = db.by_name("mesa-vulkan-drivers")
    started = time.monotonic()
    modified = db.modified(mesa, "/usr/lib64/libvulkan_lvp.so")
    assert time.monotonic() - started < 20
    verified = [r for r in db.runs if "-V" in r.argv]
    if trap == "honest":
        assert modified is False and verified  # rpm ran, and the digest matches
    else:
        assert modified is None and not verified
