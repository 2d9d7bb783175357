"""The fact store: answers kept from one run to the next, asked for by kind.

What an ELF file's dynamic section says, or which of a closure's symbols nothing defines,
depends only on the bytes of the files involved. A reader asks the Context's store
(`ctx.store.get(KIND, files, key)`) before it computes such an answer and offers it after
(`put`); the store answers only while every one of `files` is the file it was (the same
identity: device, inode, size and times). The store the Context starts with keeps nothing;
the command layer installs the one that keeps answers in vkdoctor's cache directory
(vkdoctor.speed.factcache), so a reader never knows how, or whether, anything is kept.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any, Protocol

from vkdoctor.model.record import record


@record(frozen=True)
class FactKind:
    """One kind of kept answer (the answers of one reader)."""

    #: its name: the store's file in the cache directory
    name: str
    #: the modules whose code computes it: another version of them never reads these answers
    sources: tuple[str, ...]
    #: how many answers are kept (those the last run used first)
    keep: int = 4096


class FactStore(Protocol):
    """Where answers are kept between runs."""

    def get(self, kind: FactKind, files: Iterable[str | Path], key: Hashable = ()) -> Any:
        """The answer kept for `key` while each of `files` is the file it was when the answer
        was offered; None when there is none."""

    def put(self, kind: FactKind, files: Iterable[str | Path], key: Hashable, value: Any) -> None:
        """Offer `value` as the answer for `key`: kept only when each of `files` is still the
        file it was when `get` was asked for `key` (it did not change while it was read).
        `value` is made of records, tuples, dicts, strings, bytes, numbers, booleans and None."""


class _NothingKept:
    """The store a Context has unless the command layer gives it another: every `get` misses."""

    def get(self, kind: FactKind, files: Iterable[str | Path], key: Hashable = ()) -> Any:
        return None

    def put(self, kind: FactKind, files: Iterable[str | Path], key: Hashable, value: Any) -> None:
        pass


NOTHING_KEPT: FactStore = _NothingKept()
