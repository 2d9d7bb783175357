"""VKC: container capabilities and device-node access, on real trees and a real unprivileged user."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REPO, clean_env, run_json

from vkdoctor.checks.container import GpuDeviceNodes, NvidiaContainerCapabilities
from vkdoctor.context import Context
from vkdoctor.model import Severity
from vkdoctor.runner import run_checks


def _findings(doc, code):
    return [f for f in doc["findings"] if f["code"] == code]


def test_compute_only_container_is_a_loud_failure():
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKC001"],
        env={"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
    )
    (f,) = _findings(doc, "VKC001")
    assert proc.returncode == 1
    assert f["severity"] == "fail"
    assert "NVIDIA_DRIVER_CAPABILITIES is compute,utility" in f["message"]
    assert "libGLX_nvidia.so.0" in f["message"]
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility" in f["remedy"]


def test_unset_capabilities_means_the_runtime_default():
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKC001"], env={"NVIDIA_VISIBLE_DEVICES": "0"}
    )
    (f,) = _findings(doc, "VKC001")
    assert f["severity"] == "fail" and "unset (the runtime assumes utility,compute)" in f["message"]


def test_graphics_capability_passes_and_no_gpu_is_not_judged():
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKC001"],
        env={
            "NVIDIA_VISIBLE_DEVICES": "all",
            "NVIDIA_DRIVER_CAPABILITIES": "compute,graphics,utility",
        },
    )
    assert _findings(doc, "VKC001")[0]["severity"] == "ok"
    (res,) = run_checks(Context(env={}), [NvidiaContainerCapabilities])
    assert res.findings[0].severity is Severity.OK


def test_container_marker_in_a_root_tree(tmp_path: Path):
    (tmp_path / ".dockerenv").touch()
    ctx = Context(
        root=tmp_path,
        env={"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute"},
    )
    (res,) = run_checks(ctx, [NvidiaContainerCapabilities])
    f = res.findings[0]
    assert f.severity is Severity.FAIL and f.evidence["container"] == "docker"
    assert "in this docker container" in f.message


def _tree_with_render_node(root: Path, mode: int) -> Path:
    dri = root / "dev" / "dri"
    dri.mkdir(parents=True)
    node = dri / "renderD128"
    subprocess.run(["mknod", str(node), "c", "226", "128"], check=True)
    node.chmod(mode)
    return node


@pytest.fixture
def world_readable_root():
    # pytest's tmp_path lives under a 0700 directory that nobody cannot enter
    root = Path(tempfile.mkdtemp(prefix="vkdoctor-node-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root)


def test_render_node_denied_to_an_unprivileged_user(world_readable_root: Path):
    root = world_readable_root
    _tree_with_render_node(root, 0o660)
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed for this test"
    code = (
        "import sys; from pathlib import Path; from vkdoctor.context import Context; "
        "from vkdoctor.checks.container import GpuDeviceNodes; from vkdoctor.runner import run_checks; "
        "f = run_checks(Context(root=Path(sys.argv[1])), [GpuDeviceNodes])[0].findings[0]; "
        "print(f.severity.value); print(f.message); print(f.remedy)"
    )
    env = clean_env({"PYTHONPATH": str(REPO)})
    proc = subprocess.run(
        [
            setpriv,
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            sys.executable,
            "-c",
            code,
            str(root),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    sev, message, remedy = proc.stdout.splitlines()[:3]
    assert sev == "fail"
    assert "renderD128 (crw-rw----, uid 0, gid 0)" in message
    assert "usermod -aG render" in remedy


def test_render_node_accessible_and_absent(tmp_path: Path):
    _tree_with_render_node(tmp_path, 0o666)
    (res,) = run_checks(Context(root=tmp_path), [GpuDeviceNodes])
    assert res.findings[0].severity is Severity.OK
    (res,) = run_checks(Context(root=tmp_path / "nothing"), [GpuDeviceNodes])
    assert res.findings[0].severity is Severity.INFO
