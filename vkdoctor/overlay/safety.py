"""What an overlay must never do: shadow the libraries the whole process shares, or bring a second
version of a library family (two LLVMs) into one process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from vkdoctor.model import sonames
from vkdoctor.model.record import record

#: soname patterns an overlay never supplies, with the reason given to the user
PROTECTED: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), reason)
    for pattern, reason in (
        (r"^libc\.so\.", "the C library"),
        (r"^ld-linux[-.\w]*\.so\.|^ld64\.so\.|^ld\.so\.", "the dynamic linker"),
        (r"^libm\.so\.", "the C math library"),
        (r"^libpthread\.so\.", "the threads library (part of glibc)"),
        (r"^libdl\.so\.", "the dlopen library (part of glibc)"),
        (r"^librt\.so\.", "the realtime library (part of glibc)"),
        (r"^libstdc\+\+\.so\.", "the C++ runtime every C++ library in the process shares"),
        (r"^libgcc_s\.so\.", "the GCC runtime every library in the process shares"),
        (r"^libvulkan\.so\.", "the Vulkan loader"),
        (r"^libdrm[\w-]*\.so", "libdrm, which the kernel graphics drivers and Mesa share"),
    )
)

_VERSIONISH = re.compile(r"[-_.]?\d[\d.]*$")


def protected_reason(soname: str) -> str | None:
    """Why `soname` must never come from an overlay, or None."""
    for pattern, reason in PROTECTED:
        if pattern.search(soname):
            return reason
    return None


def family(soname: str) -> str:
    """The library family: the name without 'lib', '.so' and version numbers, lower case.

    libLLVM-15.so.1, libLLVM.so.23.1, libLLVM-22.so and libLLVM-17git.so all give "llvm".
    """
    stem = sonames.family(soname) or soname.split(".so", 1)[0]
    if stem.startswith("lib"):
        stem = stem[3:]
    stem = _VERSIONISH.sub("", stem)
    return stem.lower()


@record(frozen=True, kw_only=True)
class Clash:
    """An added soname of a family the process already loads under another soname."""

    added: str
    existing: str
    existing_path: str
    loaded_by: str


def family_clashes(added: Iterable[str], loaded: Mapping[str, tuple[str, str]]) -> list[Clash]:
    """Clashes between `added` sonames and the `loaded` ones (soname -> (path, loaded_by))."""
    out: list[Clash] = []
    for soname in added:
        fam = family(soname)
        for other, (path, by) in sorted(loaded.items()):
            if other != soname and family(other) == fam:
                out.append(Clash(added=soname, existing=other, existing_path=path, loaded_by=by))
    return out
