"""vkdoctor drivers: the drivers the Vulkan loader will try, in its order, each with its verdict."""

from __future__ import annotations

import sys

import click

from vkdoctor.commands import common

#: the library checks of every load target: the file, its DT_NEEDED closure, symbol versions,
#: the symbols BIND_NOW objects need; and the package skews behind a missing library or
#: version, so that `drivers` gives the same cause and fix as `check` (they read the package
#: database only when something is missing)
# (and the loader itself, without which no driver is ever tried)
_LIBRARY_CHECKS = ("VKH002", "VKL001", "VKL002", "VKL003", "VKL006", "VKP002", "VKP005")


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
    from vkdoctor.model import exit_code
    from vkdoctor.render import json as json_render
    from vkdoctor.runner import run_checks
    from vkdoctor.speed.schedule import SCHEDULE

    ctx = common.host_context(root=root, probe=False)
    # the manifests, and whether the libraries they name can load (ld.so's view, no load test)
    checks = [c for c in REGISTRY if c.family in ("drivers", "layers") or c.code in _LIBRARY_CHECKS]
    results = run_checks(ctx, checks, debug=debug, schedule=SCHEDULE)
    from vkdoctor.facts.report import build_report

    report = build_report(ctx, results, command="drivers")
    if fmt == "github":
        sys.exit(common.emit(report, fmt=fmt, json_file=json_file, strict=strict, verbose=False))
    if json_file != "-":
        if fmt == "json":
            common.out(json_render.render(report, strict=strict), nl=False)
        else:
            from vkdoctor.render import drivers as drivers_render
            from vkdoctor.render.wrap import fit

            unicode = "utf" in (getattr(sys.stdout, "encoding", None) or "").lower()
            text = drivers_render.render(report, unicode=unicode)
            common.out(fit(text, common.terminal_width(), unicode=unicode), nl=False)
    code = exit_code(report.status(strict=strict))
    files = [(json_file, lambda: json_render.render(report, strict=strict))] if json_file else []
    sys.exit(code if common.write_outputs(files) else code or common.EXIT_OUTPUT)
