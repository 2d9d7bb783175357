"""dpkg: packages built with dpkg-deb, installed with the real dpkg into a private admindir and
root (dependency forced, as a partial upgrade leaves it), on a merged-/usr tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from pkgtools import build_deb, build_lib, dpkg_install, dpkg_root, stub
from pkgtrees import debian_skew_tree

from vkdoctor.checks.packages import (
    ManagerConsistency,
    MissingSonameSkew,
    MissingVersionOwner,
    RepositoryView,
    SiblingSkew,
    UnownedOrForeign,
)
from vkdoctor.model import Severity
from vkdoctor.model.context import Context
from vkdoctor.packages import inventory
from vkdoctor.packages.dpkg import DpkgDB
from vkdoctor.packages.facts import MissingSoname, MissingVersion, StackFacts, StackFile

LIB = "/usr/lib/x86_64-linux-gnu"
LVP = f"{LIB}/libvulkan_lvp.so"
RADV = f"{LIB}/libvulkan_radeon.so"
LLVM22 = f"{LIB}/libLLVM.so.22.1"
NODES = [f"GLIBCXX_3.4.{n}" for n in range(28, 31)]


@pytest.fixture(scope="module")
def deb_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return debian_skew_tree(tmp_path_factory.mktemp("dpkg"))


#: what a fix says in a tree that has no package lists (apt update never ran there)
UNVERIFIED = (
    "The fix is unverified: there are no package lists to simulate with (apt update never ran)."
)


def ctx_for(root: Path) -> Context:
    return Context(root=root, env={"PATH": "/usr/bin:/bin"})


def test_status_and_lists_are_read_directly(deb_tree: Path):
    inv = inventory(ctx_for(deb_tree))
    assert [db.family for db in inv.databases] == ["dpkg"]
    assert "the rpm tool is installed, but holds no database here" in inv.absent["rpm"]
    (db,) = inv.databases
    (llvm,) = db.by_name("libllvm22")
    assert (llvm.version, llvm.source, llvm.source_version) == (
        "1:22.1.8-1",
        "llvm-toolchain-22",
        "1:22.1.8-1",
    )
    assert llvm.display_name == "libllvm22:amd64"
    (mesa,) = db.by_name("mesa-vulkan-drivers")
    assert [str(g[0]) for g in mesa.depends] == ["libllvm23 (>= 1:23.1.0)", "libstdc++6 (>= 12)"]
    assert db.by_name("libgl1-mesa-dri:i386")[0].arch == "i386"


def test_usrmerge_ownership_both_ways(deb_tree: Path):
    db = DpkgDB(ctx_for(deb_tree))
    paths = [
        f"{LIB}/libstdc++.so.6",  # ld.so's spelling; dpkg recorded /lib/...
        "/lib/x86_64-linux-gnu/libLLVM.so.22.1",  # the other way round
        "/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
        f"{LIB}/libnothing.so",
    ]
    owners = db.owners(paths)
    assert {k: v[0].name for k, v in owners.items()} == {
        paths[0]: "libstdc++6",
        paths[1]: "libllvm22",
        paths[2]: "libstdc++6",
    }


def test_missing_llvm_names_both_packages_versions_and_apt_fix(deb_tree: Path):
    facts = StackFacts(
        missing_sonames=(
            MissingSoname(
                consumer=LVP,
                soname="libLLVM.so.23.1",
                near_misses=(LLVM22, f"{LIB}/libLLVM-22.so"),
                target=LVP,
            ),
        )
    )
    (f,) = MissingSonameSkew().findings(ctx_for(deb_tree), facts)
    assert f.severity is Severity.FAIL
    assert f.message == (
        f"lavapipe ({LVP}, mesa-vulkan-drivers:amd64 26.2.3-1) needs libLLVM.so.23.1, but "
        "libllvm22:amd64 1:22.1.8-1 provides only libLLVM.so.22.1: mesa was upgraded without "
        "LLVM, a partial upgrade (mesa-vulkan-drivers depends on libllvm23 (>= 1:23.1.0), which "
        "is not installed). Fix: sudo apt update && sudo apt --fix-broken install. " + UNVERIFIED
    )
    # the commands and one sentence; the PPA way back and the one-program workaround are on
    # the page
    assert f.remedy is not None and f.remedy.commands == (
        "apt update",
        "apt --fix-broken install",
        "apt full-upgrade",
    )
    assert f.fix() == (
        "sudo apt update && sudo apt --fix-broken install && sudo apt full-upgrade. "
        "If apt proposes to REMOVE the driver package, answer no (vkdoctor explain VKP008)."
    )
    page = (Path(__file__).parents[1] / "docs/codes/VKP002.md").read_text()
    assert "sudo ppa-purge ppa:OWNER/NAME" in page and "vkdoctor overlay --search-path DIR" in page
    assert f.evidence["expected_package"] == "libllvm23:amd64"


def test_undeclared_llvm_of_a_vendor_build(deb_tree: Path, tmp_path: Path):
    """The SkillFishOS case: the driver package never declared libllvmN, so autoremove took it."""
    s = tmp_path / "s"
    llvm21 = stub(s, "libLLVM.so.21.1")
    lvp = build_lib(s / "v" / "libvulkan_radeon.so", "libvulkan_radeon.so", needs=[llvm21])
    deb = build_deb(
        tmp_path, "vendor-vulkan", "26.0-1", {"/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so": lvp}
    )
    root = dpkg_root(tmp_path / "root")
    dpkg_install(root, deb)
    facts = StackFacts(
        missing_sonames=(
            MissingSoname(consumer=f"{LIB}/libvulkan_radeon.so", soname="libLLVM.so.21.1"),
        )
    )
    (f,) = MissingSonameSkew().findings(ctx_for(root), facts)
    assert "RADV" in f.message and "vendor-vulkan:amd64 26.0-1" in f.message
    assert "no installed package provides it" in f.message
    assert "does not declare a dependency on libllvm21" in f.message
    assert (
        "Fix: sudo apt update && sudo apt install libllvm21:amd64 && sudo apt-mark manual "
        "libllvm21:amd64." in f.message
    )
    # the refresh comes first, not after the install
    assert "Then sudo apt update" not in (f.fix() or "")


def test_i386_sibling_behind_native(deb_tree: Path):
    (f,) = SiblingSkew().run(ctx_for(deb_tree))
    assert f.evidence["source"] == "mesa"
    assert "libgl1-mesa-dri:i386 26.2.2-1 is behind mesa-vulkan-drivers:amd64 26.2.3-1" in f.message
    assert "sudo apt update && sudo apt full-upgrade" in f.message


def test_apt_get_check_reports_the_forced_dependency(deb_tree: Path):
    from vkdoctor.packages.stack import stack_facts

    # the unmet dependency is the very skew VKP002 explains: one cause, one failure
    (same,) = ManagerConsistency().run(ctx_for(deb_tree))
    assert same.severity is Severity.INFO
    assert same.title == "dpkg: the unmet dependency is the skew VKP002 explains"
    # on its own (no driver misses a library) it is the failure
    ctx = ctx_for(deb_tree)
    ctx._facts[stack_facts] = StackFacts()
    (f,) = ManagerConsistency().run(ctx)
    assert f.severity is Severity.FAIL
    assert (
        "mesa-vulkan-drivers : Depends: libllvm23 (>= 1:23.1.0) but it is not installable"
        in f.message
    )
    assert "Fix: sudo apt update && sudo apt --fix-broken install." in f.message
    commands = [r["command"] for r in f.evidence["runs"]]
    assert commands[0].startswith("dpkg --admindir=") and commands[0].endswith("--audit")
    # the tree's apt configuration comes through APT_CONFIG (vkdoctor.packages.aptroot)
    assert commands[1] == "apt-get check"
    assert f.evidence["unmet"] == [
        "mesa-vulkan-drivers:amd64 26.2.3-1 depends on libllvm23 (>= 1:23.1.0)"
    ]


def test_conda_libstdcxx_tied_to_its_conda_package_and_the_system_package(deb_tree: Path):
    facts = StackFacts(
        missing_versions=(
            MissingVersion(
                consumer=LLVM22,
                soname="libstdc++.so.6",
                version="GLIBCXX_3.4.30",
                provider="/opt/conda/envs/ml/lib/libstdc++.so.6",
                provider_versions=("GLIBCXX_3.4.28", "GLIBCXX_3.4.29"),
                alternatives=(f"{LIB}/libstdc++.so.6",),
            ),
        )
    )
    (f,) = MissingVersionOwner().findings(ctx_for(deb_tree), facts)
    assert f.code == "VKP005" and f.severity is Severity.FAIL
    assert f.message == (
        f"{LLVM22} (libllvm22:amd64 1:22.1.8-1) needs GLIBCXX_3.4.30 from libstdc++.so.6, but the "
        "copy that wins, /opt/conda/envs/ml/lib/libstdc++.so.6 (conda package libstdcxx-ng 11.2.0 "
        "in /opt/conda/envs/ml), offers only up to GLIBCXX_3.4.29; "
        f"{LIB}/libstdc++.so.6 (libstdc++6:amd64 12.2.0-14) has it. "
        "Fix: conda install -p /opt/conda/envs/ml -c conda-forge 'libstdcxx-ng>=12'."
    )
    assert f.fix() == (
        "conda install -p /opt/conda/envs/ml -c conda-forge 'libstdcxx-ng>=12'; or stop "
        "exporting LD_LIBRARY_PATH=/opt/conda/envs/ml/lib."
    )
    page = (Path(__file__).parents[1] / "docs/codes/VKP005.md").read_text()
    assert "Never symlink the system libstdc++" in page


def test_multiarch_same_at_two_versions_is_left_unconfigured_and_audited(tmp_path: Path):
    s = tmp_path / "s"
    a = build_lib(s / "a" / "libvulkan_lvp.so", "libvulkan_lvp.so")
    b = build_lib(s / "b" / "libvulkan_lvp.so", "libvulkan_lvp.so", m32=True)
    debs = [
        build_deb(tmp_path, "mesa-vulkan-drivers", "26.2.3-1", {LVP: a}, source="mesa"),
        build_deb(
            tmp_path,
            "mesa-vulkan-drivers",
            "26.2.2-1",
            {"/usr/lib/i386-linux-gnu/libvulkan_lvp.so": b},
            source="mesa",
            arch="i386",
        ),
    ]
    root = dpkg_root(tmp_path / "root", foreign_arches=["i386"])
    from pkgtools import sh

    proc = sh(
        "dpkg",
        f"--root={root}",
        f"--admindir={root / 'var/lib/dpkg'}",
        "--force-script-chrootless",
        "--force-not-root",
        "-i",
        *debs,
        check=False,
    )
    assert "is at a different version" in proc.stdout + proc.stderr
    ctx = ctx_for(root)
    (sib,) = SiblingSkew().run(ctx)
    assert (
        "mesa-vulkan-drivers:i386 26.2.2-1 is behind mesa-vulkan-drivers:amd64 26.2.3-1"
        in sib.message
    )
    # Multi-Arch: same twins at two versions: dpkg configures neither, so this is the failure,
    # with the fix that brings them to one version (not dpkg --configure -a, which fails)
    assert sib.severity is Severity.FAIL
    assert sib.message.endswith(
        "Fix: sudo apt update && sudo apt install mesa-vulkan-drivers:i386=26.2.3-1. " + UNVERIFIED
    )
    (db,) = inventory(ctx).databases
    assert {p.state for p in db.packages()} == {"iU"}
    (f,) = ManagerConsistency().run(ctx)
    assert f.severity is Severity.FAIL
    # each package with what dpkg says is wrong with it, not the bare list
    assert "dpkg --audit: mesa-vulkan-drivers:amd64 is unpacked but not yet configured" in f.message
    assert (
        "Fix: sudo dpkg --configure -a && sudo apt update && sudo apt --fix-broken install."
        in f.message
    )
    # ... which the runner turns into information pointing at VKP003: one cause, one failure
    from vkdoctor.runner import run_checks

    by = {r.code: r for r in run_checks(ctx, [SiblingSkew, ManagerConsistency])}
    assert by["VKP006"].findings[0].title.endswith(": VKP003 gives the cause")
    # a package whose file list is gone cannot be configured back: dpkg says reinstall
    (root / "var/lib/dpkg/info/mesa-vulkan-drivers:amd64.list").unlink()
    (f,) = ManagerConsistency().run(ctx_for(root))
    assert (
        "dpkg --audit: mesa-vulkan-drivers:amd64 is missing the list control file in the database"
        in f.message
    )
    assert "Fix: sudo apt install --reinstall mesa-vulkan-drivers:amd64 && " in f.message


def _target(path: str, name: str = "lvp_icd.x86_64.json"):
    from vkdoctor.loader.targets import LoadTarget

    return LoadTarget(
        kind="driver", name=name, manifest=f"/usr/share/vulkan/icd.d/{name}", dlopen_name=path
    )


def test_resolution_feeds_the_rules(deb_tree: Path, monkeypatch: pytest.MonkeyPatch):
    """The real library resolution (vkdoctor.elf) of the tree, then the package rules."""
    from vkdoctor.closures import targets as closures

    monkeypatch.setattr(closures, "targets", lambda _ctx: (_target(LVP), _target(LLVM22, "llvm")))
    ctx = Context(
        root=deb_tree, env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/opt/conda/envs/ml/lib"}
    )
    (soname,) = MissingSonameSkew().run(ctx)
    assert soname.message.startswith(
        f"lavapipe ({LVP}, mesa-vulkan-drivers:amd64 26.2.3-1) needs libLLVM.so.23.1, but "
        "libllvm22:amd64 1:22.1.8-1 provides only libLLVM.so.22.1: mesa was upgraded without LLVM"
    )
    (version,) = MissingVersionOwner().run(ctx)
    assert "conda package libstdcxx-ng 11.2.0" in version.message
    assert "libstdc++6:amd64 12.2.0-14) has it" in version.message
    assert version.message.endswith(
        "Fix: conda install -p /opt/conda/envs/ml -c conda-forge 'libstdcxx-ng>=12'."
    )
    (unowned,) = UnownedOrForeign().run(ctx)
    assert unowned.evidence["unowned"] == ["/opt/conda/envs/ml/lib/libstdc++.so.6"]


def test_ppa_and_local_origins_from_apt_cache_policy(deb_tree: Path):
    """A PPA mesa and a libllvm that no configured repository has, from the tree's apt lists."""
    etc = deb_tree / "etc/apt"
    lists = deb_tree / "var/lib/apt/lists"
    (etc / "preferences.d").mkdir(parents=True)
    (lists / "partial").mkdir(parents=True)
    (etc / "sources.list").write_text(
        "deb [trusted=yes] http://ppa.launchpadcontent.net/kisak/kisak-mesa/ubuntu noble main\n"
    )
    stem = "ppa.launchpadcontent.net_kisak_kisak-mesa_ubuntu_dists_noble"
    (lists / f"{stem}_InRelease").write_text(
        "Origin: LP-PPA-kisak-kisak-mesa\nSuite: noble\nCodename: noble\nArchitectures: amd64\nComponents: main\n"
    )
    (lists / f"{stem}_main_binary-amd64_Packages").write_text(
        "Package: mesa-vulkan-drivers\nVersion: 26.2.3-1\nArchitecture: amd64\nSource: mesa\n"
        "Multi-Arch: same\nFilename: pool/m/mesa-vulkan-drivers_26.2.3-1_amd64.deb\nSize: 1\n"
        "Description: x\n\n"
    )
    try:
        facts = StackFacts(
            files=(
                StackFile(path=LVP, role="driver"),
                StackFile(path=LLVM22, role="library", target=LVP),
            )
        )
        found = {
            f.evidence["package"]["name"]: f
            for f in UnownedOrForeign().findings(ctx_for(deb_tree), facts)
        }
        # the PPA ships mesa but no libllvm23, and the archive is not configured: the skew's
        # fix is to leave the PPA, not apt --fix-broken (which would remove the driver)
        (skew,) = MissingSonameSkew().findings(
            ctx_for(deb_tree),
            StackFacts(
                missing_sonames=(
                    MissingSoname(
                        consumer=LVP, soname="libLLVM.so.23.1", near_misses=(LLVM22,), target=LVP
                    ),
                )
            ),
        )
    finally:
        import shutil

        shutil.rmtree(deb_tree / "etc/apt")
        shutil.rmtree(deb_tree / "var/lib/apt")
    assert found["mesa-vulkan-drivers"].message == (
        "mesa-vulkan-drivers:amd64 26.2.3-1 owns driver-stack files and is from "
        "ppa:kisak/kisak-mesa (a PPA, not the distribution's archive)."
    )
    assert (
        found["mesa-vulkan-drivers"].fix()
        == "sudo ppa-purge ppa:kisak/kisak-mesa returns to the archive's packages."
    )
    assert "comes from ppa:kisak/kisak-mesa, and neither it nor the archive offers" in skew.message
    assert skew.message.endswith("Fix: sudo ppa-purge ppa:kisak/kisak-mesa.")
    assert "not in any configured repository at version 1:22.1.8-1" in found["libllvm22"].message
    # no repository carries libllvm22 at all: no reinstall advice that cannot work
    assert found["libllvm22"].fix() == (
        "No configured repository carries libllvm22: remove it, or install the distribution's "
        "package that replaces it"
    )


