"""VKE: environment variables that change what ld.so and the Vulkan loader load."""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Iterable, Mapping

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.machine import envhazards as eh
from vkdoctor.machine import wgpuenv as wgpu_env
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context
from vkdoctor.model.record import asdict


def _identity(ctx: Context) -> eh.Identity:
    return eh.Identity(uid=os.getuid(), gid=os.getgid(), live=ctx.live)


def _empties(positions: list[int]) -> str:
    where = ", ".join(str(i + 1) for i in positions)
    if len(positions) == 1:
        return f"an empty entry (position {where})"
    return f"{len(positions)} empty entries (positions {where})"


class LdLibraryPathSyntax(Check):
    """LD_LIBRARY_PATH has no empty or relative entries.

    ld.so reads an empty entry (a leading or trailing `:`, or `::`) as the current directory, and
    a relative entry relative to whatever directory the process runs in. Either way, which
    library gets loaded depends on where a program is started, and any directory you cd into can
    inject a libvulkan.so.1, a libstdc++.so.6 or a driver dependency.
    """

    code = "VKE001"
    family = "environment"
    title = "Empty or relative LD_LIBRARY_PATH entries"

    def run(self, ctx: Context) -> Iterable[Finding]:
        if ctx.elevated:
            return
        value = ctx.env.get("LD_LIBRARY_PATH", "")
        problems = list(eh.ld_library_path_problems(ctx))
        empty = [p.index for p in problems if p.problem == "empty"]
        if empty:
            kept = ":".join(e for e in eh.split_list(value) if e)
            yield self.warn(
                f"LD_LIBRARY_PATH has {_empties(empty)}",
                f"LD_LIBRARY_PATH={value!r} has {_empties(empty)}; ld.so searches the current "
                "directory for each.",
                remedy=Remedy(
                    commands=(
                        f"export LD_LIBRARY_PATH={shlex.quote(kept)}"
                        if kept
                        else "unset LD_LIBRARY_PATH",
                    )
                ),
                variable="LD_LIBRARY_PATH",
                value=value,
                positions=[i + 1 for i in empty],
                problem="empty",
            )
        for p in problems:
            if p.problem == "relative":
                yield self.warn(
                    f"LD_LIBRARY_PATH has a relative entry {p.entry!r}",
                    f"LD_LIBRARY_PATH entry {p.entry!r} (position {p.index + 1}) is relative: "
                    "ld.so looks for it from the current directory of each process.",
                    remedy=Remedy(
                        text=f"Replace {p.entry} with the absolute path you mean (from "
                        f"{ctx.cwd}: {posixpath.normpath(posixpath.join(str(ctx.cwd), p.entry))})."
                    ),
                    variable=p.var,
                    value=value,
                    index=p.index,
                    entry=p.entry,
                    problem=p.problem,
                )


class LdLibraryPathExists(Check):
    """Every LD_LIBRARY_PATH entry exists.

    A directory on LD_LIBRARY_PATH that does not exist loads nothing. Often it is the trace of a
    workaround that is gone (a private LLVM extracted under /tmp, a removed conda environment),
    and a driver that needed it no longer loads.
    """

    code = "VKE002"
    family = "environment"
    title = "LD_LIBRARY_PATH entries that do not exist"

    def run(self, ctx: Context) -> Iterable[Finding]:
        if ctx.elevated:
            return
        value = ctx.env.get("LD_LIBRARY_PATH", "")
        for p in eh.ld_library_path_problems(ctx):
            if p.problem == "denied":
                yield self.info(
                    f"LD_LIBRARY_PATH entry {p.entry} cannot be searched by this user",
                    f"{p.entry} (LD_LIBRARY_PATH position {p.index + 1}) is not accessible to "
                    f"this user (permission denied): ld.so loads nothing from it for this user. "
                    "If a driver relied on it, that driver's load test says so.",
                    variable=p.var,
                    value=value,
                    index=p.index,
                    entry=p.entry,
                )
            elif p.problem == "missing":
                yield self.info(
                    f"LD_LIBRARY_PATH entry {p.entry} does not exist",
                    f"{p.entry} (LD_LIBRARY_PATH position {p.index + 1}) does not exist; "
                    "nothing is loaded from it. If a driver relied on it, that driver's load "
                    "test says so.",
                    variable=p.var,
                    value=value,
                    index=p.index,
                    entry=p.entry,
                )


