"""VKL checks and VKH002 on real failures: the seed's lavapipe, a shadowing libstdc++, the loader."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import HOST, clean_env, run_vkdoctor, validate_report
from elfbuild import DlopenProbe, build_lib, copy, patchelf

from vkdoctor.checks import libraries
from vkdoctor.closures import targets as closures
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model import Finding, Report, Severity
from vkdoctor.model.context import Context, Options
from vkdoctor.runner import run_checks

SYSLIB = Path("/usr/lib/x86_64-linux-gnu")
MESA = ("intel", "intel_hasvk", "radeon", "lvp")


@dataclass(frozen=True)
class SeedLab:
    root: Path
    driver: Path
    manifest: Path
    llvm_dir: Path
    shadow_dir: Path
    lib32: Path
    probe: DlopenProbe


def _shadow_map() -> str:
    """Version nodes GLIBCXX_3.4 .. 3.4.29 and CXXABI_1.3 .. 1.3.13 (a GCC 11 libstdc++), as in
    the reference lab's shadow-old.map."""
    nodes = [f"GLIBCXX_3.4.{i}" for i in range(1, 30)] + ["GLIBCXX_3.4"]
    nodes += [f"CXXABI_1.3.{i}" for i in range(1, 14)] + ["CXXABI_1.3"]
    return "".join(f"{n} {{ }};\n" for n in nodes)


@pytest.fixture(scope="session")
def seed(tmp_path_factory: pytest.TempPathFactory) -> SeedLab:
    root = tmp_path_factory.mktemp("seed")
    # lavapipe rebuilt against an LLVM the system does not have
    driver = copy(SYSLIB / "libvulkan_lvp.so", root / "drv" / "libvulkan_lvp.so")
    patchelf(driver, "--replace-needed", "libLLVM-15.so.1", "libLLVM.so.23.1")
    llvm = copy(SYSLIB / "libLLVM-15.so.1", root / "private-llvm" / "libLLVM.so.23.1")
    patchelf(llvm, "--set-soname", "libLLVM.so.23.1")
    manifest = root / "lvp_icd.x86_64.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(driver), "api_version": "1.3.230"},
            }
        )
    )
    # a libstdc++.so.6 that stops at GLIBCXX_3.4.29
    shadow = build_lib(
        root / "shadow" / "libstdc++.so.6",
        soname="libstdc++.so.6",
        source="void shadow_stub(void) {}\n",
        version_script=_shadow_map(),
    )
    lib32 = build_lib(
        root / "lib32" / "libvulkan_fake32.so", soname="libvulkan_fake32.so", m32=True
    )
    return SeedLab(
        root=root,
        driver=driver,
        manifest=manifest,
        llvm_dir=llvm.parent,
        shadow_dir=shadow.parent,
        lib32=lib32,
        probe=DlopenProbe.build(root / "p"),
    )


def driver(name: str, path: str | Path, manifest: str = "/m.json") -> LoadTarget:
    return LoadTarget(kind="driver", name=name, manifest=manifest, dlopen_name=str(path))


def mesa_targets() -> list[LoadTarget]:
    return [
        driver(
            f"{d}_icd.x86_64.json",
            SYSLIB / f"libvulkan_{d}.so",
            f"/usr/share/vulkan/icd.d/{d}_icd.x86_64.json",
        )
        for d in MESA
    ]


def run(
    monkeypatch: pytest.MonkeyPatch,
    ctx: Context,
    targets: Sequence[LoadTarget],
    codes: Sequence[str] = ("VKL001", "VKL002", "VKL003", "VKL004", "VKL006"),
) -> list[Finding]:
    monkeypatch.setattr(closures, "targets", lambda _ctx: tuple(targets))
    checks = [c for c in libraries.CHECKS if c.code in codes]
    results = run_checks(ctx, checks)
    report = Report(vkdoctor_version="test", host=HOST, checks=results)
    doc = json.loads(json.dumps(report.as_dict()))
    validate_report(doc)
    return [f for r in results for f in r.findings]


def bad(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity.rank >= Severity.INFO.rank]


def test_healthy_mesa_drivers_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = run(monkeypatch, Context(), mesa_targets())
    assert bad(findings) == []
    oks = [f for f in findings if f.code == "VKL001"]
    assert [f.evidence["path"] for f in oks] == [str(SYSLIB / f"libvulkan_{d}.so") for d in MESA]
    lvp = {lib["name"]: lib for lib in oks[-1].evidence["libraries"]}
    assert lvp["libLLVM-15.so.1"]["how"] == "ld.so.cache"
    assert lvp["libLLVM-15.so.1"]["path"] == "/lib/x86_64-linux-gnu/libLLVM-15.so.1"
    assert lvp["libc.so.6"]["how"] == "ld.so.cache"  # loaded with libvulkan, before the driver
    assert lvp["libstdc++.so.6"]["needed_by"] == str(SYSLIB / "libvulkan_lvp.so")


