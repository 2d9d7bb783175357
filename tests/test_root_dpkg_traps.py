"""A hostile Debian tree cannot make `dpkg --verify` read what is not the tree's, or block.

dpkg --root opens every file it hashes (and its own database files) with links followed on this
machine. In a real Debian root whose lavapipe manifest was deleted (so VKP010 asks dpkg to
confirm it), a file dpkg would read is made a trap: a link to /dev/zero or out of the tree to
this machine's /etc/shadow, a device node, a FIFO in place of the package's md5sums, a sparse
file of 2 GiB.
The check finishes in seconds, does not run dpkg, and says why.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from conftest import run_json

LVP = "usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
LVP_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
MD5SUMS = "var/lib/dpkg/info/mesa-vulkan-drivers:amd64.md5sums"

#: trap -> (the file of the tree it replaces, what the finding says)
TRAPS = {
    "link to /dev/zero": (LVP, f"/{LVP} leads out of the tree to /dev/zero"),
    "device node like /dev/zero": (LVP, f"/{LVP} is not a regular file, and dpkg would block"),
    "link to the tree's dev/zero": (LVP, f"/{LVP} leads to /dev/zero, a file of the kernel's"),
    "link climbing out to /dev/zero": (LVP, f"/{LVP} leads out of the tree to /dev/zero"),
    "link to /etc/shadow": (LVP, f"/{LVP} leads out of the tree to /etc/shadow"),
    "sparse 2 GiB": (LVP, "its files hold more than 1 GiB for dpkg to hash"),
    "FIFO md5sums": (MD5SUMS, f"/{MD5SUMS} is not a regular file"),
    "md5sums link to /dev/zero": (MD5SUMS, f"/{MD5SUMS} leads out of the tree to /dev/zero"),
}


def _set(trap: str, path: Path) -> None:
    path.unlink()
    zero = os.makedev(1, 5)
    if trap == "device node like /dev/zero":
        os.mknod(path, stat.S_IFCHR | 0o666, zero)
    elif trap == "link to the tree's dev/zero":
        tree_zero = path.parents[3] / "dev/zero"
        tree_zero.unlink(missing_ok=True)
        os.mknod(tree_zero, stat.S_IFCHR | 0o666, zero)
        path.symlink_to("../../../dev/zero")
    elif trap == "link climbing out to /dev/zero":
        path.symlink_to("../" * 12 + "dev/zero")
    elif "link to" in trap:
        path.symlink_to(trap.rpartition(" ")[2])
    elif trap == "sparse 2 GiB":
        with open(path, "wb") as f:
            f.truncate(2 << 30)
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("trap", list(TRAPS))
def test_dpkg_verify_is_not_run_on_a_trap(debian_root: Path, trap: str) -> None:
    target, said = TRAPS[trap]
    (debian_root / LVP_ICD.lstrip("/")).unlink()
    _set(trap, debian_root / target)
    started = time.monotonic()
    _, doc = run_json(
        ["check", "--root", str(debian_root), "--no-probe", "--select", "VKP010"], timeout=120
    )
    took = time.monotonic() - started
    assert took < 20, f"{took:.0f} s"
    [gone] = [f for f in doc["findings"] if f["code"] == "VKP010"]
    assert gone["evidence"]["missing"] == [LVP_ICD], gone
    assert "dpkg --verify could not run: " + said in gone["message"], gone["message"]
    assert gone["evidence"]["verify"]["returncode"] is None  # dpkg did not run


def test_dpkg_verify_runs_on_an_honest_tree(debian_root: Path) -> None:
    (debian_root / LVP_ICD.lstrip("/")).unlink()
    _, doc = run_json(["check", "--root", str(debian_root), "--no-probe", "--select", "VKP010"])
    [gone] = [f for f in doc["findings"] if f["code"] == "VKP010"]
    assert "(dpkg --verify lists it as missing)" in gone["message"], gone["message"]


#: dpkg --audit's own reads: trap -> (the file of the tree made a trap, what the finding says)
AUDIT_TRAPS = {
    "FIFO in the journal": ("var/lib/dpkg/updates/0001", "is not a regular file"),
    "FIFO of the triggers": ("var/lib/dpkg/triggers/Unincorp", "is not a regular file"),
    "list link to /dev/zero": (
        "var/lib/dpkg/info/mesa-vulkan-drivers:amd64.list",
        "leads out of the tree to /dev/zero",
    ),
}


@pytest.mark.parametrize("trap", list(AUDIT_TRAPS))
def test_dpkg_audit_is_not_run_on_a_trap(debian_root: Path, trap: str) -> None:
    """A FIFO where dpkg --audit reads its journal or triggers stalled `check --root` for the
    whole 60 s timeout (and then said nothing but "timed out")."""
    target, said = AUDIT_TRAPS[trap]
    path = debian_root / target
    path.unlink(missing_ok=True)
    if "FIFO" in trap:
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    started = time.monotonic()
    _, doc = run_json(
        ["check", "--root", str(debian_root), "--no-probe", "--select", "VKP006"], timeout=120
    )
    took = time.monotonic() - started
    assert took < 20, f"{took:.0f} s"
    [audit] = [f for f in doc["findings"] if f["code"] == "VKP006"]
    assert audit["title"] == "dpkg: could not run the database check", audit
    assert f"/{target} {said}" in audit["message"], audit["message"]


def test_dpkg_audit_runs_on_an_honest_tree(debian_root: Path) -> None:
    _, doc = run_json(["check", "--root", str(debian_root), "--no-probe", "--select", "VKP006"])
    [audit] = [f for f in doc["findings"] if f["code"] == "VKP006"]
    assert audit["severity"] == "ok", audit
