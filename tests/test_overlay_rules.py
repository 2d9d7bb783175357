"""The overlay's rules on small real libraries built with gcc: candidates, refusals, bad inputs.

Each scenario is a fake driver (a gcc-built .so selected with VK_DRIVER_FILES) whose DT_NEEDED
names a soname the system lacks; `vkdoctor overlay` plans statically, so the fake need not work
as a Vulkan driver.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import overlay_lab as lab
from tests.conftest import run_json, run_vkdoctor


def _driver(tmp: Path, name: str, needs: list[Path], *, extra_needed: tuple[str, ...] = ()) -> Path:
    """A fake ICD linked against `needs` (and naming `extra_needed`); returns its manifest."""
    drv = lab.shared_lib(
        tmp / "drv" / f"libvulkan_{name}.so",
        f"libvulkan_{name}.so",
        needs=needs,
        use_symbol=_fn(needs[0]) if needs else None,
    )
    for soname in extra_needed:
        lab.run(["patchelf", "--add-needed", soname, str(drv)])
    (tmp / "icd").mkdir(exist_ok=True)
    return lab.manifest(tmp / "icd" / f"{name}.json", drv)


def _fn(lib: Path) -> str:
    """The function overlay_lab.shared_lib defines in `lib`."""
    return lib.name.split(".so")[0].removeprefix("lib").replace("-", "_").replace("+", "p") + "_fn"


def _env(tmp: Path, *manifests: Path, **extra: str) -> dict[str, str]:
    return {
        "VK_DRIVER_FILES": ":".join(str(m) for m in manifests),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        **extra,
    }


def _overlay(
    args: list[str], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    proc = run_vkdoctor(["overlay", *args], env=env, timeout=120)
    lines = [ln.removeprefix("vkdoctor overlay: ") for ln in proc.stderr.splitlines()]
    return proc, lines


def _build_provider(tmp: Path, soname: str, node: str | None) -> Path:
    """A library `soname` (with symbols in version node `node`) that a fake driver links against."""
    return lab.shared_lib(tmp / "build" / soname, soname, version_node=node)


def test_version_lacking_candidate_refused_and_good_one_chosen(tmp_path: Path) -> None:
    provider = _build_provider(tmp_path, "libfoo.so.2", "FOO_2")
    manifest = _driver(tmp_path, "foo", [provider])
    # The library the driver was built against is not installed: the soname is missing.
    old = lab.shared_lib(tmp_path / "old" / "libfoo.so.2", "libfoo.so.2", version_node="FOO_1")
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(provider, good / "libfoo.so.2")
    twin = tmp_path / "twin"
    twin.mkdir()
    shutil.copy(provider, twin / "libfoo.so.2")
    env = _env(tmp_path, manifest)

    proc, lines = _overlay(
        ["--search-path", str(old.parent), "--search-path", str(good), "--search-path", str(twin)],
        env,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{old} (search path): refused: lacks symbol version FOO_2 that " in "\n".join(lines)
    assert any(
        ln.startswith("libfoo.so.2 (needed by ") and f"using {good}/libfoo.so.2" in ln
        for ln in lines
    )
    assert f"  {twin}/libfoo.so.2 (search path): also acceptable, not chosen" in lines
    out = proc.stdout.strip()
    assert out.startswith("export LD_LIBRARY_PATH=") and str(tmp_path / "cache") in out

    proc, _ = _overlay(["--search-path", str(old.parent), "--format", "json"], env)
    assert proc.returncode == 1 and json.loads(proc.stdout) is None
    assert "cannot build an overlay" in proc.stderr
    assert "lacks symbol version FOO_2" in proc.stderr


def test_bad_search_paths_and_bad_candidates_are_named(tmp_path: Path) -> None:
    provider = _build_provider(tmp_path, "libbar.so.1", None)
    manifest = _driver(tmp_path, "bar", [provider])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libbar.so.1").symlink_to(tmp_path / "nowhere" / "libbar.so.1")
    (bad / "libbar.so.1.0").write_text(
        "INPUT(libbar.so.1.2.3) /* a linker script, not a library */\n" * 2
    )
    (bad / "libbar.so.1.1").write_bytes(provider.read_bytes()[:100])
    lab.shared_lib(bad / "libbar.so.1.2", "libbar.so.1", bits=32)
    lab.shared_lib(bad / "libbar.so.1.3", "libbaz.so.1")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(provider, good / "libbar.so.1.0.0")
    env = _env(tmp_path, manifest, VKDOCTOR_SEARCH_PATH=str(good))

    proc, lines = _overlay(
        [
            "--search-path",
            str(tmp_path / "missing"),
            "--search-path",
            str(a_file),
            "--search-path",
            str(bad),
            "--format",
            "json",
        ],
        env,
    )
    assert proc.returncode == 0, proc.stderr
    text = "\n".join(lines)
    assert f"search path {tmp_path / 'missing'}: does not exist" in text
    assert f"search path {a_file}: is not a directory" in text
    assert (
        f"{bad}/libbar.so.1 (search path): refused: a broken symbolic link (to {tmp_path}/nowhere/libbar.so.1)"
        in text
    )
    assert f"{bad}/libbar.so.1.0 (search path): refused: not an ELF file" in text
    assert f"{bad}/libbar.so.1.1 (search path): refused: a truncated ELF file" in text or (
        f"{bad}/libbar.so.1.1 (search path): refused: a malformed ELF file" in text
    )
    assert f"{bad}/libbar.so.1.2 (search path): refused: ELFCLASS32, but " in text
    assert (
        f"{bad}/libbar.so.1.3 (search path): refused: has DT_SONAME libbaz.so.1, not libbar.so.1"
        in text
    )
    doc = json.loads(proc.stdout)
    assert [lib["soname"] for lib in doc["libraries"]] == ["libbar.so.1"]
    assert doc["libraries"][0]["target"] == str(good / "libbar.so.1.0.0")
    assert doc["libraries"][0]["needed_by"] == [str(tmp_path / "drv" / "libvulkan_bar.so")]
    ovl = Path(doc["dir"])
    assert [p.name for p in ovl.iterdir()] == ["libbar.so.1"]
    assert doc["ld_library_path"] == str(ovl)


def test_protected_soname_and_second_llvm_are_refused(tmp_path: Path) -> None:
    # A driver that needs libdrm.so.3 (the system has libdrm.so.2): an overlay never supplies libdrm.
    drm = _build_provider(tmp_path, "libdrm.so.3", None)
    m_drm = _driver(tmp_path, "drm", [drm])
    supply = tmp_path / "supply"
    supply.mkdir()
    shutil.copy(drm, supply / "libdrm.so.3")
    proc, lines = _overlay(["--search-path", str(supply)], _env(tmp_path, m_drm))
    assert proc.returncode == 1 and proc.stdout == ""
    assert (
        "not in the overlay: libdrm.so.3: libdrm.so.3 is libdrm, which the kernel graphics drivers "
        "and Mesa share; an overlay never supplies it, install it from the distribution instead"
    ) in lines
    assert not (tmp_path / "cache" / "vkdoctor" / "overlays").exists() or not list(
        (tmp_path / "cache" / "vkdoctor" / "overlays").iterdir()
    )

    # Two drivers in one process: one loads the system's libLLVM-15.so.1, the other wants
    # libLLVM.so.23.1: a second LLVM in the process is refused.
    newllvm = _build_provider(tmp_path, "libLLVM.so.23.1", None)
    m_new = _driver(tmp_path, "newllvm", [newllvm])
    m_sys = _driver(tmp_path, "sysllvm", [], extra_needed=("libLLVM-15.so.1",))
    shutil.copy(newllvm, supply / "libLLVM.so.23.1")
    proc, lines = _overlay(["--search-path", str(supply)], _env(tmp_path, m_sys, m_new))
    assert proc.returncode == 1, proc.stdout
    refusal = next(ln for ln in lines if ln.startswith("not in the overlay: libLLVM.so.23.1"))
    assert "would be a second llvm library in the process" in refusal
    assert f"{tmp_path}/drv/libvulkan_sysllvm.so already loads libLLVM-15.so.1" in refusal


def test_nothing_to_do_is_silent_on_stdout(tmp_path: Path) -> None:
    proc, lines = _overlay([], _env(tmp_path, Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")))
    assert proc.returncode == 0 and proc.stdout == ""
    assert lines == ["nothing to do: every library the Vulkan drivers need resolves"]
    # as JSON: a document all the same (`| jq` must not fail on empty input)
    env = _env(tmp_path, Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"))
    proc, lines = _overlay(["--format", "json"], env)
    assert proc.returncode == 0 and json.loads(proc.stdout) is None


def test_check_reports_what_it_looked_for_and_why_candidates_were_refused(tmp_path: Path) -> None:
    from tests.conftest import run_json

    provider = _build_provider(tmp_path, "libfoo.so.2", "FOO_2")
    manifest = _driver(tmp_path, "foo", [provider])
    old = lab.shared_lib(tmp_path / "old" / "libfoo.so.2", "libfoo.so.2", version_node="FOO_1")
    env = _env(tmp_path, manifest)
    proc, doc = run_json(
        [
            "check",
            "--no-probe",
            "--select",
            "VKO",
            "--search-path",
            str(old.parent),
            "--search-path",
            str(tmp_path / "typo"),
        ],
        env=env,
    )
    by_code: dict[str, list[dict[str, object]]] = {}
    for f in doc["findings"]:
        by_code.setdefault(f["code"], []).append(f)
    (vko1,) = by_code["VKO001"]
    assert vko1["severity"] == "warn" and vko1["title"] == "No safe overlay for libfoo.so.2"
    assert (
        f"Looked for libfoo.so.2 in: {old.parent} (search path); {tmp_path}/typo (search path)"
        in vko1["message"]
    )
    assert (
        f"{old}: lacks symbol version FOO_2 that {tmp_path}/drv/libvulkan_foo.so needs"
        in vko1["message"]
    )
    (vko2,) = by_code["VKO002"]
    assert vko2["title"] == f"Search path {tmp_path}/typo does not exist"
    (vko3,) = by_code["VKO003"]
    assert vko3["severity"] == "warn" and "lacks symbol version FOO_2" in vko3["message"]
    assert vko3["evidence"]["path"] == str(old)
    assert doc["overlay"] is None
    assert proc.returncode == 0


def test_read_only_cache_falls_back_to_a_private_store_and_says_so(tmp_path: Path) -> None:
    """A cache that cannot be written: the runtime dir, else a fresh private temporary directory,
    with the reason on stderr; with nowhere to write at all, a clear error and exec runs CMD
    unchanged."""
    import sys

    from tests.conftest import REPO, clean_env

    provider = _build_provider(tmp_path, "libqux.so.1", None)
    manifest = _driver(tmp_path, "qux", [provider])
    supply = tmp_path / "supply"
    supply.mkdir()
    shutil.copy(provider, supply / "libqux.so.1")
    cache = tmp_path / "rocache"
    cache.mkdir()
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = clean_env(_env(tmp_path, manifest, PYTHONPATH=str(REPO), LD_LIBRARY_PATH="/keep/me"))
    env["XDG_CACHE_HOME"] = str(cache)
    vk = f"{sys.executable} -m vkdoctor"
    drv = tmp_path / "drv" / "libvulkan_qux.so"
    (tmp_path / "load.py").write_text(
        f"import ctypes\nctypes.CDLL({str(drv)!r})\nprint('loaded')\n"
    )
    load = f"{sys.executable} {tmp_path / 'load.py'}"
    script = (
        f"mount -t tmpfs -o ro,size=64k tmpfs {cache} || exit 99; "
        f"XDG_RUNTIME_DIR={runtime} {vk} overlay --search-path {supply} --format env; "
        "echo rc=$?; "
        f"{vk} exec --search-path {supply} -- sh -c 'echo LLP=$LD_LIBRARY_PATH; {load}'; "
        "echo rc=$?; "
        # nowhere to write: the cache, TMPDIR and /tmp all read-only
        # (--rbind: /tmp may have mounts of its own, which a plain bind cannot take along)
        "mount --rbind /tmp /tmp && mount -o remount,bind,ro /tmp || exit 98; "
        f"{vk} overlay --search-path {supply}; echo rc=$?; "
        f"{vk} overlay --search-path {supply} --format json; echo rc=$?; "
        f"{vk} exec --search-path {supply} -- sh -c 'echo LLP=$LD_LIBRARY_PATH'; echo rc=$?"
    )
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        cwd=REPO,
        check=False,
    )
    out = proc.stdout.splitlines()
    assert len(out) == 10, (proc.stdout, proc.stderr)
    # the runtime dir: the overlay is built there, and the run says why
    assert out[0].startswith(f"LD_LIBRARY_PATH={runtime}/vkdoctor/overlays/"), proc.stderr
    assert out[0].endswith(":/keep/me") and out[1] == "rc=0"
    assert (
        f"vkdoctor overlay: store: cannot create vkdoctor's store {cache}/vkdoctor: the file "
        f"system is read-only; using {runtime}/vkdoctor instead"
    ) in proc.stderr
    # no runtime dir: a fresh private directory in /tmp, and the driver loads under it
    fresh = out[2].removeprefix("LLP=").split("/overlays/")[0]
    assert fresh.startswith("/tmp/vkdoctor-0-") and out[2].endswith(":/keep/me"), out
    assert out[3:5] == ["loaded", "rc=0"]
    assert f"using {fresh} instead, a new private directory for this run only" in proc.stderr
    assert Path(fresh).stat().st_mode & 0o777 == 0o700
    shutil.rmtree(fresh)
    # JSON gets `null` (no overlay) there too, for the program that reads it
    assert out[5:] == ["rc=1", "null", "rc=1", "LLP=/keep/me", "rc=0"], out
    assert (
        f"vkdoctor overlay: cannot create vkdoctor's store {cache}/vkdoctor: the file system is "
        "read-only; and cannot create a directory in /tmp: the file system is read-only"
    ) in proc.stderr
    assert (
        "  fix: point XDG_CACHE_HOME at a directory this user can write "
        "(for one run: XDG_CACHE_HOME=$(mktemp -d) vkdoctor ...)"
    ) in proc.stderr
    assert "vkdoctor exec: no overlay: cannot create vkdoctor's store" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_dependencies_of_the_chosen_file_are_supplied_or_refused(tmp_path: Path) -> None:
    dep = _build_provider(tmp_path, "libdep.so.5", None)
    top = lab.shared_lib(
        tmp_path / "build" / "libtop.so.3", "libtop.so.3", needs=[dep], use_symbol="dep_fn"
    )
    manifest = _driver(tmp_path, "top", [top])
    first = tmp_path / "first"
    second = tmp_path / "second"
    first.mkdir()
    second.mkdir()
    shutil.copy(top, first / "libtop.so.3")
    env = _env(tmp_path, manifest)

    # libdep.so.5 exists nowhere: libtop.so.3 is refused, naming what it lacks.
    proc, lines = _overlay(["--search-path", str(first)], env)
    assert proc.returncode == 1, proc.stdout
    assert (
        f"not in the overlay: libtop.so.3: {first}/libtop.so.3 needs libdep.so.5 (through "
        f"{first}/libtop.so.3), which does not resolve even with the overlay"
    ) in lines
    assert not list((tmp_path / "cache" / "vkdoctor" / "overlays").iterdir())

    # In a second search path it is found and supplied too, needed by the chosen file.
    shutil.copy(dep, second / "libdep.so.5")
    proc, _ = _overlay(
        ["--search-path", str(first), "--search-path", str(second), "--format", "json"], env
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["libraries"] == [
        {
            "soname": "libdep.so.5",
            "target": str(second / "libdep.so.5"),
            "needed_by": [str(first / "libtop.so.3")],
        },
        {
            "soname": "libtop.so.3",
            "target": str(first / "libtop.so.3"),
            "needed_by": [str(tmp_path / "drv" / "libvulkan_top.so")],
        },
    ]
    assert [p.name for p in (tmp_path / "cache" / "vkdoctor" / "overlays").iterdir()] == [
        Path(doc["dir"]).name
    ]


def test_a_file_others_can_replace_is_refused(tmp_path: Path) -> None:
    provider = _build_provider(tmp_path, "libwob.so.1", None)
    manifest = _driver(tmp_path, "wob", [provider])
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.copy(provider, shared / "libwob.so.1")
    (shared / "libwob.so.1").chmod(0o666)
    proc, lines = _overlay(["--search-path", str(shared)], _env(tmp_path, manifest))
    assert proc.returncode == 1
    assert f"  {shared}/libwob.so.1 (search path): refused: writable by anyone (mode 0666)" in lines
    (shared / "libwob.so.1").chmod(0o644)
    shared.chmod(0o777)
    proc, lines = _overlay(["--search-path", str(shared)], _env(tmp_path, manifest))
    assert proc.returncode == 1
    assert (
        f"  {shared}/libwob.so.1 (search path): refused: in {shared}, a directory anyone can write"
        in lines
    )
    # higher up counts too: whoever may rename `sub` in `shared` swaps the file with it
    shared.chmod(0o755)
    sub = shared / "sub"
    sub.mkdir()
    shutil.move(shared / "libwob.so.1", sub / "libwob.so.1")
    proc, lines = _overlay(["--search-path", str(sub)], _env(tmp_path, manifest))
    assert proc.returncode == 0, lines
    shared.chmod(0o777)
    proc, lines = _overlay(["--search-path", str(sub)], _env(tmp_path, manifest))
    assert proc.returncode == 1
    assert (
        f"  {sub}/libwob.so.1 (search path): refused: under {shared}, a directory anyone can write"
        in lines
    )
    # sticky (as /tmp is): only the owner of `sub` can rename it, and that is root here
    shared.chmod(0o1777)
    proc, lines = _overlay(["--search-path", str(sub)], _env(tmp_path, manifest))
    assert proc.returncode == 0, lines
    shared.chmod(0o755)


def test_unreadable_search_path_is_named(tmp_path: Path) -> None:
    """As an unprivileged user (root reads everything: the search runs in a child as nobody)."""
    import os
    import tempfile

    from vkdoctor.model.context import Context, Options
    from vkdoctor.model.record import to_json
    from vkdoctor.overlay.candidates import Need, search, user_dirs

    top = Path(tempfile.mkdtemp(prefix="vkdoctor-overlay-nobody-", dir="/tmp"))
    try:
        top.chmod(0o755)
        locked = top / "locked"
        locked.mkdir(mode=0o700)
        lab.shared_lib(locked / "libq.so.1", "libq.so.1")
        locked.chmod(0o000)
        ctx = Context(env={}, options=Options(search_paths=(locked,)))
        need = Need(soname="libq.so.1", needed_by=("/x/libvulkan_q.so",))
        r, w = os.pipe()
        pid = os.fork() if os.geteuid() == 0 else 0
        if pid == 0:
            code = 0
            try:
                if os.geteuid() == 0:
                    os.close(r)
                    os.setgroups([])
                    os.setgid(65534)
                    os.setuid(65534)
                found = search(ctx, [need], user_dirs(ctx))
                text = json.dumps(to_json(found.problems))
                os.write(w, text.encode())
            except BaseException:
                code = 1
            if os.geteuid() == 65534:
                os._exit(code)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            problems = json.loads(f.read())
        if pid:
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
        assert problems == [
            {
                "path": str(locked),
                "origin": "search path",
                "message": "cannot be read (Permission denied)",
            }
        ]
    finally:
        (top / "locked").chmod(0o755)
        shutil.rmtree(top)


def test_json_report_to_a_device_writes_through_it(tmp_path: Path) -> None:
    """`--json /dev/stdout` (or /dev/null) must not rename a file over the device node."""
    proc = run_vkdoctor(["check", "--no-probe", "--select", "VKH001", "--json", "/dev/stdout"])
    assert proc.returncode == 0, proc.stderr
    assert '"schema_version": 1' in proc.stdout
    assert Path("/dev/stdout").is_symlink()
    assert Path("/dev/null").is_char_device()


@pytest.mark.parametrize("option", ["--json", "--junit"])
def test_a_report_file_that_cannot_be_written_keeps_the_report_and_says_so(option: str) -> None:
    """A full disk under the report file: the text report is printed all the same, the reason is
    on stderr, and a clean run is not exit 0 (a gate must not pass without its artifact)."""
    proc = run_vkdoctor(["check", "--no-probe", "--select", "VKH001", option, "/dev/full"])
    assert proc.returncode == 2
    assert proc.stdout.startswith("  · Host  ") and "vkdoctor: OK" in proc.stdout
    assert proc.stderr.strip() == "vkdoctor: cannot write /dev/full: No space left on device"
    # a failure stays a failure
    proc = run_vkdoctor(
        ["check", "--no-probe", "--select", "VKD001", option, "/dev/full"],
        env={"VK_DRIVER_FILES": "/nonexistent.json"},
    )
    assert proc.returncode == 1 and "VKD001" in proc.stdout
    proc = run_vkdoctor(["drivers", "--json", "/dev/full"])
    assert proc.returncode == 2 and "drivers can load" in proc.stdout


def test_mistyped_search_path_and_package_are_said_when_nothing_is_missing(tmp_path: Path) -> None:
    not_a_package = tmp_path / "llvm-libs-23.1.0-1-x86_64.pkg.tar.zst"
    not_a_package.write_text("<html>404 Not Found</html>\n")
    proc, doc = run_json(
        [
            "check",
            "--no-probe",
            "--select",
            "VKO",
            "--search-path",
            str(tmp_path / "no-such-dir"),
            "--from-package",
            str(not_a_package),
        ]
    )
    assert proc.returncode == 0, proc.stderr
    by_title = {f["title"]: f for f in doc["findings"] if f["code"] == "VKO002"}
    missing = by_title[f"Search path {tmp_path / 'no-such-dir'} does not exist"]
    assert missing["severity"] == "warn"
    package = by_title["A package file cannot be used"]
    assert package["message"].startswith(
        f"{not_a_package} is not a package vkdoctor can read (it starts with '<html>40'"
    )
    assert doc["status"] == "warn"
