"""check --github-env: the proven overlay's LD_LIBRARY_PATH for a GitHub Actions job's later
steps. Actions reads the file $GITHUB_ENV names after each step and sets what it holds in the
steps that follow, so the gate runs under the overlay the preflight proved.

Written as GitHub documents it for any value: `NAME<<DELIMITER`, the value, the delimiter alone
on a line, with a delimiter drawn at random that the value does not hold. Earlier steps write to
the same file, and one may have left it without a final newline: a line break is written first
then, or the entry would be glued to their last line (`PREV=doneLD_LIBRARY_PATH=...`) and lost.
What they left is read first as the runner reads it (actions/runner, FileCommandManager.cs): a
heredoc never closed, or a line that is neither `NAME=value` nor `NAME<<DELIMITER`, makes the
runner fail the step and set nothing, so nothing is written then and the line is named."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from vkdoctor.model.report_records import OverlayReport
from vkdoctor.trust import foreign_link


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
    delimiter = "vkdoctor_" + os.urandom(16).hex()
    while delimiter in value:
        delimiter = "vkdoctor_" + os.urandom(16).hex()
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


#: what is read of the file for that (GitHub's own limit on the file is far less)
MAX_READ = 16 << 20


def rejected(text: str) -> str | None:
    """Why the runner would reject an environment file holding `text` (the line and what is
    wrong with it), or None: lines split at "\n", a "\r" before it dropped, empty ones skipped."""
    return _read(text)[1]


def _read(text: str) -> tuple[dict[str, int], str | None]:
    """The names an environment file holding `text` sets (each with the line of its last
    setting: the runner keeps the last), and why the runner would reject it (None: it reads it)."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    names: dict[str, int] = {}
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        if not line:
            continue
        start = number
        eq, here = line.find("="), line.find("<<")
        if eq >= 0 and (here < 0 or eq < here):
            name = line[:eq]
        elif here >= 0:
            name, delimiter = line[:here], line[here + 2 :]
            while number < len(lines) and lines[number] != delimiter:
                number += 1
            if number == len(lines):
                why = f"`{line[:80]}` opens a value that no `{delimiter[:40]}` line closes"
                return names, f"line {start}: {why}"
            number += 1
        else:
            return names, f"line {number}: `{line[:80]}` is neither NAME=value nor NAME<<DELIMITER"
        if not name:
            return names, f"line {number}: `{line[:80]}` has no name"
        names[name] = start
    return names, None


def _earlier_steps(fd: int, size: int, path: str) -> str | None:
    """Why what earlier commands of this step left in the file stops vkdoctor's entry (None
    when it may be appended): the runner would reject it, or it sets LD_LIBRARY_PATH already,
    which the runner would then drop for vkdoctor's (it keeps the last), a value the overlay
    was not proven with."""
    if size > MAX_READ:
        return None
    names, wrong = _read(os.pread(fd, size, 0).decode("utf-8", "surrogateescape"))
    if wrong:
        return (
            f"{path} already holds what the runner rejects ({wrong}): an earlier command of "
            "this step wrote it, and the runner will fail the step and set none of the file's "
            "variables, the overlay neither"
        )
    if "LD_LIBRARY_PATH" in names:
        return (
            f"{path} sets LD_LIBRARY_PATH already (line {names['LD_LIBRARY_PATH']}, an earlier "
            "command of this step): the runner keeps only the last setting, so that value "
            "would be lost for the later steps, and the overlay was not proven with it. Export "
            "that value in the shell before vkdoctor runs, and the overlay carries it"
        )
    return None


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
    link = foreign_link(path)
    if link:
        raise GithubEnvError(f"--github-env: {link}; not followed, nothing written")
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
        wrong = _earlier_steps(fd, size, path)
        if wrong:
            raise GithubEnvError(f"--github-env: nothing written: {wrong}")
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
