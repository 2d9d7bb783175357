"""pacman trees shared by the pacman tests: small trees installed with the real pacman, sync
databases made by the real repo-add, and a file:// repository a printed fix can be carried out
from."""

from __future__ import annotations

import shutil
from pathlib import Path

from pkgtools import build_lib, build_pkg, pacman_install, pacman_root, sh

from vkdoctor.model.context import Context
from vkdoctor.packages.facts import MissingSoname, StackFacts

LVP = "/usr/lib/libvulkan_lvp.so"


def ctx_for(root: Path) -> Context:
    return Context(root=root, env={"PATH": "/usr/bin:/bin"})


def lvp_missing(
    soname: str = "libLLVM.so.23.1", near_misses: tuple[str, ...] = ("/usr/lib/libLLVM.so.22.1",)
) -> StackFacts:
    """lavapipe (LVP) cannot find `soname`; ld.so saw `near_misses`."""
    missing = MissingSoname(consumer=LVP, soname=soname, near_misses=near_misses, target=LVP)
    return StackFacts(missing_sonames=(missing,))


def zx3_tree(tmp_path: Path, *, sudo: bool = True) -> tuple[Path, Path, Path]:
    """vulkan-swrast needs libzx3.so.4 of zx3; the library is deleted behind pacman's back.
    The tree, and the two packages (zx3, vulkan-swrast) it was installed from."""
    s = tmp_path / "s"
    z3 = build_lib(s / "z3" / "libzx3.so.4", "libzx3.so.4")
    lvp = build_lib(s / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so", needs=[z3])
    root = pacman_root(tmp_path / "root")
    zx3 = build_pkg(tmp_path, "zx3", "4.8.12-1", {"/usr/lib/libzx3.so.4": z3})
    swrast = build_pkg(tmp_path, "vulkan-swrast", "1:26.2.3-1", {LVP: lvp}, depends=["zx3"])
    pacman_install(root, zx3, swrast)
    (root / "usr/lib/libzx3.so.4").unlink()
    if not sudo:
        (root / "usr/bin/sudo").unlink()
    return root, zx3, swrast


def libdrmx_tree(tmp_path: Path) -> Path:
    """vulkan-swrast depends on libdrmx>=2.4, which is not installed (pacman -Dk says so)."""
    lvp = build_lib(tmp_path / "s" / "libvulkan_lvp.so", "libvulkan_lvp.so")
    root = pacman_root(tmp_path / "root")
    pacman_install(
        root,
        build_pkg(tmp_path, "vulkan-swrast", "1:26.2.3-1", {LVP: lvp}, depends=["libdrmx>=2.4"]),
    )
    return root


def sync_db(root: Path, *packages: Path, repo: str = "extra") -> Path:
    """The tree's sync database `repo`, made by repo-add of `packages` (none: an empty but valid
    one, as bsdtar writes it). Returns the database file."""
    sync = root / "var/lib/pacman/sync"
    sync.mkdir(parents=True, exist_ok=True)
    if not packages:
        sh("bsdtar", "-czf", sync / f"{repo}.db", "--files-from", "/dev/null")
        return sync / f"{repo}.db"
    sh("repo-add", "-q", sync / f"{repo}.db.tar.gz", *packages)
    return sync / f"{repo}.db.tar.gz"


def copy_with_sync(tree: Path, to: Path, *packages: Path) -> Path:
    """A copy of `tree` at `to` whose sync database `extra` holds `packages`."""
    shutil.copytree(tree, to, symlinks=True)
    sync_db(to, *packages)
    return to


def file_repo(root: Path, *pkgs: Path) -> Path:
    """A file:// repository `extra` beside the tree, and the tree's sync database of it (as
    pacman -Sy leaves it)."""
    where = root.parent / f"{root.name}-repo"
    where.mkdir(exist_ok=True)
    for p in pkgs:
        shutil.copy2(p, where / p.name)
    sh("repo-add", "-q", where / "extra.db.tar.gz", *(where / p.name for p in pkgs))
    sync = root / "var/lib/pacman/sync"
    sync.mkdir(parents=True, exist_ok=True)
    shutil.copy2(where / "extra.db.tar.gz", sync / "extra.db")
    return where
