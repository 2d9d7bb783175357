"""One ld.so library search (glibc 2.36 `_dl_map_object`), with every place tried recorded.

Order for a name without a slash, requested by object R (whose loaders are R.loader, ...):
  already loaded (by SONAME or by a name it was loaded under) -> DT_RPATH of R and of each
  object up its loading chain (skipped entirely when R has DT_RUNPATH) -> LD_LIBRARY_PATH
  (ignored when elevated; an empty entry is the current directory) -> DT_RUNPATH of R (not
  inherited) -> /etc/ld.so.cache -> the system directories (both skipped for R with
  DF_1_NODEFLIB, the cache only for entries in system directories).
In each directory the glibc-hwcaps and legacy hwcaps subdirectories come first. A candidate of
the other ELF class, or of another machine, is skipped and the search goes on; one that is not
ELF at all (or truncated) ends the search with an error, as it does in glibc.
"""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Sequence
from typing import Any, Literal

from vkdoctor.elf.ldcache import LdCache, load_cache
from vkdoctor.elf.mounts import noexec_mount
from vkdoctor.elf.platform import LdsoPlatform, ldso_platform
from vkdoctor.elf.reader import ElfError, ElfInfo, read_elf, resolved
from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.record import field, record

#: glibc's words when mmap refuses a segment (a noexec mount); _dl_map_object_from_fd names
#: the object by the name it was asked for, not by the file's path
MAP_FAILED = "failed to map segment from shared object"


class How(enum.StrEnum):
    """How ld.so found a library."""

    PATH = "path"
    RPATH = "rpath"
    LD_LIBRARY_PATH = "LD_LIBRARY_PATH"
    RUNPATH = "runpath"
    CACHE = "ld.so.cache"
    DEFAULT = "default"
    PRELOAD = "LD_PRELOAD"
    LOADED = "already-loaded"


Outcome = Literal[
    "absent", "found", "wrong_class", "wrong_machine", "unreadable", "bad_elf", "skipped"
]


@record(frozen=True, kw_only=True)
class Tried:
    """One place the search looked: a directory (with its hwcaps subdirectories) or the cache."""

    how: How
    #: the directory searched (for the cache: the cache file)
    where: str
    outcome: Outcome
    #: the file that was considered, when one existed
    path: str | None = None
    detail: str = ""
    #: which object's DT_RPATH/DT_RUNPATH this directory came from
    origin_of: str | None = None

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): empty path, detail and origin are left out, and origin_of is `from`
        d: dict[str, Any] = {"how": self.how.value, "where": self.where, "outcome": self.outcome}
        if self.path:
            d["path"] = self.path
        if self.detail:
            d["detail"] = self.detail
        if self.origin_of:
            d["from"] = self.origin_of
        return d


@record(frozen=True, kw_only=True)
class SearchInputs:
    """Everything from the environment that steers ld.so. Override it to ask "what if"."""

    #: LD_LIBRARY_PATH entries in order, as written ("" is the current directory)
    ld_library_path: tuple[str, ...] = ()
    #: LD_PRELOAD entries in order
    preload: tuple[str, ...] = ()
    elevated: bool = False
    #: the process's working directory, for relative and empty entries
    cwd: str = "/"

    @classmethod
    def from_context(
        cls, ctx: Context, *, prepend: Sequence[str] = (), env: dict[str, str] | None = None
    ) -> SearchInputs:
        """From ctx.env (or `env`), with `prepend` put in front of LD_LIBRARY_PATH."""
        e = ctx.env if env is None else env
        llp_raw = e.get("LD_LIBRARY_PATH")
        # glibc ignores an empty LD_LIBRARY_PATH, but ":" is two empty entries (the cwd)
        llp = tuple(llp_raw.replace(";", ":").split(":")) if llp_raw else ()
        pre_raw = e.get("LD_PRELOAD") or ""
        preload = tuple(p for p in pre_raw.replace(":", " ").split() if p)
        return cls(
            ld_library_path=(*prepend, *llp),
            preload=preload,
            elevated=ctx.elevated,
            cwd=str(ctx.cwd),
        )


@record(kw_only=True)
class LoadedObject:
    """An object in the modelled process (ld.so's link_map)."""

    #: l_name: the path it was opened under
    path: str
    realpath: str
    elf: ElfInfo
    how: How
    #: the directory it was found in ("" for a direct path)
    directory: str = ""
    #: names it was requested under (l_libname), its SONAME is matched too
    names: set[str] = field(default_factory=set)
    #: the object whose NEEDED (or dlopen) loaded it; None for the process's first objects
    loader: LoadedObject | None = None

    def matches(self, name: str) -> bool:
        return name == self.path or name in self.names or name == self.elf.soname

    def chain(self) -> tuple[LoadedObject, ...]:
        out: list[LoadedObject] = []
        obj: LoadedObject | None = self
        while obj is not None and len(out) < 256:
            out.append(obj)
            obj = obj.loader
        return tuple(out)


