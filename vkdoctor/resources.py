"""Where the shaders, probes and finding pages live: inside the wheel, or in the source tree."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

#: nothing else at the top: the load test's forked child finds its script through this module
#: before pathlib is imported (`probe_script`, vkdoctor.speed.zygote)
_PKG = os.path.dirname(os.path.realpath(__file__))
_SRC = os.path.dirname(_PKG)


def _located(installed: str, source: str) -> str:
    inside = os.path.join(_PKG, installed)
    return inside if os.path.isdir(inside) else os.path.join(_SRC, source)


def _locate(installed: str, source: str) -> Path:
    from pathlib import Path

    return Path(_located(installed, source))


def shaders_dir() -> Path:
    return _locate("_shaders", "shaders")


def probes_dir() -> Path:
    return _locate("_probes", "probes")


def probe_script() -> str:
    """probes/loadtest.py, the load test's child's script."""
    return os.path.join(_located("_probes", "probes"), "loadtest.py")


def codes_dir() -> Path:
    """docs/codes: one Markdown page per finding code."""
    return _locate("_docs/codes", "docs/codes")


def schema_path() -> Path:
    from pathlib import Path

    return Path(_PKG) / "data" / "report.schema.json"


def bandwidth_table_path() -> Path:
    """The cards' specified memory bandwidth, by PCI id (vkdoctor bench's verdict)."""
    from pathlib import Path

    return Path(_PKG) / "data" / "gpu_bandwidth.json"
