"""Driver (ICD) manifests, validated and resolved as loader_icd_scan does (loader 1.3.239 rules).

`driver_scan(ctx)` is the fact every driver check and `vkdoctor drivers` read: the search plan,
the files in the loader's order, and for each the outcome the loader will reach.
"""

from __future__ import annotations

from typing import Any

from vkdoctor.loader import cjson, fileio
from vkdoctor.loader.fields import (
    inspect_library,
    parse_version,
    process_bits,
    resolve_library,
    variant_of,
    version_text,
)
from vkdoctor.loader.filters import Filter, matches, parse_filter
from vkdoctor.loader.rootpath import host_path
from vkdoctor.loader.search import (
    DirProblem,
    ManifestFile,
    SearchPlan,
    driver_plan,
    scan,
    secure_getenv,
)
from vkdoctor.loader.stdlib import bare_stopped_at, find_bare
from vkdoctor.loader.version import LoaderVersion, loader_version
from vkdoctor.model.context import Context
from vkdoctor.model.record import field, record

#: nesting we follow before giving up (the loader's recursive cJSON has no limit)
MAX_DEPTH = cjson.PARSE_CRASH_DEPTH

# Outcomes. The loader dlopens the library only for LOADS, LIBRARY_* and WRONG_CLASS.
LOADS = "loads"
LIBRARY_MISSING = "library-missing"
LIBRARY_UNLOADABLE = "library-unloadable"
WRONG_CLASS = "wrong-elf-class"
OPEN_FAILED = "open-failed"
SILENT_SKIP = "skipped-silently"
FIFO_HANGS = "fifo-hangs"
SPECIAL_FILE = "special-file"
TOO_LARGE = "too-large"
TOO_DEEP = "too-deep"
JSON_ERROR = "json-error"
CRASH = "loader-crash"
NO_FILE_FORMAT = "no-file-format-version"
NO_ICD = "no-icd-object"
NO_LIBRARY_PATH = "no-library-path"
EMPTY_LIBRARY_PATH = "empty-library-path"
NO_API_VERSION = "no-api-version"
API_VARIANT = "api-version-variant"
PORTABILITY = "portability-driver"
ARCH_MISMATCH = "library-arch-mismatch"
FILTER_DISABLED = "filtered-disable"
FILTER_NOT_SELECTED = "filtered-select"
NOT_REACHED = "not-reached"

#: outcomes where the loader calls dlopen on the library
DLOPENED = frozenset({LOADS, LIBRARY_MISSING, LIBRARY_UNLOADABLE, WRONG_CLASS})
#: outcomes that stop the whole scan (vkCreateInstance fails or never returns)
FATAL = frozenset({FIFO_HANGS, CRASH})


@record(frozen=True, kw_only=True)
class Driver:
    """One manifest file the loader lists, and what the loader does with it."""

    manifest: str
    origin: str
    #: the search entry (directory or file) it was found through
    entry: str
    outcome: str
    #: one line, names the file and the cause
    reason: str
    file_format_version: str | None = None
    api_version: str | None = None
    #: library_path as the loader reads it (quotes stripped), None when absent
    library_path: str | None = None
    #: "absolute", "relative" or "bare"
    library_rule: str | None = None
    #: what dlopen gets (absolute or relative path, or bare name)
    library: str | None = None
    library_arch: str | None = None
    is_portability_driver: bool = False
    #: the manifest's file name, what the select/disable filters match
    basename: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def dlopened(self) -> bool:
        return self.outcome in DLOPENED

    @property
    def listed_as(self) -> str:
        """The file in its search directory. `manifest` is a bare name where the loader could
        not resolve a directory entry (a dangling link, a link loop)."""
        if "/" in self.manifest or self.entry == self.manifest:
            return self.manifest
        return f"{self.entry.rstrip('/')}/{self.manifest}"


@record(frozen=True, kw_only=True)
class DriverScan:
    plan: SearchPlan
    drivers: tuple[Driver, ...]
    dir_problems: tuple[DirProblem, ...]
    loader: LoaderVersion
    select: Filter
    disable: Filter
    #: the manifest that makes vkCreateInstance fail for everyone (JSON error on old loaders, crash, hang)
    aborted_by: Driver | None = None

    @property
    def usable(self) -> tuple[Driver, ...]:
        """Drivers that load, when nothing aborts the scan."""
        if self.aborted_by is not None:
            return ()
        return tuple(d for d in self.drivers if d.outcome == LOADS)


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _unresolved_entry(ctx: Context, mf: ManifestFile, detail: str) -> str:
    """The reason for a directory entry the loader could not resolve: it keeps the bare name."""
    full = f"{mf.entry.path.rstrip('/')}/{mf.path}"
    link = fileio.read_manifest(host_path(ctx, full))
    return (
        f"{full} is a {link.detail or 'file that cannot be opened'}: the loader keeps only its "
        f"bare name, {mf.path}, and opens that in the current directory ({ctx.cwd}): "
        f"{detail}; skipped"
    )


