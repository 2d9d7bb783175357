"""The JSON report (schema_version 1, vkdoctor/data/report.schema.json)."""

from __future__ import annotations

import json

from vkdoctor.model import Report
from vkdoctor.render import escape_bytes_in


def render(report: Report, *, strict: bool = False) -> str:
    doc = report.as_dict(strict=strict)
    text = json.dumps(doc, indent=2, sort_keys=False, default=str)
    if "\\udc" in text:  # a path or variable that is not UTF-8 (rare: walk only then)
        text = json.dumps(escape_bytes_in(doc), indent=2, sort_keys=False, default=str)
    return text + "\n"
