"""vkdoctor diff A.json B.json: why it works there and not here."""

from __future__ import annotations

import shutil
import sys

import click

from vkdoctor.commands import common


def read_reports(paths: tuple[str, ...]) -> list[tuple[str, dict[str, object]]]:
    """(path, report) for each file; an unreadable one ends the command with exit 2."""
    from vkdoctor.model.reportfile import ReportError, load

    out = []
    for path in paths:
        try:
            out.append((path, load(path)))
        except ReportError as exc:
            common.err(f"vkdoctor: {exc}")
            sys.exit(common.EXIT_OUTPUT)
    return out


@click.command("diff")
@click.argument("report_a", metavar="A.json", type=click.Path(dir_okay=False))
@click.argument("report_b", metavar="B.json", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "json")),
    default="text",
    show_default=True,
    help="How to print on stdout.",
)
def diff(report_a: str, report_b: str, fmt: str) -> None:
    """Compare two JSON reports (`vkdoctor check --json FILE` on two machines): what explains a
    different verdict first (a driver that loads on one and not the other, and why), then the
    rest of what differs.

    Exit 0 when the verdicts are the same, 1 when they differ, 2 when a file is not a report.
    """
    from vkdoctor.model.compare import compare
    from vkdoctor.render import compare as render

    (_, a), (_, b) = read_reports((report_a, report_b))
    result = compare(a, b)
    if fmt == "json":
        common.out(render.diff_json(result, report_a, report_b), nl=False)
    else:
        width = shutil.get_terminal_size().columns
        common.out(render.diff_text(result, report_a, report_b, width=width), nl=False)
    sys.exit(0 if result.same_verdict else 1)
