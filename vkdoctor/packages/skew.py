"""The package rules as pure functions: ELF facts + package databases -> diagnoses.

Each function takes the facts and the inventory (and owners already looked up in one batch) and
returns `Diagnosis` values; the checks in vkdoctor.checks.packages turn them into findings.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from vkdoctor.model import Remedy, Severity
from vkdoctor.model.context import Context
from vkdoctor.model.digits import numbers_key, saturated
from vkdoctor.model.record import field, record
from vkdoctor.packages import commands
from vkdoctor.packages import remedy as fixes
from vkdoctor.packages.conda import CondaPackage
from vkdoctor.packages.facts import MissingSoname, MissingVersion, StackFile
from vkdoctor.packages.model import Inventory, Package, PackageDB, Relation
from vkdoctor.packages.names import driver_name, library_label, numbers, stem
from vkdoctor.packages.remedy import done, line, run, said

Owners = Mapping[str, tuple[Package, ...]]

#: libstdc++ version node -> the GCC major that introduced it (libstdc++ ABI documentation)
GLIBCXX_GCC = {
    "GLIBCXX_3.4.28": 10,
    "GLIBCXX_3.4.29": 11,
    "GLIBCXX_3.4.30": 12,
    "GLIBCXX_3.4.31": 13,
    "GLIBCXX_3.4.32": 13,
    "GLIBCXX_3.4.33": 14,
    "GLIBCXX_3.4.34": 15,
}
_64BIT_ARCHES = ("x86_64", "aarch64", "ppc64le", "ppc64", "s390x", "riscv64", "loongarch64")


@record(frozen=True, kw_only=True)
class Diagnosis:
    severity: Severity
    title: str
    message: str
    remedy: Remedy | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


def _first(pkgs: Sequence[Package] | None) -> Package | None:
    return pkgs[0] if pkgs else None


def _shape(name: str) -> str:
    return re.sub(r"[0-9]+", "N", PurePosixPath(name).name)


def _subject(fact_target: str | None, consumer: str, cpkg: Package | None) -> str:
    """`lavapipe (/usr/lib/libvulkan_lvp.so, vulkan-swrast 1:26.2.3-1)`."""
    owner = cpkg.label if cpkg else "which no package owns"
    target = fact_target or consumer
    drv = driver_name(target)
    if target == consumer:
        return f"{drv} ({consumer}, {owner})"
    return f"{drv}'s dependency {consumer} ({owner})"


def _offered(soname: str, paths: Sequence[str]) -> list[str]:
    """The near-miss names worth naming: same shape as the soname first, else any numbered one."""
    names = list(dict.fromkeys(PurePosixPath(p).name for p in paths))
    names = [n for n in names if n != soname]
    same = [n for n in names if _shape(n) == _shape(soname)]
    return same or [n for n in names if numbers(n)] or names


def _direction(soname: str, offered: Sequence[str]) -> int:
    """1: the consumer wants a newer library than is there; -1: an older one; 0: unknown."""
    want = numbers(soname)
    have = [numbers(n) for n in offered if numbers(n)]
    if not want or not have:
        return 0
    best = max(have)
    return (want > best) - (want < best)


def _declared(pkg: Package, names: Sequence[str]) -> list[Relation]:
    return [rel for group in pkg.depends for rel in group if rel.name in names]


def _installed(db: PackageDB, name: str, arch: str | None = None) -> tuple[Package, ...]:
    pkgs = db.by_name(name)
    if arch:
        pkgs = tuple(p for p in pkgs if p.arch in (arch, "all", "any", "noarch"))
    return pkgs


def _dpkg_clause(
    db: PackageDB, cpkg: Package, soname: str
) -> tuple[str, Remedy, dict[str, Any], str | None]:
    """Debian names library packages after the soname: libLLVM.so.23.1 -> libllvm23."""
    base = stem(soname).lower()
    want = numbers(soname)
    major = str(want[0]) if want else ""
    pattern = re.compile(rf"^{re.escape(base)}-?{major}(?:[.-][0-9]+)*(?:t64)?$")
    deps = [rel for group in cpkg.depends for rel in group if pattern.match(rel.name)]
    guess = deps[0].name if deps else f"{base}{major}"
    arch = cpkg.arch if cpkg.multi_arch == "same" else None
    qualified = f"{guess}:{cpkg.arch}" if arch else guess
    have = _installed(db, guess, arch)
    evidence = {"expected_package": qualified, "declared": [str(d) for d in deps]}
    # the file lists know who ships the soname, whatever its name (zlib1g: libz.so.1)
    shipper = _shipper(db, soname, _dpkg_dirs(cpkg.arch))
    if shipper is not None:
        evidence["damaged"] = shipper.label
        name = f"{shipper.name}:{shipper.arch}" if shipper.multi_arch == "same" else shipper.name
        clause = f" ({shipper.label} is installed and lists {soname}, but the file is gone)"
        return clause, run(commands.reinstall("dpkg", name)), evidence, None
    if have:
        evidence["damaged"] = have[0].label
        clause = f" ({have[0].label} is installed, but its {soname} is gone)"
        return clause, run(commands.reinstall("dpkg", qualified)), evidence, None
    if deps:
        clause = f" ({cpkg.name} depends on {deps[0]}, which is not installed)"
        return clause, fixes.fix_broken("dpkg"), evidence, None
    clause = (
        f" ({cpkg.name} does not declare a dependency on {guess}, so apt may have removed it: "
        "an incomplete package, such as a vendor build)"
    )
    return (
        clause,
        run(
            commands.refresh("dpkg"),
            commands.install("dpkg", qualified),
            commands.mark_manual(qualified),
        ),
        evidence,
        guess,
    )


#: Debian's multiarch directory for an architecture
_TRIPLET = {
    "amd64": "x86_64-linux-gnu",
    "i386": "i386-linux-gnu",
    "arm64": "aarch64-linux-gnu",
    "armhf": "arm-linux-gnueabihf",
    "ppc64el": "powerpc64le-linux-gnu",
    "s390x": "s390x-linux-gnu",
    "riscv64": "riscv64-linux-gnu",
}


def _dpkg_dirs(arch: str) -> tuple[str, ...]:
    """Where a Debian package of `arch` puts its libraries."""
    triplet = _TRIPLET.get(arch)
    multiarch = (f"/usr/lib/{triplet}", f"/lib/{triplet}") if triplet else ()
    return (*multiarch, "/usr/lib", "/lib", "/usr/lib64", "/lib64")


#: where each family's 64-bit and 32-bit libraries live
_LIBDIRS = {
    ("rpm", True): ("/usr/lib64", "/lib64"),
    ("rpm", False): ("/usr/lib", "/lib"),
    ("pacman", True): ("/usr/lib",),
    ("pacman", False): ("/usr/lib32",),
}


def _shipper(db: PackageDB, soname: str, dirs: Sequence[str]) -> Package | None:
    """The installed package whose file list has `soname` in one of the library directories
    `dirs`: its file is gone when nothing provides the soname any more."""
    paths = [f"{d}/{soname}" for d in dirs]
    try:
        owners = db.owners(paths)
    except Exception:  # a broken database: VKP001 says so
        return None
    return next((pkgs[0] for p in paths if (pkgs := owners.get(p))), None)


def _is64(pkg: Package, elf_class: int | None) -> bool:
    """lib32-* packages on Arch are arch x86_64 but hold 32-bit files: the ELF class decides."""
    return elf_class == 64 if elf_class else pkg.arch in _64BIT_ARCHES


def _rpm_clause(
    db: PackageDB, cpkg: Package, soname: str, elf_class: int | None
) -> tuple[str, Remedy, dict[str, Any], str | None]:
    """rpm requires the soname itself: libLLVM.so.23.1()(64bit)."""
    suffix = "()(64bit)" if _is64(cpkg, elf_class) else ""
    cap = f"{soname}{suffix}"
    required = [rel for group in cpkg.depends for rel in group if rel.name == cap]
    providers = [p for p in db.packages() if any(r.name == cap for r in p.provides)]
    evidence = {
        "capability": cap,
        "required": bool(required),
        "providers": [p.label for p in providers],
    }
    if providers:
        evidence["damaged"] = providers[0].label
        clause = f" ({providers[0].label} provides {cap}, but the file is gone)"
        return clause, fixes.reinstall("rpm", providers[0].name), evidence, None
    shipper = _shipper(db, soname, _LIBDIRS[(db.family, _is64(cpkg, elf_class))])
    if shipper is not None:
        evidence["damaged"] = shipper.label
        clause = f" ({shipper.label} is installed and lists {soname}, but the file is gone)"
        return clause, fixes.reinstall("rpm", shipper.name), evidence, None
    if required:
        clause = (
            f" ({cpkg.name} requires {cap}, which no installed package provides: it was "
            "installed with --nodeps or from another repository)"
        )
        return clause, fixes.upgrade("rpm"), evidence, None
    return "", fixes.upgrade("rpm"), evidence, None


def _pacman_clause(
    db: PackageDB, cpkg: Package, ppkg: Package | None, soname: str, elf_class: int | None
) -> tuple[str, Remedy, dict[str, Any], str | None]:
    """Arch declares llvm-libs without a version; soname provides read `libLLVM.so=23.1-64`."""
    name, _, ver = soname.partition(".so.")
    bits = "64" if _is64(cpkg, elf_class) else "32"
    cap = f"{name}.so={ver}-{bits}" if ver else f"{soname}-{bits}"
    cap_name = cap.split("=", 1)[0]
    names = [cap_name] + ([ppkg.name] if ppkg else [])
    declared = _declared(cpkg, names)
    providers = [
        p
        for p in db.packages()
        if any(r.name == cap_name and f"{r.name}={r.version}" == cap for r in p.provides)
    ]
    evidence = {
        "capability": cap,
        "declared": [str(d) for d in declared],
        "providers": [p.label for p in providers],
        "declared_unversioned": bool(declared) and not any(d.versioned for d in declared),
    }
    if providers:
        evidence["damaged"] = providers[0].label
        clause = f" ({providers[0].label} provides {cap}, but the file is gone)"
        return clause, fixes.reinstall("pacman", providers[0].name), evidence, None
    shipper = _shipper(db, soname, _LIBDIRS[(db.family, _is64(cpkg, elf_class))])
    if shipper is not None:
        evidence["damaged"] = shipper.label
        clause = f" ({shipper.label} is installed and lists {soname}, but the file is gone)"
        return clause, fixes.reinstall("pacman", shipper.name), evidence, None
    return "", fixes.upgrade("pacman"), evidence, None


def explain_missing_soname(fact: MissingSoname, inv: Inventory, owners: Owners) -> Diagnosis:
    """The target sentence: who needs what, who provides what instead, why, and the fix."""
    cpkg = _first(owners.get(fact.consumer))
    subject = _subject(fact.target, fact.consumer, cpkg)
    owned_near, unowned_near = _near_misses_by_owner(fact, owners)
    # the closest version is the one that explains the skew (libLLVM-15 before libLLVM-14)
    ppkg = max(
        owned_near,
        key=lambda pkg: max(numbers(p) for p in owned_near[pkg]),
        default=None,
    )
    offered = _offered(fact.soname, owned_near[ppkg] if ppkg else fact.near_misses)
    direction = _direction(fact.soname, offered)
    lib = library_label(fact.soname)
    known = cpkg or ppkg
    family = known.family if known else None
    evidence: dict[str, Any] = {
        "consumer": fact.consumer,
        "soname": fact.soname,
        "target": fact.target,
        "near_misses": list(fact.near_misses),
        "consumer_package": cpkg.as_evidence() if cpkg else None,
        "provider_package": ppkg.as_evidence() if ppkg else None,
        "offered": offered,
        "unowned_near_misses": unowned_near,
        #: 1: the consumer needs a newer library than installed; -1: an older one; 0: unknown
        "direction": direction,
    }
    if cpkg is not None and inv.db_of(cpkg).modified(cpkg, fact.consumer):
        return _replaced(fact, cpkg, subject, lib, evidence)

    clause, guess, fix = "", None, fixes.upgrade(family) if family in commands.TABLE else None
    if cpkg is not None:
        clause, fix, extra, guess = _family_clause(inv.db_of(cpkg), cpkg, ppkg, fact)
        evidence.update(extra)
    have = _what_is_installed(ppkg, offered, unowned_near)
    if cpkg is not None and cpkg.family == "pacman" and _foreign_pacman(inv, cpkg):
        return _foreign_build(fact, cpkg, subject, have, lib, evidence)
    cause = _skew_cause(cpkg, lib, direction, evidence, driver_name(fact.target or fact.consumer))
    held = [p for p in _blocking(cpkg, ppkg, direction) if p.hold]
    for pkg in held:
        clause += f" ({pkg.name} is held by {pkg.hold}, so upgrades skip it)"
    if held and fix:
        # the upgrade cannot bring what a hold keeps back: release first
        fix = fixes.release(held[0].family, held[0].name)
        evidence["held"] = {p.name: p.hold for p in held}
    message = f"{subject} needs {fact.soname}, but {have}: {cause}{clause}."
    message += _skew_notes(fact, cpkg, ppkg, lib, guess, direction, evidence)
    if cpkg is None:
        fix = None
        remedy = said(
            "Rebuild or reinstall it against the installed packages, or use the distribution's "
            "driver package."
        )
    else:
        remedy = done(fix) if fix else said("")
    if fix:
        message += f" Fix: {line(fix)}."
        if family and not evidence.get("damaged"):
            # a deleted file is put back by the reinstall alone: no upgrade after it
            remedy = fixes.with_upgrade(family, fix)
    return Diagnosis(
        # a driver no package owns: VKL002 is the failure, and the packages only say that
        # the driver is outside them
        severity=Severity.FAIL if cpkg is not None else Severity.INFO,
        title=f"{driver_name(fact.target or fact.consumer)} needs {fact.soname}: package skew"
        if cpkg is not None
        else f"{driver_name(fact.target or fact.consumer)} needs {fact.soname}: built outside "
        "the package manager",
        message=message,
        remedy=remedy,
        evidence=evidence,
    )


def _near_misses_by_owner(
    fact: MissingSoname, owners: Owners
) -> tuple[dict[Package, list[str]], list[str]]:
    """The near misses (other versions of the soname) by the package that owns each, and those
    no package owns."""
    owned_near: dict[Package, list[str]] = defaultdict(list)
    unowned_near: list[str] = []
    for p in fact.near_misses:
        owner = _first(owners.get(p))
        if owner is not None:
            owned_near[owner].append(p)
        else:
            unowned_near.append(p)
    return owned_near, unowned_near


def _family_clause(
    db: PackageDB, cpkg: Package, ppkg: Package | None, fact: MissingSoname
) -> tuple[str, Remedy, dict[str, Any], str | None]:
    """What the consumer's package manager says of the soname: the clause, the fix, the
    evidence and Debian's guessed package name."""
    if cpkg.family == "dpkg":
        return _dpkg_clause(db, cpkg, fact.soname)
    if cpkg.family == "rpm":
        return _rpm_clause(db, cpkg, fact.soname, fact.elf_class)
    return _pacman_clause(db, cpkg, ppkg, fact.soname, fact.elf_class)


