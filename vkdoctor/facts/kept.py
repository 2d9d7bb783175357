"""The facts a kept run found that a replay takes instead of finding them again
(vkdoctor.speed.replay): what depends only on files, all of which the replay has seen unchanged, and
that the checks it runs again (and its load test) would otherwise compute from scratch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model.context import Context


def kept(ctx: Context) -> dict[str, Any]:
    """This run's load targets and loader version, as data (`give` takes them back)."""
    from vkdoctor.facts.loadtest import targets_of
    from vkdoctor.loader.version import loader_version
    from vkdoctor.model.record import to_json

    return {
        "targets": [to_json(t) for t in targets_of(ctx)],
        "loader_version": to_json(ctx.fact(loader_version)),
    }


def give(ctx: Context, facts: Mapping[str, Any]) -> None:
    """Take `facts` (`kept` of a run that read the same files, so it would find the same) as
    this run's, without the loader's scan or the ld.so emulation's search for libvulkan."""
    from vkdoctor.loader import load_targets
    from vkdoctor.loader.version import LoaderVersion, loader_version
    from vkdoctor.model import Remedy

    def target(t: Mapping[str, Any]) -> LoadTarget:
        fix = t.get("off_fix")
        remedy = (
            Remedy(commands=tuple(fix["commands"]), needs_root=fix["needs_root"], text=fix["text"])
            if fix
            else None
        )
        return LoadTarget(**{**t, "off_fix": remedy})

    ctx.set_fact(load_targets, tuple(target(t) for t in facts["targets"]))
    found = facts["loader_version"]
    version = tuple(found["version"]) if found["version"] is not None else None
    ctx.set_fact(
        loader_version,
        LoaderVersion(path=found["path"], file=found["file"], version=version),
    )
