"""`check --root TREE` never writes into the tree it inspects: every file and folder of a real
rpm, Debian and pacman tree (names, types, modes, sizes, modification times, link targets and
contents) is the same after the check as before, and nothing is added.

rpm opens a tree's sqlite database for writing even to query it, and sqlite makes its -wal and
-shm files beside it: the tree's rpm database is read from a private copy instead.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import debroot
import pytest
from conftest import run_vkdoctor
from pkgtrees import arch_skew_tree, debian_skew_tree, fedora_skew_tree
from test_packages_dnfsim import fedora, llvm23

Snapshot = dict[str, tuple[object, ...]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under `root`, links not followed: type and mode, size, mtime, and the
    SHA-256 of a regular file's bytes or a link's target."""
    out: Snapshot = {}
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names, *([] if folder != str(root) else ["."])]:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    content = hashlib.file_digest(f, "sha256").hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                content = os.readlink(path)
            else:
                content = ""
            out[os.path.relpath(path, root)] = (st.st_mode, st.st_size, st.st_mtime_ns, content)
    return out


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    added = [f"added {p}" for p in after.keys() - before.keys()]
    gone = [f"removed {p}" for p in before.keys() - after.keys()]
    differ = [f"changed {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(added + gone + differ)


def _check_leaves_unchanged(root: Path) -> str:
    before = snapshot(root)
    assert len(before) > 10, "the tree is too small to say anything"
    proc = run_vkdoctor(["check", "--root", str(root), "--no-probe", "-v"], timeout=600)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert changes(before, snapshot(root)) == []
    return proc.stdout


def test_an_rpm_tree_is_not_written(tmp_path: Path) -> None:
    root = fedora_skew_tree(tmp_path)
    db = root / "var/lib/rpm"
    for leftover in (*db.glob("rpmdb.sqlite-*"), db / ".rpm.lock"):
        leftover.unlink(missing_ok=True)  # left by the rpm that built the tree
    out = _check_leaves_unchanged(root)
    # the database was read all the same: the skewed driver package is named
    assert "mesa-vulkan-drivers" in out


def test_an_rpm_tree_whose_fix_dnf_checks_is_not_written(tmp_path: Path) -> None:
    root = fedora(tmp_path, *llvm23(tmp_path))
    db = root / "var/lib/rpm"
    for leftover in (*db.glob("rpmdb.sqlite-*"), db / ".rpm.lock"):
        leftover.unlink(missing_ok=True)
    out = _check_leaves_unchanged(root)
    assert "Checked with dnf --assumeno" in out  # dnf read the tree's database and metadata


def test_an_rpm_database_linked_out_of_the_tree_is_not_copied(tmp_path: Path) -> None:
    root = fedora_skew_tree(tmp_path)
    db = root / "var/lib/rpm"
    (db / "rpmdb.sqlite").unlink()
    (db / "rpmdb.sqlite").symlink_to("/dev/zero")
    proc = run_vkdoctor(["check", "--root", str(root), "--no-probe", "-v"], timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr


def test_a_debian_tree_is_not_written(tmp_path: Path) -> None:
    out = _check_leaves_unchanged(debian_skew_tree(tmp_path))
    assert "libLLVM.so.23.1" in out


def test_a_debootstrapped_tree_whose_fix_apt_simulates_is_not_written(debian_root: Path) -> None:
    broke = debroot.chroot(debian_root, "dpkg", "--force-depends", "-r", "libllvm15")
    assert broke.returncode == 0, broke.stderr
    out = _check_leaves_unchanged(debian_root)
    assert "Checked with apt-get -s" in out  # apt read the tree's lists, status and sources


def test_a_pacman_tree_is_not_written(tmp_path: Path) -> None:
    out = _check_leaves_unchanged(arch_skew_tree(tmp_path))
    assert "vulkan-swrast" in out


@pytest.mark.parametrize("name", ["added", "changed"])
def test_the_snapshot_sees_a_write(tmp_path: Path, name: str) -> None:
    (tmp_path / "a").write_text("x")
    before = snapshot(tmp_path)
    if name == "added":
        (tmp_path / "b").write_text("")
    else:
        os.utime(tmp_path / "a", ns=(0, 0))
    assert changes(before, snapshot(tmp_path)) != []