def _what_is_installed(ppkg: Package | None, offered: list[str], unowned_near: list[str]) -> str:
    """What the machine has instead of the soname."""
    if ppkg is not None:
        return f"{ppkg.label} provides only {', '.join(offered)}"
    if unowned_near:
        return (
            f"no installed package provides it, and the near miss {unowned_near[0]} "
            "belongs to no package"
        )
    return "no installed package provides it"


def _foreign_build(
    fact: MissingSoname,
    cpkg: Package,
    subject: str,
    have: str,
    lib: str,
    evidence: dict[str, Any],
) -> Diagnosis:
    """An AUR or local build (pacman -Qm) against another version: only a rebuild fixes it."""
    base = re.sub(r"-(git|bin|svn|hg|devel|stable|minimal)$", "", cpkg.name)
    rebuild = f"rebuild {cpkg.name} against the installed {lib} (with the AUR helper or makepkg that built it), or sudo {commands.reinstall('pacman', base)}"
    return Diagnosis(
        severity=Severity.FAIL,
        title=f"{driver_name(fact.target or fact.consumer)} needs {fact.soname}: "
        f"{cpkg.name} is a foreign build",
        message=f"{subject} needs {fact.soname}, but {have}: {cpkg.name} is not from the "
        f"configured repositories (AUR or a local build, pacman -Qm) and was built against "
        f"another {lib}; {fixes.UPGRADE['pacman']} does not rebuild it. Fix: {rebuild}.",
        remedy=said(f"{rebuild[0].upper()}{rebuild[1:]}."),
        evidence={**evidence, "foreign": True},
    )


