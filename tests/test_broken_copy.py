"""A library copy that wins ld.so's search but is broken (cut short, garbage, for another
machine, on a noexec mount) is named as that: the file, what is wrong, the intact copy it
shadows, the fix. Each case is built for real in front of lavapipe's own libraries, shown to
break with the real dynamic linker (a dlopen probe, vulkaninfo), then the printed fix is applied
and the oracle passes again."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from tests.conftest import run_json, vulkaninfo
from tests.elfbuild import DlopenProbe
from tests.loader_oracle import LVP_LIBRARY, LVP_MANIFEST

LIBDIR = Path("/usr/lib/x86_64-linux-gnu")
#: what ld.so.cache gives for these sonames on Debian 12
SYSTEM_DRM = "/lib/x86_64-linux-gnu/libdrm.so.2"
SYSTEM_VULKAN = "/lib/x86_64-linux-gnu/libvulkan.so.1"
SELECT = "VKH002,VKL001,VKL002,VKL004,VKP002,VKT001,VKT002,VKT004,VKO001"


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> DlopenProbe:
    return DlopenProbe.build(tmp_path_factory.mktemp("probe"))


def lvp_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(LVP_MANIFEST), **extra}


def failing(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["severity"] in ("fail", "error")]


def dynamic_offset(path: Path) -> int:
    with path.open("rb") as f:
        elf = ELFFile(f)
        return next(s["p_offset"] for s in elf.iter_segments() if s["p_type"] == "PT_DYNAMIC")


def real_size(path: Path) -> int:
    return path.resolve().stat().st_size


def assert_no_reinstall(finding: dict[str, Any]) -> None:
    remedy = finding["remedy"] or ""
    assert "install" not in remedy and "missing" not in finding["title"], finding
    assert "no copy" not in finding["message"], finding


@pytest.mark.parametrize(
    ("where", "effect"),
    [
        ("program headers", "cannot-read-file-data"),
        ("dynamic section", "sigbus"),
        ("data", "sigbus"),
    ],
)
def test_a_truncated_libdrm_on_ld_library_path_is_named_with_its_cut_and_its_fix(
    tmp_path: Path, probe: DlopenProbe, where: str, effect: str
) -> None:
    drm = LIBDIR / "libdrm.so.2"
    whole = drm.read_bytes()
    cut = {
        "program headers": 100,
        "dynamic section": dynamic_offset(drm) + 0x40,
        "data": len(whole) // 2,
    }[where]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libdrm.so.2").write_bytes(whole[:cut])
    env = lvp_env(tmp_path, LD_LIBRARY_PATH=str(bad))

    real = probe.load(str(LVP_LIBRARY), env=env)
    if effect == "sigbus":
        assert real.error is not None and real.error.startswith("probe exited -7"), real
    else:
        assert real.error == f"{bad}/libdrm.so.2: cannot read file data", real

    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 1, proc.stderr
    (f,) = failing(doc)  # one cause, one failure: the load test and VKT002 point at it
    assert f["code"] == "VKL002"
    broken = f["evidence"]["broken_copy"]
    assert broken["path"] == f"{bad}/libdrm.so.2"
    assert broken["kind"] == "truncated" and broken["effect"] == effect
    assert (broken["size"], broken["expected"]) == (cut, real_size(drm))
    assert broken["intact"] == SYSTEM_DRM
    assert broken["intact_modified"] is False  # the package's checksum matches: no reinstall
    assert f"cut at {cut} of {real_size(drm)} bytes" in f["message"]
    assert_no_reinstall(f)
    assert f["remedy"].startswith(f"Take {bad} off LD_LIBRARY_PATH (unset LD_LIBRARY_PATH)")
    if effect == "sigbus":
        # the real load dies of SIGBUS, as VKL002 said it would
        (vkt,) = [x for x in doc["findings"] if x["code"] == "VKT001"]
        assert vkt["evidence"]["signal"] == "SIGBUS" and "SIGBUS" in vkt["evidence"]["confirms"]
        (vkt2,) = [x for x in doc["findings"] if x["code"] == "VKT002"]
        assert vkt2["title"].endswith("as the library findings predicted"), vkt2

    # the printed fix: unset LD_LIBRARY_PATH
    fixed = lvp_env(tmp_path)
    assert probe.load(str(LVP_LIBRARY), env=fixed).error is None
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=fixed)
    assert proc.returncode == 0, failing(doc)


def test_a_libz_cut_short_does_not_kill_vkdoctor_itself(tmp_path: Path) -> None:
    """Python's zlib module loads libz.so.1 through LD_LIBRARY_PATH as well: vkdoctor must not
    die of the SIGBUS it is asked to diagnose."""
    z = LIBDIR / "libz.so.1"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libz.so.1").write_bytes(z.read_bytes()[:700])
    env = lvp_env(tmp_path, LD_LIBRARY_PATH=str(bad))
    real = vulkaninfo(env)
    assert real.returncode == -7, real.stderr  # SIGBUS
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 1, proc.stderr
    (f,) = failing(doc)
    assert f["code"] == "VKL002" and f["evidence"]["broken_copy"]["effect"] == "sigbus"
    assert f["evidence"]["broken_copy"]["intact"] == "/lib/x86_64-linux-gnu/libz.so.1"
    assert_no_reinstall(f)
    assert vulkaninfo(lvp_env(tmp_path)).returncode == 0


def test_garbage_under_a_librarys_name_is_not_an_elf_file(tmp_path: Path, probe: DlopenProbe):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libdrm.so.2").write_bytes(bytes(range(256)) * 64)
    env = lvp_env(tmp_path, LD_LIBRARY_PATH=str(bad))
    assert probe.load(str(LVP_LIBRARY), env=env).error == f"{bad}/libdrm.so.2: invalid ELF header"
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 1
    (f,) = failing(doc)
    assert f["evidence"]["broken_copy"]["kind"] == "not_elf"
    assert f'"{bad}/libdrm.so.2: invalid ELF header"' in f["message"]
    assert_no_reinstall(f)
    (bad / "libdrm.so.2").unlink()  # the fix's other half: remove the file
    assert probe.load(str(LVP_LIBRARY), env=env).error is None


def test_a_copy_for_another_machine_is_skipped_by_ldso_and_is_no_failure(
    tmp_path: Path, probe: DlopenProbe
) -> None:
    """glibc's open_verify passes over an ELF file of another e_machine and goes on: the
    intact copy loads, and vkdoctor must not fail on it."""
    bad = tmp_path / "bad"
    bad.mkdir()
    data = bytearray((LIBDIR / "libdrm.so.2").read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    (bad / "libdrm.so.2").write_bytes(bytes(data))
    env = lvp_env(tmp_path, LD_LIBRARY_PATH=str(bad))
    real = probe.load(str(LVP_LIBRARY), env=env)
    assert real.error is None and SYSTEM_DRM in real.loaded, real
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 0, failing(doc)


@pytest.fixture
def noexec_dir(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "nx"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,mode=0755", "tmpfs", str(d)], check=True)
    try:
        yield d
    finally:
        subprocess.run(["umount", str(d)], check=True)


def test_an_intact_copy_on_a_noexec_mount_is_named_with_the_mount(
    tmp_path: Path, probe: DlopenProbe, noexec_dir: Path
) -> None:
    (noexec_dir / "libdrm.so.2").write_bytes((LIBDIR / "libdrm.so.2").read_bytes())
    env = lvp_env(tmp_path, LD_LIBRARY_PATH=str(noexec_dir))
    real = probe.load(str(LVP_LIBRARY), env=env)
    # glibc names the object by the name it was asked for, not by the file
    assert real.error == "libdrm.so.2: failed to map segment from shared object", real
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 1
    (f,) = failing(doc)
    broken = f["evidence"]["broken_copy"]
    assert (broken["kind"], broken["mount"], broken["option"]) == (
        "noexec",
        str(noexec_dir),
        "noexec",
    )
    assert broken["intact"] == SYSTEM_DRM
    assert '"libdrm.so.2: failed to map segment from shared object"' in f["message"]
    assert f"sudo mount -o remount,exec {noexec_dir}" in f["remedy"]
    assert_no_reinstall(f)

    subprocess.run(["mount", "-o", "remount,exec", str(noexec_dir)], check=True)
    assert probe.load(str(LVP_LIBRARY), env=env).error is None
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 0, failing(doc)  # VKL004 still warns that it shadows the system's


@pytest.mark.parametrize("cut", [100, 50_000])
def test_a_truncated_loader_first_on_ld_library_path_is_vkh002s_one_failure(
    tmp_path: Path, cut: int
) -> None:
    vulkan = LIBDIR / "libvulkan.so.1"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libvulkan.so.1").write_bytes(vulkan.read_bytes()[:cut])
    env = lvp_env(tmp_path, LD_LIBRARY_PATH=str(bad))
    real = vulkaninfo(env)
    assert real.returncode == (1 if cut == 100 else -7), real.stderr
    # the package's own file is intact: dpkg --verify says nothing
    verify = subprocess.run(
        ["dpkg", "--verify", "libvulkan1"], capture_output=True, text=True, check=False
    )
    assert verify.returncode == 0 and verify.stdout == ""

    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 1
    (f,) = failing(doc)
    assert f["code"] == "VKH002"
    broken = f["evidence"]["broken_copy"]
    assert (broken["path"], broken["size"]) == (f"{bad}/libvulkan.so.1", cut)
    assert broken["expected"] == real_size(vulkan) and broken["intact"] == SYSTEM_VULKAN
    assert broken["intact_package"].startswith("libvulkan1:amd64 ")
    assert broken["intact_modified"] is False
    assert_no_reinstall(f)
    assert f["remedy"].startswith(f"Take {bad} off LD_LIBRARY_PATH")

    os.unlink(bad / "libvulkan.so.1")  # or unset LD_LIBRARY_PATH: both are in the fix
    assert vulkaninfo(env).returncode == 0
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 0, failing(doc)


def _fake_driver(tmp: Path) -> tuple[Path, Path, Path]:
    """A driver that needs libbar.so.1, which the system does not have: (its library, its
    manifest, an intact libbar.so.1 built for it)."""
    from tests import overlay_lab as lab

    bar = lab.shared_lib(tmp / "build" / "libbar.so.1", "libbar.so.1")
    drv = lab.shared_lib(
        tmp / "drv" / "libvulkan_bar.so", "libvulkan_bar.so", needs=[bar], use_symbol="bar_fn"
    )
    (tmp / "icd").mkdir()
    return drv, lab.manifest(tmp / "icd" / "bar.json", drv), bar


def _refusals(doc: dict[str, Any]) -> str:
    return "\n".join(
        f"{f['title']} {f['message']} {f['remedy']}"
        for f in doc["findings"]
        if f["code"][:3] == "VKO"
    )


def test_a_truncated_overlay_candidate_is_refused_with_its_cut(
    tmp_path: Path, probe: DlopenProbe
) -> None:
    drv, manifest, bar = _fake_driver(tmp_path)
    supply = tmp_path / "supply"
    supply.mkdir()
    whole = bar.read_bytes()
    cut = len(whole) // 2  # past the headers: ld.so would map it and die of SIGBUS
    (supply / "libbar.so.1").write_bytes(whole[:cut])
    real = probe.load(str(drv), env={"LD_LIBRARY_PATH": str(supply)})
    assert real.error is not None and real.error.startswith("probe exited -7"), real

    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(manifest)}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    _proc, doc = run_json(["check", "--no-probe", "--search-path", str(supply)], env=env)
    text = _refusals(doc)
    assert f"{supply}/libbar.so.1" in text and f"a truncated ELF file, cut at {cut} of " in text
    assert "no copy of it found" not in text
    assert not any(
        (lib["target"] or "").startswith(str(supply))
        for lib in (doc["overlay"] or {}).get("libraries", [])
    )

    (supply / "libbar.so.1").write_bytes(whole)  # an intact copy in its place
    assert probe.load(str(drv), env={"LD_LIBRARY_PATH": str(supply)}).error is None


def test_an_overlay_candidate_on_a_noexec_mount_is_refused_with_the_mount(
    tmp_path: Path, probe: DlopenProbe, noexec_dir: Path
) -> None:
    drv, manifest, bar = _fake_driver(tmp_path)
    (noexec_dir / "libbar.so.1").write_bytes(bar.read_bytes())
    real = probe.load(str(drv), env={"LD_LIBRARY_PATH": str(noexec_dir)})
    assert real.error == "libbar.so.1: failed to map segment from shared object", real

    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(manifest)}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    _proc, doc = run_json(["check", "--no-probe", "--search-path", str(noexec_dir)], env=env)
    text = _refusals(doc)
    assert f"on {noexec_dir}, mounted noexec" in text, text
    assert f"sudo mount -o remount,exec {noexec_dir}" in text
    assert "no copy of it found" not in text

    subprocess.run(["mount", "-o", "remount,exec", str(noexec_dir)], check=True)
    assert probe.load(str(drv), env={"LD_LIBRARY_PATH": str(noexec_dir)}).error is None
    _proc, doc = run_json(["check", "--no-probe", "--search-path", str(noexec_dir)], env=env)
    # now taken, and the driver's dlopen under the overlay works (the fake driver is no real
    # ICD, so its instance fails: that is beside the point here)
    text = _refusals(doc)
    assert f"libbar.so.1 -> {noexec_dir}/libbar.so.1" in text and "dlopen ok" in text, text
    assert "mounted noexec" not in text


def test_a_truncated_copy_the_ld_so_cache_names_is_named_and_the_fix_works(
    tmp_path: Path,
) -> None:
    """An ld.so.conf directory whose libdrm was cut short after ldconfig ran: the cache names
    it before the system's. The cache is swapped in a private mount namespace only."""
    import json
    import sys

    from tests.conftest import REPO, clean_env, validate_report

    extra = tmp_path / "extra"
    extra.mkdir()
    real_drm = (LIBDIR / "libdrm.so.2").resolve()
    (extra / real_drm.name).write_bytes(real_drm.read_bytes())
    (extra / "libdrm.so.2").symlink_to(real_drm.name)
    conf = tmp_path / "ld.so.conf"
    system_conf = "".join(p.read_text() for p in sorted(Path("/etc/ld.so.conf.d").glob("*.conf")))
    conf.write_text(f"{extra}\n{system_conf}")
    cache = tmp_path / "ld.so.cache"
    # -X: no links made or changed anywhere, the system's directories included
    ldconfig = ["ldconfig", "-X", "-C", str(cache), "-f", str(conf)]
    subprocess.run(ldconfig, check=True, capture_output=True)
    os.truncate(extra / real_drm.name, 100)
    lib = f"{extra}/libdrm.so.2"

    env = clean_env(lvp_env(tmp_path))
    env["PYTHONPATH"] = str(REPO)
    inner = (
        f"mount --bind {cache} /etc/ld.so.cache || exit 99; "
        f"{sys.executable} -c 'import ctypes; ctypes.CDLL(\"{LVP_LIBRARY}\")' 2>&1; "
        f"echo rc=$?; {sys.executable} -m vkdoctor check --no-probe --select {SELECT} --json -"
    )

    def in_namespace() -> tuple[list[str], dict[str, Any] | None, int]:
        proc = subprocess.run(
            ["unshare", "-m", "sh", "-c", inner],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=300,
            check=False,
        )
        head, _, rest = proc.stdout.partition("rc=")
        rc_line, _, report = rest.partition("\n")
        doc = json.loads(report)
        validate_report(doc)
        return [head.strip(), rc_line], doc, proc.returncode

    (oracle, rc), doc, code = in_namespace()
    assert rc == "1" and oracle.endswith(f"{lib}: cannot read file data"), oracle
    assert code == 1 and doc is not None
    (f,) = failing(doc)
    broken = f["evidence"]["broken_copy"]
    assert (broken["path"], broken["how"], broken["size"]) == (lib, "ld.so.cache", 100)
    assert broken["expected"] == real_size(LIBDIR / "libdrm.so.2")
    assert broken["intact"] == SYSTEM_DRM and broken["intact_modified"] is False
    assert_no_reinstall(f)
    assert f"`rm {lib} {extra / real_drm.name}`" in f["remedy"] and "ldconfig" in f["remedy"]

    # the printed fix: remove both, then ldconfig (here: of the private cache)
    os.unlink(lib)
    os.unlink(extra / real_drm.name)
    subprocess.run(ldconfig, check=True, capture_output=True)
    (oracle, rc), doc, code = in_namespace()
    assert rc == "0", oracle
    assert code == 0 and doc is not None, failing(doc or {"findings": []})