def _analyse(
    ctx: Context,
    mf: ManifestFile,
    loader: LoaderVersion,
    select: Filter,
    disable: Filter,
    portability_enumeration: bool,
) -> Driver:
    base: dict[str, Any] = {
        "manifest": mf.path,
        "origin": mf.origin,
        "entry": mf.entry.path,
        "basename": _basename(mf.path),
    }

    def out(outcome: str, reason: str, **kw: Any) -> Driver:
        return Driver(**base, outcome=outcome, reason=reason, **kw)

    got = fileio.read_manifest(host_path(ctx, mf.path))
    if got.data is None:
        problem = got.problem
        if problem in (fileio.MISSING, fileio.UNREADABLE, fileio.LOOP):
            read = {"read_problem": problem}
            if "/" not in mf.path and not mf.entry.is_file:
                return out(OPEN_FAILED, _unresolved_entry(ctx, mf, got.detail), evidence=read)
            return out(
                OPEN_FAILED, f"{mf.path}: cannot be opened ({got.detail}); skipped", evidence=read
            )
        if problem == fileio.DIRECTORY:
            return out(
                SILENT_SKIP,
                f"{mf.path} is a directory; skipped without a message",
                evidence={"read_problem": problem},
            )
        if problem == fileio.EMPTY:
            return out(
                SILENT_SKIP,
                f"{mf.path} is empty (0 bytes); skipped without a message",
                evidence={"read_problem": problem},
            )
        if problem == fileio.FIFO:
            return out(
                FIFO_HANGS,
                f"{mf.path} is a FIFO: the loader opens it and waits for a writer, so every "
                "Vulkan application hangs in vkCreateInstance",
            )
        if problem == fileio.SPECIAL:
            return out(SPECIAL_FILE, f"{mf.path} is {got.detail}, not a manifest")
        return out(
            TOO_LARGE,
            f"{mf.path} is {got.detail}; vkdoctor refuses to parse it (a real manifest is a few hundred bytes)",
        )
    data = got.data
    evidence: dict[str, Any] = {"size": len(data)}
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        evidence["not_utf8_at"] = exc.start
    try:
        root = cjson.parse_for(data, nesting_limit=loader.json_nesting_limit, crash_depth=MAX_DEPTH)
    except cjson.TooDeep as exc:
        return out(
            CRASH,
            f"{mf.path} has {exc}; the loader's recursive JSON parser overflows its stack on it "
            f"(loader 1.3.239, 8 MiB stack: measured to survive {cjson.PARSE_CRASH_DEPTH} levels "
            "and to crash at 175000), and every Vulkan application dies",
            evidence=evidence,
        )
    except cjson.TooMany as exc:
        return out(
            TOO_DEEP,
            f"{mf.path} has {exc}; vkdoctor stopped reading it",
            evidence=evidence,
        )
    except cjson.ParseError as exc:
        evidence["parse_error"] = str(exc)
        why = f"{mf.path} is not valid JSON ({exc}); {loader.json_error_effect()}"
        return out(JSON_ERROR, why, evidence=evidence)
    try:
        return _fields(
            ctx, mf, root, base, evidence, loader, select, disable, portability_enumeration
        )
    except cjson.LoaderHang as exc:
        return out(
            CRASH,
            f"{mf.path}: {exc}; every Vulkan application stalls in vkCreateInstance reading it",
            evidence=evidence,
        )
    except cjson.LoaderCrash as exc:
        return out(
            CRASH,
            f"{mf.path}: {exc}; the loader crashes reading it (every Vulkan application dies)",
            evidence=evidence,
        )


def _fields(
    ctx: Context,
    mf: ManifestFile,
    root: cjson.Node,
    base: dict[str, Any],
    evidence: dict[str, Any],
    loader: LoaderVersion,
    select: Filter,
    disable: Filter,
    portability_enumeration: bool,
) -> Driver:
    """The loader's verdict on one parsed manifest, in the order the loader decides it: its
    fields, what this process skips, the filters, then the library itself."""
    info: dict[str, Any] = dict(base)
    info["evidence"] = evidence
    outcome, reason = (
        _manifest_fields(mf, root, info, evidence, loader)
        or _skipped_by_process(ctx, mf, root, info, loader, portability_enumeration)
        or _filtered(info, select, disable)
        or _library_state(ctx, mf, info, evidence)
    )
    return Driver(**info, outcome=outcome, reason=reason)


