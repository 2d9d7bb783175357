"""vkdoctor's struct ELF reader against two independent readers: pyelftools and binutils readelf.

Real files (a deterministic sample of the system's shared objects, 64- and 32-bit, and gcc builds),
synthetic files of both classes and byte orders (tests/elfwriter.py), and broken files: every
truncation and deterministic byte corruptions give an ElfInfo or an ElfError, never an exception.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elfbuild import build_lib, run
from elftools.elf.dynamic import DynamicSegment
from elftools.elf.elffile import ELFFile
from elfwriter import EM_386, EM_AARCH64, EM_PPC, EM_PPC64, EM_S390, EM_X86_64, Spec, write

from vkdoctor.elf.reader import DF_1_NODEFLIB, DF_1_NOW, DF_BIND_NOW, ElfError, ElfInfo, _parse

REPO = Path(__file__).resolve().parent.parent
SAMPLE = 200
MAX_SIZE = 50 * 1024 * 1024


def _shared_objects(top: str, limit: int) -> list[Path]:
    """Regular files named *.so or *.so.* under `top` (links followed, each file once) that are
    ELF with a PT_DYNAMIC, under MAX_SIZE; `limit` of them evenly spread over the sorted list."""
    found: set[str] = set()
    for dirpath, _, names in os.walk(top):
        for name in names:
            if not re.search(r"\.so(\.|$)", name):
                continue
            real = os.path.realpath(os.path.join(dirpath, name))
            if os.path.isfile(real) and os.path.getsize(real) < MAX_SIZE:
                found.add(real)
    dynamic = []
    for p in sorted(found):
        r = _parse(Path(p), p)
        if isinstance(r, ElfInfo) and not r.warnings:
            dynamic.append(Path(p))
    step = max(1, len(dynamic) // limit)
    return dynamic[::step][:limit]


def ours(path: Path) -> dict[str, Any]:
    r = _parse(path, str(path))
    assert isinstance(r, ElfInfo), r
    assert not r.warnings, r.warnings
    return {
        "class": r.elf_class,
        "data": r.data,
        "machine": r.machine,
        "osabi": r.osabi,
        "type": r.e_type,
        "soname": r.soname,
        "needed": list(r.needed),
        "rpath": ":".join(r.rpath) if r.has_rpath else None,
        "runpath": ":".join(r.runpath) if r.has_runpath else None,
        "flags": r.flags,
        "flags_1": r.flags_1,
        "bind_now": r.bind_now,
        "nodeflib": r.nodeflib,
        "verneed": [(v.file, [(n, n in v.weak) for n in v.versions]) for v in r.verneed],
        "verdef": list(r.verdef),
    }


def by_pyelftools(path: Path) -> dict[str, Any]:
    """The same facts through pyelftools' own objects (section-based version tables)."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        h = elf.header
        out: dict[str, Any] = {
            "class": elf.elfclass,
            "data": "little" if elf.little_endian else "big",
            "machine": str(h["e_machine"]),
            "osabi": str(h["e_ident"]["EI_OSABI"]),
            "type": str(h["e_type"]),
            "soname": None,
            "needed": [],
            "rpath": None,
            "runpath": None,
            "flags": 0,
            "flags_1": 0,
            "verneed": [],
            "verdef": [],
        }
        dyn = next(s for s in elf.iter_segments() if isinstance(s, DynamicSegment))
        for tag in dyn.iter_tags():
            t = tag.entry.d_tag
            if t == "DT_NEEDED":
                out["needed"].append(tag.needed)
            elif t == "DT_SONAME" and out["soname"] is None:
                out["soname"] = tag.soname
            elif t == "DT_RPATH":
                out["rpath"] = tag.rpath
            elif t == "DT_RUNPATH":
                out["runpath"] = tag.runpath
            elif t == "DT_FLAGS":
                out["flags"] = tag.entry.d_val
            elif t == "DT_FLAGS_1":
                out["flags_1"] = tag.entry.d_val
        vr = elf.get_section_by_name(".gnu.version_r")
        if vr is not None:
            for vn, auxes in vr.iter_versions():
                out["verneed"].append(
                    (vn.name, [(a.name, bool(a["vna_flags"] & 2)) for a in auxes])
                )
        vd = elf.get_section_by_name(".gnu.version_d")
        if vd is not None:
            for d, auxes in vd.iter_versions():
                if not d["vd_flags"] & 1:
                    out["verdef"].append(next(iter(auxes)).name)
    out["bind_now"] = bool(out["flags"] & DF_BIND_NOW or out["flags_1"] & DF_1_NOW)
    out["nodeflib"] = bool(out["flags_1"] & DF_1_NODEFLIB)
    return out


