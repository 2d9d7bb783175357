"""Wrapping text to a width: words, a hanging indent, paths shortened in the middle. Small on
purpose: `check` imports it for a terminal, and the Markdown renderer (page) builds on it."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

#: a private-use character that stands for a space inside a code span while words are split
KEEP = "\ue000"


def visible_len(text: str) -> int:
    return len(_ANSI.sub("", text))


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """Greedy word wrap of `text` (which may hold colour codes) with the prefixes `first` and
    `rest`. A word longer than the line is not split: it sticks out."""
    lines: list[str] = []
    line = first
    room = visible_len(first)
    empty = True
    for word in text.split():
        size = visible_len(word)
        if not empty and room + 1 + size > width:
            lines.append(line)
            line, room, empty = rest, visible_len(rest), True
        if not empty:
            line += " "
            room += 1
        line += word
        room += size
        empty = False
    lines.append(line)
    return [x.replace(KEEP, " ").rstrip() for x in lines]


def shorten_path(word: str, room: int, *, ellipsis: str = "…") -> str:
    """A path too long for `room` columns, shortened in the middle: its start and its whole
    file name stay, so it is never cut; anything else is returned as it is."""
    if len(word) <= room or "/" not in word.strip("/"):
        return word
    head, _, name = word.rpartition("/")
    keep = room - len(name) - len(ellipsis) - 1
    if keep < 4:
        return word
    return f"{head[:keep]}{ellipsis}/{name}"


_HANG = re.compile(r"^( *)((?:[-*|] )|(?:[\w.-]+: )|(?:fix: ))?")


def fit(text: str, width: int | None, *, unicode: bool = True) -> str:
    """Every line of `text` no wider than `width`: a longer line is wrapped under its own
    indentation (a list item's or a `key: value`'s text under itself), and a path longer than a
    whole line is shortened in the middle. Lines that fit are left as they are."""
    if width is None:
        return text
    ellipsis = "…" if unicode else "..."
    out: list[str] = []
    for line in text.split("\n"):
        if visible_len(line) <= width:
            out.append(line)
            continue
        m = _HANG.match(line)
        indent = m.group(1) if m else ""
        hang = len(m.group(2) or "") if m else 0
        rest = " " * (len(indent) + min(hang, 4) if hang else len(indent) + 2)
        if len(rest) > width // 2:
            rest = " " * (width // 2)
        words = [shorten_path(w, width - len(rest), ellipsis=ellipsis) for w in line.split()]
        out.extend(wrap(" ".join(words), width, indent, rest))
    return "\n".join(out)