def test_a_truncated_copy_in_a_drivers_rpath_directory_is_named_with_the_rpath(
    tmp_path: Path, probe: DlopenProbe
) -> None:
    from tests import overlay_lab as lab
    from tests.elfbuild import build_lib

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    drv = build_lib(
        tmp_path / "drv" / "libvulkan_rp.so",
        soname="libvulkan_rp.so",
        link=[LIBDIR / "libdrm.so.2"],
        rpath=[str(bundle)],
    )
    (tmp_path / "icd").mkdir()
    manifest = lab.manifest(tmp_path / "icd" / "rp.json", drv)
    whole = (LIBDIR / "libdrm.so.2").read_bytes()
    (bundle / "libdrm.so.2").write_bytes(whole[: len(whole) // 2])
    real = probe.load(str(drv))
    assert real.error is not None and real.error.startswith("probe exited -7"), real

    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(manifest)}
    _proc, doc = run_json(["check", "--no-probe", "--select", "VKL002,VKP002"], env=env)
    (f,) = failing(doc)
    broken = f["evidence"]["broken_copy"]
    assert (broken["how"], broken["effect"], broken["intact"]) == ("rpath", "sigbus", SYSTEM_DRM)
    assert (
        f"comes from {drv}'s DT_RPATH" in f["remedy"] and f"rm {bundle}/libdrm.so.2" in f["remedy"]
    )
    assert_no_reinstall(f)

    os.unlink(bundle / "libdrm.so.2")  # the printed fix
    real = probe.load(str(drv))
    assert real.error is None and SYSTEM_DRM in real.loaded, real
    proc, doc = run_json(["check", "--no-probe", "--select", "VKL002,VKP002"], env=env)
    assert proc.returncode == 0, failing(doc)


def test_a_copy_cut_inside_its_last_page_loads_and_is_a_warning_that_says_so(
    tmp_path: Path,
) -> None:
    """Cut past everything ld.so reads but inside the last mapped page: mmap fills the rest of
    the page with zeros, and lavapipe really works with it (vulkaninfo). Not a failure (that
    would be a false red), but VKL004 says the copy is cut short."""
    drm = LIBDIR / "libdrm.so.2"
    with drm.open("rb") as f:
        loads = [s for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD"]
    end = max(s["p_offset"] + s["p_filesz"] for s in loads)
    cut = max((end & ~0xFFF) + 0x100, dynamic_offset(drm) + 0x200)  # inside the last page
    assert cut < end and cut & ~0xFFF == (end - 1) & ~0xFFF
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libdrm.so.2").write_bytes(drm.read_bytes()[:cut])
    env = lvp_env(tmp_path, LD_LIBRARY_PATH=str(bad))
    real = vulkaninfo(env)
    assert real.returncode == 0 and b"llvmpipe" in real.stdout, real.stderr
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=env)
    assert proc.returncode == 0, failing(doc)
    (w,) = [f for f in doc["findings"] if f["code"] == "VKL004"]
    assert w["severity"] == "warn" and w["title"].endswith("and it is truncated")
    broken = w["evidence"]["broken_copy"]
    assert (broken["size"], broken["expected"], broken["effect"]) == (cut, real_size(drm), "zeros")


def test_a_library_that_exists_only_for_another_machine_says_which(
    tmp_path: Path, probe: DlopenProbe
) -> None:
    drv, manifest, bar = _fake_driver(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    data = bytearray(bar.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    (other / "libbar.so.1").write_bytes(bytes(data))
    real = probe.load(str(drv), env={"LD_LIBRARY_PATH": str(other)})
    assert real.error == "libbar.so.1: cannot open shared object file: No such file or directory"
    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(manifest), "LD_LIBRARY_PATH": str(other)}
    _proc, doc = run_json(["check", "--no-probe", "--select", "VKL002"], env=env)
    (f,) = failing(doc)
    assert (
        f"the only copy ld.so finds, {other}/libbar.so.1, is built for another machine "
        "(e_machine EM_AARCH64); ld.so skips it"
    ) in f["message"]


def test_a_driver_named_bare_whose_winning_copy_is_cut_short_is_vkl001s_one_failure(
    tmp_path: Path,
) -> None:
    """A manifest naming libvulkan_lvp.so without a path: ld.so searches, and a copy cut short
    inside its program headers, first on LD_LIBRARY_PATH, wins over the system's."""
    import json

    manifest = tmp_path / "bare.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": "libvulkan_lvp.so", "api_version": "1.3.230"},
            }
        )
    )
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libvulkan_lvp.so").write_bytes(LVP_LIBRARY.read_bytes()[:100])
    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(manifest), "LD_LIBRARY_PATH": str(bad)}
    assert b"llvmpipe" not in vulkaninfo(env).stdout
    proc, doc = run_json(["check", "--no-probe"], env=env)  # every check: VKD001, VKD005 too
    assert proc.returncode == 1
    (f,) = failing(doc)
    vkd = {x["code"]: x for x in doc["findings"] if x["code"] in ("VKD001", "VKD005")}
    assert {c: x["evidence"].get("explained_by") for c, x in vkd.items()} == {
        "VKD001": "VKL001",
        "VKD005": "VKL001",
    }
    assert f"ld.so finds {bad}/libvulkan_lvp.so, which it cannot load" in vkd["VKD005"]["message"]
    assert f["code"] == "VKL001" and f["title"] == f"bare.json: {bad}/libvulkan_lvp.so is truncated"
    broken = f["evidence"]["broken_copy"]
    assert broken["intact"] == "/lib/x86_64-linux-gnu/libvulkan_lvp.so" and broken["size"] == 100
    assert broken["expected"] == real_size(LVP_LIBRARY)
    assert_no_reinstall(f)
    assert f["remedy"].startswith(f"Take {bad} off LD_LIBRARY_PATH")

    fixed = {k: v for k, v in env.items() if k != "LD_LIBRARY_PATH"}
    assert b"llvmpipe" in vulkaninfo(fixed).stdout
    proc, doc = run_json(["check", "--no-probe", "--select", SELECT], env=fixed)
    assert proc.returncode == 0, failing(doc)


