"""vkdoctor summary FILES...: the reports of many machines (a CI matrix), one row each, and the
failures grouped by code across them."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import click

from vkdoctor.commands import common
from vkdoctor.commands.diff import read_reports


def _expand(paths: tuple[str, ...]) -> tuple[str, ...]:
    """A directory stands for every *.json below it (a downloaded artifacts folder)."""
    out: list[str] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*.json") if f.is_file())
            if not found:
                raise click.UsageError(f"{path}: a directory with no *.json report in it")
            out += found
        else:
            out.append(path)
    return tuple(out)


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

    Exit 1 when any machine failed, 0 when all pass, 2 when a file is not a report.
    """
    from vkdoctor.model.compare import summarize
    from vkdoctor.render import compare as render

    fleet = summarize(read_reports(_expand(files)))
    if json_file == "-" or fmt == "json":
        common.out(render.summary_json(fleet), nl=False)
    elif fmt == "github":
        common.out(render.summary_github(fleet), nl=False)
    else:
        width = shutil.get_terminal_size().columns
        common.out(render.summary_text(fleet, width=width), nl=False)
    code = 1 if fleet.failed else 0
    outputs: list[tuple[str, Callable[[], str]]] = []
    if json_file is not None and json_file != "-":
        outputs.append((json_file, lambda: render.summary_json(fleet)))
    if outputs and not common.write_outputs(outputs):
        code = code or common.EXIT_OUTPUT
    sys.exit(code)
