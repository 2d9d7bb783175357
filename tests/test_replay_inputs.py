"""The replay (vkdoctor.speed.replay) never prints a verdict a full run would not: for each kind of
input a kept run depends on, a run is kept (the next one is replayed), that input is changed,
and the run after it must print what a full run (the replay switched off,
vkdoctor.launch.SPEED_OFF) prints on the changed machine. Each change is one a full run tells
from the kept report, so a replay that missed it would fail the test."""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from conftest import REPO, clean_env
from test_loadtest import LVP_MANIFEST
from test_replay import ENTRY, LVP_LIBRARY

from vkdoctor.launch import SPEED_OFF

Run = tuple[int, str, bool]


def _check(
    env: dict[str, str],
    *,
    cwd: Path = REPO,
    before: Sequence[str] = (),
    preexec: Callable[[], None] | None = None,
    python: str = sys.executable,
) -> Run:
    """`check --no-probe` (after the command words `before`, e.g. setpriv's): its exit status,
    its report with the free space left out (other programs change it between two runs) and
    whether it was replayed (a replayed run never imports the command line interface)."""
    proc = subprocess.run(
        [*before, python, "-X", "importtime", "-c", ENTRY, "check", "--no-probe"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        check=False,
        preexec_fn=preexec,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = re.sub(r"\d+\.\d [KMGT]iB free", "N GiB free", proc.stdout)
    return proc.returncode, report, "| vkdoctor.cli" not in proc.stderr


def _kept(run: Callable[[], Run]) -> Run:
    """Run until a run is replayed: the machine's state is then kept (a first run starts the
    package tools and is not kept; a run that read a file made in the second before it started
    is not either, vkdoctor.speed.replay.RACY_NS)."""
    for _ in range(8):
        result = run()
        if result[2]:
            assert result[0] == 0, result[1]
            return result
    raise AssertionError("eight runs on an unchanged machine, none replayed")


def _as_full_run(env: dict[str, str]) -> dict[str, str]:
    return {**env, SPEED_OFF: "replay"}


def _same_as_a_full_run(kept: Run, again: Run, full: Run) -> None:
    """`again`, the run after the change, says what the full run says; and the change is one
    the full run tells (or a replay of `kept` would pass the test)."""
    assert not full[2]
    assert (full[0], full[1]) != (kept[0], kept[1]), "the change makes no difference: no test"
    assert (again[0], again[1]) == (full[0], full[1]), f"replayed: {again[2]}\n{again[1]}"


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = clean_env(
        {
            "XDG_CACHE_HOME": str(tmp / "cache"),
            "XDG_DATA_HOME": str(tmp / "data"),
            "PYTHONPATH": str(REPO),
            "COLUMNS": "80",
        }
    )
    env.update(extra)
    return env


def _private_lavapipe(top: Path, data: Path) -> Path:
    """A copy of lavapipe under `top`/lib, and its manifest in `data`/vulkan/icd.d: the
    manifest."""
    library = top / "lib" / "libvulkan_lvp.so"
    library.parent.mkdir(parents=True)
    shutil.copy2(LVP_LIBRARY, library)
    icd = data / "vulkan" / "icd.d" / "my_lvp.json"
    icd.parent.mkdir(parents=True)
    text = re.sub(
        r'"library_path":\s*"[^"]*"',
        f'"library_path": "{library}"',
        Path(LVP_MANIFEST).read_text(),
    )
    icd.write_text(text)
    return icd


def test_a_changed_environment_variable(tmp_path: Path) -> None:
    env = _env(tmp_path)
    kept = _kept(lambda: _check(env))
    changed = {**env, "VK_ICD_FILENAMES": str(tmp_path / "no_such_icd.json")}
    again = _check(changed)
    full = _check(_as_full_run(changed))
    _same_as_a_full_run(kept, again, full)


def _small_address_space() -> None:
    # ld.so cannot map lavapipe's LLVM in 150 MB (the interpreter itself fits)
    resource.setrlimit(resource.RLIMIT_AS, (150 * 1024 * 1024, resource.RLIM_INFINITY))


def test_changed_resource_limits(tmp_path: Path) -> None:
    env = _env(tmp_path)
    kept = _kept(lambda: _check(env))
    again = _check(env, preexec=_small_address_space)
    full = _check(_as_full_run(env), preexec=_small_address_space)
    assert "VKE010" in full[1]
    _same_as_a_full_run(kept, again, full)


#: a group nobody is put in (setpriv --groups) or not: the only one that may read the manifest
GROUP = 4242


@pytest.fixture
def world_readable(tmp_path: Path) -> Iterator[Path]:
    """A 0755 folder in /tmp (pytest's tmp_path is 0700) with a copy of vkdoctor, its load
    test's script and click, which the user nobody can read and run."""
    import click

    top = Path(tempfile.mkdtemp(prefix="vkdoctor-groups-", dir="/tmp"))
    try:
        top.chmod(0o755)
        skip = shutil.ignore_patterns("__pycache__")
        for part in ("vkdoctor", "probes"):
            shutil.copytree(REPO / part, top / "code" / part, ignore=skip)
        shutil.copytree(Path(click.__file__).parent, top / "code" / "click", ignore=skip)
        yield top
    finally:
        shutil.rmtree(top)


def _interpreter_for_anyone() -> str:
    """This interpreter if every user may start it (the load test starts it again), else the
    system's (a virtual environment made from a Python under /root, 0700)."""
    real = Path(sys.executable).resolve()
    if all(p.stat().st_mode & 0o001 for p in real.parents) and real.stat().st_mode & 0o001:
        return sys.executable
    system = shutil.which("python3", path="/usr/bin:/bin")
    assert system, "a python3 every user may start (Debian: python3)"
    return system


def test_changed_groups(world_readable: Path) -> None:
    """nobody, in GROUP, can read the manifest of a copy of lavapipe (root:GROUP, 0640), and
    the run passes and is kept; the same user without GROUP cannot read it."""
    assert os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv (util-linux)"
    top = world_readable
    icd = _private_lavapipe(top, top / "data")
    os.chown(icd, 0, GROUP)
    icd.chmod(0o640)
    cache = top / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    env = clean_env(
        {
            "HOME": str(top),
            "XDG_CACHE_HOME": str(cache),
            "XDG_DATA_HOME": str(top / "data"),
            "PYTHONPATH": str(top / "code"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "COLUMNS": "80",
        }
    )
    nobody = ["setpriv", "--reuid=65534", "--regid=65534"]
    member = [*nobody, f"--groups={GROUP}"]
    python = _interpreter_for_anyone()
    kept = _kept(lambda: _check(env, cwd=top, before=member, python=python))
    assert "my_lvp.json" in kept[1] and "2 Vulkan device(s)" in kept[1]
    outside = [*nobody, "--clear-groups"]
    again = _check(env, cwd=top, before=outside, python=python)
    full = _check(_as_full_run(env), cwd=top, before=outside, python=python)
    _same_as_a_full_run(kept, again, full)


def test_a_new_file_in_a_folder_that_did_not_exist(tmp_path: Path) -> None:
    """~/.local/share/vulkan/icd.d is not there (nor ~/.local) when the run is kept; then it
    is made, with a manifest whose library is missing."""
    home = tmp_path / "home"
    home.mkdir()
    env = _env(tmp_path, HOME=str(home))
    del env["XDG_DATA_HOME"]
    kept = _kept(lambda: _check(env))
    icd = home / ".local" / "share" / "vulkan" / "icd.d" / "vendor_new.json"
    icd.parent.mkdir(parents=True)
    icd.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": '
        f'"{tmp_path}/libvulkan_gone.so", "api_version": "1.3.0"}}}}'
    )
    again = _check(env)
    full = _check(_as_full_run(env))
    assert "vendor_new.json" in full[1]
    _same_as_a_full_run(kept, again, full)


#: a driver that is lavapipe under another name (the loader finds lavapipe's entry points through
#: its handle), with a function that calls another; DEFINED defines that one, and the other
#: build leaves it to a library that has none. Bound lazily, both load: only the static check of
#: undefined symbols (VKL006) tells them apart, not the load test a replay runs again
SHIM = """
UNDEFINED_OR_DEFINED
void vkdoctor_never_called(void) { vkdoctor_fn_used_later(); }
"""


def _two_builds(folder: Path) -> tuple[Path, Path]:
    """The good and the bad build of the shim driver, made the same size."""
    folder.mkdir(parents=True, exist_ok=True)
    builds = []
    for name, head in (
        ("good", "void vkdoctor_fn_used_later(void) {}"),
        ("bad", "extern void vkdoctor_fn_used_later(void);"),
    ):
        source = folder / f"{name}.c"
        source.write_text(SHIM.replace("UNDEFINED_OR_DEFINED", head))
        library = folder / f"{name}.so"
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-o", str(library), str(source),
             "-Wl,--no-as-needed", str(LVP_LIBRARY)],
            check=True, timeout=60,
        )  # fmt: skip
        builds.append(library)
    size = max(b.stat().st_size for b in builds)
    for b in builds:  # bytes past an ELF file's last section change nothing ld.so reads
        with b.open("ab") as f:
            f.write(b"\0" * (size - b.stat().st_size))
    return builds[0], builds[1]


