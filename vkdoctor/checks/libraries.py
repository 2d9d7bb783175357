"""VKL: can every library the Vulkan loader will dlopen really be loaded, and if not, why.

Each load target (driver or active implicit layer, from vkdoctor.loader.load_targets) is resolved
as glibc's ld.so would (vkdoctor.elf): the file itself, its whole DT_NEEDED closure, ELF class and
machine, and every required symbol version, without loading anything.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.checks.brokencopy import broken_copy
from vkdoctor.closures.versions import (
    fails_dlopen,
    missing_versions,
    version_fix,
    version_title,
)
from vkdoctor.elf import shadow
from vkdoctor.elf.defect import Defect
from vkdoctor.elf.explain import (
    HOW_WORDS,
    how_found,
    near_text,
    places_tried,
    system_copy,
    version_sentence,
)
from vkdoctor.elf.resolve import (
    Library,
    Miss,
    Resolution,
    resolve,
    version_key,
)
from vkdoctor.elf.search import How, Tried
from vkdoctor.elf.shadow import Shadow
from vkdoctor.elf.symbols import Undefined
from vkdoctor.elf.wgpu import find_wgpu_native
from vkdoctor.loader.icd import LIBRARY_MISSING, LIBRARY_UNLOADABLE
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model import Finding, Remedy, Severity, files, tree
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace
from vkdoctor.model.sonames import find_remedy
from vkdoctor.packages import commands
from vkdoctor.packages.owner import fix_file, leftover_of, owner
from vkdoctor.packages.remedy import UPGRADE

#: rebuilds the cache of the directories ld.so is configured to search
LDCONFIG = Remedy(commands=("ldconfig",), needs_root=True, text="(rebuilds /etc/ld.so.cache)")


def label(t: LoadTarget) -> str:
    kind = "driver" if t.kind == "driver" else "layer"
    return f"{kind} {t.name} ({t.dlopen_name})"


def _severity(t: LoadTarget) -> Severity:
    """A driver that cannot load is lost; the loader ignores a broken implicit layer."""
    return Severity.FAIL if t.kind == "driver" else Severity.WARN


def _broken_winner(res: Resolution) -> bool:
    """The target was searched for (a bare name) and the copy that won is unusable."""
    bad = res.misses[0].bad_file if res.misses else None
    return bad is not None and bad.how is not How.PATH


def how_found_tried(t: Tried) -> str:
    """'through LD_LIBRARY_PATH, in /opt/x' for a candidate the search stopped at."""
    words = HOW_WORDS[t.how]
    return f"{words}, in {t.where}" if t.how not in (How.PATH, How.CACHE) else words


def _is_wrong_class_only(m: Miss) -> bool:
    return bool(m.wrong_class) and m.bad_file is None


def _other_machine_only(m: Miss) -> Tried | None:
    """The first copy for another machine, when every file the search met was one."""
    met = [t for t in m.tried if t.outcome not in ("absent", "skipped")]
    if met and all(t.outcome == "wrong_machine" for t in met):
        return met[0]
    return None


class LibraryOpens(Check):
    """Each driver and layer library named by a manifest exists and is an ELF file ld.so accepts.

    The Vulkan loader dlopens `library_path` as written: an absolute path, a path relative to
    the manifest, or a bare name that ld.so searches (LD_LIBRARY_PATH, ld.so.cache, the system
    directories). A missing file, or one that is not a shared object, makes the loader print
    "Failed loading library associated with ICD JSON ... Ignoring this JSON". A 32-bit driver seen
    by a 64-bit process (multilib installs ship both manifests in the same directory) is skipped
    by the loader at INFO level: reported as info, not as a failure.
    """

    code = "VKL001"
    family = "libraries"
    title = "Driver and layer libraries"
    # VKD005 sees only that the manifest's library does not load; a broken copy that won the
    # search is named here, with the intact copy it shadows and the fix
    # (and VKD001, when that driver is the only one: no driver loads because of it)
    explains = ("VKD005", "VKD001")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        if "broken_copy" not in cause.evidence:
            return False
        manifest = cause.evidence.get("manifest")
        if symptom.code == "VKD001":
            drivers = symptom.evidence.get("drivers") or []
            return bool(drivers) and all(
                d.get("manifest") == manifest and d.get("outcome") == LIBRARY_UNLOADABLE
                for d in drivers
            )
        return bool(symptom.evidence.get("manifest") == manifest)

    def run(self, ctx: Context) -> Iterable[Finding]:
        # a manifest whose library file is missing or unusable is VKD005's finding (an implicit
        # layer's, VKI002's)
        stale = {
            d.manifest
            for d in facts.driver_scan(ctx).drivers
            if d.outcome in (LIBRARY_MISSING, LIBRARY_UNLOADABLE)
        }
        broken_layers = {
            layer.name
            for layer in facts.layer_scan(ctx).active
            if layer.library is not None and layer.library_state != "ok"
        }
        for t, res in facts.target_resolutions(ctx):
            said = "VKD005" if t.kind == "driver" and t.manifest in stale else None
            if t.kind == "layer" and t.name in broken_layers:
                said = "VKI002"
            if res.root is not None:
                yield self._found(t, res, res.root)
            elif said is not None and not _broken_winner(res):
                yield self._said_elsewhere(t, res, said)
            else:
                yield self._not_loadable(ctx, t, res, res.misses[0])
        yield from self._cut_off(ctx)

    def _said_elsewhere(self, t: LoadTarget, res: Resolution, said: str) -> Finding:
        """The manifest's own file is missing or unusable: the finding `said` has it."""
        miss = res.misses[0]
        return self.info(
            f"{t.name}: library {t.dlopen_name} cannot be loaded ({said})",
            f"{label(t)}: {res.predicted_error}.",
            target=t.name,
            manifest=t.manifest,
            **miss.as_dict(),
        )

    def _found(self, t: LoadTarget, res: Resolution, root: Library) -> Finding:
        counts: dict[str, int] = {}
        for lib in res.libraries[1:]:
            counts[lib.how.value] = counts.get(lib.how.value, 0) + 1
        closure = f"{len(res.libraries) - 1} libraries of its closure found"
        title = f"{t.name}: {root.path}"
        if not res.ok:
            # the file is fine; what it needs is not (VKL002, VKL003): no check mark
            closure += ", but not all: VKL002 and VKL003 say what is missing"
            title += " found, but not all it needs"
        return self.finding(
            Severity.OK if res.ok else Severity.INFO,
            title,
            f"{label(t)} found {how_found(root)}; {closure}.",
            evidence=dict(
                target=t.name,
                path=root.path,
                how=root.how.value,
                elf_class=root.elf.bits,
                closure=counts,
                libraries=[
                    {
                        "name": lib.name,
                        "path": lib.path,
                        "how": lib.how.value,
                        "directory": lib.directory,
                        "needed_by": lib.needed_by,
                        "already_in_process": lib.preloaded,
                    }
                    for lib in res.libraries[1:]
                ],
            ),
        )

    def _not_loadable(self, ctx: Context, t: LoadTarget, res: Resolution, miss: Miss) -> Finding:
        """The target's own file: only for another machine, unusable, or not found."""
        ev: dict[str, Any] = {"target": t.name, "manifest": t.manifest, **miss.as_dict()}
        if _is_wrong_class_only(miss):
            cls = miss.wrong_class[0]
            return self.info(
                f"{t.name}: {cls.detail} library, skipped by a {ctx.machine} process",
                f"{label(t)} is {cls.path}, a {cls.detail} file; the loader logs this at INFO "
                f"and uses the other drivers. Normal on a multilib system.",
                **ev,
            )
        if miss.bad_file is not None:
            return self._unusable_file(ctx, t, res, miss, miss.bad_file, ev)
        where = (
            f"Looked in: {places_tried(miss.tried, ctx)}."
            if "/" not in t.dlopen_name
            else "The file does not exist."
        )
        near = near_text(miss.near)
        return self.finding(
            _severity(t),
            f"{t.name}: library {t.dlopen_name} not found",
            f"{label(t)}: {res.predicted_error}. {where} {near}".strip(),
            remedy=stale_manifest_remedy(ctx, t.manifest),
            evidence=ev,
        )

    def _unusable_file(
        self,
        ctx: Context,
        t: LoadTarget,
        res: Resolution,
        miss: Miss,
        bad: Tried,
        ev: dict[str, Any],
    ) -> Finding:
        """ld.so stops at `bad`: a broken copy (with the intact one it shadows, where there is
        one), a truncated file, or one it cannot load."""
        broken = broken_copy(ctx, bad, posixpath.basename(t.dlopen_name), miss.error)
        if broken is not None:
            return self.finding(
                _severity(t),
                f"{t.name}: {bad.path} is {broken.defect.kind_word}",
                f"{label(t)}: ld.so finds {bad.path} ({how_found_tried(bad)}), which is "
                f"{broken.what}. {broken.effect}",
                remedy=broken.remedy
                if bad.how is not How.PATH or broken.defect.kind == "noexec"
                else fix_file(
                    ctx,
                    bad.path or t.dlopen_name,
                    f"{{reinstall}} ({{package}} owns {bad.path}, and the file is not what "
                    f"it installed), or fix library_path in {t.manifest}.",
                    f"{bad.path} belongs to no package: replace it with a working build, or "
                    f"fix library_path in {t.manifest}.",
                ),
                evidence={**ev, "broken_copy": broken.evidence},
            )
        # the headers are whole, the data they describe is not: ld.so maps it
        cut = "beyond the end of the file" in bad.detail
        return self.finding(
            _severity(t),
            f"{t.name}: {bad.path} is " + ("truncated" if cut else "not a loadable shared object"),
            # ld.so maps segments by their headers' sizes, past a short file's end: the
            # first touch of the missing pages is a SIGBUS, not a dlopen error
            f"{label(t)}: {bad.path} ends before the data its headers describe "
            f"({bad.detail.removeprefix('cannot parse: ')}). ld.so maps it anyway, and the "
            "first access past the end kills the process with SIGBUS: every program that "
            "loads it crashes."
            if cut
            else f'{label(t)}: ld.so would fail with "{res.predicted_error}".',
            remedy=fix_file(
                ctx,
                bad.path or t.dlopen_name,
                f"{{reinstall}} ({{package}} owns {bad.path}), or fix library_path in "
                f"{t.manifest}.",
                f"{bad.path} belongs to no package: replace it with a working build, or "
                f"fix library_path in {t.manifest}.",
            ),
            evidence=ev,
        )

    def _cut_off(self, ctx: Context) -> Iterable[Finding]:
        """A file vkdoctor read only part of, at one of its limits: what it says of that file's
        libraries is incomplete. No real file comes near the limits."""
        parts: dict[str, tuple[str, ...]] = {}
        for _t, res in facts.target_resolutions(ctx):
            for lib in res.libraries:
                if lib.elf.cut:
                    parts.setdefault(lib.path, lib.elf.cut)
        cache = facts.ld_cache(ctx)
        if cache is not None and cache.cut:
            parts[cache.path] = cache.cut
        conf = facts.ld_conf(ctx)
        if conf.cut:
            parts["/etc/ld.so.conf"] = conf.cut
        for path, cut in parts.items():
            is_cache = cache is not None and path == cache.path
            yield self.warn(
                f"{path} was cut off: vkdoctor read only part of it",
                f"{path} goes past what vkdoctor reads of one file: {'; '.join(cut)}. No working "
                "file comes near these limits: this one is corrupt or made to exhaust the readers "
                "that trust it, and what vkdoctor says of the libraries it lists is incomplete.",
                remedy=LDCONFIG
                if is_cache
                else fix_file(
                    ctx,
                    path,
                    "{reinstall} ({package} owns "
                    + path.replace("{", "{{").replace("}", "}}")
                    + ").",
                    f"{path} belongs to no package: replace it with a working copy or remove it.",
                ),
                path=path,
                cut=list(cut),
            )


