"""GitHub Actions: workflow-command annotations for the log, Markdown for the job summary.

Escaping follows the runner's rules (actions/toolkit, command.ts): in the data part `%`, `\\r` and
`\\n` are percent-encoded; in property values `:` and `,` are too. Everything else vkdoctor prints
into the log goes between `::stop-commands::` markers with a random token, so a path or a driver's
stderr that happens to contain `::error` cannot issue a workflow command, and the older `##[`
form is shown escaped wherever it stands (vkdoctor.render.escape).
"""

from __future__ import annotations

from collections.abc import Iterable

from vkdoctor.model import Finding, Report, ReportStatus, Severity
from vkdoctor.model.report_records import DriverRow, OverlayReport, ProbeResult
from vkdoctor.render import PROBE_FAMILY_PREFIX
from vkdoctor.render import text as text_render
from vkdoctor.render.escape import (
    markdown_code,
    markdown_text,
    no_commands,
    stop_token,
    visible,
    visible_report,
)
from vkdoctor.render.style import Style


def escape_data(value: str) -> str:
    # other control characters (ESC from a driver's output) are shown, not passed to the log
    text = visible(value, prose=True).replace("%", "%25").replace("\n", "%0A")
    return no_commands(text)


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: str) -> str:
    """One workflow command line: `::name key=value,key=value::message`."""
    props = ",".join(f"{k}={escape_property(v)}" for k, v in properties.items())
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def _level(severity: Severity, *, strict: bool) -> str | None:
    if severity.rank >= Severity.FAIL.rank:
        return "error"
    if severity is Severity.WARN:
        return "error" if strict else "warning"
    return None


def _body(f: Finding, report: Report) -> str:
    parts = [f.said(sudo=report.sudo)] if f.message else []
    if f.remedy:
        parts.append(f"Fix: {f.fix(sudo=report.sudo)}")
    follows = text_render.consequence_line(report, f)
    if follows:
        parts.append(f"Consequences (not failures of their own): {follows}")
    parts.append(f"(vkdoctor explain {f.code})")
    return "\n".join(parts)


def probe_failure(probe: ProbeResult) -> str | None:
    """A one-paragraph account of a probe that did not pass, or None when it passed."""
    if probe.status == "pass":
        return None
    adapter = probe.details.adapter
    name = adapter.name if adapter else None
    lines = [f"probe {probe.status}" + (f" on {name}" if name else "")]
    if probe.summary:
        lines.append(probe.summary)
    bad = [c for c in probe.details.cases if not c.ok]
    for case in bad[:5]:
        line = f"rows={case.rows} d={case.d}: max_rel_err={case.max_rel_err}"
        worst = case.worst
        if worst is not None:
            index = None if worst.index is None else list(worst.index)
            line += f", worst element {index} = {worst.value} (reference {worst.reference})"
        lines.append(line)
    return "\n".join(lines)


def annotation_lines(report: Report, *, strict: bool = False) -> list[str]:
    report = visible_report(report)
    """One `::error` / `::warning` per failing or warning finding, the cause first, its
    consequences named in it; one for a failed probe unless a probe finding (VKR...) already
    says it or another failure explains it."""
    out = []
    probe_said = report.probe_explained_by is not None
    for f in report.findings:
        level = _level(f.severity, strict=strict)
        if level:
            out.append(command(level, _body(f, report), title=f"{f.code}: {f.title}"))
            probe_said |= level == "error" and f.code.startswith(PROBE_FAMILY_PREFIX)
    if report.probe is not None and not probe_said:
        failure = probe_failure(report.probe)
        if failure:
            out.append(command("error", failure, title="vkdoctor probe"))
    return out


def render(report: Report, *, strict: bool = False) -> str:
    """The annotations, then the full text report folded in a log group, then the verdict."""
    style = Style(colour=False, unicode=True, verbose=False)
    body = no_commands("\n".join(text_render.sections(report, style)))
    token = stop_token()
    lines = [
        *annotation_lines(report, strict=strict),
        "::group::vkdoctor report",
        f"::stop-commands::{token}",
        body,
        f"::{token}::",
        "::endgroup::",
        no_commands(text_render.verdict(report, style=style, strict=strict)),
    ]
    return "\n".join(lines) + "\n"


# --- the job summary (Markdown) -------------------------------------------------------------------

_VERDICT = {
    ReportStatus.OK: "✅ OK",
    ReportStatus.WARN: "⚠️ OK with warnings",
    ReportStatus.FAIL: "❌ FAIL",
    ReportStatus.ERROR: "💥 ERROR (vkdoctor itself broke)",
}


_cell = markdown_text
_code = markdown_code


