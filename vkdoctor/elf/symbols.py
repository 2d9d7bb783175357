"""Dynamic symbols: what each object defines and what it needs, for the undefined-symbol check.

Read straight from .dynsym/.dynstr/.gnu.version with struct (libLLVM has tens of thousands of
symbols; pyelftools' per-symbol objects would take seconds). Parsed once per file per Context.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vkdoctor.context import Context
from vkdoctor.elf.reader import host_realpath

STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
SHN_UNDEF = 0


@dataclass(frozen=True, kw_only=True)
class Symbols:
    #: names of exported (global, weak, unique) defined symbols
    defined: frozenset[bytes]
    #: names of strong (non-weak) undefined symbols, with whether the reference is versioned
    undefined: tuple[tuple[str, bool], ...]
    error: str | None = None

    def defines(self, name: str) -> bool:
        return name.encode() in self.defined


def _cache(ctx: Context) -> dict[str, Symbols]:
    return {}


def dynamic_symbols(ctx: Context, path: str) -> Symbols:
    try:
        key = str(host_realpath(ctx, path))
    except OSError:
        key = str(ctx.under(path))
    cache = ctx.fact(_cache)
    if key not in cache:
        cache[key] = _read(ctx, path)
    return cache[key]


SHT_DYNSYM = 11
SHT_GNU_VERSYM = 0x6FFFFFFF


def _read(ctx: Context, path: str) -> Symbols:
    try:
        with open(ctx.under(path), "rb") as f:
            ident = f.read(64)
            if len(ident) < 52 or ident[:4] != b"\x7fELF":
                return Symbols(defined=frozenset(), undefined=(), error="not ELF")
            is64 = ident[4] == 2
            little = ident[5] == 1
            e = "<" if little else ">"
            if is64:
                (shoff,) = struct.unpack_from(e + "Q", ident, 0x28)
                shentsize, shnum = struct.unpack_from(e + "HH", ident, 0x3A)
                shfmt = e + "IIQQQQIIQQ"
            else:
                (shoff,) = struct.unpack_from(e + "I", ident, 0x20)
                shentsize, shnum = struct.unpack_from(e + "HH", ident, 0x2E)
                shfmt = e + "IIIIIIIIII"
            if not shoff or not shnum or shnum > 65535:
                return Symbols(
                    defined=frozenset(),
                    undefined=(),
                    error="no section headers",
                )
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            headers = [
                struct.unpack_from(shfmt, table, i * shentsize)
                for i in range(len(table) // shentsize)
            ]

            def read(h: tuple[int, ...]) -> bytes:
                f.seek(h[4])
                return f.read(min(h[5], 512 * 1024 * 1024))

            dynsym = next((h for h in headers if h[1] == SHT_DYNSYM), None)
            if dynsym is None or dynsym[6] >= len(headers):
                return Symbols(defined=frozenset(), undefined=(), error="no .dynsym")
            raw = read(dynsym)
            strings = read(headers[dynsym[6]])
            versym = next((h for h in headers if h[1] == SHT_GNU_VERSYM), None)
            versions = read(versym) if versym is not None else b""
    except (OSError, struct.error) as exc:
        return Symbols(defined=frozenset(), undefined=(), error=str(exc))
    if is64:
        dtype = np.dtype(
            [
                ("name", e + "u4"),
                ("info", "u1"),
                ("other", "u1"),
                ("shndx", e + "u2"),
                ("value", e + "u8"),
                ("size", e + "u8"),
            ]
        )
    else:
        dtype = np.dtype(
            [
                ("name", e + "u4"),
                ("value", e + "u4"),
                ("size", e + "u4"),
                ("info", "u1"),
                ("other", "u1"),
                ("shndx", e + "u2"),
            ]
        )
    syms = np.frombuffer(raw[: len(raw) // dtype.itemsize * dtype.itemsize], dtype=dtype)[1:]
    bind = syms["info"] >> 4
    exported = (bind == STB_GLOBAL) | (bind == STB_WEAK) | (bind == STB_GNU_UNIQUE)
    is_def = exported & (syms["shndx"] != SHN_UNDEF)
    strong_und = (bind == STB_GLOBAL) & (syms["shndx"] == SHN_UNDEF)
    vers = (
        np.frombuffer(versions[: len(versions) // 2 * 2], dtype=e + "u2")[1:] if versions else None
    )
    undefined: list[tuple[str, bool]] = []
    for i in np.nonzero(strong_und)[0].tolist():
        off = int(syms["name"][i])
        name = strings[off : strings.find(b"\0", off)].decode("utf-8", "replace")
        versioned = vers is not None and i < len(vers) and (int(vers[i]) & 0x7FFF) >= 2
        undefined.append((name, versioned))
    return Symbols(defined=_names(strings, syms["name"][is_def]), undefined=tuple(undefined))


def _names(strings: bytes, offsets: Any) -> frozenset[bytes]:
    """The strings at `offsets` in a string table, without a Python loop per symbol."""
    parts = strings.split(b"\0")
    lengths = np.array(list(map(len, parts)), dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    offs = np.asarray(offsets, dtype=np.int64)
    idx = np.searchsorted(starts, offs, side="right") - 1
    exact = starts[idx] == offs
    out = {parts[i] for i in idx[exact].tolist()}
    for off, i in zip(offs[~exact].tolist(), idx[~exact].tolist(), strict=True):
        out.add(parts[i][off - int(starts[i]) :])  # a tail-merged name
    return frozenset(out)


@dataclass(frozen=True, kw_only=True)
class Undefined:
    """A strong undefined symbol of `path` that no object in the load scope defines."""

    path: str
    name: str
    versioned: bool
    #: the object is linked with -z now (DF_BIND_NOW / DF_1_NOW): dlopen itself fails
    bind_now: bool

    @property
    def error(self) -> str:
        return f"{self.path}: undefined symbol: {self.name}"


def undefined_symbols(
    ctx: Context, new: Sequence[tuple[str, bool]], scope: Sequence[str]
) -> tuple[Undefined, ...]:
    """E6: for each newly loaded (path, bind_now), its strong UND symbols nobody in `scope` defines.

    `scope` is every object ld.so searches for this dlopen: the process's global scope
    (executable, its libraries, LD_PRELOAD) and the dlopened closure.
    """
    defined: set[bytes] = set()
    for p in scope:
        defined |= dynamic_symbols(ctx, p).defined
    out: list[Undefined] = []
    for path, bind_now in new:
        for name, versioned in dynamic_symbols(ctx, path).undefined:
            if name.encode() not in defined:
                out.append(Undefined(path=path, name=name, versioned=versioned, bind_now=bind_now))
    return tuple(out)
