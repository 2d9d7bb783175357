"""VKD: driver (ICD) manifests, found, read and filtered exactly as the Vulkan loader does."""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.loader import icd as I
from vkdoctor.loader.fields import process_bits
from vkdoctor.loader.icd import Driver, DriverScan
from vkdoctor.loader.known import known_driver
from vkdoctor.model import Finding, Remedy, Severity, tree
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace


def install_drivers(ctx: Context) -> Remedy:
    """How to get Mesa's Vulkan drivers: installed, or reinstalled when the package is there but
    its files were deleted."""
    from vkdoctor.packages import commands
    from vkdoctor.packages.owner import installed_family

    again = installed_family(ctx, "mesa-vulkan")
    if again is not None:
        name = commands.PACKAGES["mesa-vulkan"][again]
        return Remedy(commands=(commands.reinstall(again, name),), needs_root=True)
    family = commands.NATIVE.get(facts.distro_family(ctx) or "")
    if family is not None:
        return Remedy(
            commands=(commands.install_for(family, "mesa-vulkan"),),
            needs_root=True,
            # Arch packages lavapipe alone
            text="(CPU, lavapipe; GPUs: vulkan-radeon, vulkan-intel, nvidia-utils)"
            if family == "pacman"
            else "",
        )
    names = commands.PACKAGES["mesa-vulkan"]
    return Remedy(
        text="install your distribution's Mesa Vulkan drivers package (Debian: "
        f"{names['dpkg']}, Arch: {names['pacman']}, Fedora: {names['rpm']})"
    )


def install_command(ctx: Context) -> str:
    """`install_drivers` as a sentence quotes it."""
    return install_drivers(ctx).shown()


#: variables that replace the loader's driver search path, or narrow what it loads
_HIDING = (
    "VK_DRIVER_FILES",
    "VK_ICD_FILENAMES",
    "VK_LOADER_DRIVERS_SELECT",
    "VK_LOADER_DRIVERS_DISABLE",
)


def hidden_drivers(ctx: Context) -> Remedy | None:
    """The fix when installed drivers are hidden from the loader by environment variables
    (VK_LOADER_DRIVERS_DISABLE/SELECT filter them out, VK_DRIVER_FILES replaces the search
    path): "unset X" comes before any "install a driver"; None when nothing is hidden."""
    scan = facts.driver_scan(ctx)
    filtered = [d for d in scan.drivers if d.outcome in (I.FILTER_DISABLED, I.FILTER_NOT_SELECTED)]
    if filtered:
        names = ", ".join(d.basename for d in filtered)
        variables = sorted(
            {
                "VK_LOADER_DRIVERS_DISABLE"
                if d.outcome == I.FILTER_DISABLED
                else "VK_LOADER_DRIVERS_SELECT"
                for d in filtered
            }
        )
        shown = " and ".join(f"{v}={ctx.env.get(v, '')}" for v in variables)
        return Remedy(
            commands=(f"unset {' '.join(variables)}",),
            text=f"({shown} filters out the installed {names}), or change it to keep the driver "
            "you need",
        )
    if scan.plan.override is None:
        return None
    default = replace(ctx, env={k: v for k, v in ctx.env.items() if k not in _HIDING}, _facts={})
    usable = [d for d in facts.driver_scan(default).drivers if d.outcome == I.LOADS]
    if not usable:
        return None
    names = ", ".join(d.basename for d in usable)
    return Remedy(
        commands=(f"unset {scan.plan.override}",),
        text=f"(it replaces the loader's search, which finds {names}), or point it at the "
        "manifest of the driver you need",
    )


def _named_by_a_variable(d: Driver) -> bool:
    """The manifest is a file entry of VK_DRIVER_FILES, VK_ICD_FILENAMES or VK_ADD_DRIVER_FILES."""
    return d.entry == d.manifest and d.origin.startswith("VK_")


