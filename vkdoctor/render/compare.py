"""`vkdoctor diff` and `vkdoctor summary` as text (wrapped to the terminal's width), Markdown
(GitHub's job summary) and JSON. Takes vkdoctor.model.compare's results, nothing else."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence

from vkdoctor.model import PROBE_CODE
from vkdoctor.model.compare import Change, Comparison, FindingDiff, Fleet, Group, Machine
from vkdoctor.model.record import asdict
from vkdoctor.render.escape import json_text, visible, visible_report

_EXIT = {"pass": 0, "fail": 1, "error": 3}
#: how many wrapped lines of a finding's message the diff shows
_MESSAGE_LINES = 6
#: how many differing driver-stack packages "Also different" names
_PACKAGES = 6


def _wrap(text: str, width: int, indent: str, hang: str | None = None) -> list[str]:
    return textwrap.wrap(
        text,
        width=max(width, len(indent) + 20),
        initial_indent=indent,
        subsequent_indent=hang if hang is not None else indent + "  ",
        break_long_words=True,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def _change(c: Change, width: int, indent: str, absent: str) -> list[str]:
    a = c.a if c.a is not None else absent
    b = c.b if c.b is not None else absent
    one = f"{indent}{c.what}: A {a}; B {b}"
    if len(one) <= width:
        return [one]
    out = _wrap(c.what, width, indent)
    out += _wrap(f"A: {a}", width, indent + "  ", indent + "     ")
    out += _wrap(f"B: {b}", width, indent + "  ", indent + "     ")
    return out


def _finding(f: FindingDiff, width: int) -> list[str]:
    out = [f"  {f.code}: A {f.worst_a}, B {f.worst_b}"]
    for side, items, other in (("A", f.a, f.b), ("B", f.b, f.a)):
        for sev, title, message in items:
            if (sev, title, message) in other:
                continue
            out += _wrap(f"{side}: {sev}: {title}", width, "    ", "       ")
            if message and message != title:
                lines = _wrap(message, width, "       ", "       ")
                if len(lines) > _MESSAGE_LINES:
                    lines = [*lines[: _MESSAGE_LINES - 1], "       ..."]
                out += lines
    return out


def diff_text(c: Comparison, name_a: str, name_b: str, *, width: int = 80) -> str:
    c, name_a, name_b = visible_report(c), visible(name_a), visible(name_b)
    out = _wrap(f"A: {name_a}", width, "", "   ") + _wrap(f"B: {name_b}", width, "", "   ")
    same = "the same verdict" if c.same_verdict else "different verdicts"
    out += _wrap(
        f"Verdict: A {c.verdict_a} ({c.status_a}, exit {_EXIT.get(c.verdict_a, 3)}); "
        f"B {c.verdict_b} ({c.status_b}, exit {_EXIT.get(c.verdict_b, 3)}): {same}",
        width,
        "",
        "  ",
    )
    if c.causes:
        out += ["", "Why:"]
        for cause in c.causes:
            out += _wrap(cause, width, "  * ", "    ")
    decisive = [d for d in c.drivers if d.decisive]
    other = [d for d in c.drivers if not d.decisive]
    for title, group in (
        ("Drivers that fail or give a device on one side only:", decisive),
        ("Other drivers that differ:", other),
    ):
        if not group:
            continue
        out += ["", title]
        for d in group:
            out.append(f"  {d.name}")
            out += _wrap(f"A: {d.a or 'not listed'}", width, "    ", "       ")
            out += _wrap(f"B: {d.b or 'not listed'}", width, "    ", "       ")
            for ch in d.changes:
                out += _change(ch, width, "    ", "none")
    if c.versions:
        out += ["", "Versions:"]
        for ch in c.versions:
            out += _change(ch, width, "  ", "unknown")
    unrecorded = [s for s, rec in zip("AB", c.environment_recorded, strict=True) if not rec]
    if c.environment or unrecorded:
        out += ["", "Environment (Vulkan, loader, ld.so, XDG, wgpu variables):"]
        if unrecorded:
            out += _wrap(
                f"{' and '.join(unrecorded)}'s report does not record the environment "
                "(written by an older vkdoctor): only what its findings say is known",
                width,
                "  ",
            )
        for ch in c.environment:
            out += _change(ch, width, "  ", "unset")
    if c.findings:
        out += ["", "Findings:"]
        for f in c.findings:
            out += _finding(f, width)
    if c.probe:
        out += ["", "Probe:"]
        for ch in c.probe:
            out += _change(ch, width, "  ", "absent")
    rest: list[str] = []
    if c.packages:
        shown = "; ".join(
            f"{ch.what} {ch.a or 'absent'} / {ch.b or 'absent'}" for ch in c.packages[:_PACKAGES]
        )
        more = len(c.packages) - _PACKAGES
        rest += _wrap(
            f"{len(c.packages)} driver-stack package(s) differ: {shown}"
            + (f"; and {more} more (the reports' VKP009 evidence lists them)" if more > 0 else ""),
            width,
            "  ",
        )
    for ch in c.rest:
        rest += _change(ch, width, "  ", "unknown")
    if c.reworded:
        rest += _wrap(
            "only information (ok, info) or words differ: " + ", ".join(c.reworded), width, "  "
        )
    if rest:
        out += ["", "Also different (A / B):", *rest]
    if not (c.causes or c.drivers or c.versions or c.environment or c.findings or c.probe or rest):
        out += ["", "No difference in what vkdoctor records."]
    return "\n".join(out) + "\n"


def diff_json(c: Comparison, name_a: str, name_b: str) -> str:
    doc = {"a": name_a, "b": name_b, "same_verdict": c.same_verdict, **asdict(c)}
    return json_text(doc) + "\n"


# --- summary ----------------------------------------------------------------------------------


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def _columns(rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """A table whose last column wraps; the others are cut (with …) when the width is short."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    last_width = min(max(len(r[-1]) for r in rows), 24)
    # what does not fit comes out of the host and adapter columns (cut with …), not the codes
    budget = width - max(last_width, 7) - 2 * len(widths)
    while sum(widths) > budget and max(widths[1:3]) > 8:
        i = 1 if widths[1] >= widths[2] else 2
        widths[i] -= 1
    out = []
    for r in rows:
        cells = [_fit(r[i], widths[i]).ljust(widths[i]) for i in range(len(widths))]
        lead = "  ".join(cells) + "  "
        last = textwrap.wrap(r[-1], width=max(width - len(lead), 10)) or [""]
        out.append((lead + last[0]).rstrip())
        out += [(" " * len(lead) + more).rstrip() for more in last[1:]]
    return out


