"""pacman: a real local database (Debian's pacman, private root and dbpath) with Arch's
unversioned mesa -> llvm-libs dependency, real ELF files, and the skew explained."""

from __future__ import annotations

from pathlib import Path

import pytest
from pactrees import LVP, copy_with_sync, ctx_for, libdrmx_tree, lvp_missing, sync_db, zx3_tree
from pkgtrees import arch_skew_tree

from vkdoctor.checks.packages import (
    ManagerConsistency,
    MissingSonameSkew,
    PackageDatabases,
    SiblingSkew,
    UnownedOrForeign,
)
from vkdoctor.model import Severity
from vkdoctor.packages import inventory
from vkdoctor.packages.facts import MissingSoname, StackFacts, StackFile
from vkdoctor.packages.pacman import PacmanDB

LVP32 = "/usr/lib32/libvulkan_lvp.so"
#: said after a pacman fix in the message: no simulation backs it
#: these trees have no sync database: pacman cannot check their fixes, and the message says so
UNVERIFIED = (
    "Unverified: the tree has no pacman sync database to simulate with (pacman -Sy never ran), "
    "so pacman could not check it."
)
TARGET = (
    "lavapipe (/usr/lib/libvulkan_lvp.so, vulkan-swrast 1:26.2.3-1) needs libLLVM.so.23.1, "
    "but llvm-libs 22.1.8-1 provides only libLLVM.so.22.1: mesa was upgraded without LLVM, "
    "a partial upgrade. pacman did not stop this: vulkan-swrast depends on llvm-libs without a "
    "version. Fix: sudo pacman -Syu. " + UNVERIFIED
)


@pytest.fixture(scope="module")
def arch_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return arch_skew_tree(tmp_path_factory.mktemp("pacman"))


def test_database_is_read_directly_with_epoch_base_and_unversioned_depends(arch_tree: Path):
    inv = inventory(ctx_for(arch_tree))
    assert [db.family for db in inv.databases] == ["pacman"]
    assert "rpm" in inv.absent and "dpkg" in inv.absent
    (db,) = inv.databases
    (swrast,) = db.by_name("vulkan-swrast")
    assert (swrast.version, swrast.source, swrast.arch) == ("1:26.2.3-1", "mesa", "x86_64")
    assert [str(r) for g in swrast.depends for r in g] == ["llvm-libs"]
    (llvm,) = db.by_name("llvm-libs")
    assert llvm.provides[0].name == "libLLVM.so" and llvm.provides[0].version == "22.1-64"
    owners = db.owners([LVP, "/usr/lib/libLLVM-22.so", "/lib/libLLVM.so.22.1", "/usr/lib/nope.so"])
    assert {k: [p.name for p in v] for k, v in owners.items()} == {
        LVP: ["vulkan-swrast"],
        "/usr/lib/libLLVM-22.so": ["llvm-libs"],
    }


def test_usr_merge_symlink_is_followed_for_ownership(arch_tree: Path, tmp_path: Path):
    (arch_tree / "lib").symlink_to("usr/lib")
    try:
        db = PacmanDB(ctx_for(arch_tree))
        owners = db.owners(["/lib/libLLVM.so.22.1"])
        assert [p.name for p in owners["/lib/libLLVM.so.22.1"]] == ["llvm-libs"]
    finally:
        (arch_tree / "lib").unlink()


def test_missing_soname_gives_the_target_sentence(arch_tree: Path):
    ctx = ctx_for(arch_tree)
    facts = lvp_missing(near_misses=("/usr/lib/libLLVM.so.22.1", "/usr/lib/libLLVM-22.so"))
    (f,) = MissingSonameSkew().findings(ctx, facts)
    assert f.code == "VKP002" and f.severity is Severity.FAIL
    assert f.message == TARGET
    # the fix line is the command; the reason is in the message (above), the rest on the page
    assert f.fix() == "sudo pacman -Syu."
    page = (Path(__file__).parents[1] / "docs/codes/VKP002.md").read_text()
    assert "never `pacman -Sy <pkg>`" in page and "vkdoctor overlay --search-path DIR" in page
    assert "Never symlink `libLLVM.so.22.1`" in page
    ev = f.evidence
    assert ev["consumer_package"]["version"] == "1:26.2.3-1"
    assert ev["provider_package"]["name"] == "llvm-libs"
    assert ev["capability"] == "libLLVM.so=23.1-64" and ev["providers"] == []
    assert ev["declared_unversioned"] is True


