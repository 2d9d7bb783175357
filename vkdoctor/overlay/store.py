"""vkdoctor's private store: <cache>/overlays/<key> (symlink farms) and <cache>/extracted/<key>.

Every directory is mode 0700 and owned by the user; an existing one that is owned by someone else
or writable by group or others is refused, because whoever can write it chooses the code that runs
in every process started under the overlay. Content-addressed: the same inputs give the same
directory. Built in a temporary sibling and renamed into place, so nothing half-written is ever
visible under the final name. Nothing outside the cache directory is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from vkdoctor.overlay.errors import StoreError, describe_os_error, store_hint
from vkdoctor.record import record

#: directories the store never writes into, whatever the cache dir says
SYSTEM_PREFIXES = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/boot",
    "/opt",
    "/var/lib",
    "/proc",
    "/sys",
    "/dev",
)


@record(frozen=True, kw_only=True)
class Link:
    """One overlay entry: `soname` in the overlay points at `target` (a real path)."""

    soname: str
    target: Path
    needed_by: tuple[str, ...] = ()


def _is_system_dir(path: Path) -> bool:
    text = str(path)
    return any(text == p or text.startswith(p + "/") for p in SYSTEM_PREFIXES)


def verify_private(path: Path) -> None:
    """Refuse a directory that is not ours alone: wrong owner, group/world-writable, not a dir."""
    try:
        st = path.stat()
    except OSError as exc:
        raise StoreError(f"cannot use {path}: {describe_os_error(exc)}", path=str(path)) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path} exists and is not a directory", path=str(path))
    uid = os.geteuid()
    if st.st_uid != uid:
        raise StoreError(
            f"{path} is owned by uid {st.st_uid}, not by you (uid {uid}); vkdoctor will not put "
            "libraries in a directory someone else controls",
            hint=f"remove it or choose another cache directory (XDG_CACHE_HOME): rm -rf {path}",
            path=str(path),
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise StoreError(
            f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
            "anyone who can write it chooses the code your processes load",
            hint=f"chmod 700 {path}",
            path=str(path),
        )


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) with mode 0700, then verify it. Returns `path`."""
    if _is_system_dir(path):
        raise StoreError(
            f"refusing to use {path} as vkdoctor's store: it is a system directory",
            hint="set XDG_CACHE_HOME to a directory in your home",
            path=str(path),
        )
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create vkdoctor's store {path}: {describe_os_error(exc)}",
            hint=store_hint(exc),
            path=str(path),
        ) from exc
    verify_private(path)
    return path


def content_key(parts: Iterable[str]) -> str:
    """A short stable hash of sorted text parts."""
    h = hashlib.sha256()
    for part in sorted(parts):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()[:24]


def file_identity(path: Path) -> str:
    """What identifies a file's content cheaply: real path, size and mtime."""
    st = path.stat()
    return f"{path}\t{st.st_size}\t{st.st_mtime_ns}"


def overlay_key(links: Sequence[Link]) -> str:
    return content_key(f"{link.soname}\t{file_identity(link.target)}" for link in links)


def _matches(directory: Path, links: Sequence[Link]) -> bool:
    """An existing overlay dir holds exactly these symlinks, and nothing else."""
    try:
        names = sorted(p.name for p in directory.iterdir())
        if names != sorted(link.soname for link in links):
            return False
        return all(
            (directory / link.soname).is_symlink()
            and str((directory / link.soname).readlink()) == str(link.target)
            for link in links
        )
    except OSError:
        return False


def build_atomically(
    parent: Path, name: str, fill: Callable[[Path], None], *, is_complete: Callable[[Path], bool]
) -> Path:
    """Create parent/name by filling a temporary sibling and renaming it into place.

    An existing parent/name that `is_complete` accepts is reused; one that is not is replaced.
    On any error the temporary directory is removed and a StoreError says why.
    """
    ensure_private_dir(parent)
    final = parent / name
    if final.is_dir() and not final.is_symlink():
        verify_private(final)
        if is_complete(final):
            return final
    tmp: Path | None = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=parent))
        fill(tmp)
        tmp.chmod(0o700)
        if final.exists() or final.is_symlink():
            stale = Path(tempfile.mkdtemp(prefix=f".old-{name}-", dir=parent))
            final.rename(stale / "old")
            shutil.rmtree(stale, ignore_errors=True)
        try:
            tmp.rename(final)
        except OSError:
            # Another vkdoctor built the same directory meanwhile: same key, same content.
            if final.is_dir() and is_complete(final):
                shutil.rmtree(tmp, ignore_errors=True)
                return final
            raise
        tmp = None
        return final
    except OSError as exc:
        raise StoreError(
            f"cannot write {final}: {describe_os_error(exc)}",
            hint=store_hint(exc),
            path=str(final),
        ) from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)


def build_overlay(cache_dir: Path, links: Sequence[Link]) -> Path:
    """The overlay directory for `links`: <cache>/overlays/<key>, one symlink per soname."""
    sonames = [link.soname for link in links]
    if len(set(sonames)) != len(sonames):
        raise ValueError(f"one soname twice in an overlay: {sorted(sonames)}")
    for link in links:
        if "/" in link.soname or link.soname in ("", ".", ".."):
            raise ValueError(f"not a soname: {link.soname!r}")
    ensure_private_dir(cache_dir)

    def fill(tmp: Path) -> None:
        for link in links:
            (tmp / link.soname).symlink_to(link.target)

    return build_atomically(
        cache_dir / "overlays",
        overlay_key(links),
        fill,
        is_complete=lambda d: _matches(d, links),
    )
