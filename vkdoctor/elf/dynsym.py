"""Dynamic symbols as ld.so finds them: DT_SYMTAB, DT_STRTAB and DT_VERSYM through the PT_LOAD
mapping, the symbol count from DT_HASH (nchain) or DT_GNU_HASH, and lookups by name through the
object's own hash table (GNU, else SysV), as _dl_lookup_symbol_x does. No section headers, no
numpy, and no set of every exported name: libLLVM exports 46,000, and the undefined-symbol rule
asks about a few hundred.

`symbol_table(ctx, path)` reads a file once per Context; `unresolved(ctx, new, scope)` is the
undefined-symbol rule's question: which strong undefined references of the objects `new` does no
object of `scope` define.
"""

from __future__ import annotations

import array
import itertools
import mmap
import operator
import sys
from collections.abc import Sequence
from pathlib import Path

from vkdoctor.elf.reader import (
    DT_STRSZ,
    DT_STRTAB,
    _Bad,
    _Image,
    _layout,
    _short,
    mapped,
    resolved,
)
from vkdoctor.model.context import Context
from vkdoctor.model.record import field, record

DT_HASH, DT_SYMTAB, DT_SYMENT = 4, 6, 11
DT_PLTRELSZ, DT_RELA, DT_RELASZ, DT_REL, DT_RELSZ, DT_JMPREL = 2, 7, 8, 17, 18, 23
DT_RELACOUNT, DT_RELCOUNT = 0x6FFFFFF9, 0x6FFFFFFA
DT_GNU_HASH = 0x6FFFFEF5
DT_VERSYM = 0x6FFFFFF0
STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
SHN_UNDEF = 0
EM_ALPHA, EM_S390 = 0x9026, 22
#: no real object has more (libLLVM: 46,000); a count above is a corrupt hash table
MAX_SYMBOLS = 4_000_000


#: 33^k mod 2^32 for names shorter than this (C++ names can be longer: those take the loop)
_POW33 = tuple(itertools.accumulate(range(1024), lambda p, _: p * 33 & 0xFFFFFFFF, initial=1))