def stale_manifest_remedy(ctx: Context, manifest: str) -> Remedy:
    from vkdoctor.checks.libraries import stale_manifest_remedy as remedy

    return remedy(ctx, manifest)


def describe(d: Driver) -> str:
    kind = known_driver(d.library)
    return f"{d.basename} -> {d.library}" + (f" ({kind})" if kind else "")


def _ev(d: Driver, scan: DriverScan) -> dict[str, object]:
    verdict, _ = I.verdict(d, scan)
    return {
        "manifest": d.manifest,
        "origin": d.origin,
        "search_entry": d.entry,
        "outcome": d.outcome,
        "verdict": verdict,
        "library_path": d.library_path,
        "library": d.library,
        **d.evidence,
    }


def _override_remedy(override: str, what: str, example: str | None) -> Remedy:
    """The fix for a driver-list variable that leaves no usable driver."""
    if override == "VK_ICD_FILENAMES":
        # the old name (VKE004): the example uses the one that replaces it
        return Remedy(
            commands=("unset VK_ICD_FILENAMES",),
            text=f"(it replaces the driver search path), or name {what} in its current name "
            f"instead: unset VK_ICD_FILENAMES; export VK_DRIVER_FILES={example or 'MANIFEST'}",
        )
    return Remedy(
        commands=(f"unset {override}",),
        text=f"(it replaces the driver search path), or point it at {what}"
        + (f", for example {override}={example}" if example else ""),
    )


