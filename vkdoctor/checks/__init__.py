"""The static registry of checks, in the order their families appear in reports."""

from __future__ import annotations

from vkdoctor.checks import drivers, host, layers, libraries, overlay
from vkdoctor.checks.base import Check

#: every check, by module; a module lists its checks in CHECKS
REGISTRY: tuple[type[Check], ...] = (
    *host.CHECKS,
    *drivers.CHECKS,
    *layers.CHECKS,
    *libraries.CHECKS,
    *overlay.CHECKS,
)


def by_code() -> dict[str, type[Check]]:
    return {c.code: c for c in REGISTRY}
