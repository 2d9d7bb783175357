"""A dpkg fix is printed only after apt-get -s accepts it; otherwise the next candidate is tried.

Candidates, in order: the distribution's fix; the same with the holds in its way released; the
dependency from the suite that has it (`-t bookworm-backports`); the driver package at a
version the lists offer (back in step with what is installed). A candidate is rejected when
apt refuses it or when it removes the driver's package or the loader (vkdoctor.packages.simulate).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from vkdoctor.context import Context
from vkdoctor.model import Severity
from vkdoctor.packages.dpkg import DpkgDB
from vkdoctor.packages.model import Inventory
from vkdoctor.packages.remedy import FIX_BROKEN_CAUTION
from vkdoctor.packages.simulate import LOADER_PACKAGES, Simulation, first_that_works
from vkdoctor.packages.skew import Diagnosis
from vkdoctor.record import replace

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


def _candidates(fix: str, ev: dict[str, Any], db: DpkgDB, holds: list[str]) -> Iterator[str]:
    """The fixes to try after `fix`, worked out only as far as they are needed."""
    consumer = ev.get("consumer_package") or {}
    wanted = str(ev.get("expected_package") or "")
    name = str(consumer.get("name") or "")
    unhold = f"sudo apt-mark unhold {' '.join(holds)} && " if holds else ""
    if unhold:
        yield unhold + fix
    # a fix given in words ("refresh the lists ...; if not, return it: sudo apt install X=V")
    if not fix.startswith(("sudo ", "apt ", "apt-get ")):
        for command in _EMBEDDED.findall(fix):
            yield unhold + command
    if wanted:
        if "--fix-broken" not in fix:
            yield f"{unhold}sudo apt update && sudo apt --fix-broken install"
        suites = db.suites([wanted]).get(wanted, [])
        for suite in dict.fromkeys(s for _, s in suites[1:] if s != suites[0][1]):
            yield f"{unhold}sudo apt update && sudo apt install -t {suite} {wanted}"
    if name:
        qualified = f"{name}:{consumer['arch']}" if consumer.get("multi_arch") == "same" else name
        installed = str(consumer.get("version") or "")
        for version, _ in db.suites([name]).get(name, []):
            if version != installed:
                # a version below the installed one: without --allow-downgrades, apt -y refuses
                yield f"{unhold}sudo apt install --allow-downgrades {qualified}={version}"


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
    if tool is not None and not ("apt " in fix or "apt-get " in fix):
        # said plainly, after the fix in the message: no simulation backs it
        said = f"Unverified: vkdoctor simulates apt's fixes, not {tool}'s."
        return replace(
            d,
            message=_swap(d.message, fix, f"{fix}. {said}"),
            evidence={**d.evidence, "verified_by": []},
        )
    if db is None or not fix or not ("apt " in fix or "apt-get " in fix):
        return d
    holds = _blocking(d.evidence, db)
    keep = [*(protect or ()), *_protected(d.evidence, db)]
    candidates = itertools.chain([fix], _candidates(fix, d.evidence, db, holds))
    chosen, tried = first_that_works(ctx, candidates, keep)
    evidence = {
        **d.evidence,
        "simulations": [s.as_evidence() for s in tried],
        "holds": holds,
    }
    message, remedy = d.message, d.remedy or ""
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
        message = _swap(message, fix, f"{chosen.fix}. {chosen.summary()}{why}{held}")
        remedy = remedy.replace(fix, chosen.fix, 1) if fix in remedy else f"{chosen.fix}. {remedy}"
        # apt's own simulation has answered what the caution asks the reader to check
        remedy = " ".join(remedy.replace(FIX_BROKEN_CAUTION, "").split())
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
        remedy="sudo apt update (from an up-to-date mirror), then run vkdoctor again; "
        "apt-cache policy shows what each repository offers.",
        evidence=evidence,
    )


def _swap(message: str, old: str, new: str) -> str:
    needle = f"Fix: {old}."
    at = message.rfind(needle)
    if at < 0:
        return f"{message} Fix: {new}"
    return message[:at] + f"Fix: {new}" + message[at + len(needle) :]


def for_tree(ctx: Context, text: str | None) -> str | None:
    """A fix for a --root tree is run inside it (chroot DIR, the image build): without sudo
    when the tree has none."""
    if text is None or ctx.live:
        return text
    if not (Path(ctx.under("/usr/bin/sudo")).exists() or Path(ctx.under("/bin/sudo")).exists()):
        text = re.sub(r"(?<![\w-])sudo ", "", text)
    return text
