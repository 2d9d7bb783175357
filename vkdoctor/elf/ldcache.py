"""/etc/ld.so.cache (glibc-ld.so.cache1.1) and /etc/ld.so.conf, read through the root.

ld.so itself reads only the cache; ld.so.conf is what ldconfig built it from. We read the conf
too, to tell a stale cache (a library in a configured directory that the cache does not list) or
a missing cache (then ld.so searches only its system directories) from a missing library.
"""

from __future__ import annotations

import functools
import glob
import itertools
import posixpath
import struct
from pathlib import Path
from typing import Any

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.factstore import FactKind
from vkdoctor.model.record import record

NEW_MAGIC = b"glibc-ld.so.cache1.1"
OLD_MAGIC = b"ld.so-1.7.0"
EXTENSION_MAGIC = 0xEAA42174
EXTENSION_TAG_GLIBC_HWCAPS = 1
HWCAP_EXTENSION = 1 << 62
FLAG_ELF_LIBC6 = 0x0003
FLAG_TYPE_MASK = 0x00FF

#: the cache id ld.so accepts, per `uname -m` (glibc's _DL_CACHE_DEFAULT_ID)
CACHE_ID = {
    "x86_64": 0x0303,
    "aarch64": 0x0A03,
    "ppc64le": 0x0503,
    "ppc64": 0x0503,
    "s390x": 0x0403,
    "riscv64": 0x1103,
    "i386": 0x0003,
    "i686": 0x0003,
}

MAX_CACHE_BYTES = 64 * 1024 * 1024


@record(frozen=True, kw_only=True)
class CacheEntry:
    name: str
    path: str
    flags: int
    #: the glibc-hwcaps subdirectory ("x86-64-v3") this entry is for, None for a plain entry
    hwcaps: str | None = None
    #: legacy hwcap bits (other than the extension bit)
    hwcap: int = 0


@record(frozen=True, kw_only=True)
class LdCache:
    path: str
    entries: tuple[CacheEntry, ...]
    #: a reason when the file exists but could not be used
    error: str | None = None
    #: where vkdoctor stopped reading it at one of its limits (a corrupt or hostile cache)
    cut: tuple[str, ...] = ()

    def lookup(self, name: str, machine: str, hwcaps: tuple[str, ...]) -> CacheEntry | None:
        """ld.so's choice for `name`: best supported glibc-hwcaps entry, else the first plain one."""
        want = CACHE_ID.get(machine)
        best: CacheEntry | None = None
        best_prio = len(hwcaps)
        plain: CacheEntry | None = None
        for e in self.by_name().get(name, ()):
            if want is not None and e.flags != want:
                continue
            if want is None and e.flags & FLAG_TYPE_MASK != FLAG_ELF_LIBC6:
                continue
            if e.hwcaps is not None:
                if e.hwcaps in hwcaps and hwcaps.index(e.hwcaps) < best_prio:
                    best, best_prio = e, hwcaps.index(e.hwcaps)
                continue
            if e.hwcap == 0 and plain is None:
                plain = e
        return best or plain

    @functools.cached_property
    def _index(self) -> dict[str, tuple[CacheEntry, ...]]:
        index: dict[str, list[CacheEntry]] = {}
        for e in self.entries:
            index.setdefault(e.name, []).append(e)
        return {k: tuple(v) for k, v in index.items()}

    def by_name(self) -> dict[str, tuple[CacheEntry, ...]]:
        """Entries per name, in cache order (built once per cache object)."""
        return self._index


#: glibc-hwcaps subdirectory names one cache may define (glibc knows a handful per machine)
MAX_HWCAPS = 1024
#: bytes of names and paths decoded from one cache, beyond twice its size (a real cache's
#: strings are a third of it; entries pointing into one long string could read it over and over)
STRING_SLACK = 16 * 1024 * 1024


class _Cut(Exception):
    """A limit on what vkdoctor reads from the cache was reached."""


