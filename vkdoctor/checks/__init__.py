"""The static registry of checks, in the order their families appear in reports.

REGISTRY is built on first use, so that importing one check module (`vkdoctor check` imports
vkdoctor.checks.loadtest first, to start the load test's child early) does not import them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vkdoctor.checks.base import Check

    REGISTRY: tuple[type[Check], ...]


def _registry() -> tuple[type[Check], ...]:
    from vkdoctor.checks import (
        adapters,
        container,
        disk,
        drivers,
        env,
        gpu,
        host,
        layers,
        libraries,
        loadtest,
        outside,
        overlay,
        packages,
        probe,
    )

    # every check, by module; a module lists its checks in CHECKS. The load test stays late: its
    # child process is started before the first check and overlaps the static analysis. The
    # overlay checks read the load test's (and the probe's) results, so they come after it.
    return (
        *host.CHECKS,
        *drivers.CHECKS,
        *layers.CHECKS,
        *libraries.CHECKS,
        *packages.CHECKS,
        *container.CHECKS,
        *disk.CHECKS,
        *env.CHECKS,
        *outside.CHECKS,
        *loadtest.CHECKS,
        *gpu.CHECKS,
        *overlay.CHECKS,
        *probe.CHECKS,
        *adapters.CHECKS,
    )


def __getattr__(name: str) -> Any:
    if name == "REGISTRY":
        registry = _registry()
        globals()["REGISTRY"] = registry
        return registry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def by_code() -> dict[str, type[Check]]:
    from vkdoctor.checks import REGISTRY

    return {c.code: c for c in REGISTRY}