class SymbolName:
    """A name to look up, with its GNU and SysV hashes computed once for every table asked."""

    __slots__ = ("_gnu", "_sysv", "raw", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.raw = text.encode("utf-8", "surrogateescape")
        self._gnu: int | None = None
        self._sysv: int | None = None

    @property
    def gnu(self) -> int:
        if self._gnu is None:
            raw = self.raw
            if len(raw) < len(_POW33):
                # h = h * 33 + c for each byte, unrolled to 5381 * 33^n + sum(c_i * 33^(n-1-i))
                # (mod 2^32), the sum taken in C: a third of the loop's time over the few
                # thousand names one run looks up
                h = 5381 * _POW33[len(raw)] + sum(map(operator.mul, reversed(raw), _POW33))
            else:
                h = 5381
                for c in raw:
                    h = (h * 33 + c) & 0xFFFFFFFF
            self._gnu = h & 0xFFFFFFFF
        return self._gnu

    @property
    def sysv(self) -> int:
        if self._sysv is None:
            h = 0
            for c in self.raw:
                h = ((h << 4) + c) & 0xFFFFFFFF
                g = h & 0xF0000000
                h = (h ^ (g >> 24)) & ~g & 0xFFFFFFFF
            self._sysv = h
        return self._sysv


@record(frozen=True, kw_only=True)
class _Hash:
    """The object's symbol hash table, copied out of the file: enough to look a name up."""

    gnu: bool
    nbuckets: int
    buckets: array.array[int]
    chains: array.array[int]
    #: GNU only: the first hashed symbol, the Bloom filter, its shift and word size in bits
    symoffset: int = 0
    bloom: array.array[int] | None = None
    shift: int = 0
    bits: int = 64


@record(frozen=True, kw_only=True, eq=False)
class SymbolTable:
    """One object's dynamic symbols, or why they could not be read (`error`)."""

    #: strong undefined references (STB_GLOBAL, SHN_UNDEF): (name, the reference is versioned)
    undefined: tuple[tuple[str, bool], ...] = ()
    #: the names of `undefined` that a relocation outside the PLT uses (a data reference, a
    #: function pointer, a vtable): ld.so binds those at dlopen even when binding lazily
    at_load: frozenset[str] = frozenset()
    #: how many entries DT_SYMTAB has (index 0, the null symbol, included)
    count: int = 0
    error: str | None = None
    _strings: bytes = field(default=b"", repr=False)
    _words: array.array[int] | None = field(default=None, repr=False)
    #: words per symbol: 6 (ELF64) or 4 (ELF32)
    _step: int = field(default=6, repr=False)
    _little: bool = field(default=True, repr=False)
    _hash: _Hash | None = field(default=None, repr=False)
    _answers: dict[bytes, bool] = field(default_factory=dict, repr=False)

    def defines(self, name: str | SymbolName) -> bool:
        """Whether the object exports a definition of `name` (STB_GLOBAL, STB_WEAK or
        STB_GNU_UNIQUE, not SHN_UNDEF), found through its hash table as ld.so finds it.
        Each answer is kept: the same table is asked about the same names for every driver."""
        n = name if isinstance(name, SymbolName) else SymbolName(name)
        known = self._answers.get(n.raw)
        if known is None:
            known = self._answers[n.raw] = self._lookup(n)
        return known

    def _lookup(self, n: SymbolName) -> bool:
        h = self._hash
        if h is None or not h.nbuckets:
            return False
        if h.gnu:
            hv = n.gnu
            if h.bloom:
                word = h.bloom[(hv // h.bits) % len(h.bloom)]
                mask = (1 << (hv % h.bits)) | (1 << ((hv >> h.shift) % h.bits))
                if word & mask != mask:
                    return False
            i = h.buckets[hv % h.nbuckets]
            if i < h.symoffset:
                return False
            while i - h.symoffset < len(h.chains):
                link = h.chains[i - h.symoffset]
                if link | 1 == hv | 1 and self._exports(i, n.raw):
                    return True
                if link & 1:
                    return False
                i += 1
            return False
        i = h.buckets[n.sysv % h.nbuckets]
        for _ in range(len(h.chains)):  # a corrupt chain may loop: at most every symbol
            if not i or i >= len(h.chains):
                return False
            if self._exports(i, n.raw):
                return True
            i = h.chains[i]
        return False

    def _exports(self, index: int, raw: bytes) -> bool:
        words = self._words
        assert words is not None
        step = self._step
        if index >= self.count:
            return False
        off = words[index * step]
        meta = words[index * step + (1 if step == 6 else 3)]
        end = off + len(raw)
        s = self._strings
        if end >= len(s) or s[end] != 0 or not s.startswith(raw, off):
            return False
        return _kind(meta, self._little) == "defined"


def _tables(ctx: Context) -> dict[str, SymbolTable]:
    return {}


def symbol_table(ctx: Context, path: str) -> SymbolTable:
    """The dynamic symbols of `path` (inside the root), read once per file per Context."""
    try:
        key = str(resolved(ctx, path))
    except OSError:
        key = str(ctx.under(path))
    cache = ctx.fact(_tables)
    if key not in cache:
        cache[key] = read_symbol_table(Path(key))
    return cache[key]


def _definers(ctx: Context) -> dict[str, SymbolTable]:
    return {}


def unresolved(
    ctx: Context, new: Sequence[str], scope: Sequence[str]
) -> dict[str, tuple[tuple[str, bool], ...]]:
    """For each path of `new`, its strong undefined references (name, versioned) that no object
    of `scope` (paths inside the root) defines. Paths whose symbols cannot be read have nothing
    to report; their tables' `error` says why."""
    tables = list({id(t): t for t in (symbol_table(ctx, p) for p in scope)}.values())
    in_scope = {id(t) for t in tables}
    # The answer is "any table of the scope", so the order tables are asked in is free: the one
    # that defined a name for the previous driver first (the drivers of one run share most of
    # their closure), then the most recently useful (one library's references cluster on a
    # few providers: libc, libstdc++, libLLVM).
    last = ctx.fact(_definers)
    answers: dict[str, bool] = {}
    out: dict[str, tuple[tuple[str, bool], ...]] = {}
    for path in new:
        missing = []
        for text, versioned in symbol_table(ctx, path).undefined:
            found = answers.get(text)
            if found is None:
                found = False
                n = SymbolName(text)
                hint = last.get(text)
                if hint is not None and id(hint) in in_scope and hint.defines(n):
                    found = True
                else:
                    for k, t in enumerate(tables):
                        if t.defines(n):
                            last[text] = t
                            found = True
                            if k:
                                tables.insert(0, tables.pop(k))
                            break
                answers[text] = found
            if not found:
                missing.append((text, versioned))
        out[path] = tuple(missing)
    return out


def read_symbol_table(host: Path) -> SymbolTable:
    """The dynamic symbols of the file at `host`; problems are in `error`, never raised."""
    try:
        with open(host, "rb") as f:
            head = f.read(64)
            if _short(head) or head[:4] != b"\x7fELF" or head[4] not in (1, 2):
                return SymbolTable(error="not an ELF file")
            if head[5] not in (1, 2):
                return SymbolTable(error="invalid ELF data encoding")
            with mapped(f) as data:
                return _read(_Image(data, is64=head[4] == 2, little=head[5] == 1))
    except (OSError, ValueError) as exc:
        return SymbolTable(error=str(exc))
    except _Bad as exc:
        return SymbolTable(error=str(exc))


def _read(image: _Image) -> SymbolTable:
    _, raw = _layout(image)
    if raw is None:
        return SymbolTable(error="no PT_DYNAMIC segment")
    if DT_SYMTAB not in raw or DT_STRTAB not in raw:
        return SymbolTable(error="no DT_SYMTAB or DT_STRTAB")
    entsize = 24 if image.is64 else 16
    if raw.get(DT_SYMENT, [entsize])[0] != entsize:
        return SymbolTable(error=f"DT_SYMENT is {raw[DT_SYMENT][0]}, not {entsize}")
    table = _hash_table(image, raw)
    count = _count(table)
    symtab = image.offset(raw[DT_SYMTAB][0], "DT_SYMTAB")
    if symtab + count * entsize > _segment_end(image, raw[DT_SYMTAB][0]):
        raise _Bad("malformed", f"{count} symbols run past the end of their segment")
    strtab = image.offset(raw[DT_STRTAB][0], "DT_STRTAB")
    strend = min(
        _segment_end(image, raw[DT_STRTAB][0]), strtab + raw.get(DT_STRSZ, [image.size])[0]
    )
    strings = bytes(image.data[strtab:strend])
    versym = b""
    if DT_VERSYM in raw:
        start = image.offset(raw[DT_VERSYM][0], "DT_VERSYM")
        versym = bytes(image.data[start : min(start + 2 * count, image.size)])

    # Columns of 32-bit words, sliced in C: a Python loop over libLLVM's 46,000 symbols would
    # cost more than everything else here. Elf64_Sym is 6 words (name, info|other|shndx, ...),
    # Elf32_Sym 4 (name, value, size, info|other|shndx).
    entries = bytes(image.data[symtab : symtab + count * entsize])
    words = _array(image, entries, "I")
    step = entsize // 4
    little = image.e == "<"
    indexes = _strong_undefined(entries, entsize, image.is64)
    versions = _array(image, versym, "H")
    undefined = []
    at_load = []
    eager = _load_time_symbols(image, raw) if indexes else set()
    for i in indexes:
        if i:
            name = _name(strings, words[i * step]).decode("utf-8", "replace")
            undefined.append((name, i < len(versions) and (versions[i] & 0x7FFF) >= 2))
            if i in eager:
                at_load.append(name)
    return SymbolTable(
        undefined=tuple(undefined),
        at_load=frozenset(at_load),
        count=count,
        _strings=strings,
        _words=words,
        _step=step,
        _little=little,
        _hash=table,
    )


def _load_time_symbols(image: _Image, raw: dict[int, list[int]]) -> set[int]:
    """The symbol indexes that relocations outside DT_JMPREL (the PLT) refer to: ld.so resolves
    those when it loads the object, lazy binding or not. The first DT_RELACOUNT (DT_RELCOUNT)
    entries are relative relocations without a symbol, as ld.so itself assumes."""
    found: set[int] = set()
    plt = (raw.get(DT_JMPREL, [0])[0], raw.get(DT_JMPREL, [0])[0] + raw.get(DT_PLTRELSZ, [0])[0])
    for table, size, relative, addend in (
        (DT_RELA, DT_RELASZ, DT_RELACOUNT, True),
        (DT_REL, DT_RELSZ, DT_RELCOUNT, False),
    ):
        if table not in raw or size not in raw:
            continue
        start, end = raw[table][0], raw[table][0] + raw[size][0]
        if plt[0] < plt[1] and start <= plt[0] < end:
            end = plt[0]  # some linkers count the PLT's relocations in DT_RELASZ too
        entsize = (8 if image.is64 else 4) * (3 if addend else 2)
        start += min(raw.get(relative, [0])[0], (end - start) // entsize) * entsize
        if start >= end:
            continue
        at = image.offset(start, "relocations")
        n = min(end - start, _segment_end(image, start) - at) // entsize
        words = _array(image, image.data[at : at + n * entsize], "I")
        per = entsize // 4
        if image.is64:
            # r_info is 64 bits, the symbol in its high half: the second word of it in
            # little-endian files, the first in big-endian ones
            found.update(words[(3 if image.e == "<" else 2) :: per])
        else:
            found.update(info >> 8 for info in words[1::per])
    found.discard(0)
    return found


def _strong_undefined(table: bytes, entsize: int, is64: bool) -> list[int]:
    """The indexes of the strong undefined symbols (st_shndx SHN_UNDEF, binding STB_GLOBAL)
    of the symbol table `table`, in order. The two bytes of every st_shndx are sliced out in C
    and OR-ed as two big integers: a zero byte of the result is a symbol of section 0 (either
    byte order), and only those few are looked at one by one."""
    info_at, shndx_at = (4, 6) if is64 else (12, 14)
    count = len(table) // entsize
    low = int.from_bytes(table[shndx_at::entsize], "little")
    high = int.from_bytes(table[shndx_at + 1 :: entsize], "little")
    either = (low | high).to_bytes(count, "little")
    out = []
    i = either.find(0)
    while i >= 0:
        if table[i * entsize + info_at] >> 4 == STB_GLOBAL:
            out.append(i)
        i = either.find(0, i + 1)
    return out


def _array(image: _Image, data: bytes | mmap.mmap, code: str) -> array.array[int]:
    """`data` as unsigned words in the file's byte order."""
    words = array.array(code)
    words.frombytes(data[: len(data) // words.itemsize * words.itemsize])
    if (image.e == "<") != (sys.byteorder == "little"):
        words.byteswap()
    return words


def _kind(meta: int, little: bool) -> str:
    """'defined' (exported), 'undefined' (a strong reference) or '', from st_info, st_other and
    st_shndx read as one 32-bit word in the file's byte order."""
    if little:
        info, shndx = meta & 0xFF, meta >> 16
    else:
        info, shndx = meta >> 24, meta & 0xFFFF
    bind = info >> 4
    if shndx != SHN_UNDEF:
        return "defined" if bind in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE) else ""
    return "undefined" if bind == STB_GLOBAL else ""


def _segment_end(image: _Image, vaddr: int) -> int:
    end = next(o + f for v, o, f in image.loads if v <= vaddr < v + f)
    return min(end, image.size)


def _hash_table(image: _Image, raw: dict[int, list[int]]) -> _Hash:
    """DT_GNU_HASH when there is one (ld.so prefers it), else DT_HASH, copied out of the file."""
    if DT_GNU_HASH in raw:
        pos = image.offset(raw[DT_GNU_HASH][0], "DT_GNU_HASH")
        end = _segment_end(image, raw[DT_GNU_HASH][0])
        nbuckets, symoffset, bloom_size, shift = image.unpack("IIII", pos, "DT_GNU_HASH")
        bits = 64 if image.is64 else 32
        buckets_at = pos + 16 + bloom_size * bits // 8
        chains_at = buckets_at + 4 * nbuckets
        if nbuckets > MAX_SYMBOLS or bloom_size > MAX_SYMBOLS or chains_at > end:
            raise _Bad("malformed", "DT_GNU_HASH runs past the end of its segment")
        buckets = _array(image, image.data[buckets_at:chains_at], "I")
        # ELF has no DT_SYMTAB size: the symbols end where the last bucket's chain ends
        count = max(buckets, default=0)
        if count < symoffset:
            count = symoffset
        else:
            while True:
                if count - symoffset >= MAX_SYMBOLS or chains_at + 4 * (count - symoffset) >= end:
                    raise _Bad("malformed", "the last DT_GNU_HASH chain does not end")
                (link,) = image.unpack("I", chains_at + 4 * (count - symoffset), "DT_GNU_HASH")
                count += 1
                if link & 1:
                    break
        return _Hash(
            gnu=True,
            nbuckets=nbuckets,
            symoffset=symoffset,
            bloom=_array(image, image.data[pos + 16 : buckets_at], "Q" if bits == 64 else "I"),
            shift=shift,
            bits=bits,
            buckets=buckets,
            chains=_array(image, image.data[chains_at : chains_at + 4 * (count - symoffset)], "I"),
        )
    if DT_HASH in raw:
        code = "Q" if image.is64 and image.machine in (EM_ALPHA, EM_S390) else "I"
        size = 8 if code == "Q" else 4
        pos = image.offset(raw[DT_HASH][0], "DT_HASH")
        nbucket, nchain = image.unpack(code * 2, pos, "DT_HASH")
        end = pos + size * (2 + nbucket + nchain)
        if nbucket + nchain > 2 * MAX_SYMBOLS or end > _segment_end(image, raw[DT_HASH][0]):
            raise _Bad("malformed", "DT_HASH runs past the end of its segment")
        return _Hash(
            gnu=False,
            nbuckets=nbucket,
            buckets=_array(image, image.data[pos + 2 * size : pos + size * (2 + nbucket)], code),
            chains=_array(image, image.data[pos + size * (2 + nbucket) : end], code),
        )
    raise _Bad("malformed", "no DT_HASH or DT_GNU_HASH: the symbol count is unknown")


def _count(table: _Hash) -> int:
    """How many symbols DT_SYMTAB holds, as the hash table says."""
    return table.symoffset + len(table.chains) if table.gnu else len(table.chains)


def _name(strings: bytes, off: int) -> bytes:
    end = strings.find(b"\0", off)
    return strings[off:end] if end >= 0 else strings[off:]