def test_siblings_of_mesa_at_two_versions_and_lib32_llvm_behind(arch_tree: Path):
    llvm, mesa = SiblingSkew().run(ctx_for(arch_tree))
    assert mesa.code == "VKP003" and mesa.severity is Severity.WARN
    assert (
        "Packages built from mesa are at different versions: mesa 1:26.2.2-1 is behind "
        "lib32-vulkan-swrast 1:26.2.3-1, vulkan-swrast 1:26.2.3-1" in mesa.message
    )
    assert "sudo pacman -Syu" in mesa.message
    assert "lib32-llvm-libs 21.1.8-1 is behind llvm-libs 22.1.8-1" in llvm.message


def test_lib32_driver_uses_32_bit_soname_capability(arch_tree: Path):
    facts = StackFacts(
        missing_sonames=(
            MissingSoname(
                consumer=LVP32,
                soname="libLLVM.so.23.1",
                near_misses=("/usr/lib32/libLLVM.so.21.1",),
                target=LVP32,
                elf_class=32,
            ),
        )
    )
    (f,) = MissingSonameSkew().findings(ctx_for(arch_tree), facts)
    assert f.message == (
        "lavapipe (/usr/lib32/libvulkan_lvp.so, lib32-vulkan-swrast 1:26.2.3-1) needs "
        "libLLVM.so.23.1, but lib32-llvm-libs 21.1.8-1 provides only libLLVM.so.21.1: lib32-mesa "
        "was upgraded without LLVM, a partial upgrade. pacman did not stop this: "
        "lib32-vulkan-swrast depends on lib32-llvm-libs without a version. Fix: sudo pacman "
        "-Syu. " + UNVERIFIED
    )
    assert f.evidence["capability"] == "libLLVM.so=23.1-32"


def test_clean_dk_is_reported_with_the_unversioned_caveat(arch_tree: Path):
    (f,) = ManagerConsistency().run(ctx_for(arch_tree))
    assert f.severity is Severity.INFO
    assert f.title == "pacman -Dk is clean, but blind to mesa -> llvm-libs and 2 more (no version)"
    assert f.evidence["runs"][0]["command"].startswith("pacman --config /dev/stdin --root")
    assert "No database errors have been found!" in f.evidence["runs"][0]["stdout"]
    assert "proves nothing about" in f.message
    assert "vulkan-swrast -> llvm-libs" in f.message and "mesa -> llvm-libs" in f.message


def test_unowned_driver_in_usr_local(arch_tree: Path):
    facts = StackFacts(
        files=(
            StackFile(path="/usr/local/lib/libvulkan_custom.so", role="driver"),
            StackFile(path=LVP, role="driver"),
            StackFile(path="/usr/lib/libLLVM.so.22.1", role="library", target=LVP),
        )
    )
    (f,) = UnownedOrForeign().findings(ctx_for(arch_tree), facts)
    assert f.code == "VKP004" and f.severity is Severity.WARN
    assert "/usr/local/lib/libvulkan_custom.so (/usr/local, installed by hand" in f.message
    assert f.evidence["unowned"] == ["/usr/local/lib/libvulkan_custom.so"]


def test_foreign_package_when_sync_databases_exist(arch_tree: Path, tmp_path: Path):
    # an empty but valid sync database: nothing installed is in it, so all is foreign
    db = sync_db(arch_tree)
    try:
        facts = StackFacts(files=(StackFile(path=LVP, role="driver"),))
        (f,) = UnownedOrForeign().findings(ctx_for(arch_tree), facts)
        assert "vulkan-swrast 1:26.2.3-1 owns driver-stack files" in f.message
        assert "pacman -Qm" in f.message
        # the package's own name, not its pkgbase (mesa), which installs something else
        assert (f.fix() or "").startswith("sudo pacman -S vulkan-swrast for the repositories'")
    finally:
        db.unlink()
        db.parent.rmdir()