class LdPreloadEntries(Check):
    """Every LD_PRELOAD entry can be preloaded.

    ld.so loads LD_PRELOAD's libraries into every program before anything else. An entry it
    cannot load is skipped with `ERROR: ld.so: object '...' from LD_PRELOAD cannot be preloaded
    ... ignored` on the stderr of every program, which buries the messages that matter (and a
    preloaded library of the wrong version shadows the one the drivers need).
    """

    code = "VKE008"
    family = "environment"
    title = "LD_PRELOAD entries that cannot be preloaded"

    def run(self, ctx: Context) -> Iterable[Finding]:
        if ctx.elevated or not ctx.env.get("LD_PRELOAD"):
            return
        from vkdoctor.elf.resolve import preload_lookups

        lookups = preload_lookups(ctx)
        keep = [entry for entry, lk in lookups.items() if lk.found is not None]
        for entry, lk in lookups.items():
            if lk.found is not None:
                continue
            rest = " ".join(keep)
            yield self.warn(
                f"LD_PRELOAD entry {entry} cannot be preloaded",
                f"ld.so cannot load {entry} ({lk.error or 'not found'}): it prints "
                f"\"ERROR: ld.so: object '{entry}' from LD_PRELOAD cannot be preloaded ... "
                'ignored" on the stderr of every program and goes on without it.',
                remedy=Remedy(
                    commands=(
                        # always quoted (as before); !r quoted with " where the value held a '
                        "export LD_PRELOAD='" + rest.replace("'", "'\"'\"'") + "'"
                        if rest
                        else "unset LD_PRELOAD",
                    )
                ),
                entry=entry,
                error=lk.error,
            )


class WritableByOthers(Check):
    """Library and manifest directories are writable only by you and root.

    Whoever can write an LD_LIBRARY_PATH directory, a driver or layer manifest directory, or a
    directory above one of them, decides what code runs in every Vulkan application you start:
    they can add a libvulkan.so.1 or a manifest that points at their own library. World-writable
    directories, directories writable by a group other than yours, and directories owned by
    another user all count; a directory that does not exist counts when others can create it.
    """

    code = "VKE003"
    family = "environment"
    title = "Library and manifest directories writable by others"

    def run(self, ctx: Context) -> Iterable[Finding]:
        by_culprit: dict[str, list[eh.WritableByOthers]] = {}
        for h in eh.hazards_writable(ctx, _identity(ctx)):
            by_culprit.setdefault(h.culprit, []).append(h)
        home = (ctx.env.get("HOME") or "").rstrip("/")
        for culprit, group in by_culprit.items():
            if len(group) > 1 and (culprit in _SHARED or culprit == home):
                # one directory makes them all unsafe (HOME=/tmp gives six): one finding
                yield self._shared_culprit(ctx, culprit, group)
                continue
            for h in group:
                yield self._one(h)

    def _one(self, h: eh.WritableByOthers) -> Finding:
        where = h.path if h.culprit == h.path else f"{h.path} (through {h.culprit})"
        created = "" if h.exists else f"; {h.path} does not exist, and others can create it"
        return self.warn(
            f"{h.purpose} {h.path} is writable by others",
            f"{where}: {h.culprit} is {', '.join(h.reasons)} "
            f"(owner {h.owner.user}, group {h.owner.group}, mode {h.owner.mode}){created}. "
            "Whoever can write there can make Vulkan applications load their code.",
            remedy=_writable_remedy(h),
            **{k: v for k, v in asdict(h).items() if k != "owner"},
            owner=asdict(h.owner),
        )

    def _shared_culprit(
        self, ctx: Context, culprit: str, group: list[eh.WritableByOthers]
    ) -> Finding:
        first = group[0]
        listed = "; ".join(f"{h.purpose} {h.path}" for h in group)
        home = (ctx.env.get("HOME") or "").rstrip("/")
        from_home = bool(home) and all(h.path.startswith(home + "/") for h in group)
        if from_home and culprit in (home, *(p for p in _SHARED if home.startswith(p))):
            remedy = Remedy(
                text=f"HOME is {home or '/'}, which others can write, so the loader's per-user "
                "directories under it are unsafe: set HOME (or XDG_CONFIG_HOME and "
                "XDG_DATA_HOME) to a directory only you can write."
            )
        else:
            remedy = _writable_remedy(first)
        return self.warn(
            f"{len(group)} directories the loader or ld.so reads are writable by others "
            f"through {culprit}",
            f"{listed}: {culprit} is {', '.join(first.reasons)} (owner {first.owner.user}, group "
            f"{first.owner.group}, mode {first.owner.mode}). Whoever can write there can make "
            "Vulkan applications load their code.",
            remedy=remedy,
            culprit=culprit,
            paths=[h.path for h in group],
            owner=asdict(first.owner),
        )


