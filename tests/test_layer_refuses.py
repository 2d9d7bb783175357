"""A layer that neither crashes nor hangs but refuses: a real layer built with gcc whose
vkCreateDevice (an implicit layer where users put them) or vkCreateInstance (an explicit layer a
shell profile enables through VK_INSTANCE_LAYERS) returns VK_ERROR_INITIALIZATION_FAILED. The
real loader is the oracle (vulkaninfo fails with the layer, works with its disable); vkdoctor
names the layer as the one failure, the probe's failure is only its consequence, and the
printed fix makes the next check green."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trixieloader
from conftest import REPO, clean_env, run_json, validate_report

DATA = Path(__file__).parent / "data"
LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


def _vulkaninfo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["vulkaninfo", "--summary"],
        check=False,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module", params=["REFUSE_DEVICE", "REFUSE_INSTANCE"])
def refusing_layer(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    flag = request.param
    root = tmp_path_factory.mktemp("refusinglayer")
    lib = root / "librefuse.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-D{flag}", "-o", str(lib), str(DATA / "refusing_layer.c")],
        check=True,
    )
    name = f"VK_LAYER_TEST_{flag.lower()}"
    layer = {
        "name": name,
        "type": "GLOBAL",
        "library_path": str(lib),
        "api_version": "1.3.0",
        "implementation_version": "1",
        "description": "refuses",
    }
    env = {"XDG_DATA_HOME": str(root / "share"), "VK_DRIVER_FILES": LVP_MANIFEST}
    if flag == "REFUSE_DEVICE":
        folder = root / "share" / "vulkan" / "implicit_layer.d"
        layer["disable_environment"] = {f"DISABLE_{flag}": "1"}
    else:
        folder = root / "share" / "vulkan" / "explicit_layer.d"
        env["VK_INSTANCE_LAYERS"] = name
    folder.mkdir(parents=True)
    (folder / "refuse.json").write_text(
        json.dumps({"file_format_version": "1.1.0", "layer": layer})
    )
    assert _vulkaninfo(env).returncode != 0, "the real loader must fail with the layer in"
    return {
        **env,
        "name": name,
        "call": "vkCreateDevice" if "DEVICE" in flag else "vkCreateInstance",
    }


def _apply(cause: dict[str, Any], env: dict[str, str], name: str) -> dict[str, str]:
    """The printed fix, followed: its commands run as a shell would run them (export/unset),
    or, for a layer that VK_INSTANCE_LAYERS enables, its words (take the name out)."""
    env = dict(env)
    if cause["fix"] is None:
        assert cause["remedy"] == f"remove {name} from VK_INSTANCE_LAYERS"
        env["VK_INSTANCE_LAYERS"] = ":".join(
            n for n in env["VK_INSTANCE_LAYERS"].split(":") if n != name
        )
        return env
    for command in cause["fix"]["commands"]:
        word, _, rest = str(command).partition(" ")
        if word == "export":
            var, _, value = shlex.split(rest)[0].partition("=")
            env[var] = value
        else:
            assert word == "unset", command
            env.pop(rest, None)
    return env


def test_a_refusing_layer_is_the_one_failure_and_its_fix_works(refusing_layer):
    env = {k: v for k, v in refusing_layer.items() if k.isupper()}
    proc, doc = run_json(["check", "--cpu"], env=env, timeout=300)
    assert proc.returncode == 1
    failures = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert [f["code"] for f in failures] == ["VKT003"], [f["title"] for f in failures]
    (cause,) = failures
    assert refusing_layer["name"] in cause["title"] and refusing_layer["call"] in cause["title"]
    assert "implicit layer" not in cause["message"]
    (probe,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    # passed with the layer off: the proof, the layer's consequence, not a second failure
    assert probe["severity"] == "info" and probe["evidence"]["status"] == "pass"
    fixed = _apply(cause, env, refusing_layer["name"])
    assert fixed != env
    assert _vulkaninfo(fixed).returncode == 0
    proc, doc = run_json(["check", "--cpu"], env=fixed, timeout=300)
    assert proc.returncode == 0, [f["title"] for f in doc["findings"] if f["severity"] == "fail"]


def test_the_32_bit_half_of_a_multiarch_layer_is_no_warning(tmp_path):
    """Steam's layout: a 32-bit and a 64-bit overlay, one disable variable for both. The 64-bit
    loader skips the 32-bit library at INFO; a warning whose fix is that shared variable would
    turn the working 64-bit layer off too."""
    folder = tmp_path / "share" / "vulkan" / "implicit_layer.d"
    folder.mkdir(parents=True)
    off = {"DISABLE_VK_LAYER_TEST_overlay_1": "1"}
    for bits, extra in (("32", ["-m32"]), ("64", [])):
        lib = tmp_path / f"overlay{bits}.so"
        source = str(DATA / "refusing_layer.c")
        subprocess.run(["gcc", *extra, "-shared", "-fPIC", "-o", str(lib), source], check=True)
        layer = {
            "name": f"VK_LAYER_TEST_overlay_{bits}",
            "type": "GLOBAL",
            "library_path": str(lib),
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "overlay",
            "disable_environment": off,
        }
        manifest = {"file_format_version": "1.1.0", "layer": layer}
        (folder / f"overlay_{bits}.json").write_text(json.dumps(manifest))
    env = {"XDG_DATA_HOME": str(tmp_path / "share"), "VK_DRIVER_FILES": LVP_MANIFEST}
    seen = _vulkaninfo({**env, "VK_LOADER_DEBUG": "all"})
    assert seen.returncode == 0
    assert 'layer "VK_LAYER_TEST_overlay_32" was wrong bit-type' in seen.stdout + seen.stderr
    proc, doc = run_json(["check", "--cpu", "--select", "VKI,VKL,VKT003"], env=env)
    assert proc.returncode == 0 and doc["status"] == "ok", [
        f["title"] for f in doc["findings"] if f["severity"] in ("warn", "fail")
    ]
    (half,) = [f for f in doc["findings"] if f["code"] == "VKI002" and "overlay_32" in f["title"]]
    assert half["severity"] == "info" and half["fix"] is None


def test_a_layer_that_crashes_at_exit_is_blamed_for_that_call(tmp_path):
    """MangoHud-like: the work is done, then vkDestroyInstance crashes every program. The load
    test names the call that was in flight (it said vkCreateDevice, the last one it announced),
    and the layer's disable makes the next check green."""
    lib = tmp_path / "libexitcrash.so"
    source = str(DATA / "refusing_layer.c")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-DCRASH_DESTROY_INSTANCE", "-o", str(lib), source],
        check=True,
    )
    folder = tmp_path / "share" / "vulkan" / "implicit_layer.d"
    folder.mkdir(parents=True)
    layer = {
        "name": "VK_LAYER_TEST_exit_crash",
        "type": "GLOBAL",
        "library_path": str(lib),
        "api_version": "1.3.0",
        "implementation_version": "1",
        "description": "crashes at exit",
        "disable_environment": {"DISABLE_EXIT_CRASH": "1"},
    }
    (folder / "exit.json").write_text(json.dumps({"file_format_version": "1.1.0", "layer": layer}))
    env = {"XDG_DATA_HOME": str(tmp_path / "share"), "VK_DRIVER_FILES": LVP_MANIFEST}
    seen = _vulkaninfo(env)
    assert seen.returncode == -11  # SIGSEGV (its buffered output dies with it)
    proc, doc = run_json(["check", "--cpu", "--select", "VKT003"], env=env)
    assert proc.returncode == 1
    (cause,) = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert "VK_LAYER_TEST_exit_crash" in cause["title"]
    assert "in vkDestroyInstance" in cause["message"], cause["message"]
    fixed = _apply(cause, env, "VK_LAYER_TEST_exit_crash")
    assert _vulkaninfo(fixed).returncode == 0
    proc, doc = run_json(["check", "--cpu", "--select", "VKT003"], env=fixed)
    assert proc.returncode == 0


