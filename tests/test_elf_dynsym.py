"""vkdoctor.elf.dynsym (dynamic symbols through PT_DYNAMIC and the hash tables) against pyelftools'
section-based .dynsym, readelf, gcc builds of every hash style, synthetic big-endian files, and
the real dynamic linker for the undefined-symbol question."""

from __future__ import annotations

import os
import random
from pathlib import Path

from elfbuild import DlopenProbe, build_lib, run
from elftools.elf.elffile import ELFFile
from elfwriter import EM_386, EM_PPC, EM_PPC64, EM_S390, EM_X86_64, Spec, write
from test_elf_reader import _shared_objects

from vkdoctor.elf.dynsym import SymbolName, read_symbol_table, symbol_table, unresolved
from vkdoctor.model.context import Context

EXPORTED = ("STB_GLOBAL", "STB_WEAK", "STB_LOOS")  # pyelftools names STB_GNU_UNIQUE STB_LOOS


def by_pyelftools(path: Path) -> tuple[set[str], list[tuple[str, bool]], list[str]]:
    """(exported defined names, strong undefined (name, versioned), every symbol name)."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        versym = elf.get_section_by_name(".gnu.version")
        defined: set[str] = set()
        undefined: list[tuple[str, bool]] = []
        names: list[str] = []
        for i, sym in enumerate(dynsym.iter_symbols()):
            if i == 0:
                continue
            names.append(sym.name)
            bind = sym["st_info"]["bind"]
            if sym["st_shndx"] != "SHN_UNDEF":
                if bind in EXPORTED:
                    defined.add(sym.name)
            elif bind == "STB_GLOBAL":
                ndx = versym.get_symbol(i)["ndx"] if versym is not None else 0
                ndx = ndx if isinstance(ndx, int) else 0  # VER_NDX_LOCAL / VER_NDX_GLOBAL
                undefined.append((sym.name, (ndx & 0x7FFF) >= 2))
    return defined, undefined, names


def load_time_by_pyelftools(path: Path) -> set[str]:
    """The symbol names that relocation sections other than the PLT's (.rela.dyn, .rel.dyn)
    refer to, from the section headers."""
    from elftools.elf.relocation import RelocationSection

    with open(path, "rb") as f:
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        out: set[str] = set()
        for section in elf.iter_sections():
            if not isinstance(section, RelocationSection) or section.name.endswith(".plt"):
                continue
            if section["sh_link"] != elf.get_section_index(".dynsym"):
                continue
            for rel in section.iter_relocations():
                if rel["r_info_sym"]:
                    out.add(dynsym.get_symbol(rel["r_info_sym"]).name)
    return out


def _compare(path: Path, most: int = 300) -> None:
    table = read_symbol_table(path)
    assert table.error is None, (path, table.error)
    defined, undefined, names = by_pyelftools(path)
    assert list(table.undefined) == undefined, path
    assert table.at_load == load_time_by_pyelftools(path) & {n for n, _ in undefined}, path
    assert table.count == len(names) + 1, path
    step = max(1, len(names) // most)
    probes = sorted(set(names))[::step] + [n + "_not_there" for n in names[:10]]
    for name in probes:
        assert table.defines(name) == (name in defined), (path, name)


def test_system_libraries_match_pyelftools() -> None:
    paths = _shared_objects("/usr/lib/x86_64-linux-gnu", 60)
    for lib in ("libvulkan_lvp.so", "libstdc++.so.6", "libc.so.6"):
        paths.append(Path(os.path.realpath(f"/usr/lib/x86_64-linux-gnu/{lib}")))
    paths += _shared_objects("/usr/lib32", 10)
    for p in paths:
        _compare(p)


def test_libllvm_counts_and_references_match_readelf() -> None:
    """libLLVM (46,000 symbols) is too large for pyelftools here; readelf agrees on every one."""
    llvm = sorted(Path("/usr/lib/x86_64-linux-gnu").glob("libLLVM-1*.so.1"))[-1]
    table = read_symbol_table(llvm)
    proc = run(["readelf", "--dyn-syms", "-W", str(llvm)])
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert table.count == len(rows)
    strong_und = [r[7].split("@")[0] for r in rows if r[6] == "UND" and r[4] == "GLOBAL"]
    assert [name for name, _ in table.undefined] == strong_und
    exported = [r[7].split("@")[0] for r in rows if r[6] != "UND" and r[4] in ("GLOBAL", "WEAK")]
    rng = random.Random(7)
    for name in rng.sample(exported, 300):
        assert table.defines(name), name
    assert not table.defines("vkdoctor_no_such_symbol")


SOURCE = """
#include <stdio.h>
extern int absent_fn(void);
int barfoo(void) { return 1; }
int foo(void) { return 2; }
int speak(void) { printf("x\\n"); return absent_fn(); }
"""


def test_every_hash_style_and_class(tmp_path: Path) -> None:
    """GNU hash, SysV hash and both, 64- and 32-bit; foo is tail-merged into barfoo's string."""
    for style in ("gnu", "sysv", "both"):
        for m32 in (False, True):
            lib = build_lib(
                tmp_path / f"{style}{int(m32)}" / "libh.so",
                soname="libh.so",
                source=SOURCE,
                m32=m32,
                flags=[f"-Wl,--hash-style={style}"],
            )
            _compare(lib)
            table = read_symbol_table(lib)
            assert ("absent_fn", False) in table.undefined
            assert ("printf", True) in table.undefined or ("puts", True) in table.undefined
            assert table.defines("foo") and table.defines("barfoo") and table.defines("speak")
            assert not table.defines("oo") and not table.defines("absent_fn")


