"""VKE009 against the real wgpu-py: what the check says a variable does is what request_adapter
does with it on lavapipe."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import clean_env, run_json

from vkdoctor.machine import wgpuenv

#: request_adapter as a wgpu-py program calls it; prints the backend, or the error's type
_ADAPTER = (
    "import json, wgpu\n"
    "try:\n"
    "    a = wgpu.gpu.request_adapter_sync()\n"
    "    print(json.dumps({'backend': a.info['backend_type'], 'device': a.info['device']}))\n"
    "except Exception as e:\n"
    "    print(json.dumps({'error': type(e).__name__, 'message': str(e)}))\n"
)


def _wgpu_py(env: dict[str, str], tmp_path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _ADAPTER],
        env=clean_env({"HOME": str(tmp_path), **env}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def _vke009(env: dict[str, str], tmp_path) -> tuple[int, list[dict]]:
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKE009,VKT001"], env={"HOME": str(tmp_path), **env}
    )
    return proc.returncode, [f for f in doc["findings"] if f["code"] == "VKE009"]


@pytest.mark.parametrize(
    ("env", "severity", "real"),
    [
        ({"WGPU_BACKEND_TYPE": "Vulkan"}, "info", "Vulkan"),
        # lower case is not a name wgpu-py knows: ignored, it picks Vulkan itself
        ({"WGPU_BACKEND_TYPE": "vulkan"}, "warn", "Vulkan"),
        ({"WGPU_BACKEND_TYPE": "D3D12"}, "fail", "error"),
        ({"WGPU_BACKEND_TYPE": "Metal"}, "fail", "error"),
        ({"WGPUPY_WGPU_ADAPTER_NAME": "llvmpipe"}, "info", "Vulkan"),
        ({"WGPUPY_WGPU_ADAPTER_NAME": "(CPU) via Vulkan"}, "info", "Vulkan"),
        # the match is case-sensitive in wgpu-py
        ({"WGPUPY_WGPU_ADAPTER_NAME": "LLVMPIPE"}, "fail", "error"),
        ({"WGPUPY_WGPU_ADAPTER_NAME": "NVIDIA H200"}, "fail", "error"),
        # only the OpenGL adapter's summary has it: wgpu-py takes that one
        ({"WGPUPY_WGPU_ADAPTER_NAME": "via OpenGL"}, "warn", "OpenGL"),
    ],
)
def test_what_vke009_says_is_what_wgpu_py_does(env, severity, real, tmp_path):
    outcome = _wgpu_py(env, tmp_path)
    if real == "error":
        assert "error" in outcome, outcome
    else:
        assert outcome.get("backend") == real, outcome
    rc, found = _vke009(env, tmp_path)
    (finding,) = found
    assert finding["severity"] == severity, finding
    assert rc == (1 if severity == "fail" else 0)
    if severity == "fail":
        (var,) = env
        assert finding["remedy"].startswith(f"unset {var}")
    if "Adapter with name" in outcome.get("message", ""):
        assert (
            f"Adapter with name '{env['WGPUPY_WGPU_ADAPTER_NAME']}' not found"
            in (finding["message"])
        )


def test_nothing_is_said_when_no_variable_is_set(tmp_path):
    rc, found = _vke009({}, tmp_path)
    assert rc == 0
    assert [f["severity"] for f in found] == ["ok"]


def test_opengl_is_a_warning_that_the_report_does_not_cover_the_program(tmp_path):
    rc, (finding,) = _vke009({"WGPU_BACKEND_TYPE": "OpenGL"}, tmp_path)
    assert rc == 0 and finding["severity"] == "warn"
    assert "OpenGL, not Vulkan" in finding["title"]
    assert finding["remedy"].startswith("unset WGPU_BACKEND_TYPE")


@pytest.mark.parametrize(
    ("value", "effect", "unknown"),
    [
        ("vulkan", "vulkan", ()),
        ("VK", "vulkan", ()),
        ("vulkan,gl", "mixed", ()),
        ("gl", "gl", ()),
        ("dx12,metal", "none", ()),
        ("vulkn", "none", ("vulkn",)),
        ("vulkan, foo", "vulkan", ("foo",)),
    ],
)
def test_rust_wgpu_backend_list(value, effect, unknown):
    choice = wgpuenv.rust_backend({"WGPU_BACKEND": value})
    assert choice is not None
    assert (choice.effect, choice.unknown) == (effect, unknown)


def test_rust_adapter_name_is_case_insensitive_and_warns_at_most(tmp_path):
    rc, (hit,) = _vke009({"WGPU_ADAPTER_NAME": "LLVMPIPE"}, tmp_path)
    assert hit["severity"] == "info" and "llvmpipe" in hit["title"]
    rc, (miss,) = _vke009({"WGPU_ADAPTER_NAME": "radeon"}, tmp_path)
    assert rc == 0 and miss["severity"] == "warn"
    assert "llvmpipe" in miss["message"]


def test_the_adapter_name_makes_wgpu_py_skip_the_backend_variable(tmp_path):
    """wgpu-py returns the named adapter before it reads WGPU_BACKEND_TYPE: D3D12 beside a
    name that matches is no failure."""
    env = {"WGPU_BACKEND_TYPE": "D3D12", "WGPUPY_WGPU_ADAPTER_NAME": "llvmpipe"}
    assert _wgpu_py(env, tmp_path).get("backend") == "Vulkan"
    rc, found = _vke009(env, tmp_path)
    assert rc == 0
    assert [f["severity"] for f in found] == ["info", "info"]
    assert found[0]["title"] == (
        "WGPU_BACKEND_TYPE=D3D12 is not read: WGPUPY_WGPU_ADAPTER_NAME is set"
    )


def test_without_any_vulkan_device_the_name_is_not_blamed(tmp_path):
    """No driver at all (an override that names nothing): VKT002 is the failure, and the name,
    which would match lavapipe, is not."""
    env = {
        "VK_DRIVER_FILES": str(tmp_path / "none.json"),
        "WGPUPY_WGPU_ADAPTER_NAME": "llvmpipe",
    }
    _, (finding,) = _vke009(env, tmp_path)
    assert finding["severity"] == "info"
    assert (
        finding["title"]
        == "WGPUPY_WGPU_ADAPTER_NAME=llvmpipe: no Vulkan device to match it against"
    )


@pytest.mark.parametrize(
    ("value", "severity", "title"),
    [
        (
            "vulkan,",
            "info",
            "WGPU_BACKEND=vulkan,: Rust wgpu programs that read it use Vulkan only",
        ),
        ("", "warn", "WGPU_BACKEND='': Rust wgpu programs that read it get no adapter"),
    ],
)
def test_empty_rust_backend_entries(value, severity, title, tmp_path):
    _, (finding,) = _vke009({"WGPU_BACKEND": value}, tmp_path)
    assert (finding["severity"], finding["title"]) == (severity, title)
