"""Where the loader looks for manifests, and what it finds there (read_data_files_in_search_paths).

Each search entry and each manifest file carries its origin: the variable (or compiled-in default)
it came from. Paths are the loader's own strings; every file system access goes through
`ctx.under` (through rootpath.host_path), so `--root` works.
"""

from __future__ import annotations

import os

from vkdoctor.loader.rootpath import host_path
from vkdoctor.model.context import Context
from vkdoctor.model.record import record

DRIVERS = "vulkan/icd.d"
IMPLICIT_LAYERS = "vulkan/implicit_layer.d"
EXPLICIT_LAYERS = "vulkan/explicit_layer.d"

#: compile-time defaults of the Debian/upstream Linux build
FALLBACK_CONFIG_DIRS = "/etc/xdg"
FALLBACK_DATA_DIRS = "/usr/local/share:/usr/share"
SYSCONFDIR = "/etc"

#: read with secure_getenv: ignored when the process runs with AT_SECURE
SECURE_VARIABLES = (
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_HOME",
    "XDG_DATA_DIRS",
    "HOME",
    "VK_DRIVER_FILES",
    "VK_ICD_FILENAMES",
    "VK_ADD_DRIVER_FILES",
    "VK_LOADER_DRIVERS_SELECT",
    "VK_LOADER_DRIVERS_DISABLE",
    "VK_LOADER_LAYERS_ENABLE",
    "VK_LOADER_LAYERS_DISABLE",
    "VK_LAYER_PATH",
    "VK_ADD_LAYER_PATH",
    "VK_IMPLICIT_LAYER_PATH",
    "VK_ADD_IMPLICIT_LAYER_PATH",
)


def secure_getenv(ctx: Context, name: str) -> str | None:
    """The loader's view of a secure variable: absent for an elevated process."""
    if ctx.elevated and name in SECURE_VARIABLES:
        return None
    return ctx.getenv(name)


@record(frozen=True, kw_only=True)
class SearchEntry:
    """One element of the loader's search path, exactly as printed under 'In following locations'."""

    path: str
    #: the variable or default it came from, e.g. "XDG_DATA_DIRS", "default XDG_DATA_DIRS"
    origin: str
    #: True when the loader treats it as one manifest file (it ends in .json), else a directory
    is_file: bool


@record(frozen=True, kw_only=True)
class SearchPlan:
    entries: tuple[SearchEntry, ...]
    #: which override variable replaced the default list, if any ("VK_DRIVER_FILES"...)
    override: str | None = None
    #: the raw override value (may be "")
    override_value: str | None = None
    #: variables that were set but not used, with why
    ignored: tuple[tuple[str, str], ...] = ()


def _is_json(text: str) -> bool:
    return len(text) >= 5 and text.endswith(".json")


def _elements(value: str) -> list[str]:
    return [e for e in value.split(":") if e]


def _with_suffix(element: str, suffix: str | None) -> str:
    if suffix is None or _is_json(element):
        return element
    return element + ("" if element.endswith("/") else "/") + suffix


def _home_dir(ctx: Context, var: str, tail: str) -> tuple[str, str] | None:
    value = secure_getenv(ctx, var)
    if value:
        return value, var
    home = secure_getenv(ctx, "HOME")
    if home is None:
        return None
    return home + tail, f"HOME ({var} unset: $HOME{tail})"


def _default_list(ctx: Context) -> list[tuple[str, str]]:
    """(element, origin) before the suffix is added, in the loader's order."""
    out: list[tuple[str, str]] = []
    config_home = _home_dir(ctx, "XDG_CONFIG_HOME", "/.config")
    if config_home:
        out += [(e, config_home[1]) for e in _elements(config_home[0])]
    config_dirs = secure_getenv(ctx, "XDG_CONFIG_DIRS")
    if config_dirs:
        out += [(e, "XDG_CONFIG_DIRS") for e in _elements(config_dirs)]
    else:
        out += [(e, "default XDG_CONFIG_DIRS") for e in _elements(FALLBACK_CONFIG_DIRS)]
    out.append((SYSCONFDIR, "SYSCONFDIR"))
    data_home = _home_dir(ctx, "XDG_DATA_HOME", "/.local/share")
    if data_home:
        out += [(e, data_home[1]) for e in _elements(data_home[0])]
    data_dirs = secure_getenv(ctx, "XDG_DATA_DIRS")
    if data_dirs:
        out += [(e, "XDG_DATA_DIRS") for e in _elements(data_dirs)]
    else:
        out += [(e, "default XDG_DATA_DIRS") for e in _elements(FALLBACK_DATA_DIRS)]
    return out


