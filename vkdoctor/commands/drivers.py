"""vkdoctor drivers: the drivers the Vulkan loader will try, in its order, each with its verdict."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import click

from vkdoctor.commands import common
from vkdoctor.context import Context

#: the library checks of every load target: the file, its DT_NEEDED closure, symbol versions,
#: the symbols BIND_NOW objects need; and the package skews behind a missing library or
#: version, so that `drivers` gives the same cause and fix as `check` (they read the package
#: database only when something is missing)
# (and the loader itself, without which no driver is ever tried)
_LIBRARY_CHECKS = ("VKH002", "VKL001", "VKL002", "VKL003", "VKL006", "VKP002", "VKP005")

_MARK = {"ok": "✓", "info": "·", "warn": "!", "fail": "✗", "error": "✗"}
_ASCII = {"ok": "ok", "info": "ii", "warn": "!!", "fail": "XX", "error": "EE"}


def render_text(
    ctx: Context,
    rows: tuple[Mapping[str, Any], ...],
    *,
    unicode: bool,
    problems: tuple[tuple[str, str, str | None], ...] = (),
) -> str:
    """The listing; `problems` are (code, title, remedy) of the fail/error findings, shown last."""
    from vkdoctor.loader import driver_scan, layer_scan

    scan = driver_scan(ctx)
    marks = _MARK if unicode else _ASCII
    arrow = "→" if unicode else "->"
    out = [
        f"Vulkan loader {scan.loader.text} ({scan.loader.path or 'libvulkan.so.1 not found'})"
        + (f"; root {ctx.root}" if not ctx.live else ""),
        "Driver search path, in order"
        + (f" (replaced by {scan.plan.override})" if scan.plan.override else "")
        + ":",
    ]
    # the column is as wide as the paths whose rows fit 80 columns; the others get their origin
    # on a line of its own
    width = max(
        (len(e.path) for e in scan.plan.entries if len(e.path) + len(e.origin) + 6 <= 80),
        default=0,
    )
    for e in scan.plan.entries:
        entry = f"  {e.path:<{width}}  [{e.origin}]"
        # the table fits 80 columns: an origin that would not goes under its path
        out += [entry] if len(entry) <= 80 else [f"  {e.path}", f"      [{e.origin}]"]
    if not scan.plan.entries:
        out.append("  (none)")
    out.append("")
    out.append("Drivers, in the loader's order:" if rows else "Drivers: none found.")
    for row in rows:
        v = str(row["verdict"])
        out.append(f"  {row['index'] + 1:>2} {marks.get(v, '?')} {v:<4} {row['manifest']}")
        out.append(f"          from {row['origin']}")
        if row.get("library"):
            what = f"  ({row['driver']})" if row.get("driver") else ""
            out.append(f"          {arrow} {row['library']}{what}")
        reason = str(row["reason"])
        prefix = f"{row['manifest']}: "
        out.append(f"          {reason.removeprefix(prefix)}")
    layers = layer_scan(ctx).active
    if layers:
        out.append("")
        out.append("Implicit layers the loader adds to every application:")
        for layer in layers:
            lib = layer.library_found or layer.library
            off = f" (off with {layer.disable_env}=1)" if layer.disable_env else ""
            out.append(f"  {layer.name} {arrow} {lib}{off}")
    loads = [r for r in rows if r["outcome"] == "loads" and r["verdict"] != "fail"]
    failing = [r for r in rows if r["verdict"] == "fail"]
    out.append("")
    for code, title, remedy in problems:
        out.append(f"{marks['fail']} {code} {title}")
        if remedy:
            out.append(f"    fix: {remedy}")
    if problems:
        out.append("")
    if len(failing) == 1 and len(rows) == 1:
        out.append(f"vkdoctor: FAIL: {failing[0]['reason']}")
    elif failing:
        # every driver that will not load, the ones the loader skips (warn) included
        names = ", ".join(str(r["manifest"]).rsplit("/", 1)[-1] for r in rows if r not in loads)
        out.append(
            f"vkdoctor: FAIL: {len(loads)} of {len(rows)} drivers can load; {names} cannot "
            "(the findings above say why)"
        )
    elif problems:
        out.append(f"vkdoctor: FAIL: {problems[0][1]}")
    elif loads:
        out.append(
            f"vkdoctor: {len(loads)} of {len(rows)} drivers can load (manifest and libraries): "
            + ", ".join(str(r["manifest"]).rsplit("/", 1)[-1] for r in loads)
        )
    else:
        out.append("vkdoctor: FAIL: no Vulkan driver will load")
    return "\n".join(out) + "\n"


@click.command()
@common.root_option
@click.option(
    "--json",
    "json_file",
    metavar="FILE",
    callback=common.output_path,
    help="Write the JSON report to FILE ('-' for stdout).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(common.FORMATS),
    default="text",
    show_default=True,
    help="How to print on stdout.",
)
@click.option("--strict", is_flag=True, help="Treat warnings as failures (exit 1).")
@click.option(
    "--debug", is_flag=True, help="Keep tracebacks of vkdoctor's own errors in the report."
)
def drivers(root: str | None, json_file: str | None, fmt: str, strict: bool, debug: bool) -> None:
    """List the drivers the Vulkan loader will try, in its order, each with its verdict and origin."""
    from vkdoctor.checks import REGISTRY
    from vkdoctor.model import Severity, exit_code
    from vkdoctor.render import json as json_render
    from vkdoctor.runner import run_checks

    ctx = common.host_context(root=root, probe=False)
    # the manifests, and whether the libraries they name can load (ld.so's view, no load test)
    checks = [c for c in REGISTRY if c.family in ("drivers", "layers") or c.code in _LIBRARY_CHECKS]
    results = run_checks(ctx, checks, debug=debug)
    from vkdoctor.facts.report import build_report

    report = build_report(ctx, results, command="drivers")
    rows = report.drivers
    if fmt == "github":
        sys.exit(common.emit(report, fmt=fmt, json_file=json_file, strict=strict, verbose=False))
    if json_file != "-":
        if fmt == "json":
            common.out(json_render.render(report, strict=strict), nl=False)
        else:
            encoding = (getattr(sys.stdout, "encoding", None) or "").lower()
            problems = tuple(
                (f.code, f.title, f.fix(sudo=report.sudo))
                for f in report.findings
                if f.severity.rank >= Severity.FAIL.rank
            )
            from vkdoctor.render.wrap import fit

            text = render_text(ctx, rows, unicode="utf" in encoding, problems=problems)
            common.out(fit(text, common.terminal_width(), unicode="utf" in encoding), nl=False)
    code = exit_code(report.status(strict=strict))
    files = [(json_file, lambda: json_render.render(report, strict=strict))] if json_file else []
    sys.exit(code if common.write_outputs(files) else code or common.EXIT_OUTPUT)
