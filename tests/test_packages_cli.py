"""End to end: `vkdoctor check --root TREE --no-probe` on the three skew trees, built with the
real package tools; the loader's manifest scan, the library resolution and the package rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import run_json, run_vkdoctor
from pkgtrees import arch_skew_tree, debian_skew_tree, fedora_skew_tree

ARCH = (
    "lavapipe (/usr/lib/libvulkan_lvp.so, vulkan-swrast 1:26.2.3-1) needs libLLVM.so.23.1, "
    "but llvm-libs 22.1.8-1 provides only libLLVM.so.22.1: mesa was upgraded without LLVM, "
    "a partial upgrade. pacman did not stop this: vulkan-swrast depends on llvm-libs without a "
    "version. Fix: sudo pacman -Syu."
    # the tree has no sync database: pacman cannot check the fix, and the message says so
    " Unverified: the tree has no pacman sync database to simulate with (pacman -Sy never ran),"
    " so pacman could not check it."
)
DEBIAN = (
    "lavapipe (/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so, mesa-vulkan-drivers:amd64 26.2.3-1) "
    "needs libLLVM.so.23.1, but libllvm22:amd64 1:22.1.8-1 provides only libLLVM.so.22.1: mesa "
    "was upgraded without LLVM, a partial upgrade (mesa-vulkan-drivers depends on libllvm23 "
    "(>= 1:23.1.0), which is not installed). Fix: sudo apt update && sudo apt --fix-broken install."
    # the tree has no package lists: apt-get -s has nothing to judge the fix against
    " The fix is unverified: there are no package lists to simulate with (apt update never ran)."
)
FEDORA = (
    "lavapipe (/usr/lib64/libvulkan_lvp.so, mesa-vulkan-drivers.x86_64 26.2.3-1.fc43) needs "
    "libLLVM.so.23.1, but llvm-libs.x86_64 22.1.8-1.fc43 provides only libLLVM.so.22.1: mesa was "
    "upgraded without LLVM, a partial upgrade (mesa-vulkan-drivers requires "
    "libLLVM.so.23.1()(64bit), which no installed package provides: it was installed with "
    "--nodeps or from another repository). Fix: sudo dnf distro-sync."
    " Unverified: there is no dnf metadata to simulate with (dnf makecache never ran), so dnf"
    " could not check it."
)


def _by_code(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code]


@pytest.mark.parametrize(
    ("build", "sentence", "manager", "packages"),
    [
        (arch_skew_tree, ARCH, "pacman", ("vulkan-swrast", "llvm-libs")),
        (debian_skew_tree, DEBIAN, "dpkg", ("mesa-vulkan-drivers", "libllvm22")),
        (fedora_skew_tree, FEDORA, "rpm", ("mesa-vulkan-drivers", "llvm-libs")),
    ],
    ids=["pacman", "dpkg", "rpm"],
)
def test_check_root_names_packages_versions_and_the_fix(
    tmp_path: Path, build: Any, sentence: str, manager: str, packages: tuple[str, str]
):
    root = build(tmp_path)
    proc, doc = run_json(["check", "--root", str(root), "--no-probe"])
    assert proc.returncode == 1, proc.stderr
    assert doc["status"] == "fail"
    (skew,) = _by_code(doc, "VKP002")
    assert skew["severity"] == "fail"
    assert skew["message"] == sentence
    assert skew["evidence"]["consumer_package"]["manager"] == manager
    assert (
        skew["evidence"]["consumer_package"]["name"],
        skew["evidence"]["provider_package"]["name"],
    ) == packages
    # one cause, one failure: the missing library is the skew's symptom, and points at it
    (vkl,) = _by_code(doc, "VKL002")
    assert "libLLVM.so.23.1" in vkl["message"]
    assert vkl["severity"] == "info" and vkl["evidence"]["explained_by"] == "VKP002"
    assert (
        vkl["title"]
        == "libLLVM.so.23.1 missing (needed by libvulkan_lvp.so): VKP002 gives the cause"
    )
    assert {f["code"] for f in doc["findings"]} >= {"VKP001", "VKP003", "VKP006"}
    text = run_vkdoctor(["check", "--root", str(root), "--no-probe", "--select", "VKP002"])
    # the text report gives the fix once, on its own line
    said, _, fix = sentence.rpartition(" Fix: ")
    command, _, verdict = fix.partition(". ")
    assert said in text.stdout
    assert f"fix: {command.rstrip('.')}" in text.stdout
    assert " Fix: " not in text.stdout
    # what apt-get -s said of the fix (dpkg), or that none could, stays in the message
    assert verdict.split(": ")[0] in text.stdout


def test_the_overlay_looks_for_the_near_miss_package_family(tmp_path: Path):
    """Issue 5: package caches are searched starting from the near miss's package (llvm-libs)."""
    from vkdoctor.model.context import Context
    from vkdoctor.overlay.discover import near_miss_packages

    root = arch_skew_tree(tmp_path)
    assert near_miss_packages(Context(root=root, env={})) == {"libLLVM.so.23.1": ["llvm-libs"]}


def test_drivers_gives_the_package_cause_and_fix_as_check_does(tmp_path: Path):
    root = debian_skew_tree(tmp_path)
    proc = run_vkdoctor(["drivers", "--root", str(root)])
    assert proc.returncode == 1, proc.stderr
    assert "✗ VKP002 lavapipe needs libLLVM.so.23.1: package skew" in proc.stdout
    assert "fix: sudo apt update && sudo apt --fix-broken install && sudo apt" in proc.stdout
    assert "VKL002" not in proc.stdout  # the symptom points at VKP002, in the JSON
    _, doc = run_json(["drivers", "--root", str(root)])
    (vkl,) = _by_code(doc, "VKL002")
    assert vkl["severity"] == "info" and vkl["evidence"]["explained_by"] == "VKP002"


@pytest.mark.parametrize(
    ("build", "driver", "fix"),
    [
        (arch_skew_tree, "/usr/lib/libvulkan_lvp.so", "sudo pacman -S vulkan-swrast"),
        (
            debian_skew_tree,
            "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so",
            "sudo apt install --reinstall mesa-vulkan-drivers:amd64",
        ),
        (fedora_skew_tree, "/usr/lib64/libvulkan_lvp.so", "sudo dnf reinstall mesa-vulkan-drivers"),
    ],
    ids=["pacman", "dpkg", "rpm"],
)
def test_a_driver_replaced_after_install_is_named_by_its_checksum(
    tmp_path: Path, build: Any, driver: str, fix: str
):
    """A build installed over the package's file (ninja install into /usr): the checksum the
    database recorded (dpkg md5sums, pacman mtree, rpm's digests) no longer matches, so the
    packages' versions explain nothing, and the fix is to put the package's file back."""
    root = build(tmp_path)
    with open(root / driver.lstrip("/"), "ab") as f:
        f.write(b"\0")  # another build: other bytes, the same needs
    _, doc = run_json(["check", "--root", str(root), "--no-probe", "--select", "VKP002,VKL002"])
    (skew,) = _by_code(doc, "VKP002")
    assert skew["severity"] == "fail" and skew["evidence"]["modified"] is True
    assert skew["title"].endswith(
        "libvulkan_lvp.so is not " + skew["evidence"]["consumer_package"]["name"] + "'s file"
    )
    assert "its checksum differs from the one the package database recorded" in skew["message"]
    assert f"Fix: {fix}." in skew["message"]
    assert skew["remedy"].startswith(fix)
    assert "partial upgrade" not in skew["message"]
