"""A `check --no-probe` replayed (vkdoctor.speed.replay): a second run on an unchanged machine prints
the report of the first without running the static checks again, and any change it could have
seen (a new manifest, a replaced or touched library, less free space) makes it a full run at
once. What a run records of its reads is held against what strace sees it read."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, clean_env
from test_loadtest import LVP_MANIFEST

from vkdoctor.model.context import Context, watch_facts
from vkdoctor.speed import factcache, inputs, replay

ENTRY = "from vkdoctor.launch import main; main()"
LVP_LIBRARY = Path("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so")


def _check(env: dict[str, str], *args: str, cwd: Path = REPO) -> tuple[int, str, bool]:
    """`check --no-probe ARGS` through the console entry point: its exit status, its standard
    output and whether it was replayed (it then never imports the command line interface)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", ENTRY, "check", "--no-probe", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=180,
        check=False,
    )
    return proc.returncode, proc.stdout, "| vkdoctor.cli" not in proc.stderr


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = clean_env({"XDG_CACHE_HOME": str(tmp / "cache"), "XDG_DATA_HOME": str(tmp / "data")})
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def _replayed_soon(env: dict[str, str]) -> tuple[int, str]:
    """Run until a run is replayed. A run with a fresh cache starts the package tools (grep
    over dpkg's lists, dpkg --audit), so it is not kept; the second keeps what the tools said
    (vkdoctor.speed.factcache) and is (unless it read a file changed in the second before it
    started: vkdoctor.speed.replay.RACY_NS); the next one is replayed."""
    for _ in range(8):
        code, out, replayed = _check(env)
        if replayed:
            return code, out
    raise AssertionError("eight runs on an unchanged machine, none replayed")


def _steady(out: str) -> str:
    """The report without the free space, which other programs change between two runs."""
    return re.sub(r"\d+\.\d GiB free", "N GiB free", out)


def test_a_second_run_prints_the_first_report_and_a_full_run_agrees(tmp_path: Path) -> None:
    env = _env(tmp_path)
    code, out, _ = _check(env)
    assert code == 0 and "vkdoctor: OK" in out
    again, replayed_out = _replayed_soon(env)
    assert (again, _steady(replayed_out)) == (code, _steady(out))
    # another cache: a full run, and the same report
    fresh = _check(_env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "other")))
    assert (fresh[0], _steady(fresh[1]), fresh[2]) == (code, _steady(out), False)
    # -vv shows evidence (times, bytes free) of the run it comes from: never replayed
    for _ in range(2):
        code, out, replayed = _check(env, "-vv")
        assert code == 0 and "evidence:" in out and not replayed


def test_a_new_manifest_is_seen_by_the_next_run(tmp_path: Path) -> None:
    env = _env(tmp_path)
    _replayed_soon(env)
    icd = tmp_path / "data" / "vulkan" / "icd.d" / "vkdoctor_new_icd.json"
    icd.parent.mkdir(parents=True)
    icd.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": '
        f'"{tmp_path}/libvulkan_gone.so", "api_version": "1.3.0"}}}}'
    )
    code, out, replayed = _check(env)
    assert not replayed
    assert code == 0 and "VKD005 vkdoctor_new_icd.json" in out  # a warning


@pytest.fixture
def private_lavapipe(tmp_path: Path) -> Iterator[Path]:
    """A manifest of the user's own for a copy of lavapipe: (its library)."""
    library = tmp_path / "lib" / "libvulkan_lvp.so"
    library.parent.mkdir()
    shutil.copy2(LVP_LIBRARY, library)
    icd = tmp_path / "data" / "vulkan" / "icd.d" / "my_lvp.json"
    icd.parent.mkdir(parents=True)
    text = Path(LVP_MANIFEST).read_text().replace(str(LVP_LIBRARY), str(library))
    text = re.sub(r'"library_path":\s*"[^"]*"', f'"library_path": "{library}"', text)
    icd.write_text(text)
    yield library


def test_a_library_replaced_or_touched_is_seen_by_the_next_run(
    tmp_path: Path, private_lavapipe: Path
) -> None:
    env = _env(tmp_path)
    good = _replayed_soon(env)
    assert good[0] == 0
    os.utime(private_lavapipe)  # the same bytes: a full run, the same report
    code, out, replayed = _check(env)
    assert (code, _steady(out), replayed) == (good[0], _steady(good[1]), False)
    _replayed_soon(env)
    data = private_lavapipe.read_bytes()
    private_lavapipe.write_bytes(data[:4096])  # cut short, in place
    code, out, replayed = _check(env)
    assert not replayed
    assert code == 1 and "my_lvp.json" in out


