"""check --github-env: the proven overlay's LD_LIBRARY_PATH for a GitHub Actions job's later
steps. Actions reads the file $GITHUB_ENV names after each step and sets what it holds in the
steps that follow, so the gate runs under the overlay the preflight proved.

Written as GitHub documents it for any value: `NAME<<DELIMITER`, the value, the delimiter alone
on a line, with a delimiter drawn at random that the value does not hold. Earlier steps write to
the same file, and one may have left it without a final newline: a line break is written first
then, or the entry would be glued to their last line (`PREV=doneLD_LIBRARY_PATH=...`) and lost."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from vkdoctor.model.report_records import OverlayReport


class GithubEnvError(Exception):
    """$GITHUB_ENV is unset, or names something that is not a file to append to."""


def target(env: Mapping[str, str]) -> str:
    """The file to append to, or GithubEnvError saying why there is none."""
    path = env.get("GITHUB_ENV") or ""
    if not path:
        raise GithubEnvError(
            "--github-env: GITHUB_ENV is not set (GitHub Actions sets it in every step)"
        )
    return path


def entry(name: str, value: str) -> str:
    """One `NAME<<DELIMITER` entry of an environment file, with a delimiter `value` cannot end."""
    delimiter = "vkdoctor_" + secrets.token_hex(16)
    while delimiter in value:
        delimiter = "vkdoctor_" + secrets.token_hex(16)
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def _append_whole(fd: int, data: bytes, size: int) -> None:
    """Append all of `data` or nothing: a part of an entry (a heredoc never closed) makes the
    runner reject the whole file, the earlier steps' variables with it."""
    try:
        if os.write(fd, data) != len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    except OSError:
        os.ftruncate(fd, size)
        raise


def export_overlay(overlay: OverlayReport | None, path: str) -> str:
    """Append the overlay's LD_LIBRARY_PATH to `path`; what was done, for stderr."""
    if overlay is None:
        return "--github-env: no overlay is needed or proven; nothing written to GITHUB_ENV"
    value = overlay.ld_library_path
    if "\n" in value or "\r" in value:
        raise GithubEnvError("--github-env: the overlay's path holds a newline; not written")
    try:
        if not stat.S_ISREG(Path(path).stat().st_mode):
            raise GithubEnvError(f"--github-env: {path} is not a regular file; not written")
    except FileNotFoundError:
        pass  # created below
    except OSError as exc:
        raise GithubEnvError(f"--github-env: cannot open {path}: {exc.strerror}") from exc
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise GithubEnvError(f"--github-env: cannot open {path}: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise GithubEnvError(f"--github-env: {path} is not a regular file; not written")
        line = entry("LD_LIBRARY_PATH", value).encode("utf-8", "surrogateescape")
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        _append_whole(fd, line, size)
    except OSError as exc:
        raise GithubEnvError(f"--github-env: cannot write {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    return (
        f"--github-env: LD_LIBRARY_PATH={value} written to GITHUB_ENV: the job's later steps "
        "run under the overlay"
    )