#: shared places that must stay writable by everyone: never suggest chmod on them
_SHARED = ("/tmp", "/var/tmp", "/dev", "/dev/shm", "/run/user", "/run/lock")


def _writable_remedy(h: eh.WritableByOthers) -> Remedy:
    try:
        sticky = bool(int(h.owner.mode, 0) & 0o1000)
    except ValueError:
        sticky = False
    shared = h.culprit in _SHARED or h.culprit.startswith("/dev/") or sticky
    if shared:
        return Remedy(
            text=f"Stop using {h.path}; keep drivers, libraries and manifests in a directory "
            "only you can write (for example under ~/.local/share)."
        )
    return Remedy(
        text=f"Make {h.culprit} writable only by you and root (chmod go-w {shlex.quote(h.culprit)}; chown it "
        f"if another user owns it), or stop using {h.path}"
    )


class IcdFilenamesDeprecated(Check):
    """VK_ICD_FILENAMES is not used (it is deprecated; VK_DRIVER_FILES replaces it).

    Since loader 1.3.207 the variable is VK_DRIVER_FILES; VK_ICD_FILENAMES still works, but only
    when VK_DRIVER_FILES is not set, which makes a leftover value easy to misread.
    """

    code = "VKE004"
    family = "environment"
    title = "Deprecated VK_ICD_FILENAMES in use"

    def run(self, ctx: Context) -> Iterable[Finding]:
        value = ctx.env.get("VK_ICD_FILENAMES")
        if value is None:
            return
        if "VK_DRIVER_FILES" in ctx.env:
            yield self.warn(
                "VK_ICD_FILENAMES is set and ignored",
                f"VK_ICD_FILENAMES={value!r} is ignored because VK_DRIVER_FILES is set "
                f"({ctx.env['VK_DRIVER_FILES']!r}); the loader reads only VK_DRIVER_FILES.",
                remedy=Remedy(commands=("unset VK_ICD_FILENAMES",)),
                value=value,
                vk_driver_files=ctx.env["VK_DRIVER_FILES"],
            )
            return
        from vkdoctor.loader import icd as I

        entries = eh.override_entries(ctx, "VK_ICD_FILENAMES")
        scan = facts.driver_scan(ctx)
        if entries and not any(e.manifests for e in entries):
            # renaming the variable would carry the mistake over: it names no manifest
            remedy = Remedy(
                commands=("unset VK_ICD_FILENAMES",),
                text=": it names no existing driver manifest (VKD001)",
            )
        elif scan.aborted_by is not None or not any(
            d.outcome in (I.LOADS, I.FILTER_DISABLED, I.FILTER_NOT_SELECTED) for d in scan.drivers
        ):
            # nor a manifest the loader cannot use (a JSON error, a missing library)
            remedy = Remedy(
                commands=("unset VK_ICD_FILENAMES",),
                text=": no driver manifest it names is usable (VKD001, VKD003 and VKD005 say why)",
            )
        else:
            remedy = Remedy(
                commands=(f"export VK_DRIVER_FILES={shlex.quote(value)}", "unset VK_ICD_FILENAMES"),
                text="(VK_DRIVER_FILES needs loader 1.3.207 or newer)",
            )
        yield self.warn(
            "VK_ICD_FILENAMES is deprecated",
            f"VK_ICD_FILENAMES={value!r} is the deprecated name of VK_DRIVER_FILES.",
            remedy=remedy,
            value=value,
        )


