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
    text = composed(code, text)
    colour = common.want_colour(sys.stdout)
    shown = for_terminal(text, colour=colour)
    if sys.stdout.isatty():
        click.echo_via_pager(shown, color=colour)
    else:
        common.out(shown, nl=False, color=colour)


def composed(code: str, page_text: str) -> str:
    """The page as shown: what to do first, what the check adds, the words it uses."""
    return with_words(with_check_doc(code, answer_first(page_text.rstrip("\n"))))


def for_terminal(markdown: str, *, colour: bool = False) -> str:
    """The page for a terminal as wide as COLUMNS says or the terminal is (80 when neither
    says: a pipe, a file)."""
    import shutil

    from vkdoctor.render.page import render

    return render(markdown, width=shutil.get_terminal_size().columns, colour=colour)


_SECTION = re.compile(r"^\*\*[A-Z][^*\n]*\.\*\*")


def answer_first(text: str) -> str:
    """The page with its "How to fix" section (up to the next bold heading) right after the
    opening answer, before the severity and what it means: what to do comes first."""
    paragraphs = text.split("\n\n")
    start = next((i for i, p in enumerate(paragraphs) if p.startswith("**How to fix.**")), None)
    if start is None or start < 2:
        return text
    end = next(
        (i for i in range(start + 1, len(paragraphs)) if _SECTION.match(paragraphs[i])),
        len(paragraphs),
    )
    moved = paragraphs[start:end]
    rest = paragraphs[:start] + paragraphs[end:]
    return "\n\n".join(rest[:2] + moved + rest[2:])


def _words(paragraph: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_.+-]+", paragraph.lower()) if len(w) > 3}


def with_check_doc(code: str, text: str) -> str:
    """The page, with what the check itself looks at (its docstring) after the page's own text:
    only its paragraphs that the page does not already say (most of whose longer words are not
    in one of the page's paragraphs), so that nothing is read twice."""
    check = next((c for c in REGISTRY if c.code == code), None)
    doc = inspect.cleandoc(check.__doc__ or "") if check is not None else ""
    said = [_words(p) for p in text.split("\n\n")]
    new = []
    for paragraph in doc.split("\n\n"):
        words = _words(paragraph)
        if words and not any(len(words & page) >= 0.6 * len(words) for page in said):
            new.append(paragraph)
    if not new:
        return text
    # a docstring is plain text: its stars are globs (*.json, prefix*), not emphasis
    new = [p.replace("*", "\\*") for p in new]
    return "\n\n".join([text, f"**What vkdoctor checks.** {new[0]}", *new[1:]])


#: the linker's words the pages use, each said once, at the end of a page that uses it
WORDS = {
    "soname": "the name a library is asked for by (DT_SONAME in its ELF header, such as "
    "libLLVM-15.so.1); ld.so looks for a file of that name",
    "DT_NEEDED": "the list of sonames a program or library needs, written into it when it was "
    "linked",
    "ld.so": "the dynamic loader, which finds and maps a program's libraries when it starts "
    "and when it calls dlopen",
    "dlopen": "loading a library while a program runs; the Vulkan loader opens each driver so",
    "ld.so.cache": "the index of library directories that ldconfig writes and ld.so reads "
    "(/etc/ld.so.cache)",
    "ldconfig": "the command that rebuilds ld.so.cache from the directories in /etc/ld.so.conf",
    "RUNPATH": "directories written into a library where ld.so looks for what it needs "
    "(DT_RUNPATH; RPATH is the older kind, searched before LD_LIBRARY_PATH)",
    "LD_LIBRARY_PATH": "directories ld.so searches before its cache and system directories",
    "symbol version": "a label such as LLVM_15 on a library's functions; a program built "
    "against a newer version label fails to load against a library without it",
    "ELFCLASS": "32-bit (ELFCLASS32) or 64-bit (ELFCLASS64): a process loads libraries of its "
    "own class only",
}


def with_words(text: str) -> str:
    """The page with the linker words it uses explained in one list at its end."""
    used = [
        f"  - {word}: {meaning}."
        for word, meaning in WORDS.items()
        if re.search(rf"(?<![\w.-]){re.escape(word)}s?(?![A-Za-z_-])", text)
    ]
    if not used:
        return text
    return f"{text}\n\n**Words used here.**\n\n" + "\n".join(used)
