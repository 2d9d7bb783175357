"""VKR002 against the real loader and the real wgpu: a driver that reports no Vulkan conformance
(real lavapipe behind a wrapper built here, tests/data/nonconformant_icd.c) is listed by the loader
and hidden by wgpu, which says why at debug level."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, clean_env, run_json, vulkaninfo

LVP = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


@pytest.fixture(scope="module")
def nonconformant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nonconformant")
    lib = root / "libnonconformant_icd.so"
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-O1",
            "-o",
            str(lib),
            str(REPO / "tests/data/nonconformant_icd.c"),
            "-ldl",
        ],
        check=True,
        timeout=60,
    )
    manifest = root / "nonconformant_icd.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(lib), "api_version": "1.3.0"},
            }
        )
    )
    return manifest


def _wgpu_vulkan_adapters(env: dict[str, str]) -> list[str]:
    code = (
        "import json, wgpu; print(json.dumps([a.info['device'] for a in "
        "wgpu.gpu.enumerate_adapters_sync() if a.info['backend_type'] == 'Vulkan']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=clean_env(env),
        timeout=120,
        check=True,
    )
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def _finding(doc: dict, code: str) -> dict:
    (found,) = [f for f in doc["findings"] if f["code"] == code]
    return found


def test_a_device_wgpu_hides_is_the_cause_of_no_adapter(nonconformant: Path) -> None:
    env = {"VK_DRIVER_FILES": str(nonconformant)}
    real = vulkaninfo(env).stdout.decode()
    assert "conformanceVersion = 0.0.0.0" in real and "llvmpipe" in real
    assert _wgpu_vulkan_adapters(env) == []
    proc, doc = run_json(["check", "--cpu", "--select", "VKT,VKR"], env=env)
    assert proc.returncode == 1
    hidden = _finding(doc, "VKR002")
    assert hidden["severity"] == "fail"
    (entry,) = hidden["evidence"]["hidden"]
    assert entry["device"].startswith("llvmpipe") and entry["manifests"] == [str(nonconformant)]
    assert entry["wgpu_reason"] == "Adapter is not Vulkan compliant"
    assert "conformance version of 0.0.0.0" in hidden["message"]
    probe = _finding(doc, "VKR001")
    assert probe["severity"] == "info" and probe["evidence"]["explained_by"] == "VKR002"
    # the fix: a conformant driver for the device (here the real lavapipe)
    fixed = {"VK_DRIVER_FILES": LVP}
    assert _wgpu_vulkan_adapters(fixed)
    proc, doc = run_json(["check", "--cpu", "--select", "VKT,VKR"], env=fixed)
    assert proc.returncode == 0
    assert _finding(doc, "VKR002")["severity"] == "ok"


def test_a_hidden_twin_beside_a_listed_device_is_a_warning(nonconformant: Path) -> None:
    env = {"VK_DRIVER_FILES": f"{nonconformant}:{LVP}"}
    assert len(_wgpu_vulkan_adapters(env)) == 1
    proc, doc = run_json(["check", "--cpu", "--select", "VKT,VKR"], env=env)
    assert proc.returncode == 0
    hidden = _finding(doc, "VKR002")
    assert hidden["severity"] == "warn"
    assert "1 of the 2 devices named llvmpipe" in hidden["message"]
    assert _finding(doc, "VKR001")["severity"] == "ok"
