"""A load target's whole DT_NEEDED closure, as glibc 2.36 maps it, with every check ld.so makes.

The process model (documented in docs/library-resolution.md): an executable with no DT_RPATH or
DT_RUNPATH that links libvulkan.so.1 (as vulkaninfo and vkdoctor's probe do), started by the
program interpreter, with LD_PRELOAD's libraries loaded first. Those objects are already in the
process when the Vulkan loader dlopens a driver or layer, so a NEEDED name they match is never
searched for. A driver is dlopened from libvulkan.so.1, so libvulkan's own DT_RPATH (if any)
applies to a bare name.

Mapping is breadth-first, in DT_NEEDED order, like _dl_map_object_deps. Where ld.so would stop at
the first error, we go on and report every problem, and `predicted_error` gives the one dlerror()
would show: the first mapping error, else the first missing version in load order.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from vkdoctor.elf.nearmiss import NearMiss, near_misses, other_copies
from vkdoctor.elf.reader import ElfInfo
from vkdoctor.elf.search import How, LoadedObject, Lookup, Searcher, SearchInputs, Tried
from vkdoctor.model.context import Context
from vkdoctor.model.digits import numbers_key
from vkdoctor.model.record import field, record

LOADER_SONAME = "libvulkan.so.1"


@record(frozen=True, kw_only=True)
class Library:
    """One object of the closure: where it came from and how ld.so found it."""

    #: the name it was first asked for (a soname, or the dlopen path)
    name: str
    path: str
    realpath: str
    how: How
    directory: str
    #: the object that first needed it (None for the target itself)
    needed_by: str | None
    #: every object of the closure that names it in DT_NEEDED
    needed_by_all: tuple[str, ...]
    #: target -> ... -> this library
    chain: tuple[str, ...]
    #: already in the process before the dlopen (libc, libvulkan, ...)
    preloaded: bool
    elf: ElfInfo = field(repr=False)

    @property
    def soname(self) -> str | None:
        return self.elf.soname

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): of its ELF facts only the soname; preloaded is already_in_process
        return {
            "name": self.name,
            "soname": self.elf.soname,
            "path": self.path,
            "realpath": self.realpath,
            "how": self.how.value,
            "directory": self.directory,
            "needed_by": self.needed_by,
            "chain": list(self.chain),
            "already_in_process": self.preloaded,
        }


@record(frozen=True, kw_only=True)
class Miss:
    """A name ld.so could not find (or found only as an unusable file)."""

    name: str
    #: the object whose DT_NEEDED names it (None: the target itself)
    needed_by: str | None
    chain: tuple[str, ...]
    tried: tuple[Tried, ...]
    #: dlerror()'s text for it
    error: str
    near: tuple[NearMiss, ...] = ()

    @property
    def wrong_class(self) -> tuple[Tried, ...]:
        return tuple(t for t in self.tried if t.outcome == "wrong_class")

    @property
    def bad_file(self) -> Tried | None:
        return next((t for t in self.tried if t.outcome == "bad_elf"), None)

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): `near` is near_misses
        return {
            "name": self.name,
            "needed_by": self.needed_by,
            "chain": list(self.chain),
            "error": self.error,
            "tried": [t.as_dict() for t in self.tried],
            "near_misses": [n.as_dict() for n in self.near],
        }


@record(frozen=True, kw_only=True)
class VersionProblem:
    """Required symbol versions the winning copy of a library does not define."""

    #: the object with the .gnu.version_r requirement
    required_by: str
    #: the needed file (vn_file)
    soname: str
    #: the copy that won the search, and how
    provider: str
    provider_how: How
    provider_dir: str
    missing: tuple[str, ...]
    #: only weak requirements are missing: ld.so does not fail
    weak_only: bool
    #: the provider's version nodes of the same family, highest last
    provider_defines: tuple[str, ...]
    #: other copies of the soname that define every missing version (the one that should win)
    better: tuple[NearMiss, ...] = ()
    chain: tuple[str, ...] = ()

    @property
    def error(self) -> str:
        return f"{self.provider}: version `{self.missing[0]}' not found (required by {self.required_by})"

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the last five version nodes only, and `better` is copies_with_versions
        return {
            "required_by": self.required_by,
            "soname": self.soname,
            "provider": self.provider,
            "provider_how": self.provider_how.value,
            "provider_dir": self.provider_dir,
            "missing": list(self.missing),
            "weak_only": self.weak_only,
            "provider_defines": list(self.provider_defines[-5:]),
            "copies_with_versions": [n.as_dict() for n in self.better],
            "chain": list(self.chain),
        }


@record(frozen=True, kw_only=True)
class Resolution:
    """Everything ld.so would do for one dlopen."""

    target: str
    libraries: tuple[Library, ...]
    misses: tuple[Miss, ...]
    versions: tuple[VersionProblem, ...]
    #: the dlerror() text ld.so would give, None when the load would succeed
    predicted_error: str | None
    inputs: SearchInputs
    #: paths of the objects already in the process before the dlopen (its global scope)
    process: tuple[str, ...] = ()
    #: (name, where) for every directory an object's DT_RPATH/DT_RUNPATH or LD_LIBRARY_PATH made
    #: ld.so look in for the name without finding it there (existing or not): what is put
    #: there later, or where a link there comes to lead, is loaded
    searched: tuple[tuple[str, Tried], ...] = ()

    @property
    def ok(self) -> bool:
        return self.predicted_error is None

    @property
    def root(self) -> Library | None:
        return next((lib for lib in self.libraries if lib.needed_by is None), None)

    def library(self, name: str) -> Library | None:
        return next((x for x in self.libraries if name in (x.name, x.soname, x.path)), None)

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the JSON adds `ok` and leaves out the search inputs
        return {
            "target": self.target,
            "ok": self.ok,
            "predicted_error": self.predicted_error,
            "libraries": [x.as_dict() for x in self.libraries],
            "misses": [m.as_dict() for m in self.misses],
            "version_problems": [v.as_dict() for v in self.versions],
            "ld_library_path": list(self.inputs.ld_library_path),
        }


@record(kw_only=True)
class Process:
    """The objects in the modelled process before the dlopen."""

    searcher: Searcher
    executable: LoadedObject
    loaded: list[LoadedObject]
    #: libvulkan.so.1 when it resolves (the dlopen caller of drivers and layers)
    loader: LoadedObject | None
    lookups: dict[str, Lookup]


def _executable(searcher: Searcher) -> LoadedObject:
    plat = searcher.plat
    exe = ElfInfo(
        path="<executable>",
        elf_class=plat.elf_class,
        data="little",
        machine=plat.e_machine,
        osabi="ELFOSABI_SYSV",
        e_type="ET_DYN",
        needed=(LOADER_SONAME,),
    )
    return LoadedObject(path="<executable>", realpath="<executable>", elf=exe, how=How.PATH)


def build_process(ctx: Context, inputs: SearchInputs, *, with_loader: bool = True) -> Process:
    """The process before the dlopen: interpreter, LD_PRELOAD, the executable's closure."""
    searcher = Searcher(ctx, inputs)
    exe = _executable(searcher)
    loaded: list[LoadedObject] = [exe]
    lookups: dict[str, Lookup] = {}
    interp = searcher.plat.interpreter
    outcome, info, _ = searcher.verify(interp)
    if outcome == "found" and info is not None:
        loaded.append(
            LoadedObject(
                path=interp,
                realpath=searcher.realpath(interp),
                elf=info,
                how=How.PATH,
                directory=posixpath.dirname(interp),
                names={interp},
            )
        )
    for entry in inputs.preload:
        if inputs.elevated and "/" in entry:
            continue
        lk = searcher.search(entry, exe, loaded, exe)
        lookups["preload:" + entry] = lk
        if lk.found is not None and not lk.reused:
            lk.found.how = How.PRELOAD
            loaded.append(lk.found)
            _map_deps(searcher, [lk.found], loaded, exe, {})
    loader: LoadedObject | None = None
    if with_loader:
        lk = searcher.search(LOADER_SONAME, exe, loaded, exe)
        lookups[LOADER_SONAME] = lk
        if lk.found is not None:
            loader = lk.found
            if not lk.reused:
                loaded.append(lk.found)
                _map_deps(searcher, [lk.found], loaded, exe, {})
    return Process(searcher=searcher, executable=exe, loaded=loaded, loader=loader, lookups=lookups)


