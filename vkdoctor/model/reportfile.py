"""Reading vkdoctor's JSON reports back (`diff`, `summary`): a file that is not one, or one of
another schema version, is refused with a sentence that says which."""

from __future__ import annotations

import json
from typing import Any

from vkdoctor.model import SCHEMA_VERSION

#: a report is at most a few hundred kB; a CI artifact many times that is not one
MAX_BYTES = 64 * 1024 * 1024

#: what `diff` and `summary` read; the schema requires all of them
_REQUIRED = {
    "status": str,
    "host": dict,
    "findings": list,
    "drivers": list,
}


class ReportError(Exception):
    """The file cannot be read as a vkdoctor report of this schema version."""


def load(path: str) -> dict[str, Any]:
    """The report in `path` ('-': standard input is not accepted: two reports need two files)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except IsADirectoryError:
        raise ReportError(f"{path}: is a directory, not a report") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise ReportError(f"{path}: larger than {MAX_BYTES >> 20} MiB, not a vkdoctor report")
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ReportError(
            f"{path}: not JSON ({exc.__class__.__name__}: {str(exc)[:80]}); "
            "write reports with `vkdoctor check --json FILE`"
        ) from None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise ReportError(
            f"{path}: JSON, but not a vkdoctor report (no schema_version); "
            "write reports with `vkdoctor check --json FILE`"
        )
    version = doc["schema_version"]
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise ReportError(
            f"{path}: a report of schema version {json.dumps(version)[:20]}; this vkdoctor "
            f"({_self_version()}) reads schema version {SCHEMA_VERSION}: compare it with the "
            "vkdoctor that wrote it"
        )
    for key, kind in _REQUIRED.items():
        if not isinstance(doc.get(key), kind):
            raise ReportError(
                f"{path}: not a complete vkdoctor report ({key!r} is missing or not "
                f"{'an object' if kind is dict else 'a list' if kind is list else 'a string'})"
            )
    for name in ("findings", "drivers"):
        if not all(isinstance(x, dict) for x in doc[name]):
            raise ReportError(
                f"{path}: not a complete vkdoctor report ({name!r} holds non-objects)"
            )
    return doc


def _self_version() -> str:
    from vkdoctor import __version__

    return __version__
