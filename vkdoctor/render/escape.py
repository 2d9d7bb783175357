"""Every string from outside is data: the one escaping of every renderer.

What vkdoctor reports comes from files and programs anyone may have written (manifest names,
paths, package fields, a driver's output, a report from another machine). Before any of it
reaches a terminal, a CI log, a job summary or a JUnit file:

- `visible`: characters a terminal or a log would act on are shown as escapes (\\xNN, \\uNNNN):
  C0 and C1 controls (ESC, so no colour, cursor, erase or OSC 52 clipboard sequence), DEL,
  carriage return, every format character (the bidirectional overrides and isolates, the
  zero-width ones) that makes text read otherwise than it is, line and paragraph separators,
  private-use and unassigned code points, and the bytes that were not UTF-8 (kept by Python as
  lone surrogates). A newline is kept only where the text is
  vkdoctor's own prose (a finding's message); in a name it is shown as \\x0a.
- `no_commands`: what a CI runner would take for a command never starts a line or stands in it:
  a line whose text begins with `::` (GitHub's workflow commands) has its first `:` shown as
  \\x3a, and `##[` (the runner's older form, read anywhere in a line) becomes `##\\x5b`.
- `visible_report`: a report with every string in it made `visible`, which every renderer of
  text (check, drivers, diff, summary, GitHub, JUnit) starts from.
- `markdown_text` and `markdown_code`: text for a Markdown job summary, where neither Markdown
  nor HTML from the data is read as markup.
"""

from __future__ import annotations

import enum
import html
import json
import os
import re
import unicodedata
from typing import Any, TypeVar

from vkdoctor.model.record import is_record, replace

T = TypeVar("T")

#: C0 (tab and newline apart), DEL and C1, and every character past ASCII (judged by its
#: Unicode category in `_shown`)
_IN_PROSE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]|[^\x00-\x7f]")
_IN_NAME = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]|[^\x00-\x7f]")
#: format characters (bidi overrides and isolates, zero-width), line and paragraph separators,
#: lone surrogates (bytes that were not UTF-8), private use and unassigned code points
_UNSEEN = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"))
#: what GitHub's runner trims before it looks for `::` (.NET's TrimStart: every Unicode space)
_COMMAND_LINE = re.compile(r"^([^\S\n]*):(?=:)", re.M)
_LEGACY_COMMAND = "##["


def _shown(m: re.Match[str]) -> str:
    c = m.group()
    code = ord(c)
    if code > 0x9F and unicodedata.category(c) not in _UNSEEN:
        return c
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte as it was
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str, *, prose: bool = False) -> str:
    """`text` with what a terminal or log would act on shown as escapes; with `prose`, a
    newline (and a CRLF, as one) is kept (vkdoctor's own multi-line text, a program's output),
    otherwise it is shown as \\x0a."""
    if prose:
        return _IN_PROSE.sub(_shown, text.replace("\r\n", "\n"))
    return _IN_NAME.sub(_shown, text)


def no_commands(text: str) -> str:
    """`text` (several lines) with nothing a CI runner reads as a command."""
    return _COMMAND_LINE.sub(r"\1\\x3a", text).replace(_LEGACY_COMMAND, "##\\x5b")


def xml_no_commands(xml: str) -> str:
    """An XML document with nothing a CI runner reads as a command, by character references
    (the same text to an XML reader)."""
    return _COMMAND_LINE.sub(r"\1&#58;", xml).replace(_LEGACY_COMMAND, "##&#91;")


def stop_token() -> str:
    """A token for `::stop-commands::TOKEN`, which nothing in the text can guess."""
    # secrets.token_hex's own source (os.urandom), without the hashlib and hmac it imports
    return "vkdoctor-" + os.urandom(16).hex()


def json_text(doc: object) -> str:
    """`doc` as indented JSON that a CI log cannot read a command in (`##[` written as
    `##\\u005b`, the same string to a JSON reader)."""
    text = json.dumps(doc, indent=2, sort_keys=False, default=str)
    return text.replace(_LEGACY_COMMAND, "##\\u005b")


#: the fields that hold vkdoctor's own prose, where a newline is a line break
_PROSE_FIELDS = {"message", "detail", "summary", "note"}


def visible_report(value: T) -> T:
    """A copy of a report (or any record, list or mapping of them) with every string made
    `visible`: enums, numbers and booleans as they are."""
    return _visible_value(value, prose=False)  # type: ignore[no-any-return]


def _visible_value(value: Any, *, prose: bool) -> Any:
    if isinstance(value, enum.Enum) or (
        not isinstance(value, str | tuple | list | dict) and not (is_record(value))
    ):
        return value
    if isinstance(value, str):
        return visible(value, prose=prose)
    if is_record(value):
        names = type(value).__record_spec__.names
        return replace(
            value,
            **{n: _visible_value(getattr(value, n), prose=n in _PROSE_FIELDS) for n in names},
        )
    if isinstance(value, dict):
        return {
            _visible_value(k, prose=False): _visible_value(v, prose=prose) for k, v in value.items()
        }
    return type(value)(_visible_value(v, prose=prose) for v in value)


#: what GitHub's Markdown reads as emphasis, code, links, images, headings, lists or a cell's end
_MARKDOWN = re.compile(r"([\\`*_\[\]#|~!])")
#: what starts a list or a numbered item when it opens a paragraph
_LIST_START = re.compile(r"^([-+]|\d+[.)])(?=\s|$)")


def _no_links(text: str) -> str:
    """GitHub's Markdown makes a link of a bare URL or www. name, in code too: not from data."""
    return text.replace("://", ":&#47;&#47;").replace("www.", "www&#46;")


def markdown_text(value: object) -> str:
    """Text from a report as literal Markdown on one line of a table or a paragraph."""
    text = html.escape(visible("" if value is None else str(value), prose=True), quote=False)
    text = _no_links(_LIST_START.sub(r"\\\1", _MARKDOWN.sub(r"\\\1", text)))
    return text.replace("\n", "<br>").replace("<br><br>", "<br>")


def markdown_code(value: object) -> str:
    """Text as inline code that no character in it (a backtick, a `|`, `<`) can break, and
    that a log it is printed to reads no command in."""
    text = _no_links(html.escape(visible("" if value is None else str(value))))
    return f"<code>{text.replace('|', '&#124;').replace('[', '&#91;')}</code>"
