"""Libraries out of real package files built here (dpkg-deb, bsdtar, rpmbuild), and bad packages."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests import overlay_lab as lab
from vkdoctor.overlay.archive import extract_libraries
from vkdoctor.overlay.errors import ArchiveError

PATH = os.environ["PATH"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """usr/lib/x86_64-linux-gnu/libfoo.so.1 -> libfoo.so.1.2.3 (real), plus an unrelated libbar."""
    root = tmp_path_factory.mktemp("pkgroot")
    libdir = root / "usr/lib/x86_64-linux-gnu"
    lab.shared_lib(libdir / "libfoo.so.1.2.3", "libfoo.so.1")
    lab.shared_lib(libdir / "libbar.so.7", "libbar.so.7")
    (libdir / "libfoo.so.1").symlink_to("libfoo.so.1.2.3")
    (root / "usr/share/doc").mkdir(parents=True)
    (root / "usr/share/doc/README").write_text("not a library\n")
    return root


@pytest.fixture(scope="module")
def packages(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pkgs")
    return {
        "deb-zst": lab.deb(tree, out / "libfoo1_1.0-1_amd64.deb"),
        "deb-xz": lab.deb(tree, out / "libfoo1-xz_1.0-1_amd64.deb", compression="xz"),
        "pkg": lab.pkg_tar_zst(tree, out / "libfoo-1.0-1-x86_64.pkg.tar.zst"),
        "rpm": lab.rpm(tree, out / "rpmbuild"),
    }


@pytest.mark.parametrize("kind", ["deb-zst", "deb-xz", "pkg", "rpm"])
def test_only_the_needed_library_is_extracted(
    kind: str, packages: dict[str, Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    got = extract_libraries(packages[kind], ["libfoo.so.1", "libnope.so.3"], cache, env_path=PATH)
    assert got.directory.parent == cache / "extracted"
    assert stat.S_IMODE(got.directory.stat().st_mode) == 0o700
    assert sorted(got.found) == ["libfoo.so.1"]
    assert got.absent == ("libnope.so.3",)
    # The soname is a link to the real file it names in the package; nothing else came out.
    names = sorted(p.name for p in got.directory.iterdir())
    assert names == [".complete", "libfoo.so.1", "libfoo.so.1.2.3"]
    assert os.readlink(got.directory / "libfoo.so.1") == "libfoo.so.1.2.3"
    assert (got.directory / "libfoo.so.1").read_bytes()[:4] == b"\x7fELF"
    # Same package, same sonames: the same directory, reused.
    again = extract_libraries(packages[kind], ["libnope.so.3", "libfoo.so.1"], cache, env_path=PATH)
    assert again.directory == got.directory and sorted(again.found) == ["libfoo.so.1"]
    assert not [p for p in (cache / "extracted").iterdir() if p.name.startswith(".tmp")]


def test_corrupt_and_mislabelled_packages(packages: dict[str, Path], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cases: dict[str, tuple[bytes, str]] = {}
    for kind, name in (
        ("deb-zst", "t_1_amd64.deb"),
        ("pkg", "t-1-1-x86_64.pkg.tar.zst"),
        ("rpm", "t.rpm"),
    ):
        data = packages[kind].read_bytes()
        cases[name] = (data[: len(data) // 2], "is corrupt or truncated")
    cases["liar.deb"] = (packages["pkg"].read_bytes(), "the name says deb, the content is zstd")
    cases["liar-1-1-x86_64.pkg.tar.zst"] = (
        packages["rpm"].read_bytes(),
        "the name says zstd, the content is rpm",
    )
    cases["junk.rpm"] = (b"hello world\n", "is not a package vkdoctor can read")
    cases["empty.deb"] = (b"", "is not a package vkdoctor can read")
    for name, (data, expected) in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        with pytest.raises(ArchiveError) as err:
            extract_libraries(f, ["libfoo.so.1"], cache, env_path=PATH)
        assert expected in err.value.message, (name, err.value.message)
        assert str(f) in err.value.message
    with pytest.raises(ArchiveError, match="no such file or directory"):
        extract_libraries(tmp_path / "missing.deb", ["libfoo.so.1"], cache, env_path=PATH)
    # Nothing half-written was left behind by any of the failures.
    extracted = cache / "extracted"
    assert not extracted.exists() or list(extracted.iterdir()) == []


def test_package_caches_offer_only_the_soname_family(tmp_path: Path) -> None:
    from vkdoctor.model.context import Context
    from vkdoctor.overlay import pkgcache

    pacman = tmp_path / "var/cache/pacman/pkg"
    apt = tmp_path / "var/cache/apt/archives"
    pacman.mkdir(parents=True)
    apt.mkdir(parents=True)
    names = {
        pacman: [
            "llvm-libs-22.1.8-1-x86_64.pkg.tar.zst",
            "llvm-libs-23.1.0-1-x86_64.pkg.tar.zst",
            "llvm-libs-23.1.0-1-x86_64.pkg.tar.zst.sig",
            "lib32-llvm-libs-23.1.0-1-x86_64.pkg.tar.zst",
            "mesa-1:26.2.3-1-x86_64.pkg.tar.zst",
            "llvm-libs-23.1.0-1-aarch64.pkg.tar.zst",
        ],
        apt: [
            "libllvm23_1%3a23.1.0-1_amd64.deb",
            "libllvm23_1%3a23.1.0-1_i386.deb",
            "llvm-15-linker-tools_1%3a15.0.6-4+b1_amd64.deb",
            "libz3-4_4.8.12-3.1_amd64.deb",
        ],
    }
    for i, (d, files) in enumerate(names.items()):
        for j, name in enumerate(files):
            f = d / name
            f.write_bytes(b"")
            os.utime(f, (1000 + 10 * i + j, 1000 + 10 * i + j))
    ctx = Context(root=tmp_path, env={})
    found = pkgcache.find(ctx, "libLLVM.so.23.1", "x86_64")
    assert [(p.name, p.version, p.arch) for p in found] == [
        ("libllvm23", "1:23.1.0-1", "amd64"),
        ("llvm-libs", "23.1.0-1", "x86_64"),
    ]
    assert found[0].path == "/var/cache/apt/archives/libllvm23_1%3a23.1.0-1_amd64.deb"


def test_a_soname_linked_out_of_the_package_is_named(tmp_path: Path) -> None:
    """A -dev style link to an absolute path outside the package is not a library of the package."""
    root = tmp_path / "root"
    libdir = root / "usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    (libdir / "libfoo.so.1").symlink_to("/opt/elsewhere/libfoo.so.1.2.3")
    package = lab.deb(root, tmp_path / "libfoo-link_1.0-1_amd64.deb", name="libfoo-link")
    cache = tmp_path / "cache"
    got = extract_libraries(package, ["libfoo.so.1"], cache, env_path=PATH)
    assert got.found == {}
    assert got.absent == ("libfoo.so.1",)
    assert got.linked_out == {"libfoo.so.1": "/opt/elsewhere/libfoo.so.1.2.3"}
    # The second call reuses the extraction and still knows why.
    again = extract_libraries(package, ["libfoo.so.1"], cache, env_path=PATH)
    assert again.linked_out == got.linked_out


def test_the_decompressors_are_found_on_the_path_given(
    packages: dict[str, Path], tmp_path: Path
) -> None:
    """The PATH comes from the caller (the context), not from vkdoctor's own environment."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    with pytest.raises(ArchiveError) as err:
        extract_libraries(packages["pkg"], ["libfoo.so.1"], tmp_path / "c1", env_path=str(empty))
    assert "`zstd` is not installed" in err.value.message
    assert err.value.hint == "install zstd and libarchive-tools (bsdtar)"
    got = extract_libraries(packages["pkg"], ["libfoo.so.1"], tmp_path / "c2", env_path=PATH)
    assert sorted(got.found) == ["libfoo.so.1"]


