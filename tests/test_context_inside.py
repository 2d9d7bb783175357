"""`Context.inside`, the one way back from a host path to the path a tree's programs see."""

from __future__ import annotations

from pathlib import Path

from vkdoctor.model.context import Context


def test_a_link_followed_in_a_tree_reads_back_inside_it(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libvulkan.so.1.3.239").write_bytes(b"\x7fELF")
    (lib / "libvulkan.so.1").symlink_to("/usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.239")
    ctx = Context(root=root)
    real = ctx.resolve("/usr/lib/x86_64-linux-gnu/libvulkan.so.1")
    assert real == lib / "libvulkan.so.1.3.239"  # the absolute link stayed in the tree
    assert ctx.inside(real) == "/usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.239"
    assert ctx.inside(ctx.under("/etc/vulkan")) == "/etc/vulkan"
    assert ctx.inside(root) == "/"


def test_outside_the_tree_or_on_the_machine_a_path_is_itself(tmp_path: Path) -> None:
    ctx = Context(root=tmp_path / "tree")
    assert ctx.inside(Path("/usr/lib/libc.so.6")) == "/usr/lib/libc.so.6"
    assert Context().inside(Path("/usr/lib/libc.so.6")) == "/usr/lib/libc.so.6"
