"""vkdoctor's private store: <cache>/overlays/<key> (symlink farms) and <cache>/extracted/<key>.

Every directory is mode 0700 and owned by the user; an existing one that is owned by someone else
or writable by group or others is refused, and so is one reached through a directory that someone
other than root and the user controls (trust.py), because whoever can write it, or rename a
directory above it, chooses the code that runs in every process started under the overlay. When
the cache directory is refused or cannot be written, the run falls back to $XDG_RUNTIME_DIR/vkdoctor
or a fresh private temporary directory, and says so (store_root). Content-addressed: the same inputs give the same
directory. Built in a temporary sibling and renamed into place, so nothing half-written is ever
visible under the final name. Nothing outside the cache directory is written.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from vkdoctor import trust
from vkdoctor.model.context import Context
from vkdoctor.model.record import record
from vkdoctor.overlay.errors import StoreError, describe_os_error, store_hint

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
    """Refuse a store directory that is not ours alone: not a directory, owned by someone else,
    writable by anyone else, or reached through a directory (or symbolic link) that someone other
    than root and the user controls (trust.py)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise StoreError(f"cannot use {path}: {describe_os_error(exc)}", path=str(path)) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path} exists and is not a directory", path=str(path))
    uid = os.geteuid()
    if st.st_uid != uid:
        raise StoreError(
            f"{path} is owned by {trust.user_name(st.st_uid)}, not by you (uid {uid}); vkdoctor "
            "will not put libraries in a directory someone else controls",
            hint=f"remove it or choose another cache directory (XDG_CACHE_HOME): rm -rf {path}",
            path=str(path),
        )
    own = trust.writers(str(path), st, uid)
    if own is not None:
        raise StoreError(
            f"{path} is writable by {own} (mode {stat.S_IMODE(st.st_mode):04o}); "
            "anyone who can write it chooses the code your processes load",
            hint=f"chmod 700 {path}" + ("; setfacl -b " + str(path) if "ACL" in own else ""),
            commands=(f"chmod 700 {path}", *([f"setfacl -b {path}"] if "ACL" in own else [])),
            path=str(path),
        )
    _refuse_untrusted(path)


def _refuse_untrusted(path: Path, *, container: bool = False) -> None:
    why = trust.untrusted(str(path), container=container)
    if why is not None:
        raise StoreError(
            f"vkdoctor will not keep its store in {path}: {why}; whoever can change that "
            "directory can swap the store, and with it the code your processes load",
            hint="point XDG_CACHE_HOME at a directory that only you and root control",
            path=str(path),
        )


def _make_dirs(path: Path) -> None:
    """Create the missing directories of `path`, top down, each mode 0700."""
    missing: list[Path] = []
    p = path
    while not p.exists() and not p.is_symlink() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile; verify_private judges it
            d.mkdir(mode=0o700)


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) with mode 0700, then verify it. Returns `path`.

    The directories above it are judged before anything is created in them, and again after."""
    if _is_system_dir(path):
        raise StoreError(
            f"refusing to use {path} as vkdoctor's store: it is a system directory",
            hint="set XDG_CACHE_HOME to a directory in your home",
            path=str(path),
        )
    if not path.is_dir():  # an existing one gets verify_private's more precise words
        _refuse_untrusted(path)
    try:
        _make_dirs(path)
    except OSError as exc:
        raise StoreError(
            f"cannot create vkdoctor's store {path}: {describe_os_error(exc)}",
            hint=store_hint(exc),
            path=str(path),
        ) from exc
    verify_private(path)
    return path


@record(frozen=True, kw_only=True)
class StoreRoot:
    """Where this run keeps its overlays and extracted libraries."""

    path: Path
    #: why the cache directory is not used and this private one is (None: it is the cache)
    note: str | None = None
    #: a new temporary directory of this run's own, to remove when it ends up holding no overlay
    fresh: bool = False


def runtime_store(env: Mapping[str, str]) -> Path | None:
    """$XDG_RUNTIME_DIR/vkdoctor: the first place to fall back to (private, per user, per boot)."""
    base = env.get("XDG_RUNTIME_DIR") or ""
    return Path(base) / "vkdoctor" if base.startswith("/") else None


def _writable(path: Path) -> None:
    """Raise StoreError when nothing can be created in `path` (a read-only or full filesystem)."""
    import tempfile

    try:
        Path(tempfile.mkdtemp(prefix=".probe-", dir=path)).rmdir()
    except OSError as exc:
        raise StoreError(
            f"cannot write vkdoctor's store {path}: {describe_os_error(exc)}",
            hint=store_hint(exc),
            path=str(path),
        ) from exc


def _fresh_private(env: Mapping[str, str]) -> Path:
    """A new 0700 directory in TMPDIR (else /tmp), when that is trusted."""
    import tempfile

    why: list[str] = []
    bases = [b for b in (env.get("TMPDIR") or "", "/tmp") if b.startswith("/")]
    for base in dict.fromkeys(bases):
        try:
            _refuse_untrusted(Path(base), container=True)
            fresh = Path(tempfile.mkdtemp(prefix=f"vkdoctor-{os.geteuid()}-", dir=base))
            verify_private(fresh)
            return fresh
        except StoreError as exc:
            why.append(exc.message)
        except OSError as exc:
            why.append(f"cannot create a directory in {base}: {describe_os_error(exc)}")
    raise StoreError("; ".join(why) or "no temporary directory")


def store_root(ctx: Context) -> StoreRoot:
    """The cache directory when it is trusted and writable; else $XDG_RUNTIME_DIR/vkdoctor, else
    a fresh private temporary directory, with a note that says why. (A Context fact: one answer
    per run.) Raises StoreError, for the cache directory, when none of them can be used."""
    cache = ctx.options.cache_dir
    if cache is None:
        raise StoreError("no cache directory to build the overlay in")
    try:
        _writable(ensure_private_dir(cache))
        return StoreRoot(path=cache)
    except StoreError as exc:
        first = exc
    why = first.message
    runtime = runtime_store(ctx.env)
    if runtime is not None:
        try:
            _writable(ensure_private_dir(runtime))
            return StoreRoot(
                path=runtime,
                note=f"{why}; using {runtime} instead (private to you, emptied when you log out)",
            )
        except StoreError as exc:
            why += f"; and {exc.message}"
    try:
        fresh = _fresh_private(ctx.env)
    except StoreError as exc:
        raise StoreError(
            f"{why}; and {exc.message}", hint=first.hint, path=first.path, commands=first.commands
        ) from exc
    return StoreRoot(
        path=fresh,
        fresh=True,
        note=f"{why}; using {fresh} instead, a new private directory for this run only "
        f"(remove it when no program started under this overlay runs: rm -rf {fresh})",
    )


def store_roots(ctx: Context) -> list[str]:
    """Every directory this run may know as vkdoctor's store: the cache directory, the runtime
    fallback, and the directory this run chose (to tell its own overlays on LD_LIBRARY_PATH)."""
    roots = [ctx.options.cache_dir, runtime_store(ctx.env)]
    chosen = ctx.known(store_root)
    if chosen is not None:
        roots.append(chosen.path)
    return list(dict.fromkeys(str(r) for r in roots if r is not None))


def content_key(parts: Iterable[str]) -> str:
    """A short stable hash of sorted text parts."""
    import hashlib  # its OpenSSL costs ~10 ms at start; a healthy check never hashes

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
    import shutil
    import tempfile

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
