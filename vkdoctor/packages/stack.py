"""The ELF facts the package rules explain, taken from library resolution (vkdoctor.elf).

One resolution per load target is shared with the VKL checks through
`vkdoctor.closures.targets.target_resolutions` (a `ctx.fact`), so nothing is resolved twice.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from vkdoctor.model.context import Context
from vkdoctor.model.record import replace
from vkdoctor.packages.facts import MissingSoname, MissingVersion, StackFacts, StackFile

if TYPE_CHECKING:
    from vkdoctor.elf.resolve import Resolution
    from vkdoctor.loader.targets import LoadTarget

#: near-miss kinds that are another version of the same library family
_OTHER_VERSION = ("other-version",)


def _through_overlay(ctx: Context, path: str) -> str | None:
    """The file a link in vkdoctor's own overlay points at; None for any other path."""
    from vkdoctor.overlay.store import store_roots

    if not any(path.startswith(f"{root}/overlays/") for root in store_roots(ctx)):
        return None
    return os.path.realpath(path)


def _extracted(ctx: Context, real: str) -> bool:
    """`real` is vkdoctor's own copy out of a package file, in its store."""
    from vkdoctor.overlay.store import store_roots

    return any(real.startswith(f"{root}/extracted/") for root in store_roots(ctx))


def _resolutions(ctx: Context) -> tuple[tuple[LoadTarget, Resolution], ...]:
    from vkdoctor.closures.targets import target_resolutions

    return tuple(ctx.fact(target_resolutions))


def stack_facts(ctx: Context) -> StackFacts:
    """Missing sonames, missing version nodes and loaded files of every load target."""
    sonames: list[MissingSoname] = []
    versions: list[MissingVersion] = []
    files: dict[str, StackFile] = {}
    users: dict[str, list[str]] = {}
    for target, res in _resolutions(ctx):
        root = res.root
        target_path = root.path if root is not None else target.dlopen_name
        for lib in res.libraries:
            if lib.preloaded:
                continue
            users.setdefault(lib.path, [])
            if target_path not in users[lib.path]:
                users[lib.path].append(target_path)
            if lib.path in files:
                continue
            role = "driver" if lib.needed_by is None else "library"
            real = _through_overlay(ctx, lib.path)
            if real is not None and _extracted(ctx, real):
                # vkdoctor's own copy out of a --from-package file: VKO001 reports it
                continue
            if real is not None:
                # the question is who owns the library, not vkdoctor's link to it
                files[lib.path] = StackFile(
                    path=real, role=role, target=target_path, overlay_link=lib.path
                )
            else:
                # as a path, not as ld.so spelled it: "../" and an empty LD_LIBRARY_PATH
                # entry (the current directory) resolved
                path = os.path.normpath(PurePosixPath(ctx.cwd) / lib.path)
                files[lib.path] = StackFile(
                    path=path, role=role, target=target_path, how=lib.how.value
                )
        classes = {lib.path: lib.elf.elf_class for lib in res.libraries}
        for miss in res.misses:
            if miss.needed_by is None:
                continue  # the driver file itself: the VKL checks say so
            if miss.bad_file is not None:
                continue  # not missing: a broken copy won the search (VKL002 names it)
            near = tuple(n.path for n in miss.near if n.kind in _OTHER_VERSION)
            sonames.append(
                MissingSoname(
                    consumer=miss.needed_by,
                    soname=miss.name,
                    near_misses=near,
                    target=target_path,
                    elf_class=classes.get(miss.needed_by),
                )
            )
        for problem in res.versions:
            if problem.weak_only:
                continue
            for version in problem.missing:
                versions.append(
                    MissingVersion(
                        consumer=problem.required_by,
                        soname=problem.soname,
                        version=version,
                        provider=problem.provider,
                        provider_versions=tuple(problem.provider_defines),
                        alternatives=tuple(n.path for n in problem.better),
                        target=target_path,
                    )
                )
    return StackFacts(
        missing_sonames=tuple(dict.fromkeys(sonames)),
        missing_versions=tuple(dict.fromkeys(versions)),
        files=tuple(replace(f, targets=tuple(users[key])) for key, f in files.items()),
    )
