"""Facts about files that outlive one run, keyed by each file's identity.

What an ELF file's dynamic section says, or which of a closure's symbols nothing defines,
depends only on the bytes of the files involved. A second `check` on an unchanged machine asks
the same questions of the same files, so the answers are kept in the user's cache directory,
one store per kind of fact, keyed by the identity of every file an answer depends on: device,
inode, size, mtime_ns and ctime_ns. A file that is replaced, rewritten, touched or has its
metadata changed (ctime cannot be set back) gets a new identity, and its facts are computed
again in the same run: nothing is ever invalidated by time, only by a change.

A store is trusted only where nobody but root and the user can change it (the overlay store's
rule, vkdoctor.trust), read with O_NOFOLLOW, bounded in size, and written atomically
(a private temporary file renamed into place). A store that cannot be trusted, read or written
is simply not used: the facts are then computed as if there were none.

The code that computes a kind of fact is part of its key (`Store(sources=...)`: the modules'
own identities), so a changed vkdoctor never reads answers an older one gave.

`FactCache` is the Context's fact store (vkdoctor.model.factstore) that the command layer
installs: the readers ask it by kind, and it turns their answers (records, tuples, dicts and
plain values) into what marshal carries and back, in one place (`_encode`, `_decode`).
"""

from __future__ import annotations

import marshal
import os
import stat
import sys

# os, stat, sys and marshal only: the load test's request handed ahead is read through here
# before pathlib or typing is imported (vkdoctor.speed.zygote)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Sequence
    from pathlib import Path
    from typing import Any

    from vkdoctor.model.factstore import FactKind

#: bumped when what a store holds changes shape
FORMAT = 2
#: a store larger than this is not read (a real one holds a few hundred KB)
MAX_BYTES = 32 * 1024 * 1024
#: entries kept per store: those used by the last run first, then the most recent others
MAX_ENTRIES = 4096

Identity = tuple[int, int, int, int, int]