def parse_cache(data: bytes, path: str = "/etc/ld.so.cache") -> LdCache:
    """Parse the new cache format, after an old-format prefix if there is one. Time and memory
    are linear in the file's size: each string is decoded once, however many entries name it."""
    start = 0
    if data.startswith(OLD_MAGIC):
        if len(data) < 16:
            return LdCache(path=path, entries=(), error="truncated old-format header")
        (nlibs,) = struct.unpack_from("<I", data, 12)
        start = 16 + nlibs * 12
        start = (start + 7) & ~7
    if data[start : start + len(NEW_MAGIC)] != NEW_MAGIC:
        return LdCache(path=path, entries=(), error="not a glibc-ld.so.cache1.1 file")
    if len(data) < start + 48:
        return LdCache(path=path, entries=(), error="truncated header")
    _n, _l, flags = struct.unpack_from("<IIB", data, start + 20)
    endian = "<" if flags in (0, 2) else ">"
    nlibs, _len_strings = struct.unpack_from(endian + "II", data, start + 20)
    (ext_offset,) = struct.unpack_from(endian + "I", data, start + 32)
    entries_at = start + 48
    if entries_at + nlibs * 24 > len(data):
        return LdCache(path=path, entries=(), error="truncated entry table")

    memo: dict[int, str] = {}
    budget = [2 * len(data) + STRING_SLACK]

    def cstr(off: int) -> str:
        hit = memo.get(off)
        if hit is not None:
            return hit
        at = off + start
        end = data.find(b"\0", at) if at < len(data) else -1
        if end < 0:
            raise ValueError(f"string offset {at} out of range")
        budget[0] -= end - at
        if budget[0] < 0:
            raise _Cut(
                f"its entries name more than {2 * len(data) + STRING_SLACK} bytes of strings"
            )
        text = memo[off] = data[at:end].decode("utf-8", "surrogateescape")
        return text

    cut: list[str] = []
    hwcap_names: list[str] = []
    try:
        _hwcaps(data, start, ext_offset, endian, cstr, hwcap_names)
    except (ValueError, struct.error) as exc:
        cut.append(f"its glibc-hwcaps extension is corrupt ({exc}); read {len(hwcap_names)} names")
    except _Cut as exc:
        cut.append(f"its glibc-hwcaps extension: stopped after {len(hwcap_names)} names ({exc})")
    entries: list[CacheEntry] = []
    try:
        for i in range(nlibs):
            eflags, key, value, _osv, hwcap = struct.unpack_from(
                endian + "iIIIQ", data, entries_at + 24 * i
            )
            sub = None
            if hwcap & HWCAP_EXTENSION:
                idx = hwcap & 0xFFFFFFFF
                sub = hwcap_names[idx] if idx < len(hwcap_names) else f"#{idx}"
                hwcap = 0
            entries.append(
                CacheEntry(name=cstr(key), path=cstr(value), flags=eflags, hwcaps=sub, hwcap=hwcap)
            )
    except (ValueError, struct.error) as exc:
        return LdCache(path=path, entries=tuple(entries), error=f"corrupt: {exc}", cut=tuple(cut))
    except _Cut as exc:
        cut.append(f"stopped after {len(entries)} of {nlibs} entries ({exc})")
    return LdCache(path=path, entries=tuple(entries), cut=tuple(cut))


