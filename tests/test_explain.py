"""`vkdoctor explain CODE` for a terminal: the page without Markdown, wrapped to the width."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, clean_env, read_pty

from vkdoctor.cli import cli
from vkdoctor.commands.explain import known_codes
from vkdoctor.render.page import render

CODES = sorted(known_codes())
PAGES = REPO / "docs" / "codes"
# ld.so's own messages quote `like this': that backtick is the message's, not Markdown
RAW_MARKDOWN = re.compile(r"\*\*|`(?![\w.]+')|\[[^\]]*\]\([^)]*\)|^#", re.M)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _explain(code: str, columns: int) -> str:
    result = CliRunner().invoke(cli, ["explain", code], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


def _code_lines(code: str) -> set[str]:
    """The lines of the page's indented code blocks, as the page has them."""
    text = (PAGES / f"{code}.md").read_text()
    return {line[4:] for line in text.splitlines() if line.startswith("    ") and line.strip()}


@pytest.mark.parametrize("columns", [80, 60])
def test_every_page_has_no_markdown_and_fits_the_width(columns: int) -> None:
    longest = 0
    for code in CODES:
        shown = _explain(code, columns)
        assert not RAW_MARKDOWN.search(shown), f"{code}: {RAW_MARKDOWN.search(shown)}"
        verbatim = _code_lines(code)
        for line in shown.splitlines():
            if line.strip() in verbatim:
                continue
            # a path or command longer than the line is not split: it sticks out on its own
            one_word = len(line.split()) == 1 and columns < 80
            assert len(line) <= columns or one_word, f"{code} at {columns}: {line!r}"
            longest = max(longest, len(line))
    # wrapped to the width, not narrower
    assert longest >= columns - 3


def test_no_page_has_a_code_line_wider_than_80() -> None:
    for code in CODES:
        assert all(len(line) <= 80 - 4 for line in _code_lines(code)), code


def test_the_page_opens_with_its_one_paragraph_answer_then_the_details() -> None:
    for code in CODES:
        md = (PAGES / f"{code}.md").read_text()
        title, first_block = md.split("\n\n")[:2]
        assert not first_block.startswith(("**", "-", "#", " ")), f"{code}: no answer first"
        shown = _explain(code, 80).split("\n\n")
        assert shown[0].splitlines()[0] == title.lstrip("# ")
        assert " ".join(shown[1].split()) == render(first_block).strip().replace("\n", " ")
        # what to do next, then the details
        has_fix = "\n**How to fix.**" in md
        assert shown[2].startswith("How to fix." if has_fix else "Severity:"), code
        assert has_fix or code == "VKX000", code
    # a docstring is plain text: its globs keep their stars
    assert "VK_LOADER_DRIVERS_SELECT / VK_LOADER_DRIVERS_DISABLE" in _explain("VKD006", 100)
    # the check's own docstring comes with the details, at the end
    vkl002 = _explain("VKL002", 80)
    assert vkl002.index("What vkdoctor checks.") > vkl002.index("Severity:")


def _paragraph_words(paragraph: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_.+-]+", paragraph.lower()) if len(w) > 3}


def test_no_page_says_a_paragraph_twice() -> None:
    """The check's docstring adds only what the page does not say: no shown paragraph has
    most of its longer words in an earlier one (VKP002's docstring repeated What it means)."""
    for code in CODES:
        paragraphs = [p for p in _explain(code, 80).split("\n\n") if len(p.split()) > 25]
        for i, p in enumerate(paragraphs):
            words = _paragraph_words(p)
            for earlier in paragraphs[:i]:
                assert len(words & _paragraph_words(earlier)) < 0.6 * len(words), (code, p)
    assert "What vkdoctor checks." not in _explain("VKP002", 80)


def test_the_linker_words_a_page_uses_are_explained_once_at_its_end() -> None:
    vkp002 = _explain("VKP002", 80)
    words = vkp002[vkp002.index("Words used here.") :]
    assert "  - soname: the name a library is asked for by" in words
    assert "  - DT_NEEDED: the list of sonames" in words
    assert vkp002.count("Words used here.") == 1
    # a word the page does not use is not explained
    assert "ELFCLASS" not in vkp002 and "ELFCLASS" not in words
    assert (
        "  - ELFCLASS: 32-bit" in _explain("VKD007", 80)
        or "ELFCLASS" not in (PAGES / "VKD007.md").read_text()
    )


