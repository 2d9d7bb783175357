"""Builders for the overlay tests: real shared objects (gcc), real packages (dpkg-deb, bsdtar,
rpmbuild), and the seed's lavapipe scenario on the real system lavapipe and LLVM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SYSTEM_LIB = Path("/usr/lib/x86_64-linux-gnu")
LVP = SYSTEM_LIB / "libvulkan_lvp.so"
SYSTEM_LLVM = SYSTEM_LIB / "libLLVM-15.so.1"
#: the soname the seed's lavapipe wanted and the system lacks
NEW_LLVM = "libLLVM.so.23.1"


def run(argv: list[str], cwd: Path | None = None, timeout: float = 120) -> str:
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def shared_lib(
    out: Path,
    soname: str,
    *,
    version_node: str | None = None,
    needs: list[Path] | None = None,
    use_symbol: str | None = None,
    bits: int = 64,
) -> Path:
    """A real .so named `out` with DT_SONAME `soname`; optionally defining symbols in a version node
    and linked against `needs` (whose versioned symbol `use_symbol` it calls)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    name = (
        soname.split(".so", maxsplit=1)[0].removeprefix("lib").replace("-", "_").replace("+", "p")
    )
    body = f"int {name}_fn(void) {{ return 42; }}\n"
    if use_symbol:
        body += (
            f"extern int {use_symbol}(void);\nint {name}_use(void) {{ return {use_symbol}(); }}\n"
        )
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "lib.c"
        src.write_text(body)
        argv = [
            "gcc",
            f"-m{bits}",
            "-shared",
            "-fPIC",
            f"-Wl,-soname,{soname}",
            "-o",
            str(out),
            str(src),
        ]
        if version_node:
            script = Path(tmp) / "lib.map"
            script.write_text(f"{version_node} {{ global: *; }};\n")
            argv.append(f"-Wl,--version-script,{script}")
        argv += [str(lib) for lib in needs or []]
        run(argv)
    return out


def deb(root: Path, out: Path, name: str = "libfoo1", compression: str = "zstd") -> Path:
    """A .deb of the tree under `root` (dpkg-deb --build)."""
    control = root / "DEBIAN"
    control.mkdir(parents=True, exist_ok=True)
    (control / "control").write_text(
        f"Package: {name}\nVersion: 1.0-1\nArchitecture: amd64\nMaintainer: t <t@example.org>\n"
        "Description: test\n"
    )
    run(
        [
            "dpkg-deb",
            f"-Z{compression}",
            "-z1",
            "--root-owner-group",
            "--build",
            str(root),
            str(out),
        ]
    )
    shutil.rmtree(control)
    return out


def pkg_tar_zst(root: Path, out: Path) -> Path:
    """An Arch-style .pkg.tar.zst of the tree under `root` (bsdtar --zstd)."""
    (root / ".PKGINFO").write_text("pkgname = llvm-libs\npkgver = 23.1.0-1\narch = x86_64\n")
    run(
        [
            "bsdtar",
            "--zstd",
            "--options",
            "zstd:compression-level=1",
            "-cf",
            str(out),
            "-C",
            str(root),
            ".PKGINFO",
            "usr",
        ]
    )
    (root / ".PKGINFO").unlink()
    return out


def rpm(root: Path, topdir: Path, name: str = "libfoo") -> Path:
    """An .rpm of the files under `root` (rpmbuild -bb, no post-processing)."""
    files = sorted("/" + str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())
    spec = topdir / f"{name}.spec"
    topdir.mkdir(parents=True, exist_ok=True)
    spec.write_text(
        f"Name: {name}\nVersion: 1.0\nRelease: 1\nSummary: t\nLicense: MIT\n%description\nt\n"
        f"%install\nmkdir -p %{{buildroot}}\ncp -a {root}/. %{{buildroot}}/\n"
        "%files\n" + "\n".join(files) + "\n"
    )
    run(
        [
            "rpmbuild",
            "--define",
            f"_topdir {topdir}",
            "--define",
            "__os_install_post %{nil}",
            "--define",
            "debug_package %{nil}",
            "--define",
            "_build_id_links none",
            "-bb",
            str(spec),
        ]
    )
    return next((topdir / "RPMS").rglob("*.rpm"))


def manifest(path: Path, library: Path) -> Path:
    path.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(library), "api_version": "1.3.0"},
            }
        )
    )
    return path
