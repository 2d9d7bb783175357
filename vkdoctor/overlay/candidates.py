"""Which file can supply a missing soname: where to look, and what makes a file acceptable.

A candidate must be an ELF of the consumers' class and machine whose DT_SONAME is the soname, and
define every symbol version the consumers need from it. Its own dependencies are checked later,
with the overlay applied (plan.py). Places are searched in a fixed order: the --search-path
directories and VKDOCTOR_SEARCH_PATH as given, then libraries extracted from package files, then a
bounded set of likely places (docs/overlay.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from vkdoctor import trust
from vkdoctor.elf.defect import diagnose
from vkdoctor.elf.reader import ElfError, read_elf
from vkdoctor.elf.search import MAP_FAILED
from vkdoctor.model import files, tree
from vkdoctor.model.context import Context
from vkdoctor.model.record import field, record

#: at most this many /opt/*/lib directories are looked at
MAX_OPT_DIRS = 32
#: at most this many files per directory and soname are examined
MAX_FILES_PER_SONAME = 8


@record(frozen=True, kw_only=True)
class Need:
    """A soname the normal resolution does not find, and what its consumers need from it."""

    soname: str
    #: the libraries whose DT_NEEDED names it (paths)
    needed_by: tuple[str, ...]
    #: symbol versions (non-weak) the consumers need from it
    versions: tuple[str, ...] = ()
    #: the consumers' ELF class (32/64) and machine (EM_X86_64)
    elf_class: int = 64
    machine: str = "EM_X86_64"


@record(frozen=True, kw_only=True)
class SearchDir:
    path: str
    #: where it came from: "search path", "package FILE", "likely place"
    origin: str
    #: given by the user: its absence is reported
    explicit: bool = True


@record(frozen=True, kw_only=True)
class DirProblem:
    path: str
    origin: str
    message: str


@record(frozen=True, kw_only=True)
class Candidate:
    """A file looked at for a soname, and the verdict."""

    soname: str
    #: the path in the search dir
    path: str
    #: the file it really is (symlinks followed)
    real: str
    origin: str
    accepted: bool
    reason: str | None = None
    #: the version nodes it defines
    defines: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): its version nodes (`defines`) stay out of the evidence
        return {
            "soname": self.soname,
            "path": self.path,
            "real": self.real,
            "origin": self.origin,
            "accepted": self.accepted,
            "reason": self.reason,
        }


@record(kw_only=True)
class Search:
    """Everything one search found: candidates per soname in search order, and bad places."""

    dirs: list[SearchDir] = field(default_factory=list)
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    problems: list[DirProblem] = field(default_factory=list)

    def accepted(self, soname: str) -> list[Candidate]:
        return [c for c in self.candidates.get(soname, []) if c.accepted]


def likely_places(ctx: Context) -> list[SearchDir]:
    """The bounded set of places documented in docs/overlay.md, those that exist."""
    out: list[str] = []
    conda = ctx.getenv("CONDA_PREFIX")
    if conda and conda.startswith("/"):
        out.append(f"{conda.rstrip('/')}/lib")
    home = ctx.getenv("HOME")
    if home and home.startswith("/"):
        out.append(f"{home.rstrip('/')}/.local/lib")
    try:
        opt = tree.names(ctx, "/opt")
    except OSError:
        opt = []
    opt = [n for n in opt if n[:1] != "." and files.is_dir(ctx.resolve(f"/opt/{n}/lib"))]
    opt = opt[:MAX_OPT_DIRS]
    out.extend(f"/opt/{name}/lib" for name in opt)
    return [
        SearchDir(path=p, origin="likely place", explicit=False) for p in out if _is_dir(ctx, p)
    ]


def _is_dir(ctx: Context, path: str) -> bool:
    """A likely place that this user cannot even examine (~/.local/lib under a 0700 home of
    someone else's) is one that is not there for them."""
    try:
        return ctx.under(path).is_dir()
    except OSError:
        return False


def user_dirs(ctx: Context) -> list[SearchDir]:
    out = []
    for p in ctx.options.search_paths:
        text = str(p)
        if not text.startswith("/"):
            text = str(Path(ctx.cwd) / text)
        out.append(SearchDir(path=os.path.normpath(text), origin="search path"))
    return out


def _names_for(listing: Sequence[str], soname: str) -> list[str]:
    """Files in a dir that may supply `soname`: the exact name first, then soname.* names."""
    exact = [n for n in listing if n == soname]
    more = sorted(n for n in listing if n.startswith(soname + "."))
    return (exact + more)[:MAX_FILES_PER_SONAME]


def evaluate(ctx: Context, path: str, need: Need, origin: str) -> Candidate:
    """The verdict on one file as a supplier of `need.soname`."""
    host = ctx.under(path)

    def reject(reason: str, real: str = path, defines: tuple[str, ...] = ()) -> Candidate:
        return Candidate(
            soname=need.soname,
            path=path,
            real=real,
            origin=origin,
            accepted=False,
            reason=reason,
            defines=defines,
        )

    if host.is_symlink() and not host.exists():
        return reject(f"a broken symbolic link (to {host.readlink()})")
    real = str(ctx.resolve(path))
    # on the live machine the path as given, so every symbolic link on the way is judged too;
    # inside another root, the links were followed there and the file is what is left
    unsafe = trust.untrusted(str(host) if ctx.live else real)
    if unsafe:
        return reject(unsafe, real)
    info = read_elf(ctx, path)
    defect = diagnose(ctx, path, need.soname, need.machine)
    if defect is not None and defect.kind == "truncated" and defect.effect != "none":
        return reject(f"a truncated ELF file, {defect.cut()}", real)
    if isinstance(info, ElfError):
        words = {
            "not_elf": "not an ELF file",
            "truncated": "a truncated ELF file",
            "malformed": "a malformed ELF file",
            "unreadable": "unreadable",
            "directory": "a directory",
            "missing": "missing",
        }
        return reject(f"{words.get(info.kind, info.kind)} ({info.message})", real)
    if info.elf_class != need.elf_class:
        return reject(f"{info.bits}, but {need.needed_by[0]} is ELFCLASS{need.elf_class}", real)
    if info.machine != need.machine:
        return reject(f"built for {info.machine}, the consumers for {need.machine}", real)
    if info.soname != need.soname:
        has = f"DT_SONAME {info.soname}" if info.soname else "no DT_SONAME"
        return reject(
            f"has {has}, not {need.soname}: a renamed library has another ABI", real, info.verdef
        )
    missing = [v for v in need.versions if v not in info.verdef]
    if missing:
        defines = ", ".join(info.verdef[:6]) or "no symbol versions"
        return reject(
            f"lacks symbol version {', '.join(missing)} that {need.needed_by[0]} needs "
            f"(it defines {defines})",
            real,
            info.verdef,
        )
    if defect is not None and defect.kind == "noexec":
        return reject(
            f"on {defect.mount}, mounted noexec: ld.so cannot map its code (dlopen would fail "
            f'with "{need.soname}: {MAP_FAILED}"); remount it with exec '
            f"(`sudo mount -o remount,exec {defect.mount}`) or copy the file elsewhere",
            real,
        )
    return Candidate(
        soname=need.soname,
        path=path,
        real=real,
        origin=origin,
        accepted=True,
        defines=info.verdef,
    )


def search(ctx: Context, needs: Iterable[Need], dirs: Sequence[SearchDir]) -> Search:
    """Look for every need in every dir, in order; note dirs that cannot be searched."""
    result = Search(dirs=list(dirs))
    needs = list(needs)
    for need in needs:
        result.candidates.setdefault(need.soname, [])
    for d in dirs:
        host = ctx.under(d.path)
        try:
            listing = sorted(p.name for p in host.iterdir())
        except FileNotFoundError:
            if d.explicit:
                result.problems.append(
                    DirProblem(path=d.path, origin=d.origin, message="does not exist")
                )
            continue
        except NotADirectoryError:
            result.problems.append(
                DirProblem(path=d.path, origin=d.origin, message="is not a directory")
            )
            continue
        except OSError as exc:
            result.problems.append(
                DirProblem(
                    path=d.path,
                    origin=d.origin,
                    message=f"cannot be read ({exc.strerror or exc})",
                )
            )
            continue
        for need in needs:
            seen = {c.real for c in result.candidates[need.soname]}
            for name in _names_for(listing, need.soname):
                path = f"{d.path.rstrip('/')}/{name}"
                if str(ctx.resolve(path)) in seen:
                    continue  # the same file under another name (soname -> soname.0 link)
                cand = evaluate(ctx, path, need, d.origin)
                seen.add(cand.real)
                result.candidates[need.soname].append(cand)
    return result
