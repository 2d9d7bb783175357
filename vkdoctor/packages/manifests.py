"""Driver manifests a dpkg package installed that are gone from disk (`rm` behind dpkg's back).

The loader finds a driver only through its manifest: with the file gone, the driver is simply
not there, and nothing else fails. Only the packages that can hold a driver manifest are read
(those providing `vulkan-icd`, as Debian's Vulkan drivers do, or named after Vulkan); what is
missing is confirmed with dpkg's own `dpkg --verify`.
"""

from __future__ import annotations

import os

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.files import LARGE
from vkdoctor.model.record import record
from vkdoctor.packages.dpkg import DpkgDB
from vkdoctor.packages.model import Package
from vkdoctor.packages.proc import ToolRun, run_tool, which

#: where Debian's driver packages put their manifests
MANIFEST_DIRS = ("/usr/share/vulkan/icd.d/", "/etc/vulkan/icd.d/")


@record(frozen=True, kw_only=True)
class Missing:
    package: Package
    paths: tuple[str, ...]
    #: dpkg --verify of the package (None when dpkg could not run)
    verify: ToolRun | None


def _may_ship_a_driver(pkg: Package) -> bool:
    return "vulkan" in pkg.name or any(r.name == "vulkan-icd" for r in pkg.provides)


def _stems(pkg: Package) -> tuple[str, str]:
    return f"{pkg.name}:{pkg.arch}", pkg.name


def _info(db: DpkgDB, pkg: Package, suffix: str) -> str | None:
    """The text of the package's dpkg info file `suffix` (list, md5sums), or None."""
    ctx = db._ctx
    info = f"{ctx.inside(db._admin)}/info"
    for stem in _stems(pkg):
        try:
            data = tree.read_bytes(ctx, f"{info}/{stem}.{suffix}", LARGE)
            return data.decode("utf-8", "surrogateescape")
        except OSError:
            continue
    return None


def _listed(db: DpkgDB, pkg: Package) -> list[str]:
    text = _info(db, pkg, "list") or ""
    return [
        line
        for line in text.splitlines()
        if line.startswith(MANIFEST_DIRS) and line.endswith(".json")
    ]


def _hashed(ctx: Context, db: DpkgDB, pkg: Package) -> list[str]:
    """What dpkg --verify opens for `pkg`: its status and diversions, the package's own info
    files, every file its md5sums lists, its conffiles, and where a diversion moved them."""
    admin = ctx.inside(db._admin)
    paths = [f"{admin}/status", f"{admin}/diversions"]
    paths += [f"{admin}/info/{s}.{x}" for s in _stems(pkg) for x in ("list", "md5sums")]
    sums = (_info(db, pkg, "md5sums") or "").splitlines()
    files = ["/" + ln.partition("  ")[2].lstrip("/") for ln in sums]
    try:
        files += db.conffiles(pkg)
        moved = db.diversions()
    except OSError:
        moved = {}
    return paths + [m for f in files for m in (f, moved.get(f)) if m]


def _unhashable(ctx: Context, db: DpkgDB, pkg: Package) -> str | None:
    """Why dpkg --verify must not run on this package's files (None: it may). dpkg opens each
    file it reads with links followed on this machine, so every one is judged inside the tree
    first: one that leads out of it, that is not a regular file (a FIFO or a device would block
    dpkg), that is the kernel's, or files too large to hash in seconds, and dpkg is not run."""
    total = 0
    for path in _hashed(ctx, db, pkg):
        why, size = tree.judge(ctx, path, "dpkg")
        if why:
            return why
        total += size
        if total > tree.HASH_BUDGET:
            return f"its files hold more than {tree.HASH_BUDGET >> 30} GiB for dpkg to hash"
    return None


def _verify(ctx: Context, db: DpkgDB, pkg: Package) -> ToolRun | None:
    if not which("dpkg", ctx.env):
        return None
    argv = ["dpkg"]
    if not ctx.live:
        argv += [f"--root={ctx.root}", f"--admindir={db._admin}"]
    unhashable = _unhashable(ctx, db, pkg)
    if unhashable:
        return ToolRun(
            argv=(*argv, "--verify", pkg.display_name),
            returncode=None,
            problem=unhashable,
        )
    return run_tool(
        [*argv, "--verify", pkg.display_name],
        env=ctx.env,
        timeout=min(ctx.options.timeout, 60.0),
    )


def missing_manifests(ctx: Context, db: DpkgDB) -> list[Missing]:
    out: list[Missing] = []
    for pkg in db.packages():
        if pkg.state is not None or not _may_ship_a_driver(pkg):
            continue
        gone = tuple(p for p in _listed(db, pkg) if not os.path.lexists(ctx.under(p)))
        if gone:
            out.append(Missing(package=pkg, paths=gone, verify=_verify(ctx, db, pkg)))
    return out


def verify_says_missing(run: ToolRun | None, path: str) -> bool | None:
    """Whether `dpkg --verify` lists `path` as missing; None when it did not run."""
    if run is None or run.returncode is None:
        return None
    return any(
        line.split()[:1] == ["missing"] and line.split()[-1] == path
        for line in run.stdout.splitlines()
    )