def test_database_listing(arch_tree: Path):
    (f,) = PackageDatabases().run(ctx_for(arch_tree))
    assert f.evidence["packages"] == {"pacman": 5}
    assert f.title == "Package databases: pacman database /var/lib/pacman, 5 packages"


def test_resolution_feeds_the_rule(arch_tree: Path, monkeypatch: pytest.MonkeyPatch):
    """The real library resolution (vkdoctor.elf) of the ICD in the tree, then the package rule."""
    from vkdoctor.closures import targets as closures
    from vkdoctor.loader.targets import LoadTarget

    target = LoadTarget(
        kind="driver",
        name="lvp_icd.x86_64.json",
        manifest="/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        dlopen_name=LVP,
    )
    monkeypatch.setattr(closures, "targets", lambda _ctx: (target,))
    ctx = ctx_for(arch_tree)
    (f,) = MissingSonameSkew().run(ctx)
    assert f.message == TARGET
    assert "/usr/lib/libLLVM.so.22.1" in f.evidence["near_misses"]
    files = {d.evidence["target"]: d for d in UnownedOrForeign().run(ctx)}
    assert files == {}


def test_ignorepkg_and_ignoregroup_hold_packages_of_the_stack(arch_tree: Path, tmp_path: Path):
    import shutil
    import subprocess

    from vkdoctor.checks.packages import HeldPackages
    from vkdoctor.packages.pacman import ignored

    root = tmp_path / "root"
    shutil.copytree(arch_tree, root, symlinks=True)
    conf = root / "etc" / "pacman.conf"
    conf.parent.mkdir(exist_ok=True)
    conf.write_text(
        "[options]\n"
        "# IgnorePkg = mesa\n"
        "IgnorePkg = llvm-libs   lib32-llvm*\n"
        "IgnorePkg = linux\n"
        "Include = /etc/pacman.d/hold.conf\n"
        "[core]\n"
        "IgnorePkg = not-an-option-here\n"
    )
    (root / "etc" / "pacman.d").mkdir()
    (root / "etc" / "pacman.d" / "hold.conf").write_text("IgnorePkg = vulkan-swrast\n")
    # pacman's own reading of the same file is the oracle (without the Include: pacman-conf
    # would read the host's /etc/pacman.d)
    plain = tmp_path / "plain.conf"
    plain.write_text(conf.read_text().replace("Include = /etc/pacman.d/hold.conf\n", ""))
    got = subprocess.run(
        ["pacman-conf", "--config", str(plain), "IgnorePkg"],
        capture_output=True,
        text=True,
        check=True,
    )
    ctx = ctx_for(root)
    pkgs, _ = ignored(ctx)
    assert got.stdout.split() == [p for p, _ in pkgs][:3] == ["llvm-libs", "lib32-llvm*", "linux"]
    assert pkgs[3] == ("vulkan-swrast", "/etc/pacman.d/hold.conf")

    facts = StackFacts(
        missing_sonames=(
            MissingSoname(
                consumer=LVP,
                soname="libLLVM.so.23.1",
                near_misses=("/usr/lib/libLLVM.so.22.1",),
                target=LVP,
            ),
        )
    )
    held = {f.evidence["package"]: f for f in HeldPackages().findings(ctx, facts)}
    assert sorted(held) == ["llvm-libs", "vulkan-swrast"]
    assert held["llvm-libs"].evidence["hold"] == "IgnorePkg = llvm-libs in /etc/pacman.conf"
    assert held["vulkan-swrast"].evidence["hold"] == (
        "IgnorePkg = vulkan-swrast in /etc/pacman.d/hold.conf"
    )
    assert held["llvm-libs"].fix() == (
        "change the IgnorePkg/IgnoreGroup entry that matches llvm-libs so that it no longer "
        "does, then sudo pacman -Syu."
    )