SHIM = r"""
#include <signal.h>
#include <unistd.h>
/* lavapipe under another name (it needs libvulkan_lvp.so, whose entry points the loader finds
   through this library's handle), which crashes at dlopen once FLAG exists */
__attribute__((constructor)) static void shim_ctor(void) {
    if (access(FLAG, F_OK) == 0) raise(SIGSEGV);
}
"""


def test_a_driver_that_starts_crashing_with_no_file_changed_is_seen(tmp_path: Path) -> None:
    """Nothing the run reads changes; only what a driver does when loaded: the replay's load
    test finds it, and the run is a full one that reports the crash."""
    flag = tmp_path / "crash-now"
    source = tmp_path / "shim.c"
    source.write_text(SHIM)
    library = tmp_path / "lib" / "libvulkan_shim.so"
    library.parent.mkdir()
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f'-DFLAG="{flag}"', "-o", str(library), str(source),
         "-Wl,--no-as-needed", str(LVP_LIBRARY)],
        check=True, timeout=60,
    )  # fmt: skip
    icd = tmp_path / "data" / "vulkan" / "icd.d" / "shim_icd.json"
    icd.parent.mkdir(parents=True)
    icd.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": '
        f'"{library}", "api_version": "1.3.0"}}}}'
    )
    env = _env(tmp_path)
    code, out = _replayed_soon(env)
    assert code == 0 and "shim_icd.json" in out
    flag.touch()
    code, out, replayed = _check(env)
    assert not replayed
    assert code == 1 and "SIGSEGV" in out


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 5,300 MiB: 5.2 GiB free, above the 5 GiB at which the disk check warns."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=5300m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_less_free_space_is_seen_by_the_next_run(tmp_path: Path, small_filesystem: Path) -> None:
    env = _env(tmp_path, XDG_CACHE_HOME=str(small_filesystem))
    code, out = _replayed_soon(env)
    assert code == 0 and "5.2 GiB free" in out
    with open(small_filesystem / "filler", "wb") as f:
        f.write(b"\1" * (300 * 1024 * 1024))  # tmpfs: really taken, 4.9 GiB left
    code, out, replayed = _check(env)
    assert not replayed
    assert "5.2 GiB free" not in out and "4.9 GiB" in out and "VKS001" in out


def test_what_strace_sees_a_run_read_is_what_it_recorded(tmp_path: Path) -> None:
    """Every file and folder the checks' process (and its fork for the package checks) opened,
    examined or listed is among the looks the run kept, but for Python's own files, vkdoctor's
    cache and the load test's folder; the load test's child is the live part and not counted."""
    env = _env(tmp_path)
    assert not _check(env)[2]  # the package tools' answers kept: the next run starts none
    log = tmp_path / "strace.log"
    subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=%file,getdents64,clone,clone3,fork,vfork", "-o", str(log),
         sys.executable, "-c", ENTRY, "check", "--no-probe"],
        env=env, cwd=REPO, capture_output=True, timeout=300, check=True,
    )  # fmt: skip
    store = factcache.store(tmp_path / "cache" / "vkdoctor", "replay", sources=_sources())
    assert store is not None
    entries = list(store._load().values())
    assert len(entries) == 1, "the run was not kept"
    recorded = {path for _, path, _ in entries[0]["looks"]} | set(entries[0]["live_looks"])
    lines = log.read_text().splitlines()
    child = _first_fork(lines)
    own = {
        os.path.realpath(p)
        for p in (sys.prefix, sys.base_prefix, REPO / "vkdoctor", REPO / "probes")
    }
    libraries = _the_interpreters_libraries()
    missed = set()
    checked = 0
    for line in lines:
        pid, call = line.split(None, 1)
        if pid == child or not call.startswith(_READS) or re.search(r"O_(WRONLY|RDWR|CREAT)", call):
            continue
        for path in re.findall(r'"(/[^"]*)"', call)[:1]:
            if _python_or_ours(path, own, tmp_path) or os.path.realpath(path) in libraries:
                continue
            checked += 1
            if path not in recorded and os.path.normpath(path) not in recorded:
                missed.add(path)
    assert sorted(missed) == [], "\n".join(sorted(missed))
    assert checked > 1000  # the manifests, the ELF files' search, dpkg's lists: all looked for


