"""Hostile ELF files, ld.so.cache files and ld.so.conf trees are read in time and memory bounded
by their real content: shared tables are read once, repeated names kept once, counts capped, and
a file cut off at a cap is said to be so (VKL001 warns), never an exception.
"""

from __future__ import annotations

import io
import json
import struct
import time
import tracemalloc
from pathlib import Path

import pytest
from conftest import run_json
from elftools.elf.elffile import ELFFile
from elfwriter import Spec, write

from vkdoctor.elf import ldcache
from vkdoctor.elf.ldcache import load_conf, parse_cache
from vkdoctor.elf.reader import MAX_NEEDED, MAX_VERSION_NAMES, ElfInfo, _parse
from vkdoctor.model.context import Context


def _dynamic(data: bytes) -> dict[str, int]:
    elf = ELFFile(io.BytesIO(data))
    dyn = elf.get_section_by_name(".dynamic")
    return {t.entry.d_tag: t.entry.d_val for t in dyn.iter_tags()}


def _bounded(path: Path, seconds: float, mbytes: float) -> ElfInfo:
    """Parse `path` twice: timed alone, then with tracemalloc for its peak memory (tracemalloc
    triples the time; the bounds are a tenth of what the unbounded reader took)."""
    t0 = time.perf_counter()
    info = _parse(path, str(path))
    took = time.perf_counter() - t0
    assert took < seconds, f"{took:.1f} s"
    tracemalloc.start()
    again = _parse(path, str(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < mbytes * 2**20, f"{peak / 2**20:.0f} MB"
    assert isinstance(info, ElfInfo), info
    assert again == info
    return info


def overlapping_verneed(
    tmp: Path, needs: int = 4096, auxes: int = 4096, spread: int = 0, name: str = "libverneed.so"
) -> Path:
    """`needs` Elf_Verneed entries that all point into one chain of Elf_Vernaux entries
    overlapping at a 4-byte stride (every word 4: vna_name 4, vna_next 4), each reading `auxes`
    of them: 80 KB that names needs * auxes versions to a reader that walks each entry's chain.
    With `spread`, need i starts (i % spread) entries further in: no two chains start alike."""
    base = bytearray(write(Spec(verneed=[("libc.so.6", [("GLIBC_2.2.5", False)])])))
    tags = _dynamic(bytes(base))
    libc = base.index(b"libc.so.6\0") - tags["DT_STRTAB"]
    tail = len(base)
    need_at = tail
    aux_at = need_at + 16 * needs
    region = bytearray()
    for i in range(needs):
        here = need_at + 16 * i
        nxt = 0 if i == needs - 1 else 16
        start = aux_at + 4 * (i % spread if spread else 0)
        region += struct.pack("<HHIII", 1, auxes, libc, start - here, nxt)
    region += struct.pack("<I", 4) * (auxes + spread + 3)
    data = base + region
    # point DT_VERNEED/DT_VERNEEDNUM at the new table and stretch PT_LOAD over it
    dyn_off = data.index(struct.pack("<qQ", 0x6FFFFFFE, tags["DT_VERNEED"]))
    struct.pack_into("<qQqQ", data, dyn_off, 0x6FFFFFFE, need_at, 0x6FFFFFFF, needs)
    struct.pack_into("<QQ", data, 64 + 32, len(data), len(data))  # p_filesz, p_memsz
    out = tmp / name
    out.write_bytes(bytes(data))
    return out


def test_overlapping_version_needs_are_read_once(tmp_path: Path) -> None:
    path = overlapping_verneed(tmp_path)
    assert path.stat().st_size < 100_000
    info = _bounded(path, seconds=5.0, mbytes=32)
    # 4096 needs share one chain: read once, the same tuple for each
    assert len(info.verneed) == 4096
    assert {v.versions for v in info.verneed} == {("w.so.1",)}
    assert info.cut == ()


def test_version_needs_past_the_cap_are_cut_off(tmp_path: Path) -> None:
    # 2048 different starts into the shared chain: 8 M names, no two chains alike
    path = overlapping_verneed(tmp_path, spread=2048)
    info = _bounded(path, seconds=5.0, mbytes=64)
    names = sum(len(v.versions) for v in info.verneed)
    assert names <= MAX_VERSION_NAMES
    assert 0 < len(info.verneed) < 4096
    assert len(info.cut) == 1 and info.cut[0].startswith("DT_VERNEED: stopped after")
    assert f"more than {MAX_VERSION_NAMES} version names" in info.cut[0]


def test_many_needed_entries_naming_one_long_string(tmp_path: Path) -> None:
    long = "x" * 65536
    # the string table: "\0libw.so.1\0" then the long name, at offset 11
    path = tmp_path / "libneeded.so"
    path.write_bytes(write(Spec(needed=[long], extra=[(1, 11)] * 65000)))
    info = _bounded(path, seconds=5.0, mbytes=32)
    # one name, decoded once (ld.so loads a repeated NEEDED once)
    assert info.needed == (long,)
    assert info.cut == ()


def test_needed_entries_reading_gigabytes_are_cut_off(tmp_path: Path) -> None:
    long = "y" * 65536
    # 65,534 entries at distinct offsets into one 64 KB string: 2 GB of suffixes
    path = tmp_path / "libsuffix.so"
    path.write_bytes(write(Spec(needed=[long], extra=[(1, 12 + k) for k in range(65000)])))
    info = _bounded(path, seconds=5.0, mbytes=48)
    assert info.cut and info.cut[0].startswith("DT_NEEDED: stopped after")
    assert 100 < len(info.needed) < 1000


def _cache(entries: int, ext: bytes, strings: bytes, hwcap_index: int | None = None) -> bytes:
    """A glibc-ld.so.cache1.1 file: `entries` entries naming the first string, then the
    strings, then the extension `ext` (built against the strings' offset)."""
    head = 48
    table = head + 24 * entries
    str_at = table
    ext_at = (str_at + len(strings) + 7) & ~7
    out = bytearray(ldcache.NEW_MAGIC)
    out += struct.pack("<IIB3xIIIII", entries, len(strings), 2, 0, ext_at, 0, 0, 0)[:28]
    out = out.ljust(head, b"\0")
    struct.pack_into("<I", out, 32, ext_at)
    hwcap = ldcache.HWCAP_EXTENSION | (hwcap_index or 0) if hwcap_index is not None else 0
    for _ in range(entries):
        out += struct.pack("<iIIIQ", 0x0303, str_at, str_at, 0, hwcap)
    out += strings
    out = out.ljust(ext_at, b"\0")
    out += ext
    return bytes(out)


def _bad_hwcaps_cache() -> bytes:
    """One entry, and a glibc-hwcaps section whose name offset points past the end of the file."""
    strings = b"libfoo.so.1\0"
    ext = struct.pack("<II", ldcache.EXTENSION_MAGIC, 1) + struct.pack("<IIII", 1, 0, 0, 4)
    data = bytearray(_cache(1, b"", strings, hwcap_index=0))
    ext_at = len(data)
    data += ext
    struct.pack_into("<IIII", data, ext_at + 8, 1, 0, ext_at + len(ext), 4)
    data += struct.pack("<I", 10**9)
    struct.pack_into("<I", data, 32, ext_at)
    return bytes(data)


def test_cache_with_bad_hwcaps_offsets_is_not_an_exception(tmp_path: Path) -> None:
    cache = parse_cache(_bad_hwcaps_cache())
    assert cache.error is None
    assert [e.name for e in cache.entries] == ["libfoo.so.1"]
    assert cache.cut and "glibc-hwcaps extension is corrupt" in cache.cut[0]
    # the whole run: a warning naming the cache, not vkdoctor's internal error (exit 3)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/ld.so.cache").write_bytes(_bad_hwcaps_cache())
    proc, doc = run_json(["check", "--root", str(tmp_path), "--select", "VKL001"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    (cut,) = [f for f in doc["findings"] if "was cut off" in f["title"]]
    assert cut["severity"] == "warn" and cut["evidence"]["path"] == "/etc/ld.so.cache"
    assert cut["remedy"].startswith("sudo ldconfig")


def test_cache_with_repeated_hwcaps_offsets_is_bounded() -> None:
    # 48 MB: one 1 MB hwcaps name, and a section of 12 M offsets all naming it
    name = b"v" * 2**20 + b"\0"
    count = 12 * 2**20 // 4 * 4
    data = bytearray(_cache(1, b"", b"libfoo.so.1\0" + name, hwcap_index=0))
    ext_at = (len(data) + 7) & ~7
    data = data.ljust(ext_at, b"\0")
    sec_at = ext_at + 8 + 16
    data += struct.pack("<II", ldcache.EXTENSION_MAGIC, 1) + struct.pack(
        "<IIII", 1, 0, sec_at, count * 4
    )
    name_off = 48 + 24 + len(b"libfoo.so.1\0")
    data += struct.pack("<I", name_off) * count
    struct.pack_into("<I", data, 32, ext_at)
    t0 = time.perf_counter()
    cache = parse_cache(bytes(data))
    assert time.perf_counter() - t0 < 5.0
    tracemalloc.start()
    parse_cache(bytes(data))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3 * len(data) + 64 * 2**20
    assert cache.entries[0].hwcaps == name[:-1].decode()
    assert cache.cut and f"more than {ldcache.MAX_HWCAPS} names" in cache.cut[0]


def test_cache_entries_rereading_one_long_string_are_cut_off() -> None:
    # 100,000 entries whose names are distinct offsets into one 1 MB string: 100 GB of suffixes
    n = 100_000
    long = b"z" * 2**20 + b"\0"
    data = bytearray(_cache(n, b"", long))
    str_at = 48 + 24 * n
    for i in range(n):
        struct.pack_into("<II", data, 48 + 24 * i + 4, str_at + i, str_at + i)
    t0 = time.perf_counter()
    cache = parse_cache(bytes(data))
    assert time.perf_counter() - t0 < 5.0
    assert cache.cut and cache.cut[0].startswith("stopped after")
    assert 0 < len(cache.entries) < n


def _conf_tree(root: Path, n: int) -> None:
    d = root / "etc/ld.so.conf.d"
    d.mkdir(parents=True)
    (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    for i in range(n):
        (d / f"{i:04}.conf").write_text(f"/opt/lib{i}\ninclude /etc/ld.so.conf.d/*.conf\n")


def test_conf_files_that_include_one_another_cost_their_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each of n files includes all n: n^2 includes, but one glob and n reads
    globs: list[str] = []
    reads: list[str] = []
    real_glob, real_read = ldcache.glob.iglob, ldcache.tree.read_text
    monkeypatch.setattr(ldcache.glob, "iglob", lambda p: globs.append(p) or real_glob(p))
    monkeypatch.setattr(
        ldcache.tree, "read_text", lambda ctx, p: reads.append(p) or real_read(ctx, p)
    )
    n = 800
    _conf_tree(tmp_path, n)
    t0 = time.perf_counter()
    conf = load_conf(Context(root=tmp_path))
    assert time.perf_counter() - t0 < 5.0
    assert len(conf.files) == n + 1 and len(reads) == n + 1
    assert globs == [str(tmp_path / "etc/ld.so.conf.d/*.conf")]
    assert [d for d, _ in conf.dirs] == [f"/opt/lib{i}" for i in range(n)]
    assert conf.cut == ()


def test_conf_tree_past_the_file_cap_is_cut_off(tmp_path: Path) -> None:
    _conf_tree(tmp_path, ldcache.MAX_CONF_FILES + 10)
    conf = load_conf(Context(root=tmp_path))
    assert len(conf.files) <= ldcache.MAX_CONF_FILES + 1
    assert conf.cut
    proc, doc = run_json(["check", "--root", str(tmp_path), "--select", "VKL001"])
    assert proc.returncode in (0, 1), proc.stderr
    cut = [f for f in doc["findings"] if "was cut off" in f["title"]]
    assert len(cut) == 1 and cut[0]["severity"] == "warn", doc["findings"]
    assert cut[0]["evidence"]["path"] == "/etc/ld.so.conf"
    assert "4096 matches" in cut[0]["message"] or "files read" in cut[0]["message"]


def test_cut_off_driver_library_is_a_warning(tmp_path: Path) -> None:
    lib = tmp_path / "libhostile.so"
    long = "y" * 65536
    lib.write_bytes(write(Spec(needed=[long], extra=[(1, 12 + k) for k in range(65000)])))
    manifest = tmp_path / "hostile.json"
    icd = {"library_path": str(lib), "api_version": "1.3.0"}
    manifest.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": icd}))
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKL001"], env={"VK_DRIVER_FILES": str(manifest)}
    )
    assert proc.returncode == 0, proc.stderr  # a warning; VKL002 is the missing library's failure
    cut = [f for f in doc["findings"] if "was cut off" in f["title"]]
    assert len(cut) == 1 and cut[0]["severity"] == "warn", doc["findings"]
    assert cut[0]["evidence"]["path"] == str(lib)
    assert "DT_NEEDED: stopped after" in cut[0]["message"]


def test_conf_globs_stay_in_the_root_and_lines_end_at_nul(tmp_path: Path) -> None:
    # found by tests/test_fuzz_elf.py: "//" and a NUL in an include glob raised ValueError; ".."
    # stays inside the root
    root = tmp_path / "root"
    (root / "etc/ld.so.conf.d").mkdir(parents=True)
    (root / "etc/ld.so.conf").write_bytes(
        b"include //etc/ld.so.conf.d/a.conf\ninclude /etc/ld.so.conf.d/b.conf\0junk\n"
        b"include ../../outside/*.conf\n"
    )
    (root / "etc/ld.so.conf.d/a.conf").write_text("/opt/a\n")
    (root / "etc/ld.so.conf.d/b.conf").write_text("/opt/b\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.conf").write_text("/opt/outside\n")
    conf = load_conf(Context(root=root))
    assert [d for d, _ in conf.dirs] == ["/opt/a", "/opt/b"]
    assert conf.files == ("/etc/ld.so.conf", "/etc/ld.so.conf.d/a.conf", "/etc/ld.so.conf.d/b.conf")


def test_thousands_of_distinct_needed_names_are_cut_off(tmp_path: Path) -> None:
    # each missing library costs a search and a finding: 5,000 of them took 7 minutes
    path = tmp_path / "libmany.so"
    path.write_bytes(write(Spec(needed=[f"libn{i}.so" for i in range(5000)])))
    info = _bounded(path, seconds=5.0, mbytes=32)
    assert info.needed == tuple(f"libn{i}.so" for i in range(MAX_NEEDED))
    assert info.cut == (
        f"DT_NEEDED: stopped after {MAX_NEEDED} names (it names more than {MAX_NEEDED})",
    )
