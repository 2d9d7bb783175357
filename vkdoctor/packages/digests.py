"""Whether an installed file is still the one its package installed: the checksum each package
database records for it (dpkg's info/PKG.md5sums, pacman's local/PKG/mtree), against the file.

Read only on a failure's path (a driver that misses a library): hashing every file of a driver
stack (libLLVM is 100 MB) would cost more than the whole check.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

#: the digests each line format can carry, strongest first
_MTREE_KEYS = (("sha256digest=", "sha256"), ("md5digest=", "md5"))


def file_digest(path: Path, algorithm: str) -> str | None:
    """The hex digest of the file at `path`; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            import hashlib

            return hashlib.file_digest(f, algorithm).hexdigest()
    except (OSError, ValueError):
        return None


def md5sums_entry(text: str, spellings: Iterable[str]) -> str | None:
    """The md5 that a dpkg md5sums file (`HEX  path/without/leading/slash` per line) records for
    the first of `spellings` it lists."""
    recorded: dict[str, str] = {}
    for line in text.splitlines():
        digest, sep, rel = line.partition("  ")
        if sep and len(digest) == 32:
            recorded["/" + rel] = digest.lower()
    return next((recorded[s] for s in spellings if s in recorded), None)


def mtree_entry(data: bytes, spellings: Iterable[str]) -> tuple[str, str] | None:
    """(algorithm, hex digest) that a pacman mtree file (gzip text, `./usr/lib/x.so key=value
    ...` per line) records for the first of `spellings` it lists."""
    wanted = list(spellings)
    if not wanted:
        return None
    recorded: dict[str, tuple[str, str]] = {}
    try:
        for raw in _gunzip_lines(data):
            line = raw.decode("utf-8", "surrogateescape")
            name, _, rest = line.partition(" ")
            if not name.startswith("./"):
                continue
            path = _mtree_unescape(name[1:])
            if path not in wanted:
                continue
            fields = rest.split()
            for key, algorithm in _MTREE_KEYS:
                value = next((f[len(key) :] for f in fields if f.startswith(key)), None)
                if value:
                    recorded[path] = (algorithm, value.lower())
                    break
            if wanted[0] in recorded:  # the answer: the rest need not be inflated
                break
    except (zlib.error, EOFError, ValueError):
        return None
    return next((recorded[s] for s in wanted if s in recorded), None)


#: bounds for an mtree file: a real one inflates to a few MB, has lines of a few hundred bytes
#: and one per file of the package (about 100,000 for the largest); a small file can inflate a
#: thousandfold (60 MiB of zeros gzip to 60 KB), or into millions of lines
_MTREE_MAX = 64 << 20
_LINE_MAX = 64 << 10
_ENTRIES_MAX = 400_000
_CHUNK = 1 << 20
_ENTRY = re.compile(rb"^\./[^\n]*", re.MULTILINE)


def _gunzip_lines(data: bytes) -> Iterator[bytes]:
    """The entry lines (`./path key=value ...`) of gzip `data` (one member or several),
    inflated a chunk at a time and found by a regular expression, so that neither memory nor
    time follows the inflated size: a line over _LINE_MAX is dropped, and more than
    _MTREE_MAX bytes or _ENTRIES_MAX entries, or a truncated or corrupt stream, raise
    ValueError, EOFError or zlib.error."""
    total = entries = 0
    pending = b""
    overlong = False
    while data:
        inflate = zlib.decompressobj(wbits=31)
        while True:
            out = inflate.decompress(data, _CHUNK)
            data = inflate.unconsumed_tail
            total += len(out)
            if total > _MTREE_MAX:
                raise ValueError(f"inflates to more than {_MTREE_MAX} bytes")
            text = pending + out
            cut = text.rfind(b"\n") + 1
            start = 0
            if overlong and cut:  # the rest of a line already dropped
                start, overlong = text.find(b"\n") + 1, False
            for m in _ENTRY.finditer(text, start, cut):
                entries += 1
                if entries > _ENTRIES_MAX:
                    raise ValueError(f"more than {_ENTRIES_MAX} entries")
                yield m.group()
            pending = text[cut:]
            if len(pending) > _LINE_MAX:
                pending, overlong = b"", True
            if inflate.eof:
                data = inflate.unused_data
                break
            if not data and not out:
                raise EOFError("the gzip stream ends early")
    if pending and not overlong and pending.startswith(b"./"):
        yield pending


def _mtree_unescape(name: str) -> str:
    # mtree writes bytes outside printable ASCII, and space, as \\ooo (octal)
    if "\\" not in name:
        return name
    out = bytearray()
    i = 0
    raw = name.encode("utf-8", "surrogateescape")
    while i < len(raw):
        if raw[i] == 0x5C and i + 4 <= len(raw) and raw[i + 1 : i + 4].isdigit():
            out.append(int(raw[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "surrogateescape")
