"""The probe section of the text report: adapters seen, the ladder, each case's error, the verdict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vkdoctor.model import Severity
from vkdoctor.model.probe_records import disabled_setting

if TYPE_CHECKING:
    from vkdoctor.model.probe_records import ProbeCase, ProbeDetails
    from vkdoctor.model.report_records import ProbeResult
    from vkdoctor.render.style import Style


def _err(v: float | None) -> str:
    return "not finite" if v is None else f"{float(v):.2e}"


def _adapters(probe: ProbeDetails) -> list[str]:
    if not probe.adapters:
        return ["    adapters seen: none"]
    refused = {a.summary for a in probe.refused}
    rows = []
    for a in probe.adapters:
        mark = "used" if a.used else "refused" if a.summary in refused else ""
        ids = f"{a.vendor_id or 0:#06x}:{a.device_id or 0:#06x}"
        backend = "?" if a.backend is None else a.backend
        kind = "?" if a.type is None else a.type
        # two lines: the table fits 80 columns with the longest driver strings
        head = f"      {'*' if a.used else ' '} {backend:<7} {kind:<13} "
        rows.append(f"{head}{a.name}" + (f"  ({mark})" if mark else ""))
        rows.append(f"{' ' * len(head)}{a.driver or 'no driver string'}, {ids}")
    return ["    adapters seen:", *rows]


def _ladder(probe: ProbeDetails) -> list[str]:
    if not probe.ladder:
        return []
    out = ["    ladder:"]
    for r in probe.ladder:
        detail = ""
        if r.ok and r.result_2x2 is not None:
            detail = f"  {r.result_2x2}"
        elif not r.ok:
            detail = f"  {r.error}"
        out.append(f"      {r.rung!s:<20} {'ok' if r.ok else 'FAILED'}{detail}")
    return out


def _case_notes(c: ProbeCase) -> list[str]:
    chunks = (c.timing.chunks if c.timing else None) or 1
    gbps = c.timing.gbps if c.timing else None
    notes = []
    if chunks > 1:
        notes.append(f"{chunks} bindings")
    if (c.d or 0) >= 1024 and chunks == 1 and gbps:
        notes.append(f"{gbps:.2f} GB/s")
    if not c.ok:
        w = c.worst
        idx: Sequence[object] = (w.index if w else None) or ("?", "?")
        notes.append(
            f"worst y[{idx[0]},{idx[1]}] = {w.value if w else None} vs "
            f"{w.reference if w else None}" + (f", {c.nonfinite} non-finite" if c.nonfinite else "")
        )
    return notes


def _cases(probe: ProbeDetails) -> list[str]:
    if not probe.cases:
        return []
    tolerance = 1e-5 if probe.tolerance is None else probe.tolerance
    out = [
        f"    RMSNorm (tolerance {tolerance:g}, seed {probe.seed}):",
        f"      {'rows x d':<12} {'max rel err':>11} {'norm err':>10}  result",
    ]
    for c in probe.cases:
        shape = f"{c.rows}x{c.d}"
        notes = _case_notes(c)
        verdict = "ok" if c.ok else "WRONG"
        out.append(
            f"      {shape:<12} {_err(c.max_rel_err):>11} {_err(c.norm_rel_err):>10}  "
            f"{verdict}" + (f"  ({'; '.join(notes)})" if notes else "")
        )
    return out


def _capabilities(probe: ProbeDetails) -> list[str]:
    if not probe.capabilities:
        return []
    out = ["    capabilities:"]
    for r in probe.capabilities:
        detail = " ".join((r.detail or "").split())
        head = f"      {r.name!s:<22} {r.status!s:<11}"
        if r.status == "pass":
            # the pass details are short: the row fits 80 columns
            out.append(f"{head} {detail}")
        else:
            out += [head.rstrip(), f"        {detail}"]
    return out


def probe_lines(result: ProbeResult, style: Style, cause: str | None = None) -> list[str]:
    """`cause`: the code of the failure the probe's own is the consequence of."""
    status = result.status
    probe = result.details
    sev = Severity.OK if status == "pass" else Severity.FAIL
    adapter = probe.adapter
    head = f"  {style.paint(style.glyph(sev), sev)} probe: {style.paint(status, sev, bold=True)}"
    if adapter is not None and adapter.name:
        head += f" on {adapter.name} ({result.backend}, {adapter.type})"
    if result.seconds is not None:
        head += f" in {result.seconds:.2f} s"
    if cause is not None and status != "pass":
        head += f", the consequence of {cause}"
    # the summary is VKR001's line, right above this section
    lines = [head]
    if probe.disabled:
        setting, _ = disabled_setting(probe.disabled)
        lines.append(
            f"    ran with {setting}: they crash or hang every Vulkan program (VKT001, VKT003)"
        )
    lines += _adapters(probe)
    lines += _ladder(probe)
    lines += _cases(probe)
    lines += _capabilities(probe)
    if status != "pass":
        if probe.stage:
            lines.append(f"    stage reached: {probe.stage}")
        tail = probe.stderr_tail
        if tail and not all(line in (result.summary or "") for line in tail):
            if cause is not None and not style.verbose:
                # the cause's failure says why; the crash's own words only with -v
                lines.append(f"    last lines of stderr: {len(tail)} (-v shows them)")
            else:
                lines.append("    last lines of stderr:")
                lines += [f"      | {line}" for line in tail]
    return lines
