"""VKP: the package databases explain why a driver cannot load, and name the distribution's fix."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from vkdoctor import facts as run_facts
from vkdoctor.checks.base import Check
from vkdoctor.elf.explain import highest_per_family, version_node_key
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace
from vkdoctor.packages import Inventory, Package, commands
from vkdoctor.packages import remedy as fixes
from vkdoctor.packages.conda import conda_owner
from vkdoctor.packages.deps import unmet
from vkdoctor.packages.dpkg import DpkgDB
from vkdoctor.packages.facts import MissingVersion, StackFacts
from vkdoctor.packages.model import Relation
from vkdoctor.packages.pacman import PacmanDB
from vkdoctor.packages.proc import ToolRun
from vkdoctor.packages.remedy import done, line, run, said
from vkdoctor.packages.simulate import LOADER_PACKAGES
from vkdoctor.packages.skew import (
    Diagnosis,
    explain_missing_soname,
    explain_missing_version,
    rpm_foreign,
    sibling_skews,
    unowned_files,
)
from vkdoctor.packages.verify import for_tree, remedy_for_tree, verified

#: how each manager repairs or rebuilds its own database
_REPAIR = {
    "dpkg": said(
        "Check /var/lib/dpkg/status (dpkg keeps a backup in /var/backups/dpkg.status.*); "
        f"sudo {commands.repair('dpkg')}"
    ),
    "pacman": said("Check /var/lib/pacman/local; pacman -Dk lists what is wrong"),
    "rpm": run(str(commands.repair("rpm"))),
}


def _finding(check: Check, d: Diagnosis, ctx: Context) -> Finding:
    evidence = dict(d.evidence)
    if isinstance(evidence.get("fix"), str):
        evidence["fix"] = for_tree(ctx, evidence["fix"])
    if evidence.get("simulations"):
        evidence["simulations"] = [
            {**s, "fix": for_tree(ctx, s["fix"])} for s in evidence["simulations"]
        ]
    return check.finding(
        d.severity,
        d.title,
        for_tree(ctx, d.message) or "",
        remedy=remedy_for_tree(ctx, d.remedy),
        evidence=evidence,
    )


def _driver_packages(ctx: Context, inv: Inventory) -> list[str]:
    """The packages whose files are the drivers: a fix must not remove them."""
    facts = run_facts.package_stack(ctx)
    drivers = [f.path for f in facts.files if f.role == "driver"]
    owners = inv.owners(drivers) if drivers else {}
    return list(dict.fromkeys(p.name for ps in owners.values() for p in ps))


class PackageCheck(Check):
    """A package check: pure analysis of the package databases."""

    family = "packages"


class PackageDatabases(PackageCheck):
    """Which package managers keep the inspected system: dpkg, pacman, rpm, or none.

    The other VKP checks read these databases (directly where the format allows, otherwise with
    one batched query) to tie a broken driver to its packages and versions. A system without
    a package database (a hand-built container, a minimal image) is fine: the package rules
    then have nothing to explain, and the library checks still say what is missing.
    """

    code = "VKP001"
    title = "Package databases"

    def run(self, ctx: Context) -> Iterable[Finding]:
        inv = run_facts.package_inventory(ctx)
        absent = dict(inv.absent)
        for family, why in sorted(inv.unreadable.items()):
            yield self.warn(
                f"{family} database cannot be read",
                f"The {family} database is present but could not be read ({why}); the package "
                "rules cannot use it.",
                remedy=remedy_for_tree(ctx, _REPAIR[family]),
                manager=family,
                reason=why,
            )
        if not inv.databases:
            if inv.unreadable:
                return
            empty = [why for why in absent.values() if why.endswith("lists no installed package")]
            yield self.info(
                "No package database",
                f"No dpkg, pacman or rpm database in {ctx.root}"
                + (f" ({'; '.join(empty)}: an unfinished install?)" if empty else "")
                + ": the package rules have nothing to explain here; library checks still "
                "report what is missing.",
                absent=absent,
            )
            return
        found = []
        counts: dict[str, int] = {}
        for db in inv.databases:
            counts[db.family] = len(db.packages())
            found.append(f"{db.family} database {db.db_path}, {counts[db.family]} packages")
        yield self.info(
            "Package databases: " + "; ".join(found),
            "",
            databases={db.family: db.db_path for db in inv.databases},
            packages=counts,
            absent=absent,
        )


class SiblingSkew(PackageCheck):
    """Binary packages built from one source are installed at different versions.

    Distributions build every binary package of a source (mesa: the GL drivers, each Vulkan
    driver, the lib32/:i386 copies) together, against one LLVM and one libdrm. Installing only
    some of them at a new version (vulkan-swrast 1:26.2.3 beside mesa 1:26.2.2, or
    mesa-vulkan-drivers:i386 behind :amd64) is a partial upgrade: the new ones may need
    libraries the old ones do not, and 32-bit programs (Steam, Wine) get the old driver.
    Grouping: Arch %BASE% (lib32-* compared by upstream version), Debian Source and
    source version (binNMUs share it), rpm SOURCERPM.
    """

    code = "VKP003"
    title = "Sibling packages at different versions"
    explains = ("VKP006",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        # dpkg --audit's unconfigured packages are the Multi-Arch twins it cannot configure
        twins = [t.split(":")[0] for t in cause.evidence.get("multi_arch_twins", ())]
        problems = symptom.evidence.get("problems") or ()
        return bool(twins) and all(any(t in p for t in twins) for p in problems)

    def run(self, ctx: Context) -> Iterable[Finding]:
        inv = run_facts.package_inventory(ctx)
        for skew in sibling_skews(inv):
            d = skew
            twins = d.evidence.get("multi_arch_twins") or []
            if twins:
                # dpkg configures neither twin until they agree: the fix must keep both
                keep = [t.partition(":")[0] for t in twins]
                d = verified(ctx, d, inv, protect=[*keep, *LOADER_PACKAGES])
            yield _finding(self, d, ctx)


class ManagerConsistency(PackageCheck):
    """The package manager's own check of its database: dpkg --audit and apt-get check,
    pacman -Dk, rpm -Va --nofiles (and dnf check on a live Fedora).

    An unmet declared dependency is the package manager admitting a partial upgrade or a forced
    install (--force-depends, -Udd, --nodeps). A clean result proves less than it seems on Arch:
    mesa, vulkan-radeon and vulkan-swrast declare llvm-libs without a version, so pacman -Dk is
    clean while lavapipe needs an LLVM soname that is not installed. The ELF checks catch that.
    apt-get check and rpm -Va are run only when the parsed database already shows an unmet
    dependency (each costs up to a second); dpkg --audit and pacman -Dk always run.
    """

    code = "VKP006"
    title = "Package database consistency"

    def run(self, ctx: Context) -> Iterable[Finding]:
        inv = run_facts.package_inventory(ctx)
        for db in inv.databases:
            c = db.consistency()
            evidence: dict[str, Any] = {
                "manager": db.family,
                "runs": [r.as_evidence() for r in c.runs],
                "unmet": list(c.unmet),
                "problems": list(c.problems),
            }
            tools = ", ".join(r.command for r in c.runs) or "the parsed database"
            problems = list(c.problems) or list(c.unmet)
            skewed = _skewed_packages(ctx, inv)
            if (
                problems
                and skewed
                and run_facts.all_selected(ctx, "VKP002")
                and all(any(n in p for n in skewed) for p in problems)
            ):
                # the same missing dependency VKP002 explains, with its fix: one cause
                yield self.info(
                    f"{db.family}: the unmet dependency is the skew VKP002 explains",
                    f"{tools}: {'; '.join(problems[:8])}.",
                    **evidence,
                )
                continue
            if problems:
                shown = "; ".join(problems[:8]) + (" ..." if len(problems) > 8 else "")
                # each problem names the tool that reported it
                tools = "The package manager's own checks"
                fix = fixes.fix_broken(db.family)
                if any(p.startswith("dpkg --audit") for p in c.problems):
                    fix = run(str(commands.repair("dpkg")), *fix.commands)
                if c.reinstall:
                    # dpkg says these cannot be repaired in place: their files or records
                    # are damaged. When they are all that is wrong, the reinstall is the whole
                    # fix: a --fix-broken after it is judged against the database before it,
                    # where it removes the half-installed package
                    alone = not c.unmet and all(
                        ("half installed" in p or "reinstall" in p)
                        and any(r in p for r in c.reinstall)
                        for p in c.problems
                    )
                    reinstall = commands.reinstall("dpkg", *c.reinstall)
                    fix = run(reinstall) if alone else run(reinstall, *fix.commands)
                missing = _pacman_missing(c.problems) if db.family == "pacman" else []
                if missing:
                    # -Syu does not install a dependency nothing pulls in again
                    fix = run(commands.install_deps("pacman", *missing))
                d = Diagnosis(
                    severity=Severity.FAIL,
                    title=f"{db.family}: the package database reports problems",
                    message=f"{tools}: {shown}. Fix: {line(fix)}.",
                    remedy=fixes.with_upgrade(db.family, fix),
                    evidence={**evidence, "fix": line(fix)},
                )
                if db.family in ("dpkg", "pacman", "rpm"):
                    keep = [*_driver_packages(ctx, inv), *LOADER_PACKAGES]
                    # what each unmet dependency needs: the suite that has it is a fix
                    wants = [
                        {"package": u.package.label, **_relation(u.relation[0])}
                        for u in unmet(db)
                        if len(u.relation) == 1
                    ]
                    d = replace(d, evidence={**d.evidence, "unmet_relations": wants})
                    d = verified(ctx, d, inv, protect=keep)
                yield _finding(self, d, ctx)
                continue
            if c.unavailable:
                yield self.warn(
                    f"{db.family}: could not run the database check",
                    f"{c.unavailable}.",
                    **evidence,
                )
                continue
            pairs = _unversioned_pairs(db.family, inv)
            if pairs:
                # a clean result that must not be read as "the packages fit together"
                more = f" and {len(pairs) - 1} more" if len(pairs) > 1 else ""
                yield self.info(
                    f"pacman -Dk is clean, but blind to {pairs[0]}{more} (no version)",
                    f"{tools} found no problems. That proves nothing about "
                    + ", ".join(pairs[:6])
                    + ": these dependencies carry no version, so pacman accepts any version of "
                    "the library package; the ELF checks decide.",
                    unversioned=pairs,
                    **evidence,
                )
                continue
            yield self.ok(
                f"{db.family}: no database problems",
                f"{tools} found no problems.",
                **evidence,
            )


def _unversioned_pairs(family: str, inv: Inventory) -> list[str]:
    """On Arch: unversioned dependencies on soname-providing packages, which -Dk cannot judge."""
    if family != "pacman":
        return []
    db = next(d for d in inv.databases if d.family == "pacman")
    libs = {p.name for p in db.packages() if any(r.name.endswith(".so") for r in p.provides)}
    pairs = [
        f"{p.name} -> {rel.name}"
        for p in db.packages()
        for group in p.depends
        for rel in group
        if rel.name in libs and not rel.versioned
    ]
    return sorted(pairs, key=lambda pair: (pair.startswith("lib32-"), pair))


# Rules fed by library resolution -----------------------------------------------------------


def _relation(rel: Relation) -> dict[str, str | None]:
    return {"name": rel.name, "op": rel.op, "version": rel.version}


def _skewed_packages(ctx: Context, inv: Inventory) -> set[str]:
    """Names of the packages whose driver misses a library (VKP002's subjects)."""
    facts = run_facts.package_stack(ctx)
    if not facts.missing_sonames:
        return set()
    owners = inv.owners([m.consumer for m in facts.missing_sonames])
    return {p.name for pkgs in owners.values() for p in pkgs}


class MissingSonameSkew(PackageCheck):
    """A driver needs a soname that no installed package provides, while a package provides a
    near miss: the packages are out of step (a partial upgrade), and the distribution's fix.

    Example (Arch): lavapipe (/usr/lib/libvulkan_lvp.so, vulkan-swrast 1:26.2.3-1) needs
    libLLVM.so.23.1, but llvm-libs 22.1.8-1 provides only libLLVM.so.22.1: mesa was upgraded
    without LLVM, a partial upgrade. Fix: sudo pacman -Syu. On Debian the LLVM major is in the
    package name (libllvm23); on Fedora the package requires the soname itself.
    """

    code = "VKP002"
    title = "Missing library explained by packages"
    explains = ("VKL002", "VKP004", "VKP008")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        if symptom.code in ("VKP004", "VKP008"):
            # the repositories' view (VKP008) and the driver package's origin (VKP004) are
            # already in the skew's fix when the repositories cannot carry out the upgrade, or
            # when the driver is a foreign build that no upgrade touches
            if not (cause.evidence.get("repositories") or cause.evidence.get("foreign")):
                return False
            if symptom.code == "VKP008":
                return symptom.evidence.get("soname") == cause.evidence.get("soname")
            package = symptom.evidence.get("package") or {}
            consumer = cause.evidence.get("consumer_package") or {}
            return bool(package) and package.get("name") == consumer.get("name")
        consumers = cause.evidence.get("consumers", [cause.evidence.get("consumer")])
        users = symptom.evidence.get("needed_by_all") or [symptom.evidence.get("needed_by")]
        return symptom.evidence.get("name") == cause.evidence.get("soname") and any(
            u in consumers for u in users
        )

    def run(self, ctx: Context) -> Iterable[Finding]:
        return self.findings(ctx, run_facts.package_stack(ctx))

    def findings(self, ctx: Context, facts: StackFacts) -> Iterable[Finding]:
        if not facts.missing_sonames:
            return
        inv = run_facts.package_inventory(ctx)
        if not inv.databases:
            return
        paths = [
            p
            for f in facts.missing_sonames
            for p in (f.consumer, *(f.near_misses), *([f.target] if f.target else []))
        ]
        owners = inv.owners(paths)
        # one finding per missing soname and fix: lavapipe and RADV missing the same LLVM
        # are one skew with one command
        seen: dict[tuple[str, Remedy | None], Finding] = {}
        for fact in facts.missing_sonames:
            d = explain_missing_soname(fact, inv, owners)
            d = _on_another_distribution(ctx, d) or _with_repositories(d, inv)
            d = verified(ctx, d, inv)
            if d.severity is Severity.INFO and not run_facts.all_selected(ctx, "VKL002"):
                # an unowned driver: "VKL002 is the failure" holds only when VKL002 runs
                d = replace(d, severity=Severity.FAIL)
            key = (fact.soname, d.remedy)
            first = seen.get(key)
            if first is None:
                f = _finding(self, d, ctx)
                seen[key] = replace(f, evidence={**f.evidence, "consumers": [fact.consumer]})
            elif fact.consumer not in first.evidence["consumers"]:
                seen[key] = _joined(first, d, fact.soname, fact.consumer)
        for f in seen.values():
            others = f.evidence["consumers"][1:]
            if not others:
                yield f
                continue
            also = f" Also needed by {', '.join(others)}."
            yield replace(f, message=_before_fix(f.message, also))


_PACMAN_MISSING = re.compile(r"missing '([^'<>=]+)[^']*' dependency for")


def _pacman_missing(problems: Iterable[str]) -> list[str]:
    """The packages `pacman -Dk` says are missing ("missing 'libdrm>=2.4' dependency for ...")."""
    return list(dict.fromkeys(m.group(1) for p in problems if (m := _PACMAN_MISSING.search(p))))


def _before_fix(message: str, sentence: str) -> str:
    """`sentence` added before the message's closing "Fix: ...", which stays its last."""
    head, sep, fix = message.partition(" Fix: ")
    return f"{head}{sentence}{sep}{fix}" if sep else f"{message}{sentence}"


def _joined(first: Finding, d: Diagnosis, soname: str, consumer: str) -> Finding:
    """`first` with another library that misses the same soname, with the same fix."""
    needs = f" needs {soname}"
    rest = first.title.partition(needs)[2] or first.title.partition(f" need {soname}")[2]
    drivers = list(first.evidence.get("drivers") or [first.title.partition(needs)[0]])
    other = d.title.partition(needs)[0]
    if other not in drivers:
        drivers.append(other)
    names = drivers[0] if len(drivers) == 1 else f"{', '.join(drivers[:-1])} and {drivers[-1]}"
    return replace(
        first,
        title=f"{names} {'needs' if len(drivers) == 1 else 'need'} {soname}{rest}",
        evidence={
            **first.evidence,
            "consumers": [*first.evidence["consumers"], consumer],
            "drivers": drivers,
        },
    )


#: the distribution family whose own package manager each one is
_NATIVE = {"dpkg": "debian", "pacman": "arch", "rpm": "fedora"}
#: the driver package of each family
_DRIVER_PACKAGE = {
    "debian": "mesa-vulkan-drivers",
    "arch": "vulkan-swrast",
    "fedora": "mesa-vulkan-drivers",
}


def _on_another_distribution(ctx: Context, d: Diagnosis) -> Diagnosis | None:
    """A driver package of another distribution's manager (an rpm on Debian): that manager's
    upgrade command does not exist here, and no upgrade brings the two together."""
    consumer = d.evidence.get("consumer_package")
    here = run_facts.distro_family(ctx)
    if consumer is None or here is None or _NATIVE.get(consumer["manager"]) == here:
        return None
    name, manager = consumer["name"], consumer["manager"]
    remove = commands.remove_alone(manager if manager in commands.TABLE else "pacman", name)
    install = commands.install(commands.NATIVE[here], _DRIVER_PACKAGE[here])
    fix = f"sudo {remove}, then sudo {install}"
    message, _, _ = d.message.partition(": ")
    return replace(
        d,
        message=f"{message}: {name} is {'an' if manager == 'rpm' else 'a'} {manager} package on "
        f"a {here.capitalize()} system (installed with "
        f"{manager} directly), built against another distribution's libraries; no upgrade of "
        f"either package manager brings them together. Fix: {fix}.",
        # words: the two commands are one sentence ("A, then B")
        remedy=said(f"{fix}."),
        evidence={**d.evidence, "foreign_manager": manager},
    )


def _with_repositories(d: Diagnosis, inv: Inventory) -> Diagnosis:
    """A skew whose distribution fix the repositories cannot carry out (VKP008's view: the
    lists lack the package, or the driver came from a PPA that does not ship it) gets the fix
    that works instead; apt --fix-broken would remove the driver there."""
    from vkdoctor.packages.pending import repository_view

    consumer = d.evidence.get("consumer_package")
    if d.severity is not Severity.FAIL or consumer is None:
        return d
    if d.evidence.get("modified") or d.evidence.get("foreign"):
        return d  # the fix is the package's own file, or a rebuild: no upgrade in it
    view = repository_view(d, inv)
    if view is None or view.severity is not Severity.WARN:
        return d
    db = next((x for x in inv.databases if x.family == consumer["manager"]), None)
    pkg = next((p for p in (db.by_name(consumer["name"]) if db else ())), None)
    origin = db.origins([pkg]).get(pkg, "") if isinstance(db, DpkgDB) and pkg else ""
    if "ppa:" in origin:
        ppa = origin.split("ppa:", 1)[1].split(maxsplit=1)[0].rstrip(").,")
        purge = run(f"ppa-purge ppa:{ppa}")
        fix = line(purge)
        why = (
            f"{consumer['name']} comes from ppa:{ppa}, and neither it nor the archive offers "
            f"what it needs, so the upgrade cannot bring it; going back to the archive's "
            "packages can"
        )
    else:
        purge = None
        fix = (view.remedy.text if view.remedy else "").rstrip(".")
        why = view.message.rstrip(".")
        why = why[0].lower() + why[1:]
    message, _, _ = d.message.partition(" Fix: ")
    return replace(
        d,
        message=f"{message} But {why} (VKP008). Fix: {fix}.",
        remedy=done(purge) if purge else said(f"{fix}."),
        evidence={**d.evidence, "repositories": view.evidence, "fix": fix},
    )


class UnownedOrForeign(PackageCheck):
    """A driver or a library it loads belongs to no package (/usr/local, /opt, a private
    directory), or to a package the database marks as foreign (not from the configured
    repositories: AUR or local on Arch, another vendor on rpm).

    The package manager keeps only its own files in step. A hand-installed driver or LLVM is
    the usual way a system ends up loading a library built against another version.
    """

    code = "VKP004"
    title = "Driver files no package owns, or from a foreign origin"

    def run(self, ctx: Context) -> Iterable[Finding]:
        return self.findings(ctx, run_facts.package_stack(ctx))

    def findings(self, ctx: Context, facts: StackFacts) -> Iterable[Finding]:
        inv = run_facts.package_inventory(ctx)
        if not inv.databases or not facts.files:
            return
        owners = inv.owners(f.path for f in facts.files)
        owning: list[Package] = list(dict.fromkeys(p for ps in owners.values() for p in ps))
        foreign: dict[Package, str] = {}
        for db in inv.databases:
            mine = [p for p in owning if p.family == db.family]
            if isinstance(db, PacmanDB):
                answer = db.foreign()
                if answer is not None:
                    names, _ = answer
                    foreign.update(
                        {
                            p: "not in any configured repository (pacman -Qm)"
                            for p in mine
                            if p.name in names
                        }
                    )
            elif isinstance(db, DpkgDB):
                foreign.update(db.origins(mine))
            elif db.family == "rpm":
                foreign.update(rpm_foreign(ctx, db, mine))
        for d in unowned_files(facts.files, inv, owners, foreign):
            yield _finding(self, d, ctx)


class MissingVersionOwner(PackageCheck):
    """A library needs a symbol version that the copy which wins the search does not define,
    tied to the package (or conda environment, or application bundle) that put it there.

    The common case: a conda environment's (or an AppImage's) old libstdc++.so.6 comes first
    through LD_LIBRARY_PATH or an RPATH, and the system's libLLVM needs GLIBCXX_3.4.30. The fix
    is a new enough libstdc++ in that environment (conda install -c conda-forge
    'libstdcxx-ng>=12'), never a symlink to the system copy.
    """

    code = "VKP005"
    title = "Missing symbol version explained by packages"
    explains = ("VKL003",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return symptom.evidence.get("provider") == cause.evidence.get("provider") and (
            cause.evidence.get("version") in symptom.evidence.get("missing", ())
        )

    def run(self, ctx: Context) -> Iterable[Finding]:
        return self.findings(ctx, run_facts.package_stack(ctx))

    def findings(self, ctx: Context, facts: StackFacts) -> Iterable[Finding]:
        if not facts.missing_versions:
            return
        inv = run_facts.package_inventory(ctx)
        paths = [
            p for f in facts.missing_versions for p in (f.consumer, f.provider, *f.alternatives)
        ]
        owners = inv.owners(paths) if inv.databases else {}
        # one finding per copy, told from its highest missing version and every library that
        # needs that one (the same library needs it for every driver it is part of)
        groups: dict[str, dict[str, list[MissingVersion]]] = {}
        for fact in facts.missing_versions:
            group = groups.setdefault(fact.provider, {}).setdefault(fact.version, [])
            if all(f.consumer != fact.consumer for f in group):
                group.append(fact)
        for provider, by_version in groups.items():
            conda = conda_owner(ctx, provider)
            top = highest_per_family(by_version)
            d = explain_missing_version(by_version[top[0]], owners, conda)
            if len(by_version) > 1:
                others = sorted((v for v in by_version if v != top[0]), key=version_node_key)
                d = replace(
                    d,
                    title=f"{by_version[top[0]][0].soname}: {', '.join(top)} missing from the "
                    "copy that wins",
                    message=_before_fix(d.message, f" It lacks {', '.join(others)} as well."),
                    evidence={**d.evidence, "versions": list(by_version)},
                )
            if d.severity is Severity.INFO and not run_facts.all_selected(ctx, "VKL003"):
                # "VKL003 is the failure" holds only when VKL003 runs
                d = replace(d, severity=Severity.FAIL)
            yield _finding(self, verified(ctx, d, inv), ctx)


class HeldPackages(PackageCheck):
    """A package of the driver stack is held at its version: on hold in dpkg (apt-mark hold),
    in IgnorePkg or IgnoreGroup in pacman.conf, or locked by dnf versionlock.

    Every upgrade skips a held package while the rest of the system moves on. Held mesa or LLVM
    is how a driver ends up built for an LLVM the system does not have (or the reverse), and
    while the hold stays, the distribution's fix for that skew (a full upgrade) cannot repair
    it. The packages looked at are those owning a driver, a library in a driver's closure, or
    the other version of a library a driver misses (llvm-libs 22.1 where 23.1 is needed).
    """

    code = "VKP007"
    title = "Held driver-stack packages"

    def run(self, ctx: Context) -> Iterable[Finding]:
        return self.findings(ctx, run_facts.package_stack(ctx))

    def findings(self, ctx: Context, facts: StackFacts) -> Iterable[Finding]:
        inv = run_facts.package_inventory(ctx)
        paths = [f.path for f in facts.files]
        paths += [p for m in facts.missing_sonames for p in (m.consumer, *m.near_misses)]
        if not inv.databases or not paths:
            return
        owners = inv.owners(paths)
        files: dict[Package, list[str]] = {}
        for path in dict.fromkeys(paths):
            for pkg in owners.get(path, ()):
                files.setdefault(pkg, []).append(path)
        for pkg, owned in files.items():
            if pkg.hold is None:
                continue
            yield self.warn(
                f"{pkg.label} is held at its version",
                f"{pkg.label} owns {', '.join(owned[:3])}{' ...' if len(owned) > 3 else ''} "
                f"and is held by {pkg.hold}: upgrades skip it while the rest of the driver "
                "stack moves on.",
                remedy=remedy_for_tree(ctx, done(fixes.release(pkg.family, pkg.name))),
                package=pkg.name,
                version=pkg.version,
                manager=pkg.family,
                hold=pkg.hold,
                files=owned,
            )


class RepositoryView(PackageCheck):
    """For a driver that misses a library (VKP002): do the repositories, as the package manager
    last refreshed its lists, offer the package that brings it (rule P4, pending upgrades)?

    If they do, the distribution's fix is only pending. If they do not, the driver came from a
    newer mirror or another source, and the full upgrade cannot repair it: refresh the lists
    from an up-to-date mirror, or return the driver to the repositories' version. Asked only
    when such a skew exists (`apt-cache policy`, `pacman -Si`, dnf's cached metadata).
    """

    code = "VKP008"
    title = "What the repositories offer for a skew"

    def run(self, ctx: Context) -> Iterable[Finding]:
        return self.findings(ctx, run_facts.package_stack(ctx))

    def findings(self, ctx: Context, facts: StackFacts) -> Iterable[Finding]:
        from vkdoctor.packages.pending import repository_view

        inv = run_facts.package_inventory(ctx)
        if not inv.databases or not facts.missing_sonames:
            return
        paths = [p for f in facts.missing_sonames for p in (f.consumer, *f.near_misses)]
        owners = inv.owners(paths)
        seen: set[str] = set()
        for fact in facts.missing_sonames:
            view = repository_view(explain_missing_soname(fact, inv, owners), inv)
            if view is not None and view.title not in seen:
                seen.add(view.title)
                yield _finding(self, view, ctx)


def _why(run: ToolRun | None) -> str:
    return f": {run.problem}" if run is not None and run.problem else ""


class MissingManifest(PackageCheck):
    """A Vulkan driver manifest that an installed package put in /usr/share/vulkan/icd.d (or
    /etc/vulkan/icd.d) is gone, while dpkg still lists the package as installed.

    The loader finds a driver only through its manifest: without it the driver is not there,
    and nothing else fails (on the live machine the load checks find one device fewer; in a
    --root tree, nothing at all). dpkg --verify confirms the file is missing. The packages read
    are those that provide vulkan-icd or are named after Vulkan. To hide a driver on purpose,
    select the others with VK_DRIVER_FILES (or VK_LOADER_DRIVERS_DISABLE) instead of deleting
    its manifest: the next upgrade puts the file back anyway.
    """

    code = "VKP010"
    title = "Driver manifests missing from their package"

    def run(self, ctx: Context) -> Iterable[Finding]:
        from vkdoctor.packages.manifests import missing_manifests, verify_says_missing

        for db in run_facts.package_inventory(ctx).databases:
            if not isinstance(db, DpkgDB):
                continue
            for gone in missing_manifests(ctx, db):
                pkg = gone.package
                confirmed = [verify_says_missing(gone.verify, p) for p in gone.paths]
                by = (
                    " (dpkg --verify lists it as missing)"
                    if all(confirmed)
                    else f" (dpkg --verify could not run{_why(gone.verify)})"
                    if None in confirmed
                    else ""
                )
                fix = fixes.reinstall("dpkg", pkg.display_name)
                paths = ", ".join(gone.paths)
                d = Diagnosis(
                    severity=Severity.WARN,
                    title=f"{PurePosixPath(gone.paths[0]).name} is gone; {pkg.label} is "
                    "still installed",
                    message=f"{pkg.label} installed the driver manifest {paths}, which is gone"
                    f"{by}: the loader does not see that driver. Fix: {line(fix)}.",
                    remedy=done(fix, f"(puts back {pkg.name}'s own files)."),
                    evidence={
                        "package": pkg.as_evidence(),
                        "missing": list(gone.paths),
                        "verify": gone.verify.as_evidence() if gone.verify else None,
                        "fix": line(fix),
                    },
                )
                d = verified(
                    ctx, d, run_facts.package_inventory(ctx), protect=[pkg.name, *LOADER_PACKAGES]
                )
                yield _finding(self, d, ctx)


class StackPackages(PackageCheck):
    """The packages, with their versions, that own the files the driver stack loads: each
    driver and layer library and every library in its closure (as ld.so resolves it).

    Information for the report, so that the reports of two machines say which package versions
    differ behind a driver that loads on one and not the other (`vkdoctor diff`). The owners are
    those VKP004 and VKP007 already look up, in the same pass over the database.
    """

    code = "VKP009"
    title = "Driver stack packages"

    def run(self, ctx: Context) -> Iterable[Finding]:
        inv = run_facts.package_inventory(ctx)
        facts = run_facts.package_stack(ctx)
        if not inv.databases or not facts.files:
            return
        owners = inv.owners(f.path for f in facts.files)
        packages: dict[Package, list[str]] = {}
        files: dict[str, str | None] = {}
        for f in facts.files:
            pkgs = owners.get(f.path, ())
            for pkg in pkgs:
                packages.setdefault(pkg, []).append(f.path)
            label = pkgs[0].label if pkgs else None
            files[f.path] = label
            if f.overlay_link:
                files[f.overlay_link] = label
        listed = [pkg.label for pkg in packages]
        drivers = list(
            dict.fromkeys(
                label for f in facts.files if f.role == "driver" and (label := files[f.path])
            )
        )
        unowned = sum(1 for f in facts.files if files[f.path] is None)
        yield self.info(
            f"Driver stack: {len(listed)} package{'s' if len(listed) != 1 else ''}"
            + (f"; the drivers from {', '.join(drivers[:2])}" if drivers else "")
            + (" and more" if len(drivers) > 2 else ""),
            f"The drivers' libraries and their closures come from {', '.join(listed) or 'no package'}"
            + (f"; {unowned} file{'s' if unowned != 1 else ''} no package owns" if unowned else "")
            + ".",
            packages=[
                {
                    "manager": pkg.family,
                    "name": pkg.display_name,
                    "version": pkg.version,
                    "arch": pkg.arch,
                    "source": pkg.source,
                    "source_version": pkg.source_version,
                    "files": owned,
                }
                for pkg, owned in packages.items()
            ],
            files=files,
        )


CHECKS: tuple[type[Check], ...] = (
    PackageDatabases,
    MissingSonameSkew,
    MissingVersionOwner,
    UnownedOrForeign,
    SiblingSkew,
    ManagerConsistency,
    HeldPackages,
    RepositoryView,
    StackPackages,
    MissingManifest,
)