def _deb_around(tree: Path, out: Path, *, sparse: bool) -> Path:
    """A .deb whose data.tar is `tree` as tar writes it (--sparse: a hole costs nothing, so a
    few hundred bytes of package unpack to gigabytes), its control.tar as dpkg-deb's."""
    import subprocess

    work = out.with_suffix(".d")
    (work / "ctl").mkdir(parents=True)
    (work / "ctl" / "control").write_text(
        "Package: libfoo1\nVersion: 1.0-1\nArchitecture: amd64\nMaintainer: t <t@example.org>\n"
        "Description: test\n"
    )
    (work / "debian-binary").write_text("2.0\n")
    for name, src in (("control.tar.zst", work / "ctl"), ("data.tar.zst", tree)):
        flags = ["--sparse"] if sparse else []
        tar = subprocess.run(
            ["tar", *flags, "--numeric-owner", "-C", str(src), "-cf", "-", "."],
            capture_output=True,
            check=True,
        )
        zst = subprocess.run(
            ["zstd", "-q", "-1"], input=tar.stdout, capture_output=True, check=True
        )
        (work / name).write_bytes(zst.stdout)
    subprocess.run(
        ["ar", "rc", str(out), "debian-binary", "control.tar.zst", "data.tar.zst"],
        cwd=work,
        check=True,
    )
    return out