def _holding_mount(table: list[tuple[str, str]], real: str) -> str | None:
    """The mount /proc/self/mountinfo's rules give a path: the deepest point that holds it, and
    of a point mounted twice the later mount; its point when that mount is noexec."""
    best: tuple[str, str] | None = None
    for point, options in table:
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, options)
    return best[0] if best is not None and "noexec" in best[1].split(",") else None


def test_the_noexec_mount_of_a_path_is_the_one_that_holds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random

    from vkdoctor.elf import mounts, reader
    from vkdoctor.model.context import Context

    rng = random.Random(7)
    points = ["/", "/usr", "/usr/lib", "/usr/lib/x", "/opt", "/opt/a b", "/dev/shm", "/usr/li"]
    monkeypatch.setattr(reader, "resolved", lambda ctx, path: Path(path))
    for _ in range(300):
        table = [
            (rng.choice(points), rng.choice(["rw,noexec", "rw", "ro,nosuid", "noexec"]))
            for _ in range(rng.randint(0, 6))
        ]
        monkeypatch.setattr(mounts, "mounts", lambda ctx, table=table: table)
        ctx = Context(root=Path("/"))
        for path in ("/usr/lib/x/libz.so.1", "/usr/lib/libz.so", "/usr/libz", "/opt/a b/c", "/"):
            assert mounts.noexec_mount(ctx, path) == _holding_mount(table, path), (table, path)
