"""vkdoctor explain [CODE]: the page of one finding code, or the list of all codes."""

from __future__ import annotations

import inspect
import re
import sys

import click

from vkdoctor.checks import REGISTRY
from vkdoctor.commands import common
from vkdoctor.resources import codes_dir
from vkdoctor.runner import INTERNAL_ERROR_CODE

_CODE = re.compile(r"^VK[A-Z][0-9]{3}$")


def known_codes() -> dict[str, str]:
    """code -> title for every code vkdoctor can emit."""
    codes = {c.code: c.title for c in REGISTRY}
    codes[INTERNAL_ERROR_CODE] = "vkdoctor's own check broke"
    return dict(sorted(codes.items()))


def page(code: str) -> str | None:
    path = codes_dir() / f"{code}.md"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


@click.command()
@click.argument("code", required=False)
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
    if common.want_colour(sys.stdout):
        text = styled(text)
    common.out(text, color=True)


def with_check_doc(code: str, text: str) -> str:
    """The page, with what the check itself does (its docstring) after the heading."""
    check = next((c for c in REGISTRY if c.code == code), None)
    doc = inspect.cleandoc(check.__doc__ or "") if check is not None else ""
    if not doc:
        return text
    head, _, rest = text.partition("\n")
    return f"{head}\n\n**The check.** {doc}\n{rest}"


_BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def styled(markdown: str) -> str:
    """Markdown emphasis as terminal styles: headings and **bold** in bold, `code` in cyan."""
    lines = []
    for line in markdown.splitlines():
        if line.startswith("#"):
            lines.append(f"\x1b[1m{line.lstrip('#').strip()}\x1b[0m")
            continue
        coded = _CODE_SPAN.sub(lambda m: f"\x1b[36m{m.group(1)}\x1b[0m", line)
        lines.append(_BOLD.sub(lambda m: f"\x1b[1m{m.group(1)}\x1b[0m", coded))
    return "\n".join(lines)
