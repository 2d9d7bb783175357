"""The data vkdoctor produces: findings, check results and the report. Frozen, render-agnostic."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from vkdoctor.model.record import field, record, to_json
from vkdoctor.model.report_records import (
    DriverRow,
    DriverSearch,
    HostReport,
    OverlayReport,
    ProbeHost,
    ProbeResult,
)

SCHEMA_VERSION = 1
#: the compute probe's check, whose failure a renderer also shows from the probe's own details
PROBE_CODE = "VKR001"


class Severity(enum.StrEnum):
    """How bad a finding is. Ordered: ok < info < warn < fail < error."""

    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.OK: 0, Severity.INFO: 1, Severity.WARN: 2, Severity.FAIL: 3, Severity.ERROR: 4}


class CheckStatus(enum.StrEnum):
    """Whether a check ran. A skipped check carries its reason; an errored one is our bug."""

    RAN = "ran"
    SKIPPED = "skipped"
    ERROR = "error"


@record(frozen=True, kw_only=True)
class Remedy:
    """A fix as data: the shell commands to run, in order, and the one sentence that goes with
    them. The commands never say `sudo`: `needs_root` does, and the renderer decides (`shown`)."""

    #: run in order, each after the one before succeeded; empty when the fix is only words
    commands: tuple[str, ...] = ()
    #: the commands need root (shown after `sudo ` where the user needs it)
    needs_root: bool = False
    #: at most one sentence (or a parenthesis) about the commands, or the whole fix in words
    text: str = ""

    def shown(self, *, sudo: bool = True) -> str:
        """The fix as one line: `sudo A && sudo B. Text.` (`sudo ` only when `sudo` and the
        commands need root; a text that opens a parenthesis or a clause follows the commands
        directly). Without `sudo`, a command quoted in the text loses its `sudo` too."""
        prefix = "sudo " if sudo and self.needs_root else ""
        run = " && ".join(prefix + c for c in self.commands)
        text = self.text if sudo else without_sudo(self.text)
        if not run or not text:
            return run or text
        # what a transitional fix said right after its command (`: why`, `; or ...`) follows it
        # (and "." alone, a fix that ended its commands with a full stop)
        joint = " " if self.text[0] == "(" else "" if self.text[0] in ":;,." else ". "
        return f"{run}{joint}{text}"

    def fix_dict(self) -> dict[str, Any]:
        return {"commands": list(self.commands), "needs_root": self.needs_root}


@record(frozen=True, kw_only=True)
class Finding:
    """One observation, with what is wrong, why, and what to do."""

    #: stable code of the check that made it, documented in docs/codes/CODE.md
    code: str
    severity: Severity
    #: one line
    title: str
    #: names the concrete files, sonames, versions
    message: str = ""
    #: the commands or the step that fix it, where one exists
    remedy: Remedy | None = None
    #: machine-readable facts behind the message (JSON-able values only)
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self, *, sudo: bool = True) -> dict[str, Any]:
        """`sudo`: the report's `sudo` (whether commands that need root are shown after sudo)."""
        # not to_json(self): the message and the remedy are shown as the report's `sudo` says
        return {
            "code": self.code,
            "severity": self.severity.value,
            "title": self.title,
            "message": self.said(sudo=sudo),
            "remedy": self.remedy.shown(sudo=sudo) if self.remedy else None,
            "fix": self.remedy.fix_dict() if self.remedy and self.remedy.commands else None,
            "evidence": dict(self.evidence),
        }

    def said(self, *, sudo: bool = True) -> str:
        """The message, where it repeats the remedy's commands (a package finding's closing
        "Fix: ...") or quotes others, with them shown as the remedy shows them."""
        if sudo:
            return self.message
        message = self.message
        for command in self.remedy.commands if self.remedy else ():
            message = message.replace(f"sudo {command}", command)
        return without_sudo(message)

    def fix(self, *, sudo: bool = True) -> str | None:
        """The remedy as one line (see `Remedy.shown`)."""
        return self.remedy.shown(sudo=sudo) if self.remedy else None

    @property
    def explained_by(self) -> str | None:
        """The code of the failure this finding is the consequence of (`consequence`), or None."""
        code = self.evidence.get("explained_by")
        return code if isinstance(code, str) and self.severity.rank < Severity.WARN.rank else None


def consequence(symptom: Finding, cause: Finding | str, *, title: str | None = None) -> Finding:
    """`symptom` as the consequence of the failure `cause` (a finding, or its code): information,
    not a second failure, that names the cause (`explained_by`, which every renderer shows right
    after the cause) and sends the user to its fix. The one way a finding becomes another's
    consequence."""
    code = cause if isinstance(cause, str) else cause.code
    see = f"See {code}." if isinstance(cause, str) else f"See {code}: {cause.title}."
    return Finding(
        code=symptom.code,
        severity=Severity.INFO,
        title=title or f"{symptom.title}: {code} gives the cause",
        message=symptom.message,
        remedy=Remedy(text=see),
        evidence={**symptom.evidence, "explained_by": code},
    )


