"""A hostile pacman tree cannot block the check or lend it this machine's database.

A package's file list in the tree's local database made a FIFO blocked `pacman -Dk` (and
vkdoctor's own reader) until the timeout; the database's folder made an absolute link was
followed on this machine. pacman is now run only on a database judged inside the tree, and
the check says why it was not.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import run_json
from pkgtrees import arch_skew_tree


def _check(root: Path) -> dict:
    started = time.monotonic()
    proc, doc = run_json(
        ["check", "--root", str(root), "--no-probe", "--select", "VKP,VKL"], timeout=60
    )
    assert time.monotonic() - started < 20
    assert proc.returncode == 1, proc.stderr
    return doc


def test_a_fifo_for_a_file_list_does_not_block_the_check(tmp_path: Path) -> None:
    root = arch_skew_tree(tmp_path)
    [local] = root.glob("var/lib/pacman/local/vulkan-swrast-*")
    (local / "files").unlink()
    os.mkfifo(local / "files")
    doc = _check(root)
    [db] = [f for f in doc["findings"] if f["code"] == "VKP006"]
    assert db["severity"] == "warn", db
    assert f"/{local.relative_to(root)}/files is not a regular file" in db["message"], db


def test_a_database_linked_to_this_machines_is_looked_up_inside_the_tree(tmp_path: Path) -> None:
    root = arch_skew_tree(tmp_path)
    db = root / "var/lib/pacman"
    db.rename(root / "var/lib/pacman.real")
    db.symlink_to("/var/lib/pacman.real")  # absolute: the tree's own folder
    doc = _check(root)
    skew = [f for f in doc["findings"] if f["code"] == "VKP002" and f["severity"] == "fail"]
    assert skew and "vulkan-swrast" in skew[0]["message"], doc["findings"]
