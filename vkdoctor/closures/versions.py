"""The copies that win and lack symbol versions their users need (VKL003), and the fix for each.

One `VersionFailure` per copy (and weak or strong requirement): its users need different sets
of versions, but the copy, and so the fix, is one. VKL003 turns each into a finding; the
overlay commands name the strong ones as what an overlay cannot fix.
"""

from __future__ import annotations

import posixpath

from vkdoctor.closures.targets import target_resolutions
from vkdoctor.elf.explain import span_per_family
from vkdoctor.elf.resolve import VersionProblem
from vkdoctor.elf.search import How
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model.context import Context
from vkdoctor.model.record import record


@record(frozen=True, kw_only=True)
class VersionFailure:
    """`provider`, the copy that wins, lacks versions its users require (`items`, in order)."""

    provider: str
    weak_only: bool
    items: tuple[tuple[LoadTarget, VersionProblem], ...]


def version_problems(ctx: Context) -> tuple[VersionFailure, ...]:
    """Each copy that wins and lacks versions, with the targets and libraries that need them;
    a run-wide fact (`ctx.fact`)."""
    groups: dict[tuple[str, bool], list[tuple[LoadTarget, VersionProblem]]] = {}
    for t, res in ctx.fact(target_resolutions):
        for v in res.versions:
            groups.setdefault((v.provider, v.weak_only), []).append((t, v))
    return tuple(
        VersionFailure(provider=provider, weak_only=weak_only, items=tuple(items))
        for (provider, weak_only), items in groups.items()
    )


def missing_versions(g: VersionFailure) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m for _, x in g.items for m in x.missing))


def fails_dlopen(g: VersionFailure) -> bool:
    """dlopen of a driver fails (a weak requirement never fails; a broken layer is ignored)."""
    return not g.weak_only and any(t.kind == "driver" for t, _ in g.items)


def version_title(g: VersionFailure) -> str:
    return f"{', '.join(span_per_family(missing_versions(g)))} not found in {g.provider}"


def version_fix(ctx: Context, g: VersionFailure) -> str:
    v = g.items[0][1]
    better = list(dict.fromkeys(n.path for _, x in g.items for n in x.better))
    return _version_remedy(
        ctx, v.provider_how, v.provider_dir, v.soname, better, missing_versions(g), v.chain
    )


def _rpath_carrier(ctx: Context, directory: str, chain: tuple[str, ...]) -> str | None:
    """The object of the loading chain whose DT_RPATH names `directory` ($ORIGIN expanded)."""
    from vkdoctor.elf.platform import ldso_platform
    from vkdoctor.elf.reader import ElfInfo, read_elf
    from vkdoctor.elf.search import expand_dst

    plat = ctx.fact(ldso_platform)
    for obj in reversed(chain):
        info = read_elf(ctx, obj)
        if not isinstance(info, ElfInfo):
            continue
        for entry in info.rpath:
            expanded = expand_dst(entry, posixpath.dirname(obj), plat)
            if expanded and posixpath.normpath(expanded) == posixpath.normpath(directory):
                return obj
    return None


def _older_copies_behind(
    ctx: Context, directory: str, soname: str, missing: tuple[str, ...]
) -> list[str]:
    """The LD_LIBRARY_PATH entries after `directory` whose copy of `soname` also lacks one of
    the `missing` versions."""
    from vkdoctor.elf.reader import ElfInfo, read_elf

    entries = list(
        dict.fromkeys(
            posixpath.normpath(e)
            for e in ctx.env.get("LD_LIBRARY_PATH", "").split(":")
            if e.startswith("/")
        )
    )
    if posixpath.normpath(directory) not in entries:
        return []
    found = []
    for entry in entries[entries.index(posixpath.normpath(directory)) + 1 :]:
        info = read_elf(ctx, posixpath.join(entry, soname))
        if not isinstance(info, ElfInfo):
            continue
        if set(missing) <= set(info.verdef):
            break  # this copy would win next, and it has them
        found.append(entry)
    return found


def _version_remedy(
    ctx: Context,
    how: How,
    directory: str,
    soname: str,
    better: list[str],
    missing: tuple[str, ...] = (),
    chain: tuple[str, ...] = (),
) -> str:
    if how is How.LD_LIBRARY_PATH:
        # the next entry with its own old copy would win once this one is gone: name them all
        dirs = [directory, *_older_copies_behind(ctx, directory, soname, missing)]
        text = (
            f"Remove {' and '.join(dirs)} from LD_LIBRARY_PATH for Vulkan programs"
            + (f" so that {better[0]} is used" if better else "")
            + "."
        )
        prefix = directory.removesuffix("/lib")
        if ctx.under(f"{prefix}/conda-meta").is_dir():
            text += (
                " In a conda environment, update its C++ runtime instead: "
                f"`conda install -p {prefix} -c conda-forge 'libstdcxx-ng>=12'`."
            )
        return text
    if how is How.RPATH:
        carrier = _rpath_carrier(ctx, directory, chain)
        who = f"{carrier}'s DT_RPATH" if carrier else "a DT_RPATH"
        return (
            f"patchelf --remove-rpath {carrier or 'LIBRARY'} if the bundle does not need "
            f"{directory} ({who}); else update its {soname} to one that defines "
            f"{', '.join(missing) or 'them'}, or remove it so that the system's is found."
        )
    if how is How.PRELOAD:
        return f"Stop preloading {soname} from {directory} (LD_PRELOAD)."
    return f"Upgrade the package that provides {soname} in {directory} to match its users."
