"""What one run read of the machine, so that a later run can tell whether any of it changed.

While a run records, every path it looks at through Python's file functions (stat, lstat,
listdir, scandir, readlink, access, open: pathlib, glob and os.path go through them) is noted
with how it was looked at (and what a scandir entry's is_dir(), is_file() or stat() learns
through a symbolic link, below os.stat, as a stat of its own). `observe` gives what that look
sees: a file's or folder's identity (type, inode, device, links, owner, size, mtime_ns,
ctime_ns, rdev), the error it gives, a link's target, access's answer, or for the kernel's files
and folders under /proc and /sys (whose times say nothing) a digest of their content or names.
A folder's identity changes when an entry is added, removed or renamed; a file's when it is
written, replaced, touched, or its mode or owner change (ctime cannot be set back).

Some reads say what changes without any file changing: free space (statvfs), memory, this
process's own /proc files, the time of day. They are *volatile*: the check that read them, directly or through a
fact it asked for, must run again in a later run; a volatile read outside any check, or a
program started (what a program reads is not seen), makes the run one that cannot be replayed.
"""

from __future__ import annotations

import builtins
import io
import os
import stat
import sys
import time
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any

#: the /proc files whose content is the same from one process to the next on one machine (the
#: rest of /proc is this process's own state, or counters)
_STABLE_PROC = (
    "/proc/self/mountinfo",
    "/proc/self/mounts",
    "/proc/mounts",
    "/proc/1/cgroup",
    "/proc/self/cgroup",
    "/proc/cpuinfo",
    "/proc/version",
    "/proc/cmdline",
    "/proc/filesystems",
    "/proc/driver/",
    "/proc/sys/",
)
#: a read of /proc or /sys bigger than this is not digested: the run is not replayed
_MAX_KERNEL_FILE = 4 * 1024 * 1024

Look = tuple[str, str]


def _kernel_file(path: str) -> bool:
    return path.startswith(("/proc/", "/sys/"))


def _volatile_read(path: str) -> bool:
    return path.startswith("/proc/") and not path.startswith(_STABLE_PROC)


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (
        st.st_mode,
        st.st_ino,
        st.st_dev,
        st.st_nlink,
        st.st_uid,
        st.st_gid,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_rdev,
    )


def _digest(path: str, open_fn: Callable[..., Any]) -> Any:
    """The content of a kernel file, as a digest; /proc/cpuinfo without its clock speeds."""
    try:
        with open_fn(path, "rb") as f:
            data = f.read(_MAX_KERNEL_FILE + 1)
    except OSError as exc:
        return ("error", exc.errno)
    if len(data) > _MAX_KERNEL_FILE:
        return ("unbounded",)
    if path == "/proc/cpuinfo":
        data = b"\n".join(line for line in data.split(b"\n") if not line.startswith(b"cpu MHz"))
    return ("content", digest(data))


def _names(path: str) -> Any:
    """What a listing of a kernel folder sees: the names in it (its times say nothing: a GPU
    that appears under /sys/bus/pci/devices changes no time of the folder)."""
    try:
        names = _original.get("listdir", os.listdir)(path)
    except OSError as exc:
        return ("error", exc.errno)
    return ("names", digest("\0".join(sorted(names)).encode("utf-8", "surrogateescape")))


