"""VKO: the safe overlay. A missing library found in a search path becomes a private, proven
LD_LIBRARY_PATH overlay, reported as the fix only after the load test and the probe pass under it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context
from vkdoctor.model.record import to_json
from vkdoctor.model.sonames import find_remedy
from vkdoctor.overlay.describe import exec_command, export_line
from vkdoctor.overlay.plan import Plan

if TYPE_CHECKING:
    from vkdoctor.facts.overlay import Outcome


def _affected(plan: Plan) -> list[str]:
    """Load targets whose chain lacked a soname the overlay supplies."""
    return [
        target
        for target, chain in plan.chains.items()
        if any(e.soname in plan.chosen for e in chain.missing())
    ]


def _looked(plan: Plan, sonames: list[str]) -> str:
    places = "; ".join(plan.looked_in()) or "nowhere: no --search-path was given"
    return f"Looked for {', '.join(sonames)} in: {places}."


def _supplies(plan: Plan) -> str:
    return "; ".join(
        f"{link.soname} -> {link.target} (needed by {', '.join(link.needed_by)})"
        for link in plan.links
    )


def _load_failures(ctx: Context, targets: list[str]) -> tuple[list[str], dict[str, Any]]:
    run = facts.load_test(ctx)
    failed: list[str] = []
    seen: dict[str, Any] = {}
    for outcome in run.outcomes:
        if outcome.target.dlopen_name not in targets:
            continue
        seen[outcome.target.dlopen_name] = {
            "dlopen": outcome.dlopen,
            "instance": outcome.instance,
            "dlerror": outcome.dlerror,
        }
        if outcome.dlopen != "ok" or outcome.instance not in ("ok", "not-run"):
            why = (
                outcome.dlerror
                or outcome.reason
                or f"dlopen {outcome.dlopen}, instance {outcome.instance}"
            )
            failed.append(f"{outcome.target.dlopen_name}: {why}")
    if run.loader_error:
        failed.append(f"libvulkan.so.1: {run.loader_error}")
    return failed, seen


#: where the lasting fix is, when no overlay could be built
_LASTING = (
    "The lasting fix is in the library finding (VKL002), and in the package finding (VKP002) "
    "where a package is behind it."
)


class OverlayFix(Check):
    """Whether a private overlay supplies the libraries the drivers lack, and whether it works.

    When a driver (or layer) needs a soname that ld.so does not find, vkdoctor looks for it in the
    --search-path directories (and VKDOCTOR_SEARCH_PATH), in libraries extracted from package
    files, in a few likely places and in the package caches. A file that fits (right class and
    machine, that soname, every symbol version the driver needs, its own dependencies resolve)
    becomes a symlink in a private directory under ~/.cache/vkdoctor/overlays (or, when that cache
    cannot be trusted or written, $XDG_RUNTIME_DIR/vkdoctor or a new private temporary directory),
    put first on LD_LIBRARY_PATH. vkdoctor proves it harmless (nothing else resolves differently, nothing
    shadows libc, libstdc++, libvulkan or libdrm, no second LLVM) and then runs the rest of the
    check, the load test and the compute probe under it. Only if they pass is it reported as the
    fix, with the command that reuses it; it stays a workaround until the package is fixed.
    """

    code = "VKO001"
    family = "overlay"
    title = "Overlay for missing libraries"
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        outcome: Outcome = facts.overlay_outcome(ctx)
        if outcome.error is not None:
            yield self.finding(
                Severity.WARN,
                "Cannot build the overlay",
                outcome.error,
                remedy=outcome.fix,
                evidence={"error": outcome.error},
            )
            return
        plan = outcome.plan
        if plan is None or not plan.needed:
            yield self.ok("No library is missing: no overlay needed")
            return
        evidence = plan.evidence()
        if not plan.built:
            yield self._no_overlay(plan, evidence)
            return
        targets = _affected(plan)
        failures, probe = _failures_under(ctx, plan, targets, evidence)
        if failures:
            yield self._still_failing(plan, failures, evidence)
            return
        proven = "the load test and the compute probe" if probe else "the load test (--no-probe)"
        partial = (
            f" Still missing, not in the overlay: {', '.join(plan.unsupplied)}."
            if plan.unsupplied
            else ""
        )
        if plan.store_note:
            partial += f" It is not in vkdoctor's cache: {plan.store_note}."
        if not facts.runs_under(ctx, plan):
            yield _offered(self, ctx, outcome, plan, targets, proven, partial, evidence)
            return
        yield _applied(self, outcome, plan, targets, proven, partial, evidence)

    def _no_overlay(self, plan: Plan, evidence: dict[str, Any]) -> Finding:
        """Nothing fit, or what fit was refused: why each candidate was not used."""
        unsupplied = plan.unsupplied
        refusals = " ".join(f"{r.soname}: {r.reason}." for r in plan.refused)
        rejected = " ".join(
            f"{c.path}: {c.reason}."
            for cs in plan.search.candidates.values()
            for c in cs
            if not c.accepted
        )
        names = ", ".join(unsupplied)
        return self.finding(
            Severity.WARN,
            f"No safe overlay for {names}"
            if rejected or refusals
            else f"No overlay for {names}: no copy of it found",
            " ".join(
                p
                for p in (
                    f"{', '.join(unsupplied)} (needed by "
                    f"{', '.join(sorted({b for n in plan.needs for b in n.needed_by}))}) "
                    "cannot be supplied by an overlay.",
                    _looked(plan, unsupplied),
                    f"Refused candidates: {rejected}" if rejected else "",
                    refusals,
                    "The package file(s) given could not be used: "
                    + "; ".join(plan.package_errors)
                    + " (VKO002)."
                    if plan.package_errors
                    else "",
                    _LASTING,
                )
                if p
            ),
            remedy=Remedy(text=_not_built_remedy(plan, names)),
            evidence=evidence,
        )

    def _still_failing(self, plan: Plan, failures: list[str], evidence: dict[str, Any]) -> Finding:
        return self.finding(
            Severity.FAIL,
            "The overlay was built, but the drivers still fail under it",
            f"Overlay {plan.directory} ({_supplies(plan)}). Under it: "
            + "; ".join(failures)
            + ". It is not the fix; the library findings say what else is wrong."
            + (f" It is not in vkdoctor's cache: {plan.store_note}." if plan.store_note else ""),
            remedy=Remedy(
                text="Fix the driver's packages (see the library and package findings); "
                f"`rm -rf {plan.directory}` removes the overlay."
            ),
            evidence=evidence,
        )


def _failures_under(
    ctx: Context, plan: Plan, targets: list[str], evidence: dict[str, Any]
) -> tuple[list[str], dict[str, Any] | None]:
    """What still fails with the overlay in place: the load test of the targets and, unless
    --no-probe, the compute probe (the probe's result, None without it). Both go into
    `evidence`."""
    # proven where it applies: the report's own context when the user asked for the
    # overlay, else one of its own (the report describes the environment as it is)
    proof = facts.overlay_context(ctx)
    failures, loaded = _load_failures(proof, targets)
    evidence["load_test"] = loaded
    probe: dict[str, Any] | None = None
    if ctx.options.probe:
        probe = facts.probe_result(proof)
        evidence["probe_status"] = probe.get("status")
        if probe.get("status") != "pass":
            failures.append(f"the compute probe: {probe.get('summary') or probe.get('status')}")
    return failures, probe


def _applied(
    check: Check,
    outcome: Outcome,
    plan: Plan,
    targets: list[str],
    proven: str,
    partial: str,
    evidence: dict[str, Any],
) -> Finding:
    """The overlay this check ran under (--search-path, --from-package), proven: the fix for one
    process at a time, with the lasting one from the packages."""
    return check.finding(
        Severity.WARN,
        f"Works with a private overlay for {', '.join(plan.chosen)} (proven by {proven})",
        f"Without it, {', '.join(plan.chosen)} is missing for {', '.join(targets)}. "
        f"The overlay {plan.directory} holds only {_supplies(plan)}, and changes nothing else "
        f"that the drivers load; this whole check ran under it and {proven} passed.{partial} "
        "It is a workaround for one process at a time: do not put it in a shell profile. "
        + (
            "The lasting fix, from the packages as they are: " + " ".join(outcome.lasting_fixes)
            if outcome.lasting_fixes
            else "The lasting fix is the one the library and package findings give for the "
            "missing library (VKL002, VKP002) when the check runs without the overlay."
        ),
        remedy=Remedy(
            text=f"`{exec_command(plan)}` runs a program under it, or `{export_line(plan)}` "
            "sets it in that one shell."
        ),
        evidence={**evidence, "lasting_fixes": list(outcome.lasting_fixes)},
    )


def _offered(
    check: Check,
    ctx: Context,
    outcome: Outcome,
    plan: Plan,
    targets: list[str],
    proven: str,
    partial: str,
    evidence: dict[str, Any],
) -> Finding:
    """The overlay vkdoctor's own search found, proven in a context of its own: the fix for an
    environment that, as it is, fails (VKL002 has that failure; without it, this is it)."""
    names = ", ".join(plan.chosen)
    found = "; ".join(f"{c.real} ({c.origin})" for c in plan.chosen.values())
    lasting = (
        " The lasting fix, from the packages as they are: " + " ".join(outcome.lasting_fixes)
        if outcome.lasting_fixes
        else ""
    )
    return check.finding(
        Severity.WARN if facts.all_selected(ctx, "VKL002") else Severity.FAIL,
        f"An overlay for {names} fixes it (proven by {proven} under it)",
        f"As things are, {names} is missing for {', '.join(targets)} (VKL002): a program started "
        f"the usual way fails. vkdoctor found {found} itself and proved a private overlay "
        f"{plan.directory} with it: {proven} passed under it.{partial} This check describes "
        f"the environment without it; with --search-path or --from-package it runs under it.{lasting}",
        remedy=Remedy(
            text=f'`{exec_command(plan)}` runs a program under it, or `eval "$(vkdoctor overlay)"` '
            "sets it in this shell."
        ),
        evidence={**evidence, "lasting_fixes": list(outcome.lasting_fixes), "applied": False},
    )


def _not_built_remedy(plan: Any, names: str) -> str:
    # the message says where the lasting fix is (VKL002, VKP002) and why none was built
    if any(" would be a second " in r.reason for r in plan.refused):
        # no build of it can join this process: the other drivers load another version, so
        # a program gets only the driver that needs it, and the overlay
        return (
            "`VK_DRIVER_FILES=MANIFEST vkdoctor exec --search-path DIR -- CMD`, MANIFEST being "
            f"the manifest of the driver that needs {names}, and no other."
        )
    if plan.package_errors and all("no space left" in e for e in plan.package_errors):
        # the package could not be unpacked: the cache's filesystem is full
        return (
            "Free space where vkdoctor's cache is (XDG_CACHE_HOME, else ~/.cache), or point "
            "XDG_CACHE_HOME at a filesystem with room, and run again."
        )
    if ", " not in names:
        # the same fix as VKL002's for the library: where to find a copy, and how to give it
        return find_remedy(names)
    return (
        "`vkdoctor check --search-path DIR` or `--from-package FILE` (a .deb, .rpm or "
        f".pkg.tar.zst) with a matching build of {names}, which vkdoctor checks before it uses it."
    )


def _refusal_remedy(soname: str, reason: str) -> str:
    """What to do about a refused candidate: where it sits, or what it is."""
    if any(w in reason for w in ("can write", "owned by ", "writable by ", "can replace it")):
        # the file may fit; the place lets someone else swap it
        return (
            f"Copy {soname} to a directory only you (or root) can change, all the way up, and "
            "give that directory with --search-path."
        )
    return f"Put a build of {soname} that fits in a search path, or remove this one."


class SearchPlaces(Check):
    """Places to look for missing libraries that cannot be used.

    A --search-path (or VKDOCTOR_SEARCH_PATH) entry that does not exist, is not a directory or
    cannot be read, and a --from-package file (or cached package) that is corrupt, truncated or
    not the format its name says. Each is skipped, and named, so a typo does not look like
    "no candidate anywhere".
    """

    code = "VKO002"
    family = "overlay"
    title = "Search paths and package files that cannot be used"
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        plan = facts.overlay_outcome(ctx).plan
        if plan is None:
            return
        for p in plan.problems:
            yield self.finding(
                Severity.WARN,
                f"Search path {p.path} {p.message}",
                f"The {p.origin} {p.path} {p.message}; it was skipped.",
                remedy=Remedy(
                    text="Fix the path given with --search-path or VKDOCTOR_SEARCH_PATH."
                ),
                evidence=to_json(p),
            )
        for err in plan.package_errors:
            full = "no space left" in err
            yield self.finding(
                Severity.WARN,
                "vkdoctor's cache is full: a package file cannot be unpacked"
                if full
                else "A package file cannot be used",
                err,
                remedy=Remedy(
                    text="Free space on the filesystem of vkdoctor's cache (XDG_CACHE_HOME, else "
                    "~/.cache), or point XDG_CACHE_HOME at one with room; the package itself is fine."
                    if full
                    else "Download the package again (or give the right file)."
                ),
                evidence={"error": err},
            )


class RefusedCandidates(Check):
    """Files that were found for a missing soname but refused, and why.

    A candidate is refused when it is a broken link, not an ELF file, truncated, of the wrong
    class (32/64-bit) or machine, has another DT_SONAME, lacks a symbol version the driver needs,
    or cannot have its own dependencies resolved. A soname is refused when supplying it would shadow
    a library the whole process shares (libc, the dynamic linker, libm, libpthread, libdl,
    libstdc++, libgcc_s, libvulkan, libdrm), bring a second library of one family (two LLVMs) into
    the process, or change how anything else resolves.
    """

    code = "VKO003"
    family = "overlay"
    title = "Refused overlay candidates"
    live_only = True

    def run(self, ctx: Context) -> Iterable[Finding]:
        plan = facts.overlay_outcome(ctx).plan
        if plan is None:
            return
        for soname, cands in plan.search.candidates.items():
            chosen = plan.chosen.get(soname)
            for c in cands:
                if not c.accepted:
                    yield self.finding(
                        Severity.WARN,
                        f"{c.path} refused for {soname}",
                        f"{c.path} ({c.origin}) cannot supply {soname}: {c.reason}.",
                        remedy=Remedy(text=_refusal_remedy(soname, c.reason or "")),
                        evidence=c.as_dict(),
                    )
                elif chosen is not None and c is not chosen:
                    yield self.finding(
                        Severity.INFO,
                        f"{c.path} also fits {soname}; {chosen.path} was chosen",
                        f"Two candidates for {soname}: {chosen.path} ({chosen.origin}) comes "
                        f"first in the search order and was chosen; {c.path} ({c.origin}) "
                        "was not used.",
                        evidence={"chosen": chosen.as_dict(), "other": c.as_dict()},
                    )
        for r in plan.refused:
            yield self.finding(
                Severity.WARN,
                f"{r.soname} is not supplied by the overlay",
                r.reason,
                remedy=Remedy(text="Install the distribution's package that provides it."),
                evidence=to_json(r),
            )


CHECKS: tuple[type[Check], ...] = (OverlayFix, SearchPlaces, RefusedCandidates)