def _failing(m: Machine, mark: Callable[[str], str] = str) -> str:
    """A machine's failing codes, each with the codes it causes there (its consequences, not
    failures of their own): `VKH002 (causes VKT001 VKR001)`."""
    out = []
    for code in m.codes:
        # the culprit layer the probe found is VKR001's failure, the probe's own its consequence
        follows = [
            "the probe's failure" if c == code == PROBE_CODE else mark(c)
            for c in m.consequences_of(code)
        ]

        out.append(mark(code) + (f" (causes {' '.join(follows)})" if follows else ""))
    return " ".join(out)


def _caused(fleet: Fleet, g: Group) -> str:
    """What the failure of group `g` causes on its machines, as a clause ("" when nothing)."""
    by_label = {m.label: m for m in fleet.machines}
    follows = dict.fromkeys(c for m in g.machines for c in by_label[m].consequences_of(g.code))
    return f"; its consequences there: {', '.join(follows)}" if follows else ""


def _groups_text(fleet: Fleet, width: int) -> list[str]:
    total = len(fleet.machines)
    out = []
    for g in fleet.groups:
        head = f"{g.code} {g.title}: {len(g.machines)} of {total} machines{_caused(fleet, g)}"
        out += _wrap(head, width, "  ")
        out += _wrap("(" + ", ".join(g.machines) + ")", width, "      ", "       ")
    return out


