"""Builders for the package tests: real ELF files (gcc), real .deb/.pkg.tar.zst/.rpm packages,
installed with the real dpkg, pacman and rpm into private roots and databases."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

ENV = {"LC_ALL": "C", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


def sh(
    *argv: str | Path, cwd: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, argv))} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def symbol_of(soname: str) -> str:
    stem = Path(soname).name.split(".so", 1)[0]
    stem = re.sub(r"-[0-9][0-9.]*$", "", stem)
    return "f_" + re.sub(r"\W", "_", stem)


def build_lib(
    dest: Path,
    soname: str,
    *,
    needs: Sequence[Path] = (),
    version_node: str | None = None,
    extra_nodes: Sequence[str] = (),
    m32: bool = False,
) -> Path:
    """A real shared library with DT_SONAME `soname` that calls into each of `needs` (so it has
    DT_NEEDED on their sonames and, when they version their symbols, .gnu.version_r entries)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = dest.parent / f".build-{dest.name}"
    work.mkdir(exist_ok=True)
    calls = []
    decls = []
    for lib in needs:
        dep = _soname(lib)
        decls.append(f"int {symbol_of(dep)}(void);")
        calls.append(f"{symbol_of(dep)}()")
    body = " + ".join(calls) if calls else "0"
    src = work / "lib.c"
    src.write_text("\n".join(decls) + f"\nint {symbol_of(soname)}(void) {{ return {body}; }}\n")
    argv: list[str | Path] = ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", dest, src]
    if m32:
        argv.insert(1, "-m32")
    if version_node or extra_nodes:
        script = work / "v.map"
        nodes = [*extra_nodes, *([version_node] if version_node else [])]
        text = "".join(f"{n} {{ }};\n" for n in nodes[:-1]) + f"{nodes[-1]} {{ global: *; }};\n"
        script.write_text(text)
        argv.append(f"-Wl,--version-script={script}")
    for lib in needs:
        argv += [f"-L{lib.parent}", f"-l:{lib.name}"]
    sh(*argv)
    shutil.rmtree(work)
    return dest


def _soname(lib: Path) -> str:
    out = sh("readelf", "-d", lib).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    assert m, out
    return m.group(1)


def stub(scratch: Path, soname: str, version_node: str | None = None) -> Path:
    """A library to link against that will not be in the tree (the soname the tree lacks)."""
    return build_lib(scratch / soname, soname, version_node=version_node)


def lay_out(tree: Path, files: Mapping[str, Path | str]) -> None:
    """Copy files into `tree`: value Path = file to copy, str = symlink target."""
    for dest, src in files.items():
        target = tree / dest.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(src, str):
            target.symlink_to(src)
        else:
            shutil.copy2(src, target)


def icd_manifest(library_path: str) -> str:
    doc = {
        "file_format_version": "1.0.1",
        "ICD": {"library_path": library_path, "api_version": "1.4.0"},
    }
    return json.dumps(doc) + "\n"


# dpkg --------------------------------------------------------------------------------------


def build_deb(
    work: Path,
    name: str,
    version: str,
    files: Mapping[str, Path | str],
    *,
    arch: str = "amd64",
    source: str | None = None,
    depends: str | None = None,
    multi_arch: str | None = "same",
    conffiles: Sequence[str] = (),
) -> Path:
    pkgdir = work / f"{name}_{arch}_{version.replace(':', '_')}"
    (pkgdir / "DEBIAN").mkdir(parents=True)
    lay_out(pkgdir, files)
    fields = {
        "Package": name,
        "Source": source,
        "Version": version,
        "Architecture": arch,
        "Maintainer": "vkdoctor tests <tests@example.org>",
        "Multi-Arch": multi_arch,
        "Depends": depends,
        "Description": f"{name} built by the vkdoctor tests",
    }
    (pkgdir / "DEBIAN" / "control").write_text(
        "".join(f"{k}: {v}\n" for k, v in fields.items() if v)
    )
    # as dh_md5sums writes it: every regular file, relative to the root
    sums = [
        f"{hashlib.md5(p.read_bytes()).hexdigest()}  {p.relative_to(pkgdir)}\n"
        for p in sorted(pkgdir.rglob("*"))
        if p.is_file() and not p.is_symlink() and "DEBIAN" not in p.relative_to(pkgdir).parts
    ]
    (pkgdir / "DEBIAN" / "md5sums").write_text("".join(sums))
    if conffiles:
        (pkgdir / "DEBIAN" / "conffiles").write_text("".join(f"{c}\n" for c in conffiles))
    out = work / f"{pkgdir.name}.deb"
    sh("dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", pkgdir, out)
    return out


