"""Read what the dynamic linker reads from a shared object, with struct over a read-only mmap.

The dynamic tags (SONAME, NEEDED, RPATH, RUNPATH, FLAGS, FLAGS_1) and the version tables
(DT_VERNEED, DT_VERDEF) come from the PT_DYNAMIC segment and the PT_LOAD mapping, as ld.so finds
them, not from section headers (which a stripped or odd file may lack). Both ELF classes and both
byte orders; every offset is checked against the file before it is read, and only the pages
holding these tables are touched (a 100 MB libLLVM costs a few pages). Each file is parsed once
per Context; a file that cannot be read gives an `ElfError`, never an exception.
"""

from __future__ import annotations

import contextlib
import mmap
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

from vkdoctor.model.context import Context
from vkdoctor.model.factstore import NOTHING_KEPT, FactKind, FactStore
from vkdoctor.model.record import record, replace

DF_BIND_NOW = 0x8
DF_1_NOW = 0x1
DF_1_NODEFLIB = 0x800
VER_FLG_BASE = 0x1
VER_FLG_WEAK = 0x2

#: ELFOSABI values glibc accepts for a shared object on Linux (SYSV, GNU)
LINUX_OSABIS = frozenset({"ELFOSABI_SYSV", "ELFOSABI_LINUX"})

ErrorKind = Literal["missing", "unreadable", "directory", "not_elf", "truncated", "malformed"]


@record(frozen=True, kw_only=True)
class VersionNeed:
    """One .gnu.version_r entry: the versions this object needs from one of its NEEDED files."""

    #: the soname the versions are needed from (vn_file)
    file: str
    #: version node names (vna_name) that must be defined there
    versions: tuple[str, ...]
    #: those of `versions` flagged VER_FLG_WEAK: a missing one is not an error
    weak: tuple[str, ...] = ()


@record(frozen=True, kw_only=True)
class ElfInfo:
    """The facts about one ELF file that decide whether and how ld.so loads it."""

    #: the path as asked for (inside the root)
    path: str
    #: 32 or 64
    elf_class: int
    #: "little" or "big"
    data: str
    #: the e_machine name (vkdoctor.elf.names), e.g. "EM_X86_64"
    machine: str
    #: the EI_OSABI name (vkdoctor.elf.names), e.g. "ELFOSABI_SYSV"
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
    #: where vkdoctor stopped reading a table at one of its limits (a hostile or corrupt file:
    #: no real object comes near them); the facts above are then incomplete
    cut: tuple[str, ...] = ()

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
        # not to_json(self): the JSON has the derived facts (class, bind_now, nodeflib), not the raw flags
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
            **({"cut": list(self.cut)} if self.cut else {}),
        }


@record(frozen=True, kw_only=True)
class ElfError:
    """Why a file could not be read as a shared object."""

    path: str
    kind: ErrorKind
    message: str


ElfResult = ElfInfo | ElfError


def _cache(ctx: Context) -> dict[str, ElfResult]:
    return {}


def _by_path(ctx: Context) -> dict[str, ElfResult]:
    return {}


def _resolved(ctx: Context) -> dict[str, Path | OSError]:
    return {}


def resolved(ctx: Context, path: str) -> Path:
    """`ctx.resolve(path)`, once per path per Context: the library search asks for the same
    candidates again and again (each one a chain of lstat calls)."""
    memo = ctx.fact(_resolved)
    hit = memo.get(path)
    if hit is None:
        try:
            hit = ctx.resolve(path)
        except OSError as exc:
            hit = exc
        memo[path] = hit
    if isinstance(hit, OSError):
        raise hit
    return hit


def read_elf(ctx: Context, path: str) -> ElfResult:
    """Parse `path` (inside the root) once per Context; the same file under two names is parsed once."""
    seen = ctx.fact(_by_path)
    hit = seen.get(path)
    if hit is not None:
        return hit
    host = resolved(ctx, path)
    key = str(host)
    cache = ctx.fact(_cache)
    hit = cache.get(key)
    if hit is None:
        hit = _parse(host, path, ctx.store)
        cache[key] = hit
    if hit.path != path:
        hit = replace(hit, path=path)
    seen[path] = hit
    return hit


def _parse(host: Path, path: str, store: FactStore = NOTHING_KEPT) -> ElfResult:
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
    # the file's content is kept, whatever name it was asked for by
    kept = store.get(_KIND, (host,))
    if isinstance(kept, ElfInfo):
        return kept if kept.path == path else replace(kept, path=path)
    found = _read_file(host, path, st.st_size)
    if isinstance(found, ElfInfo):
        store.put(_KIND, (host,), (), found)
    return found


_KIND = FactKind("elf", (__file__,))