def test_seed_failure_missing_llvm_soname(monkeypatch: pytest.MonkeyPatch, seed: SeedLab) -> None:
    target = driver("lvp_icd.x86_64.json", seed.driver, str(seed.manifest))
    ctx = Context(options=Options(search_paths=(seed.llvm_dir,)))
    findings = bad(run(monkeypatch, ctx, [target]))
    # the driver file itself is found (no check mark: not all it needs is); the miss is VKL002's
    assert [(f.code, f.severity) for f in findings] == [
        ("VKL001", Severity.INFO),
        ("VKL002", Severity.FAIL),
    ]
    assert findings[0].title == f"lvp_icd.x86_64.json: {seed.driver} found, but not all it needs"
    f = findings[1]
    assert "libLLVM.so.23.1" in f.title
    assert f"{seed.driver} needs libLLVM.so.23.1; ld.so cannot find libLLVM.so.23.1" in f.message
    assert "system directories /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu" in f.message
    assert "/lib/x86_64-linux-gnu/libLLVM-15.so.1: another version" in f.message
    assert f"{seed.llvm_dir}/libLLVM.so.23.1: right name" in f.message
    assert f.fix() is not None and str(seed.llvm_dir) in f.fix()
    near = {n["path"]: n["kind"] for n in f.evidence["near_misses"]}
    assert near["/lib/x86_64-linux-gnu/libLLVM-15.so.1"] == "other-version"
    # the real loader, restricted to this manifest, fails the same way
    real = subprocess.run(
        ["vulkaninfo", "--summary"],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env({"VK_DRIVER_FILES": str(seed.manifest), "LC_ALL": "C"}),
        check=False,
    )
    assert f.evidence["error"] in real.stdout + real.stderr
    assert "Failed loading library associated with ICD JSON" in real.stdout + real.stderr
    # and with the private LLVM on LD_LIBRARY_PATH it loads, as vkdoctor predicts
    env = {"LD_LIBRARY_PATH": str(seed.llvm_dir)}
    fixed = run(monkeypatch, Context(env=env), [target])
    assert [(f.code, f.severity) for f in bad(fixed)] == [("VKL004", Severity.WARN)]
    assert seed.probe.load(str(seed.driver), env=env).error is None


def test_libstdcxx_shadowing(monkeypatch: pytest.MonkeyPatch, seed: SeedLab) -> None:
    env = {"LD_LIBRARY_PATH": str(seed.shadow_dir)}
    findings = bad(run(monkeypatch, Context(env=env), mesa_targets()))
    versions = [f for f in findings if f.code == "VKL003"]
    assert len(versions) == 1
    f = versions[0]
    assert f.severity is Severity.FAIL
    assert f.title == f"GLIBCXX_3.4.30 not found in {seed.shadow_dir}/libstdc++.so.6"
    assert (
        "/lib/x86_64-linux-gnu/libLLVM-15.so.1 needs GLIBCXX_3.4.30 from libstdc++.so.6"
        in f.message
    )
    assert f"{seed.shadow_dir} shadows /lib/x86_64-linux-gnu/libstdc++.so.6" in f.message
    assert "defines only up to GLIBCXX_3.4.29" in f.message
    assert sorted(f.evidence["targets"]) == ["lvp_icd.x86_64.json", "radeon_icd.x86_64.json"]
    assert f.fix() is not None and f"Remove {seed.shadow_dir} from LD_LIBRARY_PATH" in f.fix()
    # the error vkdoctor predicts is the one dlopen really gives
    for d in ("lvp", "radeon"):
        real = seed.probe.load(str(SYSLIB / f"libvulkan_{d}.so"), env=env)
        assert real.error == (
            f"{seed.shadow_dir}/libstdc++.so.6: version `GLIBCXX_3.4.30' not "
            "found (required by /lib/x86_64-linux-gnu/libLLVM-15.so.1)"
        )
        assert real.error in f.message
    shadow_warn = [f for f in findings if f.code == "VKL004"]
    assert len(shadow_warn) == 1
    assert "shadows the system copy /lib/x86_64-linux-gnu/libstdc++.so.6" in shadow_warn[0].message
    assert shadow_warn[0].fix() is not None
    assert f"Take {seed.shadow_dir} off LD_LIBRARY_PATH" in shadow_warn[0].fix()
    assert f"vkdoctor exec --search-path {seed.shadow_dir} -- CMD" in shadow_warn[0].fix()
    # `overlay` only adds what is missing: it says it cannot fix a shadow, and what does
    proc = run_vkdoctor(["overlay", "--format", "json"], env=env)
    assert proc.returncode == 1 and proc.stdout.strip() == "null"
    assert "an overlay cannot fix this: no library is missing, but GLIBCXX_3.4.30 not found" in (
        proc.stderr
    )
    assert f"fix: Remove {seed.shadow_dir} from LD_LIBRARY_PATH" in proc.stderr
    # `drivers` counts them all in its last line
    proc = run_vkdoctor(["drivers"], env=env)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1].startswith("vkdoctor: FAIL: 0 of 4 drivers can load; ")
    # exec runs the command, and says so too
    proc = run_vkdoctor(["exec", "--", "true"], env=env)
    assert proc.returncode == 0
    assert "vkdoctor exec: an overlay cannot fix this: no library is missing" in proc.stderr


