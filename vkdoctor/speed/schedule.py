"""Which checks use the machine's other core: the schedule the face hands to the runner.

The package checks run together in a forked copy of vkdoctor (vkdoctor.speed.offload), after
the library closures they share with the library checks; the package manager's own check
(VKP006) starts its tool, and the ownership check (VKP004) its search of dpkg's file lists,
before any check runs, so that both work while the checks before them do.
"""

from __future__ import annotations

from vkdoctor import facts
from vkdoctor.checks import packages as package_checks
from vkdoctor.model.context import Context
from vkdoctor.packages.dpkg import DpkgDB
from vkdoctor.speed.offload import Schedule


def _start_consistency_tools(ctx: Context) -> None:
    """VKP006: the tool `consistency` always runs (dpkg --audit, pacman -Dk), started now."""
    for db in facts.package_inventory(ctx).databases:
        db.prefetch()


def _start_owner_search(ctx: Context) -> None:
    """VKP004: the search for the owners of the driver stack's files, started now."""
    stack = facts.package_stack(ctx)
    for db in facts.package_inventory(ctx).databases:
        if isinstance(db, DpkgDB):
            db.prefetch_owners(f.path for f in stack.files)


_PACKAGE_CODES = tuple(c.code for c in package_checks.CHECKS)

#: the schedule of vkdoctor's own checks
SCHEDULE = Schedule(
    prefetch={"VKP006": _start_consistency_tools, "VKP004": _start_owner_search},
    fork=dict.fromkeys(_PACKAGE_CODES, "packages"),
    # the load targets' closures: the library checks here need them too
    before_fork=dict.fromkeys(_PACKAGE_CODES, (facts.target_resolutions,)),
)