def _read_file(host: Path, path: str, size: int) -> ElfResult:
    try:
        with open(host, "rb") as f:
            head = f.read(64)
            if _short(head) or head[:4] != b"\x7fELF" or size <= len(head):
                return _parse_bytes(head, path)
            with mapped(f) as image:
                return _parse_bytes(image, path)
    except OSError as exc:
        return ElfError(path=path, kind="unreadable", message=exc.strerror or str(exc))
    except ValueError as exc:  # mmap of a file that shrank to nothing meanwhile
        return ElfError(path=path, kind="truncated", message=str(exc))


#: where a filesystem cannot map files, the whole file is read instead, up to this size
MAX_READ = 256 * 1024 * 1024


@contextlib.contextmanager
def mapped(f: BinaryIO) -> Iterator[bytes | mmap.mmap]:
    """The open file's bytes: a read-only mmap (only the pages looked at are read), or, on a
    filesystem that cannot map files, the file read whole when it is at most MAX_READ."""
    try:
        view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError:
        f.seek(0)
        data = f.read(MAX_READ + 1)
        if len(data) > MAX_READ:
            raise
        yield data
        return
    with view:
        yield view


def _short(ident: bytes) -> bool:
    """glibc checks the length before the magic: anything shorter than an ELF64 header is
    "file too short", even a text file (an ELF32 header needs only 52 bytes)."""
    return len(ident) < 64 and not (len(ident) >= 52 and ident[:5] == b"\x7fELF\x01")


class _Bad(Exception):
    """A structural defect: `kind` says whether the file ends too early or is inconsistent."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind


PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH = 0, 1, 5, 10, 14, 15
DT_RUNPATH, DT_FLAGS = 29, 30
DT_FLAGS_1 = 0x6FFFFFFB
DT_VERDEF, DT_VERDEFNUM, DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFC, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF

#: limits on counts a hostile file could make huge (ld.so itself trusts them)
MAX_PHDRS = 4096
MAX_DYN = 65536
MAX_VERNEED, MAX_VERNAUX, MAX_VERDEF = 4096, 4096, 65536
#: version names read from DT_VERNEED in all (libLLVM needs 40; overlapping entries can make a
#: few KB name millions)
MAX_VERSION_NAMES = 65536
#: bytes of dynamic strings decoded per file (NEEDED, SONAME, paths, version names): a real
#: object reads a few KB; 65,536 DT_NEEDED entries at the start of one long string would read
#: gigabytes
MAX_STRING_BYTES = 8 * 1024 * 1024
#: distinct DT_NEEDED names per file (the most on a Debian desktop: 21; each missing one costs
#: a search of every directory ld.so would try, and its own finding)
MAX_NEEDED = 256


class _Image:
    """The file's bytes with its class and byte order: bounded struct reads by file offset."""

    def __init__(self, data: bytes | mmap.mmap, is64: bool, little: bool) -> None:
        self.data = data
        self.size = len(data)
        self.is64 = is64
        self.e = "<" if little else ">"
        self.loads: list[tuple[int, int, int]] = []
        self.machine = 0
        #: the dynamic section has more than MAX_DYN entries before its DT_NULL
        self.dyn_cut = False

    def unpack(self, fmt: str, offset: int, what: str) -> tuple[int, ...]:
        s = struct.Struct(self.e + fmt)
        if offset < 0 or offset + s.size > self.size:
            raise _Bad("truncated", f"{what} at offset {offset:#x} lies beyond the end of the file")
        return s.unpack_from(self.data, offset)

    def offset(self, vaddr: int, what: str) -> int:
        """File offset of a virtual address, through the PT_LOAD mapping (as ld.so maps it)."""
        for start, offset, filesz in self.loads:
            if start <= vaddr < start + filesz:
                return vaddr - start + offset
        raise _Bad("malformed", f"{what} address {vaddr:#x} is in no PT_LOAD segment")


def _parse_bytes(data: bytes | mmap.mmap, path: str) -> ElfResult:
    ident = bytes(data[:64])
    if _short(ident):
        return ElfError(path=path, kind="truncated", message="file too short")
    if ident[:4] != b"\x7fELF":
        return ElfError(path=path, kind="not_elf", message="invalid ELF header")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return ElfError(path=path, kind="malformed", message="invalid ELF class or data encoding")
    image = _Image(data, is64=ident[4] == 2, little=ident[5] == 1)
    try:
        return _extract(image, path)
    except _Bad as exc:
        return ElfError(path=path, kind=exc.kind, message=f"cannot parse: {exc}")


def _extract(image: _Image, path: str) -> ElfInfo:
    base, raw = _layout(image)
    base["path"] = path
    if raw is None:
        return ElfInfo(**base, warnings=("no PT_DYNAMIC segment",))
    return _dynamic_facts(image, base, raw)