@record(frozen=True, kw_only=True)
class Lookup:
    """The outcome of one search for one name."""

    name: str
    #: the object found (new or already loaded), or None
    found: LoadedObject | None
    how: How | None
    tried: tuple[Tried, ...]
    #: ld.so's error text for this name when nothing was found
    error: str | None = None
    #: True when the object was already in the process or loaded earlier in this chain
    reused: bool = False


def expand_dst(entry: str, origin: str | None, plat: LdsoPlatform) -> str | None:
    """$ORIGIN, $LIB and $PLATFORM (also ${...}); None when $ORIGIN has no value."""
    out = entry
    for token, value in (("ORIGIN", origin), ("LIB", plat.lib), ("PLATFORM", plat.platform)):
        for form in ("${" + token + "}", "$" + token):
            if form in out:
                if value is None:
                    return None
                out = out.replace(form, value)
    return out


class Searcher:
    """Searches one modelled process. Pure: everything it reads goes through ctx."""

    def __init__(self, ctx: Context, inputs: SearchInputs) -> None:
        self.ctx = ctx
        self.inputs = inputs
        self.plat: LdsoPlatform = ctx.fact(ldso_platform)
        self.cache: LdCache | None = ctx.fact(load_cache)
        # ld.so tries a repeated legacy subdirectory (tls/x86_64 on AMD) twice, to the same end
        self.subdirs = (*dict.fromkeys(self.plat.subdirs()), "")

    # -- candidate files ---------------------------------------------------------------
    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else posixpath.join(self.inputs.cwd, path)

    def realpath(self, path: str) -> str:
        try:
            real = resolved(self.ctx, self._abs(path))
        except OSError:
            return path
        return self.ctx.inside(real)

    def verify(self, path: str) -> tuple[Outcome, ElfInfo | None, str]:
        """glibc open_verify: is `path` loadable into this process?"""
        info = read_elf(self.ctx, path)
        if isinstance(info, ElfError):
            if info.kind == "missing":
                return "absent", None, ""
            if info.kind == "unreadable":
                return "unreadable", None, info.message
            if info.kind == "directory":
                return "bad_elf", None, "cannot read file data: Is a directory"
            if info.kind == "truncated" and "program header" in info.message:
                # open_verify reads the program headers from the file: glibc's own words
                return "bad_elf", None, "cannot read file data"
            return "bad_elf", None, info.message
        if info.elf_class != self.plat.elf_class:
            return "wrong_class", info, info.bits
        if info.osabi not in ("ELFOSABI_SYSV", "ELFOSABI_LINUX"):
            return "bad_elf", info, "ELF file OS ABI invalid"
        if info.machine != self.plat.e_machine:
            return "wrong_machine", info, info.machine
        if info.e_type not in ("ET_DYN", "ET_EXEC"):
            return "bad_elf", info, "only ET_DYN and ET_EXEC can be loaded"
        if noexec_mount(self.ctx, path) is not None:
            # open_verify passes; mmap with PROT_EXEC fails (EPERM) and the search ends there
            return "bad_elf", info, MAP_FAILED
        return "found", info, ""

    def _try_dir(
        self, directory: str, name: str, how: How, origin_of: str | None
    ) -> tuple[Tried, ElfInfo | None]:
        # glibc keeps relative and empty ("" = cwd) entries relative: the object's name is too
        first: Tried | None = None
        for sub in self.subdirs:
            cand = posixpath.join(directory, sub, name)
            outcome, info, detail = self.verify(cand)
            if outcome == "absent":
                continue
            tried = Tried(
                how=how,
                where=directory,
                outcome=outcome,
                path=cand,
                detail=detail,
                origin_of=origin_of,
            )
            if outcome in ("found", "bad_elf"):
                return tried, info
            first = first or tried
        return first or Tried(how=how, where=directory, outcome="absent", origin_of=origin_of), None

    # -- the search --------------------------------------------------------------------
    def search(
        self,
        name: str,
        requester: LoadedObject | None,
        loaded: Sequence[LoadedObject],
        executable: LoadedObject | None = None,
    ) -> Lookup:
        """Find `name` as a DT_NEEDED (or a dlopen) of `requester`, the process holding `loaded`."""
        for obj in loaded:
            if obj.matches(name):
                return Lookup(name=name, found=obj, how=How.LOADED, tried=(), reused=True)
        if "/" in name:
            return self._direct(name, requester, loaded)
        walk = _Walk(self, name)
        # DF_1_NODEFLIB of the requester (or of the program) keeps ld.so out of the system dirs
        nodeflib_obj = requester or executable
        nodeflib = nodeflib_obj is not None and nodeflib_obj.elf.nodeflib
        # ld.so's order; each step is True when it ends the search (a copy, or one that stops it)
        (
            self._in_rpaths(walk, requester, executable)
            or self._in_ld_library_path(walk)
            or self._in_runpath(walk, requester)
            or self._in_cache(walk, nodeflib=nodeflib)
            or (not nodeflib and self._in_system_dirs(walk))
        )
        return self._looked_up(walk, requester, loaded)

    def _dirs_of(self, obj: LoadedObject, kind: str) -> list[str]:
        """The DT_RPATH or DT_RUNPATH entries of `obj`, with $ORIGIN and the others expanded
        (an elevated process ignores the entries that have any)."""
        raw = obj.elf.rpath if kind == "rpath" else obj.elf.runpath
        origin = posixpath.dirname(self._abs(obj.path))
        out = []
        for entry in raw:
            if self.inputs.elevated and "$" in entry:
                continue
            expanded = expand_dst(entry, origin, self.plat)
            if expanded is not None:
                out.append(expanded)
        return out

    def _in_rpaths(
        self, walk: _Walk, requester: LoadedObject | None, executable: LoadedObject | None
    ) -> bool:
        """DT_RPATH of the requester and of the objects that loaded it, then of the program;
        not when the requester has DT_RUNPATH."""
        if requester is not None and requester.elf.has_runpath:
            return False
        chain = list(requester.chain()) if requester is not None else []
        if executable is not None and executable not in chain:
            chain.append(executable)
        for obj in chain:
            # glibc drops DT_RPATH of an object that also has DT_RUNPATH
            if not obj.elf.has_rpath or obj.elf.has_runpath:
                continue
            if any(walk.attempt(d, How.RPATH, obj.path) for d in self._dirs_of(obj, "rpath")):
                return True
        return False

    def _in_ld_library_path(self, walk: _Walk) -> bool:
        """LD_LIBRARY_PATH, which an elevated process ignores."""
        if not self.inputs.elevated:
            return any(
                walk.attempt(expand_dst(d, None, self.plat) or d, How.LD_LIBRARY_PATH)
                for d in self.inputs.ld_library_path
            )
        if self.inputs.ld_library_path:
            walk.tried.append(
                Tried(
                    how=How.LD_LIBRARY_PATH,
                    where=":".join(self.inputs.ld_library_path),
                    outcome="skipped",
                    detail="ignored: the process is elevated (AT_SECURE)",
                )
            )
        return False

    def _in_runpath(self, walk: _Walk, requester: LoadedObject | None) -> bool:
        """DT_RUNPATH of the requester only (not of the objects that loaded it)."""
        if requester is None or not requester.elf.has_runpath:
            return False
        return any(
            walk.attempt(d, How.RUNPATH, requester.path)
            for d in self._dirs_of(requester, "runpath")
        )

    def _in_cache(self, walk: _Walk, *, nodeflib: bool) -> bool:
        """ld.so.cache: its entry for this machine and hwcaps, unless DF_1_NODEFLIB rules out
        an entry in a system directory."""
        if self.cache is None:
            return False
        entry = self.cache.lookup(walk.name, self.plat.machine, self.plat.hwcaps)
        if entry is None:
            walk.tried.append(
                Tried(
                    how=How.CACHE,
                    where=self.cache.path,
                    outcome="absent",
                    detail=self.cache.error or "",
                )
            )
            return False
        if nodeflib and posixpath.dirname(entry.path) in self.plat.system_dirs:
            walk.tried.append(
                Tried(
                    how=How.CACHE,
                    where=self.cache.path,
                    outcome="skipped",
                    path=entry.path,
                    detail="DF_1_NODEFLIB",
                )
            )
            return False
        outcome, info, detail = self.verify(entry.path)
        t = Tried(
            how=How.CACHE,
            where=self.cache.path,
            outcome=outcome,
            path=entry.path,
            detail=detail or "",
        )
        return walk.settle(t, info)

    def _in_system_dirs(self, walk: _Walk) -> bool:
        """The default directories (/lib, /usr/lib and the multiarch ones)."""
        return any(walk.attempt(d, How.DEFAULT) for d in self.plat.system_dirs)

    def _looked_up(
        self, walk: _Walk, requester: LoadedObject | None, loaded: Sequence[LoadedObject]
    ) -> Lookup:
        """What the search ends with: a copy that stops the load, none, or the one it maps."""
        name, tried, fatal = walk.name, walk.tried, walk.fatal
        if fatal is not None:
            return Lookup(
                name=name,
                found=None,
                how=fatal.how,
                tried=tuple(tried),
                error=f"{name if fatal.detail == MAP_FAILED else fatal.path}: {fatal.detail}",
            )
        if walk.found is None:
            return Lookup(
                name=name,
                found=None,
                how=None,
                tried=tuple(tried),
                error=self._not_found_error(name, tried),
            )
        t, info = walk.found
        return self._adopt(name, t.path or name, info, t.how, t.where, requester, loaded, tried)

    def _not_found_error(self, name: str, tried: Sequence[Tried]) -> str:
        wrong = [t for t in tried if t.outcome == "wrong_class"]
        if wrong:
            return f"{name}: wrong ELF class: {wrong[0].detail}"
        return f"{name}: cannot open shared object file: No such file or directory"

    def _direct(
        self, name: str, requester: LoadedObject | None, loaded: Sequence[LoadedObject]
    ) -> Lookup:
        origin = posixpath.dirname(self._abs(requester.path)) if requester else None
        path = expand_dst(name, origin, self.plat) or name
        path = self._abs(path)
        outcome, info, detail = self.verify(path)
        t = Tried(
            how=How.PATH, where=posixpath.dirname(path), outcome=outcome, path=path, detail=detail
        )
        if outcome == "found" and info is not None:
            return self._adopt(
                name, path, info, How.PATH, posixpath.dirname(path), requester, loaded, [t]
            )
        if outcome == "wrong_class":
            err = f"{path}: wrong ELF class: {detail}"
        elif outcome == "bad_elf":
            err = f"{path}: {detail}"
        elif outcome == "wrong_machine":
            err = f"{path}: cannot open shared object file: No such file or directory"
        elif outcome == "unreadable":
            err = f"{path}: cannot open shared object file: {detail}"
        else:
            err = f"{name}: cannot open shared object file: No such file or directory"
        return Lookup(name=name, found=None, how=None, tried=(t,), error=err)

    def _adopt(
        self,
        name: str,
        path: str,
        info: ElfInfo,
        how: How,
        directory: str,
        requester: LoadedObject | None,
        loaded: Sequence[LoadedObject],
        tried: Sequence[Tried],
    ) -> Lookup:
        real = self.realpath(path)
        for obj in loaded:
            if obj.realpath == real:
                obj.names.add(name)
                return Lookup(name=name, found=obj, how=How.LOADED, tried=tuple(tried), reused=True)
        obj = LoadedObject(
            path=path,
            realpath=real,
            elf=info,
            how=how,
            directory=directory,
            names={name},
            loader=requester,
        )
        return Lookup(name=name, found=obj, how=how, tried=tuple(tried))


