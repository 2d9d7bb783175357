"""Undefined symbols (rule E6): strong references that no object in the load scope defines.

The symbol tables are read as ld.so finds them, by vkdoctor.elf.dynsym.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from vkdoctor.elf import dynsym
from vkdoctor.elf.dynsym import symbol_table, unresolved
from vkdoctor.elf.reader import resolved
from vkdoctor.model.context import Context
from vkdoctor.model.record import record
from vkdoctor.speed import factcache


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
    store = factcache.store(ctx.options.cache_dir, "undefined", sources=_SOURCES)
    key = _key(ctx, new, scope) if store is not None else None
    if store is not None and key is not None:
        kept = store.get(key)
        if kept is not None:
            # a value of another shape is not what this code wrote: computed again
            with contextlib.suppress(TypeError, ValueError):
                return tuple(
                    Undefined(path=str(p), name=str(n), versioned=v, bind_now=b, at_load=a)
                    for p, n, v, b, a in kept
                )
    missing = unresolved(ctx, [p for p, _ in new], scope)
    found = tuple(
        Undefined(
            path=p, name=n, versioned=v, bind_now=b, at_load=n in symbol_table(ctx, p).at_load
        )
        for p, b in new
        for n, v in missing.get(p, ())
    )
    if store is not None and key is not None:
        store.put(key, tuple((u.path, u.name, u.versioned, u.bind_now, u.at_load) for u in found))
    return found


_SOURCES = (__file__, dynsym.__file__)


def _key(
    ctx: Context, new: Sequence[tuple[str, bool]], scope: Sequence[str]
) -> tuple[object, ...] | None:
    """What the answer depends on: the question and every file's identity; None when a file
    cannot be examined (its table's error is then part of the answer: computed, not kept)."""
    known = ctx.fact(_identities)
    ids = []
    for path in dict.fromkeys([*(p for p, _ in new), *scope]):
        ident = known.get(path)
        if ident is None:
            try:
                ident = known[path] = factcache.identity(resolved(ctx, path))
            except OSError:
                return None
        if ident is None:
            return None
        ids.append(ident)
    return (str(ctx.root), tuple(new), tuple(scope), tuple(ids))


def _identities(ctx: Context) -> dict[str, factcache.Identity | None]:
    return {}