def test_an_older_libstdcxx_is_one_failure_for_all_its_users(
    monkeypatch: pytest.MonkeyPatch, seed: SeedLab, tmp_path: Path
) -> None:
    """A GCC 8 libstdc++ (GLIBCXX_3.4.25, CXXABI_1.3.11) on LD_LIBRARY_PATH: lavapipe, LLVM,
    z3 and ICU each need a different set of versions from it, and the fix is one. The conda
    remedy is only for a directory that is a conda environment."""
    nodes = [f"GLIBCXX_3.4.{i}" for i in range(1, 26)] + ["GLIBCXX_3.4"]
    nodes += [f"CXXABI_1.3.{i}" for i in range(1, 12)] + ["CXXABI_1.3"]
    prefix = tmp_path / "envs" / "ml"
    old = build_lib(
        prefix / "lib" / "libstdc++.so.6",
        soname="libstdc++.so.6",
        source="void shadow_stub(void) {}\n",
        version_script="".join(f"{n} {{ }};\n" for n in nodes),
    )
    env = {"LD_LIBRARY_PATH": str(old.parent)}
    (f,) = [
        f for f in bad(run(monkeypatch, Context(env=env), mesa_targets())) if f.code == "VKL003"
    ]
    assert f.severity is Severity.FAIL
    assert f.title == f"GLIBCXX_3.4.26 to GLIBCXX_3.4.30, CXXABI_1.3.13 not found in {old}"
    for needs in ("libLLVM-15.so.1 (CXXABI_1.3.13", "libz3.so.4 (GLIBCXX_3.4.30"):
        assert needs in f.message
    assert {"GLIBCXX_3.4.26", "GLIBCXX_3.4.29", "GLIBCXX_3.4.30", "CXXABI_1.3.13"} <= set(
        f.evidence["missing"]
    )
    # each driver's error, as dlopen really gives it
    for d in ("lvp", "radeon"):
        real = seed.probe.load(str(SYSLIB / f"libvulkan_{d}.so"), env=env)
        assert real.error and f'"{real.error}" for {d}_icd.x86_64.json' in f.message
    assert f.fix() == (
        f"Remove {old.parent} from LD_LIBRARY_PATH for Vulkan programs so that "
        "/lib/x86_64-linux-gnu/libstdc++.so.6 is used."
    )
    # the packages' side: one finding for the copy too
    proc = run_vkdoctor(
        ["check", "--no-probe", "--select", "VKL003,VKP005", "--json", "-"], env=env
    )
    doc = json.loads(proc.stdout)
    (owner,) = [f for f in doc["findings"] if f["code"] == "VKP005"]
    assert owner["title"] == (
        "libstdc++.so.6: GLIBCXX_3.4.30, CXXABI_1.3.13 missing from the copy that wins"
    )
    assert [f["severity"] for f in doc["findings"] if f["code"] == "VKL003"] == ["fail"]
    # a second old copy later on LD_LIBRARY_PATH would win once the first is gone: both named
    two = {"LD_LIBRARY_PATH": f"{old.parent}:{seed.shadow_dir}"}
    (f2,) = [
        f for f in bad(run(monkeypatch, Context(env=two), mesa_targets())) if f.code == "VKL003"
    ]
    assert f2.fix() is not None
    assert f2.fix().startswith(f"Remove {old.parent} and {seed.shadow_dir} from LD_LIBRARY_PATH")
    (prefix / "conda-meta").mkdir()
    (f,) = [
        f for f in bad(run(monkeypatch, Context(env=env), mesa_targets())) if f.code == "VKL003"
    ]
    assert f.fix() is not None
    assert f.fix().endswith(
        f"In a conda environment, update its C++ runtime instead: `conda install -p {prefix} "
        "-c conda-forge 'libstdcxx-ng>=12'`."
    )