def _manifest_fields(
    mf: ManifestFile,
    root: cjson.Node,
    info: dict[str, Any],
    evidence: dict[str, Any],
    loader: LoaderVersion,
) -> tuple[str, str] | None:
    """file_format_version, ICD.library_path and ICD.api_version into `info`; the outcome when
    one is missing or unusable."""
    item = cjson.get(root, "file_format_version", loader.json_lookup)
    if item is None:
        return NO_FILE_FORMAT, f"{mf.path} has no 'file_format_version'; skipped"
    if item.type != cjson.STRING and loader.file_format_version_must_be_string:
        return (
            NO_FILE_FORMAT,
            f"{mf.path}: 'file_format_version' is not a string; {loader.named} skips it",
        )
    ffv_printed = cjson.print_value(item)
    info["file_format_version"] = _text(item.string if item.type == cjson.STRING else ffv_printed)
    ffv = parse_version(ffv_printed)
    if (ffv & 0x1FFFFFFF) >= (1 << 22 | 0 << 12 | 2):
        evidence["unknown_file_format_version"] = version_text(ffv)
    icd = cjson.get(root, "ICD", loader.json_lookup)
    if icd is None:
        return NO_ICD, f"{mf.path} has no 'ICD' object; skipped"
    lib = cjson.get(icd, "library_path", loader.json_lookup)
    if lib is None:
        return NO_LIBRARY_PATH, f"{mf.path} has no 'ICD.library_path'; skipped"
    if lib.type != cjson.STRING:
        evidence["library_path_type"] = lib.type
    library_path = _text(cjson.field_text(lib, stripped=loader.strips_printed_fields))
    info["library_path"] = library_path
    if not library_path:
        return EMPTY_LIBRARY_PATH, f"{mf.path}: 'ICD.library_path' is empty; skipped"
    library, rule = resolve_library(mf.path, library_path)
    info["library"] = library
    info["library_rule"] = rule
    api = cjson.get(icd, "api_version", loader.json_lookup)
    if api is None:
        return NO_API_VERSION, f"{mf.path} has no 'ICD.api_version'; skipped"
    api_v = parse_version(cjson.print_value(api))
    info["api_version"] = _text(cjson.print_value(api)).strip('"')
    if variant_of(api_v):
        return (
            API_VARIANT,
            f"{mf.path}: 'ICD.api_version' {info['api_version']} has a non-zero variant "
            f"({variant_of(api_v)}); skipped",
        )
    return None


def _skipped_by_process(
    ctx: Context,
    mf: ManifestFile,
    root: cjson.Node,
    info: dict[str, Any],
    loader: LoaderVersion,
    portability_enumeration: bool,
) -> tuple[str, str] | None:
    """A portability driver this process does not enumerate, or a library_arch it skips."""
    icd = cjson.get(root, "ICD", loader.json_lookup)
    assert icd is not None  # _manifest_fields checked it
    port = cjson.get(icd, "is_portability_driver", loader.json_lookup)
    info["is_portability_driver"] = port is not None and port.type == cjson.TRUE
    if info["is_portability_driver"] and not portability_enumeration:
        return (
            PORTABILITY,
            f"{mf.path} is a portability driver: enumerated only by applications that enable "
            "VK_KHR_portability_enumeration and set the portability bit",
        )
    arch = cjson.get(icd, "library_arch", loader.json_lookup)
    if arch is None:
        return None
    arch_text = _text(cjson.print_value(arch))
    info["library_arch"] = arch_text.strip('"') if arch.type == cjson.STRING else arch_text
    bits = process_bits(ctx.machine)
    if (arch_text.startswith('"32"') and bits != 32) or (
        arch_text.startswith('"64"') and bits != 64
    ):
        return (
            ARCH_MISMATCH,
            f"{mf.path} is for {info['library_arch']}-bit processes; a {bits}-bit process "
            "skips it before loading (harmless)",
        )
    return None


def _filtered(info: dict[str, Any], select: Filter, disable: Filter) -> tuple[str, str] | None:
    """VK_LOADER_DRIVERS_DISABLE (unless SELECT names it too) and VK_LOADER_DRIVERS_SELECT."""
    if not (select.active or disable.active):
        return None
    name = info["basename"]
    sel = select.active and matches(name, select)
    dis = disable.active and matches(name, disable)
    if dis and not sel:
        return (
            FILTER_DISABLED,
            f'driver "{name}" is disabled by VK_LOADER_DRIVERS_DISABLE={disable.raw}',
        )
    if select.active and not sel:
        return (
            FILTER_NOT_SELECTED,
            f'driver "{name}" is not selected by VK_LOADER_DRIVERS_SELECT={select.raw}',
        )
    return None