class DriversFound(Check):
    """At least one Vulkan driver that the loader will try (dlopen).

    The loader lists driver manifests (ICD JSON files) in its search directories, reads each, and
    dlopens the library it names. Whether that library then loads is ld.so's question (VKL001 to
    VKL003 predict it, VKT001 tries it for real). If no manifest survives, every Vulkan
    application fails with
    VK_ERROR_INCOMPATIBLE_DRIVER ("Found no drivers!"). Fix by installing a driver package; on a
    machine without a GPU, Mesa's lavapipe is the CPU driver.
    """

    code = "VKD001"
    family = "drivers"
    title = "Vulkan drivers the loader will try"
    # with no driver left because XDG_DATA_DIRS or XDG_CONFIG_DIRS hides the system's
    # directories, VKD002's warning about that variable is the same cause and fix
    # ... and with no driver at all, the probe's missing adapter is this failure's consequence
    explains = ("VKD002", "VKR001")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        if symptom.code == "VKR001":
            return symptom.evidence.get("status") == "no-adapter"
        return symptom.evidence.get("directory") in cause.evidence.get("hidden", ())

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.driver_scan(ctx)
        loads = [d for d in scan.drivers if d.outcome == I.LOADS]
        evidence = {
            "loader_version": scan.loader.text,
            "search_path": [{"path": e.path, "origin": e.origin} for e in scan.plan.entries],
            "drivers": [_ev(d, scan) for d in scan.drivers],
        }
        if scan.aborted_by is not None:
            yield self.info(
                f"Drivers are not reached: {scan.aborted_by.manifest} stops the loader first",
                scan.aborted_by.reason + " (see VKD003).",
                **evidence,
            )
            return
        if loads:
            lines = "\n".join(f"{i + 1}. {describe(d)}" for i, d in enumerate(loads))
            names = ", ".join(d.basename for d in loads)
            yield self.ok(
                f"{len(loads)} driver{'s' if len(loads) != 1 else ''} the loader will try: {names}",
                f"In the loader's order (loader {scan.loader.text}):\n{lines}\n"
                "Whether each library loads: VKL001-VKL003 (ld.so's view), VKT001 (for real).",
                **evidence,
            )
            return
        if not scan.drivers:
            where = ", ".join(e.path for e in scan.plan.entries) or "(an empty search path)"
            message = f"The loader finds no driver manifest. It searches: {where}."
            if scan.plan.override is not None:
                message += (
                    f" {scan.plan.override}={scan.plan.override_value!r} replaces the whole "
                    "search path"
                    + (" with nothing." if not scan.plan.entries else ", and holds none.")
                )
        else:
            # beside a working driver a skipped one is harmless; with none left, it is the cause
            skipped = "\n".join(f"- {d.reason.removesuffix(' (harmless)')}" for d in scan.drivers)
            message = f"Every driver manifest is skipped:\n{skipped}"
        filtered = {I.FILTER_DISABLED, I.FILTER_NOT_SELECTED}
        other_arch = {I.WRONG_CLASS, I.ARCH_MISMATCH}
        if scan.drivers and any(d.outcome in filtered for d in scan.drivers):
            # a filter dropped a manifest the loader could use: the filter is the cause, even
            # beside an override (which then names a good manifest)
            filters = ("VK_LOADER_DRIVERS_SELECT", "VK_LOADER_DRIVERS_DISABLE")
            remedy = Remedy(
                commands=("unset " + " ".join(v for v in filters if ctx.env.get(v) is not None),)
            )
        elif scan.plan.override is not None:
            if not scan.drivers:
                what = "an existing driver manifest"
            elif all(d.outcome in other_arch for d in scan.drivers):
                what = f"a {process_bits(ctx.machine)}-bit driver's manifest"
            else:
                what = "a driver manifest the loader can use (why each one it names is skipped is above)"
            example = _installed_manifest(ctx, exclude={d.manifest for d in scan.drivers})
            remedy = _override_remedy(scan.plan.override, what, example)
        elif hidden := hidden_system_manifests(ctx, scan):
            remedy = _hidden_remedy(hidden, ctx)
            evidence["hidden"] = [d for d, *_ in hidden]
            message += (
                ("\n" if "\n" in message else " ")
                + "; ".join(
                    f"{n} manifest(s) in {d} are not searched because {v} is set"
                    for d, v, _, n in hidden
                )
                + "."
            )
        elif scan.drivers:
            remedy = Remedy(
                text="Fix the skipped manifests as their own findings say (VKD003 syntax, VKD004 "
                f"content, VKD005 library), or put the packaged ones back: {install_command(ctx)}"
            )
        elif closed := [e.path for e in scan.plan.entries if _unreadable(ctx, e.path)]:
            # a directory this user cannot list holds manifests the loader never sees
            them = "them" if len(closed) > 1 else "it"
            remedy = Remedy(
                commands=(f"chmod a+rx {' '.join(map(shlex.quote, closed))}",),
                text=f"(this user cannot read {them})",
            )
        else:
            remedy = install_drivers(ctx)
            if any("reinstall" in c for c in remedy.commands):
                why = "(the package is installed, but its driver manifests are gone)"
                remedy = replace(remedy, text=why)
        yield self.fail(
            "No Vulkan driver will load: every application gets VK_ERROR_INCOMPATIBLE_DRIVER",
            message,
            remedy=remedy,
            **evidence,
        )


def _unreadable(ctx: Context, path: str) -> bool:
    """`path` exists, and this process may not read it (a directory: list and enter it)."""
    host = ctx.under(path)
    try:
        is_dir = host.is_dir()
        if not is_dir and not host.exists():
            return False
    except OSError:
        return False
    return not os.access(host, os.R_OK | (os.X_OK if is_dir else 0))


def _installed_manifest(ctx: Context, exclude: set[str]) -> str | None:
    """A driver manifest, other than `exclude`, that the loader would load without the
    variables that replace or filter its search (lavapipe's first: it works on any machine)."""
    env = {k: v for k, v in ctx.env.items() if k not in _HIDING}
    # a Context of its own: the facts of this run are for the environment as it is
    plain = Context(
        root=ctx.root,
        env=env,
        elevated=ctx.elevated,
        machine=ctx.machine,
        cwd=ctx.cwd,
        options=ctx.options,
        store=ctx.store,
    )
    found = [
        d.manifest
        for d in facts.driver_scan(plain).drivers
        if d.outcome == I.LOADS and d.manifest not in exclude
    ]
    return next((f for f in found if "lvp_icd" in f), found[0] if found else None)