def _map_deps(
    searcher: Searcher,
    queue: list[LoadedObject],
    loaded: list[LoadedObject],
    exe: LoadedObject,
    edges: dict[int, list[tuple[str, Lookup]]],
) -> None:
    """Breadth-first over DT_NEEDED, appending new objects to `loaded`."""
    i = 0
    while i < len(queue):
        obj = queue[i]
        i += 1
        for name in obj.elf.needed:
            lk = searcher.search(name, obj, loaded, exe)
            edges.setdefault(id(obj), []).append((name, lk))
            if lk.found is not None and not lk.reused:
                loaded.append(lk.found)
                queue.append(lk.found)


def resolve(
    ctx: Context,
    dlopen_name: str,
    *,
    inputs: SearchInputs | None = None,
    caller: str = "loader",
    near: bool = True,
    with_loader: bool = True,
) -> Resolution:
    """Resolve `dlopen(dlopen_name)` called from libvulkan.so.1 ("loader") or the executable.

    `with_loader=False` models a process that has not loaded libvulkan.so.1 (to check the
    loader's own closure). `inputs` overrides the environment (LD_LIBRARY_PATH, LD_PRELOAD).
    """
    inputs = inputs or SearchInputs.from_context(ctx)
    proc = _process(ctx, inputs, with_loader)
    return _resolve_in(ctx, proc, dlopen_name, caller=caller, near=near)


