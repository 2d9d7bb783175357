"""Rule P4, pending upgrades: does the distribution's fix for a skew have what it needs?

For a driver that misses a library (VKP002), the repositories as the package manager last
refreshed them either offer the package that brings the library (the fix installs it), or
they do not: the driver came from a newer mirror or another source, and the full upgrade
cannot repair it. Asked only when a skew exists: `apt-cache policy`, `pacman -Si` and dnf's
cached metadata (vkdoctor.packages.dnfrepos) read the package lists, which costs more than a
healthy run should.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from vkdoctor.model import Severity
from vkdoctor.packages import commands
from vkdoctor.packages.model import Inventory
from vkdoctor.packages.remedy import said
from vkdoctor.packages.skew import Diagnosis


class _Repositories(Protocol):
    def candidates(self, names: list[str]) -> dict[str, str | None] | None: ...

    def lists_date(self) -> float | None: ...

    def compare(self, a: str, b: str) -> int: ...


_REFRESH = {f: f"sudo {commands.refresh(f)}" for f in ("dpkg", "pacman", "rpm")}
_ALSO_DOWN = "(it also downgrades to the repositories' versions)"
_LISTS = {"dpkg": "package lists", "pacman": "sync databases", "rpm": "repository metadata"}


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "never"


def repository_view(skew: Diagnosis, inv: Inventory) -> Diagnosis | None:
    """What the repositories offer for the package a VKP002 skew needs, or None when vkdoctor
    cannot tell (no package lists, an unowned driver)."""
    ev = skew.evidence
    if ev.get("damaged"):
        # an installed package lost its file: the reinstall puts it back, whatever the
        # repositories offer (and the soname-named package guessed here may not exist)
        return None
    consumer: dict[str, Any] | None = ev.get("consumer_package")
    if consumer is None or consumer.get("manager") not in _REFRESH:
        return None
    family = str(consumer["manager"])
    db = next((d for d in inv.databases if d.family == family), None)
    if db is None or not hasattr(db, "candidates"):
        return None
    repos: _Repositories = db  # type: ignore[assignment]
    provider: dict[str, Any] | None = ev.get("provider_package")
    wanted = str(ev.get("expected_package") or (provider or {}).get("name") or "")
    if not wanted:
        return None
    offered = repos.candidates([wanted, str(consumer["name"])])
    if offered is None:
        return None
    have = offered.get(wanted)
    back = offered.get(str(consumer["name"]))
    refreshed = _when(repos.lists_date())
    lists = _LISTS[family]
    evidence = {
        "soname": ev.get("soname"),
        "wanted": wanted,
        "offered": have,
        "consumer": consumer["name"],
        "consumer_installed": consumer["version"],
        "consumer_offered": back,
        "lists_refreshed": refreshed,
    }
    if int(ev.get("direction") or 0) < 0:
        return _newer_driver(ev, repos, consumer, back, lists, refreshed, family, evidence)
    installed = (provider or {}).get("version") if family in ("pacman", "rpm") else None
    if have is not None and (installed is None or repos.compare(have, str(installed)) > 0):
        return Diagnosis(
            severity=Severity.INFO,
            title=f"The repositories offer {wanted} {have}",
            message=f"The {lists} (refreshed {refreshed}) offer {wanted} {have}, which the fix "
            f"for {ev.get('soname')} installs: the upgrade is pending, not impossible.",
            evidence=evidence,
        )
    what = f"only {wanted} {have}, the installed one" if have else f"no {wanted}"
    if back is not None and repos.compare(back, str(consumer["version"])) >= 0:
        # the repositories have this very driver package, without what it needs
        return Diagnosis(
            severity=Severity.WARN,
            title=f"The repositories offer {what}: the upgrade cannot fix {ev.get('soname')}",
            message=f"The {lists} (refreshed {refreshed}) offer {consumer['name']} {back} but "
            f"{what}: the lists are incomplete or caught mid-sync (a mirror still updating, a "
            "component or repository not enabled), so the distribution's fix cannot bring "
            f"{ev.get('soname')} yet.",
            remedy=said(
                f"Refresh the lists ({_REFRESH[family]}) and look again; check that the "
                "repository or component that carries it is enabled."
            ),
            evidence=evidence,
        )
    downgrade = {
        "dpkg": f"sudo {commands.install_version('dpkg', consumer['name'], str(back))}",
        "pacman": f"sudo {commands.sync_down('pacman')} {_ALSO_DOWN}",
        "rpm": f"sudo {commands.sync_down('rpm')} {_ALSO_DOWN}",
    }[family]
    if back is None:
        # no repository carries the driver at all: nothing to go back to
        downgrade = (
            f"remove {consumer['name']} and install the driver package the repositories carry"
        )
    return Diagnosis(
        severity=Severity.WARN,
        title=f"The repositories offer {what}: the upgrade cannot fix {ev.get('soname')}",
        message=f"The {lists} (refreshed {refreshed}) offer {what}, so the distribution's fix "
        f"cannot bring {ev.get('soname')}. {consumer['name']} {consumer['version']} came from "
        f"a newer mirror than these {lists}, or from another source"
        + (f" (the repositories offer {back})" if back else "")
        + ".",
        remedy=said(
            f"Refresh the lists from an up-to-date mirror ({_REFRESH[family]}) and look "
            f"again; if they still offer no {wanted} that brings {ev.get('soname')}, "
            + (
                f"return {consumer['name']} to the repositories' version: {downgrade}."
                if back is not None
                else f"{downgrade}."
            )
        ),
        evidence=evidence,
    )


def _newer_driver(
    ev: dict[str, Any],
    repos: _Repositories,
    consumer: dict[str, Any],
    back: str | None,
    lists: str,
    refreshed: str,
    family: str,
    evidence: dict[str, Any],
) -> Diagnosis:
    """The library was upgraded without the driver: the fix is a newer driver, not the old
    library. Do the repositories offer one?"""
    name, installed = str(consumer["name"]), str(consumer["version"])
    if back is not None and repos.compare(back, installed) > 0:
        return Diagnosis(
            severity=Severity.INFO,
            title=f"The repositories offer {name} {back}",
            message=f"The {lists} (refreshed {refreshed}) offer {name} {back}, newer than the "
            f"installed {installed}: the fix for {ev.get('soname')} upgrades the driver to it; "
            "the upgrade is pending, not impossible.",
            evidence=evidence,
        )
    return Diagnosis(
        severity=Severity.WARN,
        title=f"The repositories offer no newer {name}: the upgrade cannot fix {ev.get('soname')}",
        message=f"The {lists} (refreshed {refreshed}) offer "
        + (f"{name} {back}, no newer than the installed {installed}" if back else f"no {name}")
        + ", so the distribution's fix cannot bring a driver built for the installed library.",
        remedy=said(
            f"Refresh the lists from an up-to-date mirror ({_REFRESH[family]}) and look again; "
            f"{name} is rebuilt for a new library soon after it, so a mirror that has one has "
            "the other."
        ),
        evidence=evidence,
    )
