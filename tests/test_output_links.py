"""A report file's path through another user's symbolic link: never followed.

Done for real: a second user (made with useradd) plants links in a sticky, world-writable
folder, as anyone can in /tmp, and vkdoctor runs as root with `--json`, `--junit`,
`$GITHUB_STEP_SUMMARY` and `--github-env` naming them. Followed, such a link let that user have
root replace /root's files (or /etc/shadow) with a report, or write one into /dev/port.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_vkdoctor

FAST = ["check", "--no-probe", "--select", "VKH001"]
ATTACKER = "vkdoctor-mallory"


@pytest.fixture(scope="module")
def attacker() -> str:
    try:
        pwd.getpwnam(ATTACKER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", ATTACKER], check=True)
    return ATTACKER


@pytest.fixture
def sticky(tmp_path: Path) -> Iterator[Path]:
    """A folder like /tmp: mode 1777, owned by root."""
    top = Path(tempfile.mkdtemp(prefix="vkdoctor-sticky-", dir="/tmp"))
    top.chmod(0o1777)
    yield top
    shutil.rmtree(top)


def _plant(user: str, target: Path, link: Path) -> None:
    subprocess.run(["runuser", "-u", user, "--", "ln", "-s", str(target), str(link)], check=True)
    assert link.lstat().st_uid == pwd.getpwnam(user).pw_uid


def test_another_users_link_is_not_followed_by_any_report_file(
    attacker: str, sticky: Path, tmp_path: Path
) -> None:
    names = ("r.json", "r.xml", "summary.md")
    victims = [tmp_path / f"victim-{name}" for name in names]
    for name, victim in zip(names, victims, strict=True):
        victim.write_text("precious\n")
        victim.chmod(0o600)
        _plant(attacker, victim, sticky / name)
    proc = run_vkdoctor(
        [
            *FAST,
            "--format",
            "github",
            *("--json", str(sticky / "r.json")),
            *("--junit", str(sticky / "r.xml")),
        ],
        env={"GITHUB_STEP_SUMMARY": str(sticky / "summary.md")},
        timeout=60,
    )
    for victim in victims:
        assert victim.read_text() == "precious\n" and (victim.stat().st_mode & 0o777) == 0o600
    assert proc.returncode == 2, proc.stderr
    for name in names:
        assert f"{sticky / name} is a symbolic link in {sticky}" in proc.stderr, proc.stderr
        assert f"belongs to {attacker}" in proc.stderr
        assert (sticky / name).is_symlink()  # left as it was


def test_github_env_through_another_users_link_is_refused(
    attacker: str, sticky: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    _plant(attacker, victim, sticky / "env")
    from vkdoctor.model.githubenv import GithubEnvError, export_overlay
    from vkdoctor.model.report_records import OverlayReport

    overlay = OverlayReport(dir="/x", ld_library_path="/x", libraries=(), applied=True, exec="")
    with pytest.raises(GithubEnvError, match=r"is a symbolic link in .*not followed"):
        export_overlay(overlay, str(sticky / "env"))
    assert victim.read_text() == "precious\n"


def test_own_links_and_plain_paths_still_work(sticky: Path, tmp_path: Path) -> None:
    """root's own link in the same sticky folder is followed (the target replaced, its mode
    kept); a new file gets the umask's mode, and no temp file is left."""
    real = tmp_path / "reports" / "r.json"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    (sticky / "mine.json").symlink_to(real)
    proc = run_vkdoctor([*FAST, "--json", str(sticky / "mine.json")], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(real.read_text())["status"] == "ok"
    assert (real.stat().st_mode & 0o777) == 0o640
    fresh = sticky / "fresh.json"
    proc = run_vkdoctor([*FAST, "--json", str(fresh)], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (fresh.stat().st_mode & 0o777) == 0o666 & ~_umask()
    assert sorted(p.name for p in sticky.iterdir()) == ["fresh.json", "mine.json"]


def test_a_planted_temp_name_is_never_written_through(attacker: str, sticky: Path) -> None:
    """The temporary file next to the report has a name nobody can plant first: a link at
    every name a pid could give is never followed."""
    victim = sticky / "victim"
    victim.write_text("precious\n")
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    here = os.getpid()
    for pid in range(here, min(here + 400, top)):
        os.symlink(victim, sticky / f".r.json.{pid}.tmp")
    proc = run_vkdoctor([*FAST, "--json", str(sticky / "r.json")], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert json.loads((sticky / "r.json").read_text())["status"] == "ok"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