def _table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    """Rows of cells already made Markdown (with _cell, _code or markup around them)."""
    head = list(head)
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def _attention(report: Report) -> list[Finding]:
    """The warnings and failures, each failure followed by the consequences it explains."""
    out: list[Finding] = []
    for f in report.findings:
        if f.severity.rank >= Severity.WARN.rank:
            out += [f, *report.consequences(f)]
    return out


def _row(f: Finding, report: Report, *, strict: bool) -> tuple[str, str, str, str]:
    if f.severity.rank < Severity.WARN.rank:
        return (
            "↳",
            _code(f.code),
            f"{_cell(f.title)}<br>the consequence of {_code(str(f.explained_by))}, not a failure "
            "of its own",
            _cell(f.fix(sudo=report.sudo) or ""),
        )
    return (
        "❌" if f.severity.rank >= Severity.FAIL.rank or strict else "⚠️",
        _code(f.code),
        f"**{_cell(f.title)}**" + (f"<br>{_cell(f.said(sudo=report.sudo))}" if f.message else ""),
        _cell(f.fix(sudo=report.sudo) or ""),
    )


def summary(report: Report, *, strict: bool = False) -> str:
    report = visible_report(report)
    """Markdown for $GITHUB_STEP_SUMMARY: verdict, findings, drivers, probe, overlay."""
    status = report.status(strict=strict)
    style = Style(colour=False, unicode=True)
    lines = [f"## vkdoctor {report.command}: {_VERDICT[status]}", ""]
    lines += [_code(text_render.verdict(report, style=style, strict=strict)), ""]
    lines += _findings_section(report, strict=strict)
    if report.drivers:
        lines += _drivers_section(report.drivers)
    if report.probe is not None:
        lines += _probe_section(report.probe, report.probe_explained_by)
    if report.overlay:
        lines += _overlay_section(report.overlay)
    return "\n".join(lines) + "\n"


def _findings_section(report: Report, *, strict: bool) -> list[str]:
    """The findings that need attention, as a table, and the checks skipped."""
    lines: list[str] = []
    needing = _attention(report)
    if needing:
        lines += ["### Findings", ""]
        lines += _table(
            ("", "code", "finding", "fix"),
            (_row(f, report, strict=strict) for f in needing),
        )
        lines += ["", "Run `vkdoctor explain CODE` for what a code means and how to fix it.", ""]
    skipped = [c for c in report.checks if c.status.value == "skipped"]
    if skipped:
        lines += [
            f"{len(skipped)} check(s) skipped: "
            + ", ".join(_cell(f"{c.code} ({c.skip_reason})") for c in skipped),
            "",
        ]
    return lines


def _drivers_section(drivers: Iterable[DriverRow]) -> list[str]:
    lines = ["### Drivers", ""]
    lines += _table(
        ("manifest", "library", "verdict", "reason"),
        (
            (
                _code(d.manifest),
                _cell(d.library_path or d.library or ""),
                _cell(d.verdict),
                _cell(d.reason or ""),
            )
            for d in drivers
        ),
    )
    lines.append("")
    return lines


def _probe_section(probe: ProbeResult, cause: str | None = None) -> list[str]:
    """The probe's status and adapter, why it failed (`cause`: the code of the failure it is
    the consequence of), its ladder and its cases."""
    adapter = probe.details.adapter
    name = adapter.name if adapter else None
    head = f"### Probe: {_cell(probe.status)}"
    if name:
        head += f" on {_cell(name)} ({_cell(probe.backend)})"
    if cause and probe.status != "pass":
        head += f", the consequence of {_code(cause)}"
    lines = [head, ""]
    failure = probe_failure(probe)
    if failure:
        lines += [_cell(failure), ""]
    rungs = probe.details.ladder
    if rungs:
        marks = ", ".join(f"{_cell(r.rung)} {'✅' if r.ok else '❌'}" for r in rungs)
        lines += [f"Ladder: {marks}", ""]
    cases = probe.details.cases
    if cases:
        lines += _table(
            ("rows", "d", "max rel. error", "ok"),
            (
                (_cell(c.rows), _cell(c.d), _cell(_error(c.max_rel_err)), "✅" if c.ok else "❌")
                for c in cases
            ),
        )
        lines.append("")
    return lines


def _overlay_section(overlay: OverlayReport) -> list[str]:
    """The overlay's LD_LIBRARY_PATH and the libraries it links."""
    lines = [
        "### Overlay",
        "",
        "```sh",
        f"export LD_LIBRARY_PATH={overlay.ld_library_path}",
        "```",
        "",
    ]
    if overlay.libraries:
        lines += _table(
            ("soname", "target", "needed by"),
            (
                (_code(x.soname), _cell(x.target), _cell(", ".join(x.needed_by)))
                for x in overlay.libraries
            ),
        )
        lines.append("")
    return lines


def _error(value: object) -> object:
    """A relative error to three significant digits (9.84e-08), as a table shows it."""
    return f"{value:.3g}" if isinstance(value, float) else value
