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

#: the names, imported when first asked for: vkdoctor.packages.ahead is forked before the rest
#: is imported, and imports what it needs itself
_MODEL = ("Consistency", "Family", "Inventory", "Package", "PackageDB", "Relation")


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
    value: Any
    if name == "inventory":
        from vkdoctor.packages import detect

        value = detect.inventory
    elif name in _MODEL:
        from vkdoctor.packages import model

        value = getattr(model, name)
    elif name in ("compare", "satisfies"):
        from vkdoctor.packages import versions

        value = getattr(versions, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
