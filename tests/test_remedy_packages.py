"""The package pipeline's fixes are data (vkdoctor.packages.remedy over the one table of commands,
vkdoctor.packages.commands): each is the Remedy that the sentence vkdoctor printed before reads
as, so what a user sees is unchanged, and its commands are what a `vkdoctor fix` would run."""

from __future__ import annotations

from pathlib import Path

import pytest
from sentences import remedy_from

from vkdoctor.model import Remedy
from vkdoctor.model.context import Context
from vkdoctor.packages import commands
from vkdoctor.packages import remedy as fixes
from vkdoctor.packages.verify import _with_chosen, for_tree, remedy_for_tree

CAUTION = fixes.FIX_BROKEN_CAUTION

#: each fix as data, and the sentence the package pipeline wrote for it before
CASES: list[tuple[Remedy, str]] = [
    (
        fixes.with_upgrade("dpkg", fixes.fix_broken("dpkg")),
        f"sudo apt update && sudo apt --fix-broken install. Then sudo apt full-upgrade. {CAUTION}",
    ),
    (fixes.with_upgrade("pacman", fixes.upgrade("pacman")), "sudo pacman -Syu."),
    (fixes.with_upgrade("rpm", fixes.upgrade("rpm")), "sudo dnf distro-sync."),
    (
        fixes.with_upgrade("rpm", fixes.reinstall("rpm", "zx3")),
        "sudo dnf reinstall zx3. Then sudo dnf distro-sync.",
    ),
    (
        fixes.with_upgrade("dpkg", fixes.release("dpkg", "libllvm23")),
        "sudo apt-mark unhold libllvm23 && sudo apt update && sudo apt --fix-broken install. "
        f"Then sudo apt full-upgrade. {CAUTION}",
    ),
    (
        fixes.with_upgrade("rpm", fixes.release("rpm", "llvm-libs")),
        "sudo dnf versionlock delete llvm-libs && sudo dnf distro-sync.",
    ),
    (
        fixes.with_upgrade("pacman", fixes.release("pacman", "llvm-libs")),
        "change the IgnorePkg/IgnoreGroup entry that matches llvm-libs so that it no longer "
        "does, then sudo pacman -Syu.",
    ),
    (
        fixes.with_upgrade(
            "dpkg",
            fixes.run(
                commands.refresh("dpkg"),
                commands.install("dpkg", "libllvm23"),
                commands.mark_manual("libllvm23"),
            ),
        ),
        "sudo apt update && sudo apt install libllvm23 && sudo apt-mark manual libllvm23. "
        "Then sudo apt full-upgrade.",
    ),
    (
        fixes.with_upgrade("pacman", fixes.run(commands.install_deps("pacman", "libdrmx"))),
        "sudo pacman -S --asdeps libdrmx. Then sudo pacman -Syu.",
    ),
    (
        fixes.done(fixes.reinstall("dpkg", "zlib1g"), "(puts back zlib1g's own files)."),
        "sudo apt install --reinstall zlib1g (puts back zlib1g's own files).",
    ),
    (fixes.done(fixes.reinstall("pacman", "zx3")), "sudo pacman -S zx3."),
    (
        fixes.done(fixes.release("pacman", "mesa")),
        "change the IgnorePkg/IgnoreGroup entry that matches mesa so that it no longer does, "
        "then sudo pacman -Syu.",
    ),
    (
        fixes.run(
            commands.refresh("dpkg"),
            text="(from an up-to-date mirror), then run vkdoctor again; apt-cache policy shows "
            "what each repository offers.",
        ),
        "sudo apt update (from an up-to-date mirror), then run vkdoctor again; apt-cache policy "
        "shows what each repository offers.",
    ),
    (fixes.run(str(commands.repair("rpm"))), "sudo rpm --rebuilddb"),
    (
        Remedy(commands=("conda update -p /opt/c -c conda-forge zlib",), text="; or stop it."),
        "conda update -p /opt/c -c conda-forge zlib; or stop it.",
    ),
]