def test_synthetic_classes_and_byte_orders(tmp_path: Path) -> None:
    symbols = [
        ("hidden_local", "local"),
        ("g_one", "global"),
        ("w_two", "weak"),
        ("u_three", "unique"),
        ("ext_strong", "undef"),
        ("ext_weak", "undef_weak"),
        ("barfoo", "global"),
        ("foo", "global"),
    ]
    for is64, little, machine in [
        (True, True, EM_X86_64),
        (True, False, EM_PPC64),
        (True, False, EM_S390),  # 8-byte DT_HASH words
        (False, True, EM_386),
        (False, False, EM_PPC),
    ]:
        path = tmp_path / f"lib{int(is64)}{int(little)}{machine}.so"
        path.write_bytes(write(Spec(is64=is64, little=little, machine=machine, symbols=symbols)))
        _compare(path)
        table = read_symbol_table(path)
        assert table.undefined == (("ext_strong", False),)
        assert [n for n, _ in symbols if table.defines(n)] == [
            "g_one",
            "w_two",
            "u_three",
            "barfoo",
            "foo",
        ]


def test_broken_tables_are_errors_not_exceptions(tmp_path: Path) -> None:
    symbols = [("g_one", "global"), ("ext", "undef")]
    rng = random.Random(20261130)
    for is64, little in [(True, True), (False, False)]:
        good = write(Spec(is64=is64, little=little, symbols=symbols))
        for n in range(0, len(good), 7):
            path = tmp_path / "cut.so"
            path.write_bytes(good[:n])
            table = read_symbol_table(path)
            assert table.error or table.count <= 3
        for _ in range(300):
            bad = bytearray(good)
            for _ in range(rng.randint(1, 4)):
                bad[rng.randrange(len(bad))] = rng.randrange(256)
            path = tmp_path / "bad.so"
            path.write_bytes(bytes(bad))
            table = read_symbol_table(path)
            table.defines("g_one")
            table.defines(SymbolName("ext"))
    assert "No such file" in (read_symbol_table(tmp_path / "nope.so").error or "")
    (tmp_path / "text.so").write_text("GROUP ( libc.so.6 )\n" * 10)
    assert read_symbol_table(tmp_path / "text.so").error == "not an ELF file"
    no_hash = tmp_path / "nohash.so"
    no_hash.write_bytes(write(Spec()))
    assert read_symbol_table(no_hash).error is not None


