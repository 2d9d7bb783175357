"""The dpkg database read ahead, on another core, by a first `check` (vkdoctor.speed.dpkgahead).

The oracle is the run without it: a cache folder that already has its facts/ folder starts no
such process, and its package checks compute everything themselves. The two reports agree.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO, clean_env, run_vkdoctor

from vkdoctor.cachedir import cache_home
from vkdoctor.model.context import Context, Options
from vkdoctor.packages.dpkg import DpkgDB
from vkdoctor.speed import dpkgahead as ahead
from vkdoctor.speed.factcache import FactCache


def _steady(doc: object, cache: Path) -> str:
    """The report without times, sizes (free space, inodes and memory change between runs), its
    cache folder, and whether `dpkg --audit`'s run was read from the cache (it was, when the
    process reading ahead ran it)."""

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k not in ("seconds", "kept") and not k.endswith(("bytes", "free", "inodes"))
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    text = json.dumps(strip(doc), sort_keys=True).replace(str(cache), "CACHE")
    return re.sub(r"[0-9.]+ GiB free", "N GiB free", text)


def _report(cache: Path) -> dict[str, object]:
    proc = run_vkdoctor(["check", "--no-probe", "--json", "-"], env={"XDG_CACHE_HOME": str(cache)})
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def test_a_first_run_reads_the_database_ahead_and_reports_as_a_run_without(tmp_path: Path) -> None:
    ahead_doc = _report(tmp_path / "first")
    assert (tmp_path / "first" / "vkdoctor" / "facts" / "dpkg-status.marshal").is_file()
    # facts/ already there: nothing is read ahead, every package check computes its facts
    (tmp_path / "computed" / "vkdoctor" / "facts").mkdir(parents=True)
    computed = _report(tmp_path / "computed")
    assert _steady(ahead_doc, tmp_path / "first") == _steady(computed, tmp_path / "computed")


def test_it_keeps_the_packages_the_unmet_dependencies_and_the_audit(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    ahead.start(env, str(tmp_path), 60.0)
    started = time.monotonic()
    ahead.wait()
    assert time.monotonic() - started < ahead.WAIT_LIMIT
    ctx = Context(
        env=env,
        options=Options(cache_dir=cache_home(env)),
        store=FactCache(cache_home(env)),
    )
    db = DpkgDB(ctx)
    assert db._status_kept("packages") and db._status_kept("unmet") is not None
    fresh = DpkgDB(Context(env=env))  # no cache: computed here
    assert db.packages() == fresh.packages()
    assert db._unmet_text() == fresh._unmet_text()
    argv = ["dpkg", f"--admindir={db._admin}", "--audit"]
    assert db._audit_kept(argv) is not None


def test_a_fork_waits_on_the_pipe_and_only_the_starter_reaps(tmp_path: Path) -> None:
    """vkdoctor.speed.offload's fork reads the pipe like its parent; the process is the parent's."""
    script = f"""
import os, sys
sys.path.insert(0, {str(REPO)!r})
from vkdoctor.speed import dpkgahead as ahead
ahead.start({{**os.environ, "XDG_CACHE_HOME": {str(tmp_path)!r}}}, {str(tmp_path)!r}, 60.0)
(pid, _, _), = ahead._pending
child = os.fork()
if child == 0:
    ahead.wait()
    os._exit(0)
os.waitpid(child, 0)
ahead.wait()
try:
    os.waitpid(pid, 0)
    print("not reaped")
except ChildProcessError:
    print("reaped")
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=False,
    )
    assert proc.stdout.strip() == "reaped", proc.stderr


def test_nothing_of_it_outlives_a_usage_error(tmp_path: Path) -> None:
    """`check --no-such-option` ends at once: the process reading ahead dies with it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vkdoctor", "check", "--no-such-option"],
        env={**clean_env(), "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path)},
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and b"no-such-option" in err
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("a process of the run is still there")


def test_a_dpkg_audit_that_hangs_costs_a_bounded_wait(tmp_path: Path) -> None:
    """`dpkg --audit` hangs: the process reading ahead gives up at --timeout, the package checks
    wait for it no longer than that, run the tool again under the same bound, and say so."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dpkg"
    fake.write_text(
        '#!/bin/sh\nfor a in "$@"; do [ "$a" = --audit ] && exec sleep 60; done\n'
        'exec /usr/bin/dpkg "$@"\n'
    )
    fake.chmod(0o755)
    env = {
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    }
    started = time.monotonic()
    proc = run_vkdoctor(["check", "--no-probe", "--timeout", "2", "--json", "-"], env=env)
    took = time.monotonic() - started
    doc = json.loads(proc.stdout)
    (vkp,) = [f for f in doc["findings"] if f["code"] == "VKP006"]
    assert vkp["severity"] == "warn" and "dpkg" in vkp["title"], vkp
    assert "timed out after 2s" in vkp["message"]
    # two runs of the tool at most, each stopped at 2 s, and the rest of the check
    assert took < 12, took
