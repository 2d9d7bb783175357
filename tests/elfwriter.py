"""Write small, valid ELF shared objects of any class and byte order, for reader tests.

gcc here builds only x86 (64- and 32-bit little-endian); big-endian files come from this writer.
The file is one PT_LOAD (file offset == address) holding the dynamic string table, the version
tables and the dynamic section, plus a PT_DYNAMIC and section headers (so readelf -V and pyelftools,
which read versions through sections, can be used as oracles).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

EM_X86_64, EM_386, EM_PPC, EM_PPC64, EM_S390, EM_AARCH64 = 62, 3, 20, 21, 22, 183
DT = {
    "NULL": 0,
    "NEEDED": 1,
    "STRTAB": 5,
    "STRSZ": 10,
    "SONAME": 14,
    "RPATH": 15,
    "RUNPATH": 29,
    "FLAGS": 30,
    "FLAGS_1": 0x6FFFFFFB,
    "VERDEF": 0x6FFFFFFC,
    "VERDEFNUM": 0x6FFFFFFD,
    "VERNEED": 0x6FFFFFFE,
    "VERNEEDNUM": 0x6FFFFFFF,
}


@dataclass
class Spec:
    is64: bool = True
    little: bool = True
    machine: int = EM_X86_64
    osabi: int = 0
    e_type: int = 3
    soname: str | None = "libw.so.1"
    needed: Sequence[str] = ("libc.so.6",)
    rpath: str | None = None
    runpath: str | None = None
    flags: int | None = None
    flags_1: int | None = None
    #: (file, ((version, weak), ...)) per needed file
    verneed: Sequence[tuple[str, Sequence[tuple[str, bool]]]] = ()
    #: version nodes defined (the BASE entry, named after the soname, is added in front)
    verdef: Sequence[str] = ()
    #: extra dynamic entries (tag, value), written before DT_NULL
    extra: Sequence[tuple[int, int]] = field(default_factory=list)
    #: dynamic symbols (name, kind), kind one of SYMBOL_KINDS; written with a SysV DT_HASH
    symbols: Sequence[tuple[str, str]] = ()


#: kind -> (binding, type, defined)
SYMBOL_KINDS = {
    "global": (1, 2, True),
    "weak": (2, 2, True),
    "unique": (10, 1, True),
    "local": (0, 2, True),
    "undef": (1, 0, False),
    "undef_weak": (2, 0, False),
}


def elf_hash(name: bytes) -> int:
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g
    return h


class _Strings:
    def __init__(self) -> None:
        self.data = bytearray(b"\0")
        self.index: dict[str, int] = {}

    def add(self, s: str) -> int:
        if s not in self.index:
            self.index[s] = len(self.data)
            self.data += s.encode() + b"\0"
        return self.index[s]


def _align(buf: bytearray, n: int = 8) -> None:
    buf += b"\0" * (-len(buf) % n)


def write(spec: Spec) -> bytes:
    e = "<" if spec.little else ">"
    ehdr_size, ph_size, sh_size = (64, 56, 64) if spec.is64 else (52, 32, 40)
    dyn = struct.Struct(e + ("qQ" if spec.is64 else "iI"))
    strings = _Strings()
    for name in [spec.soname or "", *spec.needed, spec.rpath or "", spec.runpath or ""]:
        strings.add(name)
    for file, versions in spec.verneed:
        strings.add(file)
        for v, _ in versions:
            strings.add(v)
    for v in spec.verdef:
        strings.add(v)
    for name, _ in spec.symbols:
        strings.add(name)

    body = bytearray(ehdr_size + 2 * ph_size)
    strtab_off = len(body)
    body += strings.data
    _align(body, 4)

    verneed_off = len(body)
    index = len(spec.verdef) + 2
    for i, (file, versions) in enumerate(spec.verneed):
        last = i == len(spec.verneed) - 1
        size = 16 + 16 * len(versions)
        body += struct.pack(
            e + "HHIII", 1, len(versions), strings.add(file), 16, 0 if last else size
        )
        for j, (v, weak) in enumerate(versions):
            body += struct.pack(
                e + "IHHII",
                elf_hash(v.encode()),
                2 if weak else 0,
                index,
                strings.add(v),
                0 if j == len(versions) - 1 else 16,
            )
            index += 1

    verdef_off = len(body)
    defs = [(spec.soname or "libw.so.1", 1), *((v, 0) for v in spec.verdef)] if spec.verdef else []
    for i, (name, flags) in enumerate(defs):
        last = i == len(defs) - 1
        body += struct.pack(
            e + "HHHHIII", 1, flags, i + 1, 1, elf_hash(name.encode()), 20, 0 if last else 28
        )
        body += struct.pack(e + "II", strings.add(name), 0)
    _align(body)

    symtab_off = len(body)
    sym_size = 24 if spec.is64 else 16
    # .dynsym's sh_info: the first non-local symbol
    first_global = 1 + len(list(itertools.takewhile(lambda s: s[1] == "local", spec.symbols)))
    if spec.symbols:
        body += b"\0" * sym_size
        for name, kind in spec.symbols:
            bind, typ, defined = SYMBOL_KINDS[kind]
            info, shndx = (bind << 4) | typ, 1 if defined else 0
            if spec.is64:
                body += struct.pack(e + "IBBHQQ", strings.add(name), info, 0, shndx, 0x100, 8)
            else:
                body += struct.pack(e + "IIIBBH", strings.add(name), 0x100, 8, info, 0, shndx)
    hash_off = len(body)
    if spec.symbols:
        # SysV hash; 8-byte words on 64-bit s390 (and alpha), as glibc reads them there
        word = "Q" if spec.is64 and spec.machine == EM_S390 else "I"
        nsyms = len(spec.symbols) + 1
        nbucket = max(1, nsyms // 2)
        buckets, chains = [0] * nbucket, [0] * nsyms
        for i, (name, _) in enumerate(spec.symbols, start=1):
            h = elf_hash(name.encode()) % nbucket
            chains[i], buckets[h] = buckets[h], i
        body += struct.pack(e + word * (2 + nbucket + nsyms), nbucket, nsyms, *buckets, *chains)
    hash_end = len(body)
    _align(body)

    entries: list[tuple[int, int]] = [(DT["NEEDED"], strings.add(n)) for n in spec.needed]
    if spec.soname is not None:
        entries.append((DT["SONAME"], strings.add(spec.soname)))
    if spec.rpath is not None:
        entries.append((DT["RPATH"], strings.add(spec.rpath)))
    if spec.runpath is not None:
        entries.append((DT["RUNPATH"], strings.add(spec.runpath)))
    if spec.flags is not None:
        entries.append((DT["FLAGS"], spec.flags))
    if spec.flags_1 is not None:
        entries.append((DT["FLAGS_1"], spec.flags_1))
    entries += [(DT["STRTAB"], strtab_off), (DT["STRSZ"], len(strings.data))]
    if spec.verneed:
        entries += [(DT["VERNEED"], verneed_off), (DT["VERNEEDNUM"], len(spec.verneed))]
    if defs:
        entries += [(DT["VERDEF"], verdef_off), (DT["VERDEFNUM"], len(defs))]
    if spec.symbols:
        entries += [(6, symtab_off), (11, sym_size), (4, hash_off)]  # SYMTAB, SYMENT, HASH
    entries += [*spec.extra, (0, 0)]
    dynamic_off = len(body)
    for tag, val in entries:
        body += dyn.pack(tag, val)

    shstr = _Strings()
    sections = [
        (".dynstr", 3, strtab_off, len(strings.data), 0, 0, 1, 0),
        (".dynsym", 11, symtab_off, hash_off - symtab_off, 1, first_global, 8, sym_size),
        (".hash", 5, hash_off, hash_end - hash_off, 2, 0, 4, 8 if spec.machine == EM_S390 and spec.is64 else 4),
        (".gnu.version_r", 0x6FFFFFFE, verneed_off, verdef_off - verneed_off, 1, len(spec.verneed), 4, 0),
        (".gnu.version_d", 0x6FFFFFFD, verdef_off, 28 * len(defs), 1, len(defs), 4, 0),
        (".dynamic", 6, dynamic_off, len(body) - dynamic_off, 1, 0, 8, dyn.size),
    ]  # fmt: skip
    sections = [s for s in sections if s[3]]
    for s in sections:
        shstr.add(s[0])
    shstr.add(".shstrtab")
    shstrtab_off = len(body)
    body += shstr.data
    _align(body)
    load_size = len(body)
    shoff = len(body)
    shnum = len(sections) + 2
    body += b"\0" * sh_size
    all_sections = [*sections, (".shstrtab", 3, shstrtab_off, len(shstr.data), 0, 0, 1, 0)]
    for name, sh_type, off, size, link, info, align, entsize in all_sections:
        flags = 0 if name == ".shstrtab" else 2  # SHF_ALLOC
        addr = 0 if name == ".shstrtab" else off
        fmt = "IIQQQQIIQQ" if spec.is64 else "IIIIIIIIII"
        body += struct.pack(
            e + fmt, shstr.add(name), sh_type, flags, addr, off, size, link, info, align, entsize
        )

    ident = b"\x7fELF" + bytes([2 if spec.is64 else 1, 1 if spec.little else 2, 1, spec.osabi])
    ident += b"\0" * 8
    if spec.is64:
        hdr = struct.pack(
            e + "HHIQQQIHHHHHH",
            spec.e_type, spec.machine, 1, 0, ehdr_size, shoff, 0,
            ehdr_size, ph_size, 2, sh_size, shnum, shnum - 1,
        )  # fmt: skip
        phdrs = struct.pack(e + "IIQQQQQQ", 1, 5, 0, 0, 0, load_size, load_size, 0x1000)
        phdrs += struct.pack(
            e + "IIQQQQQQ", 2, 6, dynamic_off, dynamic_off, dynamic_off,
            shstrtab_off - dynamic_off, shstrtab_off - dynamic_off, 8,
        )  # fmt: skip
    else:
        hdr = struct.pack(
            e + "HHIIIIIHHHHHH",
            spec.e_type, spec.machine, 1, 0, ehdr_size, shoff, 0,
            ehdr_size, ph_size, 2, sh_size, shnum, shnum - 1,
        )  # fmt: skip
        phdrs = struct.pack(e + "IIIIIIII", 1, 0, 0, 0, load_size, load_size, 5, 0x1000)
        phdrs += struct.pack(
            e + "IIIIIIII", 2, dynamic_off, dynamic_off, dynamic_off,
            shstrtab_off - dynamic_off, shstrtab_off - dynamic_off, 6, 4,
        )  # fmt: skip
    body[: ehdr_size + 2 * ph_size] = ident + hdr + phdrs
    return bytes(body)
