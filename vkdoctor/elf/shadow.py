"""Undefined symbols explained by a shadowing copy: the library that won the search lacks
symbols that the system's copy of the same soname defines.

The usual case: a stale or stub libz.so.1, libdrm.so.2 or libstdc++.so.6 in a directory on
LD_LIBRARY_PATH (or an RPATH) wins over the distribution's copy; libraries linked against the
distribution's copy then meet undefined symbols (at dlopen when linked with BIND_NOW). Naming
the copy that won, the system copy that would have worked and how the winner was found turns
"libxml2.so.2: undefined symbol: inflateReset" into "take /opt/x/lib off LD_LIBRARY_PATH".
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable

from vkdoctor.elf.dynsym import SymbolName, symbol_table
from vkdoctor.elf.explain import how_found, system_copy
from vkdoctor.elf.resolve import Library, Resolution
from vkdoctor.elf.search import How
from vkdoctor.elf.symbols import Undefined
from vkdoctor.model import Remedy
from vkdoctor.model.context import Context
from vkdoctor.model.record import field, record

#: how a library can win over the system's copy of its soname
_NOT_SYSTEM = (How.LD_LIBRARY_PATH, How.RPATH, How.RUNPATH, How.PRELOAD)


@record(kw_only=True)
class Shadow:
    """A library that won the search over the system's copy and lacks what that copy defines."""

    library: Library
    #: the system's copy of the same soname (ld.so.cache or the default directories)
    system: str
    #: symbol -> the libraries that use it
    symbols: dict[str, list[str]] = field(default_factory=dict)
    #: a missing symbol is bound at dlopen (its user is linked with BIND_NOW, or a data
    #: relocation uses it): dlopen itself fails
    bind_now: bool = False


def _shadowing(ctx: Context, res: Resolution) -> list[tuple[Library, str]]:
    """The libraries of `res` found outside the system's search, each with its system copy."""
    out = []
    for lib in res.libraries:
        if lib.how not in _NOT_SYSTEM or not lib.soname:
            continue
        system = system_copy(ctx, lib.soname)
        if system is not None and str(ctx.resolve(system)) != str(ctx.resolve(lib.path)):
            out.append((lib, system))
    return out


def behind_lookup_error(
    ctx: Context, resolutions: Iterable[Resolution], line: str
) -> tuple[Library, str] | None:
    """For ld.so's "symbol lookup error: LIB: undefined symbol: NAME[, version V]": the library
    of `resolutions` found outside the system's search (LD_PRELOAD, LD_LIBRARY_PATH, an RPATH)
    that lacks NAME while its system copy defines it, with that copy."""
    n = SymbolName(line.rpartition("undefined symbol: ")[2].split(",")[0].strip())
    for res in resolutions:
        for lib, system in _shadowing(ctx, res):
            if symbol_table(ctx, system).defines(n) and not symbol_table(ctx, lib.path).defines(n):
                return lib, system
    return None


def missing_because(lib: Library, system: str) -> str:
    """Why a call of the process found no definition, as `behind_lookup_error` found it."""
    return (
        f"The symbol is missing because {lib.path} (found {how_found(lib)}) wins over the "
        f"system's {system}, which defines it (VKL006)"
    )


def explain(
    ctx: Context, res: Resolution, missing: Iterable[Undefined], found: dict[str, Shadow]
) -> tuple[list[Undefined], dict[str, bool]]:
    """Attribute each of `missing` (undefined symbols of `res`'s objects) to a shadowing library
    whose system copy defines it, adding to `found` (keyed by the winner's path). Returns the
    ones no shadowing explains, and for each shadow that explained some of the others whether
    one of those is bound at dlopen (this dlopen fails) or not."""
    candidates = _shadowing(ctx, res)
    rest = []
    used: dict[str, bool] = {}
    for u in missing:
        name = SymbolName(u.name)
        for lib, system in candidates:
            if symbol_table(ctx, system).defines(name):
                shadow = found.setdefault(lib.path, Shadow(library=lib, system=system))
                users = shadow.symbols.setdefault(u.name, [])
                if u.path not in users:
                    users.append(u.path)
                shadow.bind_now = shadow.bind_now or u.fails_dlopen
                used[lib.path] = used.get(lib.path, False) or u.fails_dlopen
                break
        else:
            rest.append(u)
    return rest, used


def unshadow(ctx: Context, lib: Library) -> Remedy:
    """How to let the system's copy of `lib` win again."""
    if lib.how is How.LD_LIBRARY_PATH:
        entries = ctx.env.get("LD_LIBRARY_PATH", "").split(":")
        kept = [e for e in entries if e and posixpath.normpath(e) != lib.directory]
        change = f"export LD_LIBRARY_PATH={':'.join(kept)}" if kept else "unset LD_LIBRARY_PATH"
        return Remedy(
            text=f"Take {lib.directory} off LD_LIBRARY_PATH ({change}); if a program needs a library "
            f"that only {lib.directory} has, `vkdoctor exec --search-path {lib.directory} -- CMD` "
            "gives it just the missing files, not this copy."
        )
    if lib.how is How.PRELOAD:
        # ld.so splits LD_PRELOAD at spaces and colons
        entries = ctx.env.get("LD_PRELOAD", "").replace(":", " ").split()
        kept = [e for e in entries if e not in (lib.path, lib.name)]
        change = f"export LD_PRELOAD={shlex.quote(' '.join(kept))}" if kept else "unset LD_PRELOAD"
        return Remedy(text=f"Take {lib.path} out of LD_PRELOAD ({change}).")
    return Remedy(
        text=f"{lib.needed_by or 'A library'} finds {lib.path} through its "
        f"{'RPATH' if lib.how is How.RPATH else 'RUNPATH'}: remove the stale {lib.path}, or "
        "rebuild what carries that path against the system's library."
    )