def _skew_cause(
    cpkg: Package | None, lib: str, direction: int, evidence: dict[str, Any], driver: str
) -> str:
    """Why the soname is missing: a build outside the packages, a damaged file, or which side
    of a partial upgrade moved."""
    csrc = cpkg.source if cpkg else driver
    if cpkg is None:
        return f"the driver was built or copied outside the package manager against another {lib}"
    if evidence.get("damaged"):
        return "an installed package's file was deleted or damaged"
    if direction > 0:
        return f"{csrc} was upgraded without {lib}, a partial upgrade"
    if direction < 0:
        return f"{lib} was upgraded without {csrc}, a partial upgrade"
    return "a partial upgrade or a missing package"


def _skew_notes(
    fact: MissingSoname,
    cpkg: Package | None,
    ppkg: Package | None,
    lib: str,
    guess: str | None,
    direction: int,
    evidence: dict[str, Any],
) -> str:
    """The sentences after the cause: why pacman let it happen, how sure Debian's package name
    is, and the overlay that serves until a driver outside the packages is rebuilt."""
    # the fix line is the commands and at most one sentence; the reasons go into the message,
    # and the ways around it (PPAs, mirrors, a one-program overlay) are on the page
    notes = ""
    if evidence.get("declared_unversioned"):
        notes += (
            f" pacman did not stop this: {cpkg.name if cpkg else 'the driver'} depends on "
            f"{', '.join(evidence['declared'])} without a version."
        )
    if guess:
        if lib == "LLVM":
            notes += f" Debian names LLVM runtime packages libllvmN; here that is {guess}."
        else:
            notes += (
                f" Debian names library packages after the soname, so {guess} is a guess; "
                f"`apt-file search {fact.soname}` names the package that has it."
            )
    if cpkg is None and (direction > 0 or ppkg is None) and not evidence.get("damaged"):
        # no package fix: a copy is the way until the driver is rebuilt (for a packaged
        # driver the page says so)
        if not guess and ppkg is not None and ppkg.family == "dpkg":
            # an unowned driver on Debian: the package named after the soname it needs
            base, want = stem(fact.soname).lower(), numbers(fact.soname)
            guess = f"{base}{want[0]}" if want else None
        wanted = evidence.get("expected_package") or guess or (ppkg.name if ppkg else lib)
        notes += (
            f" Until then, an overlay can give one program {fact.soname} from the matching "
            f"{wanted} package (VKO001)."
        )
    return notes