#: where the distributions install driver manifests, and the variable whose default holds each
_SYSTEM_MANIFEST_DIRS = (
    ("/usr/share/vulkan/icd.d", "XDG_DATA_DIRS", "/usr/local/share:/usr/share"),
    ("/usr/local/share/vulkan/icd.d", "XDG_DATA_DIRS", "/usr/local/share:/usr/share"),
    ("/etc/xdg/vulkan/icd.d", "XDG_CONFIG_DIRS", "/etc/xdg"),
)


def hidden_system_manifests(ctx: Context, scan: DriverScan) -> list[tuple[str, str, str, int]]:
    """System manifest directories that hold drivers but are not searched because an XDG
    variable replaced its default: (directory, variable, default, number of manifests)."""
    if scan.plan.override is not None or ctx.elevated:
        return []
    searched = {e.path.rstrip("/") for e in scan.plan.entries}
    out = []
    for directory, var, default in _SYSTEM_MANIFEST_DIRS:
        if directory in searched or not ctx.getenv(var):
            continue
        try:
            count = sum(1 for n in tree.names(ctx, directory) if n.endswith(".json"))
        except OSError:
            continue
        if count:
            out.append((directory, var, default, count))
    return out


def _hidden_remedy(hidden: list[tuple[str, str, str, int]], ctx: Context) -> Remedy:
    directory, var, default, _ = hidden[0]
    value = ctx.getenv(var) or ""
    # a relative entry means something else in every directory: the fix keeps absolute ones
    kept = ":".join(e for e in value.split(":") if e.startswith("/"))
    fixed = f"{kept}:{default}" if kept else default
    return Remedy(
        text=f"{var}={value} replaces the default {default}, so the loader no longer searches "
        f"{directory}: unset {var}, or keep the defaults in it (export {var}={fixed})"
    )


