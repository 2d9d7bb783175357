"""A dpkg fix is printed only after apt-get -s accepts it; otherwise the next candidate is tried.

Candidates, in order: the distribution's fix; the same with the holds in its way released; the
dependency from the suite that has it (`-t bookworm-backports`); the driver package at a
version the lists offer (back in step with what is installed). A candidate is rejected when
apt refuses it or when it removes the driver's package or the loader (vkdoctor.packages.simulate).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from vkdoctor.model import Remedy, Severity, tree
from vkdoctor.model.context import Context
from vkdoctor.model.files import LARGE
from vkdoctor.model.record import replace
from vkdoctor.packages import commands
from vkdoctor.packages import remedy as fixes
from vkdoctor.packages.commands import sudo_line
from vkdoctor.packages.dpkg import DpkgDB
from vkdoctor.packages.model import Inventory
from vkdoctor.packages.pacman import PacmanDB
from vkdoctor.packages.remedy import FIX_BROKEN_CAUTION, done, said
from vkdoctor.packages.rpm import RpmDB
from vkdoctor.packages.simulate import LOADER_PACKAGES, Simulation, first_that_works
from vkdoctor.packages.skew import Diagnosis
from vkdoctor.packages.versions import satisfies

_FIX = re.compile(r" Fix: (.+?)\.(?: |$)")
_EMBEDDED = re.compile(r"(sudo apt(?:-get)? (?:(?!&&)[^;()])*?)(?:\.(?:\s|$)|;|\)|$)")


def fix_of(message: str) -> str | None:
    """The command a message gives after its last " Fix: "."""
    found = _FIX.findall(message)
    return found[-1] if found else None


def _dpkg(inv: Inventory) -> DpkgDB | None:
    return next((d for d in inv.databases if isinstance(d, DpkgDB)), None)


def _blocking(ev: dict[str, Any], db: DpkgDB) -> list[str]:
    """The holds on the packages the fix must install (held although not installed, too)."""
    wanted = str(ev.get("expected_package") or "").partition(":")[0]
    declared = {re.split(r"[\s(]", d, maxsplit=1)[0] for d in ev.get("declared") or ()}
    return [h for h in db.holds() if h.partition(":")[0] in {wanted, *declared} - {""}]


def _from_suite(
    ev: dict[str, Any], db: DpkgDB, unhold: str, notes: dict[str, str]
) -> Iterator[str]:
    """The unmet dependencies (VKP006's) from the suite whose lists offer versions that meet
    every one of them (`-t bookworm-backports`): apt's default candidate is the release's."""
    wants = [w for w in ev.get("unmet_relations") or () if w.get("name")]
    names = list(dict.fromkeys(str(w["name"]) for w in wants))
    if not names:
        return
    offered = db.suites(names)
    for suite in dict.fromkeys(s for n in names for _, s in offered.get(n, [])):
        chosen: dict[str, str] = {}
        met: list[str] = []
        for w in wants:
            name, op, wanted = str(w["name"]), w.get("op"), w.get("version")
            good = [
                v
                for v, s in offered.get(name, [])
                if s == suite and (not (op and wanted) or satisfies("dpkg", v, op, wanted))
            ]
            if not good:
                break
            chosen.setdefault(name, good[0])
            need = f" ({op} {wanted})" if op and wanted else ""
            met.append(f"{name} {good[0]} (for {w['package']}'s {name}{need})")
        else:
            pulled = _pulled(db, suite, chosen)
            fix = unhold + sudo_line(
                [commands.refresh("dpkg"), commands.install_from(suite, *chosen)]
            )
            also = "".join(f"; {n} {v}, which {by} needs" for n, (v, by) in pulled.items())
            notes[fix] = (
                f" {suite} offers {'; '.join(met)}{also}. apt's default candidate for each is the "
                f"release's own version, which does not meet it, so the fix names {suite} (-t) "
                "and each package apt must take from there (while dependencies are unmet it "
                "pulls in no newer dependency by itself)."
            )
            yield fix


def _pulled(db: DpkgDB, suite: str, chosen: dict[str, str]) -> dict[str, tuple[str, str]]:
    """What the chosen versions need from `suite` beyond the installed versions (libdrm2's
    libdrm-common), added to `chosen`: name -> (version, the package that needs it)."""
    installed = {p.name: p.version for p in db.packages()}
    pulled: dict[str, tuple[str, str]] = {}
    queue = list(chosen)
    while queue and len(chosen) < 16:
        name = queue.pop(0)
        for group in db.depends_of(name, chosen[name]):
            rel = group[0]
            have = installed.get(rel.name)
            if len(group) != 1 or not (rel.op and rel.version) or have is None:
                continue
            if rel.name in chosen or satisfies("dpkg", have, rel.op, rel.version):
                continue
            op, wanted = rel.op, rel.version
            there = [
                v
                for v, s in db.suites([rel.name]).get(rel.name, [])
                if s == suite and satisfies("dpkg", v, op, wanted)
            ]
            if there:
                chosen[rel.name] = there[0]
                pulled[rel.name] = (there[0], f"{name} {chosen[name]}")
                queue.append(rel.name)
    return pulled


def _twin_versions(
    ctx: Context, ev: dict[str, Any], db: DpkgDB, notes: dict[str, str]
) -> Iterator[str]:
    """Multi-Arch: same twins (VKP003's) together at a version the lists offer for each of
    their architectures, newest first."""
    twins = {str(t).partition(":")[0] for t in ev.get("multi_arch_twins") or ()}
    pkgs = [p for p in ev.get("packages") or () if p.get("name") in twins]
    if not pkgs:
        return
    names = [f"{p['name']}:{p['arch']}" for p in pkgs]
    offered = db.suites(names)
    common = [v for v, _ in offered.get(names[0], [])]
    for n in names[1:]:
        there = {v for v, _ in offered.get(n, [])}
        common = [v for v in common if v in there]
    shared = _shared_files(ctx, names)
    for version in dict.fromkeys(common):
        # dpkg refuses to unpack one twin over a file they share (its changelog) while the
        # other is at another version: "trying to overwrite shared ..., which is different
        # from other instances"; --force-overwrite lets the package's own file be replaced
        fix = "sudo " + commands.install(
            "dpkg",
            "-o Dpkg::Options::=--force-overwrite --allow-downgrades",
            *(f"{n}={version}" for n in names),
        )
        at = ", ".join(f"{p['name']}:{p['arch']} {p['version']}" for p in pkgs)
        notes[fix] = (
            f" The lists offer {version} for {', '.join(names)} (installed: {at}): the fix puts "
            f"the twins together there. --force-overwrite because dpkg otherwise refuses to "
            f"unpack one twin over the file{'s' if len(shared) > 1 else ''} they share"
            + (f" ({', '.join(shared[:2])})" if shared else "")
            + " while the other holds another version's copy: they are the package's own."
        )
        yield fix


def _shared_files(ctx: Context, names: Sequence[str]) -> list[str]:
    """The regular files that every instance's dpkg file list holds."""
    common: set[str] | None = None
    for n in names:
        try:
            listed = set(tree.read_text(ctx, f"/var/lib/dpkg/info/{n}.list", LARGE).splitlines())
        except OSError:
            return []
        common = listed if common is None else common & listed
    return sorted(f for f in common or () if f and Path(ctx.under(f)).is_file())


def _candidates(
    ctx: Context,
    fix: str,
    ev: dict[str, Any],
    db: DpkgDB,
    holds: list[str],
    notes: dict[str, str],
) -> Iterator[str]:
    """The fixes to try after `fix`, worked out only as far as they are needed."""
    consumer = ev.get("consumer_package") or {}
    wanted = str(ev.get("expected_package") or "")
    name = str(consumer.get("name") or "")
    unhold = f"sudo {commands.unhold('dpkg', *holds)} && " if holds else ""
    if unhold:
        yield unhold + fix
    # a fix given in words ("refresh the lists ...; if not, return it: sudo apt install X=V")
    if not fix.startswith(("sudo ", "apt ", "apt-get ")):
        for command in _EMBEDDED.findall(fix):
            yield unhold + command
    if wanted:
        if "--fix-broken" not in fix:
            yield unhold + sudo_line(commands.fix_broken("dpkg"))
        suites = db.suites([wanted]).get(wanted, [])
        for suite in dict.fromkeys(s for _, s in suites[1:] if s != suites[0][1]):
            yield unhold + sudo_line(
                [commands.refresh("dpkg"), commands.install_from(suite, wanted)]
            )
    yield from _from_suite(ev, db, unhold, notes)
    yield from _twin_versions(ctx, ev, db, notes)
    if name:
        qualified = f"{name}:{consumer['arch']}" if consumer.get("multi_arch") == "same" else name
        installed = str(consumer.get("version") or "")
        for version, _ in db.suites([name]).get(name, []):
            if version != installed:
                # a version below the installed one: without --allow-downgrades, apt -y refuses
                yield f"{unhold}sudo {commands.downgrade('dpkg', qualified, version)}"


def driver_packages(db: DpkgDB) -> list[str]:
    """The installed packages that are Vulkan drivers (provide vulkan-icd, as Debian's do, or
    are named after Vulkan) and the loader: a fix must not remove them."""
    named = [
        p.name
        for p in db.packages()
        if "vulkan" in p.name or any(r.name == "vulkan-icd" for r in p.provides)
    ]
    return list(dict.fromkeys([*named, *LOADER_PACKAGES]))


def _protected(ev: dict[str, Any], db: DpkgDB) -> list[str]:
    consumer = ev.get("consumer_package") or {}
    return [n for n in (consumer.get("name"), *driver_packages(db)) if n]


def _tried(sims: Sequence[Simulation]) -> str:
    return "; ".join(f"`{s.fix}`, which {s.why}" for s in sims)


def verified(
    ctx: Context,
    d: Diagnosis,
    inv: Inventory,
    protect: Sequence[str] | None = None,
) -> Diagnosis:
    """`d` with its fix checked by apt-get -s, or replaced by the first candidate that passes;
    the message says which simulation backs the fix, or that none could run."""
    if d.severity not in (Severity.FAIL, Severity.WARN):
        return d
    db = _dpkg(inv)
    fix = str(d.evidence.get("fix") or fix_of(d.message) or "")
    tool = next((t for t in ("pacman", "dnf", "rpm") if f"{t} " in fix), None)
    pacman = next((x for x in inv.databases if isinstance(x, PacmanDB)), None)
    if tool == "pacman" and pacman is not None and not ("apt " in fix or "apt-get " in fix):
        return _pacman_verified(ctx, d, fix, pacman, protect or ())
    rpmdb = next((x for x in inv.databases if isinstance(x, RpmDB)), None)
    if tool == "dnf" and rpmdb is not None and not ("apt " in fix or "apt-get " in fix):
        return _dnf_verified(ctx, d, fix, rpmdb, protect or ())
    if tool is not None and not ("apt " in fix or "apt-get " in fix):
        # said plainly, after the fix in the message: no simulation backs it
        said = f"Unverified: vkdoctor simulates apt's, pacman's and dnf's fixes, not {tool}'s."
        return replace(
            d,
            message=_swap(d.message, fix, f"{fix}. {said}"),
            evidence={**d.evidence, "verified_by": []},
        )
    if db is None or not fix or not ("apt " in fix or "apt-get " in fix):
        return d
    holds = _blocking(d.evidence, db)
    keep = [*(protect or ()), *_protected(d.evidence, db)]
    notes: dict[str, str] = {}
    candidates = itertools.chain([fix], _candidates(ctx, fix, d.evidence, db, holds, notes))
    chosen, tried = first_that_works(ctx, candidates, keep)
    evidence = {
        **d.evidence,
        "simulations": [s.as_evidence() for s in tried],
        "holds": holds,
    }
    message = d.message
    held = (
        f" {', '.join(holds)} {'is' if len(holds) == 1 else 'are'} held (apt-mark hold) "
        "although not installed, so apt will not install "
        f"{'it' if len(holds) == 1 else 'them'} until the hold is released."
        if holds and not any(p.name == h.partition(":")[0] for h in holds for p in db.packages())
        else ""
    )
    if chosen is not None:
        rejected = [s for s in tried if s is not chosen and s.ran]
        why = f" Not {_tried(rejected)} (apt-get -s)." if rejected else ""
        note = notes.get(chosen.fix, "")
        message = _swap(message, fix, f"{chosen.fix}. {chosen.summary()}{why}{note}{held}")
        remedy = _with_chosen(d.remedy, fix, chosen.fix)
        # apt's own simulation has answered what the caution asks the reader to check
        text = " ".join(remedy.text.replace(FIX_BROKEN_CAUTION, "").split())
        remedy = replace(remedy, text=text or "." if remedy.commands else text)
        evidence["fix"] = chosen.fix
        evidence["verified_by"] = list(chosen.commands)
        return replace(d, message=message, remedy=remedy, evidence=evidence)
    ran = [s for s in tried if s.ran]
    if not ran:
        message = _swap(message, fix, f"{fix}. {tried[0].summary()}{held}")
        evidence["verified_by"] = []
        return replace(d, message=message, evidence=evidence)
    text = f"no fix vkdoctor knows passes apt-get -s: {_tried(ran)}.{held}"
    head, _, _ = message.rpartition(" Fix: ")
    evidence["fix"] = None
    evidence["verified_by"] = []
    return replace(
        d,
        message=f"{head or message} But {text}",
        remedy=fixes.run(
            commands.refresh("dpkg"),
            text="(from an up-to-date mirror), then run vkdoctor again; apt-cache policy shows "
            "what each repository offers.",
        ),
        evidence=evidence,
    )


def _pacman_candidates(fix: str) -> Iterator[str]:
    """The pacman fixes to try after `fix`."""
    from vkdoctor.packages.pacsim import EMBEDDED

    if not fix.startswith(("sudo pacman ", "pacman ")) and "IgnorePkg" not in fix:
        # a fix given in words ("rebuild it ..., or sudo pacman -S X")
        yield from EMBEDDED.findall(fix)
    if fix.endswith("pacman -Syu"):
        # back to the repositories' versions: a driver from a newer mirror comes down
        yield f"{fix}u"


def pacman_protected(ctx: Context, db: PacmanDB, extra: Sequence[str]) -> list[str]:
    """The installed Vulkan drivers (named after Vulkan, or providing vulkan-driver) and the
    loader: a pacman fix must not remove them."""
    from vkdoctor.packages.pacsim import LOADER_PACKAGES as PACMAN_LOADER

    named = [
        p.name
        for p in db.packages()
        if "vulkan" in p.name or any(r.name == "vulkan-driver" for r in p.provides)
    ]
    return list(dict.fromkeys([*extra, *named, *PACMAN_LOADER]))


#: per family: who checks, what the message calls its check, and what to do when none passes
_CHECKER = {
    "pacman": (
        "pacman",
        "pacman's own check",
        f"Refresh the sync databases from an up-to-date mirror (sudo {commands.refresh('pacman')}) "
        "and run "
        "vkdoctor again; pacman -Si shows what each repository offers.",
    ),
    "dnf": (
        "dnf",
        "dnf's own check (dnf --assumeno)",
        "Refresh the metadata (sudo dnf makecache) and run vkdoctor again; dnf list --showduplicates "
        "NAME shows what each repository offers.",
    ),
}


def _pacman_verified(
    ctx: Context, d: Diagnosis, fix: str, db: PacmanDB, protect: Sequence[str]
) -> Diagnosis:
    """`d` with its pacman fix checked by pacman's own transaction check."""
    from vkdoctor.packages import pacsim

    consumer = d.evidence.get("consumer_package") or {}
    keep = pacman_protected(ctx, db, [n for n in (consumer.get("name"), *protect) if n])

    def run(c: Context, f: str, p: Sequence[str]) -> Simulation:
        return pacsim.simulate(c, db, f, p)

    candidates = itertools.chain([fix], _pacman_candidates(fix))
    return _checked(ctx, d, fix, "pacman", run, candidates, keep)


def _dnf_candidates(fix: str) -> Iterator[str]:
    """The dnf fixes to try after `fix`."""
    if fix.endswith("dnf distro-sync"):
        # dnf's own advice when a package must go for the others to sync
        yield f"{fix} --allowerasing"


def _dnf_verified(
    ctx: Context, d: Diagnosis, fix: str, db: RpmDB, protect: Sequence[str]
) -> Diagnosis:
    """`d` with its dnf fix checked by dnf --assumeno."""
    from vkdoctor.packages import dnfsim

    consumer = d.evidence.get("consumer_package") or {}
    named = [p.name for p in db.packages() if "vulkan" in p.name]
    keep = list(
        dict.fromkeys(
            n for n in (consumer.get("name"), *protect, *named, *dnfsim.LOADER_PACKAGES) if n
        )
    )

    def run(c: Context, f: str, p: Sequence[str]) -> Simulation:
        return dnfsim.simulate(c, db, f, p)

    candidates = itertools.chain([fix], _dnf_candidates(fix))
    return _checked(ctx, d, fix, "dnf", run, candidates, keep)


def _checked(
    ctx: Context,
    d: Diagnosis,
    fix: str,
    family: str,
    run: Callable[[Context, str, Sequence[str]], Simulation],
    candidates: Iterable[str],
    keep: Sequence[str],
) -> Diagnosis:
    """`d` with its fix checked by `run`, or replaced by the first candidate that passes; or
    said plainly to be unverified."""
    tool, check, advice = _CHECKER[family]
    chosen, tried = first_that_works(ctx, candidates, keep, run=run)
    evidence = {**d.evidence, "simulations": [s.as_evidence() for s in tried]}
    message = d.message
    if chosen is not None:
        rejected = [s for s in tried if s is not chosen and s.ran]
        why = f" Not {_tried(rejected)} ({tool})." if rejected else ""
        message = _swap(message, fix, f"{chosen.fix}. {chosen.summary()}{why}")
        remedy = _with_chosen(d.remedy or done(_as_fix(fix)), fix, chosen.fix)
        evidence["fix"] = chosen.fix
        evidence["verified_by"] = list(chosen.commands)
        return replace(d, message=message, remedy=remedy, evidence=evidence)
    ran = [s for s in tried if s.ran]
    evidence["verified_by"] = []
    if not ran or not tried[0].ran:
        # nothing ran, or the fix is in words (a rebuild) and only the command in it ran
        said = f"Unverified: {tried[0].why}, so {tool} could not check it."
        if ran:
            said += f" Not {_tried(ran)} ({tool})."
        # said after the fix in the message; the fix line stays the command
        return replace(d, message=_swap(message, fix, f"{fix}. {said}"), evidence=evidence)
    text = f"no fix vkdoctor knows passes {check}: {_tried(ran)}."
    head, _, _ = message.rpartition(" Fix: ")
    evidence["fix"] = None
    return replace(
        d,
        message=f"{head or message} But {text}",
        remedy=fixes.said(f"None of these passes {check} ({_tried(ran)}). {advice}"),
        evidence=evidence,
    )


def _as_fix(line: str) -> Remedy:
    """A fix as the candidates spell it for the simulations and the message (`sudo A && sudo
    B`, vkdoctor's own lines) as data; a fix in words stays words."""
    steps = line.split(" && ")
    if all(step.startswith("sudo ") for step in steps):
        return fixes.run(*(step.removeprefix("sudo ") for step in steps))
    return said(line)


def _with_chosen(remedy: Remedy | None, fix: str, chosen: str) -> Remedy:
    """`remedy` with its fix `fix` (the first candidate) replaced by `chosen`, the candidate that
    passed; a remedy that does not start with the fix gets the chosen one before it."""
    old, new = _as_fix(fix), _as_fix(chosen)
    if remedy is None:
        return replace(new, text="") if new.commands else said(f"{chosen}. ")
    n = len(old.commands)
    if n and new.commands and remedy.commands[:n] == old.commands:
        return replace(remedy, commands=(*new.commands, *remedy.commands[n:]))
    if not remedy.commands and fix in remedy.text:
        text = remedy.text.replace(fix, chosen, 1)
        if new.commands and text.startswith(chosen):
            # the words were only the fix: now its commands, and what followed them
            rest = text[len(chosen) :]
            follows = rest[2:] if rest[:2] == ". " else rest[1:] if rest[:2] == " (" else rest
            return replace(new, text=follows)
        return said(text)
    if new.commands:
        return replace(new, text=remedy.shown())
    return said(f"{chosen}. {remedy.shown()}")


def remedy_for_tree(ctx: Context, remedy: Remedy | None) -> Remedy | None:
    """A remedy for a --root tree is run inside it: without sudo when the tree has none."""
    if remedy is None or ctx.live or _has_sudo(ctx):
        return remedy
    return replace(remedy, needs_root=False, text=_without_sudo(remedy.text))


def _has_sudo(ctx: Context) -> bool:
    return Path(ctx.under("/usr/bin/sudo")).exists() or Path(ctx.under("/bin/sudo")).exists()


def _without_sudo(text: str) -> str:
    return re.sub(r"(?<![\w-])sudo ", "", text)


def _swap(message: str, old: str, new: str) -> str:
    needle = f"Fix: {old}."
    at = message.rfind(needle)
    if at < 0:
        return f"{message} Fix: {new}"
    return message[:at] + f"Fix: {new}" + message[at + len(needle) :]


def for_tree(ctx: Context, text: str | None) -> str | None:
    """A fix for a --root tree is run inside it (chroot DIR, the image build): without sudo
    when the tree has none."""
    if text is None or ctx.live or _has_sudo(ctx):
        return text
    return _without_sudo(text)