def test_a_private_libstdcxx_is_one_failure_with_the_packages_view_beside_it(
    monkeypatch: pytest.MonkeyPatch, seed: SeedLab
) -> None:
    from vkdoctor.checks.packages import MissingVersionOwner

    env = {"LD_LIBRARY_PATH": str(seed.shadow_dir)}
    monkeypatch.setattr(closures, "targets", lambda _ctx: tuple(mesa_targets()))
    checks = [c for c in libraries.CHECKS if c.code == "VKL003"] + [MissingVersionOwner]
    results = run_checks(Context(env=env), checks)
    by = {f.code: f for r in results for f in r.findings}
    assert by["VKL003"].severity is Severity.FAIL
    # the packages know only that the copy is nobody's: VKL003 says how it comes to win
    assert by["VKP005"].severity is Severity.INFO
    assert "(no package: bundled by an application or copied by hand)" in by["VKP005"].message
    assert "/lib/x86_64-linux-gnu/libstdc++.so.6 (libstdc++6:amd64" in by["VKP005"].message
    # one finding for the copy and version, every library that needs it named once (lavapipe
    # and radv both load libLLVM: it is not repeated per driver)
    (vkp,) = [f for r in results for f in r.findings if f.code == "VKP005"]
    consumers = vkp.evidence["consumers"]
    assert "/lib/x86_64-linux-gnu/libLLVM-15.so.1" in consumers
    assert len(consumers) == len(set(consumers)) >= 2
    assert f"{consumers[0]} (" in vkp.message and " need GLIBCXX_3.4.30 from " in vkp.message


def test_driver_library_missing_and_wrong_class(
    monkeypatch: pytest.MonkeyPatch, seed: SeedLab, tmp_path: Path
) -> None:
    targets = [
        driver("gone_icd.json", tmp_path / "libvulkan_gone.so"),
        driver("fake32_icd.i686.json", seed.lib32),
        LoadTarget(
            kind="layer",
            name="VK_LAYER_nothere",
            manifest="/l.json",
            dlopen_name="libVkLayer_nothere.so",
        ),
    ]
    findings = bad(run(monkeypatch, Context(), targets, ("VKL001",)))
    by = {f.evidence["target"]: f for f in findings}
    assert by["gone_icd.json"].severity is Severity.FAIL
    assert (
        f"{tmp_path}/libvulkan_gone.so: cannot open shared object file"
        in by["gone_icd.json"].message
    )
    assert by["fake32_icd.i686.json"].severity is Severity.INFO
    assert "ELFCLASS32" in by["fake32_icd.i686.json"].title
    layer = by["VK_LAYER_nothere"]
    assert layer.severity is Severity.WARN
    assert "ld.so.cache" in layer.message and "/usr/lib/x86_64-linux-gnu" in layer.message
    real = seed.probe.load(str(seed.lib32))
    assert real.error == f"{seed.lib32}: wrong ELF class: ELFCLASS32"
    assert by["fake32_icd.i686.json"].evidence["error"] == real.error


def test_vulkan_loader_found_with_version(monkeypatch: pytest.MonkeyPatch) -> None:
    (f,) = run(monkeypatch, Context(), [], ("VKH002",))
    assert f.severity is Severity.OK
    assert f.title == "Vulkan loader 1.3.239"
    assert f.evidence["realpath"] == "/usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.239"
    assert f.evidence["how"] == "ld.so.cache"


@pytest.mark.parametrize(
    ("distro", "command"),
    [
        ("debian", "sudo apt install libvulkan1"),
        ("arch", "sudo pacman -S vulkan-icd-loader"),
        ("fedora", "sudo dnf install vulkan-loader"),
    ],
)
def test_no_vulkan_loader_fails_with_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, distro: str, command: str
) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text(f"ID={distro}\n")
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    (f,) = run(monkeypatch, Context(root=tmp_path), [], ("VKH002",))
    assert f.severity is Severity.FAIL
    assert "libvulkan.so.1: cannot open shared object file" in f.message
    assert f.fix() == command