class NeededLibraries(Check):
    """Every DT_NEEDED library of each driver and layer, transitively, is found by ld.so.

    The closure is resolved with glibc's rules: DT_RPATH (inherited, and only without DT_RUNPATH),
    LD_LIBRARY_PATH, DT_RUNPATH, ld.so.cache, the system directories, with glibc-hwcaps
    subdirectories, $ORIGIN, and libraries already in the process winning. A missing one is the
    classic partial-upgrade failure: lavapipe built against libLLVM.so.23.1 on a system that has only
    libLLVM.so.22.1 prints only "cannot open shared object file". The finding names the driver,
    the library that needs the missing one, every place ld.so looked, and the near misses
    (another version of the same library, the right name in the wrong class or in a directory
    ld.so does not search).
    """

    code = "VKL002"
    family = "libraries"
    title = "Needed libraries that cannot be found"

    def run(self, ctx: Context) -> Iterable[Finding]:
        # one finding per missing soname: the libraries that need it are listed in it (a
        # missing libdrm.so.2 is one problem, not one per library that links it)
        # (a 32-bit and a 64-bit miss of one name are two problems: one package each)
        groups: dict[tuple[str, int], list[tuple[LoadTarget, Miss]]] = {}
        for t, res in facts.target_resolutions(ctx):
            if res.root is None:
                continue
            for m in res.misses:
                groups.setdefault((m.name, res.root.elf.elf_class), []).append((t, m))
        for (name, _), items in groups.items():
            ts = list(dict.fromkeys(t for t, _ in items))
            m = items[0][1]
            needed_by = m.needed_by
            users = list(dict.fromkeys(x.needed_by or x.name for _, x in items))
            sev = Severity.FAIL if any(t.kind == "driver" for t in ts) else Severity.WARN
            who = ", ".join(label(t) for t in ts)
            via = (
                f" (loaded via {' -> '.join(posixpath.basename(p) for p in m.chain)})"
                if len(m.chain) > 1
                else ""
            )
            broken = broken_copy(ctx, m.bad_file, name, m.error) if m.bad_file is not None else None
            also = f" Also needed by {', '.join(users[1:])}." if len(users) > 1 else ""
            if broken is not None and m.bad_file is not None:
                bad = m.bad_file
                shown = [posixpath.basename(u) for u in users[:3]]
                more = f" and {len(users) - 3} more" if len(users) > 3 else ""
                yield self.finding(
                    sev,
                    f"{name}: the copy that wins, {broken.defect.path}, is {broken.defect.kind_word} "
                    f"(needed by {', '.join(shown)}{more})",
                    f"{who}: {needed_by}{via} needs {name}; ld.so finds it at {bad.path} "
                    f"({how_found_tried(bad)}), which is {broken.what}. "
                    f"{broken.effect}{also}",
                    remedy=broken.remedy,
                    evidence={
                        "targets": [t.name for t in ts],
                        **m.as_dict(),
                        "needed_by_all": users,
                        "broken_copy": broken.evidence,
                    },
                )
                continue
            machine = _other_machine_only(m)
            if _is_wrong_class_only(m):
                what = f"{name} exists only as {m.wrong_class[0].detail} ({m.wrong_class[0].path})"
            elif machine is not None:
                what = (
                    f"the only copy ld.so finds, {machine.path}, is built for another machine "
                    f"(e_machine {machine.detail}); ld.so skips it"
                )
            elif m.bad_file is not None:
                what = f"{m.bad_file.path} is not a loadable shared object ({m.bad_file.detail})"
            else:
                what = f"ld.so cannot find {name}"
            message = (
                f"{who}: {needed_by}{via} needs {name}; {what}.{also} "
                f'dlopen would fail with "{m.error}". Looked in: {places_tried(m.tried, ctx)}. '
                f"{near_text(m.near)}"
            ).strip()
            shown = [posixpath.basename(u) for u in users[:3]]
            more = f" and {len(users) - 3} more" if len(users) > 3 else ""
            said, remedy = _missing_remedy(ctx, name, m)
            if said:
                message = f"{message} {said}"
            why = _unpackaged_why(ctx, name, m)
            if why is not None:
                # a driver no package owns: no upgrade helps, and only the user knows where its
                # build keeps the library
                message, remedy = f"{message} {why}", Remedy(text=find_remedy(name))
            yield self.finding(
                sev,
                f"{name} missing (needed by {', '.join(shown)}{more})",
                message,
                remedy=remedy,
                evidence={"targets": [t.name for t in ts], **m.as_dict(), "needed_by_all": users},
            )