def _layout(image: _Image) -> tuple[dict[str, Any], dict[int, list[int]] | None]:
    """The header's facts, and the dynamic entries by tag (None: no PT_DYNAMIC); records the
    PT_LOAD mapping in `image.loads`."""
    from vkdoctor.elf.names import machine_name, osabi_name, type_name

    if image.is64:
        e_type, e_machine, _, _, phoff, _, _, _, phentsize, phnum = image.unpack(
            "HHIQQQIHHH", 16, "ELF header"
        )
        ph_fmt, ph_size, dyn_fmt = "IIQQQQQQ", 56, "qQ"
    else:
        e_type, e_machine, _, _, phoff, _, _, _, phentsize, phnum = image.unpack(
            "HHIIIIIHHH", 16, "ELF header"
        )
        ph_fmt, ph_size, dyn_fmt = "IIIIIIII", 32, "iI"
    image.machine = e_machine
    base: dict[str, Any] = {
        "elf_class": 64 if image.is64 else 32,
        "data": "little" if image.e == "<" else "big",
        "machine": machine_name(e_machine),
        "osabi": osabi_name(image.data[7]),
        "e_type": type_name(e_type),
    }
    if phnum and phentsize < ph_size:
        raise _Bad("malformed", f"program header entry size {phentsize} is below {ph_size}")
    dynamic: tuple[int, int] | None = None
    for i in range(min(phnum, MAX_PHDRS)):
        ph = image.unpack(ph_fmt, phoff + i * phentsize, "program header")
        if image.is64:
            p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = ph
        else:
            p_type, p_offset, p_vaddr, _, p_filesz, _, _, _ = ph
        if p_type == PT_LOAD:
            image.loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC and dynamic is None:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return base, None
    if dynamic[0] + dynamic[1] > image.size:
        raise _Bad("truncated", "PT_DYNAMIC lies beyond the end of the file")

    raw: dict[int, list[int]] = {}
    entry = struct.Struct(image.e + dyn_fmt)
    total = dynamic[1] // entry.size
    for k in range(min(total, MAX_DYN)):
        tag, val = entry.unpack_from(image.data, dynamic[0] + k * entry.size)
        if tag == DT_NULL:
            break
        raw.setdefault(tag, []).append(val)
    else:
        image.dyn_cut = total > MAX_DYN
    return base, raw


class _Cut(Exception):
    """A limit on what vkdoctor reads from one file was reached."""


class _Strings:
    """The dynamic string table: each offset decoded once (the same name is one object however
    many entries point at it), within MAX_STRING_BYTES per file."""

    def __init__(self, image: _Image, strtab: tuple[int, int] | None) -> None:
        self.image = image
        self.strtab = strtab
        self.memo: dict[int, str] = {}
        self.budget = MAX_STRING_BYTES

    def __call__(self, off: int) -> str:
        hit = self.memo.get(off)
        if hit is not None:
            return hit
        if self.strtab is None:
            raise _Bad("malformed", "no DT_STRTAB")
        start, end = self.strtab
        if off < 0 or start + off >= end:
            raise _Bad("malformed", f"string offset {off} outside DT_STRTAB")
        data = self.image.data
        stop = data.find(b"\0", start + off, end)
        if stop < 0:
            raise _Bad("truncated", f"string at DT_STRTAB+{off} has no terminating NUL")
        self.budget -= stop - start - off
        if self.budget < 0:
            raise _Cut(f"more than {MAX_STRING_BYTES} bytes of dynamic strings")
        text = self.memo[off] = bytes(data[start + off : stop]).decode("utf-8", "replace")
        return text


def _dynamic_facts(image: _Image, base: dict[str, Any], raw: dict[int, list[int]]) -> ElfInfo:
    string = _Strings(image, _strtab(image, raw))
    cut: list[str] = []

    def strings(tag: int, what: str, limit: int = MAX_DYN) -> tuple[str, ...]:
        """The entries' strings in order, each once (ld.so loads a repeated NEEDED once), at
        most `limit` of them."""
        out: dict[str, None] = {}
        try:
            for off in raw.get(tag, []):
                out.setdefault(string(off))
                if len(out) > limit:
                    del out[next(reversed(out))]
                    raise _Cut(f"it names more than {limit}")
        except _Cut as exc:
            cut.append(f"{what}: stopped after {len(out)} names ({exc})")
        return tuple(out)

    def dirs(tag: int, what: str) -> tuple[str, ...]:
        out: list[str] = []
        for text in strings(tag, what):
            out.extend(text.split(":"))
        return tuple(out)

    warnings: list[str] = []
    try:
        soname = string(raw[DT_SONAME][0]) if DT_SONAME in raw else None
    except _Cut as exc:
        soname = None
        cut.append(f"DT_SONAME: {exc}")
    needed = strings(DT_NEEDED, "DT_NEEDED", MAX_NEEDED)
    if image.dyn_cut:
        cut.append(f"the dynamic section: read its first {MAX_DYN} entries, it has more")
    verneed: tuple[VersionNeed, ...] = ()
    verdef: tuple[str, ...] = ()
    try:
        verneed = _verneed(image, raw, string, cut)
    except _Bad as exc:
        warnings.append(f"cannot read DT_VERNEED: {exc}")
    try:
        verdef = _verdef(image, raw, string, cut)
    except _Bad as exc:
        warnings.append(f"cannot read DT_VERDEF: {exc}")
    return ElfInfo(
        **base,
        soname=soname,
        needed=needed,
        rpath=dirs(DT_RPATH, "DT_RPATH"),
        runpath=dirs(DT_RUNPATH, "DT_RUNPATH"),
        has_rpath=DT_RPATH in raw,
        has_runpath=DT_RUNPATH in raw,
        flags=raw.get(DT_FLAGS, [0])[0],
        flags_1=raw.get(DT_FLAGS_1, [0])[0],
        verneed=verneed,
        verdef=verdef,
        has_verdef=DT_VERDEF in raw,
        warnings=tuple(warnings),
        cut=tuple(cut),
    )


