"""Renderers: Report -> str, nothing else."""

from __future__ import annotations

import re
from typing import Any

#: the code prefix of the checks that turn the probe's result into a finding; the renderers show a
#: failed probe on its own only when no such check is in the report
PROBE_FAMILY_PREFIX = "VKR"


def escape_bytes(text: str) -> str:
    """`text` with the bytes that were not UTF-8 (surrogate-escaped, as Python reads paths and
    variables) written as \\xNN: a JSON or XML file holds text, and a lone surrogate is none."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def escape_bytes_in(value: Any) -> Any:
    """`escape_bytes` on every string of a JSON-able value."""
    if isinstance(value, str):
        return escape_bytes(value)
    if isinstance(value, dict):
        return {escape_bytes_in(k): escape_bytes_in(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escape_bytes_in(v) for v in value]
    return value


def hex_escape(text: str, characters: re.Pattern[str]) -> str:
    """`text` with each character `characters` matches written as \\xNN (control characters
    a log, a job summary or XML must not carry as they are)."""
    return characters.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