def summary_text(fleet: Fleet, *, width: int = 80) -> str:
    fleet = visible_report(fleet)
    total = len(fleet.machines)
    out = [f"vkdoctor summary: {total} machine{'s' if total != 1 else ''}, {fleet.failed} failed"]
    out.append("")
    rows = [("machine", "host", "adapter", "verdict", "failing")]
    rows += [(m.label, m.host, m.adapter, m.verdict, _failing(m)) for m in fleet.machines]
    out += _columns(rows, width)
    if fleet.groups:
        out += ["", "Failures by code:"]
        out += _groups_text(fleet, width)
    if fleet.unreadable:
        out += ["", f"Not read ({len(fleet.unreadable)}):"]
        out += [
            ln
            for path, why in fleet.unreadable
            for ln in _wrap(f"{path}: {why}", width, "  ", "    ")
        ]
    pair = _pair(fleet)
    if pair:
        out += ["", "Why one fails where another passes:"]
        one = f"  vkdoctor diff {' '.join(pair)}"
        # a command to paste: continued with backslashes, never broken inside a path
        out += (
            [one]
            if len(one) <= width
            else ["  vkdoctor diff \\", f"    {pair[0]} \\", f"    {pair[1]}"]
        )
    return "\n".join(out) + "\n"


def _pair(fleet: Fleet) -> tuple[str, str] | None:
    """The first machine that passed and the first that failed, quoted for a shell; None unless
    there are both."""
    import shlex

    ok = next((m for m in fleet.machines if m.verdict == "pass"), None)
    bad = next((m for m in fleet.machines if m.verdict != "pass"), None)
    if ok is None or bad is None:
        return None
    return shlex.quote(ok.path), shlex.quote(bad.path)


_MARK = {"pass": "✅ pass", "fail": "❌ fail", "error": "💥 error"}


def summary_github(fleet: Fleet) -> str:
    from vkdoctor.render.github import _cell, _code, _table

    total = len(fleet.machines)
    machines = "1 machine" if total == 1 else f"{total} machines"
    unread = len(fleet.unreadable)
    if fleet.failed:
        head = f"## vkdoctor summary: {fleet.failed} of {machines} failed"
    elif unread:
        head = f"## vkdoctor summary: {unread} not read; {machines} read, none failed"
    else:
        head = f"## vkdoctor summary: all {machines} pass"
    rows: Iterable[Iterable[str]] = (
        (
            _cell(m.label),
            _cell(m.host),
            _cell(m.adapter),
            _MARK.get(m.verdict, _cell(m.verdict)),
            _failing(m, _code),
        )
        for m in fleet.machines
    )
    out = [head, "", *_table(("machine", "host", "adapter", "verdict", "failing codes"), rows)]
    if fleet.groups:
        out += ["", "### Failures by code", ""]
        for g in fleet.groups:
            out.append(
                f"- {_code(g.code)} {_cell(g.title)}: **{len(g.machines)} of {total}** machines "
                f"({', '.join(_cell(m) for m in g.machines)}){_cell(_caused(fleet, g))}"
            )
    if fleet.unreadable:
        out += ["", f"### Not read ({len(fleet.unreadable)})", ""]
        out += [f"- {_code(path)}: {_cell(why)}" for path, why in fleet.unreadable]
    pair = _pair(fleet)
    if pair:
        command = "vkdoctor diff " + " ".join(pair)
        out += ["", f"Why one fails where another passes: {_code(command)}"]
    return "\n".join(out) + "\n"


def summary_json(fleet: Fleet) -> str:
    doc = {
        "machines": [
            {
                "label": m.label,
                "path": m.path,
                "host": m.host,
                "adapter": m.adapter,
                "verdict": m.verdict,
                "status": m.status,
                "failing": [
                    {"code": code, "title": title, "consequences": list(m.consequences_of(code))}
                    for code, title in m.failing
                ],
            }
            for m in fleet.machines
        ],
        "groups": [
            {
                "code": g.code,
                "title": g.title,
                "count": len(g.machines),
                "machines": list(g.machines),
            }
            for g in fleet.groups
        ],
        "total": len(fleet.machines),
        "failed": fleet.failed,
        "unreadable": [{"path": path, "why": why} for path, why in fleet.unreadable],
    }
    return json_text(doc) + "\n"
