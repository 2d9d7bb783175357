"""How text is drawn for a reader: colour, Unicode or ASCII marks, verbosity and width."""

from __future__ import annotations

from vkdoctor.model import Severity
from vkdoctor.model.record import record

_GLYPH = {
    Severity.OK: "✓",
    Severity.INFO: "·",
    Severity.WARN: "!",
    Severity.FAIL: "✗",
    Severity.ERROR: "✗",
}
_ASCII = {
    Severity.OK: "ok",
    Severity.INFO: "ii",
    Severity.WARN: "!!",
    Severity.FAIL: "XX",
    Severity.ERROR: "EE",
}
_COLOUR = {
    Severity.OK: "32",
    Severity.INFO: "2",
    Severity.WARN: "33",
    Severity.FAIL: "31",
    Severity.ERROR: "35",
}


@record(frozen=True)
class Style:
    colour: bool = False
    unicode: bool = True
    #: -v: every check, one line each
    verbose: bool = False
    #: -vv: every finding's message and evidence too
    evidence: bool = False
    #: wrap messages and fixes at this many columns (a terminal's width); None: one line each,
    #: as logs and tools want them
    width: int | None = None
    #: the machine vkdoctor runs on (the face asks `platform`), to say when a --root tree is
    #: another one; "" when not known
    machine: str = ""

    def paint(self, text: str, sev: Severity, *, bold: bool = False) -> str:
        if not self.colour:
            return text
        code = _COLOUR[sev] + (";1" if bold else "")
        return f"\x1b[{code}m{text}\x1b[0m"

    def glyph(self, sev: Severity) -> str:
        return (_GLYPH if self.unicode else _ASCII)[sev]
