"""ld.so emulation against the real dynamic linker: libraries built with gcc, loaded for real."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from elfbuild import DlopenProbe, build_lib, copy, ldso_list, patchelf

from vkdoctor.elf.ldcache import load_cache, parse_cache
from vkdoctor.elf.platform import ldso_platform
from vkdoctor.elf.reader import ElfError, ElfInfo, read_elf
from vkdoctor.elf.resolve import resolve, resolve_soname
from vkdoctor.elf.search import How
from vkdoctor.model.context import Context

PROV_V1 = "PROV_1 { global: prov_one; local: *; };\n"
PROV_V2 = "PROV_1 { global: prov_one; local: *; };\nPROV_2 { global: prov_two; } PROV_1;\n"


@dataclass(frozen=True)
class Lab:
    root: Path
    probe: DlopenProbe


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    """Every library of these tests, built once."""
    root = tmp_path_factory.mktemp("elflab")
    probe = DlopenProbe.build(root / "probe")
    # B exists twice: in r/ (for RPATH) and in l/ (for LD_LIBRARY_PATH)
    for d in ("r", "l"):
        build_lib(
            root / d / "libb.so.1",
            soname="libb.so.1",
            source=f'const char *where(void) {{ return "{d}"; }}\n',
        )
    build_lib(
        root / "a_rpath" / "liba.so",
        soname="liba.so",
        link=[root / "r" / "libb.so.1"],
        rpath=[str(root / "r")],
    )
    build_lib(
        root / "a_runpath" / "liba.so",
        soname="liba.so",
        link=[root / "r" / "libb.so.1"],
        runpath=[str(root / "r")],
    )
    # inheritance: top (RPATH x/) -> mid (nothing) -> leaf, which lives only in x/
    leaf = build_lib(root / "x" / "libleaf.so.1", soname="libleaf.so.1")
    mid = build_lib(root / "m" / "libmid.so.1", soname="libmid.so.1", link=[leaf])
    build_lib(
        root / "top_rpath" / "libtop.so", link=[mid], rpath=[str(root / "x"), str(root / "m")]
    )
    build_lib(
        root / "top_runpath" / "libtop.so", link=[mid], runpath=[str(root / "x"), str(root / "m")]
    )
    # $ORIGIN
    build_lib(root / "o" / "lib" / "libdep.so.2", soname="libdep.so.2")
    build_lib(
        root / "o" / "bin" / "libuser.so",
        link=[root / "o" / "lib" / "libdep.so.2"],
        runpath=["$ORIGIN/../lib"],
    )
    # $LIB and $PLATFORM, placed where this host's ld.so should expand them
    plat = ldso_platform(Context())
    build_lib(root / "dst" / plat.lib / "libdlib.so.1", soname="libdlib.so.1")
    build_lib(root / "dst" / plat.platform / "libdplat.so.1", soname="libdplat.so.1")
    build_lib(
        root / "dst" / "libdstuser.so",
        link=[
            root / "dst" / plat.lib / "libdlib.so.1",
            root / "dst" / plat.platform / "libdplat.so.1",
        ],
        runpath=["$ORIGIN/$LIB", "${ORIGIN}/${PLATFORM}"],
    )
    # classes
    build_lib(root / "c32" / "libcls.so.1", soname="libcls.so.1", m32=True)
    build_lib(root / "c64" / "libcls.so.1", soname="libcls.so.1")
    build_lib(root / "cls_user" / "libclsuser.so", link=[root / "c64" / "libcls.so.1"])
    # versions: consumer linked against v2 needs PROV_2; old/ has a v1-only copy
    prov_src = "int prov_one(void){return 1;}\nint prov_two(void){return 2;}\n"
    new = build_lib(
        root / "new" / "libprov.so.1",
        soname="libprov.so.1",
        source=prov_src,
        version_script=PROV_V2,
    )
    build_lib(
        root / "old" / "libprov.so.1",
        soname="libprov.so.1",
        source="int prov_one(void){return 1;}\n",
        version_script=PROV_V1,
    )
    build_lib(
        root / "vuser" / "libvuser.so",
        source="int prov_two(void);\nint use(void){return prov_two();}\n",
        link=[new],
        runpath=[str(root / "new")],
    )
    # hwcaps: a copy in glibc-hwcaps/x86-64-v2 beats the plain one
    build_lib(root / "hw" / "libhw.so.1", soname="libhw.so.1")
    build_lib(root / "hw" / "glibc-hwcaps" / "x86-64-v2" / "libhw.so.1", soname="libhw.so.1")
    build_lib(root / "hw_user" / "libhwuser.so", link=[root / "hw" / "libhw.so.1"])
    # not ELF where a library is looked for
    (root / "junk").mkdir()
    (root / "junk" / "libb.so.1").write_text("/* GNU ld script */\nINPUT(-lfoo)\n" * 8)
    # preload: libpre.so.1 in p1/ preloaded, another copy in p2/ on LD_LIBRARY_PATH
    for d in ("p1", "p2"):
        build_lib(root / d / "libpre.so.1", soname="libpre.so.1")
    build_lib(root / "pre_user" / "libpreuser.so", link=[root / "p1" / "libpre.so.1"])
    return Lab(root=root, probe=probe)


def ctx_for(**env: str) -> Context:
    return Context(env=env, cwd=Path(os.getcwd()))


def assert_matches_real(
    lab: Lab, target: str, env: dict[str, str], cwd: Path | None = None
) -> None:
    """vkdoctor's predicted error and loaded paths equal what the real dlopen does."""
    ctx = Context(env=env, cwd=cwd or Path.cwd())
    res = resolve(ctx, target)
    real = lab.probe.load(target, env=env, cwd=cwd)
    assert res.predicted_error == real.error, (res.as_dict(), real)
    if real.error is None:
        predicted = {lib.path for lib in res.libraries if not lib.preloaded}
        loaded = set(real.loaded)
        assert predicted <= loaded, (predicted - loaded, res.as_dict())


