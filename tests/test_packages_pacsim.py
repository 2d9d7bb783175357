"""pacman fixes are checked by pacman's own transaction check before they are printed: real
trees (packages built and installed with the real pacman), real sync databases (repo-add), and
the printed fix then carried out for real by pacman from a file:// repository as the oracle."""

from __future__ import annotations

from pathlib import Path

from pactrees import ctx_for, file_repo, libdrmx_tree, lvp_missing, zx3_tree
from pkgtools import build_lib, build_pkg, sh
from pkgtrees import arch_skew_tree

from vkdoctor.checks.packages import ManagerConsistency, MissingSonameSkew
from vkdoctor.model import Finding

CHECKED = "Checked with pacman's own transaction check (stopped at its prompt)"


def carry_out(root: Path, fix: str, *extra: str) -> tuple[int, str]:
    """The printed fix, run for real by pacman in the tree, from the file:// repository."""
    conf = root.parent / f"{root.name}-real.conf"
    conf.write_text(
        "[options]\nSigLevel = Never\nLocalFileSigLevel = Never\n"
        f"[extra]\nServer = file://{root.parent / f'{root.name}-repo'}\n"
    )
    words = fix.rstrip(".").split()
    if words[0] == "sudo":
        words = words[1:]
    assert words[0] == "pacman", fix
    proc = sh(
        "pacman",
        "--root",
        root,
        "--dbpath",
        root / "var/lib/pacman",
        "--config",
        conf,
        "--cachedir",
        root.parent / f"{root.name}-realcache",
        "--logfile",
        root.parent / f"{root.name}-real.log",
        "--noconfirm",
        *extra,
        *words[1:],
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def installed(root: Path) -> dict[str, str]:
    out = sh("pacman", "--root", root, "--dbpath", root / "var/lib/pacman", "-Q").stdout
    return dict(line.split() for line in out.splitlines())


def zx3_finding(root: Path) -> Finding:
    (f,) = MissingSonameSkew().findings(ctx_for(root), lvp_missing("libzx3.so.4", ()))
    return f


def snapshot(root: Path) -> list[tuple[str, int, float]]:
    return sorted(
        (str(p.relative_to(root)), p.lstat().st_size, p.lstat().st_mtime) for p in root.rglob("*")
    )


def test_a_reinstall_is_checked_by_pacman_and_then_works(tmp_path: Path):
    root, zx3, swrast = zx3_tree(tmp_path)
    file_repo(root, zx3, swrast)
    before = snapshot(root)
    f = zx3_finding(root)
    assert f.fix() == "sudo pacman -S zx3."
    assert f.message.endswith(
        f"Fix: sudo pacman -S zx3. {CHECKED}: it installs zx3 4.8.12-1 and removes nothing."
    )
    assert f.evidence["verified_by"] == [
        f"pacman --root {root} --dbpath {root}/var/lib/pacman -S zx3 (answered no at its prompt)"
    ]
    (sim,) = f.evidence["simulations"]
    assert sim["tool"] == "pacman" and sim["ok"] and sim["removes"] == []
    # nothing written in the tree: no lock, no log, no package
    assert snapshot(root) == before
    # the oracle: pacman carries the printed fix out, and the library is back
    rc, out = carry_out(root, f.fix())
    assert rc == 0, out
    assert (root / "usr/lib/libzx3.so.4").is_file()
    assert installed(root) == {"vulkan-swrast": "1:26.2.3-1", "zx3": "4.8.12-1"}


def test_a_fix_that_would_remove_the_driver_is_not_printed(tmp_path: Path):
    """The repository's zx3 conflicts with vulkan-swrast: pacman -S zx3 removes the driver.
    pacman's print mode (-p) skips the conflict check, so it alone would pass this fix."""
    root, _, swrast = zx3_tree(tmp_path)
    z3 = tmp_path / "s/z3/libzx3.so.4"
    bad = build_pkg(tmp_path / "bad", "zx3", "5.0-1", {"/usr/lib/libzx3.so.4": z3})
    pkgdir = tmp_path / "bad" / "zx3-5.0-1"
    with (pkgdir / ".PKGINFO").open("a") as info:
        info.write("conflict = vulkan-swrast\n")
    sh("bsdtar", "--zstd", "-cf", bad, ".PKGINFO", ".MTREE", "usr", cwd=pkgdir)
    file_repo(root, bad, swrast)
    conf = "[options]\n[extra]\n"
    printed = sh(
        "sh",
        "-c",
        f"printf '{conf}' | pacman --config /dev/stdin --root {root} --dbpath "
        f"{root}/var/lib/pacman -S zx3 -p --print-format '%n %v'",
    )
    assert printed.stdout.strip() == "zx3 5.0-1"  # -p passes it
    f = zx3_finding(root)
    assert "Fix: sudo pacman -S zx3" not in f.message
    assert f.message.endswith(
        "But no fix vkdoctor knows passes pacman's own check: `sudo pacman -S zx3`, which "
        "fails: zx3 and vulkan-swrast are in conflict (pacman would have to remove "
        "vulkan-swrast)."
    )
    assert f.evidence["fix"] is None and f.evidence["verified_by"] == []
    # the oracle: carried out, answering yes to the conflict, pacman removes the driver
    rc, out = carry_out(root, "pacman -S zx3", "--ask", "4")
    assert rc == 0, out
    assert installed(root) == {"zx3": "5.0-1"}


def test_without_a_sync_database_the_fix_is_said_to_be_unverified(tmp_path: Path):
    root, _, _ = zx3_tree(tmp_path, sudo=False)
    f = zx3_finding(root)
    # a tree without sudo: the fix is for running inside it
    assert f.fix() == "pacman -S zx3."
    assert f.message.endswith(
        "Fix: pacman -S zx3. Unverified: the tree has no pacman sync database to simulate with "
        "(pacman -Sy never ran), so pacman could not check it."
    )
    assert f.evidence["verified_by"] == []
    (sim,) = f.evidence["simulations"]
    assert not sim["ran"]


def test_a_reinstall_the_repository_lacks_is_rejected(tmp_path: Path):
    root, _, swrast = zx3_tree(tmp_path)
    file_repo(root, swrast)
    f = zx3_finding(root)
    assert f.message.endswith(
        "But no fix vkdoctor knows passes pacman's own check: `sudo pacman -S zx3`, which "
        "fails (exit 1: target not found: zx3)."
    )
    rc, out = carry_out(root, "pacman -S zx3")
    assert rc == 1 and "target not found: zx3" in out


def _skew(root: Path) -> Finding:
    (f,) = MissingSonameSkew().findings(ctx_for(root), lvp_missing())
    return f


def test_the_upgrade_that_brings_the_llvm_is_checked_and_works(tmp_path: Path):
    root = arch_skew_tree(tmp_path / "arch")
    llvm23 = build_lib(
        tmp_path / "s23" / "libLLVM.so.23.1", "libLLVM.so.23.1", version_node="LLVM_23.1"
    )
    newer = build_pkg(
        tmp_path / "w",
        "llvm-libs",
        "23.1.0-1",
        {"/usr/lib/libLLVM.so.23.1": llvm23},
        base="llvm",
        provides=["libLLVM.so=23.1-64"],
    )
    # the repository carries what is installed (nothing is foreign) and the new llvm-libs
    others = [p for p in root.parent.glob("*.pkg.tar.zst") if not p.name.startswith("llvm-libs-")]
    file_repo(root, *others, newer)
    f = _skew(root)
    assert f.fix() is not None and f.fix().startswith("sudo pacman -Syu.")
    assert f.message.endswith(
        f"Fix: sudo pacman -Syu. {CHECKED}: it installs llvm-libs 23.1.0-1 and removes nothing "
        "(pacman -Sy (the sync databases as last refreshed) not simulated)."
    )
    rc, out = carry_out(root, "sudo pacman -Syu")
    assert rc == 0, out
    assert installed(root)["llvm-libs"] == "23.1.0-1"
    assert (root / "usr/lib/libLLVM.so.23.1").is_file()


def test_an_upgrade_that_changes_nothing_is_not_the_fix(tmp_path: Path):
    """The sync database has only the installed llvm-libs and the older vulkan-swrast: -Syu
    does nothing; the fix is -Syuu, which takes vulkan-swrast back to the repository's."""
    root = arch_skew_tree(tmp_path / "arch")
    src = root.parent
    older = build_pkg(tmp_path / "w", "vulkan-swrast", "1:26.2.2-1", {}, base="mesa")
    file_repo(root, src / "llvm-libs-22.1.8-1-x86_64.pkg.tar.zst", older)
    f = _skew(root)
    assert "Fix: sudo pacman -Syuu. " + CHECKED + ": it installs vulkan-swrast 1:26.2.2-1" in (
        f.message
    )
    assert f.evidence["fix"] == "sudo pacman -Syuu"
    rc, out = carry_out(root, "sudo pacman -Syuu")
    assert rc == 0, out
    assert installed(root)["vulkan-swrast"] == "1:26.2.2-1"


def test_a_missing_dependency_fix_is_checked(tmp_path: Path):
    root = libdrmx_tree(tmp_path)
    file_repo(root, build_pkg(tmp_path / "w", "libdrmx", "2.4.120-1", {}))
    (f,) = ManagerConsistency().run(ctx_for(root))
    assert f.message.endswith(
        f"Fix: sudo pacman -S --asdeps libdrmx. {CHECKED}: it installs libdrmx 2.4.120-1 and "
        "removes nothing."
    )
    rc, out = carry_out(root, "sudo pacman -S --asdeps libdrmx")
    assert rc == 0, out
    dk = sh("pacman", "--root", root, "--dbpath", root / "var/lib/pacman", "-Dk", check=False)
    assert dk.returncode == 0, dk.stdout + dk.stderr


def test_a_held_llvm_is_released_for_the_check_and_kept_otherwise(tmp_path: Path):
    """IgnorePkg = llvm-libs: the fix that changes the entry is checked with the hold released;
    the tree's IgnorePkg holds for every other check (-Syu alone would skip llvm-libs)."""
    from vkdoctor.packages.pacman import PacmanDB
    from vkdoctor.packages.pacsim import simulate

    root = arch_skew_tree(tmp_path / "arch")
    llvm23 = build_lib(tmp_path / "s23" / "libLLVM.so.23.1", "libLLVM.so.23.1")
    newer = build_pkg(
        tmp_path / "w", "llvm-libs", "23.1.0-1", {"/usr/lib/libLLVM.so.23.1": llvm23}, base="llvm"
    )
    others = [p for p in root.parent.glob("*.pkg.tar.zst") if not p.name.startswith("llvm-libs-")]
    file_repo(root, *others, newer)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/pacman.conf").write_text("[options]\nIgnorePkg = llvm-libs\n[extra]\n")
    f = _skew(root)
    assert f.message.endswith(
        "Fix: change the IgnorePkg/IgnoreGroup entry that matches llvm-libs so that it no "
        f"longer does, then sudo pacman -Syu. {CHECKED}: it installs llvm-libs 23.1.0-1 and "
        "removes nothing (pacman -Sy (the sync databases as last refreshed); the IgnorePkg "
        "change (llvm-libs released for the check) not simulated)."
    )
    ctx = ctx_for(root)
    held = simulate(ctx, PacmanDB(ctx), "sudo pacman -Syu", ["vulkan-swrast"])
    assert held.ran and not held.ok and held.why.startswith("changes nothing")
    # the oracle: pacman itself skips the held llvm-libs
    rc, out = carry_out(root, "sudo pacman -Syu", "--ignore", "llvm-libs")
    assert rc == 0 and "there is nothing to do" in out, out


def test_an_upgrade_that_replaces_the_driver_is_not_printed(tmp_path: Path):
    """The repository's vulkan-next replaces vulkan-swrast: pacman asks "Replace vulkan-swrast
    with extra/vulkan-next? [Y/n]", and Enter says yes."""
    from vkdoctor.packages.pacman import PacmanDB
    from vkdoctor.packages.pacsim import simulate

    root, zx3, _ = zx3_tree(tmp_path)
    nxt = build_pkg(tmp_path / "w", "vulkan-next", "1-1", {})
    pkgdir = tmp_path / "w" / "vulkan-next-1-1"
    with (pkgdir / ".PKGINFO").open("a") as info:
        info.write("replaces = vulkan-swrast\n")
    sh("bsdtar", "--zstd", "-cf", nxt, ".PKGINFO", ".MTREE", cwd=pkgdir)
    file_repo(root, zx3, nxt)
    ctx = ctx_for(root)
    sim = simulate(ctx, PacmanDB(ctx), "sudo pacman -Syu", ["vulkan-swrast"])
    assert sim.ran and not sim.ok
    assert sim.why == "would remove vulkan-swrast"
    assert sim.installs == ("extra/vulkan-next (replacing vulkan-swrast)",)
    # the oracle: carried out with pacman's default answers, the driver package is gone
    rc, out = carry_out(root, "sudo pacman -Syu")
    assert rc == 0, out
    assert "vulkan-swrast" not in installed(root)
