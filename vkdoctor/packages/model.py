"""What the package backends answer with, and the small interface they share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

from vkdoctor.model.record import field, record
from vkdoctor.packages.proc import ToolRun

Family = Literal["dpkg", "pacman", "rpm"]


class PackageDBError(Exception):
    """The database is there but cannot be read (corrupt, unreadable, the tool failed)."""


@record(frozen=True, kw_only=True)
class Relation:
    """One dependency or provide: `name`, optionally `op version` (ops: = < <= > >= << >>)."""

    name: str
    op: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        if self.op and self.version:
            return f"{self.name} ({self.op} {self.version})"
        return self.name

    @property
    def versioned(self) -> bool:
        return bool(self.op and self.version)


@record(frozen=True, kw_only=True)
class Package:
    """An installed package, as its database records it."""

    family: Family
    name: str
    #: the full version: epoch (when not 0), version, release: "1:26.2.3-1", "1:15.0.6-4+b1"
    version: str
    arch: str
    #: the source package: Arch %BASE%, Debian Source, rpm SOURCERPM's name
    source: str
    #: the source's version (Debian's can differ from the binary's on binNMUs)
    source_version: str
    #: declared dependencies; each entry is a list of alternatives (`a | b`)
    depends: tuple[tuple[Relation, ...], ...] = ()
    provides: tuple[Relation, ...] = ()
    #: who built it: Arch %PACKAGER%, Debian Maintainer, rpm VENDOR/PACKAGER
    packager: str | None = None
    vendor: str | None = None
    #: the database's state when it is not plainly installed (dpkg "iU", "iF")
    state: str | None = None
    #: Debian Multi-Arch
    multi_arch: str | None = None
    #: what holds it at this version, when something does: "dpkg selection: hold (apt-mark
    #: hold)", "IgnorePkg in /etc/pacman.conf", "dnf versionlock (/etc/dnf/...)"
    hold: str | None = None

    @property
    def label(self) -> str:
        """How a message names it: `vulkan-swrast 1:26.2.3-1`, `mesa-vulkan-drivers:i386 26.2.3-1`."""
        return f"{self.display_name} {self.version}"

    @property
    def display_name(self) -> str:
        if self.family == "dpkg" and self.multi_arch == "same" and self.arch not in ("all", ""):
            return f"{self.name}:{self.arch}"
        if self.family == "rpm" and self.arch:
            return f"{self.name}.{self.arch}"
        return self.name

    def as_evidence(self) -> dict[str, Any]:
        return {
            "manager": self.family,
            "name": self.name,
            "version": self.version,
            "arch": self.arch,
            "source": self.source,
            "source_version": self.source_version,
            "packager": self.packager,
            "vendor": self.vendor,
            "state": self.state,
        }


@record(frozen=True, kw_only=True)
class Consistency:
    """The package manager's own verdict on its database (apt-get check, pacman -Dk, rpm -Va)."""

    family: Family
    #: one line per problem, as the tool printed it
    problems: tuple[str, ...]
    runs: tuple[ToolRun, ...]
    #: the tool could not answer (missing, timed out): why
    unavailable: str | None = None
    #: declared dependencies no installed package satisfies, computed from the parsed database
    unmet: tuple[str, ...] = ()
    #: packages the tool says must be reinstalled (dpkg --audit: a missing list file, a failed
    #: installation)
    reinstall: tuple[str, ...] = ()


class PackageDB(Protocol):
    """One package database inside the inspected tree. Every question is batched."""

    family: Family
    #: the database's location as seen inside the tree, e.g. /var/lib/pacman
    db_path: str

    def packages(self) -> tuple[Package, ...]:
        """Every installed package."""
        ...

    def by_name(self, name: str) -> tuple[Package, ...]:
        """The installed packages called `name` (two with :i386 beside :amd64)."""
        ...

    def owners(self, paths: Iterable[str]) -> Mapping[str, tuple[Package, ...]]:
        """For each absolute path (inside the tree), the packages that own it; unowned paths absent."""
        ...

    def compare(self, a: str, b: str) -> int:
        """-1, 0 or 1: this family's version order."""
        ...

    def modified(self, pkg: Package, path: str) -> bool | None:
        """Whether the file at `path` (inside the tree), which `pkg` owns, differs from what the
        package installed (the checksum its database recorded); None when that is unknown."""
        ...

    def consistency(self) -> Consistency:
        """Run the manager's own database check."""
        ...

    def prefetch(self) -> None:
        """Start the tool `consistency` always runs, so it works while vkdoctor does the rest."""
        ...


@record(frozen=True, kw_only=True)
class Inventory:
    """Which package managers the tree has, and why the others are not there."""

    databases: tuple[PackageDB, ...]
    #: family -> why it is not usable ("no database", "database present but tool missing")
    absent: Mapping[str, str] = field(default_factory=dict)
    #: family -> why a database that is present could not be read
    unreadable: Mapping[str, str] = field(default_factory=dict)

    def owners(self, paths: Iterable[str]) -> dict[str, tuple[Package, ...]]:
        wanted = list(dict.fromkeys(paths))
        out: dict[str, tuple[Package, ...]] = {}
        for db in self.databases:
            for path, pkgs in db.owners(wanted).items():
                out[path] = out.get(path, ()) + tuple(pkgs)
        return out

    def db_of(self, pkg: Package) -> PackageDB:
        return next(db for db in self.databases if db.family == pkg.family)
