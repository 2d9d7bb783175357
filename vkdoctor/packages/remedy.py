"""The distribution's real fix for a skew, per package family. Never a symlink."""

from __future__ import annotations

#: the one command that brings every package back in step with the repositories
UPGRADE = {
    "pacman": "sudo pacman -Syu",
    "dpkg": "sudo apt update && sudo apt full-upgrade",
    "rpm": "sudo dnf distro-sync",
}

#: puts back a package's own copy of its files
REINSTALL = {
    "pacman": "sudo pacman -S {name}",
    "dpkg": "sudo apt install --reinstall {name}",
    "rpm": "sudo dnf reinstall {name}",
}

#: repairs an unmet declared dependency
FIX_BROKEN = {
    "pacman": "sudo pacman -Syu",
    # after apt update: with stale lists, --fix-broken resolves a missing dependency by removing
    # the package that needs it
    "dpkg": "sudo apt update && sudo apt --fix-broken install",
    "rpm": "sudo dnf distro-sync",
}

#: how each manager lets go of a held package, so that its next upgrade includes it
RELEASE = {
    # --fix-broken: with a dependency already unmet, full-upgrade refuses to start
    "dpkg": "sudo apt-mark unhold {name} && sudo apt update && sudo apt --fix-broken install",
    "pacman": "change the IgnorePkg/IgnoreGroup entry that matches {name} so that it no "
    "longer does, then sudo pacman -Syu",
    "rpm": "sudo dnf versionlock delete {name} && sudo dnf distro-sync",
}

NOTES = {
    "pacman": (
        "Upgrade everything together, never a single package (lib32-* packages come along when "
        "multilib is enabled). If the mirror does not carry the matching package yet, refresh or "
        "rank the mirrors first (reflector, pacman-mirrors), then -Syu; never `pacman -Sy <pkg>`, "
        "which makes the next partial upgrade. Take the packages out of IgnorePkg/IgnoreGroup "
        "(in /etc/pacman.conf or a file it Includes; VKP007 names it) if they are held there."
    ),
    "dpkg": (
        "If the driver comes from a PPA that is ahead of the archive (kisak, oibaf), "
        "sudo ppa-purge ppa:OWNER/NAME returns to the archive's packages; apt-mark showhold "
        "lists held packages."
    ),
    "rpm": (
        "dnf distro-sync also downgrades to the repositories' versions; add --allowerasing if it "
        "asks. For a COPR mesa: sudo dnf copr disable OWNER/PROJECT, then "
        "sudo dnf distro-sync 'mesa*' llvm-libs. dnf check lists what is still unmet."
    ),
}


def no_symlink(have: str, need: str) -> str:
    return (
        f"Do not symlink {have} to {need} or rename libraries: different versions have a "
        "different ABI, so that trades a clean load error for crashes."
    )


def overlay_hint(soname: str, provider: str) -> str:
    return (
        f"Workaround today, for one program only: `vkdoctor overlay --search-path DIR`, where DIR "
        f"holds {soname} from the matching {provider} package (for example extracted from the "
        "package cache); the overlay is private to the process and ends with it."
    )


#: said wherever the fix is apt --fix-broken
FIX_BROKEN_CAUTION = (
    "Read what apt --fix-broken proposes: if it would REMOVE the driver package, the "
    "repositories lack what it needs (VKP008 says what they offer), and the way back is the "
    "driver at the repositories' version."
)


def then_upgrade(family: str, fix: str) -> str:
    """After a repair command, the full upgrade that brings the rest in step (when different)."""
    upgrade = UPGRADE[family]
    if "apt update" in fix:
        upgrade = upgrade.replace("sudo apt update && ", "")
    then = "" if upgrade in fix else f"Then {upgrade}."
    if "--fix-broken" in fix:
        then = f"{then} {FIX_BROKEN_CAUTION}".strip()
    return then
