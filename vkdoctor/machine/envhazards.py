"""Environment hazards: what the variables themselves do to library and driver discovery.

Pure analysis over ctx.env and files read through ctx.under: no os.environ, no host paths. The
manifest-level facts (which manifests exist, parse, load) are the loader emulation's; this module
is about the variables: their syntax, what they point at, and who else can write there.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from vkdoctor.loader.search import (
    SECURE_VARIABLES,
    SearchEntry,
    driver_plan,
    implicit_layer_plan,
    secure_getenv,
)
from vkdoctor.model import files
from vkdoctor.model.context import Context
from vkdoctor.model.record import record

#: the driver override variables, in the loader's order of precedence
OVERRIDES = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES")
ADDITIVE = "VK_ADD_DRIVER_FILES"

#: read with secure_getenv by the loader, or ignored by ld.so, when the process is elevated
#: (setuid, setgid, file capabilities: AT_SECURE)
#: (HOME too is read with secure_getenv, but it is always set: not worth a finding)
SECURE_LOADER_VARS = (
    *(v for v in SECURE_VARIABLES if v.startswith("VK_")),
    "VK_LAYER_PATH",
    "VK_ADD_LAYER_PATH",
    "VK_IMPLICIT_LAYER_PATH",
    "VK_ADD_IMPLICIT_LAYER_PATH",
    *(v for v in SECURE_VARIABLES if v.startswith("XDG_")),
)
SECURE_LDSO_VARS = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT", "LD_DEBUG_OUTPUT")


def split_list(value: str) -> list[str]:
    """A `:`-separated list, keeping empty entries (they mean something to ld.so)."""
    return value.split(":")


# ---------------------------------------------------------------------------------------------
# LD_LIBRARY_PATH syntax and existence


@record(frozen=True, kw_only=True)
class PathProblem:
    var: str
    #: 0-based position in the list
    index: int
    entry: str
    #: empty, relative, missing, denied (this user may not search it)
    problem: str


def ld_library_path_problems(ctx: Context) -> Iterator[PathProblem]:
    """Empty and relative entries of LD_LIBRARY_PATH, and entries that do not exist."""
    value = ctx.env.get("LD_LIBRARY_PATH")
    if value is None:
        return
    for index, entry in enumerate(split_list(value)):
        if entry == "":
            yield PathProblem(var="LD_LIBRARY_PATH", index=index, entry=entry, problem="empty")
        elif not entry.startswith("/"):
            yield PathProblem(var="LD_LIBRARY_PATH", index=index, entry=entry, problem="relative")
        else:
            try:
                if not stat.S_ISDIR(ctx.under(entry).stat().st_mode):
                    raise FileNotFoundError(entry)
            except PermissionError:
                # ld.so cannot search it either: for this user it holds nothing
                yield PathProblem(var="LD_LIBRARY_PATH", index=index, entry=entry, problem="denied")
            except OSError:
                yield PathProblem(
                    var="LD_LIBRARY_PATH", index=index, entry=entry, problem="missing"
                )


# ---------------------------------------------------------------------------------------------
# Who can write where


@record(frozen=True, kw_only=True)
class Owner:
    uid: int
    gid: int
    user: str
    group: str
    mode: str


@record(frozen=True, kw_only=True)
class WritableByOthers:
    """A directory that decides what gets loaded, which someone else can change."""

    #: why the directory matters: "LD_LIBRARY_PATH entry", "driver manifest directory"...
    purpose: str
    #: the directory as the variable or search list names it
    path: str
    #: the directory that others can write: `path` itself, or the ancestor that controls it
    culprit: str
    exists: bool
    #: world-writable, group-writable by a foreign group, owned by another user
    reasons: tuple[str, ...]
    owner: Owner


@record(frozen=True, kw_only=True)
class Identity:
    """Whose process we reason about: its user and primary group, and how to name ids."""

    uid: int
    gid: int
    live: bool

    def user(self, uid: int) -> str:
        if self.live:
            import pwd

            try:
                return pwd.getpwuid(uid).pw_name
            except KeyError:
                pass
        return f"uid {uid}"

    def group(self, gid: int) -> str:
        if self.live:
            import grp

            try:
                return grp.getgrgid(gid).gr_name
            except KeyError:
                pass
        return f"gid {gid}"


def _others_can_write(
    st_mode: int, st_uid: int, st_gid: int, me: Identity, *, leaf: bool
) -> list[str]:
    """Why others can change this directory. For an ancestor, a sticky bit protects the entries
    below it; for the directory that holds the libraries or manifests it does not, because
    anyone can still add a new file."""
    reasons = []
    sticky = bool(st_mode & stat.S_ISVTX)
    if st_mode & stat.S_IWOTH and (leaf or not sticky):
        reasons.append(
            "world-writable" + (" (the sticky bit does not stop new files)" if sticky else "")
        )
    if st_mode & stat.S_IWGRP and st_gid not in (0, me.gid) and (leaf or not sticky):
        reasons.append(f"group-writable by group {me.group(st_gid)}")
    if st_uid not in (0, me.uid):
        reasons.append(f"owned by {me.user(st_uid)}")
    return reasons


def _read_only(path: Path) -> bool:
    """`path` lies on a filesystem mounted read-only: no mode bit lets anyone write there."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def writable_by_others(
    ctx: Context, path: str, purpose: str, me: Identity
) -> WritableByOthers | None:
    """Whether someone other than root and `me` can change what `path` holds: the directory
    itself (or, when it does not exist, its nearest existing ancestor, where it can be created),
    and every ancestor above it."""
    p = PurePosixPath(path)
    if not p.is_absolute():
        p = PurePosixPath(ctx.cwd) / p
    chain = [p, *p.parents]
    leaf = True
    exists = True
    for candidate in chain:
        try:
            st = ctx.under(candidate).stat()
        except OSError:
            exists = False
            continue
        reasons = _others_can_write(st.st_mode, st.st_uid, st.st_gid, me, leaf=leaf)
        if reasons and _read_only(ctx.under(candidate)):
            reasons = []  # its mode says writable, its mount lets nobody write (a read-only HOME)
        if reasons:
            return WritableByOthers(
                purpose=purpose,
                path=path,
                culprit=str(candidate),
                exists=exists,
                reasons=tuple(reasons),
                owner=Owner(
                    uid=st.st_uid,
                    gid=st.st_gid,
                    user=me.user(st.st_uid),
                    group=me.group(st.st_gid),
                    mode=oct(stat.S_IMODE(st.st_mode)),
                ),
            )
        leaf = False
    return None


