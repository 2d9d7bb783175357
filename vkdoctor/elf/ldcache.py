"""/etc/ld.so.cache (glibc-ld.so.cache1.1) and /etc/ld.so.conf, read through the root.

ld.so itself reads only the cache; ld.so.conf is what ldconfig built it from. We read the conf
too, to tell a stale cache (a library in a configured directory that the cache does not list) or
a missing cache (then ld.so searches only its system directories) from a missing library.
"""

from __future__ import annotations

import functools
import glob
import struct
from pathlib import Path

from vkdoctor.context import Context
from vkdoctor.files import read_bytes, read_text
from vkdoctor.record import record

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


def parse_cache(data: bytes, path: str = "/etc/ld.so.cache") -> LdCache:
    """Parse the new cache format, after an old-format prefix if there is one."""
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

    def cstr(off: int) -> str:
        off += start
        end = data.find(b"\0", off)
        if off >= len(data) or end < 0:
            raise ValueError(f"string offset {off} out of range")
        return data[off:end].decode("utf-8", "surrogateescape")

    hwcap_names: list[str] = []
    if ext_offset and start + ext_offset + 8 <= len(data):
        at = start + ext_offset
        magic, count = struct.unpack_from(endian + "II", data, at)
        if magic == EXTENSION_MAGIC:
            for i in range(min(count, 64)):
                tag, _f, off, size = struct.unpack_from(endian + "IIII", data, at + 8 + 16 * i)
                if tag == EXTENSION_TAG_GLIBC_HWCAPS:
                    for j in range(size // 4):
                        (s,) = struct.unpack_from(endian + "I", data, start + off + 4 * j)
                        hwcap_names.append(cstr(s))
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
        return LdCache(path=path, entries=tuple(entries), error=f"corrupt: {exc}")
    return LdCache(path=path, entries=tuple(entries))


def load_cache(ctx: Context) -> LdCache | None:
    """The root's /etc/ld.so.cache, or None when there is none (ld.so then skips this step)."""
    path = "/etc/ld.so.cache"
    try:
        data = read_bytes(ctx.resolve(path), MAX_CACHE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return LdCache(path=path, entries=(), error=exc.strerror or str(exc))
    return parse_cache(data, path)


@record(frozen=True, kw_only=True)
class LdConf:
    #: directories in the order ldconfig scans them, each with the file that named it
    dirs: tuple[tuple[str, str], ...]
    files: tuple[str, ...]


def load_conf(ctx: Context) -> LdConf:
    """/etc/ld.so.conf with its `include` globs (relative globs are relative to /etc)."""
    dirs: list[tuple[str, str]] = []
    files: list[str] = []
    seen: set[str] = set()

    def read(path: str, depth: int) -> None:
        if depth > 8 or path in files:
            return
        try:
            text = read_text(ctx.resolve(path))
        except OSError:
            return
        files.append(path)
        for raw_line in text.splitlines():
            line = raw_line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("include") and line[7:8] in (" ", "\t"):
                for raw_pattern in line[8:].split():
                    pattern = raw_pattern
                    if not pattern.startswith("/"):
                        pattern = str(Path(path).parent / pattern)
                    host_pattern = str(ctx.under(pattern))
                    prefix = str(ctx.under("/"))
                    for match in sorted(glob.glob(host_pattern)):  # noqa: PTH207
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
    return LdConf(dirs=tuple(dirs), files=tuple(files))