def test_reader_reads_what_readelf_reads(lab: Lab) -> None:
    info = read_elf(Context(), str(lab.root / "a_rpath" / "liba.so"))
    assert isinstance(info, ElfInfo)
    assert (info.soname, info.needed, info.rpath, info.has_runpath) == (
        "liba.so",
        ("libb.so.1", "libc.so.6"),
        (str(lab.root / "r"),),
        False,
    )
    run = read_elf(Context(), str(lab.root / "a_runpath" / "liba.so"))
    assert isinstance(run, ElfInfo) and run.runpath == (str(lab.root / "r"),) and not run.has_rpath
    v = read_elf(Context(), str(lab.root / "vuser" / "libvuser.so"))
    assert isinstance(v, ElfInfo)
    assert [(n.file, n.versions) for n in v.verneed if n.file == "libprov.so.1"] == [
        ("libprov.so.1", ("PROV_2",))
    ]
    p = read_elf(Context(), str(lab.root / "new" / "libprov.so.1"))
    assert isinstance(p, ElfInfo) and p.verdef == ("PROV_1", "PROV_2")
    c32 = read_elf(Context(), str(lab.root / "c32" / "libcls.so.1"))
    assert isinstance(c32, ElfInfo) and (c32.elf_class, c32.machine) == (32, "EM_386")


def test_reader_bad_files_are_data(tmp_path: Path, lab: Lab) -> None:
    good = (lab.root / "c64" / "libcls.so.1").read_bytes()
    (tmp_path / "trunc.so").write_bytes(good[:40])
    (tmp_path / "cut.so").write_bytes(good[:2000])
    (tmp_path / "empty.so").write_bytes(b"")
    (tmp_path / "text.so").write_text("/* GNU ld script */\n" * 8)
    kinds = {}
    for name in ("trunc.so", "cut.so", "empty.so", "text.so", "nope.so"):
        r = read_elf(Context(), str(tmp_path / name))
        assert isinstance(r, ElfError), name
        kinds[name] = r.kind
    assert kinds == {
        "trunc.so": "truncated",
        "cut.so": kinds["cut.so"],
        "empty.so": "truncated",
        "text.so": "not_elf",
        "nope.so": "missing",
    }
    assert kinds["cut.so"] in ("truncated", "malformed")


