"""apt-get -s as the judge of a fix, on this machine's own apt (the live path), and the words a
fix for a --root tree is given in."""

from __future__ import annotations

from pathlib import Path

from vkdoctor.model.context import Context
from vkdoctor.packages.simulate import first_that_works, simulate
from vkdoctor.packages.verify import fix_of, for_tree

LIVE = Context(env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})


def test_a_reinstall_of_the_loader_passes_the_live_simulation():
    sim = simulate(LIVE, "sudo apt install --reinstall libvulkan1", ["libvulkan1"])
    assert sim.ran and sim.ok, sim
    assert sim.commands == ("apt-get -s -q -o Debug::NoLocking=1 install --reinstall libvulkan1",)
    assert [i.split()[0] for i in sim.installs] == ["libvulkan1"]
    assert sim.tree is None
    assert sim.summary().startswith("Checked with apt-get -s: it installs libvulkan1 ")


def test_a_fix_that_removes_the_loader_is_rejected_and_the_next_one_taken():
    chosen, tried = first_that_works(
        LIVE,
        iter(["sudo apt remove libvulkan1", "sudo apt install --reinstall libvulkan1"]),
        ["mesa-vulkan-drivers", "libvulkan1"],
    )
    assert [s.ok for s in tried] == [False, True]
    assert "libvulkan1" in tried[0].removes
    assert tried[0].why.startswith("would remove ") and "libvulkan1" in tried[0].why
    assert chosen is tried[1]


def test_a_fix_apt_refuses_is_rejected_with_apt_s_words():
    sim = simulate(LIVE, "sudo apt install no-such-package-vkdoctor", ["libvulkan1"])
    assert sim.ran and not sim.ok
    assert "Unable to locate package no-such-package-vkdoctor" in sim.why


def test_what_apt_cannot_simulate_is_said_to_be_unverified():
    sim = simulate(LIVE, "sudo ppa-purge ppa:kisak/kisak-mesa", ["libvulkan1"])
    assert not sim.ran
    assert sim.summary() == (
        "The fix is unverified: apt-get -s cannot simulate `ppa-purge ppa:kisak/kisak-mesa`."
    )
    skipped = simulate(LIVE, "sudo apt update && sudo apt install --reinstall libvulkan1", [])
    assert skipped.ok and skipped.skipped == ("apt update (the lists as last refreshed)",)


def test_fix_of_reads_the_last_fix_of_a_message():
    text = "x needs y. Fix: sudo apt install mesa-vulkan-drivers=22.3.6-1+deb12u2. Then more."
    assert fix_of(text) == "sudo apt install mesa-vulkan-drivers=22.3.6-1+deb12u2"
    assert fix_of("no fix here.") is None


def test_a_tree_without_sudo_gets_its_fix_without_sudo(tmp_path: Path):
    tree = Context(root=tmp_path, env={"PATH": "/usr/bin:/bin"})
    fix = "sudo apt update && sudo apt --fix-broken install"
    assert for_tree(tree, fix) == "apt update && apt --fix-broken install"
    assert for_tree(tree, "sudo-rs stays; pseudo apt too") == "sudo-rs stays; pseudo apt too"
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/sudo").write_bytes(b"")
    assert for_tree(tree, fix) == fix
    assert for_tree(LIVE, fix) == fix