def identity(path: str | Path) -> Identity | None:
    """The identity of the file `path` leads to (symbolic links followed), None when it is
    not there or cannot be examined."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stamp(sources: Sequence[str]) -> tuple[Any, ...]:
    return (FORMAT, sys.hexversion, marshal.version, *(identity(s) for s in sources))


class Store:
    """One kind of fact: `get` and `put` by key, `save` at the end of a run."""

    def __init__(self, file: str, *, sources: Sequence[str], keep: int = MAX_ENTRIES) -> None:
        self.file = file
        self.keep = keep
        self._stamp = _stamp(sources)
        self._old: dict[Hashable, Any] | None = None
        self._used: dict[Hashable, Any] = {}
        self._changed = False

    def _load(self) -> dict[Hashable, Any]:
        if self._old is None:
            self._old = _read(self.file, self._stamp)
        return self._old

    def get(self, key: Hashable) -> Any:
        """The value kept for `key`, or None."""
        hit = self._used.get(key)
        if hit is None:
            hit = self._load().get(key)
            if hit is not None:
                self._used[key] = hit
        return hit

    def put(self, key: Hashable, value: Any) -> None:
        self._used[key] = value
        self._changed = True

    def save(self) -> None:
        """Write the store when this run added to it: the entries it used, then older ones."""
        if not self._changed:
            return
        kept = dict(self._used)
        for key, value in self._load().items():
            if len(kept) >= self.keep:
                break
            kept.setdefault(key, value)
        try:
            data = marshal.dumps((self._stamp, kept))
        except ValueError:  # a value marshal cannot carry: a bug of the caller's, not fatal
            return
        _write(self.file, data)
        self._changed = False


def _trusted(directory: str) -> bool:
    from vkdoctor.trust import untrusted

    return untrusted(directory, container=True) is None


def _read(file: str, expected: tuple[Any, ...]) -> dict[Hashable, Any]:
    if not _trusted(os.path.dirname(file)):
        return {}
    try:
        # O_NONBLOCK: a FIFO put in the store's place must not stop the run at its open
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        me = os.geteuid()
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid not in (0, me)
            or st.st_mode & 0o022
            or st.st_size > MAX_BYTES
        ):
            return {}
        with os.fdopen(fd, "rb", closefd=False) as f:
            # read(n) allocates n bytes first: the file's own size, not the bound
            data = f.read(st.st_size + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    try:
        stamp, entries = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    if stamp != expected or not isinstance(entries, dict):
        return {}
    return entries


def _write(file: str, data: bytes) -> None:
    directory = os.path.dirname(file)
    # judged before anything is created: nothing goes where another user could swap it
    if not _trusted(directory):
        return
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return
    if not _trusted(directory):
        return
    tmp = os.path.join(directory, f".{os.path.basename(file)}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, file)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


#: one Store object per file in this process, so that Contexts copied for an overlay or a
#: second environment add to the same store instead of overwriting each other's
_open: dict[str, Store] = {}
#: no store at all (vkdoctor.launch.SPEED_OFF, to measure what the stores save)
OFF = False


def store(
    cache_dir: str | Path | None, kind: str, *, sources: Sequence[str], keep: int = MAX_ENTRIES
) -> Store | None:
    """The store of `kind` under `cache_dir` (vkdoctor's cache directory), None without one;
    `keep` bounds its entries (the used ones first)."""
    if cache_dir is None or OFF or not _usable(str(cache_dir)):
        return None
    file = os.path.join(cache_dir, "facts", f"{kind}.marshal")
    hit = _open.get(file)
    if hit is None:
        hit = _open[file] = Store(file, sources=sources, keep=keep)
    return hit


#: cache directory -> whether only root and this user can change it (judged once a process)
_judged: dict[str, bool] = {}


def _usable(cache_dir: str) -> bool:
    """Whether the cache directory is this user's alone: another's is neither read nor
    written (a marshal store is believed, and marshal.loads is no parser for hostile data)."""
    if cache_dir not in _judged:
        from vkdoctor.trust import untrusted

        _judged[cache_dir] = untrusted(cache_dir, container=True) is None
    return _judged[cache_dir]


def save_all() -> None:
    """Write every store this process changed (once its checks are done)."""
    for s in _open.values():
        s.save()


class FactCache:
    """The fact store (vkdoctor.model.factstore.FactStore) of the cache directory `cache_dir`:
    an answer is kept under its key and the identities of the files it depends on."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.cache_dir = cache_dir
        #: (kind, key) -> the files' identities when it was last asked for (None: not all there)
        self._asked: dict[tuple[str, Hashable], tuple[Identity, ...] | None] = {}

    def _store(self, kind: FactKind) -> Store | None:
        return store(self.cache_dir, kind.name, sources=kind.sources, keep=kind.keep)

    def get(self, kind: FactKind, files: Iterable[str | Path], key: Hashable = ()) -> Any:
        ids = _identities(files)
        self._asked[kind.name, key] = ids
        found = self._store(kind) if ids is not None else None
        kept = found.get((key, ids)) if found is not None else None
        if kept is None:
            return None
        try:
            return _decode(kept, {})
        except (TypeError, ValueError, AttributeError, IndexError):  # not what this code wrote
            return None

    def put(self, kind: FactKind, files: Iterable[str | Path], key: Hashable, value: Any) -> None:
        ids = _identities(files)
        if ids is None or self._asked.get((kind.name, key), ids) != ids:
            return  # a file is gone, or changed since it was asked for: read while it changed
        found = self._store(kind)
        if found is None:
            return
        try:
            encoded = _encode(value, {})
        except ValueError:  # a value the store cannot carry: a bug of the caller's, not fatal
            return
        found.put((key, ids), encoded)


def _identities(files: Iterable[str | Path]) -> tuple[Identity, ...] | None:
    ids = []
    for f in files:
        ident = identity(f)
        if ident is None:
            return None
        ids.append(ident)
    return tuple(ids)


#: what marshal carries as it is
_PLAIN = frozenset({str, bytes, int, float, bool, type(None)})
#: a record's class, as a store names it, and its fields (one object each, which marshal
#: writes once per store and refers to after)
_TAGS: dict[type, tuple[str, tuple[str, ...]]] = {}


def _encode(value: Any, memo: dict[int, Any]) -> Any:
    """`value` as marshal carries it: a record becomes a list [its class, its field names, its
    values...] (the one list a store holds), the same record object the same list."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is tuple:
        return tuple([v if type(v) in _PLAIN else _encode(v, memo) for v in value])
    if kind is dict:
        return {_encode(k, memo): _encode(v, memo) for k, v in value.items()}
    hit = memo.get(id(value))
    if hit is not None:
        return hit
    tag = _TAGS.get(kind)
    if tag is None:
        spec = getattr(kind, "__record_spec__", None)
        if spec is None:
            raise ValueError(f"a {kind.__name__} is not kept")
        tag = _TAGS[kind] = (f"{kind.__module__}:{kind.__qualname__}", tuple(spec.names))
    fields = value.__dict__
    hit = memo[id(value)] = [*tag]
    for name in tag[1]:
        v = fields[name]
        hit.append(v if type(v) in _PLAIN else _encode(v, memo))
    return hit


_NESTED = frozenset({tuple, list, dict})
#: the record classes a store has named, found (`_record_class`) and checked once
_CLASSES: dict[str, Any] = {}


def _decode(value: Any, memo: dict[int, Any]) -> Any:
    """What `_encode` turned into `value`; a record only of a class already imported whose
    fields are still those it had."""
    kind = type(value)
    if kind is tuple:
        if not any(type(v) in _NESTED for v in value):
            return value
        return tuple([_decode(v, memo) if type(v) in _NESTED else v for v in value])
    if kind is dict:
        return {_decode(k, memo): _decode(v, memo) for k, v in value.items()}
    if kind is not list:
        return value
    hit = memo.get(id(value))
    if hit is None:
        names = value[1]
        cls = _CLASSES.get(value[0])
        if cls is None:
            cls = _record_class(value[0])
            if cls is None or tuple(cls.__record_spec__.names) != names:
                raise ValueError("not a record of this vkdoctor")
            _CLASSES[value[0]] = cls
        if names != _TAGS.setdefault(cls, (value[0], names))[1] or len(value) != len(names) + 2:
            raise ValueError("not a record of this vkdoctor")
        hit = cls.__new__(cls)
        fields = hit.__dict__
        for name, v in zip(names, value[2:], strict=True):
            fields[name] = _decode(v, memo) if type(v) in _NESTED else v
        memo[id(value)] = hit
    return hit


def _record_class(name: Any) -> Any:
    """The record class `name` ("module:qualname") names, when its module is imported."""
    module, _, qualname = str(name).partition(":")
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) and hasattr(found, "__record_spec__") else None
