"""Package files in the package managers' caches that may provide a missing soname.

A private LLVM for a partial upgrade often comes from /var/cache/pacman/pkg. Opening every cached package would take
minutes, so only files whose package name belongs to the soname's family are considered (libLLVM.so.23.1:
llvm-libs, llvm, libllvm23 ...), plus the families of the near misses' packages, and only versions
that can be the soname's build (its major number in the package's name or version), newest first,
at most MAX_PACKAGES of them. Which of them really holds the soname is decided by extracting it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from vkdoctor.model.context import Context
from vkdoctor.model.record import record
from vkdoctor.overlay.safety import family

CACHE_DIRS = ("/var/cache/pacman/pkg", "/var/cache/apt/archives")
MAX_PACKAGES = 6

_PACMAN = re.compile(
    r"^(?P<name>.+)-(?P<ver>[^-]+)-(?P<rel>[^-]+)-(?P<arch>[^-]+)\.pkg\.tar\.(zst|xz|gz)$"
)
_DEB = re.compile(r"^(?P<name>[^_]+)_(?P<ver>[^_]+)_(?P<arch>[^_]+)\.deb$")
_SOVERSION = re.compile(r"\.so\.(\d+)")


@record(frozen=True, kw_only=True)
class CachedPackage:
    path: str
    name: str
    version: str
    arch: str


def package_names(soname: str, near_miss_packages: Iterable[str] = ()) -> set[str]:
    """Name stems a package providing `soname` is likely to have."""
    fam = family(soname)
    names = {fam, f"lib{fam}", f"{fam}-libs"}
    major = _SOVERSION.search(soname)
    if major:
        names.add(f"lib{fam}{major.group(1)}")
    for pkg in near_miss_packages:
        stem = re.sub(r"[-.]?\d[\d.]*$", "", pkg.lower())
        names.update({pkg.lower(), stem})
    return {n for n in names if n}


def _matches(name: str, stems: set[str]) -> bool:
    name = name.lower()
    bare = re.sub(r"[-.]?\d[\d.]*(:\w+)?$", "", name)
    return name in stems or bare in stems


def _version_fits(pkg: CachedPackage, soname: str) -> bool:
    """The package can be the soname's build: its name or its version carries the soname's major.

    libLLVM.so.23.1 fits libllvm23 and llvm-libs 23.1.0, not llvm-libs 22.1.8.
    """
    major = _SOVERSION.search(soname)
    if not major:
        return True
    number = major.group(1)
    if re.search(rf"(?<![0-9]){number}(?![0-9])", pkg.name):
        return True
    version = pkg.version.split(":", 1)[-1]
    return version == number or version.startswith((f"{number}.", f"{number}-", f"{number}+"))


def find(
    ctx: Context, soname: str, machine: str, near_miss_packages: Iterable[str] = ()
) -> list[CachedPackage]:
    """Cached package files whose name belongs to `soname`'s family, for `machine`, newest first."""
    stems = package_names(soname, near_miss_packages)
    deb_arch = {"x86_64": "amd64", "aarch64": "arm64", "i686": "i386"}.get(machine, machine)
    found: list[tuple[float, CachedPackage]] = []
    for cache in CACHE_DIRS:
        host = ctx.under(cache)
        try:
            entries = list(host.iterdir())
        except OSError:
            continue
        for entry in entries:
            m = _PACMAN.match(entry.name)
            if m and m["arch"] in (machine, "any"):
                pkg = CachedPackage(
                    path=f"{cache}/{entry.name}",
                    name=m["name"],
                    version=f"{m['ver']}-{m['rel']}",
                    arch=m["arch"],
                )
            else:
                m = _DEB.match(entry.name)
                if not m or m["arch"] not in (deb_arch, "all"):
                    continue
                pkg = CachedPackage(
                    path=f"{cache}/{entry.name}",
                    name=m["name"],
                    version=m["ver"].replace("%3a", ":"),
                    arch=m["arch"],
                )
            if not _matches(pkg.name, stems) or not _version_fits(pkg, soname):
                continue
            try:
                mtime = Path(entry).stat().st_mtime
            except OSError:
                continue
            found.append((mtime, pkg))
    found.sort(key=lambda item: (-item[0], item[1].path))
    return [pkg for _, pkg in found[:MAX_PACKAGES]]
