"""Where the shaders, probes and finding pages live: inside the wheel, or in the source tree."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent
_SRC = _PKG.parent


def _locate(installed: str, source: str) -> Path:
    inside = _PKG / installed
    return inside if inside.is_dir() else _SRC / source


def shaders_dir() -> Path:
    return _locate("_shaders", "shaders")


def probes_dir() -> Path:
    return _locate("_probes", "probes")


def codes_dir() -> Path:
    """docs/codes: one Markdown page per finding code."""
    return _locate("_docs/codes", "docs/codes")


def schema_path() -> Path:
    return _PKG / "data" / "report.schema.json"
