"""Run vkdoctor as the unprivileged user nobody (tests run as root, which reads and writes
everything): a world-readable copy of vkdoctor and click, since nobody may not be able to enter the
checkout (a clone under a 0700 directory) or the test environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import REPO, clean_env

NOBODY = 65534
NOGROUP = 65534


@contextmanager
def world_readable_dir(prefix: str = "vkdoctor-nobody-") -> Iterator[Path]:
    """A fresh 0755 directory in /tmp that nobody can enter (pytest's tmp_path is 0700)."""
    top = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        top.chmod(0o755)
        yield top
    finally:
        for p in [top, *top.rglob("*")]:  # a test may have locked something
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(top)


def as_nobody(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    cwd: str = "/",
    uid: int = NOBODY,
) -> subprocess.CompletedProcess[str]:
    """`argv` as nobody:nogroup (or `uid` with the group of the same number) with no
    supplementary groups; "python" as argv[0] is this interpreter with vkdoctor (and click)
    importable. `env` goes over a clean environment."""
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed for this test"
    import click

    gid = NOGROUP if uid == NOBODY else uid
    code_dir = Path(tempfile.mkdtemp(prefix="vkdoctor-code-"))
    try:
        code_dir.chmod(0o755)
        skip = shutil.ignore_patterns("__pycache__")
        shutil.copytree(REPO / "vkdoctor", code_dir / "vkdoctor", ignore=skip)
        shutil.copytree(Path(click.__file__).parent, code_dir / "click", ignore=skip)
        full = clean_env({"PYTHONPATH": str(code_dir), "PYTHONDONTWRITEBYTECODE": "1"})
        full.update(env or {})
        cmd = [sys.executable, *argv[1:]] if argv and argv[0] == "python" else list(argv)
        return subprocess.run(
            [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *cmd],
            capture_output=True,
            text=True,
            env=full,
            timeout=timeout,
            check=False,
            cwd=cwd,
        )
    finally:
        shutil.rmtree(code_dir)


def vkdoctor_as_nobody(
    args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m vkdoctor ARGS` as nobody."""
    return as_nobody(["python", "-m", "vkdoctor", *args], env=env, timeout=timeout)
