"""ELF reading and glibc ld.so emulation: which file each library name resolves to, and why.

Public API (pure: a Context in, data out; every file read through ctx.under, once per run):
- `resolve(ctx, dlopen_name, inputs=..., caller="loader"|"executable")`: what ld.so does when
  a name is dlopened (vkdoctor.closures.targets applies it to the Vulkan loader's targets).
- `resolve_soname(ctx, soname, requester=...)`: one search, with every place tried.
- `SearchInputs.from_context(ctx, prepend=[dir])`: the environment ld.so reads; pass a modified
  one (an extra LD_LIBRARY_PATH entry) to ask "what if", as the overlay does.
- `read_elf(ctx, path)`: ElfInfo (SONAME, NEEDED, RPATH, RUNPATH, flags, versions) or ElfError.
- `ldso_platform(ctx)`: system directories, hwcaps subdirectories, $LIB, $PLATFORM of the root.
"""

from __future__ import annotations

from vkdoctor.elf.nearmiss import NearMiss
from vkdoctor.elf.platform import LdsoPlatform, ldso_platform
from vkdoctor.elf.reader import ElfError, ElfInfo, VersionNeed, read_elf
from vkdoctor.elf.resolve import (
    Library,
    Miss,
    Resolution,
    VersionProblem,
    loader_lookup,
    resolve,
    resolve_soname,
)
from vkdoctor.elf.search import How, Lookup, SearchInputs, Tried
from vkdoctor.model.sonames import family

__all__ = [
    "ElfError",
    "ElfInfo",
    "How",
    "LdsoPlatform",
    "Library",
    "Lookup",
    "Miss",
    "NearMiss",
    "Resolution",
    "SearchInputs",
    "Tried",
    "VersionNeed",
    "VersionProblem",
    "family",
    "ldso_platform",
    "loader_lookup",
    "read_elf",
    "resolve",
    "resolve_soname",
]
