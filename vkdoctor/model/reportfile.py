"""Reading vkdoctor's JSON reports back (`diff`, `summary`): a file that is not one, or one of
another schema version, is refused with a sentence that says which."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from vkdoctor.model import SCHEMA_VERSION, files
from vkdoctor.model.digits import natural_key

T = TypeVar("T")

#: a report is at most a few hundred kB (a few MB with every evidence); many times that is
#: not one
MAX_BYTES = 16 * 1024 * 1024
#: JSON objects and arrays in one report at most (counted as `{` and `[` before parsing, as
#: cJSON's max_nodes bounds its parse): a real report holds a few thousand
MAX_NODES = 200_000


class ReportError(Exception):
    """The file cannot be read as a vkdoctor report of this schema version."""


def load(path: str) -> dict[str, Any]:
    """The report in `path` ('-': standard input is not accepted: two reports need two files)."""
    data = _read(path)
    if data.count(b"{") + data.count(b"[") > MAX_NODES:
        raise ReportError(
            f"{path}: more than {MAX_NODES:,} JSON objects and arrays, far more than a vkdoctor "
            "report holds; not read"
        )
    try:
        doc = files.json_value(data)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError among them
        raise ReportError(
            f"{path}: not JSON ({exc.__class__.__name__}: {str(exc)[:80]}); "
            "write reports with `vkdoctor check --json FILE`"
        ) from None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise ReportError(
            f"{path}: JSON, but not a vkdoctor report (no schema_version); "
            "write reports with `vkdoctor check --json FILE`"
        )
    version = doc["schema_version"]
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise ReportError(
            f"{path}: a report of schema version {json.dumps(version)[:20]}; this vkdoctor "
            f"({_self_version()}) reads schema version {SCHEMA_VERSION}: compare it with the "
            "vkdoctor that wrote it"
        )
    from vkdoctor.model.reportschema import problem

    why = problem(doc)
    if why:
        raise ReportError(f"{path}: not a vkdoctor report as its schema says: {why}")
    return doc


def _read(path: str) -> bytes:
    """The file's bytes: a regular file only, opened without blocking (a FIFO, a terminal or
    /proc/kmsg never holds the command), at most MAX_BYTES of it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except IsADirectoryError:
        raise ReportError(f"{path}: is a directory, not a report") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReportError(f"{path}: not a regular file ({_kind(st.st_mode)}), not a report")
        if st.st_size > MAX_BYTES:
            raise ReportError(f"{path}: larger than {MAX_BYTES >> 20} MiB, not a vkdoctor report")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        raise ReportError(f"{path}: larger than {MAX_BYTES >> 20} MiB, not a vkdoctor report")
    return b"".join(chunks)


def _kind(mode: int) -> str:
    kinds = {
        stat.S_IFIFO: "a FIFO",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
        stat.S_IFSOCK: "a socket",
        stat.S_IFDIR: "a directory",
    }
    return kinds.get(stat.S_IFMT(mode), "not a file")


def _self_version() -> str:
    from vkdoctor import __version__

    return __version__


#: folders below a summary's argument at most (an artifacts folder is two or three deep)
MAX_FOLDER_DEPTH = 32
#: report files one summary reads at most
MAX_REPORTS = 10_000


def reports_in(
    paths: tuple[str, ...], keep: Callable[[str, dict[str, Any]], T]
) -> tuple[list[T], list[tuple[str, str]]]:
    """What `keep` makes of every report the paths hold (a folder stands for every *.json below
    it), each report dropped once kept, so that memory grows with what is kept, not with the
    reports; and every input that could not be read with why, (path, reason), in the order
    found."""
    read: list[T] = []
    unreadable: list[tuple[str, str]] = []
    for path in paths:
        found, problems = _json_files(path)
        unreadable += problems
        for f in found:
            if len(read) + len(unreadable) >= MAX_REPORTS:
                unreadable.append((f, f"not read: more than {MAX_REPORTS:,} inputs in one summary"))
                break
            try:
                read.append(keep(f, load(f)))
            except ReportError as exc:
                unreadable.append((f, str(exc).removeprefix(f"{f}: ")))
    return read, unreadable


def _json_files(path: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The files `path` stands for: itself, or the *.json entries below it (walked with a stack,
    each folder once however links lead back to it), and the folders that could not be read."""
    try:
        st = Path(path).stat()
    except OSError as exc:
        return [], [(path, f"cannot be read ({exc.strerror or exc})")]
    if not stat.S_ISDIR(st.st_mode):
        return [path], []
    files: list[str] = []
    problems: list[tuple[str, str]] = []
    seen = {(st.st_dev, st.st_ino)}
    todo = [(path, 0)]
    while todo:
        folder, depth = todo.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: natural_key(e.name))
        except OSError as exc:
            problems.append((folder, f"a folder that cannot be read ({exc.strerror or exc})"))
            continue
        below = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                here = entry.stat() if is_dir else None
            except OSError:
                is_dir, here = False, None
            if is_dir and here is not None:
                if (here.st_dev, here.st_ino) in seen:
                    problems.append((entry.path, "a link back to a folder already read; skipped"))
                elif depth + 1 > MAX_FOLDER_DEPTH:
                    problems.append(
                        (entry.path, f"deeper than {MAX_FOLDER_DEPTH} folders; skipped")
                    )
                else:
                    seen.add((here.st_dev, here.st_ino))
                    below.append((entry.path, depth + 1))
            elif entry.name.endswith(".json"):
                files.append(entry.path)
        todo += reversed(below)
    if not files and not problems:
        problems.append((path, "a folder with no *.json report in it"))
    return files, problems
