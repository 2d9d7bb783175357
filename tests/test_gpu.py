"""--gpu and VKT005 on this machine's real drivers: Mesa's GPU drivers load and give no device,
lavapipe gives a CPU one. vulkaninfo, in the same environment, is the oracle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, clean_env, run_json, run_vkdoctor, validate_report, vulkaninfo

from vkdoctor.checkargs import request_from_argv


def _finding(doc: dict, code: str) -> dict:
    (found,) = [f for f in doc["findings"] if f["code"] == code]
    return found


def _device_types(summary: str) -> set[str]:
    return {
        line.split("=", 1)[1].strip()
        for line in summary.splitlines()
        if line.strip().startswith("deviceType")
    }


def test_gpu_gate_fails_when_only_lavapipe_computes() -> None:
    real = vulkaninfo({})
    assert real.returncode == 0 and _device_types(real.stdout.decode()) == {
        "PHYSICAL_DEVICE_TYPE_CPU"
    }
    proc, doc = run_json(["check", "--gpu"])
    assert proc.returncode == 1, proc.stderr
    gpu = _finding(doc, "VKT005")
    assert gpu["severity"] == "fail"
    assert gpu["evidence"]["gpu_required"] is True
    named = {Path(d["manifest"]).name for d in gpu["evidence"]["gpu_drivers"]}
    assert "radeon_icd.x86_64.json" in named and "lvp_icd.x86_64.json" not in named
    assert gpu["evidence"]["hardware"] == []
    assert "/dev/dri/renderD*" in gpu["message"] and "docker run --gpus all" in gpu["remedy"]
    # the probe found no GPU adapter: that is VKT005's cause, counted once
    probe = _finding(doc, "VKR001")
    assert probe["severity"] == "info" and probe["evidence"]["explained_by"] == "VKT005"
    assert doc["probe"]["status"] == "no-adapter"
    assert doc["probe"]["requested"]["gpu"] is True


def test_without_gpu_a_cpu_only_machine_is_quiet() -> None:
    proc, doc = run_json(["check", "--no-probe", "--select", "VKT"])
    assert proc.returncode == 0, proc.stdout
    gpu = _finding(doc, "VKT005")
    assert gpu["severity"] == "info" and "llvmpipe" in gpu["title"]


def _with_fake_render_node(tmp_path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """`argv` in a mount namespace whose /dev has a /dev/dri/renderD128 no kernel driver
    answers: a GPU node that gives no device, as in a container with the wrong device passed."""
    dev = tmp_path / "dev"
    dev.mkdir(parents=True)
    script = tmp_path / "fake-gpu.sh"
    script.write_text(
        "set -e\n"
        f"mount -t tmpfs tmpfs {dev}\n"
        f"cp -a /dev/. {dev}/ 2>/dev/null || true\n"
        f"mkdir -p {dev}/dri && mknod {dev}/dri/renderD128 c 226 128\n"
        f"mount --bind {dev} /dev\n"
        'exec "$@"\n'
    )
    env = clean_env({"PYTHONPATH": str(REPO)})
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", str(script), *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )


def test_a_gpu_node_without_a_device_is_a_warning(tmp_path: Path) -> None:
    real = _with_fake_render_node(tmp_path / "a", ["vulkaninfo", "--summary"])
    assert real.returncode == 0, real.stderr
    assert _device_types(real.stdout) == {"PHYSICAL_DEVICE_TYPE_CPU"}
    proc = _with_fake_render_node(
        tmp_path / "b",
        [sys.executable, "-m", "vkdoctor", "check", "--no-probe", "--json", "-"],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    validate_report(doc)
    gpu = _finding(doc, "VKT005")
    assert gpu["severity"] == "warn"
    assert gpu["evidence"]["hardware"] == ["/dev/dri/renderD128"]
    assert "VKC002" in gpu["remedy"]
    # --gpu turns the same into the gate's failure
    gate = _with_fake_render_node(
        tmp_path / "c",
        [sys.executable, "-m", "vkdoctor", "check", "--gpu", "--no-probe", "--json", "-"],
    )
    assert gate.returncode == 1
    assert _finding(json.loads(gate.stdout), "VKT005")["severity"] == "fail"


def test_run_probe_gpu_refuses_lavapipe() -> None:
    proc, doc = run_json(["run-probe", "--gpu"])
    assert proc.returncode == 1
    assert doc["probe"]["status"] == "no-adapter"
    assert "GPU adapter" in doc["probe"]["summary"] and "(CPU)" in doc["probe"]["summary"]
    (probe,) = doc["findings"]
    assert "vkdoctor check --gpu" in probe["remedy"]
    # the same probe with --cpu passes: the adapter is there, it just is not a GPU
    assert run_vkdoctor(["run-probe", "--cpu"]).returncode == 0


def test_gpu_and_another_choice_is_a_usage_error() -> None:
    for args in (["run-probe", "--gpu", "--cpu"], ["check", "--gpu", "--adapter", "x"]):
        proc = run_vkdoctor(args)
        assert proc.returncode == 2 and "choose the adapter two ways" in proc.stderr
    assert request_from_argv(["--gpu"]) == request_from_argv(["--gpu"])
    early = request_from_argv(["--gpu", "--timeout", "30"])
    assert early is not None and early.gpu and not early.cpu and "--gpu" in early.argv()
    assert request_from_argv(["--gpu", "--cpu"]) is None
    assert os.environ.get("VK_DRIVER_FILES") is None
