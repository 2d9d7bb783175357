"""Near misses: what was almost right when a library or a version was not found.

For a missing soname: other versions of the same family (libLLVM.so.22.1 or libLLVM-15.so.1 where
libLLVM.so.23.1 was needed; vkdoctor.model.sonames.family, so libLLVM-17git.so and
libLLVM.so.18.1-rust-1.78.0-stable count too), a name the same before its first hyphen whose
rest differs (libLLVM-mybuild.so.1 beside libLLVM-15.so.1: a renamed or private build), the right
name in the wrong class or for another
machine, and the right name in a directory ld.so does not search (an ld.so.conf directory missing
from a stale cache, a --search-path directory). For a missing version: other copies of the
soname that define it (usually the system copy that a private one shadows).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from vkdoctor.elf.ldcache import load_conf
from vkdoctor.elf.reader import ElfInfo, read_elf
from vkdoctor.model.context import Context
from vkdoctor.model.record import record
from vkdoctor.model.sonames import family

if TYPE_CHECKING:
    from vkdoctor.elf.search import Searcher

MAX_NEAR = 12


@record(frozen=True, kw_only=True)
class NearMiss:
    path: str
    #: other-version, other-build, wrong-class, wrong-machine, not-searched, stale-cache,
    #: renamed, has-versions
    kind: str
    soname: str | None
    elf_class: int | None
    machine: str | None
    #: the directory's origin: a search step, "ld.so.conf", "system", "cache", "search-path"
    where: str
    #: the version nodes it defines (the last few)
    defines: tuple[str, ...] = ()
    #: other-build: how the name differs, after the hyphen
    differs: str = ""

    def describe(self) -> str:
        what = {
            "other-version": "another version",
            "other-build": f"another build, {self.differs}",
            "wrong-class": f"wrong class (ELFCLASS{self.elf_class})",
            "wrong-machine": f"wrong machine ({self.machine})",
            "not-searched": "right name, in a directory ld.so does not search",
            "stale-cache": "right name, in an ld.so.conf directory but missing from ld.so.cache "
            "(run ldconfig)",
            "has-versions": "defines the missing versions",
            "renamed": "the right soname under another file name, which ld.so does not open",
        }.get(self.kind, self.kind)
        name = (
            f" (soname {self.soname})"
            if self.soname and self.soname != posixpath.basename(self.path)
            else ""
        )
        return f"{self.path}{name}: {what}"

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the class as ELFCLASSnn, only the last three version nodes
        return {
            "path": self.path,
            "kind": self.kind,
            "soname": self.soname,
            "class": f"ELFCLASS{self.elf_class}" if self.elf_class else None,
            "machine": self.machine,
            "where": self.where,
            "defines": list(self.defines[-3:]),
            **({"differs": self.differs} if self.differs else {}),
        }


def _memo(ctx: Context) -> dict[Any, Any]:
    return {}


def _scan_dirs(ctx: Context, searcher: Searcher, tried: Sequence[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(d: str, where: str) -> None:
        d = d.rstrip("/") or "/"
        if d not in seen:
            seen.add(d)
            out.append((d, where))

    for d in tried:
        add(d, "searched")
    for d in searcher.plat.system_dirs:
        add(d, "searched" if d in tried else "system")
    for d, where in _other_dirs(ctx, searcher):
        add(d, where)
    return out


def _other_dirs(ctx: Context, searcher: Searcher) -> list[tuple[str, str]]:
    """The ld.so.conf, cache and search-path directories, once per searcher (the cache lists a
    few thousand entries, and a file may need thousands of missing libraries)."""
    memo = ctx.fact(_memo)
    key = ("dirs", id(searcher))
    hit = memo.get(key)
    if hit is None or hit[0] is not searcher:
        dirs: dict[str, str] = {}
        for d, _src in ctx.fact(load_conf).dirs:
            dirs.setdefault(d.rstrip("/") or "/", "ld.so.conf")
        if searcher.cache is not None:
            for e in searcher.cache.entries:
                dirs.setdefault(posixpath.dirname(e.path).rstrip("/") or "/", "cache")
        for path in ctx.options.search_paths:
            dirs.setdefault(str(path).rstrip("/") or "/", "search-path")
        hit = memo[key] = (searcher, list(dirs.items()))
    return list(hit[1])


def _cached_names(ctx: Context, searcher: Searcher, base: str) -> set[str] | frozenset[str]:
    """The names ld.so.cache lists; `base` only if its file is still there: an entry whose file
    was moved away is as good as none (ldconfig must run again)."""
    if searcher.cache is None:
        return set()
    names: frozenset[str] = frozenset(searcher.cache.by_name())
    if base in names and not any(
        ctx.resolve(e.path).exists() for e in searcher.cache.by_name()[base]
    ):
        return names - {base}
    return names


def _before_hyphen(stem: str) -> str:
    return stem.split("-", 1)[0]


def hyphen_kin(wanted: str, other: str) -> bool:
    """Families that are one name before the first hyphen, where exactly one of them goes on
    after it: libLLVM-mybuild and libLLVM (of libLLVM-15.so.1) are kin; libLLVMSPIRVLib and
    libLLVM are not (they differ before it), nor are libxcb-dri3 and libxcb-shm (two libraries
    of one project, each with its own name after the hyphen)."""
    head = _before_hyphen(wanted)
    return wanted != other and head == _before_hyphen(other) and (wanted == head) != (other == head)


def _how_it_differs(wanted: str, entry: str) -> str:
    """`mybuild` wanted where `15` is here, from the names after the family's first hyphen."""
    head = _before_hyphen(family(wanted) or wanted)
    ours = wanted[len(head) :].lstrip("-").split(".so", 1)[0] or "nothing"
    theirs = entry[len(head) :].lstrip("-").split(".so", 1)[0] or "nothing"
    return f"named {theirs!r} after {head}- where {ours!r} is wanted"