def _library_state(
    ctx: Context, mf: ManifestFile, info: dict[str, Any], evidence: dict[str, Any]
) -> tuple[str, str]:
    """The library the manifest names (a bare name found as ld.so would): present, missing,
    of the other class, or unloadable."""
    library, rule = info["library"], info["library_rule"]
    target = library
    if rule == "bare":
        found = find_bare(ctx, library)
        stopped = bare_stopped_at(ctx, library) if found is None else None
        if stopped is not None:
            return (
                LIBRARY_UNLOADABLE,
                f"{mf.path}: library {library!r} is a bare name; ld.so finds {stopped[0]}, "
                f"which it cannot load ({stopped[1]})",
            )
        if found is None:
            return (
                LIBRARY_MISSING,
                f"{mf.path}: library {library!r} is a bare name and is in neither LD_LIBRARY_PATH "
                "nor the standard library directories",
            )
        evidence["library_found"] = found
        target = found
    state = inspect_library(ctx, target)
    evidence["library_state"] = state.state
    if state.state == "ok":
        where = f" (bare name, found as {target})" if rule == "bare" else ""
        return LOADS, f"{mf.path}: library {library} is present{where}"
    if state.state == "missing":
        return (
            LIBRARY_MISSING,
            f"{mf.path}: library {library} ({rule} path) does not exist ({state.detail})",
        )
    if state.state == "wrong-class":
        return (
            WRONG_CLASS,
            f"{mf.path}: library {library} is ELFCLASS{state.elf_class}; dlopen rejects it for a "
            f"{process_bits(ctx.machine)}-bit process (harmless)",
        )
    return LIBRARY_UNLOADABLE, f"{mf.path}: library {library} cannot load ({state.detail})"


def driver_scan(ctx: Context, *, portability_enumeration: bool = False) -> DriverScan:
    """Everything the loader does with driver manifests, short of dlopen itself."""
    loader = ctx.fact(loader_version)
    plan = driver_plan(ctx)
    files, problems = scan(ctx, plan)
    select = parse_filter(
        "VK_LOADER_DRIVERS_SELECT", secure_getenv(ctx, "VK_LOADER_DRIVERS_SELECT")
    )
    disable = parse_filter(
        "VK_LOADER_DRIVERS_DISABLE", secure_getenv(ctx, "VK_LOADER_DRIVERS_DISABLE")
    )
    drivers: list[Driver] = []
    aborted: Driver | None = None
    for mf in files:
        if aborted is not None:
            drivers.append(
                Driver(
                    manifest=mf.path,
                    origin=mf.origin,
                    entry=mf.entry.path,
                    basename=_basename(mf.path),
                    outcome=NOT_REACHED,
                    reason=f"{mf.path} is never read: the scan stops at {aborted.manifest}",
                )
            )
            continue
        d = _analyse(ctx, mf, loader, select, disable, portability_enumeration)
        drivers.append(d)
        if d.outcome in FATAL or (d.outcome == JSON_ERROR and loader.json_error_aborts):
            aborted = d
    return DriverScan(
        plan=plan,
        drivers=tuple(drivers),
        dir_problems=problems,
        loader=loader,
        select=select,
        disable=disable,
        aborted_by=aborted,
    )


_VERDICT = {
    LOADS: "ok",
    LIBRARY_MISSING: "warn",
    LIBRARY_UNLOADABLE: "warn",
    WRONG_CLASS: "info",
    OPEN_FAILED: "warn",
    FIFO_HANGS: "fail",
    SPECIAL_FILE: "warn",
    TOO_LARGE: "warn",
    TOO_DEEP: "warn",
    CRASH: "fail",
    NO_FILE_FORMAT: "warn",
    NO_ICD: "warn",
    NO_LIBRARY_PATH: "warn",
    EMPTY_LIBRARY_PATH: "warn",
    NO_API_VERSION: "warn",
    API_VARIANT: "warn",
    PORTABILITY: "info",
    ARCH_MISMATCH: "info",
    FILTER_DISABLED: "info",
    FILTER_NOT_SELECTED: "info",
    NOT_REACHED: "info",
}


def verdict(d: Driver, scan: DriverScan) -> tuple[str, str]:
    """(ok|info|warn|fail, reason) for one driver, in the context of the whole scan."""
    if d.outcome == JSON_ERROR:
        return ("fail" if scan.loader.json_error_aborts else "warn"), d.reason
    if d.outcome == SILENT_SKIP:
        is_dir = d.evidence.get("read_problem") == fileio.DIRECTORY
        return ("info" if is_dir else "warn"), d.reason
    v = _VERDICT.get(d.outcome, "warn")
    if d.outcome == LOADS and scan.aborted_by is not None:
        return "fail", (
            f"{d.reason}, but vkCreateInstance fails anyway because of {scan.aborted_by.manifest}"
        )
    return v, d.reason


def default_driver_scan(ctx: Context) -> DriverScan:
    """The fact form (one scan per run), for an application that does not enable portability."""
    return driver_scan(ctx)