def digest(data: bytes) -> str:
    """A SHA-256 of `data`, by CPython's own implementation when it has one: hashlib loads
    OpenSSL (~5 ms), and a replay is a run of some 150 ms."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from hashlib import sha256
    return str(sha256(data).hexdigest())


def observe(look: Look) -> Any:
    """What `look` (how, path) sees now. Two equal answers mean nothing it could tell changed."""
    how, path = look
    stat_fn = _original.get("stat", os.stat)
    lstat_fn = _original.get("lstat", os.lstat)
    open_fn = _original.get("open", builtins.open)
    try:
        if how == "readlink":
            return ("link", _original.get("readlink", os.readlink)(path))
        if how.startswith("access"):
            return ("access", _original.get("access", os.access)(path, int(how[6:])))
        if how == "read" and _kernel_file(path):
            return _digest(path, open_fn)
        if how == "list" and _kernel_file(path):
            return _names(path)
        st = lstat_fn(path) if how == "lstat" else stat_fn(path)
    except OSError as exc:
        return ("error", exc.errno)
    except ValueError:
        return ("invalid",)
    return _seen_in(how, path, st)


def _seen_in(how: str, path: str, st: os.stat_result) -> Any:
    """What a stat-like look at `path` sees in `st`."""
    if _kernel_file(path):
        return ("kernel", stat.S_IFMT(st.st_mode))
    if how != "list" and stat.S_ISDIR(st.st_mode):
        # a folder looked at, not listed: what is in it is another look's (its times change
        # with every file made in it, /tmp's with each run's temporary folders)
        return ("folder", st.st_mode, st.st_ino, st.st_dev, st.st_uid, st.st_gid)
    return ("id", _identity(st))


class Recorder:
    """The looks of one run, and which consumers (check codes, facts) read something volatile."""

    def __init__(self, ignored: Iterable[str]) -> None:
        #: each look, with the innermost consumer of every time it was made (None: no check)
        self.looks: dict[Look, set[Hashable]] = {}
        self.ignored = tuple(ignored)
        self.frames: list[Hashable] = []
        self.volatile: set[Hashable] = set()
        #: why this run cannot be replayed at all (None: it can)
        self.unfit: str | None = None
        self.started_ns = time.clock_gettime_ns(time.CLOCK_REALTIME)
        self.notes: dict[str, Any] = {}
        #: what each look saw the first time it was taken (`save` holds it to what it sees then)
        self.first: dict[Look, Any] = {}
        #: the files read for a volatile check (never compared: the check runs again)
        self.volatile_paths: set[str] = set()

    def saw(self, how: str, path: Any) -> Look | None:
        """Note a look; the look, or None when it is not one to keep (a descriptor, an ignored
        path, a volatile read)."""
        if isinstance(path, int):
            if how == "list":  # a folder read through a descriptor: no look can repeat it
                self.refuse("a folder listed through a descriptor")
            return None  # a descriptor: what it was opened from was noted at its open
        try:
            text = os.fsdecode(path)
        except (TypeError, ValueError):
            return None
        if not text.startswith("/"):
            try:
                text = f"{Path.cwd()}/{text}"
            except OSError:
                self.refuse("the working directory is gone")
                return None
        if text.startswith(self.ignored):
            return None
        if how == "read" and _volatile_read(text):
            self.volatile_read(f"read {text}", text)
            return None
        look = (how, text)
        self.looks.setdefault(look, set()).add(self.frames[-1] if self.frames else None)
        return look

    def seen(self, look: Look, what: Any) -> None:
        """What `look` saw as it was taken (the first time counts)."""
        self.first.setdefault(look, what)

    def changed(self, now: Iterable[tuple[str, str, Any]]) -> bool:
        """Whether a look sees `now` (how, path, what) other than what it saw as it was taken:
        what the run read changed while it ran."""
        return any(what != self.first.get((how, path), what) for how, path, what in now)

    def volatile_read(self, what: str, path: str | None = None) -> None:
        if path is not None:
            self.volatile_paths.add(path)
        if not self.frames:
            self.refuse(f"{what} outside any check")
        self.volatile.update(self.frames)

    def kept_looks(self) -> list[Look]:
        """The looks a later run must see unchanged: all but those only checks that run again
        anyway (the volatile ones) made."""
        return [
            look
            for look, consumers in self.looks.items()
            if any(c is None or c not in self.volatile for c in consumers)
        ]

    def export(self) -> tuple[list[tuple[Look, Any]], list[str], str | None]:
        """What a forked copy read (each look with what it first saw), for the process it was
        forked from (`merge`)."""
        codes = [c for c in self.volatile if isinstance(c, str)]
        looks = [(look, self.first.get(look)) for look in self.kept_looks()]
        return looks, codes, self.unfit

    def merge(self, exported: Any) -> None:
        if exported is None:
            self.refuse("a forked copy could not say what it read")
            return
        looks, codes, unfit = exported
        for (how, path), first in looks:
            self.looks.setdefault((how, path), set()).add(None)
            if first is not None:
                self.seen((how, path), first)
        self.volatile.update(codes)
        if unfit:
            self.refuse(unfit)

    def refuse(self, why: str) -> None:
        if self.unfit is None:
            self.unfit = why

    def entered(self, consumer: Hashable) -> None:
        self.frames.append(consumer)

    def left(self) -> None:
        self.frames.pop()

    def used(self, fact: Hashable) -> None:
        """A fact computed earlier was asked for: its volatility passes to who asked."""
        if fact in self.volatile:
            self.volatile.update(self.frames)


_recorder: list[Recorder] = []
_original: dict[str, Any] = {}


def _note(how: str, path: Any) -> None:
    """A look taken below Python's os functions (a DirEntry's), with what it sees now."""
    rec = _recorder[0] if _recorder else None
    if rec is None:
        return
    look = rec.saw(how, path)
    if look is not None and look not in rec.first:
        rec.seen(look, observe(look))


class _Entry:
    """A DirEntry of a recorded listing. The listing's own look sees each entry's name and
    type; what is_dir(), is_file() and stat() learn through a symbolic link (its target, by a
    stat of the C library's), or stat() of any entry, is a look of its own: a dangling link
    skipped by Path.glob's is_dir() that comes to lead to a folder changes no listing."""

    __slots__ = ("_entry",)

    def __init__(self, entry: os.DirEntry[Any]) -> None:
        self._entry = entry

    @property
    def name(self) -> Any:
        return self._entry.name

    @property
    def path(self) -> Any:
        return self._entry.path

    def inode(self) -> int:
        return self._entry.inode()

    def is_symlink(self) -> bool:
        return self._entry.is_symlink()

    def _through_link(self, follow_symlinks: bool) -> None:
        if follow_symlinks and self._entry.is_symlink():
            _note("stat", self._entry.path)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        self._through_link(follow_symlinks)
        return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        self._through_link(follow_symlinks)
        return self._entry.is_file(follow_symlinks=follow_symlinks)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        _note("stat" if follow_symlinks else "lstat", self._entry.path)
        return self._entry.stat(follow_symlinks=follow_symlinks)

    def __fspath__(self) -> Any:
        return self._entry.__fspath__()

    def __getattr__(self, name: str) -> Any:  # what a later Python's DirEntry adds
        return getattr(self._entry, name)

    def __repr__(self) -> str:
        return repr(self._entry)


class _Listing:
    """os.scandir's iterator while a run records: its entries are `_Entry`s."""

    __slots__ = ("_it",)

    def __init__(self, it: Any) -> None:
        self._it = it

    def __iter__(self) -> _Listing:
        return self

    def __next__(self) -> _Entry:
        return _Entry(next(self._it))

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        self._it.close()

    def close(self) -> None:
        self._it.close()


def recorder() -> Recorder | None:
    return _recorder[0] if _recorder else None


def start(ignored: Iterable[str] = ()) -> Recorder:
    """Note every look from now on, but at paths that begin with one of `ignored` (vkdoctor's
    own cache, the load test's folders)."""
    rec = Recorder(ignored)
    _recorder[:] = [rec]
    if not _original:
        _wrap()
    return rec


def stop() -> None:
    _recorder.clear()


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT


def _writes(how: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """An open for writing: what the run writes is not what it read."""
    if how != "read":
        return False
    mode = args[0] if args else kwargs.get("mode", kwargs.get("flags", "r"))
    if isinstance(mode, int):
        return bool(mode & _WRITE_FLAGS)
    return any(c in str(mode) for c in "wax+")


def _wrap() -> None:
    _wrap_looks()
    _wrap_imports()
    _wrap_volatile()
    _wrap_programs()


def _wrap_looks() -> None:
    """os's and builtins' file functions note the looks they take."""

    def noting(name: str, how: str, module: Any = os) -> None:
        original = getattr(module, name)
        _original[name if module is os else f"{module.__name__}.{name}"] = original

        def wrapper(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            rec = _recorder[0] if _recorder and not _writes(how, args, kwargs) else None
            if rec is None:
                return original(path, *args, **kwargs)
            if kwargs.get("dir_fd") is not None:
                rec.refuse(f"{name} relative to a descriptor")
            follow = kwargs.get("follow_symlinks", True)
            kind = how if follow or how != "stat" else "lstat"
            if how == "access":
                kind = f"access{args[0] if args else kwargs.get('mode', 0)}"
                if kwargs.get("effective_ids") or not follow:
                    rec.refuse("access with effective ids or without links")
            look = rec.saw(kind, path)
            if look is None or look in rec.first:
                return original(path, *args, **kwargs)
            # what the look sees as it is taken: a change before the run is kept is then
            # seen at its save, whatever the kind of look (a link, an error, a folder)
            try:
                result = original(path, *args, **kwargs)
            except OSError as exc:
                rec.seen(look, ("error", exc.errno) if kind in ("stat", "lstat") else observe(look))
                raise
            rec.seen(
                look,
                _seen_in(kind, look[1], result) if kind in ("stat", "lstat") else observe(look),
            )
            return result

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        setattr(module, name, wrapper)
        # what os says the function takes (shutil.copystat asks before it passes
        # follow_symlinks=False, and uses no stat at all when the wrapper is not listed)
        for takes in (os.supports_follow_symlinks, os.supports_dir_fd, os.supports_fd):
            if original in takes:
                takes.add(wrapper)

    for name, how in (
        ("stat", "stat"),
        ("lstat", "lstat"),
        ("listdir", "list"),
        ("scandir", "list"),
        ("readlink", "readlink"),
        ("access", "access"),
        ("open", "read"),
    ):
        noting(name, how)
    noting("open", "read", builtins)
    io.open = builtins.open
    _original["open"] = _original.pop("builtins.open")

    listing = os.scandir

    def scandir(path: Any = ".") -> Any:
        it = listing(path)
        return it if not _recorder or isinstance(path, int) else _Listing(it)

    scandir.__wrapped__ = listing  # type: ignore[attr-defined]
    os.scandir = scandir


def _wrap_imports() -> None:
    """Python's module search (an import, `importlib.util.find_spec`) looks through the C
    library below os's functions: every folder it searched is a listing look (one that did
    not exist too: made later, it is searched first), and what it found a look of its own."""
    from importlib.machinery import PathFinder

    original = PathFinder.find_spec.__func__  # type: ignore[attr-defined]

    def find_spec(cls: Any, fullname: str, path: Any = None, target: Any = None) -> Any:
        spec = original(cls, fullname, path, target)
        if _recorder:
            for entry in list(sys.path if path is None else path):
                if isinstance(entry, (str, bytes)):
                    _note("list", entry or ".")
            if spec is not None and spec.has_location and isinstance(spec.origin, str):
                _note("stat", spec.origin)
            for folder in list(getattr(spec, "submodule_search_locations", None) or ()):
                _note("list", folder)
        return spec

    find_spec.__wrapped__ = original  # type: ignore[attr-defined]
    PathFinder.find_spec = classmethod(find_spec)  # type: ignore[assignment,method-assign]


def _wrap_volatile() -> None:
    """What changes with no file changing (free space, the time, the CPUs) marks its reader."""

    def statvfs(path: Any) -> Any:
        if _recorder:
            _recorder[0].volatile_read(f"the free space of {os.fsdecode(path)}", os.fsdecode(path))
        return original_statvfs(path)

    original_statvfs = os.statvfs
    os.statvfs = statvfs

    def clock(name: str) -> None:
        original = getattr(time, name)

        def wrapper() -> Any:
            if _recorder:
                _recorder[0].volatile_read("the time of day")
            return original()

        setattr(time, name, wrapper)

    clock("time")
    clock("time_ns")

    def cpu_count() -> int | None:
        if _recorder:  # the C library reads it from /sys
            _recorder[0].volatile_read("the number of CPUs", "/sys/devices/system/cpu/online")
        return original_cpu_count()

    original_cpu_count = os.cpu_count
    os.cpu_count = cpu_count


def _wrap_programs() -> None:
    """A program started makes the run one that cannot be replayed."""
    import _posixsubprocess

    def refusing(name: str, module: Any) -> None:
        original = getattr(module, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _recorder:
                _recorder[0].refuse(f"it started a program ({name})")
            return original(*args, **kwargs)

        setattr(module, name, wrapper)

    # subprocess binds _posixsubprocess.fork_exec as it is imported: imported already, its own
    # name is wrapped too (importing it here would cost ~10 ms)
    refusing("fork_exec", _posixsubprocess)
    if "subprocess" in sys.modules:
        refusing("_fork_exec", sys.modules["subprocess"])
    for name in ("system", "posix_spawn", "posix_spawnp", "execv", "execve"):
        refusing(name, os)