class DriverSearchPath(Check):
    """The driver search path, and the variables that replace or extend it.

    VK_DRIVER_FILES (or the older VK_ICD_FILENAMES) replaces the whole search; set but empty, it
    means no drivers at all. VK_ADD_DRIVER_FILES is prepended, and ignored when an override is
    set. Entries are files (ending in .json) or directories; anything else is silently useless.
    A setuid/setgid process ignores all these variables and the XDG ones.
    """

    code = "VKD002"
    family = "drivers"
    title = "Driver search path and override variables"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.driver_scan(ctx)
        plan = scan.plan
        search = [{"path": e.path, "origin": e.origin} for e in plan.entries]
        for var, why in plan.ignored:
            sev = self.warn if var == "VK_ADD_DRIVER_FILES" else self.info
            state, _, reason = why.partition(": ")
            yield sev(f"{var} is {state}", f"{var}={ctx.getenv(var)!r}: {reason or state}.")
        # an override that leaves no driver at all is VKD001's failure, with this very fix: here
        # it is the search path's information
        if plan.override is not None and not plan.entries:
            yield self.info(
                f"{plan.override} is set but empty: the loader looks for no drivers at all",
                f"{plan.override}='' replaces the whole search path with nothing (VKD001).",
                variable=plan.override,
            )
            return
        nothing = plan.override is not None and not scan.drivers
        user_vars = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"}
        found_from = {d.entry for d in scan.drivers}
        problems = {p.entry.path: p for p in scan.dir_problems}
        for e in plan.entries:
            if e.origin not in user_vars or e.path in found_from:
                continue
            if e.is_file:
                continue  # listed as a manifest; VKD004 reports if it cannot be opened
            p = problems.get(e.path)
            detail = p.detail if p else "holds no *.json file"
            hint = (
                " (it does not end in .json, so the loader treats it as a directory)"
                if p is not None and p.problem == "not-a-directory"
                else ""
            )
            # with no driver at all, why each entry gives none is VKD001's detail, not a warning
            yield self.finding(
                Severity.INFO if nothing else Severity.WARN,
                f"{e.origin} entry {e.path} gives no driver manifest",
                f"{e.origin} entry {e.path}: {detail}{hint}.",
                remedy=Remedy(
                    text=f"fix {e.origin} to name existing *.json files or directories holding them"
                ),
                evidence={"entry": e.path, "variable": e.origin},
            )
        for e in plan.entries:
            if not e.path.startswith("/") and e.origin.startswith(("XDG_", "HOME")):
                # the loader takes it as it is: relative to each program's working directory
                var = e.origin.split()[0]
                given = e.path.removesuffix("/vulkan/icd.d")
                yield self.warn(
                    f"{var} has a relative entry: {e.path} depends on the current directory",
                    f"The loader searches {e.path} (from {e.origin}) relative to the working "
                    "directory of each program, so which drivers it finds depends on where the "
                    "program starts, and any directory it starts in can add a driver.",
                    remedy=Remedy(
                        text=f"Use absolute paths in {var} ({given} from {ctx.cwd} is "
                        f"{posixpath.normpath(posixpath.join(str(ctx.cwd), given))})."
                    ),
                    variable=var,
                    entry=e.path,
                )
        for directory, var, default, count in hidden_system_manifests(ctx, scan):
            yield self.warn(
                f"{var} hides {directory}",
                f"{var}={ctx.getenv(var)!r} replaces the default {default}, so the loader does "
                f"not search {directory}, which holds {count} driver manifest(s).",
                remedy=_hidden_remedy([(directory, var, default, count)], ctx),
                variable=var,
                directory=directory,
            )
        if nothing:
            yield self.info(
                f"{plan.override} points at no driver manifest",
                f"{plan.override}={plan.override_value!r} lists no existing manifest, so the "
                "loader finds no drivers (VKD001).",
                variable=plan.override,
            )
        elif ctx.elevated:
            yield self.info(
                "Elevated process: driver and XDG variables are ignored",
                "A setuid/setgid process reads none of VK_DRIVER_FILES, VK_ICD_FILENAMES, "
                "VK_ADD_DRIVER_FILES, VK_LOADER_DRIVERS_*, HOME or XDG_*; the defaults apply.",
                search_path=search,
            )
        else:
            text = "\n".join(
                e.path if e.origin == plan.override else f"{e.path}   ({e.origin})"
                for e in plan.entries
            )
            yield self.info(
                f"{len(plan.entries)} search location{'s' if len(plan.entries) != 1 else ''}"
                + (f", set by {plan.override}" if plan.override else ""),
                text,
                search_path=search,
            )


class DriverManifestSyntax(Check):
    """Driver manifests that the loader cannot parse at all, or that stop it.

    On loaders older than 1.3.268 (Debian 12 has 1.3.239) one manifest with a JSON syntax error
    makes *every* vkCreateInstance fail with VK_ERROR_OUT_OF_HOST_MEMORY, even when a filter
    disables that file. Newer loaders skip the file. A FIFO named *.json makes the loader wait
    forever; some malformed manifests crash loader 1.3.239 outright.
    """

    code = "VKD003"
    family = "drivers"
    title = "Driver manifests the loader cannot parse"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.driver_scan(ctx)
        for d in scan.drivers:
            ev = _ev(d, scan)
            if d.outcome == I.JSON_ERROR:
                running = facts.running_loader(ctx)
                if running.json_error_aborts:
                    yield self.fail(
                        f"{d.manifest} is not valid JSON: every Vulkan application fails",
                        d.reason + ".",
                        remedy=Remedy(
                            text=f"fix or remove {d.manifest} (or upgrade the loader to 1.3.268 or newer)"
                        ),
                        **ev,
                    )
                else:
                    skips = "loaders before 1.3.268 fail on it" if running.version is None else ""
                    yield self.warn(
                        f"{d.manifest} is not valid JSON; {skips or 'the loader skips it'}",
                        d.reason + ".",
                        remedy=Remedy(text=f"fix or remove {d.manifest}"),
                        **ev,
                    )
            elif d.outcome in (I.FIFO_HANGS, I.CRASH):
                yield self.fail(
                    f"{d.manifest} stops every Vulkan application",
                    d.reason + ".",
                    remedy=Remedy(text=f"remove {d.manifest}"),
                    **ev,
                )
            elif d.outcome in (I.TOO_DEEP, I.TOO_LARGE):
                yield self.warn(
                    f"{d.manifest} was not parsed by vkdoctor",
                    d.reason + ".",
                    remedy=Remedy(
                        text=f"check {d.manifest}: a driver manifest is a few hundred bytes"
                    ),
                    **ev,
                )