def test_wgpu_native(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (ok,) = run(monkeypatch, Context(), [], ("VKL005",))
    assert ok.severity is Severity.OK
    assert ok.evidence["path"].endswith("wgpu/resources/libwgpu_native-release.so")
    assert ok.evidence["source"] == "resources"
    broken = copy(ok.evidence["path"], tmp_path / "libwgpu_native.so")
    patchelf(broken, "--add-needed", "libnot-there.so.7")
    env = {"WGPU_LIB_PATH": str(broken)}
    (f,) = run(monkeypatch, Context(env=env), [], ("VKL005",))
    assert f.severity is Severity.FAIL
    assert "libnot-there.so.7: cannot open shared object file" in f.message
    assert f.evidence["source"] == "WGPU_LIB_PATH"
    # a 32-bit build: the headline says so, not "cannot be loaded" with unrelated near misses
    i386 = build_lib(tmp_path / "32" / "libwgpu_native.so", m32=True)
    env = {"WGPU_LIB_PATH": str(i386)}
    (f,) = run(monkeypatch, Context(env=env), [], ("VKL005",))
    assert f.severity is Severity.FAIL
    assert f.title.startswith("wgpu-native from WGPU_LIB_PATH is not for this x86_64 process")
    assert "wrong ELF class: ELFCLASS32" in f.message  # dlerror's text
    assert f.fix() == (
        "Point WGPU_LIB_PATH at a libwgpu_native built for x86_64, or unset it to use wgpu-py's "
        "own copy."
    )


def test_undefined_symbol_from_a_shadowing_build(
    monkeypatch: pytest.MonkeyPatch, seed: SeedLab, tmp_path: Path
) -> None:
    """A same-soname library without versions that lacks a function (the AMDGPU-PRO libdrm case)."""
    full = build_lib(
        tmp_path / "sys" / "libdrmx.so.2",
        soname="libdrmx.so.2",
        source="int drmx_old(void){return 1;}\nint drmx_new(void){return 2;}\n",
    )
    build_lib(
        tmp_path / "vendor" / "libdrmx.so.2",
        soname="libdrmx.so.2",
        source="int drmx_old(void){return 1;}\n",
    )
    src = "int drmx_new(void);\nint vk_icdGetInstanceProcAddr(void){return drmx_new();}\n"
    now = build_lib(
        tmp_path / "drv" / "libvulkan_now.so",
        source=src,
        link=[full],
        runpath=[str(full.parent)],
        flags=["-Wl,-z,now"],
    )
    lazy = build_lib(
        tmp_path / "drv" / "libvulkan_lazy.so",
        source=src,
        link=[full],
        runpath=[str(full.parent)],
        flags=["-Wl,-z,lazy"],
    )
    # lazily bound too, but it takes the function's address: ld.so binds that at load
    pointer = build_lib(
        tmp_path / "drv" / "libvulkan_pointer.so",
        source="int drmx_new(void);\nint (*hook)(void) = drmx_new;\n"
        "int vk_icdGetInstanceProcAddr(void){return hook();}\n",
        link=[full],
        runpath=[str(full.parent)],
        flags=["-Wl,-z,lazy"],
    )
    targets = [
        driver("now_icd.json", now),
        driver("lazy_icd.json", lazy),
        driver("pointer_icd.json", pointer),
    ]
    assert bad(run(monkeypatch, Context(), targets, ("VKL006",))) == []
    env = {"LD_LIBRARY_PATH": str(tmp_path / "vendor")}
    findings = {
        f.evidence["path"]: f for f in bad(run(monkeypatch, Context(env=env), targets, ("VKL006",)))
    }
    f_now, f_lazy, f_pointer = findings[str(now)], findings[str(lazy)], findings[str(pointer)]
    assert (f_now.severity, f_lazy.severity) == (Severity.FAIL, Severity.WARN)
    assert f_now.evidence["symbols"] == ["drmx_new"] == f_lazy.evidence["symbols"]
    real_now = seed.probe.load(str(now), env=env)
    assert real_now.error == f"{now}: undefined symbol: drmx_new"
    assert real_now.error in f_now.message
    assert seed.probe.load(str(lazy), env=env).error is None
    assert "symbol lookup error" in f_lazy.message
    # the real dlopen is the oracle: the pointer's relocation fails it, lazy binding or not
    assert f_pointer.severity is Severity.FAIL
    assert f_pointer.evidence["bound_at_dlopen"] == ["drmx_new"]
    assert "a relocation outside the PLT" in f_pointer.message
    real_pointer = seed.probe.load(str(pointer), env=env)
    assert real_pointer.error == f"{pointer}: undefined symbol: drmx_new"
    assert real_pointer.error in f_pointer.message


def test_seed_failure_names_the_closest_version_and_the_package_to_look_for(seed: SeedLab) -> None:
    """Without a search path: the remedy points at the nearest LLVM (libLLVM-15, not -14), and
    the package rule names Debian's libllvm23 as the one a private copy should come from."""
    from conftest import run_json

    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKL002", "--select", "VKP002"],
        env={"VK_DRIVER_FILES": str(seed.manifest)},
    )
    (vkl,) = [f for f in doc["findings"] if f["code"] == "VKL002"]
    # the reason is the message's; the fix says how to find the private build's copy
    assert (
        "Only other versions of this library are installed (/lib/x86_64-linux-gnu/libLLVM-15.so.1)"
        in vkl["message"]
    )
    assert vkl["remedy"].startswith(
        "`find / -name 'libLLVM*23*' -not -path '*/vkdoctor/overlays/*' 2>/dev/null`, then "
    )
    (vkp,) = [f for f in doc["findings"] if f["code"] == "VKP002"]
    assert (
        "but libllvm15:amd64 " in vkp["message"]
        and "provides only libLLVM-15.so.1" in vkp["message"]
    )
    assert "libLLVM.so.23.1 from the matching libllvm23 package (VKO001)" in vkp["message"]


