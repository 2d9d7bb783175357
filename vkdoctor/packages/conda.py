"""conda environments: which conda package put a file into a prefix (conda-meta/*.json)."""

from __future__ import annotations

from pathlib import PurePosixPath

from vkdoctor.model import files, tree
from vkdoctor.model.context import Context
from vkdoctor.model.record import record


@record(frozen=True, kw_only=True)
class CondaPackage:
    prefix: str
    name: str
    version: str
    build: str
    channel: str | None

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


def conda_prefix(ctx: Context, path: str) -> str | None:
    """The conda prefix (a directory with conda-meta/) that contains `path`, if any."""
    for parent in PurePosixPath(path).parents:
        if str(parent) == "/":
            break
        if ctx.under(str(parent / "conda-meta")).is_dir():
            return str(parent)
    return None


def conda_owner(ctx: Context, path: str) -> CondaPackage | None:
    """The conda package whose file list has `path` (read from the prefix's conda-meta)."""
    prefix = conda_prefix(ctx, path)
    if prefix is None:
        return None
    rel = str(PurePosixPath(path).relative_to(prefix))
    meta = f"{prefix}/conda-meta"
    try:
        names = [n for n in tree.names(ctx, meta) if n.endswith(".json")]
    except OSError:
        names = []
    for name in names:
        try:
            doc = files.json_value(tree.read_text(ctx, f"{meta}/{name}"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or rel not in (doc.get("files") or []):
            continue
        return CondaPackage(
            prefix=prefix,
            name=str(doc.get("name", name.removesuffix(".json"))),
            version=str(doc.get("version", "")),
            build=str(doc.get("build", "")),
            channel=doc.get("channel") if isinstance(doc.get("channel"), str) else None,
        )
    return None
