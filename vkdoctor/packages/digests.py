"""Whether an installed file is still the one its package installed: the checksum each package
database records for it (dpkg's info/PKG.md5sums, pacman's local/PKG/mtree), against the file.

Read only on a failure's path (a driver that misses a library): hashing every file of a driver
stack (libLLVM is 100 MB) would cost more than the whole check.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterable
from pathlib import Path

#: the digests each line format can carry, strongest first
_MTREE_KEYS = (("sha256digest=", "sha256"), ("md5digest=", "md5"))


def file_digest(path: Path, algorithm: str) -> str | None:
    """The hex digest of the file at `path`; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
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
    try:
        text = gzip.decompress(data).decode("utf-8", "surrogateescape")
    except (OSError, EOFError, ValueError):
        return None
    recorded: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("./"):
            continue
        fields = rest.split()
        for key, algorithm in _MTREE_KEYS:
            value = next((f[len(key) :] for f in fields if f.startswith(key)), None)
            if value:
                recorded[_mtree_unescape(name[1:])] = (algorithm, value.lower())
                break
    return next((recorded[s] for s in spellings if s in recorded), None)


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