def _dedup(entries: list[SearchEntry]) -> tuple[SearchEntry, ...]:
    seen: set[str] = set()
    out = []
    for e in entries:
        if e.path and e.path not in seen:
            seen.add(e.path)
            out.append(e)
    return tuple(out)


def driver_plan(ctx: Context) -> SearchPlan:
    """The driver search list: VK_DRIVER_FILES, else VK_ICD_FILENAMES, else VK_ADD_DRIVER_FILES + defaults."""
    ignored: list[tuple[str, str]] = []
    if ctx.elevated:
        for var in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"):
            if ctx.getenv(var) is not None:
                ignored.append((var, "ignored: the process runs elevated (setuid/setgid)"))
    override_var = None
    override = secure_getenv(ctx, "VK_DRIVER_FILES")
    if override is not None:
        override_var = "VK_DRIVER_FILES"
        if secure_getenv(ctx, "VK_ICD_FILENAMES") is not None:
            ignored.append(("VK_ICD_FILENAMES", "ignored: VK_DRIVER_FILES is set and wins"))
    else:
        override = secure_getenv(ctx, "VK_ICD_FILENAMES")
        if override is not None:
            override_var = "VK_ICD_FILENAMES"
    if override is not None and override_var is not None:
        if secure_getenv(ctx, "VK_ADD_DRIVER_FILES") is not None:
            ignored.append(("VK_ADD_DRIVER_FILES", f"ignored: {override_var} replaces the search"))
        entries = [
            SearchEntry(path=e, origin=override_var, is_file=_is_json(e))
            for e in _elements(override)
        ]
        return SearchPlan(
            entries=_dedup(entries),
            override=override_var,
            override_value=override,
            ignored=tuple(ignored),
        )
    entries = []
    additional = secure_getenv(ctx, "VK_ADD_DRIVER_FILES")
    if additional is not None:
        entries += [
            SearchEntry(path=e, origin="VK_ADD_DRIVER_FILES", is_file=_is_json(e))
            for e in _elements(additional)
        ]
    entries += _standard_entries(ctx, DRIVERS)
    return SearchPlan(entries=_dedup(entries), ignored=tuple(ignored))


def _standard_entries(ctx: Context, suffix: str) -> list[SearchEntry]:
    out = []
    for element, origin in _default_list(ctx):
        path = _with_suffix(element, suffix)
        out.append(SearchEntry(path=path, origin=origin, is_file=_is_json(element)))
    return out


def implicit_layer_plan(ctx: Context) -> SearchPlan:
    """Implicit layers: on loaders 1.3.296 and later VK_IMPLICIT_LAYER_PATH replaces the
    standard list and VK_ADD_IMPLICIT_LAYER_PATH comes first; older loaders read neither."""
    from vkdoctor.loader.version import IMPLICIT_LAYER_PATH_FROM, loader_version

    loader = ctx.fact(loader_version)
    if loader.reads_implicit_layer_path:
        return _layer_plan(
            ctx, IMPLICIT_LAYERS, "VK_IMPLICIT_LAYER_PATH", "VK_ADD_IMPLICIT_LAYER_PATH"
        )
    since = ".".join(map(str, IMPLICIT_LAYER_PATH_FROM))
    ignored = tuple(
        (var, f"ignored: loader {loader.text} does not read it (loaders {since} and later do)")
        for var in ("VK_IMPLICIT_LAYER_PATH", "VK_ADD_IMPLICIT_LAYER_PATH")
        if secure_getenv(ctx, var) is not None
    )
    return SearchPlan(entries=_dedup(_standard_entries(ctx, IMPLICIT_LAYERS)), ignored=ignored)


def explicit_layer_plan(ctx: Context) -> SearchPlan:
    """Explicit layers: VK_LAYER_PATH replaces the standard list, VK_ADD_LAYER_PATH comes first."""
    return _layer_plan(ctx, EXPLICIT_LAYERS, "VK_LAYER_PATH", "VK_ADD_LAYER_PATH")