_CONTENT = {
    I.OPEN_FAILED,
    I.SILENT_SKIP,
    I.SPECIAL_FILE,
    I.NO_FILE_FORMAT,
    I.NO_ICD,
    I.NO_LIBRARY_PATH,
    I.EMPTY_LIBRARY_PATH,
    I.NO_API_VERSION,
    I.API_VARIANT,
}


class DriverManifestContent(Check):
    """Driver manifests the loader reads but skips: missing or wrong fields, unopenable files.

    Required: file_format_version, an "ICD" object, a non-empty library_path and an api_version
    (a 4-part api_version with a non-zero variant is skipped). A dangling symlink or a link loop
    named *.json cannot be opened; an empty file or a directory named *.json is skipped without
    a message. Values of the wrong type are read as garbled text, not rejected.
    """

    code = "VKD004"
    family = "drivers"
    title = "Driver manifests the loader skips"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.driver_scan(ctx)
        for d in scan.drivers:
            ev = _ev(d, scan)
            if d.outcome in _CONTENT:
                if _named_by_a_variable(d) and d.evidence.get("read_problem") == "missing":
                    continue  # VKE005 names the variable's entry that does not exist
                v, _ = I.verdict(d, scan)
                if v == "info":
                    yield self.info(f"{d.listed_as} is skipped", d.reason + ".", **ev)
                else:
                    fix = Remedy(text=f"fix or remove {d.listed_as}")
                    if d.evidence.get("read_problem") == "unreadable":
                        fix = Remedy(
                            text=f"make {d.listed_as} readable for the users who run Vulkan "
                            f"programs (sudo chmod a+r {shlex.quote(d.listed_as)}), or remove it"
                        )
                    yield self.warn(
                        f"{d.listed_as} is skipped by the loader",
                        d.reason + ".",
                        remedy=fix,
                        **ev,
                    )
            elif "library_path_type" in d.evidence and d.dlopened:
                yield self.warn(
                    f"{d.manifest}: library_path is a {d.evidence['library_path_type']}, not a string",
                    f"The loader reads it as {d.library_path!r}. " + d.reason + ".",
                    remedy=Remedy(text=f"fix {d.manifest}"),
                    **ev,
                )
            elif "not_utf8_at" in d.evidence:
                yield self.info(
                    f"{d.manifest} is not UTF-8",
                    f"Byte {d.evidence['not_utf8_at']} is not UTF-8; the loader does not care.",
                    **ev,
                )
            if "unknown_file_format_version" in d.evidence:
                yield self.info(
                    f"{d.manifest}: unknown file_format_version {d.file_format_version}",
                    "The loader knows 1.0.0 and 1.0.1; it uses the manifest anyway.",
                    **ev,
                )


