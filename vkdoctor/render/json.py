"""The JSON report (schema_version 1, vkdoctor/data/report.schema.json)."""

from __future__ import annotations

import json

from vkdoctor.model import Report


def render(report: Report, *, strict: bool = False) -> str:
    return json.dumps(report.as_dict(strict=strict), indent=2, sort_keys=False, default=str) + "\n"
