"""JUnit XML: one test case per check and per probe case, for CI test reporters.

The shape is the common denominator that GitHub test-report actions, GitLab's `artifacts:reports:
junit` and Jenkins read: <testsuites> of <testsuite> of <testcase classname name time>, with
<failure message type>, <error message type> or <skipped message> and <system-out>.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vkdoctor.model import CheckResult, CheckStatus, Finding, Report, Severity
from vkdoctor.model.record import field, record, replace
from vkdoctor.render import PROBE_FAMILY_PREFIX, escape_bytes, hex_escape
from vkdoctor.render import text as text_render
from vkdoctor.render.escape import visible_report, xml_no_commands

if TYPE_CHECKING:
    from vkdoctor.model.probe_records import ProbeCase, ProbeRung
    from vkdoctor.model.report_records import ProbeResult

# XML 1.0 forbids most control characters even when escaped; a driver's stderr can hold them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(value: object) -> str:
    text = escape_bytes("" if value is None else str(value))
    return hex_escape(text, _NOT_XML)


@record
class _Case:
    classname: str
    name: str
    seconds: float = 0.0
    #: ("failure" | "error" | "skipped", message, type, body)
    outcome: tuple[str, str, str, str] | None = None
    output: list[str] = field(default_factory=list)


def _finding_text(f: Finding, sudo: bool) -> str:
    said = f"consequence of {f.explained_by}" if f.explained_by else f.severity.value
    lines = [f"{f.code} [{said}] {f.title}"]
    if f.message:
        lines.append(f.said(sudo=sudo))
    if f.remedy:
        lines.append(f"Fix: {f.fix(sudo=sudo)}")
    return "\n".join(lines)


def _failure_text(f: Finding, report: Report) -> str:
    """A failure, with the findings it explains named as its consequences."""
    follows = text_render.consequence_line(report, f)
    text = _finding_text(f, report.sudo)
    return f"{text}\nConsequences (not failures of their own): {follows}" if follows else text


def _check_case(c: CheckResult, report: Report, *, strict: bool) -> _Case:
    sudo = report.sudo
    case = _Case(classname=f"vkdoctor.{c.family}", name=f"{c.code} {c.title}", seconds=c.seconds)
    if c.status is CheckStatus.SKIPPED:
        case.outcome = ("skipped", c.skip_reason or "skipped", "", "")
        return case
    threshold = Severity.WARN.rank if strict else Severity.FAIL.rank
    errors = [f for f in c.findings if f.severity is Severity.ERROR]
    failing = [f for f in c.findings if threshold <= f.severity.rank < Severity.ERROR.rank]
    if failing:
        first = failing[0]
        body = "\n\n".join(_failure_text(f, report) for f in failing)
        body += f"\n\nvkdoctor explain {first.code}"
        case.outcome = ("failure", f"{first.code}: {first.title}", first.severity.value, body)
    elif errors or c.status is CheckStatus.ERROR:
        message, typ = f"{c.code} broke", "error"
        if errors:
            message, typ = f"{errors[0].code}: {errors[0].title}", errors[0].code
        body = "\n\n".join(_finding_text(f, sudo) for f in errors)
        case.outcome = ("error", message, typ, body)
    shown = {id(f) for f in failing + errors}
    case.output = [_finding_text(f, sudo) for f in c.findings if id(f) not in shown]
    return case


def _case_seconds(item: ProbeCase) -> float:
    """`seconds`, else the sum of the `timing` object's `*_s` figures (numbers or lists)."""
    if item.seconds is not None:
        return float(item.seconds)
    return item.timing.total_s if item.timing else 0.0


def _overall_case(probe: ProbeResult) -> _Case:
    """The probe's status, on which adapter, and its summary."""
    status = probe.status
    adapter = probe.details.adapter
    name = adapter.name if adapter else None
    backend = probe.backend
    where = f" on {name}" + (f" ({backend})" if backend else "") if name else ""
    overall = _Case(
        classname="vkdoctor.children.probe",
        name="probe" + where,
        seconds=float(probe.seconds or 0.0),
    )
    details = [f"status: {status}{where}"]
    if probe.summary:
        details.append(probe.summary)
    if status != "pass":
        overall.outcome = ("failure", f"probe {status}{where}", status, "\n".join(details))
    else:
        overall.output = details
    return overall


def _rung_case(rung: ProbeRung) -> _Case:
    case = _Case(
        classname="vkdoctor.children.probe",
        name=f"ladder {rung.rung}",
        seconds=float(rung.seconds or 0.0),
    )
    if rung.ok:
        case.output = [f"rung {rung.rung} passed"]
    else:
        error = rung.error or "failed"
        case.outcome = ("failure", f"ladder rung {rung.rung}: {error}", "fail", error)
    return case


