"""The shape of a check: a small class with a stable code whose docstring is its explanation."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context


class Check:
    """Base class. Subclasses set `code`, `family`, `title`, and write a docstring.

    `run` yields findings and never prints. Yielding nothing means "ok". A check whose
    `requires` did not pass is skipped with the reason, so one root cause gives one finding.
    `live_only` checks are skipped, as not applicable, when inspecting another root.
    """

    code: ClassVar[str]
    family: ClassVar[str]
    title: ClassVar[str]
    requires: ClassVar[frozenset[str]] = frozenset()
    live_only: ClassVar[bool] = False
    #: the codes of checks whose failures and warnings this one's failures can explain: one
    #: cause seen from two sides (a missing library, and the package skew behind it). The
    #: runner turns each one `explained` by one of ours into info that points here, so the
    #: cause is counted once, with its fix.
    explains: ClassVar[tuple[str, ...]] = ()

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        """Whether our `cause` finding is the reason for the `explains` check's `symptom`."""
        return False

    def run(self, ctx: Context) -> Iterable[Finding]:
        raise NotImplementedError

    # Helpers so that checks build findings with their own code, and one line each.
    def finding(
        self,
        severity: Severity,
        title: str,
        message: str = "",
        *,
        remedy: Remedy | None = None,
        evidence: Mapping[str, Any] | None = None,
    ) -> Finding:
        return Finding(
            code=self.code,
            severity=severity,
            title=title,
            message=message,
            remedy=remedy,
            evidence=dict(evidence or {}),
        )

    def ok(self, title: str, message: str = "", **evidence: Any) -> Finding:
        return self.finding(Severity.OK, title, message, evidence=evidence)

    def info(self, title: str, message: str = "", **evidence: Any) -> Finding:
        """Information: no remedy (use `finding` for information that has one)."""
        if "remedy" in evidence:
            raise TypeError("info() takes no remedy; use finding(Severity.INFO, ..., remedy=)")
        return self.finding(Severity.INFO, title, message, evidence=evidence)

    def warn(
        self, title: str, message: str = "", *, remedy: Remedy | None = None, **evidence: Any
    ) -> Finding:
        return self.finding(Severity.WARN, title, message, remedy=remedy, evidence=evidence)

    def fail(
        self, title: str, message: str = "", *, remedy: Remedy | None = None, **evidence: Any
    ) -> Finding:
        return self.finding(Severity.FAIL, title, message, remedy=remedy, evidence=evidence)

    @classmethod
    def explanation(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")