def test_narrow_widths_wrap_and_lists_hang() -> None:
    shown = _explain("VKL002", 40)
    assert max(len(line) for line in shown.splitlines()) <= 40
    items = [line for line in shown.splitlines() if line.startswith("  - ")]
    items = items[: next(i for i, x in enumerate(items) if x.startswith("  - soname:"))]
    assert [i.split(":")[0] for i in items] == ["  - Arch", "  - Debian/Ubuntu", "  - Fedora/RHEL"]
    # a list item's second line hangs under its text
    debian = shown.splitlines().index(next(i for i in items if "Debian" in i))
    assert (
        shown.splitlines()[debian + 1].startswith("    ")
        and shown.splitlines()[debian + 1][4] != " "
    )


def test_the_renderer_keeps_code_blocks_and_renders_the_subset() -> None:
    md = (
        "# T: a *title*\n\n"
        "Some **bold** and `code span` and a [link](https://example.org/x) and *emphasis*, "
        "while /opt/*/share and *.json and prefix* stay.\n\n"
        "    a code line that is much longer than the width and must not be wrapped at all, ever\n"
        "      indented inside\n\n"
        "```\nfenced **kept** `as is`\n```\n\n"
        "1. first\n2. second item that is long enough to wrap somewhere around here\n"
        "   - nested\n"
    )
    out = render(md, width=40)
    lines = out.splitlines()
    assert lines[:2] == ["T: a title", "=" * len("T: a title")]
    prose = " ".join(lines[3:8])
    assert "Some bold and code span and a link (https://example.org/x) and emphasis," in prose
    assert "/opt/*/share and *.json and prefix* stay." in prose
    assert (
        "    a code line that is much longer than the width and must not be wrapped at all, ever"
        in lines
    )
    assert "      indented inside" in lines
    assert "    fenced **kept** `as is`" in lines
    assert "  1. first" in lines
    assert "  2. second item that is long enough to" in lines
    assert "     wrap somewhere around here" in lines
    assert "    - nested" in lines
    assert render(r"a \*.json and \*b\* stay", width=40) == "a *.json and *b* stay\n"
    coloured = render("Some **bold** and `x`.", width=40, colour=True)
    assert coloured == "Some \x1b[1mbold\x1b[0m and \x1b[36mx\x1b[0m.\n"


def test_through_a_real_terminal_it_uses_the_terminals_width() -> None:
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 52, 0, 0))
    env = clean_env({"PYTHONPATH": str(REPO), "TERM": "xterm", "PAGER": "cat"})
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "vkdoctor", "explain", "VKP002"],
        stdin=child,
        stdout=child,
        stderr=child,
        env=env,
        cwd=REPO,
    )
    os.close(child)
    try:
        raw = read_pty(main, proc).decode()
    finally:
        os.close(main)
    assert proc.returncode == 0, raw
    text = ANSI.sub("", raw.replace("\r\n", "\n"))
    assert "\x1b[1m" in raw  # a terminal gets the styles
    assert not RAW_MARKDOWN.search(text)
    lines = text.splitlines()
    assert lines[0].startswith("VKP002: ")
    assert max(len(line) for line in lines) <= 52
    assert max(len(line) for line in lines) >= 48


def test_piped_output_is_80_wide_without_columns() -> None:
    env = clean_env({"PYTHONPATH": str(REPO)})
    env.pop("COLUMNS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "vkdoctor", "explain", "VKP002"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    widths = [len(line) for line in proc.stdout.splitlines()]
    assert 76 <= max(widths) <= 80
    assert "\x1b[" not in proc.stdout


def test_check_does_not_import_the_page_renderer(tmp_path: Path) -> None:
    env = clean_env({"PYTHONPATH": str(REPO)})
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "vkdoctor", "check", "--no-probe"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    imported = re.findall(r"\|\s+([\w.]+)$", proc.stderr, re.M)
    assert "vkdoctor.render.text" in imported  # the measurement saw vkdoctor's imports
    assert "vkdoctor.render.page" not in imported
    assert "vkdoctor.commands.explain" not in imported


def test_on_a_terminal_the_page_goes_through_the_pager(tmp_path: Path) -> None:
    """click's pager on a terminal ($PAGER, here one that keeps what it is given); a pipe gets
    the page straight (test_piped_output_is_80_wide_without_columns)."""
    kept = tmp_path / "paged.txt"
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 80, 0, 0))
    env = clean_env({"PYTHONPATH": str(REPO), "TERM": "xterm", "PAGER": f"tee {kept}"})
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "vkdoctor", "explain", "VKS001"],
        stdin=child,
        stdout=child,
        stderr=child,
        env=env,
        cwd=REPO,
    )
    os.close(child)
    try:
        raw = read_pty(main, proc).decode()
    finally:
        os.close(main)
    assert proc.returncode == 0, raw
    paged = ANSI.sub("", kept.read_text())
    assert paged.startswith("VKS001: Free disk space\n")
    assert "How to fix." in paged