def causes_first(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """`findings` with each consequence moved right after the last failure of the code that
    explains it, whatever order the checks ran in: the cause always comes first."""
    failing = {f.code for f in findings if f.severity.rank >= Severity.FAIL.rank}
    moved = [f for f in findings if f.explained_by in failing]
    last = {f.code: i for i, f in enumerate(findings) if f.severity.rank >= Severity.FAIL.rank}
    out: list[Finding] = []
    for i, f in enumerate(findings):
        if any(f is m for m in moved):
            continue
        out.append(f)
        if last.get(f.code) == i:
            out += [m for m in moved if m.explained_by == f.code]
    return tuple(out)


@record(frozen=True, kw_only=True)
class CheckResult:
    """What one check did: its findings, or why it was skipped, and how long it took."""

    code: str
    family: str
    title: str
    status: CheckStatus
    findings: tuple[Finding, ...] = ()
    skip_reason: str | None = None
    seconds: float = 0.0

    @property
    def worst(self) -> Severity:
        return max((f.severity for f in self.findings), key=lambda s: s.rank, default=Severity.OK)

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the JSON has the worst severity, not the findings, and rounds seconds
        return {
            "code": self.code,
            "family": self.family,
            "title": self.title,
            "status": self.status.value,
            "severity": self.worst.value,
            "skip_reason": self.skip_reason,
            "seconds": round(self.seconds, 4),
        }


class ReportStatus(enum.StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"


@record(frozen=True, kw_only=True)
class Report:
    """Everything one vkdoctor run found. Renderers read only this."""

    vkdoctor_version: str
    #: `check`'s and `drivers`' host facts, or `run-probe`'s
    host: HostReport | ProbeHost
    checks: tuple[CheckResult, ...]
    drivers: tuple[DriverRow, ...] = ()
    overlay: OverlayReport | None = None
    probe: ProbeResult | None = None
    #: how the loader finds drivers (None for run-probe, or when the scan broke)
    driver_search: DriverSearch | None = None
    command: str = "check"
    #: commands that need root are shown after `sudo ` (the user is not root and has sudo)
    sudo: bool = True

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every check's findings in the checks' order, each consequence right after its cause."""
        return causes_first(tuple(f for c in self.checks for f in c.findings))

    def consequences(self, cause: Finding) -> tuple[Finding, ...]:
        """The findings that `cause`, a failure, explains (none unless it is the last failure of
        its code, which its consequences follow)."""
        found = self.findings
        at = next((i for i, f in enumerate(found) if f is cause), None)
        if at is None or cause.severity.rank < Severity.FAIL.rank:
            return ()
        after = []
        for f in found[at + 1 :]:
            if f.explained_by != cause.code:
                break
            after.append(f)
        return tuple(after)

    @property
    def probe_explained_by(self) -> str | None:
        """The code of the failure the probe's own failure is the consequence of, or None."""
        return next(
            (f.explained_by for f in self.findings if f.code == PROBE_CODE and f.explained_by),
            None,
        )

    def status(self, *, strict: bool = False) -> ReportStatus:
        """fail beats error: a real failure is reported as such even if one of our checks broke."""
        worst = max((f.severity.rank for f in self.findings), default=0)
        probe_failed = self.probe is not None and self.probe.status != "pass"
        if worst >= Severity.FAIL.rank and any(f.severity is Severity.FAIL for f in self.findings):
            return ReportStatus.FAIL
        if probe_failed:
            return ReportStatus.FAIL
        if strict and any(f.severity is Severity.WARN for f in self.findings):
            # a strict warning is a failure, and failure beats vkdoctor's own error
            return ReportStatus.FAIL
        if worst == Severity.ERROR.rank:
            return ReportStatus.ERROR
        if worst == Severity.WARN.rank:
            return ReportStatus.WARN
        return ReportStatus.OK

    def as_dict(self, *, strict: bool = False) -> dict[str, Any]:
        # not to_json(self): the status is computed, the findings are the checks' (flattened)
        return {
            "schema_version": SCHEMA_VERSION,
            "vkdoctor_version": self.vkdoctor_version,
            "command": self.command,
            "status": self.status(strict=strict).value,
            "host": to_json(self.host),
            "checks": [c.as_dict() for c in self.checks],
            "findings": [f.as_dict(sudo=self.sudo) for f in self.findings],
            "drivers": to_json(self.drivers),
            "overlay": to_json(self.overlay),
            "probe": self.probe.as_dict() if self.probe is not None else None,
            "driver_search": to_json(self.driver_search),
        }


#: exit codes, the contract in docs/user-guide.md
EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


def exit_code(status: ReportStatus) -> int:
    return {
        ReportStatus.OK: EXIT_OK,
        ReportStatus.WARN: EXIT_OK,
        ReportStatus.FAIL: EXIT_FAIL,
        ReportStatus.ERROR: EXIT_INTERNAL,
    }[status]


def without_sudo(text: str) -> str:
    """`text` without the `sudo` that starts a command it quotes in words ("..., or sudo pacman
    -S X"), for root on a machine without sudo; prose ("under sudo or cron") and paths keep the
    word. A transition for fixes and messages still written as sentences: a Remedy's commands
    never hold sudo."""
    if "sudo " not in text:
        return text
    import re

    return re.sub(
        r"\bsudo (?=(?:apt|apt-get|apt-mark|dpkg|dnf|rpm|pacman|ppa-purge|ldconfig|usermod|zypper"
        r"|apk|chmod|ln|env|rm|mkdir|tee|sh)\b)",
        "",
        text,
    )
