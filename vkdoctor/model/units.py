"""Byte sizes for people: parse "5G" / "500M" / "1.5GiB", print 1.5 GiB."""

from __future__ import annotations

import re

_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE | re.ASCII)


def parse_size(text: str) -> int:
    """Bytes from "5G", "500M", "1.5GiB", "10k", "4096" (binary units). ValueError otherwise."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(
            f"{text!r} is not a size; use a number with an optional unit K, M, G, T or P (e.g. 5G, 500M)"
        )
    whole = m.group(1).split(".")[0].lstrip("0")
    # 1 EiB has 19 digits: a longer number is too large before float() makes it inf
    size = MAX_SIZE + 1 if len(whole) > 19 else int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size > MAX_SIZE:
        raise ValueError(f"{text!r} is more than any filesystem holds (at most 1 EiB)")
    return size


#: 1 EiB: far above any filesystem a check runs on; a larger number is a typo
MAX_SIZE = 1 << 60


def format_size(n: int) -> str:
    """1.5 GiB, 812.0 MiB, 512 B."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
