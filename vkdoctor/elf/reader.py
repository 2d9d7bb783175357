"""Read what the dynamic linker reads from a shared object, with pyelftools.

The dynamic tags (SONAME, NEEDED, RPATH, RUNPATH, FLAGS, FLAGS_1) and the version tables
(DT_VERNEED, DT_VERDEF) come from the PT_DYNAMIC segment and the PT_LOAD mapping, as ld.so finds
them, not from section headers (which a stripped or odd file may lack). Each file is parsed once
per Context; a file that cannot be read gives an `ElfError`, never an exception.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from vkdoctor.context import Context

DF_BIND_NOW = 0x8
DF_1_NOW = 0x1
DF_1_NODEFLIB = 0x800
VER_FLG_BASE = 0x1
VER_FLG_WEAK = 0x2

#: ELFOSABI values glibc accepts for a shared object on Linux (SYSV, GNU)
LINUX_OSABIS = frozenset({"ELFOSABI_SYSV", "ELFOSABI_LINUX"})

ErrorKind = Literal["missing", "unreadable", "directory", "not_elf", "truncated", "malformed"]


@dataclass(frozen=True, kw_only=True)
class VersionNeed:
    """One .gnu.version_r entry: the versions this object needs from one of its NEEDED files."""

    #: the soname the versions are needed from (vn_file)
    file: str
    #: version node names (vna_name) that must be defined there
    versions: tuple[str, ...]
    #: those of `versions` flagged VER_FLG_WEAK: a missing one is not an error
    weak: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ElfInfo:
    """The facts about one ELF file that decide whether and how ld.so loads it."""

    #: the path as asked for (inside the root)
    path: str
    #: 32 or 64
    elf_class: int
    #: "little" or "big"
    data: str
    #: pyelftools' e_machine name, e.g. "EM_X86_64"
    machine: str
    #: pyelftools' EI_OSABI name, e.g. "ELFOSABI_SYSV"
    osabi: str
    #: "ET_DYN", "ET_EXEC", ...
    e_type: str
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    has_rpath: bool = False
    has_runpath: bool = False
    flags: int = 0
    flags_1: int = 0
    #: .gnu.version_r: versions needed, per needed file
    verneed: tuple[VersionNeed, ...] = ()
    #: .gnu.version_d: version nodes defined (the BASE entry, which is the soname, excluded)
    verdef: tuple[str, ...] = ()
    #: the file has a DT_VERDEF table at all (glibc does not check versions against one without)
    has_verdef: bool = False
    #: problems reading the dynamic section that did not stop the read
    warnings: tuple[str, ...] = ()

    @property
    def bind_now(self) -> bool:
        return bool(self.flags & DF_BIND_NOW or self.flags_1 & DF_1_NOW)

    @property
    def nodeflib(self) -> bool:
        return bool(self.flags_1 & DF_1_NODEFLIB)

    @property
    def bits(self) -> str:
        return f"ELFCLASS{self.elf_class}"

    def versions_needed_from(self, soname: str) -> tuple[VersionNeed, ...]:
        return tuple(v for v in self.verneed if v.file == soname)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "class": self.bits,
            "machine": self.machine,
            "osabi": self.osabi,
            "soname": self.soname,
            "needed": list(self.needed),
            "rpath": list(self.rpath) if self.has_rpath else None,
            "runpath": list(self.runpath) if self.has_runpath else None,
            "bind_now": self.bind_now,
            "nodeflib": self.nodeflib,
            "verdef": list(self.verdef),
            "verneed": {v.file: list(v.versions) for v in self.verneed},
        }


@dataclass(frozen=True, kw_only=True)
class ElfError:
    """Why a file could not be read as a shared object."""

    path: str
    kind: ErrorKind
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "message": self.message}


ElfResult = ElfInfo | ElfError


def _cache(ctx: Context) -> dict[str, ElfResult]:
    return {}


def read_elf(ctx: Context, path: str) -> ElfResult:
    """Parse `path` (inside the root) once per Context; the same file under two names is parsed once."""
    host = ctx.resolve(path)
    key = str(host)
    cache = ctx.fact(_cache)
    hit = cache.get(key)
    if hit is None:
        hit = _parse(host, path)
        cache[key] = hit
    if hit.path != path:
        from dataclasses import replace

        return replace(hit, path=path)
    return hit


def _parse(host: Path, path: str) -> ElfResult:
    try:
        st = host.stat()
    except FileNotFoundError:
        return ElfError(path=path, kind="missing", message="No such file or directory")
    except OSError as exc:
        return ElfError(path=path, kind="unreadable", message=exc.strerror or str(exc))
    if stat.S_ISDIR(st.st_mode):
        return ElfError(path=path, kind="directory", message="is a directory")
    if not stat.S_ISREG(st.st_mode):
        return ElfError(path=path, kind="unreadable", message="not a regular file")
    try:
        with open(host, "rb") as f:
            return _parse_stream(f, path, st.st_size)
    except OSError as exc:
        return ElfError(path=path, kind="unreadable", message=exc.strerror or str(exc))


def _parse_stream(f: BinaryIO, path: str, size: int) -> ElfResult:
    ident = f.read(64)
    # glibc checks the length before the magic: anything shorter than an ELF64 header is
    # "file too short", even a text file.
    if len(ident) < 64 and not (len(ident) >= 52 and ident[:5] == b"\x7fELF\x01"):
        return ElfError(path=path, kind="truncated", message="file too short")
    if ident[:4] != b"\x7fELF":
        return ElfError(path=path, kind="not_elf", message="invalid ELF header")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return ElfError(path=path, kind="malformed", message="invalid ELF class or data encoding")
    f.seek(0)
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(f)
        return _extract(elf, path, size)
    except (ELFError, ValueError, KeyError, IndexError, AssertionError, OSError) as exc:
        return ElfError(path=path, kind="malformed", message=f"cannot parse: {exc}")
    except Exception as exc:  # pyelftools raises construct errors on truncated tables
        kind: ErrorKind = "truncated" if "stream" in str(exc).lower() else "malformed"
        return ElfError(path=path, kind=kind, message=f"cannot parse: {type(exc).__name__}: {exc}")


def _extract(elf: Any, path: str, size: int) -> ElfInfo:
    hdr = elf.header
    base: dict[str, Any] = {
        "path": path,
        "elf_class": elf.elfclass,
        "data": "little" if elf.little_endian else "big",
        "machine": str(hdr["e_machine"]),
        "osabi": str(hdr["e_ident"]["EI_OSABI"]),
        "e_type": str(hdr["e_type"]),
    }
    warnings: list[str] = []
    dyn = None
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_DYNAMIC":
            if seg["p_offset"] + seg["p_filesz"] > size:
                raise ValueError("PT_DYNAMIC lies beyond the end of the file (truncated)")
            dyn = seg
            break
    if dyn is None:
        return ElfInfo(**base, warnings=("no PT_DYNAMIC segment",))

    raw: dict[str, list[int]] = {}
    for tag in dyn._iter_tags():  # raw containers: no string lookups until we ask
        raw.setdefault(str(tag["d_tag"]), []).append(int(tag["d_val"]))
    strtab = dyn._get_stringtable()

    def string(off: int) -> str:
        return str(strtab.get_string(off))

    def dirs(tag: str) -> tuple[str, ...]:
        out: list[str] = []
        for off in raw.get(tag, []):
            out.extend(string(off).split(":"))
        return tuple(out)

    soname = string(raw["DT_SONAME"][0]) if "DT_SONAME" in raw else None
    needed = tuple(string(o) for o in raw.get("DT_NEEDED", []))
    verneed: tuple[VersionNeed, ...] = ()
    verdef: tuple[str, ...] = ()
    try:
        verneed = _verneed(elf, raw, string)
    except Exception as exc:
        warnings.append(f"cannot read DT_VERNEED: {exc}")
    try:
        verdef = _verdef(elf, raw, string)
    except Exception as exc:
        warnings.append(f"cannot read DT_VERDEF: {exc}")
    return ElfInfo(
        **base,
        soname=soname,
        needed=needed,
        rpath=dirs("DT_RPATH"),
        runpath=dirs("DT_RUNPATH"),
        has_rpath="DT_RPATH" in raw,
        has_runpath="DT_RUNPATH" in raw,
        flags=raw.get("DT_FLAGS", [0])[0],
        flags_1=raw.get("DT_FLAGS_1", [0])[0],
        verneed=verneed,
        verdef=verdef,
        has_verdef="DT_VERDEF" in raw,
        warnings=tuple(warnings),
    )


def _offset(elf: Any, vaddr: int) -> int:
    off = next(elf.address_offsets(vaddr), None)
    if off is None:
        raise ValueError(f"address {vaddr:#x} is in no PT_LOAD segment")
    return int(off)


def _verneed(elf: Any, raw: dict[str, list[int]], string: Any) -> tuple[VersionNeed, ...]:
    if "DT_VERNEED" not in raw:
        return ()
    count = raw.get("DT_VERNEEDNUM", [0])[0]
    s = elf.structs
    pos = _offset(elf, raw["DT_VERNEED"][0])
    out: list[VersionNeed] = []
    for _ in range(min(count, 4096)):
        vn = s.Elf_Verneed.parse(_read(elf, pos, s.Elf_Verneed.sizeof()))
        names: list[str] = []
        weak: list[str] = []
        apos = pos + vn["vn_aux"]
        for _ in range(min(vn["vn_cnt"], 4096)):
            aux = s.Elf_Vernaux.parse(_read(elf, apos, s.Elf_Vernaux.sizeof()))
            name = string(aux["vna_name"])
            names.append(name)
            if aux["vna_flags"] & VER_FLG_WEAK:
                weak.append(name)
            if not aux["vna_next"]:
                break
            apos += aux["vna_next"]
        out.append(VersionNeed(file=string(vn["vn_file"]), versions=tuple(names), weak=tuple(weak)))
        if not vn["vn_next"]:
            break
        pos += vn["vn_next"]
    return tuple(out)


def _verdef(elf: Any, raw: dict[str, list[int]], string: Any) -> tuple[str, ...]:
    if "DT_VERDEF" not in raw:
        return ()
    count = raw.get("DT_VERDEFNUM", [0])[0]
    s = elf.structs
    pos = _offset(elf, raw["DT_VERDEF"][0])
    out: list[str] = []
    for _ in range(min(count, 65536)):
        vd = s.Elf_Verdef.parse(_read(elf, pos, s.Elf_Verdef.sizeof()))
        if not vd["vd_flags"] & VER_FLG_BASE and vd["vd_cnt"]:
            aux = s.Elf_Verdaux.parse(_read(elf, pos + vd["vd_aux"], s.Elf_Verdaux.sizeof()))
            out.append(string(aux["vda_name"]))
        if not vd["vd_next"]:
            break
        pos += vd["vd_next"]
    return tuple(out)


def _read(elf: Any, pos: int, n: int) -> bytes:
    elf.stream.seek(pos)
    data: bytes = elf.stream.read(n)
    if len(data) != n:
        raise ValueError(f"truncated at offset {pos:#x}")
    return data
