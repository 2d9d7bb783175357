"""The one mountinfo reader against what the kernel writes for a mount point with a space, a
tab and a backslash in its name (a real tmpfs, mounted in a mount namespace of its own)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from vkdoctor.machine.disk import mount_of
from vkdoctor.model.mountinfo import parse, unescape


def _kernel_line(point: Path) -> str:
    """/proc/self/mountinfo as the kernel writes it inside a namespace where `point` is a
    read-only, noexec tmpfs."""
    script = 'mount -t tmpfs -o ro,noexec none "$1" && cat /proc/self/mountinfo'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(point)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_a_mount_point_with_odd_characters_reads_back_as_its_path(tmp_path: Path) -> None:
    point = tmp_path / "my disk\tb\\x"
    point.mkdir()
    text = _kernel_line(point)
    assert "my\\040disk\\011b\\134x" in text  # the kernel's escapes, so the test means something
    (mine,) = [m for m in parse(text) if m.point == str(point)]
    assert mine.fstype == "tmpfs"
    assert {"ro", "noexec"} <= set(mine.options)
    mount = mount_of(point / "inside", text)
    assert mount is not None
    assert mount.point == str(point)
    assert mount.fstype == "tmpfs"


def test_unescape_leaves_what_is_not_an_octal_escape() -> None:
    assert unescape("/a\\040b") == "/a b"
    assert unescape("/a\\09x") == "/a\\09x"
    assert unescape("/a\\") == "/a\\"
    assert unescape("/plain") == "/plain"


def test_a_line_without_the_separator_has_no_type() -> None:
    (line,) = parse("36 35 98:0 /mnt1 /mnt/x rw,noatime master:1\nshort line\n")
    assert line.point == "/mnt/x"
    assert line.fstype is None
    assert line.options == ("rw", "noatime")