def _shim_manifest(data: Path, library: Path) -> None:
    icd = data / "vulkan" / "icd.d" / "shim_icd.json"
    icd.parent.mkdir(parents=True)
    icd.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": '
        f'"{library}", "api_version": "1.3.0"}}}}'
    )


def _same_times(source: Path, target: Path) -> None:
    st = source.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_library_replaced_by_rename_with_the_same_size_and_times(tmp_path: Path) -> None:
    """The driver's library is replaced as `mv new libvulkan_shim.so` does (a rename over it),
    by another build of the same size and modification time."""
    good, bad = _two_builds(tmp_path / "builds")
    library = tmp_path / "lib" / "libvulkan_shim.so"
    library.parent.mkdir()
    shutil.copy2(good, library)
    _shim_manifest(tmp_path / "data", library)
    env = _env(tmp_path)
    kept = _kept(lambda: _check(env))
    assert "shim_icd.json" in kept[1] and "VKL006" not in kept[1]
    new = library.with_name(".libvulkan_shim.so.new")
    shutil.copy2(bad, new)  # its mode too: only the inode and ctime tell the two apart
    _same_times(library, new)
    before = library.stat()
    os.rename(new, library)
    after = library.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = _check(env)
    full = _check(_as_full_run(env))
    assert "VKL006" in full[1]
    _same_as_a_full_run(kept, again, full)


