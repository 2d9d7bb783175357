"""Attacks on the replay (vkdoctor.replay): ways a kept run could make a later run print a
report that a full run would not give. Real files, real runs: each test ends with what a full
run says and holds the run that could be replayed to it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from conftest import REPO
from test_replay import ENTRY, _env


def _check_while(
    env: dict[str, str], args: Sequence[str], during: Callable[[], None] | None = None
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
            cwd=REPO,
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