def _layer_plan(ctx: Context, suffix: str, override_var: str, add_var: str) -> SearchPlan:
    """The loader's layer search: `override_var` (its elements as they are) replaces the
    standard list, else `add_var`'s elements come before it; read with secure_getenv."""
    ignored: list[tuple[str, str]] = []
    if ctx.elevated:
        for var in (override_var, add_var):
            if ctx.getenv(var) is not None:
                ignored.append((var, "ignored: the process runs elevated (setuid/setgid)"))
    override = secure_getenv(ctx, override_var)
    if override is not None:
        if secure_getenv(ctx, add_var) is not None:
            ignored.append((add_var, f"ignored: {override_var} replaces the search"))
        entries = [
            SearchEntry(path=e, origin=override_var, is_file=_is_json(e))
            for e in _elements(override)
        ]
        return SearchPlan(
            entries=_dedup(entries),
            override=override_var,
            override_value=override,
            ignored=tuple(ignored),
        )
    entries = []
    additional = secure_getenv(ctx, add_var)
    if additional is not None:
        entries += [
            SearchEntry(path=e, origin=add_var, is_file=_is_json(e)) for e in _elements(additional)
        ]
    entries += _standard_entries(ctx, suffix)
    return SearchPlan(entries=_dedup(entries), ignored=tuple(ignored))


def override_layer_plan(paths: tuple[str, ...], manifest: str) -> SearchPlan:
    """Explicit layers while the override layer that vkconfig writes has override_paths: loader
    1.3.239 searches those alone, as it would VK_LAYER_PATH (which, like VK_ADD_LAYER_PATH and
    the standard list, is then ignored)."""
    value = ":".join(paths)
    origin = f"override_paths of {manifest}"
    entries = [SearchEntry(path=e, origin=origin, is_file=_is_json(e)) for e in _elements(value)]
    return SearchPlan(entries=_dedup(entries), override="override_paths", override_value=value)


@record(frozen=True, kw_only=True)
class ManifestFile:
    """One file the loader lists under 'Found the following files', in its order."""

    #: the path string as the loader holds it (may be relative, or a bare name for a dangling link)
    path: str
    #: the search entry it came from
    entry: SearchEntry

    @property
    def origin(self) -> str:
        return self.entry.origin


@record(frozen=True, kw_only=True)
class DirProblem:
    """A search directory that could not be listed, for the reader (the loader says nothing)."""

    entry: SearchEntry
    problem: str  # "missing", "not-a-directory", "unreadable", "link-loop"
    detail: str


def _exists(ctx: Context, path: str) -> bool:
    """access(path, F_OK): follows links, so a dangling link does not exist."""
    try:
        host_path(ctx, path).stat()
    except (OSError, ValueError):
        return False
    return True


def scan(ctx: Context, plan: SearchPlan) -> tuple[tuple[ManifestFile, ...], tuple[DirProblem, ...]]:
    """add_data_files: files in entry order, each directory in raw readdir order, not sorted."""
    files: list[ManifestFile] = []
    problems: list[DirProblem] = []
    for entry in plan.entries:
        if entry.is_file:
            files.append(ManifestFile(path=entry.path, entry=entry))
            continue
        host = host_path(ctx, entry.path)
        try:
            with os.scandir(host) as it:
                names = [d.name for d in it]
        except FileNotFoundError:
            problems.append(DirProblem(entry=entry, problem="missing", detail="does not exist"))
            continue
        except NotADirectoryError:
            problems.append(
                DirProblem(entry=entry, problem="not-a-directory", detail="not a directory")
            )
            continue
        except PermissionError as exc:
            problems.append(
                DirProblem(entry=entry, problem="unreadable", detail=exc.strerror or "denied")
            )
            continue
        except OSError as exc:
            problems.append(
                DirProblem(entry=entry, problem="unreadable", detail=exc.strerror or str(exc))
            )
            continue
        for name in names:
            full = entry.path + "/" + name
            if not _is_json(full):
                continue
            # loader_get_fullpath keeps the directory only when access() succeeds
            files.append(ManifestFile(path=full if _exists(ctx, full) else name, entry=entry))
    return tuple(files), tuple(problems)
