"""The three skew trees (Arch, Debian, Fedora), built with the real package tools.

Used by the package tests and by `python tests/pkgtrees.py DIR`, which builds all three in DIR
so that `vkdoctor check --root DIR/<name>/root --no-probe` can be run by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pkgtools import (
    build_deb,
    build_lib,
    build_pkg,
    build_rpms,
    dpkg_install,
    dpkg_root,
    icd_manifest,
    pacman_install,
    pacman_root,
    rpm_install,
    stub,
)

ARCH_LVP = "/usr/lib/libvulkan_lvp.so"
ARCH_LVP32 = "/usr/lib32/libvulkan_lvp.so"
DEB_LIB = "/usr/lib/x86_64-linux-gnu"
RPM_LIB = "/usr/lib64"
GLIBCXX = [f"GLIBCXX_3.4.{n}" for n in range(28, 31)]


def arch_skew_tree(work: Path) -> Path:
    """Arch: vulkan-swrast 1:26.2.3-1 (libvulkan_lvp.so NEEDED libLLVM.so.23.1) over llvm-libs
    22.1.8-1, unversioned as Arch declares it; mesa 1:26.2.2-1 behind; lib32 copies, with
    lib32-llvm-libs 21.1.8-1 behind llvm-libs; a hand-installed driver in /usr/local."""
    LVP, LVP32 = ARCH_LVP, ARCH_LVP32
    scratch = work / "scratch"
    llvm22 = build_lib(
        scratch / "22" / "libLLVM.so.22.1", "libLLVM.so.22.1", version_node="LLVM_22.1"
    )
    llvm23 = stub(scratch / "23", "libLLVM.so.23.1", version_node="LLVM_23.1")
    lvp = build_lib(scratch / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so", needs=[llvm23])
    icd = scratch / "lvp_icd.x86_64.json"
    icd.write_text(icd_manifest(LVP))
    gl = build_lib(scratch / "gl" / "libgallium-26.2.2.so", "libgallium-26.2.2.so", needs=[llvm22])
    llvm21_32 = build_lib(scratch / "21" / "libLLVM.so.21.1", "libLLVM.so.21.1", m32=True)
    llvm23_32 = build_lib(scratch / "23-32" / "libLLVM.so.23.1", "libLLVM.so.23.1", m32=True)
    lvp32 = build_lib(
        scratch / "lvp32" / "libvulkan_lvp.so", "libvulkan_lvp.so", needs=[llvm23_32], m32=True
    )
    pkgs = [
        build_pkg(
            work,
            "llvm-libs",
            "22.1.8-1",
            {
                "/usr/lib/libLLVM.so.22.1": llvm22,
                "/usr/lib/libLLVM-22.so": "libLLVM.so.22.1",
                "/usr/lib/libLLVM.so": "libLLVM.so.22.1",
            },
            base="llvm",
            provides=["libLLVM.so=22.1-64"],
        ),
        build_pkg(
            work,
            "vulkan-swrast",
            "1:26.2.3-1",
            {LVP: lvp, "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json": icd},
            base="mesa",
            depends=["llvm-libs"],
            provides=["vulkan-driver"],
        ),
        build_pkg(
            work,
            "mesa",
            "1:26.2.2-1",
            {"/usr/lib/libgallium-26.2.2.so": gl},
            base="mesa",
            depends=["llvm-libs"],
        ),
        build_pkg(
            work,
            "lib32-llvm-libs",
            "21.1.8-1",
            {"/usr/lib32/libLLVM.so.21.1": llvm21_32},
            base="lib32-llvm",
            provides=["libLLVM.so=21.1-32"],
        ),
        build_pkg(
            work,
            "lib32-vulkan-swrast",
            "1:26.2.3-1",
            {LVP32: lvp32},
            base="lib32-mesa",
            depends=["lib32-llvm-libs"],
        ),
    ]
    root = pacman_root(work / "root")
    pacman_install(root, *pkgs)
    # a hand-installed driver beside the packaged one
    build_lib(root / "usr/local/lib/libvulkan_custom.so", "libvulkan_custom.so", needs=[llvm22])
    return root


def debian_skew_tree(work: Path) -> Path:
    """Debian (merged /usr, i386 enabled): mesa-vulkan-drivers 26.2.3-1 (Depends libllvm23, forced)
    over libllvm22 1:22.1.8-1; libgl1-mesa-dri:i386 26.2.2-1 behind; libstdc++6 recorded under
    /lib; a conda environment with an older libstdc++ (libstdcxx-ng 11.2.0) in /opt/conda."""
    LIB, NODES = DEB_LIB, GLIBCXX
    LVP, LLVM22 = f"{LIB}/libvulkan_lvp.so", f"{LIB}/libLLVM.so.22.1"
    s = work / "scratch"
    cxx = build_lib(
        s / "cxx" / "libstdc++.so.6.0.30",
        "libstdc++.so.6",
        version_node=NODES[-1],
        extra_nodes=NODES[:-1],
    )
    llvm22 = build_lib(
        s / "22" / "libLLVM.so.22.1", "libLLVM.so.22.1", needs=[cxx], version_node="LLVM_22.1"
    )
    llvm23 = stub(s / "23", "libLLVM.so.23.1", version_node="LLVM_23.1")
    lvp = build_lib(s / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so", needs=[llvm23])
    dri32 = build_lib(s / "dri32" / "libgallium.so", "libgallium-26.2.2.so", m32=True)
    icd = s / "lvp_icd.x86_64.json"
    icd.write_text(icd_manifest(LVP))
    debs = [
        # libstdc++6 ships under /lib (as libc6 did before the usrmerge move); dpkg records /lib
        build_deb(
            work,
            "libstdc++6",
            "12.2.0-14",
            {
                "/lib/x86_64-linux-gnu/libstdc++.so.6.0.30": cxx,
                "/lib/x86_64-linux-gnu/libstdc++.so.6": "libstdc++.so.6.0.30",
            },
            source="gcc-12",
        ),
        build_deb(
            work,
            "libllvm22",
            "1:22.1.8-1",
            {LLVM22: llvm22, f"{LIB}/libLLVM-22.so": "libLLVM.so.22.1"},
            source="llvm-toolchain-22 (1:22.1.8-1)",
            depends="libstdc++6 (>= 12)",
        ),
        build_deb(
            work,
            "mesa-vulkan-drivers",
            "26.2.3-1",
            {LVP: lvp, "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json": icd},
            source="mesa",
            depends="libllvm23 (>= 1:23.1.0), libstdc++6 (>= 12)",
        ),
        build_deb(
            work,
            "libgl1-mesa-dri",
            "26.2.2-1",
            {"/usr/lib/i386-linux-gnu/libgallium-26.2.2.so": dri32},
            source="mesa",
            arch="i386",
        ),
    ]
    root = dpkg_root(work / "root", foreign_arches=["i386"])
    dpkg_install(root, *debs)
    # a conda environment whose old libstdc++ wins through LD_LIBRARY_PATH
    env = root / "opt/conda/envs/ml"
    old = build_lib(
        env / "lib/libstdc++.so.6.0.29",
        "libstdc++.so.6",
        version_node=NODES[-2],
        extra_nodes=NODES[:-2],
    )
    (env / "lib/libstdc++.so.6").symlink_to(old.name)
    (env / "conda-meta").mkdir()
    (env / "conda-meta/libstdcxx-ng-11.2.0-h1234567_1.json").write_text(
        json.dumps(
            {
                "name": "libstdcxx-ng",
                "version": "11.2.0",
                "build": "h1234567_1",
                "channel": "https://repo.anaconda.com/pkgs/main",
                "files": ["lib/libstdc++.so.6", "lib/libstdc++.so.6.0.29"],
            }
        )
    )
    return root


def fedora_skew_tree(work: Path) -> Path:
    """Fedora: rpmbuild packages, mesa-vulkan-drivers 26.2.3-1.fc43 (a COPR vendor, requiring
    libLLVM.so.23.1()(64bit)) installed --nodeps over llvm-libs 22.1.8-1.fc43; mesa-dri-drivers
    26.2.2-1.fc43 behind."""
    LIB = RPM_LIB
    LVP = f"{LIB}/libvulkan_lvp.so"
    s = work / "scratch"
    llvm22 = build_lib(s / "22" / "libLLVM.so.22.1", "libLLVM.so.22.1", version_node="LLVM_22.1")
    llvm23 = stub(s / "23", "libLLVM.so.23.1", version_node="LLVM_23.1")
    lvp = build_lib(s / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so", needs=[llvm23])
    gallium = build_lib(s / "g" / "libgallium-26.2.2.so", "libgallium-26.2.2.so", needs=[llvm22])
    icd = s / "lvp_icd.x86_64.json"
    icd.write_text(icd_manifest(LVP))
    llvm = build_rpms(
        work,
        "llvm",
        "22.1.8",
        "1.fc43",
        {
            "llvm-libs": {
                f"{LIB}/libLLVM.so.22.1": llvm22,
                f"{LIB}/libLLVM-22.so": "libLLVM.so.22.1",
            }
        },
        vendor="Fedora Project",
    )
    glibc = build_rpms(
        work,
        "glibc",
        "2.42",
        "3.fc43",
        {"glibc": {}},
        vendor="Fedora Project",
        provides={"glibc": ["rtld(GNU_HASH)"]},
    )
    mesa_new = build_rpms(
        work,
        "mesa",
        "26.2.3",
        "1.fc43",
        {"mesa-vulkan-drivers": {LVP: lvp, "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json": icd}},
        vendor="Fedora Copr - user mesa-fan",
    )
    mesa_old = build_rpms(
        work,
        "mesa",
        "26.2.2",
        "1.fc43",
        {"mesa-dri-drivers": {f"{LIB}/libgallium-26.2.2.so": gallium}},
        vendor="Fedora Project",
    )
    root = work / "root"
    rpm_install(
        root,
        glibc["glibc"],
        llvm["llvm-libs"],
        mesa_new["mesa-vulkan-drivers"],
        mesa_old["mesa-dri-drivers"],
    )
    return root


def main(argv: list[str]) -> int:
    """Build the three trees under DIR and print their roots."""
    if len(argv) != 2:
        print("usage: python tests/pkgtrees.py DIR", file=sys.stderr)
        return 2
    base = Path(argv[1]).resolve()
    for name, build in (
        ("arch", arch_skew_tree),
        ("debian", debian_skew_tree),
        ("fedora", fedora_skew_tree),
    ):
        work = base / name
        work.mkdir(parents=True)
        print(build(work))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