def dpkg_root(root: Path, *, usrmerge: bool = True, foreign_arches: Sequence[str] = ()) -> Path:
    admin = root / "var/lib/dpkg"
    for d in ("info", "updates", "triggers"):
        (admin / d).mkdir(parents=True, exist_ok=True)
    (admin / "status").touch()
    if usrmerge:
        (root / "usr/lib").mkdir(parents=True, exist_ok=True)
        (root / "lib").symlink_to("usr/lib")
    for arch in foreign_arches:
        sh("dpkg", f"--root={root}", f"--admindir={admin}", "--add-architecture", arch)
    with_sudo(root)
    return root


def with_sudo(root: Path) -> None:
    """A desktop system's tree has sudo, so its fixes keep it (tests/debroot.py's minbase root
    has none, and its fixes are given without)."""
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    (root / "usr/bin/sudo").write_bytes(b"")


def dpkg_install(
    root: Path, *debs: Path, force_depends: bool = True
) -> subprocess.CompletedProcess[str]:
    argv: list[str | Path] = [
        "dpkg",
        f"--root={root}",
        f"--admindir={root / 'var/lib/dpkg'}",
        "--force-script-chrootless",
        "--force-not-root",
    ]
    if force_depends:
        argv.append("--force-depends")
    return sh(*argv, "-i", *debs)


# pacman ------------------------------------------------------------------------------------


def build_pkg(
    work: Path,
    name: str,
    version: str,
    files: Mapping[str, Path | str],
    *,
    base: str | None = None,
    arch: str = "x86_64",
    depends: Sequence[str] = (),
    provides: Sequence[str] = (),
    packager: str = "vkdoctor tests <tests@example.org>",
) -> Path:
    """A pacman package without makepkg: .PKGINFO plus the files, in a tar.zst."""
    pkgdir = work / f"{name}-{version.replace(':', '_')}"
    pkgdir.mkdir(parents=True)
    lay_out(pkgdir, files)
    lines = [
        f"pkgname = {name}",
        f"pkgbase = {base or name}",
        f"pkgver = {version}",
        f"pkgdesc = {name} built by the vkdoctor tests",
        "builddate = 1790000000",
        f"packager = {packager}",
        "size = 4096",
        f"arch = {arch}",
        "license = MIT",
        *(f"depend = {d}" for d in depends),
        *(f"provides = {p}" for p in provides),
    ]
    (pkgdir / ".PKGINFO").write_text("\n".join(lines) + "\n")
    out = work / f"{name}-{version}-{arch}.pkg.tar.zst"
    members = [".PKGINFO", *sorted({p.lstrip("/").split("/")[0] for p in files})]
    # the file list with digests that pacman keeps as local/NAME-VER/mtree, made the way
    # makepkg makes it
    sh(
        "bsdtar",
        "-czf",
        ".MTREE",
        "--format=mtree",
        "--options=!all,use-set,type,uid,gid,mode,time,size,md5,sha256,link",
        *members,
        cwd=pkgdir,
    )
    members.insert(1, ".MTREE")
    sh("bsdtar", "--zstd", "-cf", out, *members, cwd=pkgdir)
    return out


def pacman_root(root: Path) -> Path:
    (root / "var/lib/pacman").mkdir(parents=True, exist_ok=True)
    with_sudo(root)
    return root


