"""From missing sonames to a proven-safe overlay: search, choose, build, and prove it harmless.

1. Needs: the sonames the chains lack, with their consumers and the symbol versions they need.
   Sonames that only the system may supply (libc, libstdc++, libvulkan, libdrm ...) are refused.
2. Places: --search-path dirs and VKDOCTOR_SEARCH_PATH in order, then libraries extracted from
   --from-package files, then likely places, then cached packages of the soname's family.
3. Choice: the first acceptable candidate in that order; the others are shown.
4. Build: the private content-addressed directory of symlinks (store.py).
5. Proof: every chain resolved with and without the overlay; the only allowed differences are
   the added sonames, which must now resolve to the chosen files. The chosen files' own
   dependencies must resolve, and no added soname may be a second member of a library family the
   process already loads (two LLVMs). A soname failing any of these is dropped from the overlay,
   with the reason, and the overlay is rebuilt without it.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vkdoctor.model.context import Context
from vkdoctor.model.record import field, record, replace, to_json
from vkdoctor.overlay import safety
from vkdoctor.overlay.candidates import (
    Candidate,
    DirProblem,
    Need,
    Search,
    SearchDir,
    likely_places,
    search,
    user_dirs,
)
from vkdoctor.overlay.chain import Chain, with_ld_path
from vkdoctor.overlay.errors import OverlayError
from vkdoctor.overlay.ldpath import Dropped, LdPath, with_overlay

if TYPE_CHECKING:
    from vkdoctor.overlay import store

ChainResolver = Callable[[Context, str], Chain]


@record(frozen=True, kw_only=True)
class Refusal:
    """A soname the overlay will not supply, and why."""

    soname: str
    reason: str


@record(kw_only=True)
class Plan:
    """Everything the overlay decided, for findings, commands and the report."""

    needs: list[Need] = field(default_factory=list)
    search: Search = field(default_factory=Search)
    chosen: dict[str, Candidate] = field(default_factory=dict)
    refused: list[Refusal] = field(default_factory=list)
    packages: list[dict[str, Any]] = field(default_factory=list)
    package_errors: list[str] = field(default_factory=list)
    links: list[store.Link] = field(default_factory=list)
    directory: Path | None = None
    ld_path: LdPath | None = None
    #: chains without the overlay, per target
    chains: dict[str, Chain] = field(default_factory=dict)
    #: package caches looked at, and the packages of the family found there
    cache_search: list[str] = field(default_factory=list)
    #: why the store is not the cache directory (untrusted or not writable), when it is not
    store_note: str | None = None
    #: every overlay directory built on the way (tentative ones are removed at the end)
    built_dirs: set[Path] = field(default_factory=set)

    @property
    def needed(self) -> bool:
        return bool(self.needs)

    @property
    def built(self) -> bool:
        return self.directory is not None and bool(self.links)

    @property
    def unsupplied(self) -> list[str]:
        return [n.soname for n in self.needs if n.soname not in self.chosen]

    @property
    def dropped(self) -> tuple[Dropped, ...]:
        return self.ld_path.dropped if self.ld_path else ()

    @property
    def problems(self) -> list[DirProblem]:
        return self.search.problems

    def report_object(self) -> dict[str, Any] | None:
        """The report's `overlay` object (schema: dir, ld_library_path, libraries)."""
        if not self.built or self.directory is None or self.ld_path is None:
            return None
        return {
            "dir": str(self.directory),
            "ld_library_path": self.ld_path.value,
            "libraries": [
                {
                    "soname": link.soname,
                    "target": str(link.target),
                    "needed_by": list(link.needed_by),
                }
                for link in self.links
            ],
        }

    def looked_in(self) -> list[str]:
        return [f"{d.path} ({d.origin})" for d in self.search.dirs] + self.cache_search

    def evidence(self) -> dict[str, Any]:
        return {
            "needs": [
                {"soname": n.soname, "needed_by": list(n.needed_by), "versions": list(n.versions)}
                for n in self.needs
            ],
            "searched": [{"path": d.path, "origin": d.origin} for d in self.search.dirs],
            "candidates": {
                s: [c.as_dict() for c in cs] for s, cs in self.search.candidates.items() if cs
            },
            "refused": to_json(self.refused),
            "search_path_problems": to_json(self.search.problems),
            "packages": self.packages,
            "package_errors": self.package_errors,
            "dropped_ld_library_path_entries": [
                {"entry": d.entry, "reason": d.reason} for d in self.dropped
            ],
            "overlay": self.report_object(),
            "store_note": self.store_note,
        }


