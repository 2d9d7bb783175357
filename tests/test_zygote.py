"""The load test's first child forked at launch (vkdoctor.speed.zygote) gives the reports a child
started as a new program gives: on this machine, and with drivers that crash, hang or lack a
library; it is not used where ld.so's variables differ, and never outlives vkdoctor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import REPO, clean_env, validate_report
from test_loadtest import LVP_MANIFEST, fakes, marked_processes  # noqa: F401 - the fixture

from vkdoctor import children
from vkdoctor.children import loadtest
from vkdoctor.resources import probes_dir
from vkdoctor.speed import zygote


def _report(
    args: list[str], env: dict[str, str], *, launch: bool, cache: Path | None = None
) -> dict[str, Any]:
    """`check ARGS --json -` through the console entry point (`launch`: the child is forked at
    start) or through the click CLI alone (the child is always a new program), with `cache` as
    XDG_CACHE_HOME (a fresh one when None: no request is handed ahead)."""
    entry = (
        "from vkdoctor.launch import main; main()"
        if launch
        else "import sys; from vkdoctor.cli import main; main()"
    )
    full = clean_env(env)
    full["PYTHONPATH"] = str(REPO)
    with tempfile.TemporaryDirectory() as fresh:
        full.setdefault("XDG_CACHE_HOME", str(cache or fresh))
        return _run(args, full, entry)


def _run(args: list[str], full: dict[str, str], entry: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", entry, "check", "--no-probe", *args, "--json", "-"],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    doc = json.loads(proc.stdout)
    validate_report(doc)
    doc["exit"] = proc.returncode
    return doc


def _load_findings(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The VKT findings without what differs between two runs (times, the child's pid, and how
    the first child began)."""
    out = []
    for f in doc["findings"]:
        if not f["code"].startswith("VKT"):
            continue
        evidence = {
            k: v for k, v in f["evidence"].items() if k not in ("seconds", "first_child", "pid")
        }
        out.append((f["code"], f["severity"], f["title"], f["message"], f["remedy"], evidence))
    return out


def _first_child(doc: dict[str, Any]) -> set[str]:
    return {
        f["evidence"]["first_child"]
        for f in doc["findings"]
        if f["code"] == "VKT002" and "first_child" in f["evidence"]
    }


def test_the_forked_child_reports_what_a_started_one_reports_on_this_machine() -> None:
    forked = _report([], {}, launch=True)
    started = _report([], {}, launch=False)
    assert _first_child(forked) == {"forked"}
    assert _first_child(started) == {"started"}
    assert forked["exit"] == started["exit"] == 0
    assert _load_findings(forked) == _load_findings(started)


def test_crashing_hanging_and_broken_drivers_read_the_same_from_a_forked_child(fakes) -> None:  # noqa: F811
    files = [fakes[k].manifest for k in ("CTOR_SEGV", "CTOR_HANG", "GIPA_ABORT", "MISSING_DEP")]
    env = {"VK_DRIVER_FILES": ":".join([*files, LVP_MANIFEST])}
    args = ["--select", "VKT", "--timeout", "6"]
    forked = _report(args, env, launch=True)
    started = _report(args, env, launch=False)
    assert _first_child(forked) == {"forked"}
    assert forked["exit"] == started["exit"] == 1
    assert _load_findings(forked) == _load_findings(started)
    segv = next(f for f in forked["findings"] if f["evidence"].get("name") == "ctor_segv_icd.json")
    assert segv["severity"] == "fail" and segv["evidence"]["signal"] == "SIGSEGV"


def test_with_a_library_path_the_child_forked_before_the_restart_sees_it(
    tmp_path: Path,
    fakes,  # noqa: F811
) -> None:
    """vkdoctor starts again without LD_LIBRARY_PATH when it could supply a library (ld.so read
    the variable at the start); the load test's child is forked before that restart, where
    ld.so has the user's LD_LIBRARY_PATH, so it finds what the user's programs find."""
    lib = tmp_path / "lib"
    lib.mkdir()
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-Wl,-soname,libvkdoctor_absent.so.7",
            "-o",
            str(lib / "libvkdoctor_absent.so.7"),
            "-x",
            "c",
            "/dev/null",
        ],
        check=True,
        timeout=60,
    )
    missing = fakes["MISSING_DEP"]
    env = {"LD_LIBRARY_PATH": str(lib), "VK_DRIVER_FILES": missing.manifest}
    args = ["--select", "VKT"]
    # the oracle: a program started with the variable loads the driver, one without does not
    load = [sys.executable, "-c", f"import ctypes; ctypes.CDLL({missing.dlopen_name!r})"]
    assert subprocess.run(load, env=clean_env(env), check=False).returncode == 0
    assert subprocess.run(load, env=clean_env(), capture_output=True, check=False).returncode
    forked = _report(args, env, launch=True)
    started = _report(args, env, launch=False)
    assert _first_child(forked) == {"forked"} and _first_child(started) == {"started"}
    assert _load_findings(forked) == _load_findings(started)
    (driver,) = [f for f in forked["findings"] if f["code"] == "VKT001"]
    assert driver["evidence"]["dlopen"] == "ok", driver
    without = _report(args, {"VK_DRIVER_FILES": missing.manifest}, launch=True)
    (driver,) = [f for f in without["findings"] if f["code"] == "VKT001"]
    assert driver["evidence"]["dlopen"] == "failed", driver