def pacman_install(root: Path, *pkgs: Path) -> subprocess.CompletedProcess[str]:
    conf = root.parent / f"{root.name}-pacman.conf"
    conf.write_text("[options]\nArchitecture = auto\nSigLevel = Never\nLocalFileSigLevel = Never\n")
    return sh(
        "pacman",
        "--root",
        root,
        "--dbpath",
        root / "var/lib/pacman",
        "--config",
        conf,
        "--logfile",
        root.parent / f"{root.name}-pacman.log",
        "--cachedir",
        root.parent / f"{root.name}-cache",
        "--hookdir",
        root.parent / f"{root.name}-hooks",
        "--noconfirm",
        "--nodeps",
        "--nodeps",
        "-U",
        *pkgs,
    )


# rpm ---------------------------------------------------------------------------------------


def build_rpms(
    work: Path,
    source: str,
    version: str,
    release: str,
    subpackages: Mapping[str, Mapping[str, Path | str]],
    *,
    arch: str = "x86_64",
    vendor: str | None = None,
    provides: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Path]:
    """rpmbuild one source with binary subpackages (`-n NAME`); requires/provides are generated
    from the ELF files by rpm itself (libLLVM.so.23.1()(64bit) and the version nodes)."""
    top = work / f"rpmbuild-{source}-{version}"
    payload = top / "payload"
    payload.mkdir(parents=True, exist_ok=True)
    stanzas = []
    installs = []
    header_provides: list[str] = []
    for name, files in subpackages.items():
        lay_out(payload, files)
        listed = "\n".join(files)
        extra = "".join(f"Provides: {p}\n" for p in (provides or {}).get(name, ()))
        if name == source:  # the main package
            header_provides.append(extra)
            stanzas.append(f"%files\n{listed}\n")
            continue
        stanzas.append(
            f"%package -n {name}\nSummary: {name}\n{extra}%description -n {name}\n{name}\n"
            f"%files -n {name}\n{listed}\n"
        )
    installs.append(f"cp -a {payload}/. %{{buildroot}}/")
    spec = top / f"{source}.spec"
    top.mkdir(parents=True, exist_ok=True)
    spec.write_text(
        textwrap.dedent(
            f"""\
            Name: {source}
            Version: {version}
            Release: {release}
            Summary: {source} built by the vkdoctor tests
            License: MIT
            {f"Vendor: {vendor}" if vendor else ""}
            {"".join(header_provides).strip()}
            %description
            test source package
            %install
            {installs[0]}
            """
        )
        + "\n".join(stanzas)
    )
    sh(
        "rpmbuild",
        "--define",
        f"_topdir {top}",
        "--define",
        "debug_package %{nil}",
        "--define",
        "_build_id_links none",
        "--define",
        "__strip /bin/true",
        "--define",
        "_binary_payload w.ufdio",
        "--define",
        f"_dbpath {top}/nodb",
        "--target",
        arch,
        "-bb",
        spec,
    )
    rpms = {}
    for name in subpackages:
        (found,) = (top / "RPMS").glob(f"*/{name}-{version}-{release}.*.rpm")
        rpms[name] = found
    return rpms


def rpm_install(root: Path, *rpms: Path, nodeps: bool = True) -> subprocess.CompletedProcess[str]:
    base = ["rpm", "--root", str(root), "--dbpath", "/var/lib/rpm"]
    if not (root / "var/lib/rpm").exists():
        sh(*base, "--initdb")
        with_sudo(root)
    return sh(*base, "-i", *(["--nodeps"] if nodeps else []), *rpms)


def tool_versions() -> dict[str, str]:
    return {
        t: shutil.which(t) or "" for t in ("dpkg", "pacman", "rpm", "rpmbuild", "bsdtar", "gcc")
    }


__all__ = [
    "build_deb",
    "build_lib",
    "build_pkg",
    "build_rpms",
    "dpkg_install",
    "dpkg_root",
    "icd_manifest",
    "lay_out",
    "pacman_install",
    "pacman_root",
    "rpm_install",
    "stub",
]
