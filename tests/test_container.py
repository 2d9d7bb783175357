"""VKC: container capabilities and device-node access, on real trees and a real unprivileged user."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import run_json
from elfbuild import build_lib

from tests.nobody import as_nobody
from vkdoctor.checks.container import GpuDeviceNodes, NvidiaContainerCapabilities
from vkdoctor.model import Finding, Severity
from vkdoctor.model.context import Context
from vkdoctor.runner import run_checks


def _findings(doc, code):
    return [f for f in doc["findings"] if f["code"] == code]


def _nvidia_runtime_tree(root: Path) -> Path:
    """What the NVIDIA container runtime leaves in a container: its device node and /proc entry."""
    (root / "dev").mkdir(parents=True, exist_ok=True)
    (root / "dev" / "nvidiactl").touch()
    (root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (root / "proc" / "driver" / "nvidia" / "version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  Release Build\n"
    )
    return root


def _vkc001(root: Path, **env: str) -> Finding:
    # a tree stands in for this machine's /dev and /proc: the check is run directly, as
    # `check --root` skips it (it judges the live machine)
    (f,) = NvidiaContainerCapabilities().run(Context(root=root, env=env))
    return f


def test_compute_only_container_is_a_loud_failure(tmp_path: Path):
    tree = _nvidia_runtime_tree(tmp_path)
    f = _vkc001(tree, NVIDIA_VISIBLE_DEVICES="all", NVIDIA_DRIVER_CAPABILITIES="compute,utility")
    assert f.severity is Severity.FAIL
    assert "NVIDIA_DRIVER_CAPABILITIES is compute,utility" in f.message
    assert "libGLX_nvidia.so.0" in f.message
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility" in (f.fix() or "")
    assert f.evidence["driver_version"] == "580.159.03"


def test_unset_capabilities_means_the_runtime_default(tmp_path: Path):
    f = _vkc001(_nvidia_runtime_tree(tmp_path), NVIDIA_VISIBLE_DEVICES="0")
    assert f.severity is Severity.FAIL
    assert "unset (the runtime assumes utility,compute)" in f.message


def test_graphics_capability_passes_and_no_gpu_is_not_judged(tmp_path: Path):
    tree = _nvidia_runtime_tree(tmp_path)
    caps = "compute,graphics,utility"
    f = _vkc001(tree, NVIDIA_VISIBLE_DEVICES="all", NVIDIA_DRIVER_CAPABILITIES=caps)
    assert f.severity is Severity.OK
    (res,) = run_checks(Context(env={}), [NvidiaContainerCapabilities])
    assert res.findings[0].severity is Severity.OK


def test_device_nodes_and_container_variables_are_the_live_machines(tmp_path: Path):
    _nvidia_runtime_tree(tmp_path)
    _, doc = run_json(["check", "--no-probe", "--root", str(tmp_path), "--select", "VKC001,VKC002"])
    assert {c["code"]: c["status"] for c in doc["checks"]} == {
        "VKC001": "skipped",
        "VKC002": "skipped",
    }
    assert all("needs the live machine" in c["skip_reason"] for c in doc["checks"])


def test_an_image_variable_without_the_nvidia_runtime_is_no_failure():
    """nvidia/cuda images set NVIDIA_VISIBLE_DEVICES; run without --gpus (as on a CPU runner)
    nothing is mounted, and the capabilities are beside the point: information, not failure."""
    for caps in (
        {},
        {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
        {"NVIDIA_DRIVER_CAPABILITIES": "all"},
    ):
        proc, doc = run_json(
            ["check", "--no-probe", "--select", "VKC001"],
            env={"NVIDIA_VISIBLE_DEVICES": "all", **caps},
        )
        assert proc.returncode == 0
        (f,) = _findings(doc, "VKC001")
        assert f["severity"] == "info"
        assert f["title"].startswith("NVIDIA_VISIBLE_DEVICES is set, but no NVIDIA GPU was given")
        assert "--gpus all" in f["message"]


def test_container_marker_in_a_root_tree(tmp_path: Path):
    (tmp_path / ".dockerenv").touch()
    tree = _nvidia_runtime_tree(tmp_path)
    f = _vkc001(tree, NVIDIA_VISIBLE_DEVICES="all", NVIDIA_DRIVER_CAPABILITIES="compute")
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


def _as_nobody(code: str, root: Path) -> subprocess.CompletedProcess[str]:
    """`python -c CODE ROOT` as the user nobody."""
    return as_nobody(["python", "-c", code, str(root)], timeout=60)


def test_render_node_denied_to_an_unprivileged_user(world_readable_root: Path):
    root = world_readable_root
    _tree_with_render_node(root, 0o660)
    code = (
        "import sys; from pathlib import Path; from vkdoctor.model.context import Context; "
        "from vkdoctor.checks.container import GpuDeviceNodes; "
        "f = list(GpuDeviceNodes().run(Context(root=Path(sys.argv[1]))))[0]; "
        "print(f.severity.value); print(f.message); print(f.fix())"
    )
    proc = _as_nobody(code, root)
    assert proc.returncode == 0, proc.stderr
    sev, message, remedy = proc.stdout.splitlines()[:3]
    assert sev == "fail"
    assert "renderD128 (crw-rw----, uid 0, gid 0)" in message
    assert "usermod -aG render" in remedy


def test_render_node_accessible_and_absent(tmp_path: Path):
    _tree_with_render_node(tmp_path, 0o666)
    (f,) = GpuDeviceNodes().run(Context(root=tmp_path))
    assert f.severity is Severity.OK
    (f,) = GpuDeviceNodes().run(Context(root=tmp_path / "nothing"))
    assert f.severity is Severity.INFO


NVIDIA_ICD = '{"file_format_version": "1.0.1", "ICD": {"library_path": "libGLX_nvidia.so.0", "api_version": "1.4.312"}}'
NVIDIA_LAYERS = (
    '{"file_format_version": "1.0.1", "layers": [{"name": "VK_LAYER_NV_optimus", "type": "INSTANCE",'
    ' "library_path": "libGLX_nvidia.so.0", "api_version": "1.4.312", "implementation_version": "1",'
    ' "description": "NVIDIA Optimus layer", "disable_environment": {"DISABLE_LAYER_NV_OPTIMUS_1": ""}}]}'
)


def _nvidia_tree(root: Path, *, link_icd: bool, egl: bool, lib_link: bool = True) -> None:
    """The H200 machine's layout (docs/gpu-h200.md): the driver under /usr/local/nvidia, its ICD
    manifest there and (optionally) linked into /usr/share/vulkan/icd.d."""
    libdir = root / "usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    shutil.copyfile("/usr/lib/x86_64-linux-gnu/libvulkan.so.1", libdir / "libvulkan.so.1.3.239")
    (libdir / "libvulkan.so.1").symlink_to("libvulkan.so.1.3.239")
    for base in ("libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"):
        shutil.copyfile(f"/lib/x86_64-linux-gnu/{base}", libdir / base)
    build_lib(root / "usr/local/nvidia/lib64/libGLX_nvidia.so.0", soname="libGLX_nvidia.so.0")
    if lib_link:
        # the driver is reached the way the container toolkit arranges it: a link in a system dir
        (libdir / "libGLX_nvidia.so.0").symlink_to("/usr/local/nvidia/lib64/libGLX_nvidia.so.0")
    if egl:
        build_lib(libdir / "libEGL.so.1", soname="libEGL.so.1")
    icd = root / "usr/local/nvidia/share/vulkan/icd.d"
    icd.mkdir(parents=True)
    (icd / "nvidia_icd.json").write_text(NVIDIA_ICD)
    layers = root / "usr/local/nvidia/share/vulkan/implicit_layer.d"
    layers.mkdir(parents=True)
    (layers / "nvidia_layers.json").write_text(NVIDIA_LAYERS)
    if link_icd:
        sys_icd = root / "usr/share/vulkan/icd.d"
        sys_icd.mkdir(parents=True)
        (sys_icd / "nvidia_icd.json").symlink_to(
            "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json"
        )


def test_manifests_outside_the_search_path(tmp_path: Path):
    _nvidia_tree(tmp_path, link_icd=False, egl=True)
    _, doc = run_json(["check", "--no-probe", "--root", str(tmp_path), "--select", "VKC003"])
    found = {f["evidence"]["manifest"]: f for f in _findings(doc, "VKC003")}
    drv = found["/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json"]
    assert drv["severity"] == "warn" and "never reads it" in drv["message"]
    assert (
        "VK_ADD_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json" in drv["remedy"]
    )
    layer = found["/usr/local/nvidia/share/vulkan/implicit_layer.d/nvidia_layers.json"]
    assert layer["severity"] == "info"


def test_a_link_in_a_searched_directory_makes_the_driver_visible(tmp_path: Path):
    _nvidia_tree(tmp_path, link_icd=True, egl=True)
    _, doc = run_json(["check", "--no-probe", "--root", str(tmp_path), "--select", "VKC003"])
    manifests = [f["evidence"].get("manifest") for f in _findings(doc, "VKC003")]
    assert manifests == ["/usr/local/nvidia/share/vulkan/implicit_layer.d/nvidia_layers.json"]


def test_nvidia_driver_without_glvnd_egl_fails_with_the_install_command(tmp_path: Path):
    _nvidia_tree(tmp_path, link_icd=True, egl=False)
    proc, doc = run_json(
        ["check", "--no-probe", "--root", str(tmp_path), "--select", "VKC004", "--select", "VKH002"]
    )
    (f,) = _findings(doc, "VKC004")
    assert proc.returncode == 1, proc.stdout
    assert f["severity"] == "fail"
    assert "libEGL.so.1: cannot open shared object file" in f["message"]
    assert "apt install libegl1" in f["remedy"] and "libglvnd-egl" in f["remedy"]


def test_nvidia_driver_with_glvnd_egl_passes(tmp_path: Path):
    _nvidia_tree(tmp_path, link_icd=True, egl=True)
    _, doc = run_json(
        ["check", "--no-probe", "--root", str(tmp_path), "--select", "VKC004", "--select", "VKH002"]
    )
    (f,) = _findings(doc, "VKC004")
    assert f["severity"] == "ok" and "libEGL.so.1" in f["message"]


def test_driver_found_only_through_ld_library_path_with_a_stale_cache(tmp_path: Path):
    """The H200 machine as it comes: /usr/local/nvidia/lib64 is in ld.so.conf.d, but the cache
    was never rebuilt, so libGLX_nvidia.so.0 resolves only through LD_LIBRARY_PATH."""
    _nvidia_tree(tmp_path, link_icd=True, egl=True, lib_link=False)
    conf = tmp_path / "etc/ld.so.conf.d"
    conf.mkdir(parents=True)
    (tmp_path / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (conf / "000_cuda.conf").write_text("/usr/local/nvidia/lib64\n")
    _, doc = run_json(
        ["check", "--no-probe", "--root", str(tmp_path), "--select", "VKL004"],
        env={"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"},
    )
    (f,) = _findings(doc, "VKL004")
    assert f["severity"] == "warn"
    assert (
        f["title"] == "1 driver library found only through LD_LIBRARY_PATH /usr/local/nvidia/lib64"
    )
    assert "libGLX_nvidia.so.0 (for nvidia_icd.json)" in f["message"]
    assert "the cache is stale" in f["message"]
    assert f["remedy"].startswith("sudo ldconfig")


def test_a_library_the_cache_also_has_is_no_warning(tmp_path: Path):
    """The H200 machine after ldconfig: LD_LIBRARY_PATH finds the driver's libraries first, and
    /etc/ld.so.cache has the same files, so a program without the variable loads them too."""
    _nvidia_tree(tmp_path, link_icd=True, egl=True, lib_link=False)
    conf = tmp_path / "etc/ld.so.conf.d"
    conf.mkdir(parents=True)
    (tmp_path / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (conf / "000_cuda.conf").write_text("/usr/local/nvidia/lib64\n")
    subprocess.run(["/sbin/ldconfig", "-r", str(tmp_path)], check=True, timeout=60)
    listed = subprocess.run(
        ["/sbin/ldconfig", "-p", "-C", str(tmp_path / "etc/ld.so.cache")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "=> /usr/local/nvidia/lib64/libGLX_nvidia.so.0" in listed
    _, doc = run_json(
        ["check", "--no-probe", "--root", str(tmp_path), "--select", "VKL004"],
        env={"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"},
    )
    assert [f["severity"] for f in _findings(doc, "VKL004")] in ([], ["ok"])


def test_a_left_over_nvidia_manifest_is_not_blamed_on_libegl(tmp_path: Path):
    """The manifest is there, the driver library is not (a removed driver): libEGL is beside
    the point, VKL001 and VKD005 say what is wrong."""
    _nvidia_tree(tmp_path, link_icd=True, egl=False)
    (tmp_path / "usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0").unlink()
    (tmp_path / "usr/local/nvidia/lib64/libGLX_nvidia.so.0").unlink()
    _, doc = run_json(["check", "--no-probe", "--root", str(tmp_path), "--select", "VKC004"])
    (f,) = _findings(doc, "VKC004")
    assert f["severity"] == "ok" and f["title"] == "No NVIDIA Vulkan driver library to check"


def test_the_libegl_fix_is_the_trees_own_distributions(tmp_path: Path):
    _nvidia_tree(tmp_path, link_icd=True, egl=False)
    (tmp_path / "etc").mkdir(exist_ok=True)
    (tmp_path / "etc/os-release").write_text("ID=debian\n")
    _, doc = run_json(["check", "--no-probe", "--root", str(tmp_path), "--select", "VKC004"])
    (f,) = _findings(doc, "VKC004")
    assert f["severity"] == "fail" and f["remedy"] == "sudo apt install libegl1"


def test_a_manifest_directory_this_user_cannot_read_is_named_not_reinstalled(
    world_readable_root: Path,
):
    """mode 000 on /usr/share/vulkan/icd.d: the manifests are there, an unprivileged user's
    loader cannot list them. The fix is the mode, not "reinstall, the manifests are gone"."""
    root = world_readable_root
    icd = root / "usr/share/vulkan/icd.d"
    icd.mkdir(parents=True)
    (icd / "lvp_icd.x86_64.json").write_text(NVIDIA_ICD)
    icd.chmod(0)
    code = (
        "import sys; from pathlib import Path; from vkdoctor.model.context import Context; "
        "from vkdoctor.checks.drivers import DriversFound; "
        "f = list(DriversFound().run(Context(root=Path(sys.argv[1]), "
        "env={'HOME': '/nonexistent'})))[0]; print(f.severity.value); print(f.fix())"
    )
    try:
        proc = _as_nobody(code, root)
    finally:
        icd.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    sev, remedy = proc.stdout.splitlines()[:2]
    assert sev == "fail"
    assert remedy == "chmod a+rx /usr/share/vulkan/icd.d (this user cannot read it)"