def upgrade_command(ctx: Context) -> str:
    """The distribution's whole-system upgrade, the fix for a partial upgrade."""
    manager = commands.NATIVE.get(facts.distro_family(ctx) or "")
    if manager is None:
        # no os-release (a bare image tree): the one package database there says which
        databases = facts.package_inventory(ctx).databases
        manager = databases[0].family if len(databases) == 1 else None
    if manager is not None:
        return f"`{UPGRADE[manager]}`"
    # the last step of each family's upgrade
    pacman, apt, dnf = (f"`sudo {commands.upgrade(f)[-1]}`" for f in ("pacman", "dpkg", "rpm"))
    return f"{pacman}, {apt} or {dnf}"


def stale_manifest_remedy(ctx: Context, manifest: str) -> Remedy:
    """What to do about a manifest whose library is gone, by who put the manifest there."""
    if owner(ctx, manifest) == "":
        left = leftover_of(ctx, manifest)
        if left is not None:
            name = left.split(":")[0]
            return Remedy(
                text=f"{manifest} was left behind by {left}, removed but not purged (dpkg state "
                f"rc): sudo {commands.purge(name)} removes it; sudo "
                f"{commands.install('dpkg', name)} brings the driver back."
            )
    return fix_file(
        ctx,
        manifest,
        f"{{reinstall}} ({{package}} owns {manifest}, and the library it names is gone)",
        f"{manifest} belongs to no package (put there by hand or by an installer): fix its "
        "library_path, or remove it.",
    )


def _stale_overlay(ctx: Context, name: str, m: Miss) -> tuple[str, Remedy] | None:
    """A vkdoctor overlay on LD_LIBRARY_PATH whose link for `name` points at a file that is
    gone (the directory it came from was removed or renamed): why, and what to do."""
    from vkdoctor.overlay.store import store_roots

    stores = [f"{root}/overlays" for root in store_roots(ctx)]
    for t in m.tried:
        if t.how is How.LD_LIBRARY_PATH and posixpath.dirname(t.where) in stores:
            link = ctx.under(posixpath.join(t.where, name))
            if link.is_symlink() and not link.exists():
                return (
                    f"vkdoctor's overlay {t.where} is on LD_LIBRARY_PATH, but its link for {name} "
                    f"points at {link.readlink()}, which is gone.",
                    Remedy(
                        text="`vkdoctor overlay --search-path DIR` (or `vkdoctor exec --search-path DIR -- "
                        "CMD`) with the directory that holds the library now, or take the overlay "
                        "off LD_LIBRARY_PATH."
                    ),
                )
    return None