#: the names of one folder listed at most (a lib folder of a large system: ~10,000)
_LISTED = 1 << 20


def list_dir(ctx: Context, directory: str) -> tuple[str, ...]:
    """Names in `directory` (inside the root, its links followed there), listed once per
    Context."""
    listings: dict[str, tuple[str, ...]] = ctx.fact(_listings)
    if directory not in listings:
        try:
            listings[directory] = tuple(tree.names(ctx, directory, _LISTED))
        except OSError:
            listings[directory] = ()
    return listings[directory]


def _listings(ctx: Context) -> dict[str, tuple[str, ...]]:
    return {}


class _Walk:
    """One search for `name`: every place tried, and what ended it (the copy found, or a file
    that stops the load)."""

    __slots__ = ("fatal", "found", "name", "searcher", "tried")

    def __init__(self, searcher: Searcher, name: str) -> None:
        self.searcher = searcher
        self.name = name
        self.tried: list[Tried] = []
        self.found: tuple[Tried, ElfInfo] | None = None
        self.fatal: Tried | None = None

    def attempt(self, directory: str, how: How, origin_of: str | None = None) -> bool:
        """Look in one directory; True when that ends the search."""
        t, info = self.searcher._try_dir(directory, self.name, how, origin_of)
        return self.settle(t, info)

    def settle(self, t: Tried, info: ElfInfo | None) -> bool:
        """Note one place tried; True when it ends the search."""
        self.tried.append(t)
        if t.outcome == "found" and info is not None:
            self.found = (t, info)
            return True
        if t.outcome == "bad_elf":
            self.fatal = t
            return True
        return False