def _foreign_pacman(inv: Inventory, pkg: Package) -> bool:
    """Whether pacman's sync databases lack the package (pacman -Qm lists it)."""
    db = inv.db_of(pkg)
    foreign = getattr(db, "foreign", None)
    answer = foreign() if foreign is not None else None
    return answer is not None and pkg.name in answer[0]


def _blocking(cpkg: Package | None, ppkg: Package | None, direction: int) -> list[Package]:
    """The packages whose hold can keep the fix from happening. The fix upgrades the side that
    is behind: the library's package when the driver needs a newer one, the driver when the
    library moved on. On Debian the library's major is in the package name (libllvm23 beside
    libllvm22): a hold on the installed one never blocks installing the other."""
    if direction > 0:
        side = [] if ppkg is not None and ppkg.family == "dpkg" else [ppkg]
    elif direction < 0:
        side = [cpkg]
    else:
        side = [cpkg, ppkg]
    return [p for p in side if p is not None]


def _replaced(
    fact: MissingSoname, cpkg: Package, subject: str, lib: str, evidence: dict[str, Any]
) -> Diagnosis:
    """The consumer is not the file its package installed: versions and dependencies of the
    packages say nothing about what it needs."""
    name = (
        f"{cpkg.name}:{cpkg.arch}"
        if cpkg.family == "dpkg" and cpkg.multi_arch == "same"
        else cpkg.name
    )
    fix = fixes.reinstall(cpkg.family, name)
    return Diagnosis(
        severity=Severity.FAIL,
        title=f"{driver_name(fact.target or fact.consumer)} needs {fact.soname}: "
        f"{PurePosixPath(fact.consumer).name} is not {cpkg.name}'s file",
        message=f"{subject} needs {fact.soname}, but {fact.consumer} is not the file "
        f"{cpkg.label} installed: its checksum differs from the one the package database "
        "recorded, so it was replaced after the package was installed (a build installed over "
        "it, such as `ninja install` or `make install` into /usr, or a copy by hand), by one "
        f"built against another {lib}. Fix: {line(fix)}.",
        remedy=done(fix, f"(puts back {cpkg.name}'s own {PurePosixPath(fact.consumer).name})."),
        evidence={**evidence, "modified": True},
    )