def test_sync_databases_say_whether_the_upgrade_can_bring_the_llvm(arch_tree: Path, tmp_path: Path):
    """Rule P4 with the real pacman -Si over sync databases built by repo-add."""

    from pkgtools import build_pkg

    from vkdoctor.checks.packages import RepositoryView

    facts = lvp_missing()

    work = tmp_path / "work"
    installed = arch_tree.parent / "llvm-libs-22.1.8-1-x86_64.pkg.tar.zst"
    newer = build_pkg(work, "llvm-libs", "23.1.0-1", {}, provides=["libLLVM.so=23.1-64"])

    # a mirror that carries no vulkan-swrast at all: nothing to go back to
    (f,) = RepositoryView().findings(
        ctx_for(copy_with_sync(arch_tree, tmp_path / "bare", installed)), facts
    )
    assert (f.fix() or "").endswith(
        "remove vulkan-swrast and install the driver package the repositories carry."
    )
    # the mirror still has the installed llvm-libs: -Syu cannot fix it, -Syuu returns mesa
    older = build_pkg(work, "vulkan-swrast", "1:26.2.2-1", {}, base="mesa")
    (f,) = RepositoryView().findings(
        ctx_for(copy_with_sync(arch_tree, tmp_path / "behind", installed, older)), facts
    )
    assert f.severity is Severity.WARN
    assert f.title == (
        "The repositories offer only llvm-libs 22.1.8-1, the installed one: "
        "the upgrade cannot fix libLLVM.so.23.1"
    )
    assert (
        "vulkan-swrast 1:26.2.3-1 came from a newer mirror than these sync databases" in f.message
    )
    assert (f.fix() or "").endswith(
        "sudo pacman -Syuu (it also downgrades to the repositories' versions)."
    )
    # the sync database has the new llvm-libs: the upgrade is pending
    (f,) = RepositoryView().findings(
        ctx_for(copy_with_sync(arch_tree, tmp_path / "ahead", newer)), facts
    )
    assert f.severity is Severity.INFO
    assert f.title == "The repositories offer llvm-libs 23.1.0-1"
    # no sync database: nothing to say
    assert list(RepositoryView().findings(ctx_for(arch_tree), facts)) == []
    # pacman asks the repositories pacman.conf lists, in its order: a stale database of a
    # repository no longer listed does not count
    root = copy_with_sync(arch_tree, tmp_path / "stale", installed, older)
    sync_db(root, newer, repo="community")
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/pacman.conf").write_text(
        "[options]\n[extra]\nInclude = /etc/pacman.d/mirrorlist\n"
    )
    (f,) = RepositoryView().findings(ctx_for(root), facts)
    assert f.severity is Severity.WARN and f.evidence["offered"] == "22.1.8-1"


def test_a_held_llvm_changes_the_skew_fix(arch_tree: Path, tmp_path: Path):
    """IgnorePkg = llvm-libs: pacman -Syu would skip it, so the fix starts by releasing it."""
    import shutil

    root = tmp_path / "root"
    shutil.copytree(arch_tree, root, symlinks=True)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/pacman.conf").write_text("[options]\nIgnorePkg = llvm-libs\n")
    (f,) = MissingSonameSkew().findings(ctx_for(root), lvp_missing())
    assert (
        "(llvm-libs is held by IgnorePkg = llvm-libs in /etc/pacman.conf, so upgrades skip it)"
        in (f.message)
    )
    assert f.message.endswith(
        "Fix: change the IgnorePkg/IgnoreGroup entry that matches llvm-libs so that it no "
        "longer does, then sudo pacman -Syu. " + UNVERIFIED
    )
    assert f.evidence["held"] == {"llvm-libs": "IgnorePkg = llvm-libs in /etc/pacman.conf"}


