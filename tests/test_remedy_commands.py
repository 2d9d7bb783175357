"""A fix's commands, as the JSON gives them, are what to run: run in bash, they make the finding
go away (asked of vkdoctor again, in the shell the commands changed), and the printed fix is
those commands with the sentence that goes with them."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO, clean_env, run_json, validate_report

LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


def findings(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code]


def _after(commands: list[str], env: dict[str, str], args: list[str]) -> dict[str, Any]:
    """The report of `vkdoctor ARGS` started by the shell that ran `commands` first."""
    full = clean_env(env)
    full["PYTHONPATH"] = str(REPO)
    vkdoctor = shlex.join([sys.executable, "-m", "vkdoctor", *args, "--json", "-"])
    script = " && ".join([*commands, f"exec {vkdoctor}"])
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=full, timeout=300, check=False
    )
    doc: dict[str, Any] = json.loads(proc.stdout)
    validate_report(doc)
    return doc


def test_the_renamed_driver_variable_is_both_commands():
    env = {"VK_ICD_FILENAMES": LVP_MANIFEST}
    args = ["check", "--no-probe", "--select", "VKE004"]
    _, doc = run_json(args, env=env)
    (deprecated,) = findings(doc, "VKE004")
    assert deprecated["severity"] == "warn"
    # before, the JSON fix held the export alone: the unset was left in the words
    assert deprecated["fix"] == {
        "commands": [f"export VK_DRIVER_FILES={LVP_MANIFEST}", "unset VK_ICD_FILENAMES"],
        "needs_root": False,
    }
    assert deprecated["remedy"] == (
        f"export VK_DRIVER_FILES={LVP_MANIFEST} && unset VK_ICD_FILENAMES "
        "(VK_DRIVER_FILES needs loader 1.3.207 or newer)"
    )
    (after,) = findings(_after(deprecated["fix"]["commands"], env, args), "VKE004")
    assert after["severity"] == "ok", after


def test_a_layers_disable_variable_is_its_command(tmp_path: Path):
    layers = tmp_path / "data/vulkan/implicit_layer.d"
    layers.mkdir(parents=True)
    manifest = {
        "file_format_version": "1.0.0",
        "layer": {
            "name": "VK_LAYER_TEST_gone",
            "type": "GLOBAL",
            "library_path": str(tmp_path / "libVkLayer_gone.so"),
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "vkdoctor test layer",
            "disable_environment": {"DISABLE_TEST_GONE": "1"},
        },
    }
    (layers / "gone.json").write_text(json.dumps(manifest))
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    args = ["check", "--no-probe", "--select", "VKI002"]
    _, doc = run_json(args, env=env)
    (broken,) = [f for f in findings(doc, "VKI002") if f["severity"] == "warn"]
    # no package owns the manifest: removing it is the lasting fix, the disable the one for a
    # shell (before, the command carried the spaces that set it apart from its note)
    assert broken["fix"] == {"commands": [f"rm {layers / 'gone.json'}"], "needs_root": False}
    assert broken["remedy"] == (
        f"rm {layers / 'gone.json'} (or, only where it is set: export DISABLE_TEST_GONE=1 "
        "(any value, even empty, turns VK_LAYER_TEST_gone off))"
    )
    assert "No package owns the manifest" in broken["message"]
    after = _after(broken["fix"]["commands"], env, args)
    assert [f["severity"] for f in findings(after, "VKI002")] == ["ok"], after["findings"]
