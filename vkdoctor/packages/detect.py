"""Which package databases the inspected tree has, and a backend for each."""

from __future__ import annotations

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.packages.dpkg import ADMINDIR, DpkgDB
from vkdoctor.packages.model import Inventory, PackageDB, PackageDBError
from vkdoctor.packages.pacman import PacmanDB, dbpath_from_conf
from vkdoctor.packages.proc import which
from vkdoctor.packages.rpm import DBPATHS, RpmDB, find_dbpath


def inventory(ctx: Context) -> Inventory:
    """The tree's package databases. Use through `ctx.fact(inventory)`: built once per run.

    A database counts only when its files are there: Debian ships an empty /var/lib/rpm with the
    rpm tool, which is not an rpm-managed system.
    """
    dbs: list[PackageDB] = []
    absent: dict[str, str] = {}

    if ctx.resolve(f"{ADMINDIR}/status").exists():
        dbs.append(DpkgDB(ctx))
    else:
        absent["dpkg"] = f"no {ADMINDIR}/status"

    dbpath = dbpath_from_conf(ctx)
    try:
        local = tree.names(ctx, f"{dbpath}/local", 2)
    except OSError:
        local = []
    if any(n != "ALPM_DB_VERSION" for n in local):
        dbs.append(PacmanDB(ctx, dbpath))
    else:
        absent["pacman"] = f"no packages in {dbpath}/local"

    rpm_db = find_dbpath(ctx)
    if rpm_db is None:
        tool = (
            " (the rpm tool is installed, but holds no database here)"
            if which("rpm", ctx.env)
            else ""
        )
        absent["rpm"] = "no rpm database in " + " or ".join(DBPATHS) + tool
    elif which("rpm", ctx.env) is None:
        absent["rpm"] = f"an rpm database is in {rpm_db}, but the rpm tool is not installed here"
    else:
        dbs.append(RpmDB(ctx, rpm_db))

    readable: list[PackageDB] = []
    unreadable: dict[str, str] = {}
    for db in dbs:
        try:
            installed = db.packages()
        except (OSError, UnicodeError, ValueError, PackageDBError) as exc:
            unreadable[db.family] = f"{db.db_path}: {exc}"
            continue
        if not installed and not (isinstance(db, DpkgDB) and db.leftovers()):
            # an unfinished debootstrap or a stripped image: a database that owns nothing cannot
            # say that a file is outside every package
            absent[db.family] = f"{db.db_path} lists no installed package"
            continue
        readable.append(db)
    return Inventory(databases=tuple(readable), absent=absent, unreadable=unreadable)