@pytest.mark.parametrize(("fix", "sentence"), CASES, ids=[s[:40] for _, s in CASES])
def test_each_fix_is_what_its_old_sentence_read_as(fix: Remedy, sentence: str) -> None:
    assert fix == remedy_from(sentence)
    assert fix.shown() == remedy_from(sentence).shown()
    assert not any(c.startswith("sudo") for c in fix.commands)


def test_the_table_spells_every_action_for_every_family() -> None:
    assert set(commands.TABLE) == {"dpkg", "pacman", "rpm"}
    for family, m in commands.TABLE.items():
        for value in (m.install, m.reinstall, m.refresh, m.sync_down, m.remove_alone):
            assert value and not value.startswith("sudo"), (family, value)
        assert m.upgrade and m.fix_broken
        assert commands.install(family, "a", "b").endswith(" a b")
    assert commands.install_version("dpkg", "mesa", "1") == "apt install mesa=1"
    assert commands.downgrade("dpkg", "mesa", "1") == "apt install --allow-downgrades mesa=1"
    assert commands.unhold("pacman", "mesa") is None  # an IgnorePkg entry, not a command
    with pytest.raises(ValueError, match="newest"):
        commands.install_version("pacman", "mesa", "1")
    assert commands.sudo_line(commands.upgrade("dpkg")) == (
        "sudo apt update && sudo apt full-upgrade"
    )


def test_a_tree_without_sudo_gets_the_remedy_without_root(tmp_path: Path) -> None:
    tree = Context(root=tmp_path, env={"PATH": "/usr/bin:/bin"})
    sentence = (
        f"sudo apt update && sudo apt --fix-broken install. Then sudo apt full-upgrade. {CAUTION}"
    )
    fix = fixes.with_upgrade("dpkg", fixes.fix_broken("dpkg"))
    bare = remedy_for_tree(tree, fix)
    assert bare == remedy_from(str(for_tree(tree, sentence)))
    assert bare is not None and not bare.needs_root
    assert bare.shown() == (
        f"apt update && apt --fix-broken install && apt full-upgrade. {CAUTION}"
    )
    words = remedy_for_tree(tree, fixes.said("Rebuild it, or sudo pacman -S mesa."))
    assert words == fixes.said("Rebuild it, or pacman -S mesa.")
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/sudo").write_bytes(b"")
    assert remedy_for_tree(tree, fix) == fix
    assert remedy_for_tree(Context(), fix) == fix


def test_the_candidate_that_passed_takes_the_fix_s_place() -> None:
    """verify: the first candidate apt, pacman or dnf accepts replaces the fix in the remedy,
    as the sentence's text replacement did."""
    old = "sudo apt update && sudo apt --fix-broken install"
    chosen = "sudo apt-mark unhold libllvm23 && " + old
    remedy = fixes.with_upgrade("dpkg", fixes.fix_broken("dpkg"))
    before = f"{old}. Then sudo apt full-upgrade. {CAUTION}"
    assert _with_chosen(remedy, old, chosen) == remedy_from(before.replace(old, chosen, 1))
    # a fix in words that was only the fix: the command found in it
    words = "refresh the lists; if not, return it: sudo apt install mesa=1"
    got = _with_chosen(fixes.said(f"{words}."), words, "sudo apt install mesa=1")
    assert got == remedy_from("sudo apt install mesa=1.")
    # words the fix is not in (a rebuild, capitalised): the command goes first
    rebuild = "rebuild mesa-git against the installed LLVM, or sudo pacman -S mesa"
    text = "Rebuild mesa-git against the installed LLVM, or sudo pacman -S mesa."
    got = _with_chosen(fixes.said(text), rebuild, "sudo pacman -S mesa")
    assert got == remedy_from(f"sudo pacman -S mesa. {text}")
    # -Syu to -Syuu
    got = _with_chosen(fixes.done(fixes.upgrade("pacman")), "sudo pacman -Syu", "sudo pacman -Syuu")
    assert got == remedy_from("sudo pacman -Syuu.")
