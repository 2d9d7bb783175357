"""The data vkdoctor produces: findings, check results and the report. Frozen, render-agnostic."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from vkdoctor.record import field, record

SCHEMA_VERSION = 1


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
class Finding:
    """One observation, with what is wrong, why, and what to do."""

    #: stable code of the check that made it, documented in docs/codes/CODE.md
    code: str
    severity: Severity
    #: one line
    title: str
    #: names the concrete files, sonames, versions
    message: str = ""
    #: a command or a step, where one exists
    remedy: str | None = None
    #: machine-readable facts behind the message (JSON-able values only)
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "title": self.title,
            "message": self.message,
            "remedy": self.remedy,
            "evidence": dict(self.evidence),
        }


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
    host: Mapping[str, Any]
    checks: tuple[CheckResult, ...]
    drivers: tuple[Mapping[str, Any], ...] = ()
    overlay: Mapping[str, Any] | None = None
    probe: Mapping[str, Any] | None = None
    command: str = "check"

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for c in self.checks for f in c.findings)

    def status(self, *, strict: bool = False) -> ReportStatus:
        """fail beats error: a real failure is reported as such even if one of our checks broke."""
        worst = max((f.severity.rank for f in self.findings), default=0)
        probe_failed = self.probe is not None and self.probe.get("status") not in ("pass", None)
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
        return {
            "schema_version": SCHEMA_VERSION,
            "vkdoctor_version": self.vkdoctor_version,
            "command": self.command,
            "status": self.status(strict=strict).value,
            "host": dict(self.host),
            "checks": [c.as_dict() for c in self.checks],
            "findings": [f.as_dict() for f in self.findings],
            "drivers": [dict(d) for d in self.drivers],
            "overlay": dict(self.overlay) if self.overlay is not None else None,
            "probe": dict(self.probe) if self.probe is not None else None,
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
