"""VKDOCTOR_SPEED_OFF (vkdoctor.launch.SPEED_OFF), how benchmarks/pieces.py measures what each
speed piece saves: a piece switched off is really off, and the report is the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from test_replay_inputs import _check, _env

from vkdoctor.launch import SPEED_OFF


def _load_test_began(env: dict[str, str], tmp: Path) -> set[str]:
    """How the load test's first child began in a `check --no-probe --json` run."""
    out = tmp / "report.json"
    subprocess.run(
        [sys.executable, "-m", "vkdoctor", "check", "--no-probe", "--json", str(out)],
        env=env,
        cwd=REPO,
        capture_output=True,
        timeout=300,
        check=False,
    )
    doc = json.loads(out.read_text())
    return {
        f["evidence"]["first_child"]
        for f in doc["findings"]
        if f["code"] == "VKT002" and "first_child" in f["evidence"]
    }


def test_pieces_switched_off_are_off_and_the_report_is_the_same(tmp_path: Path) -> None:
    on = _env(tmp_path / "on")
    off = {**_env(tmp_path / "off"), SPEED_OFF: "zygote,factcache,offload,replay"}
    assert _load_test_began(on, tmp_path) == {"forked"}
    assert _load_test_began(off, tmp_path) == {"started"}  # no zygote
    on_runs = [_check(on) for _ in range(4)]
    off_runs = [_check(off) for _ in range(4)]
    assert any(replayed for _, _, replayed in on_runs)
    assert not any(replayed for _, _, replayed in off_runs)
    assert (tmp_path / "on" / "cache" / "vkdoctor" / "facts").is_dir()
    assert not (tmp_path / "off" / "cache" / "vkdoctor" / "facts").exists()  # no fact cache
    assert {(code, out) for code, out, _ in on_runs + off_runs} == {on_runs[0][:2]}
    assert on_runs[0][0] == 0