def _stored(cache: Path) -> int:
    return sum(p.stat().st_size for p in cache.rglob("*") if p.is_file() and not p.is_symlink())


def test_a_package_that_unpacks_to_gigabytes_writes_nothing(tmp_path: Path) -> None:
    """A bomb: a 3 GiB member named like the soname, in a package of a few hundred bytes. It was
    written whole into the store (and kept there) before the ELF check refused it."""
    libdir = tmp_path / "root/usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    os.truncate(os.open(libdir / "libfoo.so.1", os.O_CREAT | os.O_WRONLY, 0o644), 3 << 30)
    package = _deb_around(tmp_path / "root", tmp_path / "bomb.deb", sparse=True)
    assert package.stat().st_size < 4096
    cache = tmp_path / "cache"
    with pytest.raises(ArchiveError, match=r"3,221,225,472 bytes, more than any library"):
        extract_libraries(package, ["libfoo.so.1"], cache, env_path=PATH)
    assert _stored(cache) < 1 << 20


def test_a_member_that_is_no_elf_file_keeps_only_its_first_bytes(tmp_path: Path) -> None:
    libdir = tmp_path / "root/usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    (libdir / "libfoo.so.1").write_bytes(b"\0" * (64 << 20))
    package = _deb_around(tmp_path / "root", tmp_path / "zeros.deb", sparse=False)
    cache = tmp_path / "cache"
    got = extract_libraries(package, ["libfoo.so.1"], cache, env_path=PATH)
    assert (got.directory / "libfoo.so.1").stat().st_size <= 1 << 20
    assert _stored(cache) <= (1 << 20) + 4096  # and the store's markers


def test_a_library_the_disk_cannot_spare_is_not_written(tmp_path: Path) -> None:
    """The store on a 64 MiB filesystem: a 16 MiB library would leave less than 1 GiB free."""
    import subprocess

    from vkdoctor.overlay.errors import StoreError

    libdir = tmp_path / "root/usr/lib/x86_64-linux-gnu"
    lab.shared_lib(libdir / "libfoo.so.1", "libfoo.so.1")
    with open(libdir / "libfoo.so.1", "ab") as f:
        f.write(b"\0" * (16 << 20))
    package = lab.deb(tmp_path / "root", tmp_path / "big.deb")
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(small)], check=True)
    try:
        with pytest.raises(StoreError, match=r"MiB free: not extracted"):
            extract_libraries(package, ["libfoo.so.1"], small / "cache", env_path=PATH)
        assert _stored(small) < 1 << 20
    finally:
        subprocess.run(["umount", str(small)], check=True)