def test_a_child_nobody_takes_exits_with_vkdoctor() -> None:
    mark = f"zygote-{os.getpid()}-{time.monotonic_ns()}"
    doc = _report(["--select", "VKH001"], {"LOADTEST_MARK": mark}, launch=True)
    assert [f["code"] for f in doc["findings"]] == ["VKH001"]
    deadline = time.monotonic() + 5
    while marked_processes(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked_processes(mark) == []


def test_a_request_whose_startup_variables_differ_is_not_handed_over() -> None:
    zygote.start(os.environ, probes_dir() / "loadtest.py")
    (waiting,) = zygote._waiting
    child = psutil.Process(waiting.pid)
    other = {**os.environ, "LD_BIND_NOW": "1"}
    assert zygote.take(other) is None  # discarded: it reads the end of its pipe and exits
    assert child.wait(timeout=10) == 0
    assert zygote._waiting == []


@pytest.mark.parametrize("variable", ["LD_LIBRARY_PATH", "GLIBC_TUNABLES", "MALLOC_ARENA_MAX"])
def test_startup_variables_are_what_a_new_program_would_read_differently(variable: str) -> None:
    assert zygote.startup_variables({variable: "x", "VK_DRIVER_FILES": "y"}) == {variable: "x"}


def test_a_second_run_hands_its_child_the_last_request_ahead_and_reports_the_same(
    tmp_path: Path,
) -> None:
    """The waiting child is given the request the last run in this environment began with as
    vkdoctor starts; the load test takes it because it is the request it would send."""
    cache = tmp_path / "cache"
    first = _report([], {}, launch=True, cache=cache)
    second = _report([], {}, launch=True, cache=cache)
    started = _report([], {}, launch=False)
    assert _first_child(first) == {"forked"}
    assert _first_child(second) == {"ahead"}
    assert first["exit"] == second["exit"] == started["exit"] == 0
    assert _load_findings(second) == _load_findings(started)


def test_where_the_log_folder_cannot_be_made_nothing_is_handed_ahead(tmp_path: Path) -> None:
    """$TMPDIR names no folder: the request is not handed ahead (the log folder would be made
    there), and the run's own load test, whose folder tempfile puts in /tmp, reports the same."""
    cache = tmp_path / "cache"
    env = {"TMPDIR": str(tmp_path / "absent")}
    _report([], env, launch=True, cache=cache)
    second = _report([], env, launch=True, cache=cache)
    assert _first_child(second) == {"forked"} and second["exit"] == 0
    assert _load_findings(second) == _load_findings(_report([], {}, launch=False))


def test_a_changed_manifest_is_not_handed_ahead(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    manifest = tmp_path / "lvp.json"
    manifest.write_bytes(Path(LVP_MANIFEST).read_bytes())
    env = {"VK_DRIVER_FILES": str(manifest)}
    _report([], env, launch=True, cache=cache)
    assert _first_child(_report([], env, launch=True, cache=cache)) == {"ahead"}
    os.utime(manifest)  # the same bytes, touched: its identity changes
    assert _first_child(_report([], env, launch=True, cache=cache)) == {"forked"}


def test_a_driver_new_since_the_last_run_is_seen_although_the_old_request_was_handed_ahead(
    tmp_path: Path,
) -> None:
    """A manifest in a folder the last run had no driver in: nothing the kept request names has
    changed, so the old request is handed ahead; the load test's own request now has one more
    driver, so it kills that child and starts its own, and the new driver is in the report as
    in a run that never kept anything."""
    cache = tmp_path / "cache"
    data = tmp_path / "data"
    env = {"XDG_DATA_HOME": str(data)}
    before = _report([], env, launch=True, cache=cache)
    icd = data / "vulkan" / "icd.d"
    icd.mkdir(parents=True)
    (icd / "second_lvp.json").write_bytes(Path(LVP_MANIFEST).read_bytes())
    after = _report([], env, launch=True, cache=cache)
    fresh = _report([], env, launch=False)
    assert _first_child(after) == {"started"}  # the forked child was the one handed ahead
    assert _load_findings(after) == _load_findings(fresh)
    names = {f["evidence"].get("name") for f in after["findings"] if f["code"] == "VKT001"}
    assert "second_lvp.json" in names
    assert len(after["findings"]) > len(before["findings"])


def test_a_child_handed_ahead_that_nobody_adopts_exits_and_leaves_no_directory(
    tmp_path: Path,
) -> None:
    """`--timeout abc` is refused by the command line after the child was handed its request:
    it is killed, and its log directory removed, before vkdoctor exits."""
    cache = tmp_path / "cache"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    mark = f"ahead-{os.getpid()}-{time.monotonic_ns()}"
    env = {"LOADTEST_MARK": mark, "TMPDIR": str(tmp)}
    _report([], env, launch=True, cache=cache)
    assert list(tmp.iterdir()) == []
    full = clean_env({**env, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(cache)})
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from vkdoctor.launch import main; main()",
            "check",
            "--no-probe",
            "--timeout",
            "abc",
        ],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 2 and "abc" in proc.stderr
    assert marked_processes(mark) == []
    assert list(tmp.iterdir()) == []


def test_a_child_another_waiter_reaped_has_ended_and_its_status_is_not_invented() -> None:
    """When the status is gone (reaped elsewhere), poll says the child ended and that how is
    unknown: not SIGKILL, not the status it really had."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os._exit(3)
    os.close(write_end)
    assert os.waitpid(pid, 0)[1] != 0  # the other waiter takes the status
    child = zygote.ForkedChild(pid, read_end)
    assert child.poll() == children.STATUS_LOST
    assert child.wait(timeout=1) == children.STATUS_LOST
    child.stdout.close()
    assert loadtest.ended_by(child.returncode) == "an unknown signal or exit"
    assert loadtest.ended_by(-11) == "SIGSEGV" and loadtest.ended_by(3) == "exit status 3"


#: a load test through the forked child in a process that ignores SIGCHLD: the kernel reaps
#: the child itself, and its status is lost
_IGNORED_SIGCHLD = """
import os, signal, sys
from pathlib import Path
from vkdoctor import children
from vkdoctor.children import loadtest
from vkdoctor.speed import zygote
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.children.loadtest import run_load_test
from vkdoctor.resources import probes_dir
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
zygote.start(os.environ, probes_dir() / "loadtest.py")
target = LoadTarget(kind="driver", name="x", manifest=sys.argv[1], dlopen_name=sys.argv[2])
run = run_load_test(
    [target], env=dict(os.environ), cwd=Path.cwd(), total_timeout=30.0, spawner=zygote.SPAWNER
)
(outcome,) = run.outcomes
print(run.first_child, outcome.dlopen, outcome.signal)
"""


def test_a_crash_whose_status_the_kernel_discarded_is_not_called_sigkill(fakes) -> None:  # noqa: F811
    segv = fakes["CTOR_SEGV"]
    env = clean_env({})
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-c", _IGNORED_SIGCHLD, segv.manifest, segv.dlopen_name],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 2) == ["forked", "crash", "an unknown signal or exit\n"]


def test_the_kept_request_holds_no_value_of_the_environment(tmp_path: Path) -> None:
    """A CI job's tokens are in its environment: the kept request is found again by a
    checksum of it, and none of its values is written down."""
    cache = tmp_path / "cache"
    secret = f"ghp_{os.getpid()}{time.monotonic_ns()}"
    env = {"GITHUB_TOKEN": secret}
    _report([], env, launch=True, cache=cache)
    assert _first_child(_report([], env, launch=True, cache=cache)) == {"ahead"}
    for path in cache.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    # another value is another environment: its own request, not this one's
    other = _report([], {"GITHUB_TOKEN": secret + "x"}, launch=True, cache=cache)
    assert _first_child(other) == {"forked"}


#: one load test without a spawner and one with the zygote's, in a process that forked a child
_SPAWNED = """
import json, os, sys
from pathlib import Path
from vkdoctor.speed import zygote
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.children.loadtest import run_load_test
from vkdoctor.resources import probes_dir
zygote.start(os.environ, probes_dir() / "loadtest.py")
doc = json.loads(Path(sys.argv[1]).read_text())
target = LoadTarget(
    kind="driver", name="lvp", manifest=sys.argv[1], dlopen_name=doc["ICD"]["library_path"]
)
env, cwd = dict(os.environ), Path.cwd()
plain = run_load_test([target], env=env, cwd=cwd, total_timeout=30.0)
waiting = len(zygote._waiting)
forked = run_load_test([target], env=env, cwd=cwd, total_timeout=30.0, spawner=zygote.SPAWNER)
(a,), (b,) = plain.outcomes, forked.outcomes
print(plain.first_child, waiting, forked.first_child, len(zygote._waiting))
print((a.dlopen, a.instance, a.devices) == (b.dlopen, b.instance, b.devices), a.instance)
"""


def test_the_load_test_forks_only_through_the_spawner_it_is_handed() -> None:
    """Without a spawner every child is a new program, and the waiting child stays waiting;
    with the zygote's, the waiting child runs the same request, with the same outcome."""
    env = clean_env({})
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-c", _SPAWNED, LVP_MANIFEST],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["started 1 forked 0", "True ok"]