def _processes(ctx: Context) -> dict[tuple[SearchInputs, bool], Process]:
    return {}


def _process(ctx: Context, inputs: SearchInputs, with_loader: bool) -> Process:
    processes = ctx.fact(_processes)
    proc = processes.get((inputs, with_loader))
    if proc is None:
        proc = processes[inputs, with_loader] = build_process(ctx, inputs, with_loader=with_loader)
    return proc


def preload_lookups(ctx: Context, inputs: SearchInputs | None = None) -> dict[str, Lookup]:
    """Each LD_PRELOAD entry of the modelled process, with what ld.so found for it."""
    inputs = inputs or SearchInputs.from_context(ctx)
    lookups = _process(ctx, inputs, True).lookups
    return {k.split(":", 1)[1]: v for k, v in lookups.items() if k.startswith("preload:")}


def loader_lookup(ctx: Context, inputs: SearchInputs | None = None) -> Lookup:
    """How the modelled process found libvulkan.so.1 (as NEEDED of an executable without RPATH)."""
    inputs = inputs or SearchInputs.from_context(ctx)
    return _process(ctx, inputs, True).lookups[LOADER_SONAME]


def dlopen_lookup(ctx: Context, name: str, inputs: SearchInputs | None = None) -> Lookup:
    """What `dlopen(name)` called from libvulkan.so.1 finds: the search a bare library_path gets."""
    inputs = inputs or SearchInputs.from_context(ctx)
    proc = _process(ctx, inputs, True)
    requester = proc.loader if proc.loader is not None else proc.executable
    return proc.searcher.search(name, requester, list(proc.loaded), proc.executable)


def version_key(name: str) -> tuple[tuple[int, str], ...]:
    """GLIBCXX_3.4.30 > GLIBCXX_3.4.9: compare the numbers, not the text (a version node of
    5,000 digits too: no `int()`)."""
    return numbers_key(name)


def _resolve_in(
    ctx: Context, proc: Process, dlopen_name: str, *, caller: str, near: bool
) -> Resolution:
    searcher = proc.searcher
    loaded = list(proc.loaded)
    before = {id(o) for o in loaded}
    requester = proc.loader if caller == "loader" and proc.loader is not None else proc.executable
    top = searcher.search(dlopen_name, requester, loaded, proc.executable)
    misses: list[Miss] = []
    libs: list[Library] = []
    errors: list[str] = []
    if top.found is None:
        misses.append(_miss(ctx, searcher, top, None, (), near))
        errors.append(top.error or f"{dlopen_name}: cannot open shared object file")
        return Resolution(
            target=dlopen_name,
            libraries=(),
            misses=tuple(misses),
            versions=(),
            predicted_error=errors[0],
            inputs=searcher.inputs,
            process=tuple(o.path for o in proc.loaded if o is not proc.executable),
        )
    root = top.found
    edges: dict[int, list[tuple[str, Lookup]]] = {}
    queue = [root]
    if not top.reused:
        loaded.append(root)
        _map_deps(searcher, queue, loaded, proc.executable, edges)
    else:
        queue = []

    # Walk the mapped graph again in BFS order to label each object with its first requester.
    first_by: dict[int, tuple[LoadedObject | None, tuple[str, ...]]] = {
        id(root): (None, (root.path,))
    }
    first_name: dict[int, str] = {id(root): dlopen_name}
    needed_by_all: dict[int, list[str]] = {}
    order: list[LoadedObject] = [root]
    for obj in queue:
        chain = first_by[id(obj)][1]
        for name, lk in edges.get(id(obj), []):
            if lk.found is None:
                misses.append(_miss(ctx, searcher, lk, obj, chain, near))
                errors.append(lk.error or f"{name}: cannot open shared object file")
                continue
            fid = id(lk.found)
            needed_by_all.setdefault(fid, []).append(obj.path)
            if fid not in first_by:
                first_by[fid] = (obj, (*chain, lk.found.path))
                first_name[fid] = name
                order.append(lk.found)
    for obj in order:
        requester_obj, chain = first_by[id(obj)]
        libs.append(
            Library(
                name=first_name[id(obj)],
                path=obj.path,
                realpath=obj.realpath,
                how=obj.how,
                directory=obj.directory,
                needed_by=requester_obj.path if requester_obj is not None else None,
                needed_by_all=tuple(needed_by_all.get(id(obj), ())),
                chain=chain,
                preloaded=id(obj) in before,
                elf=obj.elf,
            )
        )
    versions = _check_versions(
        ctx, searcher, [o for o in order if id(o) not in before], loaded, first_by, near
    )
    lookups = [top, *(lk for pairs in edges.values() for _, lk in pairs)]
    errors.extend(v.error for v in versions if not v.weak_only)
    return Resolution(
        target=dlopen_name,
        libraries=tuple(libs),
        misses=tuple(misses),
        versions=tuple(versions),
        predicted_error=errors[0] if errors else None,
        inputs=searcher.inputs,
        process=tuple(o.path for o in proc.loaded if o is not proc.executable),
        searched=_searched(lookups),
    )