def _unpackaged_why(ctx: Context, name: str, m: Miss) -> str | None:
    """Why only a copy of `name` helps when only other versions are installed: what needs it
    belongs to no package. None when another fix applies (_missing_remedy's)."""
    if _stale_overlay(ctx, name, m) is not None or name in _refused_sonames(ctx):
        return None
    if any(n.kind in ("not-searched", "stale-cache", "renamed") for n in m.near):
        return None
    others = sorted(
        (n for n in m.near if n.kind == "other-version"),
        key=lambda n: version_key(posixpath.basename(n.path)),
        reverse=True,
    )
    consumer = m.needed_by or m.name
    if not others or owner(ctx, consumer) != "":
        return None
    # said after _missing_remedy's "Only other versions of this library are installed (...)."
    return (
        f"{consumer} belongs to no package, so no upgrade changes it: the lasting fix is to rebuild it "
        "against the installed library or to use the distribution's driver package; meanwhile "
        f"a copy of {name} from the build the driver came from can be used without touching "
        "the system (VKO001)."
    )


def _missing_remedy(ctx: Context, name: str, m: Miss) -> tuple[str, Remedy]:
    """Why the library is missing, for the message (or ""), and the fix."""
    stale_overlay = _stale_overlay(ctx, name, m)
    if stale_overlay is not None:
        return stale_overlay
    exact = [n for n in m.near if n.kind in ("not-searched", "stale-cache")]
    stale = [n for n in exact if n.kind == "stale-cache"]
    if stale:
        return (
            f"{stale[0].path} is in an ld.so.conf directory but not in the cache.",
            LDCONFIG,
        )
    renamed = [n for n in m.near if n.kind == "renamed"]
    if renamed and not exact:
        d, file = posixpath.split(renamed[0].path)
        return (
            f"{renamed[0].path} has the soname {name}, but ld.so opens a file named {name}, "
            f"and {d} has none.",
            Remedy(
                text=f"`ln -s {shlex.quote(str(file))} {shlex.quote(f'{d}/{name}')}` if that file is the build the driver needs (ldconfig "
                "makes such links in the directories of ld.so.conf), or install the package that "
                "provides it."
            ),
        )
    refused = _refused(ctx).get(exact[0].path) if exact else None
    whole = _refused_sonames(ctx).get(name)
    prefix = ""
    if whole is not None:
        # no file can supply it in this process: no exec, no --search-path advice
        prefix = f"An overlay cannot supply {name} here: {whole} (VKO001)."
    elif refused is not None:
        # the overlay tried it: the file does not fit, so it is no way out (VKO003)
        prefix = f"{exact[0].path} has the name ld.so looks for, but the overlay refuses it: {refused} (VKO003)."
    if whole is None and refused is None and exact:
        d = posixpath.dirname(exact[0].path)
        return (
            f"{exact[0].path} has the name ld.so looks for, in a directory it does not search; "
            f"putting all of {d} on LD_LIBRARY_PATH would also put everything else there first.",
            Remedy(
                text=f"`vkdoctor exec --search-path {d} -- CMD` for one command (it checks that the file "
                f"fits and adds only it); for good, install the package that provides {name}."
            ),
        )
    # the closest version first: libLLVM-15.so.1 says more than libLLVM-14.so.1
    others = sorted(
        (n for n in m.near if n.kind == "other-version"),
        key=lambda n: version_key(posixpath.basename(n.path)),
        reverse=True,
    )
    if others:
        consumer = m.needed_by or m.name
        why = f"Only other versions of this library are installed ({others[0].path})."
        return (
            f"{prefix} {why}".strip(),
            Remedy(
                text=fix_file(
                    ctx,
                    consumer,
                    f"Upgrade both together ({upgrade_command(ctx)}), or rebuild the driver "
                    "against the installed library",
                    f"Rebuild {consumer} against the installed library (no package owns it, so "
                    "no upgrade changes it), or use the distribution's driver package",
                ).text
                + (
                    f"; meanwhile `vkdoctor exec --search-path DIR -- CMD` with a copy of {name} "
                    "from the driver's build (VKO001)"
                    if whole is None
                    else ""
                )
                + "."
            ),
        )
    if any(n.kind == "other-build" for n in m.near):
        return _other_builds_only(ctx, name, m, prefix, whole)
    return prefix, _provider_hint(ctx, name)


def _other_builds_only(
    ctx: Context, name: str, m: Miss, prefix: str, whole: str | None
) -> tuple[str, Remedy]:
    """The name wanted is a build's own (libLLVM-mybuild.so.1) and only other builds of the
    library are here: no distribution package carries that name, so searching for one is no
    fix; the consumer's own package, a rebuild, or the build's copy is."""
    consumer = m.needed_by or m.name
    why = (
        f"Only other builds of this library are installed; {name} is the name of one "
        "particular build, which distribution packages do not carry."
    )
    fix = fix_file(
        ctx,
        consumer,
        "{reinstall} to get {package}'s own build back (it was linked against the "
        "distribution's library)",
        f"Rebuild {consumer} against the installed library, or use the distribution's driver "
        "package",
    ).text
    copy = (
        f"; meanwhile `vkdoctor exec --search-path DIR -- CMD` with the {name} of the build "
        "the driver came from (VKO001)"
        if whole is None
        else ""
    )
    return f"{prefix} {why}".strip(), Remedy(text=fix + copy + ".")


def _provider_hint(ctx: Context, name: str) -> Remedy:
    family = commands.NATIVE.get(facts.distro_family(ctx) or "")
    if family is None:
        return Remedy(text=f"Install the package that provides {name}.")
    ask = commands.provides(family, name)
    if family == "dpkg":
        # apt-file is no part of a base system, and searches nothing before an apt update
        if not files.is_file(ctx.under("/usr/bin/apt-file")):
            ask = f"apt install apt-file && apt update && {ask}"
        elif not _has_contents_lists(ctx):
            ask = f"apt update && {ask}"
        ask += " (Debian names library packages after the soname)"
    return Remedy(text=f"Install the package that provides {name}: {ask} names it.")


def _has_contents_lists(ctx: Context) -> bool:
    """apt has fetched the Contents files apt-file searches (after apt-file and apt update)."""
    try:
        return any("Contents-" in n for n in tree.names(ctx, "/var/lib/apt/lists"))
    except OSError:
        return False


def _refused_sonames(ctx: Context) -> dict[str, str]:
    """Sonames the overlay's planning (when this run made one) refused outright: soname -> why."""
    outcome = facts.planned_overlay(ctx)
    plan = outcome.plan if outcome is not None else None
    return {r.soname: r.reason for r in plan.refused} if plan is not None else {}