class DriverLibrary(Check):
    """The library a driver manifest names must exist and be loadable.

    library_path is absolute, relative to the manifest's directory (when it contains a '/'), or
    a bare name the dynamic linker searches. A missing or non-ELF library is skipped by the
    loader with "Failed loading library associated with ICD JSON".
    """

    code = "VKD005"
    family = "drivers"
    title = "Manifests whose library file is missing or unusable"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.driver_scan(ctx)
        for d in scan.drivers:
            if d.outcome in (I.LIBRARY_MISSING, I.LIBRARY_UNLOADABLE):
                rule = {
                    "absolute": "an absolute path",
                    "relative": f"relative to {PurePosixPath(d.manifest).parent}",
                    "bare": "a bare name for the dynamic linker",
                }.get(d.library_rule or "", "")
                unreadable = bool(
                    d.library and d.library.startswith("/") and _unreadable(ctx, d.library)
                )
                yield self.warn(
                    f"{d.basename}: library {d.library} cannot be loaded",
                    # (the reason names an absolute path as such already)
                    f"{d.reason}."
                    + (
                        f" library_path {d.library_path!r} is {rule}."
                        if d.library_rule != "absolute"
                        else ""
                    ),
                    # there, but not for this user: its mode is the fix, not a reinstall
                    remedy=Remedy(
                        commands=(f"chmod a+r {shlex.quote(d.library or '')}",),
                        text="(this user cannot read it)",
                    )
                    if unreadable
                    else stale_manifest_remedy(ctx, d.manifest),
                    **_ev(d, scan),
                )


class DriverFilters(Check):
    """Drivers dropped by VK_LOADER_DRIVERS_SELECT / VK_LOADER_DRIVERS_DISABLE.

    Both take comma-separated globs (name, prefix*, *suffix, *substring*, or * for all),
    matched case-insensitively against the manifest's file name (lvp_icd.x86_64.json), not the
    library or the GPU name. DISABLE drops a driver unless SELECT also matches it.
    """

    code = "VKD006"
    family = "drivers"
    title = "Drivers filtered out by environment variables"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.driver_scan(ctx)
        for d in scan.drivers:
            if d.outcome in (I.FILTER_DISABLED, I.FILTER_NOT_SELECTED):
                var = (
                    "VK_LOADER_DRIVERS_DISABLE"
                    if d.outcome == I.FILTER_DISABLED
                    else "VK_LOADER_DRIVERS_SELECT"
                )
                yield self.info(
                    f"{d.basename} filtered out by {var}", d.reason + ".", **_ev(d, scan)
                )


class OtherArchitectureDrivers(Check):
    """Manifests for the other word size (32-bit drivers seen by a 64-bit process).

    Multiarch systems install one manifest per architecture in the same directory; every process
    reads all of them and skips the other architecture's (by library_arch, or when dlopen reports
    a wrong ELF class). This is harmless noise in the loader's log.
    """

    code = "VKD007"
    family = "drivers"
    title = "Drivers for another architecture"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.driver_scan(ctx)
        for d in scan.drivers:
            if d.outcome in (I.ARCH_MISMATCH, I.WRONG_CLASS):
                yield self.info(
                    f"{d.basename} is for another architecture (harmless)",
                    d.reason + ".",
                    **_ev(d, scan),
                )


class PortabilityDrivers(Check):
    """Portability drivers (is_portability_driver: true), e.g. MoltenVK-style layered drivers.

    The loader enumerates them only for applications that enable VK_KHR_portability_enumeration
    and set VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR; other applications do not see them.
    """

    code = "VKD008"
    family = "drivers"
    title = "Portability drivers"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.driver_scan(ctx)
        for d in scan.drivers:
            if d.outcome == I.PORTABILITY:
                yield self.info(
                    f"{d.basename} is a portability driver", d.reason + ".", **_ev(d, scan)
                )


CHECKS: tuple[type[Check], ...] = (
    DriversFound,
    DriverSearchPath,
    DriverManifestSyntax,
    DriverManifestContent,
    DriverLibrary,
    DriverFilters,
    OtherArchitectureDrivers,
    PortabilityDrivers,
)
