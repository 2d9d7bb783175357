"""Driver manifests a dpkg package installed that are gone from disk (`rm` behind dpkg's back).

The loader finds a driver only through its manifest: with the file gone, the driver is simply
not there, and nothing else fails. Only the packages that can hold a driver manifest are read
(those providing `vulkan-icd`, as Debian's Vulkan drivers do, or named after Vulkan); what is
missing is confirmed with dpkg's own `dpkg --verify`.
"""

from __future__ import annotations

import os
import stat

from vkdoctor.model.context import Context
from vkdoctor.model.files import LARGE, read_bytes
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


def _info(db: DpkgDB, pkg: Package, suffix: str) -> str | None:
    """The text of the package's dpkg info file `suffix` (list, md5sums), or None."""
    info = db._admin / "info"
    for stem in (f"{pkg.name}:{pkg.arch}", pkg.name):
        try:
            return read_bytes(info / f"{stem}.{suffix}", LARGE).decode("utf-8", "surrogateescape")
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


#: what dpkg --verify may hash in all before it is not run (it reads every byte)
HASH_BUDGET = 4 << 30


def _unhashable(ctx: Context, db: DpkgDB, pkg: Package) -> str | None:
    """Why dpkg --verify would not finish in time on this package's files (None: it will):
    it opens and hashes each file its md5sums list, following links (an absolute one in a tree
    leads into this machine), so a FIFO or device there blocks it, and a huge file stalls it."""
    text = _info(db, pkg, "md5sums")
    total = 0
    for line in (text or "").splitlines():
        path = "/" + line.partition("  ")[2].lstrip("/")
        try:
            st = ctx.under(path).stat()
        except OSError:
            continue  # missing: dpkg says so without opening anything
        if not stat.S_ISREG(st.st_mode):
            return f"{path} is not a regular file, and dpkg would block reading it"
        real = os.path.realpath(ctx.under(path))
        if real.startswith(("/proc/", "/sys/", "/dev/")):
            # "regular" files of the kernel's that never end or block (/proc/kmsg)
            return f"{path} leads to {real}, and dpkg would block reading it"
        total += st.st_size
        if total > HASH_BUDGET:
            return f"its files hold more than {HASH_BUDGET >> 30} GiB for dpkg to hash"
    return None


def _verify(ctx: Context, db: DpkgDB, pkg: Package) -> ToolRun | None:
    if not which("dpkg", ctx.env):
        return None
    argv = ["dpkg"] if ctx.live else ["dpkg", f"--root={ctx.root}"]
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
