"""vkdoctor explain [CODE]: the page of one finding code, or the list of all codes."""

from __future__ import annotations

import inspect
import re
import sys

import click

from vkdoctor.checks import REGISTRY
from vkdoctor.commands import common
from vkdoctor.commands.completion import finding_codes, known_codes
from vkdoctor.resources import codes_dir

_CODE = re.compile(r"^VK[A-Z][0-9]{3}$")


def page(code: str) -> str | None:
    path = codes_dir() / f"{code}.md"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


@click.command()
@click.argument("code", required=False, shell_complete=finding_codes)
def explain(code: str | None) -> None:
    """Show what a finding CODE means, why it matters, and how to fix it.

    Without CODE, list every code with its title.
    """
    codes = known_codes()
    if code is None:
        width = max(len(c) for c in codes)
        for c, title in codes.items():
            common.out(f"{c:<{width}}  {title}")
        return
    code = code.strip().upper()
    if not _CODE.match(code) or code not in codes:
        hint = "" if _CODE.match(code) else " (codes look like VKD001)"
        raise click.UsageError(
            f"unknown finding code {code!r}{hint}; `vkdoctor explain` lists them all"
        )
    text = page(code)
    if text is None:
        raise click.ClickException(
            f"the page for {code} is missing from this installation ({codes_dir()})"
        )
    text = with_check_doc(code, text.rstrip("\n"))
    colour = common.want_colour(sys.stdout)
    common.out(for_terminal(text, colour=colour), nl=False, color=colour)


def for_terminal(markdown: str, *, colour: bool = False) -> str:
    """The page for a terminal as wide as COLUMNS says or the terminal is (80 when neither
    says: a pipe, a file)."""
    import shutil

    from vkdoctor.render.page import render

    return render(markdown, width=shutil.get_terminal_size().columns, colour=colour)


def with_check_doc(code: str, text: str) -> str:
    """The page, with what the check itself looks at (its docstring) after the page's own text:
    the page opens with the answer, the check's docstring is a detail."""
    check = next((c for c in REGISTRY if c.code == code), None)
    doc = inspect.cleandoc(check.__doc__ or "") if check is not None else ""
    if not doc:
        return text
    # a docstring is plain text: its stars are globs (*.json, prefix*), not emphasis
    doc = doc.replace("*", "\\*")
    return f"{text}\n\n**What vkdoctor checks.** {doc}"