def _secure(ctx: Context, name: str) -> str | None:
    """What the loader sees of a variable: nothing of a secure one in an elevated process."""
    if name in SECURE_LOADER_VARS:
        return None if ctx.elevated else secure_getenv(ctx, name)
    return ctx.env.get(name)


def _override_entries(ctx: Context, var: str) -> list[str]:
    return [e for e in split_list(_secure(ctx, var) or "") if e]


def _entry_dir(entry: SearchEntry) -> str:
    return str(PurePosixPath(entry.path).parent) if entry.is_file else entry.path


def manifest_dirs(ctx: Context) -> list[tuple[str, str]]:
    """(directory, purpose) for every place a driver or layer manifest is read from: the loader
    emulation's driver and implicit-layer search lists, and the explicit-layer directories."""
    out: list[tuple[str, str]] = []
    for e in driver_plan(ctx).entries:
        variable = e.origin in (*OVERRIDES, ADDITIVE)
        out.append(
            (_entry_dir(e), f"{e.origin} entry" if variable else "driver manifest directory")
        )
    implicit = implicit_layer_plan(ctx).entries
    out += [(_entry_dir(e), "implicit layer manifest directory") for e in implicit]
    explicit_override = _override_entries(ctx, "VK_LAYER_PATH")
    if explicit_override:
        out += [(e, "VK_LAYER_PATH entry") for e in explicit_override]
    else:
        suffix = "implicit_layer.d"
        out += [
            (e.path[: -len(suffix)] + "explicit_layer.d", "explicit layer manifest directory")
            for e in implicit
            if e.path.endswith(suffix)
        ]
    out += [(e, "VK_ADD_LAYER_PATH entry") for e in _override_entries(ctx, "VK_ADD_LAYER_PATH")]
    return out


def hazards_writable(ctx: Context, me: Identity) -> list[WritableByOthers]:
    """Library and manifest directories that others can write, each directory once."""
    places: list[tuple[str, str]] = []
    if not ctx.elevated:
        places += [
            (e, "LD_LIBRARY_PATH entry")
            for e in split_list(ctx.env.get("LD_LIBRARY_PATH", ""))
            if e.startswith("/")
        ]
    places += manifest_dirs(ctx)
    seen: set[str] = set()
    out = []
    for path, purpose in places:
        if path in seen:
            continue
        seen.add(path)
        found = writable_by_others(ctx, path, purpose, me)
        if found is not None:
            out.append(found)
    return out


# ---------------------------------------------------------------------------------------------
# Driver override variables


def effective_override(ctx: Context) -> str | None:
    """The override variable the loader uses (VK_DRIVER_FILES wins over VK_ICD_FILENAMES; set but
    empty still counts), as the loader emulation decides it."""
    return driver_plan(ctx).override


@record(frozen=True, kw_only=True)
class OverrideEntry:
    var: str
    entry: str
    #: file, directory, missing, not-json
    kind: str
    #: manifests (*.json) a directory entry holds; 1 for a file
    manifests: int


def override_entries(ctx: Context, var: str) -> list[OverrideEntry]:
    """Each entry of an override variable and what it points at (relative: to the cwd)."""
    out = []
    for entry in _override_entries(ctx, var):
        host = ctx.under(entry)
        if files.is_file(host):
            kind, count = "file", 1
        elif files.is_dir(host):
            try:
                count = sum(1 for p in host.iterdir() if p.name.endswith(".json"))
            except OSError:
                count = 0
            kind = "directory"
        else:
            kind, count = "missing", 0
        out.append(OverrideEntry(var=var, entry=entry, kind=kind, manifests=count))
    return out


def set_secure_vars(ctx: Context) -> list[str]:
    """The variables that are set but that an elevated process does not see."""
    return [v for v in (*SECURE_LOADER_VARS, *SECURE_LDSO_VARS) if v in ctx.env]


def installed_layer(ctx: Context, file_name: str) -> str | None:
    """The first implicit layer manifest named `file_name` in the loader's search list."""
    for entry in implicit_layer_plan(ctx).entries:
        if entry.is_file:
            continue
        path = f"{entry.path.rstrip('/')}/{file_name}"
        if files.is_file(ctx.under(path)):
            return path
    return None


def xdg_runtime_dir_problem(ctx: Context) -> str | None:
    """Why libwayland-client will print "XDG_RUNTIME_DIR is invalid or not set", or None."""
    value = ctx.env.get("XDG_RUNTIME_DIR")
    if value is None:
        return "unset"
    if not value.startswith("/"):
        return f"not an absolute path ({value!r})"
    return None


def describe_entries(entries: Sequence[OverrideEntry]) -> str:
    parts = []
    for e in entries:
        if e.kind == "missing":
            parts.append(f"{e.entry} (does not exist)")
        elif e.kind == "directory":
            parts.append(f"{e.entry} (directory, {e.manifests} manifest(s))")
        else:
            parts.append(e.entry)
    return ", ".join(parts)