def test_a_stale_libz_on_ld_library_path_is_named_as_the_cause(tmp_path: Path) -> None:
    """A stub libz.so.1 first on LD_LIBRARY_PATH: one finding names it, the system copy that has
    the symbols, and the fix; the real load test fails for exactly the drivers it says."""
    from conftest import run_json

    stub = build_lib(
        tmp_path / "stale" / "libz.so.1", soname="libz.so.1", source="int zstub(void){return 0;}\n"
    )
    env = {"LD_LIBRARY_PATH": str(stub.parent)}
    _, doc = run_json(["check", "--no-probe", "--select", "VKL006", "--select", "VKT"], env=env)
    (f,) = [x for x in doc["findings"] if x["code"] == "VKL006"]
    assert f["severity"] == "fail"
    n = len(f["evidence"]["symbols"])
    assert f["title"] == (
        f"libz.so.1, found through LD_LIBRARY_PATH ({stub.parent}), lacks {n} symbol(s) the "
        "system's copy has"
    )
    assert f["evidence"]["system_copy"].endswith("/x86_64-linux-gnu/libz.so.1")
    assert {"inflateReset", "crc32"} <= set(f["evidence"]["symbols"])
    assert f["remedy"].startswith(f"Take {stub.parent} off LD_LIBRARY_PATH (unset LD_LIBRARY_PATH)")
    # the real load is the oracle: exactly the drivers said to fail at dlopen fail there, and
    # VKT001 confirms the prediction instead of counting as a second failure
    not_loaded = [
        x for x in doc["findings"] if x["code"] == "VKT001" and x["evidence"]["dlopen"] == "failed"
    ]
    failed = {x["evidence"]["name"] for x in not_loaded}
    assert failed and failed == set(f["evidence"]["dlopen_fails"])
    assert {x["severity"] for x in not_loaded} == {"info"}
    assert all(x["title"].endswith("as the library findings predicted") for x in not_loaded)
    (agree,) = [x for x in doc["findings"] if x["code"] == "VKT004"]
    assert agree["severity"] == "ok", agree
    # the report's driver rows say it too, from the prediction the real load confirmed
    rows = {Path(r["manifest"]).name: r for r in doc["drivers"]}
    for name in failed:
        assert rows[name]["verdict"] == "fail"
        assert "undefined symbol: " in rows[name]["predicted_error"]
        assert rows[name]["load"]["dlopen"] == "failed"


def test_drivers_command_fails_a_driver_whose_library_cannot_load(seed: SeedLab) -> None:
    from conftest import run_json

    proc, doc = run_json(["drivers"], env={"VK_DRIVER_FILES": str(seed.manifest)})
    assert proc.returncode == 1
    (row,) = doc["drivers"]
    assert row["outcome"] == "loads"  # the loader accepts the manifest and dlopens the library
    assert row["verdict"] == "fail"
    assert row["predicted_error"] == (
        "libLLVM.so.23.1: cannot open shared object file: No such file or directory"
    )
    assert row["reason"] == (
        f"{seed.manifest}: the loader dlopens {seed.driver}, but ld.so cannot load it: "
        "libLLVM.so.23.1: cannot open shared object file: No such file or directory"
    )
    assert any(f["code"] == "VKL002" and f["severity"] == "fail" for f in doc["findings"])
    text = run_vkdoctor(["drivers"], env={"VK_DRIVER_FILES": str(seed.manifest)})
    assert text.returncode == 1
    assert "can load" not in text.stdout
    assert f"vkdoctor: FAIL: {row['reason']}" in text.stdout


def test_remedies_follow_who_owns_the_file(seed: SeedLab, tmp_path: Path) -> None:
    """A driver copied by hand gets no 'upgrade the packages' or 'reinstall the package' advice:
    no package manager touches it."""
    from conftest import run_json

    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKL002"], env={"VK_DRIVER_FILES": str(seed.manifest)}
    )
    (vkl,) = [f for f in doc["findings"] if f["code"] == "VKL002"]
    assert f"{seed.driver} belongs to no package, so no upgrade changes it" in vkl["message"]
    assert "full-upgrade" not in vkl["remedy"] and "upgrade" not in vkl["remedy"]
    manifest = tmp_path / "relmissing.json"
    manifest.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": "./libvulkan_gone.so", '
        '"api_version": "1.3.0"}}'
    )
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKD005", "--select", "VKL001"],
        env={"VK_DRIVER_FILES": str(manifest)},
    )
    remedies = {f["code"]: f["remedy"] for f in doc["findings"] if f["severity"] != "ok"}
    assert remedies == {
        "VKD005": f"{manifest} belongs to no package (put there by hand or by an installer): fix "
        "its library_path, or remove it.",
        # the same missing file, said once: VKL001 points at VKD005
        "VKL001": None,
    }
    (vkl,) = [f for f in doc["findings"] if f["code"] == "VKL001" and f["severity"] == "info"]
    assert vkl["title"].endswith("cannot be loaded (VKD005)")


