"""A layer is a suspect like a driver: a real layer built with gcc that drops vkCmdDispatch,
installed where users put implicit layers, makes the probe compute wrong numbers; vkdoctor
re-runs the probe without the layers, names the guilty one with the disable it just proved, and
the printed fix makes the next check green."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_json

from vkdoctor.children import probe_report

DATA = Path(__file__).parent / "data"
LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


@pytest.fixture(scope="module", params=["DROP_DISPATCH", "DROP_SUBMITS"])
def drop_layer(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """The layer (vkCmdDispatch a no-op, or submits without their command buffers) in
    XDG_DATA_HOME/vulkan/implicit_layer.d, checked with vulkaninfo first."""
    flag = request.param
    root = tmp_path_factory.mktemp("droplayer")
    lib = root / "libdrop_dispatch.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-D{flag}", "-o", str(lib), str(DATA / "drop_layer.c")],
        check=True,
    )
    folder = root / "share" / "vulkan" / "implicit_layer.d"
    folder.mkdir(parents=True)
    layer = {
        "name": f"VK_LAYER_TEST_{flag.lower()}",
        "type": "GLOBAL",
        "library_path": str(lib),
        "api_version": "1.3.0",
        "implementation_version": "1",
        "description": "drops compute work",
        "disable_environment": {f"DISABLE_{flag}": "1"},
    }
    manifest = folder / "drop.json"
    manifest.write_text(json.dumps({"file_format_version": "1.1.0", "layer": layer}))
    env = {"XDG_DATA_HOME": str(root / "share"), "VK_DRIVER_FILES": LVP_MANIFEST}
    seen = subprocess.run(
        ["vulkaninfo", "--summary"],
        check=False,
        env={"PATH": "/usr/bin:/bin", **env, "VK_LOADER_DEBUG": "layer"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seen.returncode == 0 and str(manifest) in seen.stdout + seen.stderr
    return {**env, "manifest": str(manifest), "name": layer["name"], "off": f"DISABLE_{flag}"}


def test_a_layer_that_drops_dispatches_is_named_and_its_disable_makes_it_green(drop_layer):
    env = {k: v for k, v in drop_layer.items() if k.isupper()}
    name = drop_layer["name"]
    proc, doc = run_json(["check", "--cpu", "--select", "VKR001"], env=env, timeout=300)
    assert proc.returncode == 1
    cause, consequence = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert cause["severity"] == "fail"
    assert name in cause["title"] and "passed without it" in cause["title"]
    assert drop_layer["manifest"] in cause["message"]
    assert cause["fix"]["commands"] == [f"export {drop_layer['off']}=1"]
    localised = cause["evidence"]["localised"]
    assert localised["culprit"]["name"] == name
    assert [t["status"] for t in localised["tried"]][-1] == "pass"
    assert all(t["status"] != "pass" for t in localised["tried"][:-1])
    assert len(localised["tried"]) <= len(localised["suspects"])
    assert consequence["severity"] == "info" and "consequence" in consequence["title"]
    # the printed disable, run: the next check is green
    proc, doc = run_json(
        ["check", "--cpu", "--select", "VKR001"],
        env={**env, drop_layer["off"]: "1"},
        timeout=300,
    )
    assert proc.returncode == 0
    (vkr,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert vkr["severity"] == "ok" and "localised" not in vkr["evidence"]


@pytest.mark.parametrize("reason", sorted(probe_report._REMEDY))
@pytest.mark.parametrize("requested", [{}, {"cpu": True}, {"gpu": True}, {"adapter": "x"}])
def test_no_fix_under_check_tells_the_user_to_run_check(reason, requested):
    """Under `vkdoctor check` the fix never sends the user to the command they just ran."""
    for status in ("crash", "no-adapter", "fail"):
        probe = {"status": status, "reason": reason, "requested": requested}
        made = probe_report.remedy(probe, in_check=True)
        assert made is None or "`vkdoctor check`" not in made.shown(), made


def test_a_failure_no_layer_explains_says_what_was_tried():
    """The probe hangs past a --timeout far below lavapipe's few seconds: turning the layers off
    does not help, and the failure says so before it suggests anything else."""
    env = {"VK_DRIVER_FILES": LVP_MANIFEST}
    proc, doc = run_json(["check", "--cpu", "--select", "VKR001", "--timeout", "0.5"], env=env)
    assert proc.returncode == 1
    (vkr,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert vkr["severity"] == "fail" and vkr["evidence"]["status"] == "timeout"
    localised = vkr["evidence"]["localised"]
    assert localised["culprit"] is None
    assert [t["status"] for t in localised["tried"]] == ["timeout"]
    assert "turned off in turn, the probe still failed" in vkr["message"]
    assert "without VK_LAYER_MESA_device_select: timeout" in vkr["message"]


def test_an_explicit_layer_that_vk_instance_layers_enables_is_a_suspect_too(drop_layer, tmp_path):
    """The same layer as an explicit layer, turned on by VK_INSTANCE_LAYERS: found, and its fix
    (leave it out of VK_INSTANCE_LAYERS) makes the next check green."""
    folder = tmp_path / "vulkan" / "explicit_layer.d"
    folder.mkdir(parents=True)
    manifest = json.loads(Path(drop_layer["manifest"]).read_text())
    del manifest["layer"]["disable_environment"]
    (folder / "drop.json").write_text(json.dumps(manifest))
    env = {
        "XDG_DATA_HOME": str(tmp_path),
        "VK_DRIVER_FILES": LVP_MANIFEST,
        "VK_INSTANCE_LAYERS": drop_layer["name"],
    }
    proc, doc = run_json(["check", "--cpu", "--select", "VKR001"], env=env, timeout=300)
    assert proc.returncode == 1
    cause, _ = (f for f in doc["findings"] if f["code"] == "VKR001")
    assert cause["evidence"]["localised"]["culprit"]["name"] == drop_layer["name"]
    assert cause["title"].startswith(f"The explicit layer {drop_layer['name']} breaks compute")
    assert cause["fix"]["commands"] == ["unset VK_INSTANCE_LAYERS"]
    del env["VK_INSTANCE_LAYERS"]
    proc, doc = run_json(["check", "--cpu", "--select", "VKR001"], env=env, timeout=300)
    assert proc.returncode == 0


def test_diff_offers_the_layer_one_machine_loads_as_the_reason(drop_layer, tmp_path):
    """Two real reports, one taken with the dropping layer in XDG_DATA_HOME and one without:
    `diff` names the layer (loaded on B only, with its disable) among the causes, in text and in
    the JSON `causes`."""
    from conftest import run_vkdoctor

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    env_b = {k: v for k, v in drop_layer.items() if k in ("XDG_DATA_HOME", "VK_DRIVER_FILES")}
    env_a = {"VK_DRIVER_FILES": env_b["VK_DRIVER_FILES"]}
    run_vkdoctor(["check", "--cpu", "--json", str(a)], env=env_a)
    run_vkdoctor(["check", "--cpu", "--json", str(b)], env=env_b)
    proc = run_vkdoctor(["diff", str(a), str(b), "--format", "json"])
    assert proc.returncode == 1, proc.stderr
    causes = json.loads(proc.stdout)["causes"]
    name = drop_layer["name"]
    assert any(c.startswith(f"implicit layer {name} is loaded on B only") for c in causes), causes
    assert any(f"off with {drop_layer['off']}=1" in c for c in causes), causes
    text = run_vkdoctor(["diff", str(a), str(b)], env={"COLUMNS": "80"}).stdout
    assert f"implicit layer {name}" in text
