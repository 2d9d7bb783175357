"""The distribution's real fix for a skew, per package family, as a `Remedy`. Never a symlink.

A fix is a `Remedy` too: its commands, or (for advice in words, such as a rebuild) its text.
`line` is how a message quotes it ("... Fix: sudo pacman -Syu.").
"""

from __future__ import annotations

from collections.abc import Sequence

from vkdoctor.model import Remedy
from vkdoctor.model.record import replace
from vkdoctor.packages import commands
from vkdoctor.packages.commands import sudo_line

_FAMILIES = tuple(commands.TABLE)

#: the one command that brings every package back in step with the repositories, as a message
#: quotes it
UPGRADE = {f: sudo_line(commands.upgrade(f)) for f in _FAMILIES}

#: puts back a package's own copy of its files, as a sentence quotes it
REINSTALL = {f: f"sudo {commands.reinstall(f, '{name}')}" for f in _FAMILIES}

#: said wherever the fix is apt --fix-broken
FIX_BROKEN_CAUTION = (
    "If apt proposes to REMOVE the driver package, answer no (vkdoctor explain VKP008)."
)


def run(*steps: str, text: str = "") -> Remedy:
    """Package manager commands (they need root), and at most one sentence after them."""
    return Remedy(commands=steps, needs_root=True, text=text)


def said(text: str) -> Remedy:
    """A fix given in words: advice, or commands inside a sentence."""
    return Remedy(text=text)


def line(fix: Remedy) -> str:
    """The fix as a message quotes it: `sudo A && sudo B`, or its words."""
    return fix.shown()


def upgrade(family: str) -> Remedy:
    return run(*commands.upgrade(family))


def reinstall(family: str, name: str) -> Remedy:
    return run(commands.reinstall(family, name))


def fix_broken(family: str) -> Remedy:
    """Repairs an unmet declared dependency."""
    return run(*commands.fix_broken(family))


def release(family: str, name: str) -> Remedy:
    """How each manager lets go of a held package, so that its next upgrade includes it."""
    if family == "pacman":
        return said(
            f"change the IgnorePkg/IgnoreGroup entry that matches {name} so that it no "
            f"longer does, then {UPGRADE['pacman']}"
        )
    unhold = commands.unhold(family, name)
    assert unhold is not None
    return run(unhold, *_upgrade_after_unhold(family))


def _upgrade_after_unhold(family: str) -> tuple[str, ...]:
    """What upgrades a package just let go of. dpkg: --fix-broken first (with a dependency
    already unmet, full-upgrade refuses to start), then the full upgrade itself (--fix-broken
    alone installs what is missing, and leaves the package where it was held)."""
    if family == "dpkg":
        return (*commands.fix_broken(family), *commands.upgrade(family)[1:])
    return commands.upgrade(family)


def released(family: str, held: Sequence[str]) -> Remedy:
    """Let go of the held packages `held` and upgrade; the plain upgrade when none is held."""
    if not held:
        return run(*commands.upgrade(family))
    if family == "pacman":
        return release(family, held[0])
    unhold = commands.unhold(family, *held)
    assert unhold is not None
    return run(unhold, *_upgrade_after_unhold(family))


def then(first: Remedy, *more: str, text: str = "") -> Remedy:
    """`first` (a fix of commands) followed by more commands and a sentence."""
    return replace(first, commands=(*first.commands, *more), text=text)


def done(fix: Remedy, text: str = "") -> Remedy:
    """The fix as the remedy line: its commands and `text` (a parenthesis or a clause that
    follows them), or its words; a full stop ends it."""
    if not fix.commands:
        return said(f"{fix.text}.")
    return replace(fix, text=text or ".")


def with_upgrade(family: str, fix: Remedy) -> Remedy:
    """After a repair, the full upgrade that brings the rest in step (when the fix does not
    already include it), and the caution wherever the fix is apt --fix-broken."""
    shown = line(fix)
    upgrade = commands.upgrade(family)
    if "apt update" in shown:
        upgrade = tuple(c for c in upgrade if c != "apt update")
    more = () if sudo_line(upgrade) in shown else upgrade
    caution = FIX_BROKEN_CAUTION if "--fix-broken" in shown else ""
    if not fix.commands:
        after = f"Then {sudo_line(more)}." if more else ""
        return said(" ".join(p for p in (f"{fix.text}.", after, caution) if p))
    return then(fix, *more, text=caution or ".")