# siblings ----------------------------------------------------------------------------------


def _upstream(version: str) -> str:
    """The version without the packager's release: pkgrel, Debian revision, rpm release."""
    return version.rsplit("-", 1)[0] if "-" in version else version


def sibling_skews(inv: Inventory) -> list[Diagnosis]:
    """Binary packages of one source at different versions (and lib32-/:i386 beside native)."""
    out: list[Diagnosis] = []
    for db in inv.databases:
        groups: dict[str, list[Package]] = defaultdict(list)
        for p in db.packages():
            key = p.source.removeprefix("lib32-") if db.family == "pacman" else p.source
            groups[key].append(p)
        for source, pkgs in sorted(groups.items()):
            out.extend(_sibling_group(db, source, pkgs))
    return out


def _sibling_group(db: PackageDB, source: str, pkgs: list[Package]) -> list[Diagnosis]:
    # lib32-* is its own pkgbase on Arch, with its own pkgrel: compare upstream versions then
    cross = db.family == "pacman" and len({p.source for p in pkgs}) > 1

    def key(p: Package) -> str:
        return _upstream(p.source_version) if cross else p.source_version

    versions = {key(p) for p in pkgs}
    if len(versions) < 2:
        return []
    newest = max(versions, key=_cmp_key(db))
    behind = sorted((p for p in pkgs if key(p) != newest), key=lambda p: p.display_name)
    ahead = sorted((p for p in pkgs if key(p) == newest), key=lambda p: p.display_name)

    def names(ps: Sequence[Package]) -> str:
        return ", ".join(p.label for p in ps)

    message = (
        f"Packages built from {source} are at different versions: {names(behind)} "
        f"{'is' if len(behind) == 1 else 'are'} behind {names(ahead)}. Packages of one source "
        "are built and tested together; mixed versions are a partial upgrade."
    )
    # a held one stays behind through every upgrade until it is let go of
    fix = fixes.released(db.family, [p.name for p in behind if p.hold is not None])
    # Multi-Arch: same twins (mesa-vulkan-drivers:amd64 and :i386) must be at one version, or
    # dpkg configures neither; apt --fix-broken would resolve that by removing one
    twins = [
        p
        for p in behind
        if db.family == "dpkg"
        and p.multi_arch == "same"
        and any(q.name == p.name and q.arch != p.arch for q in ahead)
    ]
    if twins:
        install = [f"{p.name}:{p.arch}={newest}" for p in twins]
        fix = run(commands.refresh("dpkg"), commands.install("dpkg", *install))
        message += (
            f" {', '.join(p.display_name for p in twins)} and {'its' if len(twins) == 1 else 'their'}"
            " other architecture are Multi-Arch: same, which must be at one version: dpkg "
            "configures neither until they are (dpkg --configure -a fails), and apt --fix-broken "
            "resolves it by removing one."
        )
    return [
        Diagnosis(
            severity=Severity.FAIL if twins else Severity.WARN,
            title=f"{source}: sibling packages at different versions",
            message=message + f" Fix: {line(fix)}.",
            remedy=done(fix),
            evidence={
                "source": source,
                "manager": db.family,
                "packages": [p.as_evidence() for p in pkgs],
                "newest": newest,
                "multi_arch_twins": [p.display_name for p in twins],
            },
        )
    ]