def test_a_library_link_retargeted_by_rename(tmp_path: Path) -> None:
    """The manifest names a symbolic link (libvulkan_shim.so -> real/1.so); an update puts a
    new link beside it and renames it over the old one (`ln -s real/2.so new && mv -T new
    libvulkan_shim.so`), to another build of the same size and modification time."""
    good, bad = _two_builds(tmp_path / "builds")
    real = tmp_path / "lib" / "real"
    real.mkdir(parents=True)
    shutil.copy2(good, real / "1.so")
    link = tmp_path / "lib" / "libvulkan_shim.so"
    link.symlink_to("real/1.so")
    _shim_manifest(tmp_path / "data", link)
    env = _env(tmp_path)
    kept = _kept(lambda: _check(env))
    assert "shim_icd.json" in kept[1] and "VKL006" not in kept[1]
    shutil.copy2(bad, real / "2.so")
    _same_times(real / "1.so", real / "2.so")
    new = link.with_name("new")
    new.symlink_to("real/2.so")
    os.rename(new, link)
    again = _check(env)
    full = _check(_as_full_run(env))
    assert "VKL006" in full[1]
    _same_as_a_full_run(kept, again, full)


def test_kept_facts_that_no_longer_hold_never_reach_the_report(tmp_path: Path) -> None:
    """A replay takes the kept run's load targets when every look is unchanged; if something
    no look sees changed them (here: the kept entry says the copy of lavapipe is elsewhere),
    the load test run on them differs and the run is a full one, which must not take that load
    test, nor the targets it ran on, from the attempt."""
    from vkdoctor.speed import factcache, inputs, replay

    env = _env(tmp_path)
    _private_lavapipe(tmp_path, tmp_path / "data")
    kept = _kept(lambda: _check(env))
    store = factcache.store(
        tmp_path / "cache" / "vkdoctor",
        "replay",
        sources=(replay.__file__, inputs.__file__, factcache.__file__),
        keep=8,
    )
    assert store is not None
    entries = store._load()
    assert len(entries) == 1
    key, entry = next(iter(entries.items()))
    moved = [t for t in entry["kept_facts"]["targets"] if t["name"] == "my_lvp.json"]
    assert len(moved) == 1
    moved[0]["dlopen_name"] = str(tmp_path / "elsewhere" / "libvulkan_lvp.so")
    store.put(key, entry)
    store.save()
    again = _check(env)
    full = _check(_as_full_run(env))
    assert (full[0], full[1]) == (kept[0], kept[1])  # the machine is as it was kept
    assert not again[2]
    assert (again[0], again[1]) == (full[0], full[1]), again[1]


def test_another_working_directory(tmp_path: Path) -> None:
    """VK_ADD_DRIVER_FILES names a manifest by a relative path: from another working directory,
    where that path leads nowhere, a full run says so."""
    here, there = tmp_path / "here", tmp_path / "there"
    there.mkdir()
    icd = _private_lavapipe(tmp_path, here)  # here/vulkan/icd.d/my_lvp.json
    env = _env(tmp_path, VK_ADD_DRIVER_FILES=str(icd.relative_to(here)))
    kept = _kept(lambda: _check(env, cwd=here))
    assert "my_lvp.json" in kept[1]
    again = _check(env, cwd=there)
    full = _check(_as_full_run(env), cwd=there)
    _same_as_a_full_run(kept, again, full)


def _check_on_a_terminal(env: dict[str, str], columns: int) -> Run:
    """`check --no-probe` with its standard output on a terminal `columns` wide, as `_check`
    says it (the report as the terminal got it, colours and line ends included)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-c", ENTRY, "check", "--no-probe"],
            stdout=slave,
            stderr=errors,
            env=env,
            cwd=REPO,
        )
        os.close(slave)
        out = b""
        try:
            while True:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError as exc:  # EIO: the terminal's other side is closed
                    assert exc.errno == errno.EIO
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            os.close(master)
            proc.wait(timeout=300)
        errors.seek(0)
        err = errors.read().decode()
    report = re.sub(r"\d+\.\d [KMGT]iB free", "N GiB free", out.decode())
    return proc.returncode, report, "| vkdoctor.cli" not in err


def test_a_narrower_terminal(tmp_path: Path) -> None:
    """The report goes to a terminal (no COLUMNS): kept at 100 columns, then asked for at 60,
    where a full run wraps its lines elsewhere."""
    env = _env(tmp_path)
    del env["COLUMNS"]
    kept = _kept(lambda: _check_on_a_terminal(env, 100))
    again = _check_on_a_terminal(env, 60)
    full = _check_on_a_terminal(_as_full_run(env), 60)
    _same_as_a_full_run(kept, again, full)