def collect_needs(chains: Sequence[Chain]) -> list[Need]:
    """One Need per missing soname, merging its consumers and versions across chains."""
    merged: dict[str, dict[str, Any]] = {}
    for chain in chains:
        for edge in chain.missing():
            entry = merged.setdefault(
                edge.soname,
                {"by": [], "versions": [], "class": edge.elf_class, "machine": edge.machine},
            )
            if edge.consumer not in entry["by"]:
                entry["by"].append(edge.consumer)
            for v in edge.versions:
                if v not in entry["versions"]:
                    entry["versions"].append(v)
    return [
        Need(
            soname=s,
            needed_by=tuple(e["by"]),
            versions=tuple(e["versions"]),
            elf_class=e["class"],
            machine=e["machine"],
        )
        for s, e in merged.items()
    ]


def _check_packages(plan: Plan, files: Sequence[Path]) -> None:
    if not files:
        return
    from vkdoctor.overlay import archive

    for f in files:
        try:
            archive.package_format(f)
        except OverlayError as exc:
            plan.package_errors.append(exc.message)


def _extract_from(
    ctx: Context, plan: Plan, files: Sequence[Path], sonames: list[str], origin: str
) -> list[SearchDir]:
    if not sonames:
        return []
    # only where a package is opened: archive needs tarfile, hashlib, subprocess, threading
    from vkdoctor.overlay import archive

    cache = _store(ctx, plan)

    dirs: list[SearchDir] = []
    for f in files:
        try:
            got = archive.extract_libraries(
                f, sonames, cache, env_path=ctx.getenv("PATH"), timeout=ctx.options.timeout
            )
        except OverlayError as exc:
            plan.package_errors.append(exc.message)
            continue
        plan.packages.append(
            {
                "package": str(f),
                "origin": origin,
                "directory": str(got.directory),
                "found": sorted(got.found),
                "absent": list(got.absent),
                "linked_out": dict(got.linked_out),
            }
        )
        if got.found:
            dirs.append(SearchDir(path=str(got.directory), origin=f"{origin} {f.name}"))
    return dirs


def _choose(plan: Plan, order: Sequence[str]) -> None:
    for soname in order:
        if soname in plan.chosen or any(r.soname == soname for r in plan.refused):
            continue
        accepted = plan.search.accepted(soname)
        if accepted:
            plan.chosen[soname] = accepted[0]


def _search_more(ctx: Context, plan: Plan, dirs: list[SearchDir]) -> None:
    open_needs = [n for n in plan.needs if n.soname not in plan.chosen and not _refused(plan, n)]
    if not open_needs or not dirs:
        return
    _merge(plan, search(ctx, open_needs, dirs))
    _choose(plan, [n.soname for n in open_needs])


def _refused(plan: Plan, need: Need) -> bool:
    return any(r.soname == need.soname for r in plan.refused)


