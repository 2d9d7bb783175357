"""The ELF facts the package rules explain, as small values (the `elf` resolution produces them)."""

from __future__ import annotations

from vkdoctor.model.record import record


@record(frozen=True, kw_only=True)
class MissingSoname:
    """`consumer` has DT_NEEDED `soname`, which resolves nowhere; `near_misses` are similar files."""

    #: the object whose DT_NEEDED fails, as an absolute path inside the tree
    consumer: str
    soname: str
    #: files whose name is close to `soname` (libLLVM.so.22.1 for libLLVM.so.23.1)
    near_misses: tuple[str, ...] = ()
    #: the library the loader dlopens whose closure this is in (the driver), when known
    target: str | None = None
    #: the consumer's ELF class (32 or 64), which picks lib32 vs native soname capabilities
    elf_class: int | None = None


@record(frozen=True, kw_only=True)
class MissingVersion:
    """`consumer` needs version node `version` of `soname`; the copy that wins (`provider`) lacks it."""

    consumer: str
    soname: str
    version: str
    #: the copy of `soname` that the search finds first
    provider: str
    #: the version nodes that copy defines
    provider_versions: tuple[str, ...] = ()
    #: other copies of `soname` in the search path or the system that do define `version`
    alternatives: tuple[str, ...] = ()
    target: str | None = None


@record(frozen=True, kw_only=True)
class StackFile:
    """A file the driver stack loads: a driver library or a library in a driver's closure."""

    path: str
    #: "driver" (the ICD or layer library itself) or "library" (a dependency)
    role: str
    #: the driver whose closure it is in (its library path), when known
    target: str | None = None
    #: every driver whose closure it is in (a stray libz can break all of them)
    targets: tuple[str, ...] = ()
    #: the link in vkdoctor's overlay through which the driver reaches `path`
    overlay_link: str | None = None
    #: how ld.so found it ("LD_LIBRARY_PATH", "ld.so.cache", ...), when known
    how: str | None = None


@record(frozen=True, kw_only=True)
class StackFacts:
    """Everything the package rules need from library resolution, for one run."""

    missing_sonames: tuple[MissingSoname, ...] = ()
    missing_versions: tuple[MissingVersion, ...] = ()
    files: tuple[StackFile, ...] = ()