class OverridesPointAtDrivers(Check):
    """The driver override variables name manifests that exist and leave at least one driver.

    VK_DRIVER_FILES (or the deprecated VK_ICD_FILENAMES) replaces the loader's whole driver
    search; set but empty, it leaves no driver at all. An entry that does not exist, or a
    directory without manifests, adds nothing; VK_ADD_DRIVER_FILES is ignored entirely while an
    override is set.
    """

    code = "VKE005"
    family = "environment"
    title = "Driver override variables that point at nothing"
    #: when no driver is left at all, VKD001 says so with this same fix
    requires = frozenset({"VKD001"})

    def run(self, ctx: Context) -> Iterable[Finding]:
        if ctx.elevated:
            return
        var = eh.effective_override(ctx)
        if var is not None:
            value = ctx.env[var]
            entries = eh.override_entries(ctx, var)
            evidence = {"variable": var, "value": value, "entries": [asdict(e) for e in entries]}
            if not any(e.manifests for e in entries):
                shown = eh.describe_entries(entries) or "nothing"
                yield self.fail(
                    f"{var} leaves no driver",
                    f"{var}={value!r} replaces the loader's driver search, and it names "
                    f"{shown}: no manifest at all, so every vkCreateInstance fails with "
                    "VK_ERROR_INCOMPATIBLE_DRIVER.",
                    remedy=Remedy(
                        commands=(f"unset {var}",),
                        text=", or point it at a driver manifest, e.g. "
                        f"export {var}=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
                    ),
                    **evidence,
                )
            else:
                yield from self._entries(entries, evidence)
            if eh.ADDITIVE in ctx.env:
                yield self.info(
                    f"{eh.ADDITIVE} is ignored",
                    f"{eh.ADDITIVE}={ctx.env[eh.ADDITIVE]!r} has no effect while {var} is set.",
                    variable=eh.ADDITIVE,
                    value=ctx.env[eh.ADDITIVE],
                    override=var,
                )
            return
        if eh.ADDITIVE in ctx.env:
            entries = eh.override_entries(ctx, eh.ADDITIVE)
            yield from self._entries(
                entries,
                {
                    "variable": eh.ADDITIVE,
                    "value": ctx.env[eh.ADDITIVE],
                    "entries": [asdict(e) for e in entries],
                },
            )

    def _entries(
        self, entries: list[eh.OverrideEntry], evidence: Mapping[str, object]
    ) -> Iterable[Finding]:
        for e in entries:
            if e.kind == "missing":
                yield self.warn(
                    f"{e.var} entry {e.entry} does not exist",
                    f"{e.var} names {e.entry}, which does not exist; the loader adds nothing "
                    "for it.",
                    remedy=Remedy(text=f"Remove {e.entry} from {e.var}, or fix the path"),
                    entry=e.entry,
                    **evidence,
                )
            elif e.kind == "directory" and not e.manifests:
                yield self.warn(
                    f"{e.var} directory {e.entry} holds no manifest",
                    f"{e.var} names the directory {e.entry}, which holds no *.json manifest.",
                    remedy=Remedy(
                        text=f"Remove {e.entry} from {e.var}, or put the driver's manifest there"
                    ),
                    entry=e.entry,
                    **evidence,
                )


