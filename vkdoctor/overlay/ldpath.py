"""LD_LIBRARY_PATH with the overlay in front: no empty and no relative entries.

ld.so splits the variable on ':' and ';'. An empty entry means the current directory, and a
relative one is looked up from wherever the process happens to run: both load whatever library a
directory you cd into holds, so they are dropped, and the caller says so.
"""

from __future__ import annotations

import re
from pathlib import Path

from vkdoctor.model.record import record

_SEPARATORS = re.compile(r"[:;]")


@record(frozen=True, kw_only=True)
class Dropped:
    """An entry of the old LD_LIBRARY_PATH that is not carried over, and why."""

    entry: str
    reason: str


@record(frozen=True, kw_only=True)
class LdPath:
    value: str
    dropped: tuple[Dropped, ...] = ()


def split(value: str | None) -> list[str]:
    """The entries of an LD_LIBRARY_PATH value, in order, as ld.so reads them (empty ones kept)."""
    if value is None:
        return []
    return _SEPARATORS.split(value)


def with_overlay(overlay_dir: Path, existing: str | None) -> LdPath:
    """The overlay dir followed by the usable entries of `existing` (duplicates removed)."""
    entries = [str(overlay_dir)]
    dropped: list[Dropped] = []
    for entry in split(existing) if existing else []:
        if entry == "":
            dropped.append(
                Dropped(entry=entry, reason="an empty entry means the current directory")
            )
        elif not entry.startswith("/"):
            dropped.append(
                Dropped(entry=entry, reason="a relative entry depends on the current directory")
            )
        elif entry.rstrip("/") in (e.rstrip("/") for e in entries):
            continue
        else:
            entries.append(entry)
    return LdPath(value=":".join(entries), dropped=tuple(dropped))
