"""The words for a library copy that wins ld.so's search but cannot be used: what is wrong with
the file, what ld.so does with it, the intact copy it shadows, and the fix by how it won. Shared
by VKH002 (the loader), VKL001 (a driver's own file) and VKL002 (a library a driver needs)."""

from __future__ import annotations

import posixpath
import shlex
from typing import Any

from vkdoctor import facts
from vkdoctor.elf.defect import Defect, diagnose
from vkdoctor.elf.search import How, Tried
from vkdoctor.model import Remedy
from vkdoctor.model.context import Context
from vkdoctor.model.record import record
from vkdoctor.packages.owner import fix_file, verified_owner


@record(frozen=True, kw_only=True)
class BrokenCopy:
    defect: Defect
    #: "truncated: cut at 700 of 121280 bytes (...)"
    what: str
    #: what ld.so does with it, and what it shadows
    effect: str
    remedy: Remedy
    evidence: dict[str, Any]


def broken_copy(ctx: Context, tried: Tried, soname: str, error: str) -> BrokenCopy | None:
    """For the candidate `tried` that ended the search for `soname` with `error`."""
    if tried.path is None:
        return None
    plat = facts.ldso_platform(ctx)
    defect = diagnose(ctx, tried.path, soname, plat.e_machine)
    if defect is None:
        return None
    what = defect.what()
    effect = _effect(defect, error)
    intact_ev: dict[str, Any] = {}
    if defect.intact is not None:
        effect += f" It shadows {defect.intact}"
        pkg = verified_owner(ctx, defect.intact)
        if pkg is not None:
            label, modified = pkg
            intact_ev = {"intact_package": label, "intact_modified": modified}
            effect += (
                f" ({label}; its checksum matches the package's)"
                if modified is False
                else f" ({label})"
            )
        effect += ", which is intact."
    remedy = _remedy(ctx, tried, defect)
    evidence = {**defect.as_dict(), "how": tried.how.value, "directory": tried.where, **intact_ev}
    return BrokenCopy(defect=defect, what=what, effect=effect, remedy=remedy, evidence=evidence)


def _effect(d: Defect, error: str) -> str:
    if d.kind == "truncated" and d.effect == "sigbus":
        return (
            "Its headers are whole, so ld.so maps it by them past the end of the file, and the "
            "first access to a missing page kills the process with SIGBUS: no dlopen error, "
            "every program that loads it crashes."
        )
    if d.kind == "truncated" and d.effect == "zeros":
        return (
            "ld.so loads it, with zeros in place of the missing end of its last segment "
            "(data, relocations): it is not the library it claims to be."
        )
    if d.kind == "truncated" and d.effect == "none":
        return "ld.so needs none of the missing bytes (section headers, debug data), but the file is not whole."
    return f'ld.so stops there: dlopen fails with "{error}", and the search does not go on.'


def _unset(ctx: Context, directory: str) -> str:
    entries = ctx.env.get("LD_LIBRARY_PATH", "").split(":")
    norm = posixpath.normpath(directory) if directory else ""
    kept = [e for e in entries if e and posixpath.normpath(e) != norm]
    return (
        f"export LD_LIBRARY_PATH={shlex.quote(':'.join(kept))}" if kept else "unset LD_LIBRARY_PATH"
    )


def _files(ctx: Context, path: str) -> str:
    """`path`, and the file it links to when it is a link: removing only the link leaves the
    broken file for ldconfig to link again."""
    try:
        real = ctx.resolve(path)
    except OSError:
        return shlex.quote(path)
    target = ctx.inside(real)
    return shlex.quote(path) if target == path else f"{shlex.quote(path)} {shlex.quote(target)}"


def _remedy(ctx: Context, t: Tried, d: Defect) -> Remedy:
    path = t.path or ""
    rm = f"`rm {_files(ctx, path)}`"
    then = f" so that {d.intact} is used" if d.intact else ""
    if d.kind == "noexec":
        remount = f"`sudo mount -o remount,exec {d.mount}`"
        if t.how is How.LD_LIBRARY_PATH:
            return Remedy(
                text=f"Take {t.where} off LD_LIBRARY_PATH ({_unset(ctx, t.where)}){then}, or remount "
                f"{d.mount} with exec ({remount}) if the libraries must come from there."
            )
        return Remedy(
            text=f"Remount {d.mount} with exec ({remount}), or move {path} to a filesystem "
            "that allows it."
        )
    if t.how is How.LD_LIBRARY_PATH:
        return Remedy(
            text=f"Take {t.where} off LD_LIBRARY_PATH ({_unset(ctx, t.where)}){then}, or remove the "
            f"broken {path} ({rm}) if the directory is needed for other libraries."
        )
    if t.how in (How.RPATH, How.RUNPATH):
        carrier = t.origin_of or "a library"
        kind = "DT_RPATH" if t.how is How.RPATH else "DT_RUNPATH"
        return Remedy(
            text=f"Remove the broken {path} ({rm}), or put an intact copy there: {t.where} "
            f"comes from {carrier}'s {kind}, and once the file is gone ld.so goes on"
            f"{' to ' + d.intact if d.intact else ' searching'}."
        )
    if t.how is How.PRELOAD:
        return Remedy(text=f"Take {path} out of LD_PRELOAD.")
    return fix_file(
        ctx,
        path,
        f"{{reinstall}} ({{package}} owns {path}, and the file is not what it installed).",
        f"{path} belongs to no package: remove it ({rm}) or replace it with an intact build, "
        "then run `sudo ldconfig`" + (f" (ld.so then goes on to {d.intact})." if d.intact else "."),
    )
