"""A layer manifest that makes loader 1.3.239 fail every vkCreateInstance: an explicit one that
nothing enables and an implicit one, each with a JSON syntax error, in the folder a user would
put it (XDG_DATA_HOME). The real loader is the oracle (vulkaninfo fails with
ERROR_OUT_OF_HOST_MEMORY); vkdoctor names the manifest as the one cause, blames no driver,
prints no package fix, counts the probe as its consequence, and after the printed fix (the file
removed) the next check passes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import clean_env, run_json

BROKEN = '{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_broken", '


@pytest.mark.parametrize(("kind", "code"), [("explicit", "VKI004"), ("implicit", "VKI002")])
def test_a_broken_layer_manifest_is_the_one_cause(tmp_path: Path, kind: str, code: str) -> None:
    folder = tmp_path / "data" / "vulkan" / f"{kind}_layer.d"
    folder.mkdir(parents=True)
    manifest = folder / "broken.json"
    manifest.write_text(BROKEN)
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    oracle = subprocess.run(
        ["vulkaninfo", "--summary"],
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert oracle.returncode != 0 and "OUT_OF_HOST_MEMORY" in oracle.stdout + oracle.stderr

    proc, doc = run_json(["check", "--cpu"], env=env)
    assert proc.returncode == 1
    failed = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert [f["code"] for f in failed] == [code], [(f["code"], f["title"]) for f in failed]
    (cause,) = failed
    assert str(manifest) in cause["title"] and "not valid JSON" in cause["title"]
    assert "fix or remove" in cause["remedy"] and str(manifest) in cause["remedy"]
    # no driver is blamed and no package fix is offered
    blamed = [f for f in doc["findings"] if f["code"] in ("VKT001", "VKT002")]
    assert not [f for f in blamed if f["severity"] in ("fail", "warn")]
    assert not [f for f in doc["findings"] if "mesa-vulkan-drivers" in (f["remedy"] or "")]
    (probe,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert probe["severity"] == "info"

    manifest.unlink()
    proc, doc = run_json(["check", "--cpu"], env=env)
    assert proc.returncode == 0, [(f["code"], f["title"]) for f in doc["findings"]]
