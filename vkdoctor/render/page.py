"""The Markdown of the code pages (docs/codes) for a terminal: wrapped to a width, no markup left.

The subset the pages and the checks' docstrings use: `#` headings, paragraphs, `**bold**`,
`*emphasis*` (`\\*` for a star), code spans, `[text](url)` links, `-`/`*` and numbered lists
(nested by indenting), and code blocks (indented by four spaces, or fenced with three backticks),
which are kept verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from vkdoctor.model.record import record
from vkdoctor.render.wrap import KEEP as _KEEP
from vkdoctor.render.wrap import visible_len, wrap

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^( *)([-*+]|[0-9]{1,3}[.)])\s+(.*)$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.S)
# emphasis opens with a star before a word and after none, and closes after a word, so that
# globs in plain text (/opt/*/share, *.json, prefix*) stay as they are
_EM = re.compile(r"(?<![\w*])\*(?=[\w(])(.+?)(?<=[\w).])\*(?![\w*])", re.S)

_STYLE_CODE = "36"
_STYLE_BOLD = "1"

#: a private-use character that stands for an escaped star (\*) while emphasis is found
_STAR = "\ue001"


@record(frozen=True)
class Block:
    #: "heading", "paragraph", "item" or "code"
    kind: str
    text: str
    #: heading level, or an item's nesting depth (0: top level)
    level: int = 0
    #: an item's marker ("-", "1."), as written
    marker: str = ""


def blocks(markdown: str) -> list[Block]:
    """The page's blocks, in order."""
    return list(_blocks(markdown.expandtabs(4).splitlines()))


def _blocks(lines: list[str]) -> Iterator[Block]:
    i = 0
    #: the indentation of the open list items' text, innermost last
    item_indents: list[int] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            end = i + 1
            while end < len(lines) and not lines[end].lstrip().startswith(fence.group(1)):
                end += 1
            yield Block(kind="code", text="\n".join(lines[i + 1 : end]))
            i = end + 1
            item_indents = []
            continue
        heading = _HEADING.match(line)
        if heading:
            yield Block(kind="heading", text=heading.group(2), level=len(heading.group(1)))
            i += 1
            item_indents = []
            continue
        item = _ITEM.match(line)
        if item:
            indent = len(item.group(1))
            while item_indents and indent < item_indents[-1]:
                item_indents.pop()
            depth = len(item_indents)
            text_indent = indent + len(item.group(2)) + 1
            item_indents.append(text_indent)
            parts = [item.group(3)]
            i += 1
            while i < len(lines) and lines[i].strip() and not _starts_block(lines[i]):
                parts.append(lines[i].strip())
                i += 1
            yield Block(kind="item", text=" ".join(parts), level=depth, marker=item.group(2))
            continue
        if line.startswith("    ") and not item_indents:
            end = i
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            while not lines[end - 1].strip():
                end -= 1
            yield Block(kind="code", text="\n".join(x[4:] for x in lines[i:end]))
            i = end
            continue
        item_indents = []
        parts = [line.strip()]
        i += 1
        while i < len(lines) and lines[i].strip() and not _starts_block(lines[i]):
            parts.append(lines[i].strip())
            i += 1
        yield Block(kind="paragraph", text=" ".join(parts))


def _starts_block(line: str) -> bool:
    return bool(_ITEM.match(line) or _HEADING.match(line) or _FENCE.match(line))


def inline(text: str, *, colour: bool, keep: int = 40) -> str:
    """One block's text without its markup: code spans, links, bold and emphasis.

    The spaces inside a code span of at most `keep` characters come back as _KEEP: a short
    command is not split across lines.
    """
    pieces: list[str] = []
    last = 0
    for m in _CODE_SPAN.finditer(text):
        pieces.append(_prose(text[last : m.start()], colour=colour))
        code = m.group(2).strip() if m.group(2).strip() else m.group(2)
        code = code.replace(" ", _KEEP) if len(code) <= keep else code
        pieces.append(_paint(code, _STYLE_CODE, colour))
        last = m.end()
    pieces.append(_prose(text[last:], colour=colour))
    return "".join(pieces)


def _prose(text: str, *, colour: bool) -> str:
    text = text.replace("\\*", _STAR)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
    text = _BOLD.sub(lambda m: _paint(m.group(1), _STYLE_BOLD, colour), text)
    return _EM.sub(lambda m: m.group(1), text).replace(_STAR, "*")


def _paint(text: str, style: str, colour: bool) -> str:
    return f"\x1b[{style}m{text}\x1b[0m" if colour else text


def render(markdown: str, *, width: int = 80, colour: bool = False) -> str:
    """The page as text for a terminal `width` columns wide."""
    width = max(width, 20)
    keep = min(40, width // 2)
    out: list[str] = []
    previous = ""
    for block in blocks(markdown):
        if out and not (block.kind == "item" and previous == "item"):
            out.append("")
        previous = block.kind
        if block.kind == "code":
            out.extend("    " + x if x else x for x in block.text.splitlines())
        elif block.kind == "heading":
            title = inline(block.text, colour=False).replace(_KEEP, " ")
            out.extend(_paint(x, _STYLE_BOLD, colour) for x in wrap(title, width))
            if block.level <= 2 and not colour:
                rule = "=" if block.level == 1 else "-"
                out.append(rule * min(width, max(visible_len(x) for x in wrap(title, width))))
        elif block.kind == "item":
            pad = "  " * (block.level + 1)
            bullet = "-" if block.marker in "-*+" else block.marker
            first = f"{pad}{bullet} "
            out.extend(
                wrap(inline(block.text, colour=colour, keep=keep), width, first, " " * len(first))
            )
        else:
            out.extend(wrap(inline(block.text, colour=colour, keep=keep), width))
    return "\n".join(out) + "\n"
