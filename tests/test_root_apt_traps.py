"""A hostile Debian tree cannot make apt read what is not the tree's, or block it.

apt, pointed at a tree, opens its package lists, sources and preferences with links followed on
this machine. In a real Debian root whose driver lost a dependency (so VKP002's fix is simulated
with apt-get -s over the tree's data), one of those files is made a trap: a FIFO, a link to
/dev/zero, /proc/kmsg or this machine's /etc/shadow. The check finishes in seconds, apt is not
given the tree's data, and the fix says why it is unverified. A link that stays inside the tree
is followed inside it (an absolute one where apt is handed the path resolved inside the tree,
the folders; a relative one everywhere), and the fix is still checked.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import debroot
import pytest
from conftest import run_json

PACKAGES = "var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages"

#: trap -> (the file of the tree it takes the place of, what it is)
TRAPS = {
    "FIFO list": (PACKAGES, "fifo"),
    "list linked to /dev/zero": (PACKAGES, "/dev/zero"),
    "list linked to /proc/kmsg": (PACKAGES, "/proc/kmsg"),
    "list linked to /etc/shadow": (PACKAGES, "/etc/shadow"),
    "FIFO in sources.list.d": ("etc/apt/sources.list.d/extra.list", "fifo"),
    "sources.list linked to /dev/zero": ("etc/apt/sources.list", "/dev/zero"),
    "preferences.d linked to /proc/kmsg": ("etc/apt/preferences.d/pin", "/proc/kmsg"),
}
SAID = {
    "fifo": "is not a regular file, and apt would block reading it",
    "/dev/zero": "leads out of the tree to /dev/zero, which apt would read",
    "/proc/kmsg": "leads out of the tree to /proc/kmsg, which apt would read",
    "/etc/shadow": "leads out of the tree to /etc/shadow, which apt would read",
}


def _skew(root: Path) -> dict:
    started = time.monotonic()
    _, doc = run_json(["check", "--root", str(root), "--no-probe", "--select", "VKP002"])
    took = time.monotonic() - started
    assert took < 20, f"{took:.0f} s"
    [skew] = [f for f in doc["findings"] if f["code"] == "VKP002" and f["severity"] == "fail"]
    return skew


@pytest.mark.parametrize("trap", list(TRAPS))
def test_apt_is_not_given_a_trap(debian_root: Path, trap: str) -> None:
    broke = debroot.chroot(debian_root, "dpkg", "--force-depends", "-r", "libllvm15")
    assert broke.returncode == 0, broke.stderr
    name, kind = TRAPS[trap]
    path = debian_root / name
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(kind)
    skew = _skew(debian_root)
    what = SAID[kind]
    if name == "etc/apt/sources.list":  # apt is handed the path resolved inside the tree
        what = "leads to /dev/zero, a file of the kernel's, and apt would block reading it"
    said = f"the tree's sources are not used: the tree's /{name} {what}"
    assert said in skew["message"], skew["message"]
    assert "Checked with apt-get" not in skew["message"]


def test_a_link_inside_the_tree_is_followed_inside_it(debian_root: Path) -> None:
    broke = debroot.chroot(debian_root, "dpkg", "--force-depends", "-r", "libllvm15")
    assert broke.returncode == 0, broke.stderr
    lists = debian_root / "var/lib/apt/lists"
    lists.rename(lists.with_name("lists.real"))
    lists.symlink_to("/var/lib/apt/lists.real")  # absolute: the tree's, not this machine's
    packages = debian_root / PACKAGES.replace("lists/", "lists.real/")
    packages.rename(packages.with_name("Packages.real"))
    packages.symlink_to("Packages.real")
    skew = _skew(debian_root)
    assert "Checked with apt-get -s: it installs libllvm15" in skew["message"], skew["message"]
