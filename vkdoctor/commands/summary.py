"""vkdoctor summary FILES...: the reports of many machines (a CI matrix), one row each, and the
failures grouped by code across them."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable

import click

from vkdoctor.commands import common


@click.command()
@click.argument("files", metavar="FILES...", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "github", "json")),
    default="text",
    show_default=True,
    help="How to print on stdout: github is a Markdown table for the job summary.",
)
@click.option(
    "--json",
    "json_file",
    metavar="FILE",
    callback=common.output_path,
    help="Also write the summary as JSON to FILE ('-' for stdout).",
)
def summary(files: tuple[str, ...], fmt: str, json_file: str | None) -> None:
    """Sum up the JSON reports of many machines (a CI matrix's artifacts; a directory stands
    for the *.json files below it): one row per machine, then the failures grouped by code.

    Every input that is not a readable report (truncated, not a report, another schema version,
    not a regular file, a folder that cannot be read) is named, and the rest summed up.
    Exit 0 when all machines pass, 1 when any failed or any input could not be read, 2 when
    no report at all could be read.
    """
    from vkdoctor.model.compare import fleet as fleet_of
    from vkdoctor.model.compare import machine
    from vkdoctor.model.reportfile import reports_in
    from vkdoctor.render import compare as render

    # each report becomes its row as it is read: thousands of reports take the memory of rows
    read, unreadable = reports_in(files, lambda path, doc: machine("", path, doc))
    for path, why in unreadable:
        common.say(f"vkdoctor summary: {path}: {why}")
    if not read:
        common.say("vkdoctor summary: no report could be read")
        sys.exit(common.EXIT_OUTPUT)
    fleet = fleet_of(read, unreadable)
    if json_file == "-" or fmt == "json":
        common.out(render.summary_json(fleet), nl=False)
    elif fmt == "github":
        common.out(render.summary_github(fleet), nl=False)
    else:
        width = shutil.get_terminal_size().columns
        common.out(render.summary_text(fleet, width=width), nl=False)
    code = 1 if fleet.failed or fleet.unreadable else 0
    outputs: list[tuple[str, Callable[[], str]]] = []
    if json_file is not None and json_file != "-":
        outputs.append((json_file, lambda: render.summary_json(fleet)))
    if outputs and not common.write_outputs(outputs):
        code = code or common.EXIT_OUTPUT
    sys.exit(code)
