"""The seed's scenario on the real loader and the real lavapipe.

A copy of libvulkan_lvp.so whose DT_NEEDED names libLLVM.so.23.1 (a soname the system lacks),
that soname in a private directory (a copy of the system's libLLVM-15.so.1 with its DT_SONAME
changed; its version node stays LLVM_15, which is what the lvp copy requires from it), and a
manifest for the copy selected with VK_DRIVER_FILES. libLLVM is ~100 MB: one copy per session.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import overlay_lab as lab
from tests.conftest import REPO as REPO_ROOT
from tests.conftest import clean_env, run_json, run_vkdoctor
from tests.github_runner import parse_env_file


@dataclass(frozen=True)
class Seed:
    root: Path
    driver: Path
    manifest: Path
    #: the private directory holding libLLVM.so.23.1
    llvm_dir: Path
    llvm: Path
    deb: Path
    pkg: Path

    def env(self, cache: Path, **extra: str) -> dict[str, str]:
        return {"VK_DRIVER_FILES": str(self.manifest), "XDG_CACHE_HOME": str(cache), **extra}


@pytest.fixture(scope="session")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seed]:
    root = tmp_path_factory.mktemp("seed")
    drv = root / "drv" / "libvulkan_lvp.so"
    drv.parent.mkdir()
    drv.write_bytes(lab.LVP.read_bytes())
    lab.run(["patchelf", "--replace-needed", "libLLVM-15.so.1", lab.NEW_LLVM, str(drv)])
    llvm_dir = root / "llvm231"
    llvm_dir.mkdir()
    llvm = llvm_dir / lab.NEW_LLVM
    lab.run(["cp", str(lab.SYSTEM_LLVM), str(llvm)])
    lab.run(["patchelf", "--set-soname", lab.NEW_LLVM, str(llvm)])
    # The same library packed as the distributions ship it, for --from-package.
    pkgroot = root / "pkgroot"
    (pkgroot / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    os.link(llvm, pkgroot / "usr/lib/x86_64-linux-gnu" / "libLLVM.so.23.1.0")
    (pkgroot / "usr/lib/x86_64-linux-gnu" / lab.NEW_LLVM).symlink_to("libLLVM.so.23.1.0")
    deb = lab.deb(pkgroot, root / "libllvm23_1%3a23.1.0-1_amd64.deb", name="libllvm23")
    pkg = lab.pkg_tar_zst(pkgroot, root / "llvm-libs-23.1.0-1-x86_64.pkg.tar.zst")
    manifest = lab.manifest(root / "lvp_copy.json", drv)
    yield Seed(
        root=root, driver=drv, manifest=manifest, llvm_dir=llvm_dir, llvm=llvm, deb=deb, pkg=pkg
    )


def _vulkaninfo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["vulkaninfo", "--summary"],
        capture_output=True,
        text=True,
        env=clean_env({**env, "LC_ALL": "C"}),
        timeout=120,
        check=False,
    )


def test_the_lab_is_the_seed(seed: Seed, tmp_path: Path) -> None:
    """The copy needs libLLVM.so.23.1 at version LLVM_15; without an overlay there is no CPU device."""
    dyn = lab.run(["readelf", "-d", str(seed.driver)])
    assert "Shared library: [libLLVM.so.23.1]" in dyn and "libLLVM-15" not in dyn
    ver = lab.run(["readelf", "-V", str(seed.driver)])
    assert re.search(r"File: libLLVM\.so\.23\.1\s+Cnt: 1\s+.*Name: LLVM_15", ver, re.S)
    assert "Library soname: [libLLVM.so.23.1]" in lab.run(["readelf", "-d", str(seed.llvm)])
    proc = _vulkaninfo(seed.env(tmp_path))
    assert proc.returncode != 0
    assert "Failed loading library associated with ICD JSON" in proc.stdout + proc.stderr
    assert "llvmpipe" not in proc.stdout


def test_overlay_command_seed(seed: Seed, tmp_path: Path) -> None:
    env = seed.env(tmp_path / "cache", LD_LIBRARY_PATH=f"::relative/dir:{seed.root}/elsewhere")
    shell = run_vkdoctor(["overlay", "--search-path", str(seed.llvm_dir)], env=env)
    assert shell.returncode == 0, shell.stderr
    assert (
        f"vkdoctor overlay: libLLVM.so.23.1 (needed by {seed.driver}): using {seed.llvm} (search path)"
        in shell.stderr
    )
    assert "LD_LIBRARY_PATH entry 'relative/dir' dropped: a relative entry" in shell.stderr
    assert "LD_LIBRARY_PATH entry '' dropped: an empty entry" in shell.stderr
    m = re.fullmatch(r"export LD_LIBRARY_PATH=(\S+)\n", shell.stdout)
    assert m, shell.stdout
    value = m.group(1)
    overlay_dir = Path(value.split(":")[0])
    assert value == f"{overlay_dir}:{seed.root}/elsewhere"
    assert overlay_dir.parent == tmp_path / "cache" / "vkdoctor" / "overlays"
    assert oct(overlay_dir.stat().st_mode & 0o777) == "0o700"
    assert [(p.name, p.readlink()) for p in overlay_dir.iterdir()] == [(lab.NEW_LLVM, seed.llvm)]

    js = run_vkdoctor(["overlay", "--search-path", str(seed.llvm_dir), "--format", "json"], env=env)
    doc = json.loads(js.stdout)
    assert doc == {
        "dir": str(overlay_dir),
        "ld_library_path": value,
        "libraries": [
            {"soname": lab.NEW_LLVM, "target": str(seed.llvm), "needed_by": [str(seed.driver)]}
        ],
    }
    envf = run_vkdoctor(
        ["overlay", "--search-path", str(seed.llvm_dir), "--format", "env"], env=env
    )
    assert envf.stdout == f"LD_LIBRARY_PATH={value}\n"


def test_exec_runs_vulkaninfo_on_llvmpipe(seed: Seed, tmp_path: Path) -> None:
    env = seed.env(tmp_path / "cache")
    proc = run_vkdoctor(
        ["exec", "--search-path", str(seed.llvm_dir), "--", "vulkaninfo", "--summary"], env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"deviceName\s+= llvmpipe", proc.stdout), proc.stdout
    assert re.search(r"driverName\s+= llvmpipe", proc.stdout)
    overlays = list((tmp_path / "cache" / "vkdoctor" / "overlays").iterdir())
    assert len(overlays) == 1 and [p.name for p in overlays[0].iterdir()] == [lab.NEW_LLVM]
    # CMD's exit status and signals are its own.
    status = run_vkdoctor(
        [
            "exec",
            "--search-path",
            str(seed.llvm_dir),
            "--",
            "sh",
            "-c",
            'echo "$LD_LIBRARY_PATH"; exit 7',
        ],
        env=env,
    )
    assert status.returncode == 7
    assert status.stdout.strip() == str(overlays[0])
    killed = run_vkdoctor(
        ["exec", "-q", "--search-path", str(seed.llvm_dir), "--", "sh", "-c", "kill -TERM $$"],
        env=env,
    )
    assert killed.returncode == -15 and killed.stderr == ""
    missing = run_vkdoctor(["exec", "--", "no-such-command-vkdoctor"], env=env)
    assert missing.returncode == 127
    assert "no-such-command-vkdoctor: command not found" in missing.stderr


@pytest.mark.parametrize("kind", ["deb", "pkg"])
def test_from_package(seed: Seed, tmp_path: Path, kind: str) -> None:
    package = seed.deb if kind == "deb" else seed.pkg
    env = seed.env(tmp_path / "cache")
    proc = run_vkdoctor(
        ["exec", "--from-package", str(package), "--", "vulkaninfo", "--summary"], env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"deviceName\s+= llvmpipe", proc.stdout)
    extracted = list((tmp_path / "cache" / "vkdoctor" / "extracted").iterdir())
    assert len(extracted) == 1
    assert sorted(p.name for p in extracted[0].iterdir()) == [
        ".complete",
        lab.NEW_LLVM,
        "libLLVM.so.23.1.0",
    ]
    assert f"using {extracted[0]}/libLLVM.so.23.1.0 (package {package.name})" in proc.stderr
    # The soname link and the file it names are one candidate, not two.
    assert "also acceptable" not in proc.stderr


def test_shadowing_copies_in_the_search_path_stay_out(seed: Seed, tmp_path: Path) -> None:
    """The search path also holds libstdc++.so.6 and libz.so.1 (copies of the system's): the
    overlay holds only the missing LLVM, and the driver still gets the system's libstdc++."""
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    os.link(seed.llvm, crowded / lab.NEW_LLVM)
    for name in ("libstdc++.so.6", "libz.so.1"):
        (crowded / name).write_bytes((lab.SYSTEM_LIB / name).read_bytes())
    env = seed.env(tmp_path / "cache")
    js = run_vkdoctor(["overlay", "--search-path", str(crowded), "--format", "json"], env=env)
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    assert [lib["soname"] for lib in doc["libraries"]] == [lab.NEW_LLVM]
    assert str(crowded) not in doc["ld_library_path"].split(":")
    assert sorted(p.name for p in Path(doc["dir"]).iterdir()) == [lab.NEW_LLVM]
    maps = run_vkdoctor(
        [
            "exec",
            "-q",
            "--search-path",
            str(crowded),
            "--",
            sys.executable,
            "-c",
            f"import ctypes; ctypes.CDLL({str(seed.driver)!r}); print(open('/proc/self/maps').read())",
        ],
        env=env,
    )
    assert maps.returncode == 0, maps.stderr
    mapped = {line.split()[-1] for line in maps.stdout.splitlines() if "/" in line}
    assert (
        str(crowded / "libstdc++.so.6") not in mapped and str(crowded / "libz.so.1") not in mapped
    )
    assert any(p.endswith("/libstdc++.so.6.0.30") and p.startswith("/usr/lib") for p in mapped), (
        mapped
    )
    # The LLVM is mapped through the overlay's symlink, from the search path.
    assert str(crowded / lab.NEW_LLVM) in mapped, sorted(mapped)


def test_check_builds_the_overlay_and_proves_it(seed: Seed, tmp_path: Path) -> None:
    env = seed.env(tmp_path / "cache")
    proc, doc = run_json(["check", "--cpu", "--search-path", str(seed.llvm_dir)], env=env)
    assert proc.returncode == 0, proc.stderr
    assert doc["status"] == "warn"
    overlay = doc["overlay"]
    assert overlay["libraries"] == [
        {"soname": lab.NEW_LLVM, "target": str(seed.llvm), "needed_by": [str(seed.driver)]}
    ]
    assert overlay["ld_library_path"] == overlay["dir"]
    assert [p.name for p in Path(overlay["dir"]).iterdir()] == [lab.NEW_LLVM]
    # the host's environment is the user's: vkdoctor's overlay is no LD_LIBRARY_PATH they set
    assert "LD_LIBRARY_PATH" not in doc["host"]["environment"], doc["host"]["environment"]
    assert doc["probe"]["status"] == "pass"
    assert "llvmpipe" in doc["probe"]["adapter"]["name"]
    (vko,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    assert vko["severity"] == "warn"
    assert vko["title"] == (
        "Works with a private overlay for libLLVM.so.23.1 (proven by the load test and the "
        "compute probe)"
    )
    assert f"Without it, libLLVM.so.23.1 is missing for {seed.driver}" in vko["message"]
    assert f"vkdoctor exec --search-path {seed.llvm_dir} -- CMD" in vko["remedy"]
    assert f"export LD_LIBRARY_PATH={overlay['dir']}" in vko["remedy"]
    assert vko["evidence"]["load_test"][str(seed.driver)]["dlopen"] == "ok"
    assert vko["evidence"]["probe_status"] == "pass"
    # the checks ran under the overlay, where nothing is missing: the packages' view of the
    # missing library, from before it, is the lasting fix (here: a driver built outside them)
    (lasting,) = vko["evidence"]["lasting_fixes"]
    assert lasting.startswith(
        f"lavapipe ({seed.driver}, which no package owns) needs libLLVM.so.23.1, but "
    )
    assert "outside the package manager" in lasting
    # VKO001 is where this text is said: no pointer at itself, no guessed package to copy from
    assert "(VKO001)" not in lasting and "Until then, an overlay" not in lasting
    # said in the message: the fix line is the overlay's commands
    assert "The lasting fix, from the packages as they are: " + lasting in vko["message"]
    assert lasting not in vko["remedy"]
    failed = [f for f in doc["findings"] if f["severity"] in ("fail", "error")]
    assert failed == []
    # The library checks ran under the overlay and say where the LLVM came from, with no advice
    # to put vkdoctor's private directory into the ld.so configuration.
    (vkl4,) = [f for f in doc["findings"] if f["code"] == "VKL004"]
    assert vkl4["severity"] == "info" and vkl4["remedy"] is None
    assert vkl4["evidence"]["directory"] == overlay["dir"]
    # Nobody owns the private LLVM: said of the file itself, not of vkdoctor's link to it.
    (vkp4,) = [f for f in doc["findings"] if f["code"] == "VKP004"]
    assert vkp4["evidence"]["unowned"] == [str(seed.driver), str(seed.llvm)]
    assert (
        f"{seed.llvm} (a directory no package manages, reached through vkdoctor's overlay "
        f"{overlay['dir']}/{lab.NEW_LLVM})"
    ) in vkp4["message"]

    # Without the search path the same check fails and says where it looked.
    proc, doc = run_json(["check", "--no-probe"], env=env)
    assert proc.returncode == 1
    assert doc["overlay"] is None
    (vko,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    assert vko["title"] == "No overlay for libLLVM.so.23.1: no copy of it found"
    assert "package caches /var/cache/pacman/pkg and /var/cache/apt/archives" in vko["message"]
    assert any(f["code"] == "VKL002" and f["severity"] == "fail" for f in doc["findings"])


def test_check_from_package_proves_the_overlay(seed: Seed, tmp_path: Path) -> None:
    """check --from-package: the LLVM comes out of a .deb into vkdoctor's cache, and the load test
    and the probe run under the overlay before it is reported as the fix."""
    env = seed.env(tmp_path / "cache")
    proc, doc = run_json(["check", "--cpu", "--from-package", str(seed.deb)], env=env)
    assert proc.returncode == 0, proc.stderr
    assert doc["probe"]["status"] == "pass"
    (lib,) = doc["overlay"]["libraries"]
    assert lib["soname"] == lab.NEW_LLVM and "/vkdoctor/extracted/" in lib["target"]
    (vko,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    assert vko["severity"] == "warn"
    assert f"vkdoctor exec --from-package {seed.deb} -- CMD" in vko["remedy"]


def test_a_right_named_copy_that_does_not_fit_is_no_advice_to_use_it(
    seed: Seed, tmp_path: Path
) -> None:
    """A libLLVM.so.23.1 without LLVM's symbol versions in the search path: the overlay refuses
    it (VKO003), so VKL002 must not send the user to it; it gives the fix it gives without it."""
    from tests.elfbuild import build_lib

    bad = build_lib(tmp_path / "bad" / lab.NEW_LLVM, soname=lab.NEW_LLVM)
    proc, doc = run_json(
        ["check", "--no-probe", "--search-path", str(bad.parent), "--select", "VKL002,VKO"],
        env=seed.env(tmp_path / "cache"),
    )
    assert proc.returncode == 1, proc.stderr
    (vkl,) = [f for f in doc["findings"] if f["code"] == "VKL002"]
    # why, in the message; the fix is the one it gives without that copy
    assert (
        f"{bad} has the name ld.so looks for, but the overlay refuses it: lacks symbol version"
    ) in vkl["message"]
    assert "(VKO003). Only other versions of this library are installed" in vkl["message"]
    assert vkl["remedy"].startswith(f"Rebuild {seed.driver} against the installed library")
    assert f"vkdoctor exec --search-path {bad.parent}" not in vkl["remedy"]


def test_an_overlay_the_drivers_still_fail_under_is_not_shown_as_the_fix(
    seed: Seed, tmp_path: Path
) -> None:
    """The overlay supplies libLLVM.so.23.1, but the driver also needs a library found nowhere:
    it still fails under the overlay, so the report carries no `export LD_LIBRARY_PATH=...`."""
    drv = tmp_path / "libvulkan_lvp.so"
    drv.write_bytes(seed.driver.read_bytes())
    lab.run(["patchelf", "--add-needed", "libvkdoctor_absent.so.9", str(drv)])
    manifest = lab.manifest(tmp_path / "lvp_twice_broken.json", drv)
    env = {"VK_DRIVER_FILES": str(manifest), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc, doc = run_json(["check", "--no-probe", "--search-path", str(seed.llvm_dir)], env=env)
    assert proc.returncode == 1, proc.stderr
    (vko,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    assert vko["severity"] == "fail", vko
    assert doc["overlay"] is None
    text = run_vkdoctor(["check", "--no-probe", "--search-path", str(seed.llvm_dir)], env=env)
    assert "export LD_LIBRARY_PATH=" not in text.stdout


def test_a_second_llvm_in_the_process_is_no_overlay_advice(seed: Seed, tmp_path: Path) -> None:
    """The system's lavapipe loads libLLVM-15 and the seed's copy needs libLLVM.so.23.1: no
    build of it can join that process, so neither VKL002 nor VKO001 sends the user to the
    search path; VKO001 says to give a program only the driver that needs it."""
    env = {"VK_ADD_DRIVER_FILES": str(seed.manifest), "XDG_CACHE_HOME": str(tmp_path / "c")}
    proc, doc = run_json(
        ["check", "--no-probe", "--search-path", str(seed.llvm_dir), "--select", "VKL002,VKO"],
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    (vkl,) = [f for f in doc["findings"] if f["code"] == "VKL002"]
    assert f"An overlay cannot supply {lab.NEW_LLVM} here: " in vkl["message"]
    assert "would be a second llvm library in the process" in vkl["message"]
    assert "exec --search-path" not in vkl["remedy"]
    (vko,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    assert vko["remedy"].startswith(
        "`VK_DRIVER_FILES=MANIFEST vkdoctor exec --search-path DIR -- CMD`, MANIFEST being the "
        f"manifest of the driver that needs {lab.NEW_LLVM}, and no other."
    )


def test_a_full_cache_is_named_as_such() -> None:
    from types import SimpleNamespace

    from vkdoctor.checks.overlay import _not_built_remedy

    plan = SimpleNamespace(
        refused=[],
        package_errors=[
            "cannot write /c/vkdoctor/extracted/x/libLLVM.so: no space left on the device"
        ],
    )
    remedy = _not_built_remedy(plan, lab.NEW_LLVM)
    # the message gives the error (no space left); the fix is where to make room
    assert remedy.startswith("Free space where vkdoctor's cache is (XDG_CACHE_HOME, else ~/.cache)")


def test_a_file_with_the_right_name_and_versions_but_not_the_symbols_is_no_overlay(
    seed: Seed, tmp_path: Path
) -> None:
    """A stub libLLVM.so.23.1 that defines the LLVM_15 version node and nothing else: names and
    versions fit, but the driver still cannot load; `overlay` must not hand it out."""
    from tests.elfbuild import build_lib

    stub = build_lib(
        tmp_path / "stub" / lab.NEW_LLVM,
        soname=lab.NEW_LLVM,
        source="int llvm_stub(void) { return 0; }\n",
        version_script="LLVM_15 { global: llvm_stub; local: *; };\n",
    )
    env = seed.env(tmp_path / "cache")
    proc = run_vkdoctor(["overlay", "--search-path", str(stub.parent)], env=env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    assert "would still not load" in proc.stderr and "defined nowhere" in proc.stderr


def test_an_env_file_line_never_gains_a_variable_from_ld_library_path(
    seed: Seed, tmp_path: Path
) -> None:
    """`overlay --format env >> .env` with a line break in the environment's LD_LIBRARY_PATH:
    printed raw, the rest of the value was a line of its own, a variable of the file."""
    env = {**seed.env(tmp_path / "cache"), "LD_LIBRARY_PATH": "/y\nBASH_ENV=/tmp/x.sh"}
    argv = ["overlay", "--search-path", str(seed.llvm_dir)]
    proc = run_vkdoctor([*argv, "--format", "env"], env=env)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert "holds a line break" in proc.stderr and "BASH_ENV" not in proc.stdout
    shell = run_vkdoctor(argv, env=env)  # quoted: the shell reads one variable
    assert shell.returncode == 0, shell.stderr
    out = subprocess.run(
        [
            "bash",
            "-c",
            shell.stdout + '\nprintf %s "$LD_LIBRARY_PATH"; echo; printf %s "$BASH_ENV"',
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.endswith(":/y\nBASH_ENV=/tmp/x.sh\n"), out


def test_an_exported_overlay_whose_library_is_gone_is_named(seed: Seed, tmp_path: Path) -> None:
    import shutil

    private = tmp_path / "llvm-private"
    shutil.copytree(seed.llvm_dir, private)
    env = seed.env(tmp_path / "cache")
    proc = run_vkdoctor(["overlay", "--search-path", str(private), "--format", "env"], env=env)
    assert proc.returncode == 0, proc.stderr
    overlay = proc.stdout.strip().removeprefix("LD_LIBRARY_PATH=")
    shutil.rmtree(private)  # the user cleans up the private LLVM, the export stays
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKL002"], env={**env, "LD_LIBRARY_PATH": overlay}
    )
    (vkl,) = [f for f in doc["findings"] if f["code"] == "VKL002"]
    assert (
        f"vkdoctor's overlay {overlay} is on LD_LIBRARY_PATH, but its link for "
        f"{lab.NEW_LLVM} points at {private}/{lab.NEW_LLVM}, which is gone."
    ) in vkl["message"]
    assert vkl["remedy"].startswith("`vkdoctor overlay --search-path DIR` (or `vkdoctor exec")


def test_a_package_whose_soname_links_out_of_it_says_so(seed: Seed, tmp_path: Path) -> None:
    """A package that holds the soname only as a link to a file it does not ship (the way some
    vendor packages point into /opt) is named for what it is, not as 'does not contain'."""
    pkgroot = tmp_path / "pkgroot"
    (pkgroot / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    target = "/opt/llvm-23/lib/libLLVM.so.23.1"
    (pkgroot / "usr/lib/x86_64-linux-gnu" / lab.NEW_LLVM).symlink_to(target)
    deb = lab.deb(pkgroot, tmp_path / "llvm23-link_1_amd64.deb", name="llvm23-link")
    proc = run_vkdoctor(["overlay", "--from-package", str(deb)], env=seed.env(tmp_path / "cache"))
    assert proc.returncode != 0
    assert (
        f"package {deb} holds {lab.NEW_LLVM} only as a link to {target}, outside the "
        "package: not used"
    ) in proc.stdout + proc.stderr
    assert "does not contain" not in proc.stdout + proc.stderr


def test_an_overlay_only_vkdoctor_found_is_a_failing_environment(
    seed: Seed, tmp_path: Path
) -> None:
    """The library sits where vkdoctor looks by itself (~/.local/lib), not where ld.so looks:
    a plain check describes the environment the next command gets, which fails, and offers the
    overlay, proven, as the fix. The printed fix then works."""
    home = tmp_path / "home"
    (home / ".local" / "lib").mkdir(parents=True)
    os.link(seed.llvm, home / ".local" / "lib" / lab.NEW_LLVM)
    env = seed.env(tmp_path / "cache", HOME=str(home))
    assert "deviceName" not in _vulkaninfo(env).stdout  # as things are: no device
    proc, doc = run_json(["check", "--cpu"], env=env)
    assert proc.returncode == 1, proc.stdout
    (vkl2,) = [f for f in doc["findings"] if f["code"] == "VKL002"]
    assert vkl2["severity"] == "fail" and lab.NEW_LLVM in vkl2["title"]
    (vko,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    assert vko["severity"] == "warn"
    assert vko["title"].startswith(f"An overlay for {lab.NEW_LLVM} fixes it (proven by")
    assert vko["evidence"]["load_test"][str(seed.driver)]["dlopen"] == "ok"
    assert vko["evidence"]["probe_status"] == "pass"
    assert doc["overlay"]["applied"] is False
    command = f"vkdoctor exec --search-path {home}/.local/lib -- CMD"
    assert doc["overlay"]["exec"] == command and command in vko["remedy"]
    # the report's probe ran in the environment as it is
    assert doc["probe"]["status"] != "pass"
    # the fix, run as printed
    fixed = run_vkdoctor([*command.split()[1:-1], "vulkaninfo", "--summary"], env=env)
    assert fixed.returncode == 0 and re.search(r"deviceName\s+= llvmpipe", fixed.stdout)
    # under --select VKO the overlay's finding is the failure itself
    proc, doc = run_json(["check", "--no-probe", "--select", "VKO001"], env=env)
    assert proc.returncode == 1
    (vko,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    assert vko["severity"] == "fail"


def _steps(recipe: Path) -> dict[str, str]:
    import yaml

    doc = yaml.safe_load(recipe.read_text())
    return {s["name"]: s["run"] for s in doc["jobs"]["gate"]["steps"] if "run" in s and "name" in s}


def test_the_github_env_recipe_runs_the_gate_under_the_overlay(seed: Seed, tmp_path: Path) -> None:
    """docs/ci/github-actions-overlay.yml's preflight and gate lines, run as Actions runs them:
    each step in bash, $GITHUB_ENV's NAME=value lines set in the steps after it. The gate (here
    vulkaninfo) then finds llvmpipe through the overlay the preflight proved."""
    steps = _steps(REPO_ROOT / "docs" / "ci" / "github-actions-overlay.yml")
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "vkdoctor").write_text(f'#!/bin/sh\nexec {sys.executable} -m vkdoctor "$@"\n')
    (shims / "vkdoctor").chmod(0o755)
    (shims / "run-gpu-tests.sh").write_text("#!/bin/sh\nexec vulkaninfo --summary\n")
    (shims / "run-gpu-tests.sh").chmod(0o755)
    github_env = tmp_path / "github_env"
    github_env.write_text("")
    env = clean_env(
        seed.env(
            tmp_path / "cache",
            PATH=f"{shims}:{os.environ['PATH']}",
            PYTHONPATH=str(REPO_ROOT),
            PRIVATE_LIBS=str(seed.llvm_dir),
            GITHUB_ENV=str(github_env),
            LC_ALL="C",
        )
    )

    def step(name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        run = steps[name].replace("./run-gpu-tests.sh", "run-gpu-tests.sh")
        return subprocess.run(
            ["bash", "-e", "-c", run],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
            check=False,
        )

    # without the preflight's export, the gate finds no device
    assert "llvmpipe" not in step("The gate", env).stdout
    preflight = step("Vulkan preflight", env)
    assert preflight.returncode == 0, preflight.stdout + preflight.stderr
    assert "written to GITHUB_ENV" in preflight.stderr
    exported = parse_env_file(github_env.read_text())
    report = json.loads((tmp_path / "vkdoctor.json").read_text())
    assert exported == {"LD_LIBRARY_PATH": report["overlay"]["ld_library_path"]}
    assert report["overlay"]["applied"] is True
    gate = step("The gate", {**env, **exported})
    assert gate.returncode == 0 and re.search(r"deviceName\s+= llvmpipe", gate.stdout)


#: what earlier steps of a job may have left in $GITHUB_ENV, and what the runner reads of it
EARLIER_STEPS = {
    "empty": ("", {}),
    "no final newline": ("PREV=done", {"PREV": "done"}),
    "CRLF": ("A=1\r\nB=2\r\n", {"A": "1", "B": "2"}),
    "CRLF, no final newline": ("A=1\r\nB=2", {"A": "1", "B": "2"}),
    "heredoc": ('JSON<<EOF\n{\n  "a": 1\n}\nEOF\n', {"JSON": '{\n  "a": 1\n}'}),
    "heredoc, no final newline": ("M<<END\nx=y\nEND", {"M": "x=y"}),
    "blank lines": ("\n\nA=1\n\n", {"A": "1"}),
}


@pytest.mark.parametrize("shape", EARLIER_STEPS)
def test_github_env_is_read_by_the_runner_after_any_earlier_step(
    seed: Seed, tmp_path: Path, shape: str
) -> None:
    """Whatever shape an earlier step left $GITHUB_ENV in, the runner (tests/github_runner.py,
    its parser as written in actions/runner) reads both that step's variables and the overlay,
    and a new process started with them, as the next step is, gets a Vulkan device."""
    earlier, theirs = EARLIER_STEPS[shape]
    github_env = tmp_path / "github_env"
    github_env.write_bytes(earlier.encode())
    env = seed.env(tmp_path / "cache", GITHUB_ENV=str(github_env))
    args = ["check", "--no-probe", "--search-path", str(seed.llvm_dir), "--github-env"]
    proc = run_vkdoctor(args, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    read = parse_env_file(github_env.read_text())
    assert {k: read[k] for k in theirs} == theirs
    assert set(read) == {*theirs, "LD_LIBRARY_PATH"}
    gate = subprocess.run(
        ["vulkaninfo", "--summary"],
        env=clean_env({**seed.env(tmp_path / "cache"), **read}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert gate.returncode == 0 and re.search(r"deviceName\s+= llvmpipe", gate.stdout), gate.stderr
    # without the overlay the same process finds no device: the entry is what made it work
    bare = subprocess.run(
        ["vulkaninfo", "--summary"],
        env=clean_env({**seed.env(tmp_path / "cache"), **theirs}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "llvmpipe" not in bare.stdout


#: what an earlier command of the same step may leave that makes the runner fail the step
REJECTED_BY_THE_RUNNER = {
    "heredoc never closed": ("PREV=1\nJSON<<EOF\n{}\n", "line 2: `JSON<<EOF` opens a value"),
    "closed by an indented line only": ("M<<END\nx\n END\n", "line 1: `M<<END`"),
    "neither form": ("A=1\nechoed by mistake\n", "line 2: `echoed by mistake` is neither"),
    "no name": ("=1\n", "line 1: `=1` has no name"),
}


@pytest.mark.parametrize("shape", [*EARLIER_STEPS, *REJECTED_BY_THE_RUNNER])
def test_what_the_runner_rejects_is_what_vkdoctor_says_it_rejects(shape: str) -> None:
    from tests.github_runner import RunnerError
    from vkdoctor.model.githubenv import rejected

    text = {**EARLIER_STEPS, **REJECTED_BY_THE_RUNNER}[shape][0]
    try:
        parse_env_file(text)
        runner_rejects = False
    except RunnerError:
        runner_rejects = True
    assert (rejected(text) is not None) == runner_rejects


@pytest.mark.parametrize("shape", REJECTED_BY_THE_RUNNER)
def test_a_github_env_the_runner_will_reject_is_named_and_left_alone(
    seed: Seed, tmp_path: Path, shape: str
) -> None:
    """Appending would change nothing (the runner sets none of the file's variables): the
    line that breaks it is named, nothing is written, and the exit is 2."""
    earlier, said = REJECTED_BY_THE_RUNNER[shape]
    github_env = tmp_path / "github_env"
    github_env.write_text(earlier)
    env = seed.env(tmp_path / "cache", GITHUB_ENV=str(github_env))
    args = ["check", "--no-probe", "--search-path", str(seed.llvm_dir), "--github-env"]
    proc = run_vkdoctor(args, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert said in proc.stderr and "the runner will fail the step" in proc.stderr
    assert github_env.read_text() == earlier


@pytest.mark.parametrize(
    "earlier", ["LD_LIBRARY_PATH=/opt/earlier step\n", "LD_LIBRARY_PATH<<X\n/opt/a\nX\n"]
)
def test_an_ld_library_path_an_earlier_command_set_is_not_dropped(
    seed: Seed, tmp_path: Path, earlier: str
) -> None:
    """The runner keeps the last setting of a name: vkdoctor's entry after an earlier one lost
    that value for the later steps, in silence. The entry is not written (exit 2, the line
    named); the fix it gives, the value exported before vkdoctor runs, gives the later steps
    both, and a device."""
    github_env = tmp_path / "github_env"
    github_env.write_text(earlier)
    env = seed.env(tmp_path / "cache", GITHUB_ENV=str(github_env))
    args = ["check", "--no-probe", "--search-path", str(seed.llvm_dir), "--github-env"]
    proc = run_vkdoctor(args, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert "nothing written" in said and "sets LD_LIBRARY_PATH already (line 1" in said, said
    assert "Export that value in the shell before vkdoctor runs" in said
    assert github_env.read_text() == earlier
    # the fix: the value exported in the step's shell, the file as the runner starts a step
    value = parse_env_file(earlier)["LD_LIBRARY_PATH"]
    github_env.write_text("")
    proc = run_vkdoctor(args, env={**env, "LD_LIBRARY_PATH": value})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    read = parse_env_file(github_env.read_text())
    assert value in read["LD_LIBRARY_PATH"].split(":")
    gate = subprocess.run(
        ["vulkaninfo", "--summary"],
        env=clean_env({**seed.env(tmp_path / "cache"), **read}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert gate.returncode == 0 and re.search(r"deviceName\s+= llvmpipe", gate.stdout), gate.stderr


def test_github_env_needs_the_variable_and_a_plain_file(seed: Seed, tmp_path: Path) -> None:
    proc = run_vkdoctor(["check", "--no-probe", "--github-env"], env=seed.env(tmp_path / "c"))
    assert proc.returncode == 2 and "GITHUB_ENV is not set" in proc.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    env = seed.env(tmp_path / "c", GITHUB_ENV=str(fifo))
    proc = run_vkdoctor(
        ["check", "--no-probe", "--search-path", str(seed.llvm_dir), "--github-env"], env=env
    )
    assert proc.returncode == 2 and "is not a regular file" in proc.stderr


def test_no_adapter_after_a_missing_library_is_one_failure(seed: Seed, tmp_path: Path) -> None:
    """lavapipe lacks libLLVM.so.23.1 and is the only driver: VKL002 names the cause and the fix
    before anything loads; the probe's "no adapter" follows from it and is no second failure."""
    proc, doc = run_json(["check", "--cpu"], env=seed.env(tmp_path / "cache"))
    assert proc.returncode == 1
    assert doc["probe"]["status"] == "no-adapter"
    (vkl2,) = [f for f in doc["findings"] if f["code"] == "VKL002"]
    assert vkl2["severity"] == "fail"
    (vkr1,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert vkr1["severity"] == "info"
    assert vkr1["title"].endswith("as the library findings predicted")
    assert not [
        f for f in doc["findings"] if f["code"][:3] in ("VKT", "VKR") and f["severity"] == "fail"
    ]


def test_a_full_disk_leaves_github_env_as_the_earlier_steps_left_it(tmp_path: Path) -> None:
    """On a real 64 KiB tmpfs with room for part of the entry only: nothing is appended (a
    heredoc left open makes the runner reject the whole file, the earlier step's PREV too),
    and the failure is said."""
    from vkdoctor.model.githubenv import GithubEnvError, export_overlay
    from vkdoctor.model.report_records import OverlayReport

    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        env_file = mnt / "github_env"
        earlier = "PREV=" + "x" * 4050 + "\n"
        env_file.write_text(earlier)
        filler = mnt / "fill"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 512):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        os.truncate(filler, filler.stat().st_size - 4096)  # one page left: a part fits
        room = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        assert 0 < room <= 4096
        value = "/o/" + "v" * 6000  # more than what is left, less than a page more
        overlay = OverlayReport(
            dir="/o", ld_library_path=value, libraries=(), applied=True, exec=""
        )
        with pytest.raises(GithubEnvError, match="No space left on device"):
            export_overlay(overlay, str(env_file))
        assert env_file.read_text() == earlier
        assert parse_env_file(env_file.read_text()) == {"PREV": "x" * 4050}
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