def _cmp_key(db: PackageDB) -> Any:
    return functools.cmp_to_key(db.compare)


# unowned / foreign ---------------------------------------------------------------------------


#: where the NVIDIA container toolkit mounts the host's driver into a container
CONTAINER_DRIVER_DIRS = ("/usr/local/nvidia/",)


def _where(path: str) -> str:
    if path.startswith(CONTAINER_DRIVER_DIRS):
        return "/usr/local/nvidia, the host's driver mounted by the NVIDIA container toolkit"
    if path.startswith("/usr/local/"):
        return "/usr/local, installed by hand (make install, a vendor script)"
    if path.startswith("/opt/"):
        return "/opt, a vendor installer"
    if path.startswith(("/home/", "/root/")):
        return "a home directory"
    if path.startswith(_SYSTEM_DIRS):
        return "a system directory, where no package ships it: copied in by hand, or left by a package since removed"
    return "a directory no package manages"


#: the directories packages install into: a file there that none owns was put there otherwise
_SYSTEM_DIRS = (
    "/usr/lib/",
    "/usr/lib64/",
    "/usr/lib32/",
    "/lib/",
    "/lib64/",
    "/lib32/",
    "/usr/share/",
    "/etc/",
)


def unowned_files(
    files: Sequence[StackFile], inv: Inventory, owners: Owners, foreign: Mapping[Package, str]
) -> list[Diagnosis]:
    """Driver-stack files that no package owns, or whose package the database calls foreign."""
    out: list[Diagnosis] = []
    by_target: dict[tuple[str, ...], list[StackFile]] = defaultdict(list)
    for f in files:
        if f.path not in owners:
            by_target[f.targets or (f.target or f.path,)].append(f)
    managers = "/".join(db.family for db in inv.databases)
    for targets, group in sorted(by_target.items()):
        target = targets[0]
        names = list(dict.fromkeys(driver_name(t) for t in targets))
        drv = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        loads = "loads" if len(names) == 1 else "load"
        paths = [f.path for f in group]
        if all(p.startswith(CONTAINER_DRIVER_DIRS) for p in paths):
            out.append(
                Diagnosis(
                    severity=Severity.INFO,
                    title=f"{drv}: the host's driver, mounted into this container",
                    message=(
                        f"{drv} {loads} {len(paths)} files from /usr/local/nvidia, where the NVIDIA "
                        "container toolkit mounts the host's driver; no package in the container "
                        "owns them, and that is expected: the host keeps them in step."
                    ),
                    evidence={"target": target, "unowned": paths},
                )
            )
            continue
        listed = "; ".join(
            f"{f.path} ({_where(f.path)}"
            + (f", reached through vkdoctor's overlay {f.overlay_link})" if f.overlay_link else ")")
            for f in group
        )
        if all(f.how == "LD_LIBRARY_PATH" for f in group):
            dirs = ", ".join(dict.fromkeys(str(PurePosixPath(f.path).parent) for f in group))
            out.append(
                Diagnosis(
                    severity=Severity.INFO,
                    title=f"{drv}: files no package owns, from LD_LIBRARY_PATH",
                    message=f"{drv} {loads} files that no {managers} package owns, found "
                    f"through LD_LIBRARY_PATH: {listed}. They win over the system's copies for "
                    "every program started with this environment.",
                    remedy=said(
                        "VKL004 and VKL006 say whether they break anything; if nothing "
                        f"needs them, take {dirs} off LD_LIBRARY_PATH."
                    ),
                    evidence={"target": target, "unowned": paths, "how": "LD_LIBRARY_PATH"},
                )
            )
            continue
        out.append(
            Diagnosis(
                severity=Severity.WARN,
                title=f"{drv}: files no package owns",
                message=(
                    f"{drv} {loads} files that no {managers} package owns: {listed}. The package "
                    "manager cannot keep them in step with the libraries it upgrades: after an "
                    "upgrade they can need a library version the system no longer has. If the "
                    "files must stay, rebuild them after every upgrade of the libraries they "
                    "link, and remove leftovers of old manual installs."
                ),
                remedy=said(
                    "Use the distribution's package of this driver or layer instead of these files."
                ),
                evidence={"target": target, "unowned": paths},
            )
        )
    for pkg, why in sorted(foreign.items(), key=lambda kv: kv[0].name):
        out.append(
            Diagnosis(
                severity=Severity.WARN,
                title=f"{pkg.name}: from outside the distribution's repositories",
                message=f"{pkg.label} owns driver-stack files and is {why}.",
                remedy=_foreign_remedy(pkg, why),
                evidence={"package": pkg.as_evidence(), "origin": why},
            )
        )
    return out


