"""The JSON report (schema_version 1, vkdoctor/data/report.schema.json)."""

from __future__ import annotations

from vkdoctor.model import Report
from vkdoctor.render import escape_bytes_in
from vkdoctor.render.escape import json_text


def render(report: Report, *, strict: bool = False) -> str:
    doc = report.as_dict(strict=strict)
    text = json_text(doc)
    if "\\udc" in text:  # a path or variable that is not UTF-8 (rare: walk only then)
        text = json_text(escape_bytes_in(doc))
    return text + "\n"
