"""The one table of package manager commands, per family (dpkg: apt, pacman, rpm: dnf).

Each command is given without `sudo`: every one of them needs root, and the caller decides how
to show that (a `Remedy`'s `needs_root`, or `sudo_line` where a message quotes the command).
"""

from __future__ import annotations

from collections.abc import Sequence

from vkdoctor.model.record import record


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
    #: asks which package in the repositories ships a file named `{name}` (needs no root)
    provides: str


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
        provides="apt-file search {name}",
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
        provides="pacman -F {name}",
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
        provides="dnf provides '*/{name}'",
    ),
}

#: the package family of each distribution family vkdoctor names (vkdoctor.machine.host.distro_family)
NATIVE = {"debian": "dpkg", "arch": "pacman", "fedora": "rpm"}

#: how the managers of distributions whose database vkdoctor does not read install packages
#: (vkdoctor names only what to install there)
INSTALL_ONLY = {"zypper": "zypper install {names}", "apk": "apk add {names}"}

#: the distributions' os-release IDs (a prefix: opensuse-leap) and the manager that installs there
DISTROS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("debian", "ubuntu"), "dpkg"),
    (("arch",), "pacman"),
    (("fedora", "rhel", "centos"), "rpm"),
    (("opensuse", "suse"), "zypper"),
    (("alpine",), "apk"),
)

#: what vkdoctor tells a user to install, by what it is for: its package in each family
PACKAGES: dict[str, dict[str, str]] = {
    "vulkan-loader": {
        "dpkg": "libvulkan1",
        "pacman": "vulkan-icd-loader",
        "rpm": "vulkan-loader",
        "zypper": "libvulkan1",
        "apk": "vulkan-loader",
    },
    # lavapipe, the CPU driver (with the GPU ones on Debian and Fedora)
    "mesa-vulkan": {
        "dpkg": "mesa-vulkan-drivers",
        "pacman": "vulkan-swrast",
        "rpm": "mesa-vulkan-drivers",
    },
    "validation-layers": {
        "dpkg": "vulkan-validationlayers",
        "pacman": "vulkan-validation-layers",
        "rpm": "vulkan-validation-layers",
    },
    "glvnd-egl": {"dpkg": "libegl1", "pacman": "libglvnd", "rpm": "libglvnd-egl"},
    "libc": {"dpkg": "libc6", "pacman": "glibc", "rpm": "glibc"},
}

#: how a sentence names the distributions of each family
NAMES = {"dpkg": "Debian/Ubuntu", "pacman": "Arch", "rpm": "Fedora"}


def manager(family: str) -> Manager:
    return TABLE[family]


def install(family: str, *names: str) -> str:
    form = TABLE[family].install if family in TABLE else INSTALL_ONLY[family]
    return form.format(names=" ".join(names))


def install_for(family: str, what: str) -> str:
    """The command that installs the package of `what` (a key of PACKAGES) in `family`."""
    return install(family, PACKAGES[what][family])


def install_each(what: str, families: Sequence[str] = ("dpkg", "pacman", "rpm")) -> str:
    """How a sentence tells each family's users to install `what`: "Debian/Ubuntu `sudo apt
    install libvulkan1`, Arch `sudo pacman -S vulkan-icd-loader`, Fedora `...`"."""
    return ", ".join(f"{NAMES[f]} `sudo {install_for(f, what)}`" for f in families)


def family_of(ids: Sequence[str]) -> str | None:
    """The manager that installs on the distribution with these os-release IDs, if known."""
    for names, family in DISTROS:
        if any(i in names or i.startswith(names) for i in ids):
            return family
    return None


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


def purge(name: str) -> str:
    """apt: removes a package and its configuration files (dpkg state rc: only those are left)."""
    return f"apt purge {name}"


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


def provides(family: str, name: str) -> str:
    return TABLE[family].provides.format(name=name)


def repair(family: str) -> str | None:
    return TABLE[family].repair


def sudo_line(commands: Sequence[str]) -> str:
    """The commands as a message quotes them for a user: `sudo A && sudo B`."""
    return " && ".join(f"sudo {c}" for c in commands)
