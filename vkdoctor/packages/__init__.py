"""Package databases (dpkg, pacman, rpm) behind one small interface.

inv = ctx.fact(inventory)          # the tree's databases, built once per run
owners = inv.owners(paths)         # path -> packages, batched
pkg.label                          # "vulkan-swrast 1:26.2.3-1"
db.compare(a, b); db.consistency()
"""

from vkdoctor.packages.detect import inventory
from vkdoctor.packages.model import Consistency, Family, Inventory, Package, PackageDB, Relation
from vkdoctor.packages.versions import compare, satisfies

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