def _refused(ctx: Context) -> dict[str, str]:
    """Candidates the overlay's planning (when this run made one) refused: path -> why."""
    outcome = facts.planned_overlay(ctx)
    plan = outcome.plan if outcome is not None else None
    if plan is None:
        return {}
    return {
        c.path: c.reason or "refused"
        for cs in plan.search.candidates.values()
        for c in cs
        if not c.accepted
    }


class SymbolVersions(Check):
    """Each symbol version a library requires (.gnu.version_r) is defined by the copy that wins.

    ld.so checks versions after finding every file and before running any code: a copy of
    libstdc++.so.6 that defines only up to GLIBCXX_3.4.29 (a conda environment, an AppImage, a
    private directory on LD_LIBRARY_PATH) in front of the system one breaks
    /lib/x86_64-linux-gnu/libLLVM-15.so.1, which needs GLIBCXX_3.4.30, and with it lavapipe and
    radv. The same check predicts ``version `LLVM_23.1' not found``. The finding names the
    library that needs the version, the copy that won and the directory it came from (the one
    that shadows), and the copy elsewhere on the system that has the version.
    """

    code = "VKL003"
    family = "libraries"
    title = "Missing symbol versions"
    # a copy that lacks a version node mostly lacks symbols too: one copy, one failure
    explains = ("VKL006",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return bool(symptom.evidence.get("system_copy")) and symptom.evidence.get(
            "path"
        ) == cause.evidence.get("provider")

    def run(self, ctx: Context) -> Iterable[Finding]:
        for g in facts.version_problems(ctx):
            items = g.items
            ts = list(dict.fromkeys(t for t, _ in items))
            v = items[0][1]
            needs = {x.required_by: x.missing for _, x in items}
            missing = missing_versions(g)
            who = ", ".join(label(t) for t in ts)
            ev = {
                "targets": [t.name for t in ts],
                "required_by_all": list(needs),
                **v.as_dict(),
                "missing": list(missing),
            }
            if g.weak_only:
                yield self.info(
                    f"weak version {', '.join(missing)} missing from {g.provider}",
                    f"{who}: {version_sentence(v)}{_also(needs)} The requirement is weak: "
                    "ld.so does not fail.",
                    **ev,
                )
                continue
            sev = Severity.FAIL if fails_dlopen(g) else Severity.WARN
            # each target's dlopen stops at its own first missing version
            errors = {t: x.error for t, x in reversed(items)}
            if len(errors) == 1:
                fails = f'dlopen would fail with "{v.error}".'
            else:
                fails = (
                    "dlopen would fail with "
                    + "; ".join(f'"{errors[t]}" for {t.name}' for t in ts)
                    + "."
                )
            yield self.finding(
                sev,
                version_title(g),
                f"{who}: {version_sentence(v)}{_also(needs)} {fails}",
                # words: the patchelf it names is for one case ("if the bundle does not need")
                remedy=Remedy(text=version_fix(ctx, g)),
                evidence=ev,
            )


def _also(needs: Mapping[str, tuple[str, ...]]) -> str:
    """The other libraries that need versions from the same copy, each with what it needs."""
    _, *rest = needs
    if not rest:
        return ""
    return " Also required by " + "; ".join(f"{r} ({', '.join(needs[r])})" for r in rest) + "."


#: glibc's own libraries: a copy of another glibc beside this ld.so breaks every program
_GLIBC = {"libc", "libm", "libpthread", "libdl", "librt", "libresolv", "ld-linux-x86-64"}


def shadowing_files(ctx: Context, directory: str) -> list[str]:
    """Libraries in `directory` of which the system has its own copy: putting the directory
    in the ld.so configuration (or exporting it) would replace those for every program."""
    try:
        names = [n for n in tree.names(ctx, directory) if ".so" in n]
    except OSError:
        return []
    out = []
    for name in names[:400]:
        system = system_copy(ctx, name)
        if system is not None and posixpath.dirname(system) != directory:
            out.append(name)
    return out


#: a winner cut short whose headers ld.so can still map (vkdoctor.elf.defect)
_CUT_WORDS = {
    "zeros": "ld.so loads it with zeros in place of the end of its last segment (data, "
    "relocations), so it is not the library it claims to be, even where it seems to work.",
    "none": "only what ld.so does not load is missing (section headers, debug data).",
}


def _cut_short(ctx: Context, lib: Library) -> Defect | None:
    """A winning copy that is truncated past what ld.so checks (it loads, short of its end)."""
    from vkdoctor.elf.defect import diagnose

    d = diagnose(ctx, lib.path, lib.soname or lib.name, lib.elf.machine)
    return d if d is not None and d.kind == "truncated" and d.effect in _CUT_WORDS else None


class LdLibraryPathOnly(Check):
    """Libraries of a driver's closure that are found only because LD_LIBRARY_PATH is set.

    Such a driver works in the shell that exported the variable and nowhere else (a desktop
    launcher, a systemd unit, a CI step, sudo, or a setuid program, which ignores it). When the
    same soname also exists in the system directories, the LD_LIBRARY_PATH copy shadows it for
    every program, which is how an old libstdc++ or libdrm breaks unrelated drivers.
    """

    code = "VKL004"
    family = "libraries"
    title = "Libraries found through LD_LIBRARY_PATH"

    def run(self, ctx: Context) -> Iterable[Finding]:
        seen: dict[str, list[str]] = {}
        libs: dict[str, Any] = {}
        for t, res in facts.target_resolutions(ctx):
            for lib in res.libraries:
                if lib.how is How.LD_LIBRARY_PATH:
                    seen.setdefault(lib.path, []).append(t.name)
                    libs.setdefault(lib.path, lib)
        only: dict[str, list[str]] = {}
        for path, names in seen.items():
            lib = libs[path]
            name = lib.soname or lib.name
            system = system_copy(ctx, name)
            if system == path:
                # ld.so.cache (or a system directory) gives this very file: a program started
                # without LD_LIBRARY_PATH loads the same copy
                continue
            if not system:
                only.setdefault(lib.directory, []).append(path)
                continue
            glibc = name.split(".so")[0] in _GLIBC
            cut = _cut_short(ctx, lib)
            yield self.finding(
                # another glibc's libc beside this ld.so: every program, not only Vulkan, breaks
                Severity.FAIL if glibc else Severity.WARN,
                f"{name} from LD_LIBRARY_PATH shadows the system copy"
                + (", and it is truncated" if cut else ""),
                f"{path} (for {', '.join(dict.fromkeys(names))}) is found through LD_LIBRARY_PATH "
                f"entry {lib.directory or '(empty: the current directory)'} and shadows the "
                f"system copy {system}."
                + (f" It is {cut.what()}: {_CUT_WORDS[cut.effect or 'none']}" if cut else ""),
                remedy=Remedy(
                    text=f"Take {lib.directory} off LD_LIBRARY_PATH (VKL003 and VKL006 say whether "
                    "this copy breaks anything); a program that needs a library only it has gets just "
                    f"that with `vkdoctor exec --search-path {lib.directory} -- CMD`."
                ),
                evidence={
                    "path": path,
                    "directory": lib.directory,
                    "targets": names,
                    "system_copy": system,
                    **({"broken_copy": cut.as_dict()} if cut else {}),
                },
            )
        conf_dirs = {d for d, _ in facts.ld_conf(ctx).dirs}
        from vkdoctor.overlay.store import store_roots

        stores = [f"{root}/overlays" for root in store_roots(ctx)]
        for directory, paths in only.items():
            targets = sorted({n for p in paths for n in seen[p]})
            sonames = [libs[p].soname or libs[p].name for p in paths]
            shown = ", ".join(sonames[:3]) + (
                f" and {len(sonames) - 3} more" if len(sonames) > 3 else ""
            )
            where = directory or "(empty: the current directory)"
            if posixpath.dirname(directory) in stores:
                yield self.info(
                    f"{shown} from vkdoctor's overlay {directory}",
                    f"{shown} (for {', '.join(targets)}) came from the private overlay this run "
                    "was checked under (see VKO001); it is not in your environment.",
                    directory=directory,
                    paths=paths,
                    targets=targets,
                )
                continue
            are = "is" if len(paths) == 1 else "are"
            msg = (
                f"{shown} (for {', '.join(targets)}) {are} found only through LD_LIBRARY_PATH entry "
                f"{where}: a program started without that variable (a CI step that clears the "
                "environment, sudo, a systemd unit, a setuid program) loses this driver."
            )
            said, remedy = _only_there_fix(ctx, directory, directory in conf_dirs)
            msg += said
            yield self.warn(
                f"{len(paths)} driver librar{'y' if len(paths) == 1 else 'ies'} found only through LD_LIBRARY_PATH {where}",
                msg,
                remedy=remedy,
                directory=directory,
                paths=paths,
                targets=targets,
                in_ld_so_conf=directory in conf_dirs,
            )


def _only_there_fix(ctx: Context, directory: str, in_conf: bool) -> tuple[str, Remedy]:
    """What more to say about a directory only LD_LIBRARY_PATH gives, and the fix."""
    if in_conf:
        return (
            f" {directory} is listed in the ld.so configuration, but /etc/ld.so.cache "
            "does not have these libraries: the cache is stale.",
            Remedy(
                commands=("ldconfig",),
                needs_root=True,
                text="(rebuilds /etc/ld.so.cache from the ld.so configuration)",
            ),
        )
    if shadows := shadowing_files(ctx, directory):
        # the whole directory, for every program, would replace those too
        return (
            f" Do not add {directory} to the ld.so configuration or export it: it also "
            f"holds {', '.join(shadows[:4])}, which would replace the system's copies.",
            Remedy(
                text=f"`vkdoctor exec --search-path {directory} -- CMD` for the programs that need "
                "it (a checked overlay of just the missing files)."
            ),
        )
    return (
        "",
        Remedy(
            text=f"`echo {directory} | sudo tee /etc/ld.so.conf.d/vulkan-driver.conf && sudo "
            f"ldconfig`, or only for the programs that need it `vkdoctor exec --search-path "
            f"{directory} -- CMD` (a checked overlay of just the missing files)."
        ),
    )


class UndefinedSymbols(Check):
    """Every strong undefined symbol of a driver's libraries is defined somewhere in its load scope.

    Libraries without symbol versions (libdrm, for one) give ld.so nothing to check before it
    binds symbols: a vendor libdrm_amdgpu.so.1 shadowing the distribution's can lack a function
    radv calls. ld.so then fails only when it binds the symbol: at dlopen for a library linked
    with -z now (BIND_NOW: Arch and Fedora build flags) and for any symbol a relocation outside
    the PLT uses (data, a function pointer, a C++ vtable: bound at load even when binding
    lazily), or later, as a crash with "symbol lookup error", for a function called through the
    PLT of a lazily bound library (Debian 12's Mesa). The scope is the process's global objects
    (the executable, libvulkan, libc, LD_PRELOAD) and the driver's own closure.
    """

    code = "VKL006"
    family = "libraries"
    title = "Undefined symbols"

    def run(self, ctx: Context) -> Iterable[Finding]:
        shadows: dict[str, Shadow] = {}
        #: shadow path -> (target, whether its dlopen fails for it)
        shadow_targets: dict[str, list[tuple[LoadTarget, bool]]] = {}
        groups: dict[tuple[str, str], tuple[Undefined, list[LoadTarget]]] = {}
        for t, res, missing in facts.undefined_by_target(ctx):
            rest, used = shadow.explain(ctx, res, missing, shadows)
            for u in rest:
                groups.setdefault((u.path, u.name), (u, []))[1].append(t)
            for path, fails in used.items():
                shadow_targets.setdefault(path, []).append((t, fails))
        for path, sh in shadows.items():
            yield self._shadow_finding(ctx, sh, shadow_targets.get(path, []))
        by_path: dict[str, list[tuple[Undefined, list[LoadTarget]]]] = {}
        for u, ts in groups.values():
            by_path.setdefault(u.path, []).append((u, ts))
        for path, items in by_path.items():
            # the ones dlopen binds first: they decide whether it fails
            items.sort(key=lambda item: not item[0].fails_dlopen)
            names = [u.name for u, _ in items]
            ts = list(dict.fromkeys(t for _, tl in items for t in tl))
            first = items[0][0]
            who = ", ".join(label(t) for t in ts)
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            if first.fails_dlopen:
                sev = Severity.FAIL if any(t.kind == "driver" for t in ts) else Severity.WARN
                why = (
                    "it is linked with BIND_NOW"
                    if first.bind_now
                    else "a relocation outside the PLT (data, a function pointer or a vtable) "
                    "uses it, and ld.so binds those at load even when binding lazily"
                )
                what = f'dlopen would fail with "{first.error}" ({why})'
            else:
                sev = Severity.WARN
                what = (
                    "it is bound lazily, so the driver loads and the process dies later with "
                    f'"symbol lookup error: {first.error}"'
                )
            yield self.finding(
                sev,
                f"{posixpath.basename(path)}: {len(names)} undefined symbol(s)",
                f"{who}: {path} uses {shown}, defined by no library in its load scope; {what}. "
                "A library of the same soname but another build probably shadows the one it "
                "was linked against.",
                remedy=Remedy(
                    text="Check which copy of its libraries won (VKL004, VKL002 evidence) and make "
                    "the distribution's copy win; upgrade the driver and its libraries together."
                ),
                evidence={
                    "path": path,
                    "symbols": names[:50],
                    "bind_now": first.bind_now,
                    "bound_at_dlopen": [u.name for u, _ in items if u.fails_dlopen][:50],
                    "targets": [t.name for t in ts],
                },
            )

    def _shadow_finding(
        self, ctx: Context, sh: Shadow, targets: list[tuple[LoadTarget, bool]]
    ) -> Finding:
        lib = sh.library
        names = list(sh.symbols)
        users = list(dict.fromkeys(u for us in sh.symbols.values() for u in us))
        shown = ", ".join(
            f"{n} ({', '.join(posixpath.basename(u) for u in sh.symbols[n][:2])})"
            for n in names[:6]
        ) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        failing = [t.name for t, fails in targets if fails]
        lazy = [t.name for t, fails in targets if not fails]
        effects = []
        if failing:
            effects.append(
                f"dlopen fails for {', '.join(failing)} (ld.so binds one of them at load: its "
                "user is linked with BIND_NOW, or a data relocation refers to it)"
            )
        if lazy:
            effects.append(
                f"{', '.join(lazy)} load{'s' if len(lazy) == 1 else ''}, and the process dies "
                "later with 'symbol lookup error' when one is called"
            )
        what = "; ".join(effects)
        drivers = any(t.kind == "driver" for t, fails in targets if fails)
        return self.finding(
            Severity.FAIL if drivers else Severity.WARN,
            f"{lib.soname}, found {how_found(lib)}, lacks {len(names)} symbol(s) the system's "
            "copy has",
            f"{lib.path} (found {how_found(lib)}) wins over the system's {sh.system}, but lacks "
            f"{len(names)} symbol(s) that {sh.system} defines and "
            f"{len(users)} librar{'y' if len(users) == 1 else 'ies'} of the driver stack use: "
            f"{shown}. So {what}.",
            remedy=shadow.unshadow(ctx, lib),
            evidence={
                "path": lib.path,
                "how": lib.how.value,
                "directory": lib.directory,
                "system_copy": sh.system,
                "symbols": names[:50],
                "users": users,
                "bind_now": sh.bind_now,
                "targets": [t.name for t, _ in targets],
                "dlopen_fails": failing,
            },
        )


class WgpuNativeLibrary(Check):
    """wgpu-py's native library (wgpu-native) exists and all its libraries resolve.

    wgpu-py loads libwgpu_native-release.so from its package's resources/ directory (or the
    file WGPU_LIB_PATH names) and wgpu-native then dlopens libvulkan.so.1. If the file is
    missing, or one of its libraries cannot be loaded, no Vulkan adapter can be used from
    Python whatever the drivers do.
    """

    code = "VKL005"
    family = "libraries"
    title = "wgpu-native library"
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        native = find_wgpu_native(ctx)
        if native.package_dir is None and native.source != "WGPU_LIB_PATH":
            yield self.finding(
                Severity.INFO,
                "wgpu is not installed",
                "The wgpu Python package is not importable from this Python, so the compute "
                "probe cannot run here.",
                remedy=Remedy(commands=("pip install wgpu",)),
            )
            return
        if native.path is None:
            yield self.fail(
                "wgpu-native library not found",
                f"wgpu is installed in {native.package_dir} but none of "
                f"{', '.join(native.candidates)} exists.",
                remedy=Remedy(
                    text="Reinstall wgpu (`pip install --force-reinstall wgpu`), or set "
                    "WGPU_LIB_PATH to a libwgpu_native.so."
                ),
                candidates=list(native.candidates),
            )
            return
        res = resolve(ctx, native.path, caller="executable")
        ev = {"path": native.path, "source": native.source, **res.as_dict()}
        if res.ok and res.root is not None:
            yield self.ok(
                f"wgpu-native: {native.path}",
                {
                    "WGPU_LIB_PATH": "Named by WGPU_LIB_PATH",
                    "resources": "wgpu-py's own copy (its resources/ directory)",
                    "exec_prefix": "Found in the interpreter's lib directory",
                }.get(str(native.source), f"Found through {native.source}")
                + f"; the {len(res.libraries) - 1} libraries it needs resolve.",
                **ev,
            )
            return
        detail = ""
        title = "wgpu-native cannot be loaded"
        remedy = Remedy(
            text="Fix the library named above, or point WGPU_LIB_PATH at a working build."
        )
        if res.misses:
            m = res.misses[0]
            other = [
                t
                for t in m.tried
                if t.path == native.path and t.outcome in ("wrong_class", "wrong_machine")
            ]
            if m.needed_by is None and other:
                # the file itself is for another machine: its near misses are beside the point
                title = (
                    f"wgpu-native from {native.source} is not for this {ctx.machine} "
                    f"process (it is built for {other[0].detail or 'another machine'})"
                )
                remedy = Remedy(
                    text=f"Point WGPU_LIB_PATH at a libwgpu_native built for {ctx.machine}, or "
                    "unset it to use wgpu-py's own copy."
                    if native.source == "WGPU_LIB_PATH"
                    else f"Reinstall wgpu for this {ctx.machine} Python "
                    "(`pip install --force-reinstall wgpu`)."
                )
                detail = ""
            else:
                detail = f" Looked in: {places_tried(m.tried, ctx)}. {near_text(m.near)}"
        elif res.versions:
            detail = " " + version_sentence(res.versions[0])
        yield self.fail(
            title,
            f"{native.path} (from {native.source}): dlopen would fail with "
            f'"{res.predicted_error}".{detail}'.strip(),
            remedy=remedy,
            **ev,
        )


_SO_VERSION = re.compile(r"\.so\.([0-9]+\.[0-9]+\.[0-9]+)$")


def loader_version(realpath: str) -> str | None:
    """1.3.239 from /usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.239."""
    m = _SO_VERSION.search(realpath)
    return m.group(1) if m else None


def install_loader(ctx: Context) -> Remedy:
    """How to get the Vulkan loader: installed, or reinstalled when its package is installed but
    its libvulkan.so.1 is gone."""
    from vkdoctor.packages.owner import installed_family

    again = installed_family(ctx, "vulkan-loader")
    if again is not None:
        name = commands.PACKAGES["vulkan-loader"][again]
        return Remedy(commands=(commands.reinstall(again, name),), needs_root=True)
    family = commands.family_of(facts.distro_ids(ctx))
    # no os-release (a bare image tree): the one package database there says which
    databases = facts.package_inventory(ctx).databases
    if family is None and len(databases) == 1:
        family = databases[0].family
    if family is not None:
        return Remedy(commands=(commands.install_for(family, "vulkan-loader"),), needs_root=True)
    return Remedy(text=f"Install the Vulkan loader: {commands.install_each('vulkan-loader')}.")


def install_loader_command(ctx: Context) -> str:
    """`install_loader` as a sentence quotes it."""
    return install_loader(ctx).shown()


LOADER = "libvulkan.so.1"


class VulkanLoaderLibrary(Check):
    """The Vulkan loader, libvulkan.so.1, is found by the dynamic linker, and which version it is.

    Every Vulkan program (vulkaninfo, wgpu-native, the probe) links or dlopens libvulkan.so.1
    by that bare name, so it must be found through ld.so.cache or the system directories (or
    LD_LIBRARY_PATH). Without it nothing else matters: no driver is ever tried. The version is
    read from the file name the soname links to (libvulkan.so.1.3.239 on Debian 12).
    """

    code = "VKH002"
    family = "host"
    title = "Vulkan loader library"
    # a loader cut short kills the load test's child before it reports a step; and without a
    # loader that works, no Vulkan program (the probe neither) gets to any driver
    explains = ("VKT001", "VKT003", "VKR001")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        if symptom.code == "VKR001":
            return True
        broken = cause.evidence.get("broken_copy") or {}
        return broken.get("effect") == "sigbus" and symptom.evidence.get("dlopen") == "not-run"

    def run(self, ctx: Context) -> Iterable[Finding]:
        res = resolve(ctx, LOADER, caller="executable", with_loader=False)
        root = res.root
        if root is None:
            m = res.misses[0]
            broken = (
                broken_copy(ctx, m.bad_file, LOADER, m.error) if m.bad_file is not None else None
            )
            if broken is not None and m.bad_file is not None:
                yield self.fail(
                    f"libvulkan.so.1: the copy that wins, {broken.defect.path}, is "
                    f"{broken.defect.kind_word}",
                    f"ld.so finds the Vulkan loader at {m.bad_file.path} "
                    f"({how_found_tried(m.bad_file)}), which is "
                    f"{broken.what}. {broken.effect} No Vulkan program gets to any driver.",
                    remedy=broken.remedy,
                    **m.as_dict(),
                    broken_copy=broken.evidence,
                )
                return
            yield self.fail(
                "libvulkan.so.1 not found",
                f"The Vulkan loader is not installed or not where ld.so looks: "
                f"{res.predicted_error}. Looked in: {places_tried(m.tried, ctx)}. "
                f"{near_text(m.near)}".strip(),
                remedy=_with_reason(install_loader(ctx)),
                **m.as_dict(),
            )
            return
        found = facts.loader_version(ctx)
        # the file's name, else its code (a plain libvulkan.so.1 copy): as the emulation reads it
        version = found.text if found.version and found.path == root.path else None
        version = version or loader_version(root.realpath)
        ev = {
            "path": root.path,
            "realpath": root.realpath,
            "how": root.how.value,
            "directory": root.directory,
            "version": version,
        }
        if not res.ok:
            yield self.fail(
                "libvulkan.so.1 cannot be loaded",
                f"{root.path} (version {version or 'unknown'}) is found {how_found(root)}, but "
                f'dlopen would fail with "{res.predicted_error}".',
                remedy=_with_reason(install_loader(ctx)),
                **ev,
                problems=res.as_dict(),
            )
            return
        sev = Severity.WARN if root.how is How.LD_LIBRARY_PATH else Severity.OK
        note = (
            " (only through LD_LIBRARY_PATH: a program started without it, under sudo or a "
            "service manager, gets the system's loader or none)"
            if sev is Severity.WARN
            else ""
        )
        yield self.finding(
            sev,
            f"Vulkan loader {version or '(version unknown)'}",
            f"libvulkan.so.1 is {root.realpath}, found {how_found(root)}{note}.",
            remedy=_loader_outside_remedy(ctx, root.directory) if sev is Severity.WARN else None,
            evidence=ev,
        )


def _with_reason(remedy: Remedy) -> Remedy:
    if any("reinstall" in c for c in remedy.commands):
        why = "(the package is installed, but its libvulkan.so.1 is gone or broken)"
        return replace(remedy, text=why)
    return remedy


def _loader_outside_remedy(ctx: Context, directory: str) -> Remedy:
    """For a libvulkan.so.1 found only through LD_LIBRARY_PATH."""
    system = system_copy(ctx, "libvulkan.so.1")
    if system is not None and posixpath.dirname(system) != directory:
        return Remedy(
            text=f"The system has its own Vulkan loader ({system}); unless you need this copy, take "
            f"{directory} off LD_LIBRARY_PATH."
        )
    shadows = shadowing_files(ctx, directory)
    if shadows:
        return Remedy(
            text=f"Install the loader where ld.so finds it without the variable "
            f"({install_loader_command(ctx)}), not by adding {directory} to the ld.so "
            f"configuration: it also holds {', '.join(shadows[:4])}."
        )
    return Remedy(
        text=f"Install the loader where ld.so finds it without the variable "
        f"({install_loader_command(ctx)}), or add {directory} to the ld.so configuration (a "
        "file in /etc/ld.so.conf.d, then sudo ldconfig)."
    )


CHECKS: tuple[type[Check], ...] = (
    VulkanLoaderLibrary,
    LibraryOpens,
    NeededLibraries,
    SymbolVersions,
    LdLibraryPathOnly,
    UndefinedSymbols,
    WgpuNativeLibrary,
)