def test_installed_provider_with_its_file_deleted(tmp_path: Path):
    s = tmp_path / "s"
    llvm23 = build_lib(s / "23" / "libLLVM.so.23.1", "libLLVM.so.23.1")
    lvp = build_lib(s / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so", needs=[llvm23])
    root = dpkg_root(tmp_path / "root")
    dpkg_install(
        root,
        build_deb(tmp_path, "libllvm23", "1:23.1.0-1", {f"{LIB}/libLLVM.so.23.1": llvm23}),
        build_deb(
            tmp_path,
            "mesa-vulkan-drivers",
            "26.2.3-1",
            {LVP: lvp, RADV: lvp},
            source="mesa",
            depends="libllvm23",
        ),
    )
    (root / LIB.lstrip("/") / "libLLVM.so.23.1").unlink()
    facts = StackFacts(
        missing_sonames=(
            MissingSoname(consumer=LVP, soname="libLLVM.so.23.1", target=LVP),
            MissingSoname(consumer=RADV, soname="libLLVM.so.23.1", target=RADV),
        )
    )
    # one skew, one fix: both drivers in one finding
    (f,) = MissingSonameSkew().findings(ctx_for(root), facts)
    assert f.title == "lavapipe and RADV need libLLVM.so.23.1: package skew"
    assert f.message == (
        f"lavapipe ({LVP}, mesa-vulkan-drivers:amd64 26.2.3-1) needs libLLVM.so.23.1, but no installed "
        "package provides it: an installed package's file was deleted or damaged (libllvm23:amd64 "
        "1:23.1.0-1 is installed and lists libLLVM.so.23.1, but the file is gone). "
        f"Also needed by {RADV}. Fix: sudo apt install --reinstall libllvm23:amd64. " + UNVERIFIED
    )
    # the reinstall puts the file back: no upgrade or PPA advice after it
    assert f.fix() == "sudo apt install --reinstall libllvm23:amd64."
    assert f.evidence["consumers"] == [LVP, RADV]


def test_a_held_package_of_the_stack_is_named_with_the_release_command(
    deb_tree: Path, tmp_path: Path
):
    import shutil
    import subprocess

    from vkdoctor.checks.packages import HeldPackages

    root = tmp_path / "root"
    shutil.copytree(deb_tree, root, symlinks=True)
    admin = root / "var/lib/dpkg"
    subprocess.run(
        ["dpkg", f"--admindir={admin}", "--set-selections"],
        input="libllvm22 hold\n",
        text=True,
        check=True,
    )
    # the real dpkg's view of the selection is the oracle
    got = subprocess.run(
        ["dpkg", f"--admindir={admin}", "--get-selections", "libllvm22"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert got.stdout.split() == ["libllvm22:amd64", "hold"]
    facts = StackFacts(
        missing_sonames=(
            MissingSoname(
                consumer=LVP, soname="libLLVM.so.23.1", near_misses=(LLVM22,), target=LVP
            ),
        ),
    )
    (f,) = HeldPackages().findings(ctx_for(root), facts)
    assert f.severity is Severity.WARN
    assert f.title == "libllvm22:amd64 1:22.1.8-1 is held at its version"
    assert f"owns {LLVM22} and is held by dpkg selection: hold (apt-mark hold)" in f.message
    # --fix-broken for a dependency already unmet, then the upgrade that the hold kept back
    assert f.fix() == (
        "sudo apt-mark unhold libllvm22 && sudo apt update && sudo apt --fix-broken install "
        "&& sudo apt full-upgrade."
    )
    # the skew's own fix is not the release: libllvm23 is another package than the held one
    from vkdoctor.checks.packages import MissingSonameSkew

    (skew,) = MissingSonameSkew().findings(ctx_for(root), facts)
    assert "is held" not in skew.message
    assert skew.message.endswith(
        "Fix: sudo apt update && sudo apt --fix-broken install. " + UNVERIFIED
    )
    # the tree as built holds nothing
    assert list(HeldPackages().findings(ctx_for(deb_tree), facts)) == []


def test_a_packaged_driver_missing_its_llvm_gets_the_upgrade(deb_tree: Path):
    from conftest import run_json

    _, doc = run_json(["check", "--no-probe", "--root", str(deb_tree), "--select", "VKL002"])
    (vkl,) = [f for f in doc["findings"] if f["code"] == "VKL002" and "LLVM" in f["title"]]
    assert (
        "upgrade both together (`sudo apt update && sudo apt full-upgrade`)"
        in vkl["remedy"].lower()
    )


def _file_repository(root: Path, repo: Path, debs: list[Path]) -> None:
    """A local apt repository with `debs`, its list in the tree as `apt update` leaves it, read
    by the real apt-cache (with Dir= the tree)."""
    import shutil
    import subprocess

    repo.mkdir()
    for deb in debs:
        shutil.copy(deb, repo)
    packages = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", "."],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (root / "etc/apt").mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file:{repo} ./\n")
    lists = root / "var/lib/apt/lists"
    lists.mkdir(parents=True, exist_ok=True)
    # apt's name for the list of file:/a/b_c ./ is _a_b%5fc_._Packages
    name = str(repo).replace("_", "%5f").replace("/", "_")
    (lists / f"{name}_._Packages").write_text(packages)


def test_repositories_without_the_needed_llvm_mean_the_upgrade_cannot_fix_it(
    deb_tree: Path, tmp_path: Path
):
    import shutil

    facts = StackFacts(
        missing_sonames=(
            MissingSoname(
                consumer=LVP, soname="libLLVM.so.23.1", near_misses=(LLVM22,), target=LVP
            ),
        ),
    )
    work = tmp_path / "work"
    mesa_old = build_deb(work, "mesa-vulkan-drivers", "26.2.2-1", {}, source="mesa")
    llvm23 = build_deb(work, "libllvm23", "1:23.1.0-1", {}, source="llvm-toolchain-23")

    # the lists offer an older mesa and no libllvm23: mesa came from elsewhere
    root = tmp_path / "a"
    shutil.copytree(deb_tree, root, symlinks=True)
    _file_repository(root, tmp_path / "repo-a", [mesa_old])
    (f,) = RepositoryView().findings(ctx_for(root), facts)
    assert f.severity is Severity.WARN
    assert f.title == (
        "The repositories offer no libllvm23:amd64: the upgrade cannot fix libLLVM.so.23.1"
    )
    assert (
        "mesa-vulkan-drivers 26.2.3-1 came from a newer mirror than these package lists"
        in f.message
    )
    assert f.fix() is not None
    assert f.fix().endswith(
        "return mesa-vulkan-drivers to the repositories' version: "
        "sudo apt install mesa-vulkan-drivers=26.2.2-1."
    )

    # and the driver package, foreign at its version, is sent back to the one offered
    foreign = {
        f.evidence["package"]["name"]: f
        for f in UnownedOrForeign().findings(
            ctx_for(root), StackFacts(files=(StackFile(path=LVP, role="driver"),))
        )
    }
    assert foreign["mesa-vulkan-drivers"].fix() == (
        "Install the repositories' version: sudo apt install mesa-vulkan-drivers=26.2.2-1"
    )
    # the skew's own fix is the one that works here: apt --fix-broken would remove the driver
    (skew,) = MissingSonameSkew().findings(ctx_for(root), facts)
    assert skew.severity is Severity.FAIL
    assert "offer no libllvm23:amd64, so the distribution's fix cannot bring" in skew.message
    # the command inside the advice, checked by apt-get -s on the tree's own lists
    assert skew.message.endswith(
        "Fix: sudo apt install mesa-vulkan-drivers=26.2.2-1. Checked with apt-get -s: it "
        "installs mesa-vulkan-drivers 26.2.2-1 and removes nothing."
    )
    assert skew.evidence["fix"] == "sudo apt install mesa-vulkan-drivers=26.2.2-1"
    assert "--fix-broken" not in skew.message
    # one failure: VKP008 and VKP004 say the same, so they point at VKP002
    from conftest import run_json

    _, doc = run_json(["check", "--root", str(root), "--no-probe", "--select", "VKP"])
    severities = {f["code"]: f["severity"] for f in doc["findings"]}
    assert severities["VKP002"] == "fail"
    assert severities["VKP004"] == severities["VKP008"] == "info"

    # the lists offer libllvm23: the fix is only pending
    root = tmp_path / "b"
    shutil.copytree(deb_tree, root, symlinks=True)
    _file_repository(root, tmp_path / "repo-b", [mesa_old, llvm23])
    (f,) = RepositoryView().findings(ctx_for(root), facts)
    assert f.severity is Severity.INFO
    assert f.title == "The repositories offer libllvm23:amd64 1:23.1.0-1"

    # no package lists at all: nothing to say
    assert list(RepositoryView().findings(ctx_for(deb_tree), facts)) == []


def test_a_manifest_left_by_a_removed_package_says_purge(tmp_path: Path):
    """`apt remove` keeps conffiles: the manifest in /etc/vulkan/icd.d outlives its driver. It
    is no stray file: dpkg knows the removed package (state rc) it belongs to."""
    from pkgtools import icd_manifest, sh

    from vkdoctor.checks.libraries import stale_manifest_remedy

    lvp = build_lib(tmp_path / "s" / "libvulkan_lvp.so", "libvulkan_lvp.so")
    manifest = tmp_path / "s" / "lvp_icd.x86_64.json"
    manifest.write_text(icd_manifest(LVP))
    icd = "/etc/vulkan/icd.d/lvp_icd.x86_64.json"
    root = dpkg_root(tmp_path / "root")
    deb = build_deb(
        tmp_path, "mesa-vulkan-drivers", "26.2.2-1", {LVP: lvp, icd: manifest}, conffiles=[icd]
    )
    dpkg_install(root, deb)
    sh(
        *("dpkg", f"--root={root}", f"--admindir={root / 'var/lib/dpkg'}"),
        *("--force-script-chrootless", "--force-not-root", "-r", "mesa-vulkan-drivers"),
    )
    assert (root / icd.lstrip("/")).is_file() and not (root / LVP.lstrip("/")).exists()
    assert stale_manifest_remedy(ctx_for(root), icd).shown() == (
        f"{icd} was left behind by mesa-vulkan-drivers:amd64, removed but not purged (dpkg "
        "state rc): sudo apt purge mesa-vulkan-drivers removes it; sudo apt install "
        "mesa-vulkan-drivers brings the driver back."
    )


def test_a_deleted_library_is_found_by_its_package_whatever_the_package_is_named(tmp_path: Path):
    """zlib1g ships libz.so.1: the file lists, not the soname, say which package to reinstall."""
    s = tmp_path / "s"
    libzx = build_lib(s / "zx" / "libzx.so.1", "libzx.so.1")
    lvp = build_lib(s / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so", needs=[libzx])
    root = dpkg_root(tmp_path / "root")
    debs = [
        build_deb(tmp_path, "zlibx1g", "1:1.2.13-1", {f"{LIB}/libzx.so.1": libzx}),
        build_deb(tmp_path, "mesa-vulkan-drivers", "26.2.3-1", {LVP: lvp}, depends="zlibx1g"),
    ]
    dpkg_install(root, *debs)
    # the package lists offer both: nothing there named after the soname (libzx1)
    _file_repository(root, tmp_path / "repo", debs)
    (root / LIB.lstrip("/") / "libzx.so.1").unlink()
    facts = StackFacts(
        missing_sonames=(MissingSoname(consumer=LVP, soname="libzx.so.1", target=LVP),)
    )
    (f,) = MissingSonameSkew().findings(ctx_for(root), facts)
    assert "zlibx1g:amd64 1:1.2.13-1 is installed and lists libzx.so.1, but the file is gone" in (
        f.message
    )
    assert f.message.endswith(
        "Fix: sudo apt install --reinstall zlibx1g:amd64. Checked with apt-get -s: it installs "
        "zlibx1g 1:1.2.13-1 and removes nothing."
    )
    assert "libzx1" not in f.message  # no package name guessed from the soname
    assert f.fix() == "sudo apt install --reinstall zlibx1g:amd64."
    # the repositories have nothing to add to a reinstall (before: "the lists are incomplete,
    # sudo apt update", from looking up the guessed libzx1)
    assert list(RepositoryView().findings(ctx_for(root), facts)) == []


def test_the_package_view_is_a_failure_when_the_check_it_defers_to_is_not_run(deb_tree: Path):
    from conftest import run_json

    _, doc = run_json(["check", "--root", str(deb_tree), "--no-probe", "--select", "VKP006"])
    (f,) = [x for x in doc["findings"] if x["code"] == "VKP006"]
    assert f["severity"] == "fail"  # not "the skew VKP002 explains": VKP002 is not in the run


def test_an_installed_package_whose_file_was_deleted_is_reinstalled(tmp_path: Path):
    """`apt install libvulkan1` is a no-op when libvulkan1 is installed and its file was deleted
    by hand (or by a cleanup script): the fix is --reinstall, for the loader and for the
    driver package."""
    from pkgtools import icd_manifest

    from vkdoctor.checks.drivers import DriversFound
    from vkdoctor.checks.libraries import VulkanLoaderLibrary

    s = tmp_path / "s"
    loader = build_lib(s / "loader" / "libvulkan.so.1.3.239", "libvulkan.so.1")
    lvp = build_lib(s / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so")
    icd = s / "lvp_icd.x86_64.json"
    icd.write_text(icd_manifest(LVP))
    manifest = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    debs = [
        build_deb(
            tmp_path,
            "libvulkan1",
            "1.3.239.0-1",
            {
                f"{LIB}/libvulkan.so.1.3.239": loader,
                f"{LIB}/libvulkan.so.1": "libvulkan.so.1.3.239",
            },
        ),
        build_deb(
            tmp_path, "mesa-vulkan-drivers", "22.3.6-1", {LVP: lvp, manifest: icd}, source="mesa"
        ),
    ]
    root = dpkg_root(tmp_path / "root")
    dpkg_install(root, *debs)
    ctx = ctx_for(root)
    assert [f.severity for f in VulkanLoaderLibrary().run(ctx)] == [Severity.OK]

    (root / LIB.lstrip("/") / "libvulkan.so.1.3.239").unlink()
    (root / manifest.lstrip("/")).unlink()
    ctx = ctx_for(root)
    (gone,) = VulkanLoaderLibrary().run(ctx)
    assert gone.severity is Severity.FAIL
    assert gone.fix() is not None
    assert gone.fix().startswith(
        "sudo apt install --reinstall libvulkan1 (the package is installed"
    )
    (none,) = DriversFound().run(ctx)
    assert none.severity is Severity.FAIL
    assert none.fix() == (
        "sudo apt install --reinstall mesa-vulkan-drivers (the package is installed, but its "
        "driver manifests are gone)"
    )


def test_a_database_that_lists_no_package_owns_nothing(tmp_path: Path):
    """An unfinished debootstrap has /var/lib/dpkg/status and no package in it: that is no
    database to say "no package owns this file" from, for every file of every driver."""
    from vkdoctor.checks.packages import PackageDatabases

    s = tmp_path / "s"
    lvp = build_lib(s / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so")
    root = dpkg_root(tmp_path / "root")
    (root / LVP.lstrip("/")).parent.mkdir(parents=True)
    (root / LVP.lstrip("/")).write_bytes(lvp.read_bytes())
    ctx = ctx_for(root)
    inv = inventory(ctx)
    assert inv.databases == ()
    assert inv.absent["dpkg"] == "/var/lib/dpkg lists no installed package"
    (f,) = PackageDatabases().run(ctx)
    assert f.title == "No package database"
    assert "/var/lib/dpkg lists no installed package" in f.message
    from vkdoctor.packages.owner import owner

    assert owner(ctx, LVP) is None  # nobody can say, rather than "no package"


def test_a_manifest_whose_packaged_library_was_deleted_gets_the_reinstall_command(tmp_path: Path):
    from pkgtools import icd_manifest

    from vkdoctor.checks.libraries import stale_manifest_remedy

    lvp = build_lib(tmp_path / "s" / "libvulkan_lvp.so", "libvulkan_lvp.so")
    manifest = tmp_path / "s" / "lvp_icd.x86_64.json"
    manifest.write_text(icd_manifest(LVP))
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    root = dpkg_root(tmp_path / "root")
    dpkg_install(
        root, build_deb(tmp_path, "mesa-vulkan-drivers", "26.2.2-1", {LVP: lvp, icd: manifest})
    )
    (root / LVP.lstrip("/")).unlink()
    assert stale_manifest_remedy(ctx_for(root), icd).shown() == (
        "sudo apt install --reinstall mesa-vulkan-drivers (mesa-vulkan-drivers:amd64 26.2.2-1 "
        f"owns {icd}, and the library it names is gone)"
    )
    # no database to tell: both, in one sentence
    bare = tmp_path / "bare"
    (bare / "usr/share/vulkan/icd.d").mkdir(parents=True)
    assert stale_manifest_remedy(ctx_for(bare), icd).shown() == (
        f"If a package owns {icd}, reinstall it; if none does, {icd} belongs to no package (put "
        "there by hand or by an installer): fix its library_path, or remove it."
    )


def test_without_a_database_a_fix_that_is_not_a_reinstall_keeps_its_words(tmp_path: Path):
    from vkdoctor.packages.owner import fix_file

    bare = tmp_path / "bare"
    bare.mkdir()
    said = fix_file(
        ctx_for(bare),
        LVP,
        "Upgrade both together (`sudo apt full-upgrade`).",
        "Rebuild it against the installed library.",
    )
    assert said.shown() == (
        "Upgrade both together (`sudo apt full-upgrade`); or, if no package owns "
        f"{LVP}, rebuild it against the installed library."
    )