def _strtab(image: _Image, raw: dict[int, list[int]]) -> tuple[int, int] | None:
    """[start, end) of the dynamic string table in the file: DT_STRSZ bytes, cut at the end of
    the PT_LOAD segment that holds it."""
    if DT_STRTAB not in raw:
        return None
    vaddr = raw[DT_STRTAB][0]
    start = image.offset(vaddr, "DT_STRTAB")
    end = next(o + f for v, o, f in image.loads if v <= vaddr < v + f)
    end = min(end, image.size)
    if DT_STRSZ in raw:
        end = min(end, start + raw[DT_STRSZ][0])
    return start, end


def _verneed(
    image: _Image, raw: dict[int, list[int]], string: _Strings, cut: list[str]
) -> tuple[VersionNeed, ...]:
    """The Elf_Verneed chain. Entries only move forward, but many may share one Elf_Vernaux
    chain: each chain is read once, and MAX_VERSION_NAMES bounds the names of all of them."""
    if DT_VERNEED not in raw:
        return ()
    count = raw.get(DT_VERNEEDNUM, [0])[0]
    pos = image.offset(raw[DT_VERNEED][0], "DT_VERNEED")
    out: list[VersionNeed] = []
    chains: dict[tuple[int, int], tuple[tuple[str, ...], tuple[str, ...]]] = {}
    left = MAX_VERSION_NAMES
    try:
        for _ in range(min(count, MAX_VERNEED)):
            _, vn_cnt, vn_file, vn_aux, vn_next = image.unpack("HHIII", pos, "Elf_Verneed")
            key = (pos + vn_aux, min(vn_cnt, MAX_VERNAUX))
            chain = chains.get(key)
            if chain is None:
                names: dict[str, None] = {}
                weak: dict[str, None] = {}
                apos = key[0]
                for _ in range(key[1]):
                    if left <= 0:
                        raise _Cut(f"more than {MAX_VERSION_NAMES} version names")
                    left -= 1
                    _, vna_flags, _, vna_name, vna_next = image.unpack("IHHII", apos, "Elf_Vernaux")
                    name = string(vna_name)
                    names.setdefault(name)
                    if vna_flags & VER_FLG_WEAK:
                        weak.setdefault(name)
                    if not vna_next:
                        break
                    apos += vna_next
                chain = chains[key] = (tuple(names), tuple(weak))
            out.append(VersionNeed(file=string(vn_file), versions=chain[0], weak=chain[1]))
            if not vn_next:
                break
            pos += vn_next
    except _Cut as exc:
        cut.append(f"DT_VERNEED: stopped after {len(out)} entries ({exc})")
    return tuple(out)


def _verdef(
    image: _Image, raw: dict[int, list[int]], string: _Strings, cut: list[str]
) -> tuple[str, ...]:
    if DT_VERDEF not in raw:
        return ()
    count = raw.get(DT_VERDEFNUM, [0])[0]
    pos = image.offset(raw[DT_VERDEF][0], "DT_VERDEF")
    out: dict[str, None] = {}
    try:
        for _ in range(min(count, MAX_VERDEF)):
            _, vd_flags, _, vd_cnt, _, vd_aux, vd_next = image.unpack("HHHHIII", pos, "Elf_Verdef")
            if not vd_flags & VER_FLG_BASE and vd_cnt:
                (vda_name, _) = image.unpack("II", pos + vd_aux, "Elf_Verdaux")
                out.setdefault(string(vda_name))
            if not vd_next:
                break
            pos += vd_next
    except _Cut as exc:
        cut.append(f"DT_VERDEF: stopped after {len(out)} names ({exc})")
    return tuple(out)
