"""Root running vkdoctor with another user's HOME (`sudo -E`) does not believe that user's cache.

A kept report is printed again when nothing it read has changed (vkdoctor.speed.replay), and
kept facts are used as they are: both are read with marshal, which is no parser for hostile
data. A user made with useradd plants, in their own ~/.cache/vkdoctor, a replay entry that
would print a green report (what a genuine run kept, with the list of what it read emptied, so
no change is seen). The machine is then broken for real. Root's check with HOME pointing there
neither reads nor writes that cache, says so under -v, and reports the failure.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, clean_env
from test_loadtest import LVP_MANIFEST
from test_replay import ENTRY, LVP_LIBRARY, _check, _replayed_soon

USER = "vkdoctor-cache-owner"


@pytest.fixture(scope="module")
def other_user() -> pwd.struct_passwd:
    """A second local user, made with useradd (kept for later runs: a user is cheap)."""
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--create-home", "--shell", "/usr/sbin/nologin", USER],
            capture_output=True,
            text=True,
            check=False,
        )
        assert made.returncode == 0, made.stderr
        return pwd.getpwnam(USER)


@pytest.fixture
def home(other_user: pwd.struct_passwd) -> Iterator[Path]:
    """The user's home, with no vkdoctor cache in it before and after the test."""
    home = Path(other_user.pw_dir)
    shutil.rmtree(home / ".cache", ignore_errors=True)
    yield home
    shutil.rmtree(home / ".cache", ignore_errors=True)
    os.chown(home, other_user.pw_uid, other_user.pw_gid)


def _chown_all(top: Path, uid: int, gid: int) -> None:
    os.chown(top, uid, gid)
    for folder, dirs, names in os.walk(top):
        for name in [*dirs, *names]:
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)


def _as_user(user: pwd.struct_passwd, code: str, data: bytes) -> None:
    """`python -c CODE` as `user` (no other group), `data` on its standard input."""
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={user.pw_uid}",
            f"--regid={user.pw_gid}",
            "--clear-groups",
            sys.executable,
            "-c",
            code,
        ],
        input=data,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": user.pw_dir},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


#: what the replay compares a kept load test with, as this machine gives it now
LOAD_TEST_NOW = """
import marshal, os, sys
from pathlib import Path
from vkdoctor import facts
from vkdoctor.model.context import Context
from vkdoctor.speed import replay
entry = marshal.loads(sys.stdin.buffer.read())
ctx = Context(env=dict(os.environ), elevated=entry["elevated"], machine=entry["machine"],
              cwd=Path(entry["cwd"]), options=replay._options(entry["options"]))
sys.stdout.buffer.write(marshal.dumps(replay.normal_load_test(facts.load_test(ctx))))
"""


def _load_test_now(entry: dict[str, object], env: dict[str, str]) -> object:
    done = subprocess.run(
        [sys.executable, "-c", LOAD_TEST_NOW],
        input=marshal.dumps(entry),
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return marshal.loads(done.stdout)


def _digests(top: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for folder, _, names in os.walk(top):
        for name in names:
            path = Path(folder, name)
            st = path.lstat()
            out[str(path)] = (
                st.st_size,
                st.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return out


def test_a_forged_replay_in_another_users_cache_is_not_believed(
    home: Path, other_user: pwd.struct_passwd, tmp_path: Path
) -> None:
    library = tmp_path / "lib" / "libvulkan_lvp.so"
    library.parent.mkdir()
    shutil.copy2(LVP_LIBRARY, library)
    icd = tmp_path / "my_lvp.json"
    icd.write_text(Path(LVP_MANIFEST).read_text().replace(str(LVP_LIBRARY), str(library)))
    env = clean_env({"HOME": str(home), "VK_DRIVER_FILES": str(icd), "PYTHONPATH": str(REPO)})
    env.pop("XDG_CACHE_HOME", None)
    store = home / ".cache" / "vkdoctor" / "facts" / "replay.marshal"

    # what a genuine run keeps in that cache, in the very situation root's run will be in
    os.chown(home, 0, 0)
    code, green = _replayed_soon(env)
    assert code == 0 and "vkdoctor: OK" in green
    stamp, entries = marshal.loads(store.read_bytes())
    library.write_bytes(b"not a library any more\n")  # the machine is broken for real
    for entry in entries.values():
        entry["looks"] = []  # no change to the machine is ever seen
        entry["live"] = []  # no check runs again
        entry["load_test"] = _load_test_now(entry, env)  # the load test finds what it finds
    forged = marshal.dumps((stamp, entries))

    # the cache is the other user's; they write the forged entry into it themselves
    os.chown(home, other_user.pw_uid, other_user.pw_gid)
    _chown_all(home / ".cache", other_user.pw_uid, other_user.pw_gid)
    _as_user(
        other_user,
        f"import sys; open({str(store)!r}, 'wb').write(sys.stdin.buffer.read())",
        forged,
    )
    assert store.stat().st_uid == other_user.pw_uid

    # believed, the forged entry would print the green report over the broken machine
    _chown_all(home, 0, 0)
    assert _check(env) == (0, green, True)
    _chown_all(home, other_user.pw_uid, other_user.pw_gid)

    before = _digests(home)
    code, out, replayed = _check(env)
    assert (code, replayed) == (1, False), out
    assert "VKD001" in out and "vkdoctor: FAIL" in out
    verbose = subprocess.run(
        [sys.executable, "-c", ENTRY, "check", "--no-probe", "-v"],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        cwd=REPO,
        timeout=180,
        check=False,
    )
    assert verbose.returncode == 1, verbose.stdout + verbose.stderr
    said = (
        f"vkdoctor: the cache {home}/.cache/vkdoctor is not used (nothing is read from it or "
        f"written to it): "
    )
    assert said in verbose.stderr, verbose.stderr
    assert USER in verbose.stderr
    assert _digests(home) == before  # nothing written there