#: the system calls that read a path (strace's names)
_READS = (
    "open(", "openat(", "stat(", "lstat(", "newfstatat(", "statx(", "access(", "faccessat(",
    "faccessat2(", "readlink(", "readlinkat(",
)  # fmt: skip


def _the_interpreters_libraries() -> set[str]:
    """What ld.so loads for Python's own extension modules (zlib, _hashlib, _uuid...)."""
    import sysconfig

    found: set[str] = set()
    dynload = Path(sysconfig.get_config_var("DESTSHARED"))
    for module in [*dynload.glob("*.so"), Path(sys.executable).resolve()]:
        out = subprocess.run(["ldd", str(module)], capture_output=True, text=True, check=False)
        for path in re.findall(r"(/\S+)", out.stdout):
            found.update((path, os.path.realpath(path)))
    return found


def _sources() -> tuple[str, ...]:
    return (replay.__file__, inputs.__file__, factcache.__file__)


def _first_fork(lines: list[str]) -> str:
    """The pid of the first process the run forked: the load test's child (vkdoctor.speed.zygote)."""
    main = lines[0].split()[0]
    for line in lines:
        found = re.match(rf"{main}\s+(?:clone\(|<\.\.\. clone resumed>).*\) = (\d+)", line)
        if found:
            return found.group(1)
    raise AssertionError("no fork")


def _python_or_ours(path: str, own: set[str], tmp: Path) -> bool:
    real = os.path.realpath(path)
    return (
        any(real == o or real.startswith(o + "/") for o in own)
        or path.startswith((str(tmp / "cache"), tempfile.gettempdir() + "/vkdoctor-load-"))
        or path.startswith(("/dev/", "/proc/self/fd", "/usr/lib/locale", "/etc/ld.so.cache"))
        or path.endswith((".pyc", ".py", ".pth"))
        or "/__pycache__" in path
        or ("python3" in path.rsplit("/", 1)[-1] and ".zip" in path)
        or path.startswith(("/usr/lib/ssl/", "/usr/share/locale/"))
        or path in ("/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache",)
    )


def test_a_program_started_or_a_volatile_read_outside_a_check_leaves_nothing_to_replay(
    tmp_path: Path,
) -> None:
    rec = inputs.start()
    try:
        subprocess.run(["true"], check=True)
        assert rec.unfit is not None and "started a program" in rec.unfit
        rec = inputs.start()
        os.statvfs(tmp_path)
        assert rec.unfit is not None and "free space" in rec.unfit
        rec = inputs.start()
        fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.listdir(fd)
        finally:
            os.close(fd)
        assert rec.unfit is not None and "descriptor" in rec.unfit
    finally:
        inputs.stop()


def test_a_volatile_read_makes_its_check_and_every_user_of_its_fact_live(tmp_path: Path) -> None:
    def free(ctx: Context) -> int:
        return os.statvfs(tmp_path).f_bavail

    def stable(ctx: Context) -> bool:
        return (tmp_path / "x").exists()

    ctx = Context()
    rec = inputs.start()
    watch_facts(rec)  # as vkdoctor.launch installs it
    try:
        rec.entered("VKS001")
        ctx.fact(free)
        ctx.fact(stable)
        rec.left()
        rec.entered("VKX999")
        ctx.fact(free)  # computed before: its volatility passes on
        rec.left()
        rec.entered("VKX998")
        ctx.fact(stable)
        rec.left()
    finally:
        watch_facts(None)
        inputs.stop()
    assert rec.unfit is None
    assert {c for c in rec.volatile if isinstance(c, str)} == {"VKS001", "VKX999"}
    # the stable fact's look is kept (another check may use it); nothing else was looked at
    assert rec.kept_looks() == [("stat", str(tmp_path / "x"))]


def test_a_look_sees_a_change_to_a_file_and_to_a_listed_folder_only(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("a")
    looks = [("stat", str(f)), ("stat", str(tmp_path)), ("list", str(tmp_path))]
    before = [inputs.observe(look) for look in looks]
    os.utime(f)
    (tmp_path / "new").write_text("")
    after = [inputs.observe(look) for look in looks]
    assert [b == a for b, a in zip(before, after, strict=True)] == [False, True, False]
    assert inputs.observe(("stat", str(tmp_path / "absent")))[0] == "error"
    cpuinfo = inputs.observe(("read", "/proc/cpuinfo"))
    assert cpuinfo == inputs.observe(("read", "/proc/cpuinfo")) and cpuinfo[0] == "content"
