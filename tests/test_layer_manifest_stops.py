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


@pytest.mark.parametrize("case", ["truncated loader", "no driver"])
def test_the_probe_after_a_broken_loader_or_no_driver_is_a_consequence(
    tmp_path: Path, case: str
) -> None:
    """A libvulkan.so.1 cut short on LD_LIBRARY_PATH (VKH002), or a VK_DRIVER_FILES that names
    nothing (VKD001): one failure, the cause; the probe's crash or missing adapter is counted
    as its consequence, not as a second failure with a fix of its own."""
    if case == "truncated loader":
        folder = tmp_path / "lib"
        folder.mkdir()
        whole = Path("/usr/lib/x86_64-linux-gnu/libvulkan.so.1").read_bytes()
        (folder / "libvulkan.so.1").write_bytes(whole[:20000])
        env, code = {"LD_LIBRARY_PATH": str(folder)}, "VKH002"
    else:
        env, code = {"VK_DRIVER_FILES": str(tmp_path / "none.json")}, "VKD001"
    proc, doc = run_json(["check", "--cpu"], env=env)
    assert proc.returncode == 1
    failed = [f["code"] for f in doc["findings"] if f["severity"] == "fail"]
    assert failed == [code], failed
    (probe,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert probe["severity"] == "info" and probe["evidence"]["explained_by"] == code