def make_plan(
    ctx: Context,
    chains: Mapping[str, Chain],
    resolve: ChainResolver,
    *,
    packages: Sequence[Path] = (),
    use_package_caches: bool = True,
    near_miss_packages: dict[str, list[str]] | None = None,
) -> Plan:
    """Search, choose, build and prove the overlay for `chains` (target -> its chain in ctx).

    `resolve` computes a target's chain in another environment (the overlay applied). Sonames
    that the chosen files themselves lack are searched for too, for a few rounds.
    """
    plan = Plan(chains=dict(chains))
    plan.needs = collect_needs(list(plan.chains.values()))
    if not plan.needs:
        # nothing to look for, but a mistyped --search-path or --from-package is said now,
        # not on the day a library goes missing
        _merge(plan, search(ctx, [], user_dirs(ctx)))
        _check_packages(plan, packages)
        return plan
    supply = _Supplier(ctx, plan, packages, use_package_caches, near_miss_packages or {})
    supply(plan.needs)
    for _ in range(MAX_DEPENDENCY_ROUNDS):
        more = _dependency_needs(ctx, plan, resolve)
        if not more:
            break
        plan.needs.extend(more)
        supply(more)
    _prove(ctx, plan, resolve)
    import shutil

    for d in plan.built_dirs - {plan.directory}:
        shutil.rmtree(d, ignore_errors=True)
    from vkdoctor.overlay import store

    root = ctx.known(store.store_root)
    if root is not None and root.fresh and not plan.built:
        shutil.rmtree(root.path, ignore_errors=True)  # nobody can reuse what it holds
    return plan


#: how many times the chosen files' own missing dependencies are searched for
MAX_DEPENDENCY_ROUNDS = 3


@record
class _Supplier:
    """Runs the search pipeline (search paths, packages, likely places, caches) for some needs."""

    ctx: Context
    plan: Plan
    packages: Sequence[Path]
    use_caches: bool
    near: dict[str, list[str]]

    def __call__(self, needs: Sequence[Need]) -> None:
        ctx, plan = self.ctx, self.plan
        for need in needs:
            reason = safety.protected_reason(need.soname)
            if reason:
                plan.refused.append(
                    Refusal(
                        soname=need.soname,
                        reason=f"{need.soname} is {reason}; an overlay never supplies it, "
                        "install it from the distribution instead",
                    )
                )
        wanted = [n for n in needs if not _refused(plan, n)]
        _merge(plan, search(ctx, wanted, user_dirs(ctx)))
        _choose(plan, [n.soname for n in wanted])
        sonames = [n.soname for n in wanted if n.soname not in plan.chosen]
        _search_more(ctx, plan, _extract_from(ctx, plan, list(self.packages), sonames, "package"))
        _search_more(ctx, plan, likely_places(ctx))
        if not self.use_caches:
            return
        from vkdoctor.overlay import pkgcache

        for soname in [n.soname for n in wanted if n.soname not in plan.chosen]:
            cached = pkgcache.find(ctx, soname, ctx.machine, self.near.get(soname, ()))
            names = ", ".join(c.path.rsplit("/", 1)[-1] for c in cached)
            plan.cache_search.append(
                f"package caches {' and '.join(pkgcache.CACHE_DIRS)} "
                + (f"(packages of its family: {names})" if cached else "(no package of its family)")
            )
            files = [ctx.under(c.path) for c in cached]
            _search_more(ctx, plan, _extract_from(ctx, plan, files, [soname], "cached package"))


def _merge(plan: Plan, more: Search) -> None:
    known = {(d.path, d.origin) for d in plan.search.dirs}
    plan.search.dirs.extend(d for d in more.dirs if (d.path, d.origin) not in known)
    seen = {(p.path, p.message) for p in plan.search.problems}
    plan.search.problems.extend(p for p in more.problems if (p.path, p.message) not in seen)
    for soname, cands in more.candidates.items():
        have = plan.search.candidates.setdefault(soname, [])
        reals = {c.real for c in have}
        for c in cands:
            if c.real not in reals:
                reals.add(c.real)
                have.append(c)


def _dependency_needs(ctx: Context, plan: Plan, resolve: ChainResolver) -> list[Need]:
    """Sonames the chosen files need that resolve neither normally nor through the overlay."""
    if not plan.chosen:
        return []
    _build(ctx, plan)
    if plan.ld_path is None or plan.directory is None:
        return []
    fixed = with_ld_path(ctx, plan.ld_path.value)
    # as ld.so loads them: from the overlay, where $ORIGIN is the overlay's folder
    chains = [resolve(fixed, str(plan.directory / s)) for s in plan.chosen]
    known = {n.soname for n in plan.needs}
    return [
        replace(n, needed_by=tuple(_as_chosen(plan, p) for p in n.needed_by))
        for n in collect_needs(chains)
        if n.soname not in known
    ]


