"""The static registry of checks, in the order their families appear in reports."""

from __future__ import annotations

from vkdoctor.checks import (
    container,
    disk,
    drivers,
    env,
    host,
    layers,
    libraries,
    loadtest,
    overlay,
    packages,
    probe,
)
from vkdoctor.checks.base import Check

#: every check, by module; a module lists its checks in CHECKS. The load test stays late: its
#: child process is started before the first check and overlaps the static analysis. The overlay
#: checks read the load test's (and the probe's) results, so they come after it.
REGISTRY: tuple[type[Check], ...] = (
    *host.CHECKS,
    *drivers.CHECKS,
    *layers.CHECKS,
    *libraries.CHECKS,
    *packages.CHECKS,
    *container.CHECKS,
    *disk.CHECKS,
    *env.CHECKS,
    *loadtest.CHECKS,
    *overlay.CHECKS,
    *probe.CHECKS,
)


def by_code() -> dict[str, type[Check]]:
    return {c.code: c for c in REGISTRY}