def _foreign_remedy(pkg: Package, why: str) -> Remedy:
    """Words: each names its command inside a sentence."""
    return said(_foreign_advice(pkg, why))


def _foreign_advice(pkg: Package, why: str) -> str:
    if pkg.family == "pacman":
        # AUR names the repositories' package with a suffix (vulkan-swrast-git for
        # vulkan-swrast); its pkgbase (mesa-git) is no package anyone can install
        base = re.sub(r"-(git|bin|svn|hg|devel|stable|minimal)$", "", pkg.name)
        return (
            f"{line(fixes.reinstall('pacman', base))} for the repositories' build; a foreign "
            "one is rebuilt by "
            "hand after every upgrade of what it links."
        )
    if pkg.family == "dpkg":
        if "ppa:" in why:
            ppa = why.split("ppa:", 1)[1].split(maxsplit=1)[0].rstrip(").,")
            return f"sudo ppa-purge ppa:{ppa} returns to the archive's packages."
        if "; the repositories offer " in why:
            offered = why.rsplit("; the repositories offer ", 1)[1]
            back = commands.install_version("dpkg", pkg.name, offered)
            return f"Install the repositories' version: sudo {back}"
        return (
            f"No configured repository carries {pkg.name}: remove it, or install the "
            "distribution's package that replaces it"
        )
    copr = re.search(r"\(COPR (\S+)(?: or \S+)*, in /etc/yum.repos.d\)", why)
    if copr is not None and " or " not in copr.group(0):
        return (
            f"sudo dnf copr disable {copr.group(1)}, then {fixes.UPGRADE['rpm']} returns to the "
            "distribution's packages."
        )
    if copr is not None:
        projects = copr.group(0)[len("(COPR ") : -len(", in /etc/yum.repos.d)")]
        return (
            f"Disable the COPR it came from ({projects}: sudo dnf copr disable OWNER/PROJECT), "
            f"then {fixes.UPGRADE['rpm']} returns to the distribution's packages."
        )
    return (
        "If it comes from a COPR or third-party repository: sudo dnf copr disable OWNER/PROJECT "
        f"(or disable the repository), then {fixes.UPGRADE['rpm']}."
    )


def rpm_foreign(ctx: Context, db: PackageDB, pkgs: Sequence[Package]) -> dict[Package, str]:
    """rpm packages whose vendor differs from the vendor of most installed packages; a COPR's
    project is named when dnf copr's .repo file for its owner is in /etc/yum.repos.d."""
    from vkdoctor.packages.dnfrepos import copr_projects

    vendors = Counter(p.vendor for p in db.packages() if p.vendor)
    if not vendors:
        return {}
    main, count = vendors.most_common(1)[0]
    if count * 2 <= sum(vendors.values()):
        return {}
    out = {}
    for p in pkgs:
        if not p.vendor or p.vendor == main:
            continue
        why = f"from vendor {p.vendor!r}, not {main!r} like most installed packages"
        projects = copr_projects(ctx, p.vendor)
        if projects:
            why += f" (COPR {' or '.join(projects)}, in /etc/yum.repos.d)"
        out[p] = why
    return out


