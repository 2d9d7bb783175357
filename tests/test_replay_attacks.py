"""Attacks on the replay (vkdoctor.speed.replay): ways a kept run could make a later run print a
report that a full run would not give. Real files, real runs: each test ends with what a full
run says and holds the run that could be replayed to it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from conftest import REPO
from test_replay import ENTRY, _env

from vkdoctor.speed import inputs


def _check_while(
    env: dict[str, str],
    args: Sequence[str],
    during: Callable[[], None] | None = None,
    cwd: Path = REPO,
) -> tuple[int, str, bool]:
    """`vkdoctor ARGS` as test_replay._check runs it, its standard output a pipe; with `during`,
    the pipe is full when the run starts, so the run stops at the write of its report (every
    check done, nothing kept yet), and `during` is called there before the report is read:
    (exit status, standard output, whether it was replayed)."""
    r, w = os.pipe()
    filled = 0
    if during is not None:
        os.set_blocking(w, False)
        try:
            while True:
                filled += os.write(w, b"\0" * 4096)
        except BlockingIOError:
            pass
        os.set_blocking(w, True)
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-c", ENTRY, *args],
            stdout=w,
            stderr=errors,  # -X importtime says a lot: a pipe would fill
            env=env,
            cwd=cwd,
        )
        os.close(w)
        try:
            if during is not None:
                deadline = time.monotonic() + 120
                while not _writing_stdout(proc.pid):
                    assert proc.poll() is None, "the run ended before it wrote its report"
                    assert time.monotonic() < deadline, "the run never wrote its report"
                    time.sleep(0.02)
                during()
            out = b""
            while chunk := os.read(r, 1 << 16):
                out += chunk
        finally:
            os.close(r)
            proc.wait(timeout=120)
        errors.seek(0)
        err = errors.read().decode()
    return proc.returncode, out[filled:].decode(), "| vkdoctor.cli" not in err


def _writing_stdout(pid: int) -> bool:
    """Whether process `pid` is in write(1, ...) (the system call's number 1 on x86-64)."""
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return call[:2] == ["1", "0x1"]


def _the_store(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "vkdoctor" / "facts" / "replay.marshal"


def test_a_search_path_removed_while_the_kept_run_ran_is_not_replayed_as_there(
    tmp_path: Path,
) -> None:
    """The kept run saw the search path (no VKO002); it was removed before the run kept its
    looks, which then hold "does not exist", with no time to tell it was after the run began.
    The next run must not print the kept report: with --strict that is a false green (exit 0
    "vkdoctor: OK" where a full run fails on VKO002)."""
    search = tmp_path / "search"
    search.mkdir()
    env = _env(tmp_path, VKDOCTOR_SEARCH_PATH=str(search))
    args = ["check", "--no-probe", "--strict"]
    first = _check_while(env, args)  # starts the package tools: not kept
    assert first[0] == 0 and not first[2]
    assert not _the_store(tmp_path).exists()
    kept = _check_while(env, args, during=search.rmdir)
    assert kept[:2] == first[:2] and not kept[2], "the run saw the search path"
    other = str(tmp_path / "other")
    fresh = _check_while({**env, "XDG_CACHE_HOME": other}, args)  # a full run
    assert fresh[0] == 1 and "VKO002" in fresh[1], fresh[1]
    again = _check_while(env, args)
    assert (again[0], "VKO002" in again[1]) == (1, True), f"replayed: {again[2]}\n{again[1]}"


def test_a_look_that_sees_another_thing_at_the_end_than_when_it_was_taken_is_told(
    tmp_path: Path,
) -> None:
    """What each kind of look saw when the run took it is kept (`Recorder.first`) and held
    against what it sees when the run is kept: a removal, a link retargeted, a mode changed."""
    link, gone, folder = tmp_path / "link", tmp_path / "gone", tmp_path / "folder"
    link.symlink_to("a")
    gone.write_text("x")
    folder.mkdir()
    rec = inputs.start()
    try:
        os.readlink(link)
        gone.read_text()
        os.access(folder, os.W_OK)
        os.stat(folder)
        os.listdir(tmp_path)
    finally:
        inputs.stop()
    looks = list(rec.looks)
    now = [(how, path, inputs.observe((how, path))) for how, path in looks]
    assert not rec.changed(now)
    link.unlink()
    link.symlink_to("b")
    assert rec.changed([(h, p, inputs.observe((h, p))) for h, p in looks if p == str(link)])
    gone.unlink()
    assert rec.changed([(h, p, inputs.observe((h, p))) for h, p in looks if p == str(gone)])
    folder.chmod(0o700)
    assert rec.changed([(h, p, inputs.observe((h, p))) for h, p in looks if p == str(folder)])


def test_an_unchanged_machine_is_still_replayed(tmp_path: Path) -> None:
    """What a look saw first is what it sees when the run is kept: the next run is replayed."""
    env = _env(tmp_path)
    args = ["check", "--no-probe"]
    for _ in range(8):  # until one is replayed (a file made just before: RACY_NS)
        code, out, replayed = _check_while(env, args)
        if replayed:
            break
    assert replayed and code == 0 and "vkdoctor: OK" in out


def test_a_module_only_the_package_checks_fork_imports_is_part_of_what_is_kept(
    tmp_path: Path,
) -> None:
    """vkdoctor's own modules are among the looks ("another vkdoctor gives another report"), but
    only those the checks' process imported: the package checks run in a fork (vkdoctor.speed.offload),
    and what it alone imports (vkdoctor.packages.stack) changed must make the next run a full one."""
    copy = tmp_path / "src"
    for part in ("vkdoctor", "probes"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**_env(tmp_path), "PYTHONPATH": str(copy)}
    args = ["check", "--no-probe"]
    for _ in range(8):  # until one is replayed (a file made just before: RACY_NS)
        code, out, replayed = _check_while(env, args, cwd=tmp_path)
        if replayed:
            break
    assert replayed and code == 0
    stack = copy / "vkdoctor" / "packages" / "stack.py"
    assert "| vkdoctor.packages.stack" in _imports(env, tmp_path)
    with stack.open("a") as f:
        f.write('raise ImportError("another vkdoctor")\n')
    code, out, replayed = _check_while(env, args, cwd=tmp_path)
    assert not replayed, out
    assert code == 3 and "another vkdoctor" in out


def _imports(env: dict[str, str], cwd: Path) -> str:
    """What -X importtime says a full run (one kept in no cache) imported, forks included."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", ENTRY, "check", "--no-probe"],
        env={**env, "XDG_CACHE_HOME": str(cwd / "elsewhere")},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return proc.stderr


_IN_NAMESPACE = """
import json, os, subprocess, sys
from pathlib import Path

entry, target, fresh = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
env = dict(os.environ)


def check(env):
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", entry, "check", "--no-probe", "--strict"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    return proc.returncode, proc.stdout, "| vkdoctor.cli" not in proc.stderr


runs = []
while len(runs) < 8 and not (runs and runs[-1][2]):  # until one is replayed (RACY_NS)
    runs.append(check(env))
manifests = target / "share" / "vulkan" / "icd.d"
manifests.mkdir(parents=True)
(manifests / "vendor.json").write_text(
    '{"file_format_version": "1.0.0", "ICD": {"library_path": "libvulkan_lvp.so", '
    '"api_version": "1.3.0"}}'
)
print(json.dumps({"runs": runs, "again": check(env), "full": check({**env, "XDG_CACHE_HOME": fresh})}))
"""


def test_a_dangling_link_listed_by_a_glob_that_comes_to_lead_somewhere_is_seen(
    tmp_path: Path,
) -> None:
    """Path.glob("opt/*/share/vulkan/icd.d") (VKC003, manifests outside the search path) lists
    /opt and asks each entry is_dir(): for a symbolic link, a stat below Python's os.stat that
    no look records. A link in /opt whose target does not exist is skipped, and nothing below it
    is looked at; when its target comes to exist with a driver manifest in it, /opt itself is
    unchanged, so the next run must not replay the kept "vkdoctor: OK": a full run warns
    (VKC003) and --strict makes that exit 1. /opt is the system's: a private copy is bind
    mounted over it in a private mount namespace, where every run of this test runs."""
    # CI runs as root, and util-linux (unshare) is in every Debian: a missing one is a failure
    assert os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare"
    opt, target = tmp_path / "opt", tmp_path / "target"
    opt.mkdir()
    for name in os.listdir("/opt"):
        (opt / name).symlink_to(Path("/opt") / name)  # what /opt has, seen the same way
    (opt / "zz-vendor").symlink_to(target)  # dangling
    driver = tmp_path / "driver.py"
    driver.write_text(_IN_NAMESPACE)
    script = tmp_path / "ns.sh"
    script.write_text(f'set -e\nmount --bind {opt} /opt\nexec "$@"\n')
    env = _env(tmp_path)
    proc = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "bash",
            str(script),
            sys.executable,
            str(driver),
            ENTRY,
            str(target),
            str(tmp_path / "fresh"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout)
    assert any(replayed for _, _, replayed in done["runs"]), "an unchanged machine is replayed"
    assert all(code == 0 for code, _, _ in done["runs"]), done["runs"][-1][1]
    code, out, _ = done["full"]
    assert code == 1 and "VKC003" in out, out
    code, out, replayed = done["again"]
    assert (code, "VKC003" in out) == (1, True), f"replayed: {replayed}\n{out}"


def test_a_library_put_in_an_overlay_on_ld_library_path_is_seen(tmp_path: Path) -> None:
    """vkdoctor's overlays live in its cache directory (overlays/KEY), and the way to use one is
    to put it on LD_LIBRARY_PATH: the ld.so emulation then searches it for every library the
    drivers need. The recording ignores the whole cache directory (its own stores), so a link
    that comes to be in that overlay is in no look: the next run must not replay the kept "OK"
    where a full run warns that the link shadows the system copy (VKL004; exit 1 with
    --strict)."""
    cache = tmp_path / "cache"
    overlay = cache / "vkdoctor" / "overlays" / "abc"
    overlay.mkdir(parents=True)
    (cache / "vkdoctor").chmod(0o700)
    source = tmp_path / "dummy.c"
    source.write_text("int vkdoctor_dummy;\n")
    subprocess.run(
        ["gcc", "-shared", "-o", str(overlay / "libvkdoctor_dummy.so"), str(source)], check=True
    )
    env = _env(tmp_path, LD_LIBRARY_PATH=str(overlay))
    args = ["check", "--no-probe", "--strict"]
    for _ in range(8):  # until one is replayed (a file made just before: RACY_NS)
        code, out, replayed = _check_while(env, args)
        assert code == 0, out
        if replayed:
            break
    assert replayed, "an unchanged machine is replayed"
    zstd = Path("/usr/lib/x86_64-linux-gnu/libzstd.so.1").resolve()
    (overlay / "libzstd.so.1").symlink_to(zstd)  # the same file: the load test loads the same
    fresh = _check_while({**env, "XDG_CACHE_HOME": str(tmp_path / "other")}, args)
    assert fresh[0] == 1 and "VKL004" in fresh[1], fresh[1]
    again = _check_while(env, args)
    assert (again[0], "VKL004" in again[1]) == (1, True), f"replayed: {again[2]}\n{again[1]}"


def test_a_recording_changes_nothing_that_shutil_and_glob_do(tmp_path: Path) -> None:
    """The wrapped os functions must do what os's do for the standard library: shutil.copystat
    (copytree with symlinks=True) asks os.supports_follow_symlinks for os.stat and, when the
    wrapper is not listed, takes no stat at all (None.st_mode); a scandir entry's is_dir()
    through a link must still answer."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("x")
    (tmp_path / "a" / "g").symlink_to("f")  # copied as a link: copystat(entry, ...) of it
    (tmp_path / "link").symlink_to(tmp_path / "a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    rec = inputs.start()
    try:
        shutil.copytree(tmp_path / "a", tmp_path / "copy", symlinks=True)
        found = sorted(Path(p).relative_to(tmp_path) for p in tmp_path.glob("*/f"))
    finally:
        inputs.stop()
    assert (tmp_path / "copy" / "g").readlink() == Path("f")
    assert found == [Path("a/f"), Path("copy/f"), Path("link/f")]
    assert ("stat", str(tmp_path / "dangling")) in rec.looks  # what is_dir() saw through it