def test_under_trixies_loader_a_layer_added_by_the_newer_variable_that_refuses_a_device():
    """Debian trixie's 1.4.309 reads VK_ADD_IMPLICIT_LAYER_PATH: a layer added there that
    refuses vkCreateDevice fails every program under it (vulkaninfo, the oracle); vkdoctor,
    run under that loader, names it as the one failure and its disable makes both pass."""
    trixie = trixieloader.trixie_loader()
    root = Path(tempfile.mkdtemp(prefix="refuse-trixie-"))
    try:
        lib = root / "librefuse.so"
        source = str(DATA / "refusing_layer.c")
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-DREFUSE_DEVICE", "-o", str(lib), source], check=True
        )
        layer = {
            "name": "VK_LAYER_TEST_refuse_added",
            "type": "GLOBAL",
            "library_path": str(lib),
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "refuses",
            "disable_environment": {"DISABLE_REFUSE_ADDED": "1"},
        }
        (root / "layers").mkdir()
        manifest = {"file_format_version": "1.1.0", "layer": layer}
        (root / "layers" / "refuse.json").write_text(json.dumps(manifest))
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(root),
            "VK_DRIVER_FILES": LVP_MANIFEST,
            "VK_ADD_IMPLICIT_LAYER_PATH": str(root / "layers"),
        }
        info = ["vulkaninfo", "--summary"]
        assert trixieloader.run(trixie, info, env, timeout=60).returncode != 0
        doc = _check_under(trixie, env, 1)
        failed = [f for f in doc["findings"] if f["severity"] == "fail"]
        assert [f["code"] for f in failed] == ["VKT003"], [f["title"] for f in failed]
        assert "vkCreateDevice" in failed[0]["title"]
        assert failed[0]["fix"]["commands"] == ["export DISABLE_REFUSE_ADDED=1"]
        fixed = {**env, "DISABLE_REFUSE_ADDED": "1"}
        assert trixieloader.run(trixie, info, fixed, timeout=60).returncode == 0
        _check_under(trixie, fixed, 0)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check_under(loader: trixieloader.TrixieLoader, env: dict[str, str], rc: int) -> Any:
    """`vkdoctor check --cpu --json -` under `loader`, which must exit `rc`; its report."""
    full = {**clean_env(env), "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "vkdoctor", "check", "--cpu", "--json", "-"]
    proc = trixieloader.run(loader, argv, full)
    doc = json.loads(proc.stdout)
    validate_report(doc)
    assert proc.returncode == rc, [f["title"] for f in doc["findings"] if f["severity"] == "fail"]
    return doc