#: the searches whose folders come from an object or the environment, not from the system
_PRIVATE_SEARCHES = (How.RPATH, How.RUNPATH, How.LD_LIBRARY_PATH)


def _searched(lookups: Sequence[Lookup]) -> tuple[tuple[str, Tried], ...]:
    out: dict[tuple[str, str, str | None], tuple[str, Tried]] = {}
    for lk in lookups:
        for t in lk.tried:
            if t.how in _PRIVATE_SEARCHES and t.outcome != "found":
                out.setdefault((lk.name, t.where, t.origin_of), (lk.name, t))
    return tuple(out.values())


def _miss(
    ctx: Context,
    searcher: Searcher,
    lk: Lookup,
    requester: LoadedObject | None,
    chain: tuple[str, ...],
    near: bool,
) -> Miss:
    tried_dirs = [t.where for t in lk.tried if t.how is not How.CACHE]
    return Miss(
        name=lk.name,
        needed_by=requester.path if requester is not None else None,
        chain=chain,
        tried=lk.tried,
        error=lk.error or "",
        near=near_misses(ctx, searcher, lk.name, tried_dirs) if near else (),
    )


def _check_versions(
    ctx: Context,
    searcher: Searcher,
    new_objects: Sequence[LoadedObject],
    loaded: Sequence[LoadedObject],
    first_by: dict[int, tuple[LoadedObject | None, tuple[str, ...]]],
    near: bool,
) -> list[VersionProblem]:
    """glibc _dl_check_map_versions for each newly mapped object, in load order."""
    out: list[VersionProblem] = []
    for obj in new_objects:
        for need in obj.elf.verneed:
            provider = next((o for o in loaded if o.matches(need.file)), None)
            if provider is None or not provider.elf.has_verdef:
                continue  # a missing file is a Miss; no verdef: glibc only warns when tracing
            defined = set(provider.elf.verdef)
            missing = tuple(v for v in need.versions if v not in defined)
            if not missing:
                continue
            weak_only = all(v in need.weak for v in missing)
            family = missing[0].rsplit("_", 1)[0] if "_" in missing[0] else missing[0]
            same_family = tuple(
                sorted((v for v in provider.elf.verdef if v.startswith(family)), key=version_key)
            )
            better = (
                other_copies(ctx, searcher, need.file, provider.realpath, missing) if near else ()
            )
            out.append(
                VersionProblem(
                    required_by=obj.path,
                    soname=need.file,
                    provider=provider.path,
                    provider_how=provider.how,
                    provider_dir=provider.directory or posixpath.dirname(provider.path),
                    missing=missing,
                    weak_only=weak_only,
                    provider_defines=same_family,
                    better=better,
                    chain=first_by.get(id(obj), (None, ()))[1],
                )
            )
    return out


def resolve_soname(
    ctx: Context,
    soname: str,
    *,
    requester: ElfInfo | None = None,
    inputs: SearchInputs | None = None,
) -> Lookup:
    """One search for `soname` as a DT_NEEDED of `requester` (default: the executable)."""
    inputs = inputs or SearchInputs.from_context(ctx)
    proc = build_process(ctx, inputs, with_loader=False)
    req = proc.executable
    if requester is not None:
        req = LoadedObject(
            path=requester.path,
            realpath=requester.path,
            elf=requester,
            how=How.PATH,
            loader=proc.executable,
        )
    return proc.searcher.search(soname, req, [], proc.executable)