def test_llvm_newer_than_the_driver_needs_a_newer_driver_from_the_repositories(
    arch_tree: Path, tmp_path: Path
):
    """The driver needs an older LLVM than installed: the fix is a newer driver, so the question
    is whether the repositories offer one (not the old llvm-libs)."""

    from pkgtools import build_pkg

    from vkdoctor.checks.packages import RepositoryView

    facts = lvp_missing("libLLVM.so.21.1")

    work = tmp_path / "work"
    newer = build_pkg(work, "vulkan-swrast", "1:26.2.4-1", {}, base="mesa")
    (f,) = RepositoryView().findings(
        ctx_for(copy_with_sync(arch_tree, tmp_path / "newer", newer)), facts
    )
    assert f.severity is Severity.INFO
    assert f.title == "The repositories offer vulkan-swrast 1:26.2.4-1"
    same = build_pkg(tmp_path / "work2", "vulkan-swrast", "1:26.2.3-1", {}, base="mesa")
    (f,) = RepositoryView().findings(
        ctx_for(copy_with_sync(arch_tree, tmp_path / "same", same)), facts
    )
    assert f.severity is Severity.WARN
    assert f.title == (
        "The repositories offer no newer vulkan-swrast: the upgrade cannot fix libLLVM.so.21.1"
    )


def test_a_foreign_driver_missing_its_llvm_is_rebuilt_not_upgraded(arch_tree: Path, tmp_path: Path):
    """pacman -Syu never rebuilds an AUR or local package: the fix says rebuild, or go back to
    the repositories' package by its own name."""
    root = copy_with_sync(arch_tree, tmp_path / "root")
    (f,) = MissingSonameSkew().findings(ctx_for(root), lvp_missing())
    assert f.severity is Severity.FAIL and f.evidence["foreign"] is True
    assert f.title == "lavapipe needs libLLVM.so.23.1: vulkan-swrast is a foreign build"
    assert "sudo pacman -Syu does not rebuild it" in f.message
    # the sync database (empty) has no vulkan-swrast: only the words of the fix remain
    assert f.message.endswith(
        "Fix: rebuild vulkan-swrast against the installed LLVM (with the AUR helper or makepkg "
        "that built it), or sudo pacman -S vulkan-swrast. Unverified: the fix is advice in "
        "words, not a pacman command, so pacman could not check it. Not `sudo pacman -S "
        "vulkan-swrast`, which fails (exit 1: target not found: vulkan-swrast) (pacman)."
    )


def test_a_deleted_library_is_reinstalled_from_the_package_that_lists_it(tmp_path: Path):
    """A package that declares no soname provides (most of Arch's) lost its file: the file
    list names it, and the fix is `pacman -S` of it, not a partial-upgrade `-Syu`."""
    root, _, _ = zx3_tree(tmp_path)
    (f,) = MissingSonameSkew().findings(ctx_for(root), lvp_missing("libzx3.so.4", ()))
    assert "zx3 4.8.12-1 is installed and lists libzx3.so.4, but the file is gone" in f.message
    # without a sync database pacman cannot check the fix: the message says so after it,
    # and nothing backs it
    assert f.fix() == "sudo pacman -S zx3."
    assert f.message.endswith(
        "Fix: sudo pacman -S zx3. Unverified: the tree has no pacman sync database to simulate "
        "with (pacman -Sy never ran), so pacman could not check it."
    )
    assert f.evidence["verified_by"] == []


def test_a_missing_dependency_is_installed_not_upgraded(tmp_path: Path):
    """pacman -Dk: "missing 'libdrmx>=2.4' dependency for 'vulkan-swrast'". -Syu installs
    nothing that no package pulls in again; the fix is -S --asdeps of what is missing."""
    root = libdrmx_tree(tmp_path)
    (f,) = ManagerConsistency().run(ctx_for(root))
    assert f.severity is Severity.FAIL
    assert "missing 'libdrmx>=2.4' dependency for 'vulkan-swrast'" in f.message
    assert f.remedy is not None and f.remedy.commands[0] == "pacman -S --asdeps libdrmx"
    assert (f.fix() or "").startswith("sudo pacman -S --asdeps libdrmx && sudo pacman -Syu")