def _hwcaps(
    data: bytes, start: int, ext_offset: int, endian: str, cstr: Any, out: list[str]
) -> None:
    """The glibc-hwcaps subdirectory names, in index order, into `out` (at most MAX_HWCAPS)."""
    if not ext_offset or start + ext_offset + 8 > len(data):
        return
    at = start + ext_offset
    magic, count = struct.unpack_from(endian + "II", data, at)
    if magic != EXTENSION_MAGIC:
        return
    for i in range(min(count, 64)):
        tag, _f, off, size = struct.unpack_from(endian + "IIII", data, at + 8 + 16 * i)
        if tag != EXTENSION_TAG_GLIBC_HWCAPS:
            continue
        if start + off + size > len(data):
            raise ValueError(f"section at {start + off} of {size} bytes ends past the file")
        for j in range(size // 4):
            if len(out) >= MAX_HWCAPS:
                raise _Cut(f"more than {MAX_HWCAPS} names")
            (s,) = struct.unpack_from(endian + "I", data, start + off + 4 * j)
            out.append(cstr(s))


def load_cache(ctx: Context) -> LdCache | None:
    """The root's /etc/ld.so.cache, or None when there is none (ld.so then skips this step)."""
    path = "/etc/ld.so.cache"
    host = ctx.resolve(path)
    kept = ctx.store.get(_KIND, (host,))
    if isinstance(kept, LdCache):
        return kept
    try:
        data = tree.read_bytes(ctx, path, MAX_CACHE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return LdCache(path=path, entries=(), error=exc.strerror or str(exc))
    parsed = parse_cache(data, path)
    ctx.store.put(_KIND, (host,), (), parsed)
    return parsed


_KIND = FactKind("ldcache", (__file__,))


#: configuration files and glob matches one ld.so.conf tree may name (a real one: a dozen)
MAX_CONF_FILES = 4096
#: include depth (ldconfig has no limit and recurses until it runs out of stack or files)
MAX_CONF_DEPTH = 8


@record(frozen=True, kw_only=True)
class LdConf:
    #: directories in the order ldconfig scans them, each with the file that named it
    dirs: tuple[tuple[str, str], ...]
    files: tuple[str, ...]
    #: where vkdoctor stopped reading the tree at one of its limits
    cut: tuple[str, ...] = ()


def load_conf(ctx: Context) -> LdConf:
    """/etc/ld.so.conf with its `include` globs (relative globs are relative to /etc). Each file
    is read once and each glob expanded once, however often the files include one another."""
    dirs: list[tuple[str, str]] = []
    files: list[str] = []
    read_files: set[str] = set()
    seen: set[str] = set()
    #: host glob pattern -> the lowest depth it was expanded at
    expanded: dict[str, int] = {}
    cut: list[str] = []
    prefix = str(ctx.under("/"))

    def matches(host_pattern: str) -> list[str]:
        found = list(itertools.islice(glob.iglob(host_pattern), MAX_CONF_FILES + 1))  # noqa: PTH207
        if len(found) > MAX_CONF_FILES:
            cut.append(f"include {host_pattern}: read the first {MAX_CONF_FILES} matches")
            found = found[:MAX_CONF_FILES]
        return sorted(found)

    def read(path: str, depth: int) -> None:
        if path in read_files:
            return
        if depth > MAX_CONF_DEPTH:
            if not cut or "deeper" not in cut[-1]:
                cut.append(f"{path}: includes nested deeper than {MAX_CONF_DEPTH} levels not read")
            return
        if len(files) >= MAX_CONF_FILES:
            if not any("files read" in c for c in cut):
                cut.append(f"{MAX_CONF_FILES} files read; {path} and any after it not read")
            return
        try:
            text = tree.read_text(ctx, path)
        except OSError:
            return
        files.append(path)
        read_files.add(path)
        for raw_line in text.splitlines():
            # ldconfig's lines are C strings: a NUL ends one
            line = raw_line.split("\0", 1)[0].split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("include") and line[7:8] in (" ", "\t"):
                for raw_pattern in line[8:].split():
                    pattern = raw_pattern
                    if not pattern.startswith("/"):
                        pattern = str(Path(path).parent / pattern)
                    # ".." at the top stays at the top, as in the kernel: never out of the root
                    pattern = "/" + posixpath.normpath(pattern).lstrip("/")
                    host_pattern = str(ctx.under(pattern))
                    if expanded.get(host_pattern, depth + 1) <= depth:
                        continue  # every match was read (or refused) already
                    expanded[host_pattern] = depth
                    for match in matches(host_pattern):
                        inner = match if ctx.live else "/" + str(Path(match).relative_to(prefix))
                        read(inner, depth + 1)
                continue
            if line.startswith("hwcap"):
                continue
            for word in line.replace(",", " ").split():
                d = word.split("=", 1)[0].rstrip("/") or "/"
                if d.startswith("/") and d not in seen:
                    seen.add(d)
                    dirs.append((d, path))

    read("/etc/ld.so.conf", 0)
    return LdConf(dirs=tuple(dirs), files=tuple(files), cut=tuple(cut))
