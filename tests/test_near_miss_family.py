"""Near misses by family when the version is not numeric: a driver built with gcc needs
libLLVM-17git.so, a renamed private build libLLVM-15-mybuild.so.1 or the rustc toolchain's
libLLVM.so.17.0-rust-1.74.0-stable, while this machine's packaged libLLVM-15.so.1 and a newer
Rust toolchain's libLLVM.so.18.1-rust-1.78.0-stable on LD_LIBRARY_PATH are there. `vkdoctor check` must call those near misses and
name the package that owns them, as dpkg says, and never call libLLVMSPIRVLib, libzstd, libz3 or
libvulkan_lvp a version of libLLVM, libz or libvulkan."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import run_json
from elfbuild import DlopenProbe, build_lib

from vkdoctor.model.sonames import family

SYSLIB = "/usr/lib/x86_64-linux-gnu"
RUST_LLVM = "libLLVM.so.18.1-rust-1.78.0-stable"
#: what the second driver needs: the LLVM of an older Rust toolchain than the one installed
OLD_RUST_LLVM = "libLLVM.so.17.0-rust-1.74.0-stable"
#: what the first driver needs, none of which this machine has
NEEDS = ("libLLVM-17git.so", "libLLVM-15-mybuild.so.1", "libz.so.9", "libvulkan.so.9")
#: files of other families beside the wanted ones: on LD_LIBRARY_PATH and (real) in SYSLIB
UNRELATED = ("libLLVMSPIRVLib.so.15", "libzstd.so.1", "libz3.so.4", "libvulkan_lvp.so")


def _dpkg_owner(path: str) -> str:
    """`libllvm15:amd64 1:15.0.6-4+b1`, as dpkg itself says (it records some files under /lib
    and others under /usr/lib: both spellings of the file are asked)."""
    real = os.path.realpath(path)
    spellings = [real, real.replace("/usr/lib/", "/lib/", 1)]
    proc = subprocess.run(
        ["dpkg-query", "-S", *spellings], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.stdout, proc.stderr
    name = proc.stdout.split(": ", 1)[0]
    version = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", name],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return f"{name} {version}"


def _manifest(path: Path, lib: Path) -> Path:
    doc = {
        "file_format_version": "1.0.0",
        "ICD": {"library_path": str(lib), "api_version": "1.3.0"},
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("family")
    stubs = [build_lib(root / "stub" / n, soname=n) for n in (*NEEDS, OLD_RUST_LLVM)]
    # a Rust toolchain's lib directory, on LD_LIBRARY_PATH, with neighbours of other families
    rust = root / "toolchain" / "lib"
    build_lib(rust / RUST_LLVM, soname=RUST_LLVM)
    for name in UNRELATED:
        build_lib(rust / name, soname=name)
    drv = build_lib(root / "drv" / "libvulkan_fake.so", soname="libvulkan_fake.so", link=stubs[:4])
    rust_drv = build_lib(
        root / "drv" / "libvulkan_rusty.so", soname="libvulkan_rusty.so", link=stubs[4:]
    )
    manifests = [
        _manifest(root / "fake.json", drv),
        _manifest(root / "rusty.json", rust_drv),
    ]
    env = {"VK_DRIVER_FILES": ":".join(map(str, manifests)), "LD_LIBRARY_PATH": str(rust)}
    proc, doc = run_json(["check", "--no-probe", "--format", "json"], env=env)
    assert proc.returncode == 1, proc.stderr
    probe = DlopenProbe.build(root / "probe")
    return {"doc": doc, "rust": rust, "drv": drv, "rust_drv": rust_drv, "env": env, "probe": probe}


def _findings(doc: dict[str, Any], code: str, soname: str) -> dict[str, Any]:
    (f,) = [
        f for f in doc["findings"] if f["code"] == code and f["evidence"].get("soname") == soname
    ]
    return f


def _near(doc: dict[str, Any], soname: str) -> dict[str, str]:
    (f,) = [
        f for f in doc["findings"] if f["code"] == "VKL002" and f"{soname} missing" in f["title"]
    ]
    return {n["path"]: n["kind"] for n in f["evidence"]["near_misses"]}


def test_family_of_non_numeric_versions() -> None:
    for name in (
        "libLLVM-17git.so",
        "libLLVM-15-mybuild.so.1",
        RUST_LLVM,
        "libLLVM-15.so.1",
        "libLLVM.so.23.1",
    ):
        assert family(name) == "libLLVM", name
    assert family("libLLVMSPIRVLib.so.15") == "libLLVMSPIRVLib"
    assert family("libzstd.so.1") == "libzstd" and family("libz.so.1") == "libz"
    assert family("libvulkan_lvp.so") == "libvulkan_lvp" and family("libvulkan.so.1") == "libvulkan"
    assert family("libxcb-dri3.so.0") == "libxcb-dri3"


@pytest.mark.parametrize("soname", ["libLLVM-17git.so", "libLLVM-15-mybuild.so.1"])
def test_llvm_of_another_version_is_a_near_miss_and_its_package_is_named(
    lab: dict[str, Any], soname: str
) -> None:
    doc, rust = lab["doc"], lab["rust"]
    near = _near(doc, soname)
    system = "/lib/x86_64-linux-gnu/libLLVM-15.so.1"
    assert near[system] == "other-version"
    assert near[str(rust / RUST_LLVM)] == "other-version"
    assert not any("SPIRV" in p for p in near)
    # the real dlopen fails on the same name
    real = lab["probe"].load(str(lab["drv"]), env=lab["env"])
    assert real.error is not None and "cannot open shared object file" in real.error
    owner = _dpkg_owner(system)
    assert owner.startswith("libllvm15:")
    f = _findings(doc, "VKP002", soname)
    assert f"{owner} provides only libLLVM-15.so.1" in f["message"], f["message"]
    assert f["evidence"]["provider_package"]["name"] == "libllvm15"
    assert f["evidence"]["unowned_near_misses"] == [str(rust / RUST_LLVM)]
    assert "SPIRV" not in f["message"] + (f["remedy"] or "")


def test_an_older_rust_toolchains_llvm_has_the_installed_ones_as_near_misses(
    lab: dict[str, Any],
) -> None:
    doc = lab["doc"]
    near = _near(doc, OLD_RUST_LLVM)
    assert near["/lib/x86_64-linux-gnu/libLLVM-15.so.1"] == "other-version"
    assert near[str(lab["rust"] / RUST_LLVM)] == "other-version"
    f = _findings(doc, "VKP002", OLD_RUST_LLVM)
    owner = _dpkg_owner("/lib/x86_64-linux-gnu/libLLVM-15.so.1")
    assert f"{owner} provides only libLLVM-15.so.1" in f["message"], f["message"]
    # its label is LLVM, not LLVM.so.17.0-rust-1.74.0-stable
    assert "against another LLVM." in f["message"]
    assert f["evidence"]["unowned_near_misses"] == [str(lab["rust"] / RUST_LLVM)]


@pytest.mark.parametrize(
    ("soname", "installed", "others"),
    [
        ("libz.so.9", "libz.so.1", ("libzstd", "libz3")),
        ("libvulkan.so.9", "libvulkan.so.1", ("libvulkan_lvp", "libvulkan_intel")),
    ],
)
def test_other_families_are_not_near_misses(
    lab: dict[str, Any], soname: str, installed: str, others: tuple[str, ...]
) -> None:
    doc = lab["doc"]
    near = _near(doc, soname)
    assert near == {f"/lib/x86_64-linux-gnu/{installed}": "other-version"}, near
    # they are there, in directories the search saw
    for stem in others:
        assert any(
            n.startswith(stem) for d in (lab["rust"], Path(SYSLIB)) for n in os.listdir(d)
        ), stem
    f = _findings(doc, "VKP002", soname)
    owner = _dpkg_owner(f"/lib/x86_64-linux-gnu/{installed}")
    assert f"{owner} provides only {installed}" in f["message"], f["message"]
    for stem in others:
        assert stem not in f["message"] + (f["remedy"] or "")


def test_the_right_soname_under_another_file_name_is_renamed_not_unsearched(
    tmp_path: Path,
) -> None:
    """libfoo.so.2.bak (soname libfoo.so.2) on LD_LIBRARY_PATH: the directory is searched; the
    name is what is wrong, and the link the remedy proposes makes the real dlopen work."""
    lib = tmp_path / "lib"
    build_lib(lib / "libfoo.so.2.bak", soname="libfoo.so.2")
    stub = build_lib(tmp_path / "stub" / "libfoo.so.2", soname="libfoo.so.2")
    drv = build_lib(tmp_path / "drv" / "libvulkan_foo.so", soname="libvulkan_foo.so", link=[stub])
    manifest = _manifest(tmp_path / "foo.json", drv)
    env = {"VK_DRIVER_FILES": str(manifest), "LD_LIBRARY_PATH": str(lib)}
    _, doc = run_json(["check", "--no-probe", "--format", "json"], env=env)
    (f,) = [f for f in doc["findings"] if f["code"] == "VKL002"]
    near = {n["path"]: n["kind"] for n in f["evidence"]["near_misses"]}
    assert near == {str(lib / "libfoo.so.2.bak"): "renamed"}
    assert "in a directory ld.so does not search" not in f["message"] + f["remedy"]
    assert "the right soname under another file name" in f["message"]
    link = f"ln -s libfoo.so.2.bak {lib}/libfoo.so.2"
    assert link in f["remedy"], f["remedy"]
    probe = DlopenProbe.build(tmp_path / "probe")
    assert "libfoo.so.2: cannot open shared object file" in (
        probe.load(str(drv), env=env).error or ""
    )
    subprocess.run(link, shell=True, check=True, timeout=30)
    assert probe.load(str(drv), env=env).error is None


def test_the_printed_find_lists_the_copies_at_the_major_version_and_not_vkdoctors_overlays(
    tmp_path: Path,
) -> None:
    import re
    import shlex
    import subprocess

    from vkdoctor.model.sonames import find_remedy

    for name in ("opt/llvm/libLLVM.so.23.1", "build/lib/libLLVM-23.so", "usr/lib/libLLVM-15.so.1"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    overlay = tmp_path / "home/.cache/vkdoctor/overlays/0123"
    overlay.mkdir(parents=True)
    (overlay / "libLLVM.so.23.1").symlink_to(tmp_path / "opt/llvm/libLLVM.so.23.1")
    fix = find_remedy("libLLVM.so.23.1")
    m = re.match(r"`(find / .*?) 2>/dev/null`", fix)
    assert m, fix
    argv = shlex.split(m.group(1))
    argv[1] = str(tmp_path)  # the same search, over this tree instead of /
    found = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    assert sorted(found) == sorted(
        [str(tmp_path / "opt/llvm/libLLVM.so.23.1"), str(tmp_path / "build/lib/libLLVM-23.so")]
    )


def test_a_name_that_differs_only_after_the_hyphen_is_another_build(tmp_path: Path) -> None:
    """A driver needs libLLVM-mybuild.so.1 (a private build, renamed): this machine's packaged
    libLLVM-15.so.1 is offered as another build, saying how the name differs; names that differ
    before the hyphen (libLLVMX-mybuild, libLLVMSPIRVLib) and two names each with their own
    part after the hyphen (libxcb-dri3 for libxcb-shm) stay apart."""
    wanted = ("libLLVM-mybuild.so.1", "libxcb-dri3.so.9")
    stubs = [build_lib(tmp_path / "stub" / n, soname=n) for n in wanted]
    lib = tmp_path / "lib"
    for name in ("libLLVMX-mybuild.so.1", "libLLVMSPIRVLib.so.15", "libxcb-shm.so.0"):
        build_lib(lib / name, soname=name)
    drv = build_lib(tmp_path / "drv" / "libvulkan_my.so", soname="libvulkan_my.so", link=stubs)
    env = {
        "VK_DRIVER_FILES": str(_manifest(tmp_path / "my.json", drv)),
        "LD_LIBRARY_PATH": str(lib),
    }
    probe = DlopenProbe.build(tmp_path / "probe")
    error = probe.load(str(drv), env=env).error or ""
    assert "libLLVM-mybuild.so.1: cannot open shared object file" in error, error
    proc, doc = run_json(["check", "--no-probe", "--format", "json"], env=env)
    assert proc.returncode == 1, proc.stderr
    near = _near(doc, "libLLVM-mybuild.so.1")
    system = "/lib/x86_64-linux-gnu/libLLVM-15.so.1"
    assert near.get(system) == "other-build", near
    assert set(near.values()) == {"other-build"}, near
    assert all(os.path.basename(p).startswith("libLLVM-") for p in near), near
    (f,) = [
        f for f in doc["findings"] if f["code"] == "VKL002" and "libLLVM-mybuild.so.1" in f["title"]
    ]
    assert (
        f"{system}: another build, named '15' after libLLVM- where 'mybuild' is wanted"
        in (f["message"])
    ), f["message"]
    # no package carries a build's own name: no search for one, the driver's rebuild or copy
    assert "Only other builds of this library are installed" in f["message"]
    assert "apt-file" not in f["remedy"], f["remedy"]
    assert f["remedy"].startswith(f"Rebuild {drv} against the installed library"), f["remedy"]
    assert "vkdoctor exec --search-path DIR -- CMD" in f["remedy"]
    (entry,) = [n for n in f["evidence"]["near_misses"] if n["path"] == system]
    assert entry["differs"] == "named '15' after libLLVM- where 'mybuild' is wanted"
    # libxcb-shm is there, in a directory searched, and is no build of libxcb-dri3
    assert not any("libxcb-shm" in p for p in _near(doc, "libxcb-dri3.so.9"))
