"""Numbers in untrusted text (version strings, manifest fields, options) without `int()`:
Python refuses to convert more than 4,300 digits, and `str.isdigit` accepts digits `int` rejects
(superscripts). Every function here takes any string and raises nothing.
"""

from __future__ import annotations

import re

_ASCII_DIGITS = re.compile(r"[0-9]+")
_DIGIT_RUNS = re.compile(r"([0-9]+)")


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


def natural_key(text: str) -> tuple[str | tuple[int, str], ...]:
    """A sort key that orders names as a person reads them: the runs of ASCII digits by their
    value, the rest as text (report-2 before report-10, gpu-9 before gpu-10)."""
    parts = _DIGIT_RUNS.split(text)
    # split with a group alternates text and digits, text first: each position keeps one type
    return tuple(digits_key(part) if i % 2 else part for i, part in enumerate(parts))


def saturated(text: str, limit: int) -> int:
    """The value of a run of ASCII digits, or `limit` when it is larger (as strtol clamps)."""
    significant = text.lstrip("0")
    if len(significant) > len(str(limit)):
        return limit
    return min(int(significant or "0"), limit)
