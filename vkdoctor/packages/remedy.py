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

#: said wherever the fix is apt --fix-broken
FIX_BROKEN_CAUTION = (
    "If apt proposes to REMOVE the driver package, answer no (vkdoctor explain VKP008)."
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
