"""The undefined symbols of each load target's closure (VKL006): answered by the load test's real
dlopen where it answers for the model's process, else read from the symbol tables.

The load test's child dlopens each target with RTLD_NOW first, while every object in it was bound
at load (probes/loadtest.py): ld.so then binds every symbol of the target's closure, or refuses.
Its lookup scope is the child's global objects (the interpreter, its libraries, LD_PRELOAD's) and
the target's closure. The model's scope is the modelled process (ld.so, LD_PRELOAD's, libvulkan
and its closure) and the same closure. A symbol the child bound is defined in the model's scope
too, unless only an object of the child that the model lacks defines it: the interpreter's
executable and libraries. So a target counts as bound when its dlopen bound everything and each
such object exports nothing the model's scope lacks, but for Python's own C API (Py*, _Py*: no
driver or layer refers to it) and the names the linker gives every executable. Anything else
(no load test, `--root`, a failed or untried RTLD_NOW dlopen, an interpreter library with more
names) reads the symbol tables, as before: the same answer, later.
"""

from __future__ import annotations

import os
import sys

from vkdoctor.context import Context
from vkdoctor.elf.dynsym import SymbolName, symbol_table
from vkdoctor.elf.reader import resolved
from vkdoctor.elf.resolve import Resolution, resolve
from vkdoctor.elf.symbols import Undefined
from vkdoctor.loader.targets import LoadTarget

#: what GNU ld, gold and lld define in every executable (the model's executable stands for any)
EXECUTABLE_NAMES = frozenset(
    {b"_start", b"_init", b"_fini", b"_edata", b"_end", b"__bss_start", b"_IO_stdin_used"}
    | {b"data_start", b"__data_start", b"__dso_handle", b"_DYNAMIC", b"__libc_csu_init"}
    | {b"__libc_csu_fini", b"main"}
)


def undefined_by_target(
    ctx: Context,
) -> tuple[tuple[LoadTarget, Resolution, tuple[Undefined, ...]], ...]:
    """Each resolvable target with the strong undefined symbols of its closure."""
    from vkdoctor.closures.targets import undefined_unless_bound

    return undefined_unless_bound(ctx, bound_at_dlopen(ctx))


def bound_at_dlopen(ctx: Context) -> frozenset[LoadTarget]:
    """The targets whose real RTLD_NOW dlopen bound every symbol in a scope that the model's
    contains, for what can refer to a symbol: they have no undefined symbols."""
    from vkdoctor.closures.targets import target_resolutions
    from vkdoctor.facts.loadtest import load_test, started_load_test

    if not ctx.live or ctx.known(started_load_test) is None:
        return frozenset()  # the load test is not part of this run: not started for this
    bound = {o.target for o in ctx.fact(load_test).outcomes if o.bound is True}
    if not bound:
        return frozenset()
    interpreter = ctx.fact(_interpreter)
    return frozenset(
        t
        for t, res in ctx.fact(target_resolutions)
        if t in bound and res.ok and not _may_widen(ctx, res, interpreter)
    )


def _interpreter(ctx: Context) -> tuple[tuple[str, str], ...] | None:
    """The objects ld.so maps for the load test's child at its start (this interpreter's
    executable and its closure, in the run's environment: the child may be this process
    itself, forked, vkdoctor.zygote), each as (real path, path); None when not known."""
    res = resolve(ctx, os.path.realpath(sys.executable), caller="executable", with_loader=False)
    if res.misses or not res.libraries:
        return None
    try:
        return tuple((str(resolved(ctx, lib.path)), lib.path) for lib in res.libraries)
    except OSError:
        return None


def _names(ctx: Context) -> dict[str, tuple[SymbolName, ...] | None]:
    return {}


def _widening(ctx: Context, path: str) -> tuple[SymbolName, ...] | None:
    """The names `path` exports other than Python's API and the executable's own; None when
    its symbols cannot be read."""
    known = ctx.fact(_names)
    if path not in known:
        table = symbol_table(ctx, path)
        known[path] = (
            None
            if table.error is not None
            else tuple(
                SymbolName(raw.decode("utf-8", "surrogateescape"))
                for raw in table.exported(but=(b"Py", b"_Py"))
                if raw not in EXECUTABLE_NAMES
            )
        )
    return known[path]


def _may_widen(
    ctx: Context, res: Resolution, interpreter: tuple[tuple[str, str], ...] | None
) -> bool:
    """Whether an object of the child's scope outside the model's exports a name that the
    model's scope does not define (other than Python's API and the executable's own names): a
    symbol the child bound may then be undefined for another program."""
    if interpreter is None:
        return True
    scope = [*res.process, *(lib.path for lib in res.libraries)]
    try:
        ours = {str(resolved(ctx, p)) for p in scope}
    except OSError:
        return True
    for real, path in interpreter:
        if real in ours:
            continue
        names = _widening(ctx, path)
        if names is None or any(
            not any(symbol_table(ctx, p).defines(n) for p in scope) for n in names
        ):
            return True
    return False