_BRACKET = re.compile(r"\(([A-Z_0-9]+)\)\s+(?:Shared library|Library soname|Library rpath|Library runpath): \[(.*)\]$")  # fmt: skip


def by_readelf(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """`readelf -d -V --wide` over all `paths` in one process, parsed."""
    proc = run(["readelf", "-d", "-V", "--wide", *map(str, paths)])
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    if len(paths) == 1:
        text = f"File: {paths[0]}\n" + text
    out: dict[str, dict[str, Any]] = {}
    cur: dict[str, Any] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("File: "):
            cur = {"soname": None, "needed": [], "rpath": None, "runpath": None, "verneed": []}
            cur.update(verdef=[], bind_now=False, nodeflib=False)
            out[line[6:]] = cur
            continue
        if line.startswith(("Dynamic section", "Version needs", "Version definition")):
            section = line.split()[1]
            continue
        if line.startswith("Version symbols"):
            section = "symbols"
            continue
        m = _BRACKET.search(line)
        if m:
            kind, value = m.groups()
            if kind == "NEEDED":
                cur["needed"].append(value)
            elif kind == "SONAME":
                cur["soname"] = value
            else:
                cur[kind.lower()] = value
        elif re.search(r"\(FLAGS\)\s", line):
            cur["bind_now"] |= "BIND_NOW" in line.split()
        elif re.search(r"\(FLAGS_1\)\s", line):
            words = line.split("Flags:")[1].split()
            cur["bind_now"] |= "NOW" in words
            cur["nodeflib"] = "NODEFLIB" in words
        elif section == "needs" and (m := re.search(r"Version: \d+\s+File: (\S+)", line)):
            cur["verneed"].append((m.group(1), []))
        elif section == "needs" and (m := re.search(r"Name: (\S+)\s+Flags: (\S+)", line)):
            cur["verneed"][-1][1].append((m.group(1), m.group(2) == "WEAK"))
        elif section == "definition" and (m := re.search(r"Flags: (\S+).*Name: (\S+)", line)):
            cur["verdef"] += [m.group(2)] if m.group(1) != "BASE" else []
    return out


READELF_KEYS = ("soname", "needed", "rpath", "runpath", "bind_now", "nodeflib", "verneed", "verdef")


def _compare(paths: list[Path]) -> None:
    binutils = by_readelf(paths)
    for p in paths:
        mine = ours(p)
        assert mine == by_pyelftools(p), p
        assert {k: mine[k] for k in READELF_KEYS} == binutils[str(p)], p


def test_system_libraries_match_pyelftools_and_readelf() -> None:
    paths = _shared_objects("/usr/lib/x86_64-linux-gnu", SAMPLE)
    assert len(paths) >= 150, paths
    # the closure vkdoctor reads on every run is in the sample whatever the step
    lvp = "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
    paths += [Path(lvp)] if Path(lvp) not in paths else []
    _compare(paths)
    assert sum(bool(ours(p)["verdef"]) for p in paths) > 20
    assert sum(bool(ours(p)["runpath"]) for p in paths) > 0


def test_32_bit_libraries_match_pyelftools_and_readelf(tmp_path: Path) -> None:
    built = build_lib(
        tmp_path / "lib32v.so.1",
        soname="lib32v.so.1",
        source="#include <math.h>\nint v1(void) { return 1; }\ndouble v2(double x) { return sin(x); }\n",
        version_script="V_1 { global: v1; local: *; };\nV_2 { global: v2; } V_1;\n",
        runpath=["$ORIGIN/../lib32"],
        m32=True,
        flags=["-lm", "-Wl,-z,now"],
    )
    paths = [built, *_shared_objects("/usr/lib32", 40)]
    assert len(paths) >= 10
    _compare(paths)
    mine = ours(built)
    assert (mine["class"], mine["machine"], mine["verdef"]) == (32, "EM_386", ["V_1", "V_2"])
    assert mine["runpath"] == "$ORIGIN/../lib32" and mine["bind_now"]
    assert "libm.so.6" in mine["needed"]


FULL = {
    "needed": ("libc.so.6", "libm.so.6", "libstdc++.so.6"),
    "rpath": "/opt/a:/opt/b",
    "runpath": "$ORIGIN/lib",
    "flags": DF_BIND_NOW,
    "flags_1": DF_1_NOW | DF_1_NODEFLIB,
    "verneed": [
        ("libc.so.6", [("GLIBC_2.2.5", False), ("GLIBC_2.34", True)]),
        ("libstdc++.so.6", [("GLIBCXX_3.4.30", False)]),
    ],
    "verdef": ["W_1.0", "W_2.0"],
}


@pytest.mark.parametrize(
    ("is64", "little", "machine"),
    [
        (True, True, EM_X86_64),
        (True, False, EM_PPC64),
        (False, True, EM_386),
        (False, False, EM_PPC),
        (True, False, EM_S390),
    ],
)
def test_synthetic_classes_and_byte_orders(
    tmp_path: Path, is64: bool, little: bool, machine: int
) -> None:
    spec = Spec(is64=is64, little=little, machine=machine, osabi=3, **FULL)  # type: ignore[arg-type]
    path = tmp_path / "libw.so.1"
    path.write_bytes(write(spec))
    mine = ours(path)
    _compare([path])
    assert mine["class"] == (64 if is64 else 32)
    assert mine["data"] == ("little" if little else "big")
    assert mine["osabi"] == "ELFOSABI_LINUX"
    assert mine["needed"] == list(FULL["needed"])
    assert (mine["rpath"], mine["runpath"]) == ("/opt/a:/opt/b", "$ORIGIN/lib")
    assert mine["verneed"] == FULL["verneed"] and mine["verdef"] == FULL["verdef"]
    assert mine["bind_now"] and mine["nodeflib"]


def test_header_names_and_unknown_values(tmp_path: Path) -> None:
    for machine, osabi, e_type, want in [
        (EM_AARCH64, 0, 3, ("EM_AARCH64", "ELFOSABI_SYSV", "ET_DYN")),
        (EM_X86_64, 9, 2, ("EM_X86_64", "ELFOSABI_FREEBSD", "ET_EXEC")),
        (4242, 200, 77, ("4242", "200", "77")),
    ]:
        path = tmp_path / f"lib{machine}.so"
        path.write_bytes(write(Spec(machine=machine, osabi=osabi, e_type=e_type)))
        r = _parse(path, str(path))
        assert isinstance(r, ElfInfo)
        assert (r.machine, r.osabi, r.e_type) == want
        assert ours(path)["machine"] == by_pyelftools(path)["machine"]


def _kind(data: bytes, tmp_path: Path, name: str = "x.so") -> ElfInfo | ElfError:
    path = tmp_path / name
    path.write_bytes(data)
    r = _parse(path, str(path))
    assert isinstance(r, ElfInfo | ElfError)
    return r


def test_every_truncation_is_an_error_or_a_partial_read(tmp_path: Path) -> None:
    for is64, little in [(True, True), (False, False)]:
        good = write(Spec(is64=is64, little=little, **FULL))  # type: ignore[arg-type]
        kinds = set()
        for n in range(len(good)):
            r = _kind(good[:n], tmp_path)
            kinds.add(r.kind if isinstance(r, ElfError) else "info")
        # cut inside the header: "file too short"; inside the tables: truncated; past the
        # dynamic section only the (unused here) section headers are lost
        assert kinds == {"truncated", "info"}, kinds


def test_corrupted_files_never_raise(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    for is64, little in [(True, True), (True, False), (False, True), (False, False)]:
        good = bytearray(write(Spec(is64=is64, little=little, **FULL)))  # type: ignore[arg-type]
        for _ in range(300):
            bad = bytearray(good)
            for _ in range(rng.randint(1, 6)):
                pos = rng.randrange(len(bad))
                bad[pos] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
            _kind(bytes(bad), tmp_path)


def test_specific_malformations(tmp_path: Path) -> None:
    import struct

    good = write(Spec(**FULL))  # type: ignore[arg-type]

    def patched(offset: int, fmt: str, *values: int) -> bytes:
        b = bytearray(good)
        struct.pack_into("<" + fmt, b, offset, *values)
        return bytes(b)

    # e_phnum 0xffff with the table running past the end
    r = _kind(patched(0x38, "H", 0xFFFF), tmp_path)
    assert isinstance(r, ElfError) and r.kind == "truncated" and "program header" in r.message
    # e_phentsize below the struct size
    r = _kind(patched(0x36, "H", 8), tmp_path)
    assert isinstance(r, ElfError) and r.kind == "malformed"
    # PT_DYNAMIC (second phdr) p_filesz far past the end of the file
    r = _kind(patched(64 + 56 + 32, "Q", 1 << 40), tmp_path)
    assert isinstance(r, ElfError) and r.kind == "truncated" and "PT_DYNAMIC" in r.message
    # PT_LOAD p_filesz 0: DT_STRTAB maps to no segment
    r = _kind(patched(64 + 32, "Q", 0), tmp_path)
    assert isinstance(r, ElfError) and r.kind == "malformed" and "PT_LOAD" in r.message
    # not ELF, text, empty, bad class
    assert _kind(b"/* GNU ld script */\nGROUP ( libc.so.6 )\n" * 3, tmp_path).kind == "not_elf"  # type: ignore[union-attr]
    assert _kind(b"", tmp_path).kind == "truncated"  # type: ignore[union-attr]
    assert _kind(b"\x7fELF\x03" + good[5:], tmp_path).kind == "malformed"  # type: ignore[union-attr]


def test_version_chains_are_bounded(tmp_path: Path) -> None:
    """vn_next is unsigned, so a chain only walks forward: a huge DT_VERNEEDNUM with links that
    never end walks off the file and leaves a warning, not a hang or an exception."""
    import struct

    data = bytearray(write(Spec(**FULL)))  # type: ignore[arg-type]
    dyn_off = struct.unpack_from("<Q", data, 64 + 56 + 8)[0]
    verneed = 0
    for k in range(64):
        tag, val = struct.unpack_from("<qQ", data, dyn_off + 16 * k)
        if tag == 0:
            break
        if tag == 0x6FFFFFFF:
            struct.pack_into("<Q", data, dyn_off + 16 * k + 8, 1 << 62)
        if tag == 0x6FFFFFFE:
            verneed = val
    struct.pack_into("<I", data, verneed + 12, 16)  # vn_next: into its own aux entries
    second = verneed + 16 + 16 * 2
    struct.pack_into("<I", data, second + 12, 16)  # the last entry links on as well
    r = _kind(bytes(data), tmp_path)
    assert isinstance(r, ElfInfo)
    assert r.needed == FULL["needed"]
    assert r.warnings and "DT_VERNEED" in r.warnings[0], r


def test_a_large_library_is_read_without_loading_it() -> None:
    """libLLVM (over 100 MB) costs a few pages, not its size, in memory."""
    llvm = sorted(Path("/usr/lib/x86_64-linux-gnu").glob("libLLVM-1*.so.1"))
    assert llvm, "libLLVM is part of the Mesa stack this machine has"
    code = (
        "import resource, sys; from pathlib import Path; from vkdoctor.elf.reader import _parse\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"r = _parse(Path({str(llvm[-1])!r}), 'x')\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(type(r).__name__, r.soname, after - before)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    kind, soname, grown_kb = proc.stdout.split()
    assert (kind, soname) == ("ElfInfo", llvm[-1].name), proc.stderr
    assert int(grown_kb) < 16 * 1024, f"reading {llvm[-1]} grew the process by {grown_kb} kB"


def test_runtime_does_not_import_pyelftools() -> None:
    code = (
        "import sys\n"
        "from vkdoctor.cli import cli\n"
        "try:\n"
        "    cli.main(['check', '--no-probe', '--format', 'json'], prog_name='vkdoctor')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'elftools'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr
    assert '"code": "VKL001"' in proc.stdout, proc.stdout + proc.stderr


def test_a_filesystem_without_mmap_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Some FUSE filesystems refuse mmap (ENODEV): the file is then read, with the same answer."""
    import errno
    import mmap

    from vkdoctor.elf.dynsym import read_symbol_table

    lib = Path(os.path.realpath("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"))
    mapped_info, mapped_syms = _parse(lib, str(lib)), read_symbol_table(lib)

    def refuse(*args: object, **kwargs: object) -> mmap.mmap:
        raise OSError(errno.ENODEV, "No such device")

    monkeypatch.setattr(mmap, "mmap", refuse)
    assert _parse(lib, str(lib)) == mapped_info
    read = read_symbol_table(lib)
    assert (read.undefined, read.count) == (mapped_syms.undefined, mapped_syms.count)
    assert read.defines("vk_icdGetInstanceProcAddr")
