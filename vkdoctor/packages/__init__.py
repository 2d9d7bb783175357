"""Package databases (dpkg, pacman, rpm) behind one small interface.

inv = ctx.fact(inventory)          # the tree's databases, built once per run
owners = inv.owners(paths)         # path -> packages, batched
pkg.label                          # "vulkan-swrast 1:26.2.3-1"
db.compare(a, b); db.consistency()
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from vkdoctor.packages.detect import inventory
    from vkdoctor.packages.model import (
        Consistency,
        Family,
        Inventory,
        Package,
        PackageDB,
        Relation,
    )
    from vkdoctor.packages.versions import compare, satisfies

#: each name's module, imported when the name is first asked for: vkdoctor.packages.ahead is
#: forked before the rest is imported, and imports what it needs itself
_HOMES = {
    "inventory": "detect",
    "Consistency": "model",
    "Family": "model",
    "Inventory": "model",
    "Package": "model",
    "PackageDB": "model",
    "Relation": "model",
    "compare": "versions",
    "satisfies": "versions",
}

__all__ = [
    "Consistency",
    "Family",
    "Inventory",
    "Package",
    "PackageDB",
    "Relation",
    "compare",
    "inventory",
    "satisfies",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