class ElevatedIgnoresVariables(Check):
    """No setting is lost because the process runs elevated.

    A setuid or setgid program, or one with file capabilities, runs with AT_SECURE: the loader
    reads its variables with secure_getenv and gets nothing (VK_DRIVER_FILES, VK_ICD_FILENAMES,
    VK_ADD_DRIVER_FILES, the driver and layer filters, VK_LAYER_PATH, XDG_*), and ld.so ignores
    LD_LIBRARY_PATH and most of LD_PRELOAD. Only the system directories count.
    """

    code = "VKE006"
    family = "environment"
    title = "Variables an elevated process ignores"

    def run(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.elevated:
            return
        ignored = eh.set_secure_vars(ctx)
        if ignored:
            yield self.warn(
                "Variables ignored because the process is elevated",
                f"This process runs elevated (setuid, setgid or capabilities), so these variables "
                f"are ignored: {', '.join(ignored)}. Only drivers and layers in the system "
                "directories are used.",
                remedy=Remedy(
                    text="Install the driver's manifest in /etc/vulkan/icd.d or /usr/share/vulkan/icd.d "
                    "and its libraries in a directory of ld.so.conf, or run the program unelevated"
                ),
                ignored=ignored,
            )


class XdgRuntimeDir(Check):
    """XDG_RUNTIME_DIR is set, so "XDG_RUNTIME_DIR is invalid or not set" lines are not printed.

    Without XDG_RUNTIME_DIR, every Vulkan program prints "error: XDG_RUNTIME_DIR is invalid or not
    set in the environment." a few times. The lines come from libwayland-client, which Mesa's
    device-select implicit layer (VK_LAYER_MESA_device_select) calls while it enumerates devices.
    They are harmless: nothing fails because of them. Do not chase them.
    """

    code = "VKE007"
    family = "environment"
    title = "XDG_RUNTIME_DIR unset"
    #: a login session's directory: nothing an image or chroot has
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        problem = eh.xdg_runtime_dir_problem(ctx)
        if problem is None:
            return
        layer = eh.installed_layer(ctx, "VkLayer_MESA_device_select.json")
        source = (
            f"Mesa's device-select layer ({layer}) calls libwayland-client"
            if layer
            else "a Wayland client library (usually through Mesa's device-select layer) is called"
        )
        yield self.info(
            f"XDG_RUNTIME_DIR is {problem}: expect harmless stderr lines",
            f'XDG_RUNTIME_DIR is {problem}. Vulkan programs will print "error: XDG_RUNTIME_DIR is '
            f'invalid or not set in the environment." because {source} while listing devices. '
            "These lines are harmless and are not the cause of a Vulkan failure. To silence them: "
            "export XDG_RUNTIME_DIR=/run/user/$(id -u) (any absolute path works), or NODEVICE_SELECT=1.",
            value=ctx.env.get("XDG_RUNTIME_DIR"),
            device_select_manifest=layer,
        )


class DeviceSelectList(Check):
    """MESA_VK_DEVICE_SELECT=list: every Vulkan program lists the devices and exits, status 0.

    Mesa's device-select implicit layer (VK_LAYER_MESA_device_select) reads
    MESA_VK_DEVICE_SELECT in vkEnumeratePhysicalDevices. The value `list` (exactly) makes it
    print "selectable devices:" and each device on stderr, then call exit(0). The program ends
    there, before it has done any work, with the status of a success: a CI step "passes" having
    computed nothing. Any other value names the device to put first (VENDOR:DEVICE in hex, as
    the list prints it). Unset the variable, or give it the device.
    """

    code = "VKE012"
    family = "environment"
    title = "MESA_VK_DEVICE_SELECT lists and exits"
    #: the layer's exit is the load test's "ends the process (exit status 0)"
    explains = ("VKT003",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return (
            symptom.evidence.get("name") == _DEVICE_SELECT
            and symptom.evidence.get("signal") == "exit status 0"
        )

    def run(self, ctx: Context) -> Iterable[Finding]:
        if ctx.env.get("MESA_VK_DEVICE_SELECT") != "list":
            return
        active = [layer for layer in facts.layer_scan(ctx).active if layer.name == _DEVICE_SELECT]
        if not active:
            yield self.info(
                "MESA_VK_DEVICE_SELECT=list is set, and Mesa's device-select layer is off",
                "With VK_LAYER_MESA_device_select active, MESA_VK_DEVICE_SELECT=list would make "
                "every Vulkan program print its devices and exit; the layer is not active here "
                "(vkdoctor's layer findings, VKI, say why), so it does nothing.",
                variable="MESA_VK_DEVICE_SELECT",
                value="list",
            )
            return
        yield self.fail(
            "MESA_VK_DEVICE_SELECT=list: every Vulkan program lists the devices and exits",
            "MESA_VK_DEVICE_SELECT is set to list, so Mesa's device-select layer "
            f'({active[0].manifest}) prints "selectable devices:" and the devices on stderr in '
            "vkEnumeratePhysicalDevices, then calls exit(0): every Vulkan program (wgpu, "
            "vulkaninfo, a CI gate) ends there, with exit status 0, before it has computed "
            "anything.",
            remedy=Remedy(
                commands=("unset MESA_VK_DEVICE_SELECT",),
                text="; to choose a device instead, set it to the VENDOR:DEVICE pair the list "
                "prints (MESA_VK_DEVICE_SELECT=10de:2335 puts that device first)",
            ),
            variable="MESA_VK_DEVICE_SELECT",
            value="list",
            layer_manifest=active[0].manifest,
        )


_DEVICE_SELECT = "VK_LAYER_MESA_device_select"


class WgpuSelection(Check):
    """wgpu is not told to use another backend, or an adapter that is not there.

    wgpu-py's WGPUPY_WGPU_ADAPTER_NAME (read first) and WGPU_BACKEND_TYPE, and Rust's
    WGPU_BACKEND and WGPU_ADAPTER_NAME, read as wgpu reads them; adapter names are matched
    against the devices the load test saw. vkdoctor's probe ignores these variables, so a value
    left in a profile could otherwise send programs to OpenGL or to no adapter unseen.
    """

    code = "VKE009"
    family = "environment"
    title = "wgpu backend and adapter variables"

    def run(self, ctx: Context) -> Iterable[Finding]:
        names = wgpu_env.adapter_names(ctx.env, ())
        by_name = any(n.var == "WGPUPY_WGPU_ADAPTER_NAME" for n in names)
        for choice in (wgpu_env.py_backend(ctx.env), wgpu_env.rust_backend(ctx.env)):
            if choice is None:
                continue
            if by_name and choice.var == "WGPU_BACKEND_TYPE":
                yield self.info(
                    f"{_setting(choice.var, choice.value)} is not read: "
                    "WGPUPY_WGPU_ADAPTER_NAME is set",
                    "wgpu-py picks the adapter by name and never looks at the backend variable.",
                    variable=choice.var,
                    value=choice.value,
                )
                continue
            yield self._backend(choice)
        if not names:
            return
        devices = self._devices(ctx)
        for name in wgpu_env.adapter_names(ctx.env, devices or ()):
            yield self._adapter(name, devices)

    def _backend(self, choice: wgpu_env.BackendChoice) -> Finding:
        python = choice.var == "WGPU_BACKEND_TYPE"
        who = "wgpu-py programs" if python else "Rust wgpu programs that read it"
        setting = _setting(choice.var, choice.value)
        unset = f"unset {choice.var}"
        evidence = {"variable": choice.var, "value": choice.value, "effect": choice.effect}
        if choice.effect == "ignored":
            close = [k for k in wgpu_env.PY_BACKENDS if k.lower() == choice.value.lower()]
            hint = f" (the names are case-sensitive: {close[0]})" if close else ""
            remedy = (
                Remedy(commands=(f"export {choice.var}=Vulkan",), text=f", or {unset}")
                if close == ["Vulkan"]
                else Remedy(
                    commands=(unset,),
                    text="(wgpu-py then picks Vulkan)"
                    + (f"; if you meant {close[0]}, that is its name" if close else ""),
                )
            )
            return self.warn(
                f"{setting} is not a backend wgpu-py knows: it is ignored",
                f'wgpu-py logs "Invalid value for WGPU_BACKEND_TYPE" and picks the backend '
                f"itself{hint}. Known values: {', '.join(wgpu_env.PY_BACKENDS)}.",
                remedy=remedy,
                **evidence,
            )
        unknown = (
            f" wgpu skips the names it does not know: {', '.join(choice.unknown)}."
            if choice.unknown
            else ""
        )
        if choice.effect == "gl":
            return self.warn(
                f"{setting}: {who} use OpenGL, not Vulkan",
                "They ask wgpu for OpenGL only: they do not use the Vulkan drivers this report "
                f"checks, and vkdoctor's probe, which runs on Vulkan, says nothing about them."
                f"{unknown}",
                remedy=Remedy(
                    commands=(unset,),
                    text=f"(or set it to {'Vulkan' if python else 'vulkan'}) to use Vulkan",
                ),
                **evidence,
            )
        if choice.effect == "none":
            make = self.fail if python else self.warn
            asked = (
                "nothing (it is set but empty)"
                if not choice.value.strip(" ,")
                else "only backends that Linux does not have"
            )
            return make(
                f"{setting}: {who} get no adapter",
                f'They ask wgpu for {asked}, so requesting an adapter fails (wgpu: "No '
                f'suitable graphics adapter found") even though Vulkan may work.{unknown}',
                remedy=Remedy(commands=(unset,)),
                **evidence,
            )
        return self.finding(
            Severity.WARN if choice.unknown else Severity.INFO,
            f"{setting}: {who} use Vulkan"
            + (" among other backends" if choice.effect == "mixed" else " only"),
            unknown.strip(),
            remedy=Remedy(text=f"remove {', '.join(choice.unknown)} from {choice.var}")
            if choice.unknown
            else None,
            evidence=evidence,
        )

    def _devices(self, ctx: Context) -> list[tuple[str, str]] | None:
        if not ctx.live:
            return None
        try:
            run = facts.load_test(ctx)
        except Exception:  # the VKT checks report a load test that did not run
            return None
        return [
            (d.name, d.type) for o in run.outcomes if o.target.kind == "driver" for d in o.devices
        ]

    def _adapter(
        self, name: wgpu_env.AdapterName, devices: list[tuple[str, str]] | None
    ) -> Finding:
        python = name.var == "WGPUPY_WGPU_ADAPTER_NAME"
        who = "wgpu-py programs" if python else "Rust wgpu programs that read it"
        setting = _setting(name.var, name.value)
        evidence = {"variable": name.var, "value": name.value, "selects": list(name.matches)}
        part = "summary" if python else "name"
        if devices is None:
            return self.info(
                f"{setting}: {who} use only an adapter whose {part} contains it",
                "The load test did not run here, so which device it selects is not known.",
                **evidence,
            )
        if not devices:
            return self.info(
                f"{setting}: no Vulkan device to match it against",
                "The load test found no Vulkan device at all (VKT002 says why), so which adapter "
                "it selects cannot be told; "
                + (
                    "wgpu-py may take an OpenGL adapter whose summary contains it."
                    if python
                    else "the program falls back to its own choice."
                ),
                **evidence,
            )
        if name.matches:
            among = (
                f"It matches {', '.join(name.matches)} among {len(devices)} Vulkan devices; wgpu "
                "takes the first."
                if len(devices) > 1
                else ""
            )
            return self.info(f"{setting}: {who} use {name.matches[0]}", among, **evidence)
        example = wgpu_env.summary(*devices[0]) if python else devices[0][0]
        if name.opengl:
            return self.warn(
                f"{setting}: {who} use an OpenGL adapter, not Vulkan",
                "It matches no Vulkan adapter's summary, only the one wgpu-py gives an OpenGL "
                'adapter on the same device ("NAME (TYPE) via OpenGL"): these programs do not '
                "use the Vulkan drivers this report checks.",
                remedy=Remedy(
                    commands=(f"unset {name.var}",),
                    text=f", or set it to part of a Vulkan adapter's summary (for example "
                    f"{example!r})",
                ),
                **evidence,
            )
        seen = ", ".join(n for n, _ in devices)
        rule = (
            'a case-sensitive part of the adapter\'s summary, "NAME (TYPE) via Vulkan"'
            if python
            else "a case-insensitive part of the adapter's name"
        )
        message = (
            f"No Vulkan device matches it ({rule}). The devices the load test found: {seen}. "
            + (
                f"wgpu-py raises \"Adapter with name '{name.value}' not found.\" (or, if it is "
                "part of an OpenGL adapter's summary, which can name the device differently, "
                "takes that adapter: OpenGL, not Vulkan)."
                if python
                else "wgpu::util::initialize_adapter_from_env finds no adapter."
            )
        )
        make = self.fail if python else self.warn
        return make(
            f"{setting} matches no Vulkan device",
            message,
            remedy=Remedy(
                commands=(f"unset {name.var}",),
                text=f", or set it to part of a device's {part} (for example {example!r})",
            ),
            **evidence,
        )


def _setting(var: str, value: str) -> str:
    """VAR=value as a shell would need it written (a space or an empty value shows)."""
    import shlex

    return f"{var}={shlex.quote(value)}"


CHECKS: tuple[type[Check], ...] = (
    LdLibraryPathSyntax,
    LdLibraryPathExists,
    LdPreloadEntries,
    WritableByOthers,
    IcdFilenamesDeprecated,
    OverridesPointAtDrivers,
    ElevatedIgnoresVariables,
    XdgRuntimeDir,
    DeviceSelectList,
    WgpuSelection,
)