def _by_family(ctx: Context, d: str) -> tuple[dict[str, int], dict[str | None, list[str]]]:
    """The names in directory `d` with their positions, and by family: once per directory."""
    from vkdoctor.elf.search import list_dir

    memo = ctx.fact(_memo)
    key = ("families", d)
    hit = memo.get(key)
    if hit is None:
        names = list_dir(ctx, d)
        families: dict[str | None, list[str]] = {}
        for e in names:
            families.setdefault(family(e), []).append(e)
        hit = memo[key] = ({e: i for i, e in enumerate(names)}, families)
    return hit


def _kin_entries(
    ctx: Context, d: str, stem: str, families: dict[str | None, list[str]]
) -> list[str]:
    """The names in `d` whose family is hyphen kin of `stem`, through an index of the families
    by their name before the first hyphen (once per directory)."""
    memo = ctx.fact(_memo)
    heads = memo.get(("heads", d))
    if heads is None:
        heads = memo[("heads", d)] = {}
        for f in families:
            if f:
                heads.setdefault(_before_hyphen(f), []).append(f)
    return [
        e for f in heads.get(_before_hyphen(stem), ()) if hyphen_kin(stem, f) for e in families[f]
    ]


def near_misses(
    ctx: Context, searcher: Searcher, name: str, tried: Sequence[str]
) -> tuple[NearMiss, ...]:
    stem = family(posixpath.basename(name))
    base = posixpath.basename(name)
    out: list[NearMiss] = []
    seen_real: set[str] = set()
    cached = _cached_names(ctx, searcher, base)
    for d, where in _scan_dirs(ctx, searcher, tried):
        position, families = _by_family(ctx, d)
        entries = list(families.get(stem, ())) if stem else []
        kin = _kin_entries(ctx, d, stem, families) if stem else []
        if base in position and base not in entries:
            entries.append(base)
        entries.sort(key=position.__getitem__)
        # a file named like its soname first, so that links to it (libLLVM-15.so) are folded in
        entries.sort(key=lambda e: 0 if e == base or _is_soname_file(ctx, d, e) else 1)
        kin.sort(key=position.__getitem__)
        kin.sort(key=lambda e: 0 if _is_soname_file(ctx, d, e) else 1)
        for entry in entries + kin:
            path = posixpath.join(d, entry)
            real = searcher.realpath(path)
            if real in seen_real:
                continue
            info = read_elf(ctx, path)
            if not isinstance(info, ElfInfo):
                continue
            seen_real.add(real)
            if info.elf_class != searcher.plat.elf_class:
                kind = "wrong-class"
            elif info.machine != searcher.plat.e_machine:
                kind = "wrong-machine"
            elif entry == base and where == "ld.so.conf" and base not in cached:
                kind = "stale-cache"
            elif entry == base:
                kind = "not-searched"
            elif entry in kin:
                kind = "other-build"
            else:
                kind = "other-version"
            if kind == "other-version" and info.soname and info.soname == name:
                # the soname, under another file name (a .bak, a renamed build): ld.so opens
                # files by name, so in a directory it searched only the name is wrong
                kind = "renamed" if where == "searched" else "not-searched"
            out.append(
                NearMiss(
                    path=path,
                    kind=kind,
                    soname=info.soname,
                    elf_class=info.elf_class,
                    machine=info.machine,
                    where=where,
                    defines=info.verdef[-3:],
                    differs=_how_it_differs(base, entry) if kind == "other-build" else "",
                )
            )
            if len(out) >= MAX_NEAR:
                return tuple(out)
    return tuple(out)


def _is_soname_file(ctx: Context, d: str, entry: str) -> bool:
    info = read_elf(ctx, posixpath.join(d, entry))
    return isinstance(info, ElfInfo) and info.soname == entry


def other_copies(
    ctx: Context, searcher: Searcher, soname: str, winner_real: str, missing: Iterable[str]
) -> tuple[NearMiss, ...]:
    """Copies of `soname` (cache, system and configured dirs) that define every `missing` node."""
    from vkdoctor.elf.search import list_dir

    want = set(missing)
    out: list[NearMiss] = []
    seen = {winner_real}
    candidates: list[tuple[str, str]] = []
    if searcher.cache is not None:
        for e in searcher.cache.by_name().get(soname, ()):
            candidates.append((e.path, "cache"))
    for d, where in _scan_dirs(ctx, searcher, ()):
        if soname in list_dir(ctx, d):
            candidates.append((posixpath.join(d, soname), where))
    for path, where in candidates:
        real = searcher.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        info = read_elf(ctx, path)
        if not isinstance(info, ElfInfo) or info.elf_class != searcher.plat.elf_class:
            continue
        if info.machine != searcher.plat.e_machine or not want <= set(info.verdef):
            continue
        out.append(
            NearMiss(
                path=path,
                kind="has-versions",
                soname=info.soname,
                elf_class=info.elf_class,
                machine=info.machine,
                where=where,
                defines=tuple(v for v in info.verdef if v in want),
            )
        )
    return tuple(out)
