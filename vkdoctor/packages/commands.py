"""The one table of package manager commands, per family (dpkg: apt, pacman, rpm: dnf).

Each command is given without `sudo`: every one of them needs root, and the caller decides how
to show that (a `Remedy`'s `needs_root`, or `sudo_line` where a message quotes the command).
"""

from __future__ import annotations

from collections.abc import Sequence

from vkdoctor.record import record


@record(frozen=True, kw_only=True)
class Manager:
    """How one family's package manager does each thing. `{names}` is one or more package
    names, `{name}` one, `{version}` a version of it."""

    #: installs packages from the repositories
    install: str
    #: puts back a package's own copy of its files
    reinstall: str
    #: installs one package at the version given (None: the manager installs only the newest)
    install_version: str | None
    #: takes one package down to the version given, where the manager can name one
    downgrade: str | None
    #: installs missing dependencies, marked as such (pacman's --asdeps; None elsewhere)
    install_deps: str | None
    #: brings every package in step with the repositories, in steps
    upgrade: tuple[str, ...]
    #: the same, also taking down what is newer than the repositories
    sync_down: str
    #: refreshes the package lists, the sync databases or the metadata
    refresh: str
    #: repairs unmet declared dependencies, in steps
    fix_broken: tuple[str, ...]
    #: holds packages at their version (None: it is a configuration file's entry)
    hold: str | None
    #: lets go of held packages (None: it is a configuration file's entry)
    unhold: str | None
    #: removes one package without touching what depends on it
    remove_alone: str
    #: repairs the package database itself (None: vkdoctor knows no one command)
    repair: str | None


TABLE: dict[str, Manager] = {
    "dpkg": Manager(
        install="apt install {names}",
        reinstall="apt install --reinstall {names}",
        install_version="apt install {name}={version}",
        # without --allow-downgrades, apt -y refuses a version below the installed one
        downgrade="apt install --allow-downgrades {name}={version}",
        install_deps=None,
        upgrade=("apt update", "apt full-upgrade"),
        sync_down="apt full-upgrade",
        refresh="apt update",
        # after apt update: with stale lists, --fix-broken resolves a missing dependency by
        # removing the package that needs it
        fix_broken=("apt update", "apt --fix-broken install"),
        hold="apt-mark hold {names}",
        unhold="apt-mark unhold {names}",
        remove_alone="dpkg -r {name}",
        repair="dpkg --configure -a",
    ),
    "pacman": Manager(
        install="pacman -S {names}",
        reinstall="pacman -S {names}",
        install_version=None,
        downgrade=None,
        install_deps="pacman -S --asdeps {names}",
        upgrade=("pacman -Syu",),
        sync_down="pacman -Syuu",
        refresh="pacman -Syu",
        fix_broken=("pacman -Syu",),
        hold=None,
        unhold=None,
        remove_alone="pacman -Rdd {name}",
        repair=None,
    ),
    "rpm": Manager(
        install="dnf install {names}",
        reinstall="dnf reinstall {names}",
        install_version="dnf install {name}-{version}",
        downgrade="dnf downgrade {name}-{version}",
        install_deps=None,
        upgrade=("dnf distro-sync",),
        sync_down="dnf distro-sync",
        refresh="dnf makecache --refresh",
        fix_broken=("dnf distro-sync",),
        hold="dnf versionlock add {names}",
        unhold="dnf versionlock delete {names}",
        remove_alone="rpm -e --nodeps {name}",
        repair="rpm --rebuilddb",
    ),
}

#: the package family of each distribution family vkdoctor names (vkdoctor.host.distro_family)
NATIVE = {"debian": "dpkg", "arch": "pacman", "fedora": "rpm"}


def manager(family: str) -> Manager:
    return TABLE[family]


def install(family: str, *names: str) -> str:
    return TABLE[family].install.format(names=" ".join(names))


def reinstall(family: str, *names: str) -> str:
    return TABLE[family].reinstall.format(names=" ".join(names))


def install_version(family: str, name: str, version: str) -> str:
    form = TABLE[family].install_version
    if form is None:
        raise ValueError(f"{family} installs only the repositories' newest version")
    return form.format(name=name, version=version)


def downgrade(family: str, name: str, version: str) -> str:
    form = TABLE[family].downgrade
    if form is None:
        raise ValueError(f"{family} cannot name a version to go down to")
    return form.format(name=name, version=version)


def install_deps(family: str, *names: str) -> str:
    form = TABLE[family].install_deps or TABLE[family].install
    return form.format(names=" ".join(names))


def install_from(suite: str, *names: str) -> str:
    """apt: packages from the suite given (`-t bookworm-backports`), not the default release."""
    return f"apt install -t {suite} {' '.join(names)}"


def mark_manual(*names: str) -> str:
    """apt: installed on purpose, so that autoremove leaves them."""
    return f"apt-mark manual {' '.join(names)}"


def upgrade(family: str) -> tuple[str, ...]:
    return TABLE[family].upgrade


def sync_down(family: str) -> str:
    return TABLE[family].sync_down


def refresh(family: str) -> str:
    return TABLE[family].refresh


def fix_broken(family: str) -> tuple[str, ...]:
    return TABLE[family].fix_broken


def unhold(family: str, *names: str) -> str | None:
    form = TABLE[family].unhold
    return form.format(names=" ".join(names)) if form else None


def remove_alone(family: str, name: str) -> str:
    return TABLE[family].remove_alone.format(name=name)


def repair(family: str) -> str | None:
    return TABLE[family].repair


def sudo_line(commands: Sequence[str]) -> str:
    """The commands as a message quotes them for a user: `sudo A && sudo B`."""
    return " && ".join(f"sudo {c}" for c in commands)