def _as_chosen(plan: Plan, path: str) -> str:
    """A file of the overlay under the name of the file it links to (what the user gave)."""
    if plan.directory is not None and posixpath.dirname(path) == str(plan.directory):
        cand = plan.chosen.get(posixpath.basename(path))
        if cand is not None:
            return cand.path
    return path


def _open(plan: Plan) -> list[str]:
    return [n.soname for n in plan.needs if n.soname not in plan.chosen and not _refused(plan, n)]


def _build(ctx: Context, plan: Plan) -> None:
    from vkdoctor.overlay import store

    by_soname = {n.soname: n for n in plan.needs}
    plan.links = [
        store.Link(
            soname=s,
            target=Path(c.real),
            needed_by=by_soname[s].needed_by,
        )
        for s, c in sorted(plan.chosen.items())
    ]
    if not plan.links:
        plan.directory = None
        plan.ld_path = None
        return
    plan.directory = store.build_overlay(_store(ctx, plan), plan.links)
    plan.built_dirs.add(plan.directory)
    plan.ld_path = with_overlay(plan.directory, ctx.getenv("LD_LIBRARY_PATH"))


def _store(ctx: Context, plan: Plan) -> Path:
    """This run's store directory; why it is not the cache directory goes into the plan."""
    from vkdoctor.overlay import store

    root = ctx.fact(store.store_root)
    plan.store_note = root.note
    return root.path


def _prove(ctx: Context, plan: Plan, resolve: ChainResolver) -> None:
    """Drop chosen sonames that break a proof, rebuilding until what is left is proven."""
    import shutil

    loaded: dict[str, tuple[str, str]] = {}
    for chain in plan.chains.values():
        for soname, where in chain.loaded().items():
            loaded.setdefault(soname, where)
    for clash in safety.family_clashes(list(plan.chosen), loaded):
        _drop(
            plan,
            clash.added,
            f"{clash.added} would be a second {safety.family(clash.added)} library in the process: "
            f"{clash.loaded_by} already loads {clash.existing} ({clash.existing_path}); two "
            "versions of one library in one process clash",
        )
    for _ in range(len(plan.chosen) + 1):
        _build(ctx, plan)
        if not plan.links or plan.ld_path is None or plan.directory is None:
            return
        fixed = with_ld_path(ctx, plan.ld_path.value)
        culprit = _first_violation(ctx, fixed, plan, resolve)
        if culprit is None:
            return
        blamed, reason = culprit
        if blamed is None:
            for s in list(plan.chosen):
                _drop(plan, s, reason)
        else:
            _drop(plan, blamed, reason)
        # The rejected overlay directory is ours and useless now.
        shutil.rmtree(plan.directory, ignore_errors=True)
    plan.directory = None
    plan.ld_path = None
    plan.links = []


def _drop(plan: Plan, soname: str, reason: str) -> None:
    plan.chosen.pop(soname, None)
    plan.refused.append(Refusal(soname=soname, reason=reason))