def test_each_file_parsed_once_per_context(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    from vkdoctor.elf import reader

    calls: list[str] = []
    real = reader._parse

    def counting(host: Path, path: str, cache_dir: Path | None = None) -> object:
        calls.append(str(host))
        return real(host, path, cache_dir)

    monkeypatch.setattr(reader, "_parse", counting)
    ctx = Context()
    for _ in range(3):
        resolve(ctx, "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so")
    assert len(calls) == len(set(calls))
    assert any("libLLVM-15.so.1" in c for c in calls)


def test_ld_so_cache_matches_ldconfig() -> None:
    cache = load_cache(Context())
    assert cache is not None and cache.error is None
    proc = __import__("subprocess").run(
        ["/sbin/ldconfig", "-p"],
        capture_output=True,
        text=True,
        env={"LC_ALL": "C"},
        timeout=30,
        check=True,
    )
    listed = {
        line.split(" => ")[1].strip() for line in proc.stdout.splitlines()[1:] if " => " in line
    }
    assert {e.path for e in cache.entries} == listed
    assert parse_cache(b"garbage").error is not None


def test_platform_matches_ld_so_help() -> None:
    proc = __import__("subprocess").run(
        ["/lib64/ld-linux-x86-64.so.2", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"LC_ALL": "C"},
        check=False,
    )
    plat = ldso_platform(Context())
    system = [
        line.split()[0] for line in proc.stdout.splitlines() if "(system search path)" in line
    ]
    assert list(plat.system_dirs) == system
    hw = [
        line.split()[0]
        for line in proc.stdout.splitlines()
        if "supported, searched" in line and line.strip().startswith("x86-64-v")
    ]
    assert list(plat.hwcaps) == hw


def test_legacy_hwcaps_match_ld_so_help() -> None:
    """The legacy subdirectories' names and $PLATFORM, as this machine's ld.so lists them."""
    proc = subprocess.run(
        ["/lib64/ld-linux-x86-64.so.2", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"LC_ALL": "C"},
        check=False,
    )
    legacy = proc.stdout.split("Legacy HWCAP subdirectories", 1)[1].splitlines()[1:]
    searched = [line.split()[0] for line in legacy if "searched" in line]
    at_platform = [line.split()[0] for line in legacy if "AT_PLATFORM" in line]
    plat = ldso_platform(Context())
    names = {name for sub in plat.legacy_subdirs for name in sub.split("/")}
    assert names == set(searched)
    assert [plat.platform] == at_platform or plat.platform in ("haswell", "xeon_phi")


def _cpu_root(tmp_path: Path, vendor: str, flags: str) -> Context:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text(
        f"processor\t: 0\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n"
    )
    return Context(root=tmp_path, machine="x86_64")


V3 = (
    "fpu sse sse2 pni ssse3 sse4_1 sse4_2 cx16 lahf_lm popcnt avx avx2 bmi1 bmi2 f16c fma abm movbe"
)
V4 = V3 + " avx512f avx512bw avx512cd avx512dq avx512vl"


@pytest.mark.parametrize(
    ("vendor", "flags", "platform", "subdirs"),
    [
        # glibc 2.36 sysdeps/x86/cpu-features.c: only Intel gets avx512_1 and a platform name
        (
            "AuthenticAMD",
            V4,
            "x86_64",
            "tls/x86_64/x86_64 tls/x86_64 tls/x86_64 tls x86_64/x86_64 x86_64 x86_64",
        ),
        ("AuthenticAMD", V3, "x86_64", None),
        (
            "GenuineIntel",
            V4,
            "haswell",
            "tls/haswell/avx512_1/x86_64 tls/haswell/avx512_1 tls/haswell/x86_64 tls/haswell"
            " tls/avx512_1/x86_64 tls/avx512_1 tls/x86_64 tls haswell/avx512_1/x86_64"
            " haswell/avx512_1 haswell/x86_64 haswell avx512_1/x86_64 avx512_1 x86_64",
        ),
        (
            "GenuineIntel",
            V3,
            "haswell",
            "tls/haswell/x86_64 tls/haswell tls/x86_64 tls haswell/x86_64 haswell x86_64",
        ),
        ("GenuineIntel", V4 + " avx512er avx512pf", "xeon_phi", None),
        ("GenuineIntel", "fpu sse sse2 pni", "x86_64", None),
    ],
)
def test_legacy_hwcaps_per_cpu(
    tmp_path: Path, vendor: str, flags: str, platform: str, subdirs: str | None
) -> None:
    plat = ldso_platform(_cpu_root(tmp_path, vendor, flags))
    assert plat.platform == platform
    if subdirs is not None:
        assert " ".join(plat.legacy_subdirs) == subdirs
    levels = (("x86-64-v4", V4), ("x86-64-v3", V3), ("x86-64-v2", V3))
    want = [level for level, needs in levels if flags.startswith(needs)]
    assert list(plat.hwcaps) == want


def test_search_path_expansion_matches_ld_debug(lab: Lab, tmp_path: Path) -> None:
    """Every subdirectory ld.so tries in an LD_LIBRARY_PATH entry, repeats included, in order."""
    lib = copy(lab.root / "a_runpath" / "liba.so", tmp_path / "liba.so")
    patchelf(lib, "--replace-needed", "libb.so.1", "libnowhere.so.3")
    where = str(lab.root / "l")
    proc = subprocess.run(
        [str(lab.probe.exe), str(lib)],
        capture_output=True,
        text=True,
        env={"LD_LIBRARY_PATH": where, "LD_DEBUG": "libs", "LC_ALL": "C"},
        timeout=60,
        check=False,
    )
    line = next(
        raw
        for raw in proc.stderr.splitlines()
        if "search path=" in raw and raw.rstrip().endswith("(LD_LIBRARY_PATH)")
    )
    real = line.split("search path=", 1)[1].split("\t")[0].split(":")
    plat = ldso_platform(Context())
    assert real == [f"{where}/{sub}" for sub in plat.subdirs()] + [where]


def test_whole_mesa_closure_matches_ld_so_list() -> None:
    ctx = Context()
    for drv in ("intel", "intel_hasvk", "radeon", "lvp"):
        path = f"/usr/lib/x86_64-linux-gnu/libvulkan_{drv}.so"
        res = resolve(ctx, path)
        real = ldso_list(path)
        assert res.ok, res.predicted_error
        ours = {lib.name: lib.path for lib in res.libraries if lib.needed_by is not None}
        for name, p in real.items():
            if name in ours:
                assert ours[name] == p, (drv, name)
        assert set(real) - {"linux-vdso.so.1"} <= set(ours) | {"<error>"}


def test_rpath_beats_ld_library_path_runpath_does_not(lab: Lab) -> None:
    env = {"LD_LIBRARY_PATH": str(lab.root / "l")}
    r1 = resolve(ctx_for(**env), str(lab.root / "a_rpath" / "liba.so"))
    b1 = r1.library("libb.so.1")
    assert b1 is not None and (b1.how, b1.directory) == (How.RPATH, str(lab.root / "r"))
    r2 = resolve(ctx_for(**env), str(lab.root / "a_runpath" / "liba.so"))
    b2 = r2.library("libb.so.1")
    assert b2 is not None and (b2.how, b2.directory) == (How.LD_LIBRARY_PATH, str(lab.root / "l"))
    for sub in ("a_rpath", "a_runpath"):
        assert_matches_real(lab, str(lab.root / sub / "liba.so"), env)


def test_rpath_inherited_runpath_not(lab: Lab) -> None:
    r = resolve(ctx_for(), str(lab.root / "top_rpath" / "libtop.so"))
    leaf = r.library("libleaf.so.1")
    assert leaf is not None and leaf.how is How.RPATH
    assert leaf.chain[-2:] == (str(lab.root / "m" / "libmid.so.1"), leaf.path)
    r2 = resolve(ctx_for(), str(lab.root / "top_runpath" / "libtop.so"))
    assert [m.name for m in r2.misses] == ["libleaf.so.1"]
    miss = r2.misses[0]
    assert miss.needed_by == str(lab.root / "m" / "libmid.so.1")
    assert {t.how for t in miss.tried} >= {How.CACHE, How.DEFAULT}
    assert not any(t.where == str(lab.root / "x") for t in miss.tried)
    assert any(n.path == str(lab.root / "x" / "libleaf.so.1") for n in miss.near) is False
    for sub in ("top_rpath", "top_runpath"):
        assert_matches_real(lab, str(lab.root / sub / "libtop.so"), {})


def test_origin_expansion(lab: Lab) -> None:
    r = resolve(ctx_for(), str(lab.root / "o" / "bin" / "libuser.so"))
    dep = r.library("libdep.so.2")
    assert dep is not None and dep.how is How.RUNPATH
    assert dep.directory == str(lab.root / "o" / "bin" / ".." / "lib")
    assert_matches_real(lab, str(lab.root / "o" / "bin" / "libuser.so"), {})


def test_lib_and_platform_expansion(lab: Lab) -> None:
    target = str(lab.root / "dst" / "libdstuser.so")
    r = resolve(ctx_for(), target)
    assert r.ok and {lib.how for lib in r.libraries if lib.name.startswith("libd")} == {How.RUNPATH}
    assert_matches_real(lab, target, {})


def test_wrong_class_skipped_and_kept_as_evidence(lab: Lab) -> None:
    target = str(lab.root / "cls_user" / "libclsuser.so")
    both = {"LD_LIBRARY_PATH": f"{lab.root / 'c32'}:{lab.root / 'c64'}"}
    r = resolve(ctx_for(**both), target)
    cls = r.library("libcls.so.1")
    assert r.ok and cls is not None and cls.directory == str(lab.root / "c64")
    assert_matches_real(lab, target, both)
    only32 = {"LD_LIBRARY_PATH": str(lab.root / "c32")}
    r32 = resolve(ctx_for(**only32), target)
    assert r32.predicted_error == "libcls.so.1: wrong ELF class: ELFCLASS32"
    assert [t.path for t in r32.misses[0].wrong_class] == [str(lab.root / "c32" / "libcls.so.1")]
    assert_matches_real(lab, target, only32)


def test_missing_version_predicted_like_glibc(lab: Lab) -> None:
    target = str(lab.root / "vuser" / "libvuser.so")
    env = {"LD_LIBRARY_PATH": str(lab.root / "old")}
    r = resolve(ctx_for(**env), target)
    assert len(r.versions) == 1
    v = r.versions[0]
    assert (v.soname, v.missing, v.provider_how) == (
        "libprov.so.1",
        ("PROV_2",),
        How.LD_LIBRARY_PATH,
    )
    assert v.provider_dir == str(lab.root / "old")
    assert_matches_real(lab, target, env)
    assert_matches_real(lab, target, {})


def test_hwcaps_subdirectory_wins(lab: Lab) -> None:
    target = str(lab.root / "hw_user" / "libhwuser.so")
    env = {"LD_LIBRARY_PATH": str(lab.root / "hw")}
    r = resolve(ctx_for(**env), target)
    hw = r.library("libhw.so.1")
    assert hw is not None and "/glibc-hwcaps/x86-64-v2/" in hw.path
    assert_matches_real(lab, target, env)


def test_not_elf_candidate_stops_the_search(lab: Lab) -> None:
    target = str(lab.root / "a_runpath" / "liba.so")
    env = {"LD_LIBRARY_PATH": str(lab.root / "junk")}
    r = resolve(ctx_for(**env), target)
    assert r.predicted_error == f"{lab.root / 'junk' / 'libb.so.1'}: invalid ELF header"
    assert_matches_real(lab, target, env)


def test_empty_ld_library_path_entry_is_cwd(lab: Lab) -> None:
    target = str(lab.root / "a_runpath" / "liba.so")
    env = {"LD_LIBRARY_PATH": ":/nonexistent"}
    r = resolve(Context(env=env, cwd=lab.root / "l"), target)
    b = r.library("libb.so.1")
    assert b is not None and b.how is How.LD_LIBRARY_PATH and b.directory == ""
    assert b.path == "libb.so.1" and b.realpath == str(lab.root / "l" / "libb.so.1")
    assert_matches_real(lab, target, env, cwd=lab.root / "l")


def test_empty_ld_library_path_is_ignored(lab: Lab) -> None:
    target = str(lab.root / "a_runpath" / "liba.so")
    r = resolve(Context(env={"LD_LIBRARY_PATH": ""}, cwd=lab.root / "l"), target)
    b = r.library("libb.so.1")
    assert b is not None and b.how is How.RUNPATH
    assert_matches_real(lab, target, {"LD_LIBRARY_PATH": ""}, cwd=lab.root / "l")


def test_elevated_ignores_ld_library_path(lab: Lab) -> None:
    env = {"LD_LIBRARY_PATH": str(lab.root / "l")}
    r = resolve(Context(env=env, elevated=True), str(lab.root / "a_runpath" / "liba.so"))
    b = r.library("libb.so.1")
    assert b is not None and b.how is How.RUNPATH
    assert any(
        t.outcome == "skipped" and t.how is How.LD_LIBRARY_PATH
        for t in resolve_soname(Context(env=env, elevated=True), "libnothere.so.9").tried
    )


def test_preloaded_library_wins_over_search(lab: Lab) -> None:
    env = {
        "LD_PRELOAD": str(lab.root / "p1" / "libpre.so.1"),
        "LD_LIBRARY_PATH": str(lab.root / "p2"),
    }
    target = str(lab.root / "pre_user" / "libpreuser.so")
    r = resolve(ctx_for(**env), target)
    pre = r.library("libpre.so.1")
    assert pre is not None and pre.preloaded and pre.how is How.PRELOAD
    assert pre.path == str(lab.root / "p1" / "libpre.so.1")
    assert_matches_real(lab, target, env)


def test_missing_soname_lists_places_and_family(lab: Lab, tmp_path: Path) -> None:
    lib = copy(lab.root / "vuser" / "libvuser.so", tmp_path / "libneedsv9.so")
    patchelf(lib, "--replace-needed", "libprov.so.1", "libprov.so.9")
    env = {"LD_LIBRARY_PATH": str(lab.root / "old")}
    r = resolve(ctx_for(**env), str(lib))
    assert (
        r.predicted_error
        == "libprov.so.9: cannot open shared object file: No such file or directory"
    )
    miss = r.misses[0]
    assert miss.needed_by == str(lib)
    assert [t.where for t in miss.tried if t.how is How.LD_LIBRARY_PATH] == [str(lab.root / "old")]
    assert [n.path for n in miss.near if n.kind == "other-version"][:1] == [
        str(lab.root / "old" / "libprov.so.1")
    ]
    assert_matches_real(lab, str(lib), env)


def test_root_tree_with_its_own_cache(tmp_path: Path, lab: Lab) -> None:
    """--root: a tree with its own ld.so.conf and ld.so.cache built by the real ldconfig."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "opt" / "vendor").mkdir(parents=True)
    (root / "lib64").mkdir()
    shutil.copy(lab.root / "c64" / "libcls.so.1", root / "opt" / "vendor" / "libcls.so.1")
    build_lib(root / "usr" / "lib" / "libclsuser.so", link=[lab.root / "c64" / "libcls.so.1"])
    (root / "etc" / "ld.so.conf").write_text("include ld.so.conf.d/*.conf\n")
    (root / "etc" / "ld.so.conf.d").mkdir()
    (root / "etc" / "ld.so.conf.d" / "vendor.conf").write_text("/opt/vendor\n")
    proc = __import__("subprocess").run(
        ["/sbin/ldconfig", "-r", str(root)], capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == 0, proc.stderr
    ctx = Context(root=root)
    r = resolve(ctx, "/usr/lib/libclsuser.so", caller="executable")
    cls = r.library("libcls.so.1")
    assert cls is not None and (cls.how, cls.path) == (How.CACHE, "/opt/vendor/libcls.so.1")
    # moved to another ld.so.conf directory after the cache was built: the cache still names
    # the old path, and ld.so (which reads only the cache) fails; ldconfig is the fix
    (root / "opt" / "other").mkdir()
    (root / "etc" / "ld.so.conf.d" / "other.conf").write_text("/opt/other\n")
    (root / "opt" / "vendor" / "libcls.so.1").rename(root / "opt" / "other" / "libcls.so.1")
    moved = resolve(Context(root=root), "/usr/lib/libclsuser.so", caller="executable")
    miss = next(m for m in moved.misses if m.name == "libcls.so.1")
    assert [(n.kind, n.path) for n in miss.near] == [("stale-cache", "/opt/other/libcls.so.1")]
    from vkdoctor.elf.explain import places_tried

    assert (
        "ld.so.cache (lists /opt/vendor/libcls.so.1, which is gone: run ldconfig)"
        in places_tried(miss.tried, Context(root=root))
    )
    (root / "etc" / "ld.so.cache").unlink()
    r2 = resolve(Context(root=root), "/usr/lib/libclsuser.so", caller="executable")
    miss = next(m for m in r2.misses if m.name == "libcls.so.1")
    assert [(n.kind, n.path) for n in miss.near] == [("stale-cache", "/opt/other/libcls.so.1")]


def _ld_debug_places(stderr: str, name: str, subdirs: tuple[str, ...]) -> list[str]:
    """The directories (and the cache) LD_DEBUG=libs shows ld.so searching for `name`."""
    places: list[str] = []
    active = False
    for raw in stderr.splitlines():
        line = raw.split(":", 1)[1].strip() if ":" in raw else raw.strip()
        if line.startswith("find library="):
            active = line.startswith(f"find library={name} ")
            continue
        if not active:
            continue
        if line.startswith("search cache="):
            places.append("<cache>")
        elif line.startswith("search path="):
            for entry in line[len("search path=") :].split("\t")[0].split(":"):
                base = entry
                for sub in subdirs:
                    if entry.endswith("/" + sub):
                        base = entry[: -len(sub) - 1]
                        break
                if base not in places:
                    places.append(base)
        elif (not line or line.startswith("calling init")) and places:
            active = False
    return places


def test_places_tried_match_ld_debug(lab: Lab, tmp_path: Path) -> None:
    lib = copy(lab.root / "a_runpath" / "liba.so", tmp_path / "liba.so")
    patchelf(lib, "--replace-needed", "libb.so.1", "libnowhere.so.3")
    env = {"LD_LIBRARY_PATH": f"{lab.root / 'l'}:/nonexistent/dir:{lab.root / 'c32'}"}
    res = resolve(ctx_for(**env), str(lib))
    miss = res.misses[0]
    ours = [("<cache>" if t.how is How.CACHE else t.where) for t in miss.tried]
    proc = subprocess.run(
        [str(lab.probe.exe), str(lib)],
        capture_output=True,
        text=True,
        env={**env, "LD_DEBUG": "libs", "LC_ALL": "C"},
        timeout=60,
        check=False,
    )
    real = _ld_debug_places(proc.stderr, "libnowhere.so.3", ldso_platform(Context()).subdirs())
    assert real, proc.stderr[-2000:]
    # the same places in the same order; vkdoctor also lists directories that do not exist,
    # which ld.so had already struck off while loading the program
    assert [p for p in ours if p in real] == real
    assert all(not Path(p).exists() for p in ours if p not in real)
    assert ours[-5:] == ["<cache>", *ldso_platform(Context()).system_dirs]


def test_what_if_extra_directory(lab: Lab) -> None:
    """The overlay's question: resolution with one more LD_LIBRARY_PATH entry in front."""
    from vkdoctor.elf.search import SearchInputs

    ctx = ctx_for()
    target = str(lab.root / "top_runpath" / "libtop.so")
    before = resolve(ctx, target)
    inputs = SearchInputs.from_context(ctx, prepend=[str(lab.root / "x")])
    after = resolve(ctx, target, inputs=inputs)
    assert [m.name for m in before.misses] == ["libleaf.so.1"] and after.ok
    leaf = after.library("libleaf.so.1")
    assert leaf is not None and (leaf.how, leaf.directory) == (
        How.LD_LIBRARY_PATH,
        str(lab.root / "x"),
    )
    same = {lib.name: lib.path for lib in before.libraries}
    assert {lib.name: lib.path for lib in after.libraries if lib.name in same} == same


def test_the_system_directories_are_found_as_the_pattern_finds_them_anywhere() -> None:
    """`_first_run` skips to the first "/\\0/"; the pattern tried at every position is the
    oracle, on ld.so itself and on random strings of slashes, names and NULs."""
    import random

    from vkdoctor.elf import platform

    ldso = Path("/lib64/ld-linux-x86-64.so.2").read_bytes()
    found = platform._first_run(ldso)
    assert found is not None and b"/usr/lib/x86_64-linux-gnu/\x00" in found.group()
    assert found.span() == platform._SYSDIRS.search(ldso).span()  # type: ignore[union-attr]
    rng = random.Random(7)
    parts = [b"/", b"\x00", b"a", b"usr", b"-", b" ", b"/lib/\x00", b"\xff"]
    for _ in range(3000):
        data = b"".join(rng.choice(parts) for _ in range(rng.randrange(30)))
        want = platform._SYSDIRS.search(data)
        got = platform._first_run(data)
        assert (got and got.span()) == (want and want.span()), data
