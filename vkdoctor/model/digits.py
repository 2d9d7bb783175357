"""Numbers in untrusted text (version strings, manifest fields, options) without `int()`:
Python refuses to convert more than 4,300 digits, and `str.isdigit` accepts digits `int` rejects
(superscripts). Every function here takes any string and raises nothing.
"""

from __future__ import annotations

import re

_ASCII_DIGITS = re.compile(r"[0-9]+")


def is_digits(text: str) -> bool:
    """One or more ASCII digits and nothing else (what C's isdigit accepts)."""
    return text.isascii() and text.isdigit()


def digits_key(text: str) -> tuple[int, str]:
    """A sort key for a run of ASCII digits that orders like its value, however long: fewer
    significant digits first, then the digits (how dpkg and rpm compare number segments)."""
    significant = text.lstrip("0")
    return len(significant), significant


def numbers_key(text: str) -> tuple[tuple[int, str], ...]:
    """The digit runs of `text` as `digits_key`s: GLIBCXX_3.4.30 > GLIBCXX_3.4.9."""
    return tuple(digits_key(n) for n in _ASCII_DIGITS.findall(text))


def saturated(text: str, limit: int) -> int:
    """The value of a run of ASCII digits, or `limit` when it is larger (as strtol clamps)."""
    significant = text.lstrip("0")
    if len(significant) > len(str(limit)):
        return limit
    return min(int(significant or "0"), limit)