# missing symbol versions -----------------------------------------------------------------------


def gcc_for(version: str, system: Package | None) -> int | None:
    """The libstdc++ generation that has `version`: at least the system GCC, at least the node's."""
    need = GLIBCXX_GCC.get(version)
    have = None
    if system is not None:
        m = re.match(r"^(?:[0-9]+:)?([0-9]+)", system.version)
        have = saturated(m.group(1), 100) if m else None
        have = have if have is not None and have < 100 else None
    candidates = [n for n in (need, have) if n]
    return max(candidates) if candidates else None


def explain_missing_version(
    facts: Sequence[MissingVersion],
    owners: Owners,
    conda: CondaPackage | None,
) -> Diagnosis:
    """A version node the consumers need is missing from the copy that wins (`facts`: one
    provider and version, one fact per library that needs it)."""
    fact = facts[0]
    ppkg = _first(owners.get(fact.provider))
    alt = next((a for a in fact.alternatives), None)
    apkg = _first(owners.get(alt)) if alt else None
    highest = _highest(fact.provider_versions, fact.version)
    consumers = list(dict.fromkeys(f.consumer for f in facts))
    owning = [_first(owners.get(c)) for c in consumers]
    labels = [
        f"{c} ({p.label if p else 'no package'})" for c, p in zip(consumers, owning, strict=True)
    ]
    consumer = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + f" and {labels[-1]}"
    cpkg = _first(owners.get(fact.consumer))
    if conda is not None:
        winner = f"{fact.provider} (conda package {conda.label} in {conda.prefix})"
    elif ppkg is not None:
        winner = f"{fact.provider} ({ppkg.label})"
    else:
        winner = f"{fact.provider} (no package: bundled by an application or copied by hand)"
    offers = f"offers only up to {highest}" if highest else f"does not define {fact.version}"
    need = "needs" if len(labels) == 1 else "need"
    message = f"{consumer} {need} {fact.version} from {fact.soname}, but the copy that wins, {winner}, {offers}"
    if alt:
        message += f"; {alt}{f' ({apkg.label})' if apkg else ''} has it"
    message += "."
    evidence: dict[str, Any] = {
        "consumer": fact.consumer,
        "consumers": consumers,
        "soname": fact.soname,
        "version": fact.version,
        "provider": fact.provider,
        "provider_highest": highest,
        "alternatives": list(fact.alternatives),
        "consumer_package": cpkg.as_evidence() if cpkg else None,
        "provider_package": ppkg.as_evidence() if ppkg else None,
        "system_package": apkg.as_evidence() if apkg else None,
        "conda_package": (
            {
                "name": conda.name,
                "version": conda.version,
                "build": conda.build,
                "prefix": conda.prefix,
            }
            if conda
            else None
        ),
    }
    is_cxx = fact.soname.startswith("libstdc++")
    if conda is not None:
        if is_cxx:
            n = gcc_for(fact.version, apkg)
            # -p: into that environment, whichever one is active
            fix = f"conda install -p {conda.prefix} -c conda-forge " + (
                f"'libstdcxx-ng>={n}'" if n else "libstdcxx-ng"
            )
        else:
            fix = f"conda update -p {conda.prefix} -c conda-forge {conda.name}"
        # conda installs into the user's environment: no root
        remedy = Remedy(
            commands=(fix,), text=f"; or stop exporting LD_LIBRARY_PATH={conda.prefix}/lib."
        )
        message += f" Fix: {fix}."
    elif ppkg is not None:
        upgrade = fixes.upgrade(ppkg.family)
        remedy = done(upgrade)
        message += f" Fix: {line(upgrade)}."
    else:
        remedy = said(
            "Update the application that bundles the old copy, or remove its bundled "
            f"{fact.soname} so that the system's is used."
        )
    return Diagnosis(
        # a copy no package or conda environment owns: VKL003 is the failure (its remedy says
        # how that copy comes to win), and the packages only say that it is outside them
        severity=Severity.FAIL if conda is not None or ppkg is not None else Severity.INFO,
        title=f"{fact.soname}: {fact.version} missing from the copy that wins",
        message=message,
        remedy=remedy,
        evidence=evidence,
    )


def _highest(versions: Sequence[str], like: str) -> str | None:
    prefix = re.sub(r"[0-9.]+$", "", like)
    same = [v for v in versions if v.startswith(prefix) and re.search(r"[0-9]", v)]
    if not same:
        return None

    def key(v: str) -> tuple[tuple[int, str], ...]:
        return numbers_key(v[len(prefix) :])

    return max(same, key=key)