def test_unresolved_agrees_with_the_real_dynamic_linker(tmp_path: Path) -> None:
    """A library needing absent_fn (defined nowhere) and provided_fn (defined by a library it
    links): unresolved() names absent_fn only, and dlopen with LD_BIND_NOW fails on it."""
    prov = build_lib(
        tmp_path / "p" / "libprov.so.1",
        soname="libprov.so.1",
        source="int provided_fn(void) { return 3; }\n",
    )
    need = build_lib(
        tmp_path / "n" / "libneed.so",
        soname="libneed.so",
        source="extern int provided_fn(void);\nextern int absent_fn(void);\n"
        "int go(void) { return provided_fn() + absent_fn(); }\n",
        link=[prov],
        runpath=[str(prov.parent)],
    )
    libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
    ctx = Context()
    got = unresolved(ctx, [str(need)], [str(need), str(prov), libc])
    assert got == {str(need): (("absent_fn", False),)}
    # the same question again (another driver of the same run) is answered the same way
    assert unresolved(ctx, [str(need)], [str(need), str(prov), libc]) == got
    # without libprov in the scope, provided_fn is missing too
    assert set(unresolved(ctx, [str(need)], [str(need), libc])[str(need)]) == {
        ("provided_fn", False),
        ("absent_fn", False),
    }
    real = DlopenProbe.build(tmp_path / "probe").load(str(need), env={"LD_BIND_NOW": "1"})
    assert real.error is not None and "undefined symbol: absent_fn" in real.error
    assert symbol_table(ctx, str(need)) is symbol_table(ctx, str(need))


def test_corrupted_gnu_hash_libraries_never_raise(tmp_path: Path) -> None:
    """Seeded corruptions of a real gcc build (GNU hash), aimed at its headers and tables."""
    good = build_lib(tmp_path / "libg.so", soname="libg.so", source=SOURCE).read_bytes()
    rng = random.Random(11)
    path = tmp_path / "bad.so"
    for _ in range(400):
        bad = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(0x40, 0x600)] = rng.randrange(256)
        path.write_bytes(bytes(bad))
        table = read_symbol_table(path)
        table.defines("foo")
        table.defines(SymbolName("absent_fn"))
        assert table.error is not None or table.count < 100


def test_gnu_hash_of_short_and_long_names_is_the_dl_new_hash() -> None:
    def dl_new_hash(raw: bytes) -> int:
        h = 5381
        for c in raw:
            h = (h * 33 + c) & 0xFFFFFFFF
        return h

    names = ["", "a", "printf", "_ZNK4llvm5Value7getNameEv", "é" * 40, "x" * 1023, "y" * 1024]
    names += ["z" * 1025, "_Z" + "N4llvm" * 400]
    for text in names:
        assert SymbolName(text).gnu == dl_new_hash(text.encode("utf-8")), text[:40]
    # fixed values, so that a change to both functions at once is caught too (5381 = 0x1505)
    assert SymbolName("").gnu == 0x00001505
    assert SymbolName("printf").gnu == 0x156B2BB8


def test_relocations_outside_the_plt_are_bound_at_dlopen_even_lazily(tmp_path: Path) -> None:
    """A data reference and a function pointer are bound when the library loads; a call through
    the PLT waits for the first call. The real dlopen (lazy binding) is the oracle."""
    both = build_lib(
        tmp_path / "libboth.so",
        soname="libboth.so",
        source="extern int absent_var;\nextern int absent_fn(void);\nextern int absent_target(void);\n"
        "int (*keep)(void) = absent_target;\n"
        "int get(void) { return absent_var + absent_fn(); }\n",
        flags=["-Wl,-z,lazy"],
    )
    table = read_symbol_table(both)
    assert {"absent_var", "absent_fn", "absent_target"} <= {n for n, _ in table.undefined}
    assert {"absent_var", "absent_target"} <= table.at_load
    assert "absent_fn" not in table.at_load
    probe = DlopenProbe.build(tmp_path / "probe")
    real = probe.load(str(both), env={})
    assert real.error is not None
    assert real.error.split("undefined symbol: ")[1] in ("absent_var", "absent_target")
    calls = build_lib(
        tmp_path / "libcalls.so",
        soname="libcalls.so",
        source="extern int absent_fn(void);\nint get(void) { return absent_fn(); }\n",
        flags=["-Wl,-z,lazy"],
    )
    assert read_symbol_table(calls).at_load == frozenset()
    assert probe.load(str(calls), env={}).error is None
    # the system's libraries: what they bind at load is a subset of what they leave undefined
    for lib in ("libvulkan_lvp.so", "libvulkan_intel.so"):
        t = read_symbol_table(Path("/usr/lib/x86_64-linux-gnu") / lib)
        assert t.error is None and t.at_load and t.at_load <= {n for n, _ in t.undefined}