def _rmsnorm_case(item: ProbeCase, tolerance: float | None) -> _Case:
    case = _Case(
        classname="vkdoctor.children.probe",
        name=f"{item.name or 'rmsnorm'} rows={item.rows} d={item.d}",
        seconds=_case_seconds(item),
    )
    figures = [f"max_rel_err={item.max_rel_err}"]
    if item.norm_rel_err is not None:
        figures.append(f"norm_rel_err={item.norm_rel_err}")
    if tolerance is not None:
        figures.append(f"tolerance={tolerance}")
    if item.nonfinite:
        figures.append(f"nonfinite={item.nonfinite}")
    text = ", ".join(figures)
    worst = item.worst
    if worst is not None:
        index = None if worst.index is None else list(worst.index)
        text += f"\nworst element {index}: value {worst.value}, reference {worst.reference}"
    if item.worst_index is not None:
        text += f"\nworst_index={item.worst_index}"
    if item.error is not None:
        text += f"\nerror={item.error}"
    if item.ok:
        case.output = [text]
    else:
        case.outcome = ("failure", f"wrong numbers: {figures[0]}", "fail", text)
    return case


def _probe_cases(probe: ProbeResult, *, overall_case: bool, cause: str | None) -> list[_Case]:
    """The ladder's rungs and the RMSNorm cases; `overall_case` adds one for the probe's status,
    for reports where no probe check (VKR...) is a test case already. `cause`: the code of the
    failure the probe's is the consequence of, which its failed cases are, not failures."""
    details = probe.details
    overall = _overall_case(probe)
    cases = [overall, *map(_rung_case, details.ladder)]
    cases += [_rmsnorm_case(item, details.tolerance) for item in details.cases]
    if cause is not None:
        cases = [_as_consequence(case, cause) for case in cases]
    # What the run did not get to, as skipped cases: a probe that stops early keeps the same
    # test cases in a CI's history, skipped instead of gone.
    ran = {c.name for c in cases}
    reason = probe.reason
    why = f"not run: the probe ended with {probe.status}" + (
        f" ({reason})" if reason and reason != probe.status else ""
    )
    if cause is not None:
        why += f", the consequence of {cause}"
    plan = details.plan
    planned = [f"ladder {rung}" for rung in (plan.ladder if plan else ())]
    planned += [f"rmsnorm rows={rows} d={d}" for rows, d in (plan.cases if plan else ())]
    for name in planned:
        if name not in ran:
            cases.append(
                _Case(
                    classname="vkdoctor.children.probe", name=name, outcome=("skipped", why, "", "")
                )
            )
    # The overall case carries the time the cases do not account for (start-up, adapter).
    overall.seconds = max(0.0, overall.seconds - sum(c.seconds for c in cases[1:]))
    return cases if overall_case else cases[1:]


def _as_consequence(case: _Case, cause: str) -> _Case:
    """A failed case of a probe whose failure `cause` explains: skipped, as its consequence
    (JUnit has no other outcome that is not a failure of its own), with what it found."""
    if case.outcome is None or case.outcome[0] != "failure":
        return case
    _, message, _, body = case.outcome
    said = f"the consequence of {cause} (see its failure): {message}"
    return replace(case, outcome=("skipped", said, "", ""), output=[*case.output, body])


def _suite(parent: ET.Element, name: str, cases: Sequence[_Case]) -> None:
    counts = {"failure": 0, "error": 0, "skipped": 0}
    for case in cases:
        if case.outcome:
            counts[case.outcome[0]] += 1
    suite = ET.SubElement(
        parent,
        "testsuite",
        name=name,
        tests=str(len(cases)),
        failures=str(counts["failure"]),
        errors=str(counts["error"]),
        skipped=str(counts["skipped"]),
        time=f"{sum(c.seconds for c in cases):.3f}",
    )
    for case in cases:
        el = ET.SubElement(
            suite,
            "testcase",
            classname=_xml_text(case.classname),
            name=_xml_text(case.name),
            time=f"{case.seconds:.3f}",
        )
        if case.outcome:
            kind, message, typ, body = case.outcome
            attrs = {"message": _xml_text(message)}
            if kind != "skipped":
                attrs["type"] = _xml_text(typ)
            child = ET.SubElement(el, kind, attrs)
            if body:
                child.text = _xml_text(body)
        if case.output:
            ET.SubElement(el, "system-out").text = _xml_text("\n\n".join(case.output))


def render(report: Report, *, strict: bool = False) -> str:
    report = visible_report(report)
    families: dict[str, list[_Case]] = {}
    for c in report.checks:
        families.setdefault(c.family, []).append(_check_case(c, report, strict=strict))
    if report.probe is not None:
        has_check = any(c.code.startswith(PROBE_FAMILY_PREFIX) for c in report.checks)
        cases = _probe_cases(
            report.probe, overall_case=not has_check, cause=report.probe_explained_by
        )
        if cases:
            families.setdefault("probe", []).extend(cases)
    root = ET.Element("testsuites", name=f"vkdoctor {report.command}")
    for family, cases in families.items():
        _suite(root, f"vkdoctor.{family}", cases)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    for suite in root:
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        seconds += float(suite.get("time", "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    xml = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml_no_commands(xml) + "\n"