def test_no_device_with_lavapipe_installed_does_not_say_install_it(seed: SeedLab) -> None:
    from conftest import run_json

    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKL,VKT002"],
        env={"LD_LIBRARY_PATH": str(seed.shadow_dir)},
    )
    (f,) = [x for x in doc["findings"] if x["code"] == "VKT002"]
    # every driver fails as the library findings (VKL003, VKL006) predicted: their consequence
    assert f["severity"] == "info"
    assert f["title"] == "No Vulkan device from any driver, as the library findings predicted"
    assert (
        "lvp_icd.x86_64.json" in f["remedy"] and "(VKT001 and the library findings)" in f["remedy"]
    )
    assert "install" not in f["remedy"]


def test_a_32_bit_driver_alone_is_the_cause_not_harmless(seed: SeedLab, tmp_path: Path) -> None:
    from conftest import run_json

    manifest = tmp_path / "fake32_icd.i686.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(seed.lib32), "api_version": "1.3.0"},
            }
        )
    )
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKD001"], env={"VK_DRIVER_FILES": str(manifest)}
    )
    (f,) = [x for x in doc["findings"] if x["code"] == "VKD001"]
    assert f["severity"] == "fail"
    assert "ELFCLASS32; dlopen rejects it for a 64-bit process" in f["message"]
    assert "harmless" not in f["message"]
    assert f["remedy"].endswith(
        "or point it at a 64-bit driver's manifest, for example "
        "VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    )


def test_a_loader_found_only_through_ld_library_path_has_a_fix(tmp_path: Path) -> None:
    import shutil

    from conftest import run_json

    private = tmp_path / "vk"
    private.mkdir()
    shutil.copy("/usr/lib/x86_64-linux-gnu/libvulkan.so.1", private / "libvulkan.so.1")
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKH002"], env={"LD_LIBRARY_PATH": str(private)}
    )
    (f,) = [x for x in doc["findings"] if x["code"] == "VKH002"]
    assert f["severity"] == "warn"
    assert "only through LD_LIBRARY_PATH" in f["message"]
    # the system has its own loader: no install, no ldconfig of a private directory
    assert f["remedy"].startswith("The system has its own Vulkan loader (")
    assert f["remedy"].endswith(f"take {private} off LD_LIBRARY_PATH.")
    # a directory that holds other libraries the system has is never offered to ldconfig
    from vkdoctor.checks.libraries import shadowing_files
    from vkdoctor.model.context import Context

    shutil.copy("/lib/x86_64-linux-gnu/libz.so.1", private / "libz.so.1")
    assert shadowing_files(Context(), str(private)) == ["libvulkan.so.1", "libz.so.1"]


def test_a_private_directory_with_system_libraries_is_never_offered_to_ldconfig(
    seed: SeedLab, tmp_path: Path
) -> None:
    """The seed's hack with a directory that also holds copies of libc and libz: exporting it
    or adding it to ld.so's configuration would replace those for every program."""
    import shutil

    from conftest import run_json

    mixed = tmp_path / "mixed"
    shutil.copytree(seed.llvm_dir, mixed)
    for lib in ("libc.so.6", "libz.so.1"):
        shutil.copy(f"/lib/x86_64-linux-gnu/{lib}", mixed / lib)
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKL004"],
        env={"VK_DRIVER_FILES": str(seed.manifest), "LD_LIBRARY_PATH": str(mixed)},
    )
    found = {f["title"]: f for f in doc["findings"] if f["code"] == "VKL004"}
    libc = found["libc.so.6 from LD_LIBRARY_PATH shadows the system copy"]
    assert libc["severity"] == "fail"  # another glibc's libc beside this ld.so breaks everything
    (only,) = [f for t, f in found.items() if "found only through LD_LIBRARY_PATH" in t]
    assert "ldconfig" not in only["remedy"] and "LD_LIBRARY_PATH=" not in only["remedy"]
    assert f"vkdoctor exec --search-path {mixed} -- CMD" in only["remedy"]
    # why not the whole directory: in the message
    assert "it also holds libc.so.6, libz.so.1" in only["message"]


def test_one_missing_soname_is_one_finding_whoever_needs_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """libgone.so.1 needed by two libraries of a driver's closure (libdrm by six, in a real
    tree without a package database): one failure that names both, not one per user."""
    gone = build_lib(tmp_path / "l" / "libgone.so.1", soname="libgone.so.1")
    a = build_lib(tmp_path / "l" / "liba.so.1", soname="liba.so.1", link=[gone])
    b = build_lib(tmp_path / "l" / "libb.so.1", soname="libb.so.1", link=[gone])
    drv = build_lib(tmp_path / "d" / "libvulkan_two.so", link=[a, b], rpath=[str(a.parent)])
    gone.unlink()
    found = [
        f
        for f in bad(run(monkeypatch, Context(), [driver("two.json", drv)], ("VKL002",)))
        if f.code == "VKL002"
    ]
    assert [f.title for f in found] == ["libgone.so.1 missing (needed by liba.so.1, libb.so.1)"]
    assert found[0].evidence["needed_by_all"] == [str(a), str(b)]
    # on this Debian machine, the way to find the package that ships it, as it runs here: apt-file
    # is no part of a base system, and finds nothing before apt has its Contents lists
    lists = Path("/var/lib/apt/lists")
    first = (
        "apt install apt-file && apt update && "
        if not Path("/usr/bin/apt-file").is_file()
        else ""
        if any("Contents-" in p.name for p in lists.iterdir())
        else "apt update && "
    )
    assert found[0].fix() == (
        f"Install the package that provides libgone.so.1: {first}apt-file search libgone.so.1 "
        "(Debian names library packages after the soname) names it."
    )


