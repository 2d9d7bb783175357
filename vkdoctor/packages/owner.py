"""Who put a file there: the package that owns it, or nobody. Remedies depend on it: "reinstall
the package" helps a packaged driver, and nothing a package manager does touches a driver copied
into /tmp or /opt by hand."""

from __future__ import annotations

from vkdoctor.model import Remedy
from vkdoctor.model.context import Context
from vkdoctor.packages.detect import inventory
from vkdoctor.packages.model import Package


def _owners(ctx: Context, path: str) -> tuple[Package, ...] | None:
    """The packages owning `path`; None when no package database can say (none, or broken)."""
    inv = ctx.fact(inventory)
    if not inv.databases:
        return None
    try:
        return tuple(inv.owners([path]).get(path, ()))
    except Exception:  # a broken database: the package checks report it
        return None


def owner(ctx: Context, path: str) -> str | None:
    """The label of the package owning `path` ("mesa-vulkan-drivers:amd64 22.3.6-1"), "" when
    the tree has a package database and no package owns it, None when no database can say."""
    pkgs = _owners(ctx, path)
    if pkgs is None:
        return None
    return pkgs[0].label if pkgs else ""


def fix_file(ctx: Context, path: str, packaged: str, unpackaged: str) -> Remedy:
    """`packaged` when a package owns `path` ({package}: its label, {reinstall}: the command that
    puts its files back, the fix's command where `packaged` starts with it), `unpackaged` when
    none does, and both joined by "or" when no package database can tell."""
    from vkdoctor.packages import commands

    pkgs = _owners(ctx, path)
    if pkgs:
        pkg = pkgs[0]
        reinstall = commands.reinstall(pkg.family, pkg.name)
        if packaged.startswith("{reinstall}"):
            rest = packaged.removeprefix("{reinstall}").format(package=pkg.label)
            return Remedy(commands=(reinstall,), needs_root=True, text=rest.lstrip(" "))
        return Remedy(text=packaged.format(package=pkg.label, reinstall=f"sudo {reinstall}"))
    if pkgs is not None:
        return Remedy(text=unpackaged)
    otherwise = f"{unpackaged[:1].lower()}{unpackaged[1:]}"
    if "{reinstall}" in packaged:
        return Remedy(text=f"If a package owns {path}, reinstall it; if none does, {otherwise}")
    either = packaged.format(package="the package that owns it", reinstall="").rstrip(".")
    return Remedy(text=f"{either}; or, if no package owns {path}, {otherwise}")


def leftover_of(ctx: Context, path: str) -> str | None:
    """The removed (not purged) package whose configuration file `path` is, on dpkg systems:
    `apt remove` keeps conffiles such as /etc/vulkan/icd.d/*.json behind."""
    from vkdoctor.packages.dpkg import DpkgDB
    from vkdoctor.packages.paths import spellings

    for db in ctx.fact(inventory).databases:
        if isinstance(db, DpkgDB):
            try:
                left = db.leftovers()
            except OSError:
                return None
            return next((left[s] for s in spellings(ctx, path) if s in left), None)
    return None


def installed_family(ctx: Context, what: str) -> str | None:
    """The package family in which the package of `what` (a key of commands.PACKAGES) is
    installed after all, though the file it should supply is missing (deleted by hand):
    installing it again is a no-op to apt and dnf, so the fix is a reinstall."""
    from vkdoctor.packages.commands import PACKAGES

    for db in ctx.fact(inventory).databases:
        name = PACKAGES[what].get(db.family)
        if name is None:
            continue
        try:
            found = db.by_name(name)
        except Exception:  # a broken database: the package checks report it
            continue
        if found:
            return db.family
    return None


def verified_owner(ctx: Context, path: str) -> tuple[str, bool | None] | None:
    """The package owning the file `path` leads to (a link followed to its file), with whether
    that file differs from what the package installed (its recorded checksum: what `dpkg
    --verify` compares); None when no package owns it or no database can say."""
    try:
        real = ctx.resolve(path)
    except OSError:
        return None
    file = ctx.inside(real)
    pkgs = _owners(ctx, file)
    if not pkgs:
        return None
    pkg = pkgs[0]
    for db in ctx.fact(inventory).databases:
        if db.family == pkg.family:
            try:
                return pkg.label, db.modified(pkg, file)
            except Exception:  # a broken database: the package checks report it
                return pkg.label, None
    return pkg.label, None
