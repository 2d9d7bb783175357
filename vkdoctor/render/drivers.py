"""The `drivers` view: the loader, its driver search path, the drivers in its order with their
verdicts, the implicit layers, and the failures with their fixes. It reads only the report."""

from __future__ import annotations

from vkdoctor.model import Report, Severity
from vkdoctor.model.report_records import LAYER_LIBRARY_PROBLEMS
from vkdoctor.render.escape import visible_report

_MARK = {"ok": "✓", "info": "·", "warn": "!", "fail": "✗", "error": "✗"}
_ASCII = {"ok": "ok", "info": "ii", "warn": "!!", "fail": "XX", "error": "EE"}


def _header(report: Report) -> list[str]:
    """The loader and the driver search path, in the loader's order."""
    search = report.driver_search
    root = report.host.root or "/"
    if search is None:  # the scan broke: the VKD checks' VKX000 says how
        return ["Vulkan loader: its driver search could not be read (see the findings below)"]
    out = [
        f"Vulkan loader {search.loader_version} ({search.loader_path or 'libvulkan.so.1 not found'})"
        + (f"; root {root}" if root != "/" else ""),
        "Driver search path, in order"
        + (f" (replaced by {search.override})" if search.override else "")
        + ":",
    ]
    # the column is as wide as the paths whose rows fit 80 columns; the others get their origin
    # on a line of its own
    width = max(
        (len(e.path) for e in search.entries if len(e.path) + len(e.origin) + 6 <= 80),
        default=0,
    )
    for e in search.entries:
        entry = f"  {e.path:<{width}}  [{e.origin}]"
        # the table fits 80 columns: an origin that would not goes under its path
        out += [entry] if len(entry) <= 80 else [f"  {e.path}", f"      [{e.origin}]"]
    if not search.entries:
        out.append("  (none)")
    return out


def render(report: Report, *, unicode: bool) -> str:
    report = visible_report(report)
    """The listing, then the fail and error findings (code, title, fix), then a verdict."""
    marks = _MARK if unicode else _ASCII
    arrow = "→" if unicode else "->"
    rows = report.drivers
    out = [*_header(report), ""]
    out.append("Drivers, in the loader's order:" if rows else "Drivers: none found.")
    for row in rows:
        v = row.verdict
        out.append(f"  {row.index + 1:>2} {marks.get(v, '?')} {v:<4} {row.manifest}")
        out.append(f"          from {row.origin}")
        if row.library:
            what = f"  ({row.driver})" if row.driver else ""
            out.append(f"          {arrow} {row.library}{what}")
        out.append(f"          {str(row.reason).removeprefix(f'{row.manifest}: ')}")
    layers = report.driver_search.implicit_layers if report.driver_search else ()
    if layers:
        out.append("")
        out.append("Implicit layers the loader adds to every application:")
        for layer in layers:
            off = f" (off with {layer.disable_env}=1)" if layer.disable_env else ""
            why = LAYER_LIBRARY_PROBLEMS.get(layer.library_state or "ok")
            if why is not None:
                off = f": {why}, so the loader goes on without it"
            out.append(f"  {layer.name} {arrow} {layer.library}{off}")
    problems = [
        (f.code, f.title, f.fix(sudo=report.sudo))
        for f in report.findings
        if f.severity.rank >= Severity.FAIL.rank
    ]
    out.append("")
    for code, title, remedy in problems:
        out.append(f"{marks['fail']} {code} {title}")
        if remedy:
            out.append(f"    fix: {remedy}")
    if problems:
        out.append("")
    out.append(_verdict(report, problems[0][1] if problems else None))
    return "\n".join(out) + "\n"


def _verdict(report: Report, first_problem: str | None) -> str:
    rows = report.drivers
    loads = [r for r in rows if r.outcome == "loads" and r.verdict != "fail"]
    failing = [r for r in rows if r.verdict == "fail"]
    if len(failing) == 1 and len(rows) == 1:
        return f"vkdoctor: FAIL: {failing[0].reason}"
    if failing:
        # every driver that will not load, the ones the loader skips (warn) included
        names = ", ".join(r.manifest.rsplit("/", 1)[-1] for r in rows if r not in loads)
        return (
            f"vkdoctor: FAIL: {len(loads)} of {len(rows)} drivers can load; {names} cannot "
            "(the findings above say why)"
        )
    if first_problem is not None:
        return f"vkdoctor: FAIL: {first_problem}"
    if loads:
        return (
            f"vkdoctor: {len(loads)} of {len(rows)} drivers can load (manifest and libraries): "
            + ", ".join(r.manifest.rsplit("/", 1)[-1] for r in loads)
        )
    return "vkdoctor: FAIL: no Vulkan driver will load"
