"""vkdoctor.children on real processes: a session of its own, the group killed, a bounded reap."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from vkdoctor import children

#: a child that starts a grandchild in its group, prints the grandchild's pid, and hangs
_HANGS_WITH_A_GRANDCHILD = (
    "import subprocess, sys, time\n"
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(p.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_child_in_its_own_session_is_killed_with_what_it_started() -> None:
    proc = children.start(
        [sys.executable, "-c", _HANGS_WITH_A_GRANDCHILD],
        env={"PATH": os.environ["PATH"]},
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    assert os.getsid(proc.pid) == proc.pid != os.getsid(0)
    assert os.getpgid(grandchild) == proc.pid
    children.kill_group_and_reap(proc, 5)
    assert proc.returncode == -9
    assert proc.stdout.closed
    assert _gone(grandchild)


def test_a_child_left_in_our_session_and_killed_alone() -> None:
    proc = children.start_text(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={"PATH": os.environ["PATH"]},
        own_session=False,
    )
    assert os.getsid(proc.pid) == os.getsid(0)
    children.kill_and_reap(proc)
    assert proc.returncode == -9
    assert proc.stdout is not None and proc.stdout.closed
    assert proc.stderr is not None and proc.stderr.closed


def test_reap_gives_up_after_its_bound_and_a_gone_group_is_no_error() -> None:
    proc = children.start(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={"PATH": os.environ["PATH"]},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = time.monotonic()
    children.reap(proc, 0.3)
    assert proc.returncode is None
    assert 0.3 <= time.monotonic() - started < 5
    children.kill_group(proc.pid)
    proc.wait(timeout=10)
    children.kill_group(proc.pid)  # reaped: no such group any more
    assert proc.returncode == -9