def test_an_old_copy_behind_a_dt_rpath_names_the_library_that_carries_it(
    monkeypatch: pytest.MonkeyPatch, seed: SeedLab, tmp_path: Path
) -> None:
    """A bundled driver whose DT_RPATH points at its own old libstdc++: the fix names the
    library with the RPATH, and what to do with it."""
    drv = copy(SYSLIB / "libvulkan_lvp.so", tmp_path / "bundle" / "libvulkan_lvp.so")
    patchelf(drv, "--force-rpath", "--set-rpath", str(seed.shadow_dir))
    (f,) = [
        f
        for f in bad(run(monkeypatch, Context(), [driver("bundle.json", drv)], ("VKL003",)))
        if f.code == "VKL003"
    ]
    assert f.evidence["provider_how"] == "rpath"
    assert f.fix() is not None
    # the command first; which copy and why in one clause
    assert f.fix().startswith(
        f"patchelf --remove-rpath {drv} if the bundle does not need {seed.shadow_dir} "
        f"({drv}'s DT_RPATH); else update its libstdc++.so.6 to one that defines"
    )


@pytest.mark.parametrize("through", ["LD_PRELOAD", "LD_LIBRARY_PATH"])
def test_a_stub_libdrm_that_ends_every_program_is_named_with_the_fix_that_works(
    tmp_path: Path, through: str
) -> None:
    """A stub libdrm.so.2 preloaded or first on LD_LIBRARY_PATH: Mesa's drivers load, and the
    first drm call they bind lazily ends the process with ld.so's "symbol lookup error", as
    vulkaninfo shows. The load test's failures quote that error and name the stub (not the
    intact package); the printed fix, applied, lets vulkaninfo list the device."""
    from conftest import run_json, vulkaninfo

    stub = build_lib(
        tmp_path / "stub" / "libdrm.so.2",
        soname="libdrm.so.2",
        source="int drmAvailable(void){return 0;}\n",
    )
    env = {through: str(stub) if through == "LD_PRELOAD" else str(stub.parent)}
    real = vulkaninfo(env)
    assert real.returncode == 127 and b"symbol lookup error" in real.stderr, real.stderr
    proc, doc = run_json(["check", "--no-probe", "--select", "VKL006,VKT"], env=env)
    assert proc.returncode == 1
    crashed = [
        f
        for f in doc["findings"]
        if f["code"] == "VKT001" and f["evidence"].get("signal") == "exit status 127"
    ]
    assert crashed, doc["findings"]
    for f in crashed:
        assert f["severity"] == "fail" and f["evidence"]["shadowed_by"] == str(stub)
        assert "symbol lookup error: " in f["message"] and "undefined symbol: drm" in f["message"]
        assert f"because {stub} (found through {through}" in f["message"]
        assert "reinstall" not in f["remedy"]
        fix = f"unset {through}"
        assert f"({fix})" in f["remedy"], f["remedy"]
    fixed = vulkaninfo({})  # the fix: the variable unset
    assert fixed.returncode == 0 and b"deviceName" in fixed.stdout


def test_a_probe_ended_by_a_stub_libdrm_names_the_stub_not_a_bug(tmp_path: Path) -> None:
    """wgpu's own EGL call meets the preloaded stub libdrm: the probe ends with ld.so's 127.
    VKR001 quotes the symbol lookup error and names the stub with the fix, never "a bug in
    vkdoctor's probe"."""
    from conftest import run_json

    stub = build_lib(
        tmp_path / "stub" / "libdrm.so.2",
        soname="libdrm.so.2",
        source="int drmAvailable(void){return 0;}\n",
    )
    _, doc = run_json(
        ["check", "--cpu", "--select", "VKR001,VKL006,VKT001"], env={"LD_PRELOAD": str(stub)}
    )
    (probe,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert probe["severity"] == "fail", probe
    assert "symbol lookup error" in probe["message"] and "bug in vkdoctor" not in probe["remedy"]
    assert probe["evidence"]["shadowed_by"] == str(stub)
    assert f"because {stub} (found through LD_PRELOAD)" in probe["message"]
    assert "(unset LD_PRELOAD)" in probe["remedy"]
