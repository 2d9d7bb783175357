"""The static registry of checks, in the order their families appear in reports."""

from __future__ import annotations

from vkdoctor.checks import disk, drivers, env, host, layers, libraries, loadtest
from vkdoctor.checks.base import Check

#: every check, by module; a module lists its checks in CHECKS. The load test comes last: its
#: child process is started before the first check and runs while the static checks do.
REGISTRY: tuple[type[Check], ...] = (
    *host.CHECKS,
    *drivers.CHECKS,
    *layers.CHECKS,
    *libraries.CHECKS,
    *disk.CHECKS,
    *env.CHECKS,
    *loadtest.CHECKS,
)


def by_code() -> dict[str, type[Check]]:
    return {c.code: c for c in REGISTRY}
