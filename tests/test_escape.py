"""The one escaping of every renderer (vkdoctor.render.escape), held to its promise over every
character a terminal or a log acts on and every form of a CI runner's command, and through the
real renderers with a report whose every string is hostile."""

from __future__ import annotations

import json
import re
import unicodedata

from conftest import HOST
from hypothesis import given, settings
from hypothesis import strategies as st

from vkdoctor.model import CheckResult, CheckStatus, Finding, Remedy, Report, Severity
from vkdoctor.render.escape import (
    json_text,
    markdown_code,
    markdown_text,
    no_commands,
    visible,
    visible_report,
)

#: every character a terminal or log could act on, or that makes text read otherwise
ACTING = [chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if chr(c) not in "\t\n"] + [
    "\u061c",
    "\u200b",
    "\u200e",
    "\u200f",
    "\u2028",
    "\u2029",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\ufeff",
    "\udc9b",  # the byte 0x9b (CSI in 8-bit terminals) of a name that is not UTF-8
]
#: GitHub's workflow commands in every form a line of a log can carry them
COMMANDS = [
    "::error::x",
    "::warning file=a,line=1::x",
    "::add-mask::secret",
    "::stop-commands::tok",
    "::set-output name=a::b",
    "::set-env name=LD_PRELOAD::/tmp/x.so",
    "::add-path::/tmp",
    "::group::g",
    "::echo::on",
    "  ::error::indented",
    "\t::debug::tab",
    "##[error]legacy",
    "text ##[set-env name=A;]b",
    "##[add-path]/tmp",
]

text = st.text(
    alphabet=st.sampled_from([*ACTING, *"ab:#[]\n\r\t `|<>*_!-1.é✓⚠️"]) | st.characters(),
    max_size=60,
)


def _commands_in(log: str) -> list[str]:
    """What GitHub's runner would read as a command: a line whose text starts with ::, or ##[
    anywhere in a line (its older parser)."""
    return [ln for ln in log.split("\n") if ln.lstrip(" \t").startswith("::") or "##[" in ln]


@settings(max_examples=400, deadline=None)
@given(text)
def test_nothing_a_terminal_acts_on_passes(value: str) -> None:
    for prose in (False, True):
        shown = visible(value, prose=prose)
        assert not set(shown) & set(ACTING), repr(shown)
        assert ("\n" in shown) == (prose and "\n" in value)
        assert visible(shown, prose=prose) == shown  # idempotent: safe to apply twice
    unseen = ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")
    assert all(unicodedata.category(c) not in unseen for c in visible(value) if c != "\t")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(COMMANDS) | text, max_size=6))
def test_no_line_is_a_runner_command(parts: list[str]) -> None:
    log = no_commands(visible("\n".join(parts), prose=True))
    assert _commands_in(log) == [], log


@given(st.sampled_from(COMMANDS))
def test_each_command_form_is_shown_not_run(command: str) -> None:
    shown = no_commands(command)
    assert _commands_in(shown) == []
    assert "\\x3a:" in shown or "##\\x5b" in shown


@settings(max_examples=300, deadline=None)
@given(text)
def test_markdown_carries_no_markup(value: str) -> None:
    md = markdown_text(value)
    assert not re.search(r"<(?!br>|/?code>)", md), md  # no HTML but the line breaks
    assert not re.search(r"(?<!\\)[`*_\[\]#|~!]", md), md
    assert "\n" not in md and "\r" not in md
    code = markdown_code(value)
    assert code.startswith("<code>") and code.endswith("</code>")
    inner = code[len("<code>") : -len("</code>")]
    assert "<" not in inner and "|" not in inner and "\n" not in inner


def test_json_carries_the_strings_but_no_command() -> None:
    doc = {"title": "a ##[set-env name=X]y", "n": 1}
    out = json_text(doc)
    assert "##[" not in out and json.loads(out) == doc


def _hostile_report(s: str) -> Report:
    finding = Finding(
        code="VKL002",
        severity=Severity.FAIL,
        title=f"{s} missing",
        message=f"the driver {s} needs it",
        remedy=Remedy(commands=(f"apt install {s}",), needs_root=True),
        evidence={"path": s, s: [s]},
    )
    check = CheckResult(
        code="VKL002", family="libraries", title="t", status=CheckStatus.RAN, findings=(finding,)
    )
    return Report(vkdoctor_version="0", host=HOST, checks=(check,))


NASTY = "x\x1b]52;c;cGF5bG9hZA==\x07\u202e\n::error::pwned ##[add-path]/tmp \udc9b\r"


def test_every_renderer_shows_a_hostile_report_as_data() -> None:
    from vkdoctor.render import github, junit
    from vkdoctor.render import text as text_render
    from vkdoctor.render.style import Style

    report = _hostile_report(NASTY)
    escaped = visible_report(report)
    assert escaped.checks[0].findings[0].severity is Severity.FAIL  # enums kept
    outputs = {
        "text": no_commands(text_render.render(report, style=Style(verbose=True))),
        "github summary": github.summary(report),
        "junit": junit.render(report),
    }
    for name, out in outputs.items():
        assert not set(out) & set(ACTING), (name, out)
        assert _commands_in(out) == [], (name, out)
    log = github.render(report)
    token = re.search(r"^::stop-commands::(\S+)$", log, re.M)
    assert token and len(token.group(1)) >= 32
    assert token.group(1) != re.search(  # random: not the same twice
        r"^::stop-commands::(\S+)$", github.render(report), re.M
    ).group(1)  # type: ignore[union-attr]
    # what is a command: only vkdoctor's own annotations and the fold around the report
    for line in _commands_in(log):
        assert re.match(
            r"::(error|warning|notice|group|endgroup|stop-commands)\b|::vkdoctor-", line
        )
        assert "\n" not in line and "##[" not in line
    assert not set(log) & set(ACTING)


def test_unicode_spaces_before_a_command_do_not_hide_it() -> None:
    """GitHub's runner trims every Unicode space (.NET TrimStart) before it looks for `::`."""
    for space in ("\u00a0", "\u1680", "\u2000", "\u2007", "\u200a", "\u202f", "\u205f", "\u3000"):
        log = no_commands(visible(f"x\n{space}::error::pwned\n{space} \t::add-mask::s", prose=True))
        assert [ln for ln in log.split("\n") if ln.strip().startswith("::")] == [], repr(log)


def test_no_link_is_made_of_a_url_in_the_data() -> None:
    for value in ("see https://evil.example/x", "www.evil.example", "ftp://a/b"):
        for md in (markdown_text(value), markdown_code(value)):
            assert "://" not in md and "www." not in md, md
