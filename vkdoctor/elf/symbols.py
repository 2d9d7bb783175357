"""Undefined symbols (rule E6): strong references that no object in the load scope defines.

The symbol tables are read as ld.so finds them, by vkdoctor.elf.dynsym.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vkdoctor.elf import dynsym
from vkdoctor.elf.dynsym import symbol_table, unresolved
from vkdoctor.elf.reader import resolved
from vkdoctor.model.context import Context
from vkdoctor.model.factstore import FactKind
from vkdoctor.model.record import record


@record(frozen=True, kw_only=True)
class Undefined:
    """A strong undefined symbol of `path` that no object in the load scope defines."""

    path: str
    name: str
    versioned: bool
    #: the object is linked with -z now (DF_BIND_NOW / DF_1_NOW): dlopen binds every symbol
    bind_now: bool
    #: a relocation outside the PLT uses it (data, a function pointer): dlopen binds it anyway
    at_load: bool = False

    @property
    def fails_dlopen(self) -> bool:
        """dlopen itself fails on it; otherwise the process dies when the function is first
        called ("symbol lookup error")."""
        return self.bind_now or self.at_load

    @property
    def error(self) -> str:
        return f"{self.path}: undefined symbol: {self.name}"


def undefined_symbols(
    ctx: Context, new: Sequence[tuple[str, bool]], scope: Sequence[str]
) -> tuple[Undefined, ...]:
    """E6: for each newly loaded (path, bind_now), its strong UND symbols nobody in `scope` defines.

    `scope` is every object ld.so searches for this dlopen: the process's global scope
    (executable, its libraries, LD_PRELOAD) and the dlopened closure.
    """
    files = _files(ctx, new, scope)
    key = (str(ctx.root), tuple(new), tuple(scope))
    kept = ctx.store.get(_KIND, files, key) if files is not None else None
    if isinstance(kept, tuple) and all(isinstance(u, Undefined) for u in kept):
        return kept
    missing = unresolved(ctx, [p for p, _ in new], scope)
    found = tuple(
        Undefined(
            path=p, name=n, versioned=v, bind_now=b, at_load=n in symbol_table(ctx, p).at_load
        )
        for p, b in new
        for n, v in missing.get(p, ())
    )
    if files is not None:
        ctx.store.put(_KIND, files, key, found)
    return found


_KIND = FactKind("undefined", (__file__, dynsym.__file__))


def _files(
    ctx: Context, new: Sequence[tuple[str, bool]], scope: Sequence[str]
) -> tuple[Path, ...] | None:
    """The files the answer depends on (every one the question names); None when one cannot
    be found (its table's error is then part of the answer: computed, not kept)."""
    try:
        return tuple(resolved(ctx, p) for p in dict.fromkeys([*(p for p, _ in new), *scope]))
    except OSError:
        return None