def _first_violation(
    ctx: Context, fixed: Context, plan: Plan, resolve: ChainResolver
) -> tuple[str | None, str] | None:
    """(soname or None for all of them, reason) of the first proof that fails under the overlay, or None."""
    assert plan.directory is not None
    added = {link.soname: link for link in plan.links}
    # The chosen files' own dependencies must resolve with the overlay applied.
    # The chosen files' own dependencies must resolve with the overlay applied, each file
    # loaded as ld.so loads it: from the overlay, where its $ORIGIN is the overlay's folder.
    loaded_before = {e.resolved for c in plan.chains.values() for e in c.edges if e.resolved}
    searched_before = {where for c in plan.chains.values() for where, _, _ in c.searched}
    for soname, cand in plan.chosen.items():
        own = resolve(fixed, str(plan.directory / soname))
        if own.error:
            return soname, f"{cand.path} cannot be read: {own.error}"
        for edge in own.missing():
            return soname, (
                f"{cand.path} needs {edge.soname} (through {_as_chosen(plan, edge.consumer)}), "
                "which does not resolve even with the overlay"
            )
        # what they load in turn, through their own RPATH or RUNPATH, is theirs to bring: it
        # must pass the rule their search folders passed, or another user could swap it
        for edge in own.edges:
            if edge.resolved in loaded_before:
                continue  # the process loads it without the overlay too
            unsafe = _untrusted_load(ctx, plan, edge.resolved)
            if unsafe:
                return soname, (
                    f"{cand.path} makes ld.so load {edge.soname} from {edge.resolved}: {unsafe}"
                )
        unsafe_dir = _untrusted_search(ctx, plan, own.searched, searched_before)
        if unsafe_dir:
            return soname, f"{cand.path} makes ld.so {unsafe_dir}"
    # With and without: the only differences are the added sonames, now resolving to our files.
    for target, before in plan.chains.items():
        after = resolve(fixed, target)
        was = {(e.consumer, e.soname): e.resolved for e in before.edges}
        for e in after.edges:
            key = (e.consumer, e.soname)
            old = was.get(key)
            if e.soname in added:
                want = str(added[e.soname].target)
                if e.resolved is None or os.path.realpath(e.resolved) != want:
                    return e.soname, (
                        f"with the overlay, {e.consumer} still does not load {e.soname} from "
                        f"{plan.directory} (ld.so finds {e.resolved or 'nothing'})"
                    )
                continue
            if key in was and old != e.resolved:
                return None, (
                    f"with the overlay's LD_LIBRARY_PATH, {e.consumer} would load {e.soname} from "
                    f"{e.resolved or 'nowhere'} instead of {old or 'nowhere'}"
                )
    # Right names and versions are not all: the symbols dlopen binds must be defined (VKL006's
    # rule), or the driver still does not load, and a file with the right soname lacks them.
    from vkdoctor.closures.targets import undefined_by_target

    affected = {target for target, chain in plan.chains.items() if chain.missing()}
    for t, _, missing in fixed.fact(undefined_by_target):
        unbound = [u for u in missing if u.fails_dlopen]
        if t.dlopen_name in affected and unbound:
            return None, (
                f"with the overlay, {t.dlopen_name} would still not load: {len(unbound)} "
                f"symbol(s) dlopen binds are defined nowhere, e.g. {unbound[0].error}"
            )
    return None


def _untrusted_load(ctx: Context, plan: Plan, path: str | None) -> str | None:
    """Why another user could change the file ld.so loads at `path` (None: nobody can, or it is
    the overlay's own link, whose target was judged as a candidate)."""
    if path is None or plan.directory is None or not ctx.live:
        return None
    if posixpath.dirname(path) == str(plan.directory):
        return None
    from vkdoctor import trust

    return trust.untrusted(str(ctx.under(path)))


def _untrusted_search(
    ctx: Context,
    plan: Plan,
    searched: Sequence[tuple[str, str, str | None]],
    before: Collection[str],
) -> str | None:
    """Why another user could put a library into a folder ld.so searches under the overlay and
    not without it (an RPATH or RUNPATH entry of a chosen file, existing or not), or None."""
    if plan.directory is None or not ctx.live:
        return None
    from vkdoctor import trust

    for where, how, whose in searched:
        if where in before or posixpath.dirname(where) == str(plan.directory):
            continue
        # the entry as ld.so opens it: its folder, and where a link there leads (existing or not)
        why = trust.untrusted(where, searched=True)
        if why:
            owner = f"{_as_chosen(plan, whose)}'s {how.upper()}" if whose else how
            return f"search {where} (from {owner}) first: {why}"
    return None


def chosen_dirs(plan: Plan) -> list[str]:
    """The directories the chosen files came from, for the `--search-path` in a remedy."""
    out: list[str] = []
    for cand in plan.chosen.values():
        d = str(Path(cand.path).parent)
        if d not in out:
            out.append(d)
    return out
