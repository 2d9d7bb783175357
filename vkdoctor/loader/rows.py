"""The report's `drivers` list: the drivers the loader will try, in its order, with verdicts."""

from __future__ import annotations

from typing import Any

from vkdoctor.context import Context
from vkdoctor.loader import driver_scan
from vkdoctor.loader.icd import verdict
from vkdoctor.loader.known import known_driver


def driver_rows(ctx: Context) -> tuple[dict[str, Any], ...]:
    """One JSON-able dict per manifest the loader lists (schema: report.drivers[])."""
    scan = driver_scan(ctx)
    rows = []
    for index, d in enumerate(scan.drivers):
        v, reason = verdict(d, scan)
        rows.append(
            {
                "index": index,
                "manifest": d.manifest,
                "origin": d.origin,
                "search_entry": d.entry,
                "library_path": d.library_path,
                "library": d.evidence.get("library_found", d.library),
                "library_rule": d.library_rule,
                "dlopen_name": d.library if d.dlopened else None,
                "api_version": d.api_version,
                "file_format_version": d.file_format_version,
                "library_arch": d.library_arch,
                "is_portability_driver": d.is_portability_driver,
                "driver": known_driver(d.library),
                "outcome": d.outcome,
                "verdict": v,
                "reason": reason,
            }
        )
    return tuple(rows)
