"""The probe's pure parts: workgroup-storage accounting, binding splits, stderr parsing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from vkdoctor.children import probe_report
from vkdoctor.children.probe import stages_of, stderr_tail


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "probes" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


wgpu_kernels = _load("wgpu_kernels")
rmsnorm_probe = _load("rmsnorm_probe")

LIMITS = {
    "max-compute-workgroup-storage-size": 32768,
    "max-compute-invocations-per-workgroup": 1024,
    "max-compute-workgroup-size-x": 1024,
    "max-compute-workgroup-size-y": 1024,
    "max-compute-workgroup-size-z": 64,
}


@pytest.mark.parametrize(
    ("name", "storage", "size"),
    [("rmsnorm", 256, [64, 1, 1]), ("reduce", 256, [64, 1, 1]), ("matmul", 0, [8, 8, 1])],
)
def test_shipped_kernels_declare_what_they_need(name, storage, size):
    source = (REPO / "shaders" / f"{name}.wgsl").read_text()
    needs = wgpu_kernels.check_limits(name, source, LIMITS)
    assert needs == {"workgroup_storage_bytes": storage, "workgroup_size": size}


def test_workgroup_storage_over_the_limit_is_refused():
    src = """
    const N: u32 = 1048576u;
    var<workgroup> big: array<f32, N>;
    var<workgroup> flag: u32;
    @compute @workgroup_size(64) fn main() {}
    """
    assert wgpu_kernels.workgroup_storage_bytes(src) == 4 * 1048576 + 4
    with pytest.raises(wgpu_kernels.ShaderLimitError, match="4194308 bytes of workgroup memory"):
        wgpu_kernels.check_limits("big", src, LIMITS)


def test_vec3_arrays_use_their_16_byte_stride_and_unknown_types_are_not_guessed():
    assert wgpu_kernels.workgroup_storage_bytes("var<workgroup> v: array<vec3<f32>, 10>;") == 160
    with pytest.raises(wgpu_kernels.ShaderLimitError, match="cannot size"):
        wgpu_kernels.workgroup_storage_bytes("var<workgroup> s: MyStruct;")


def test_too_many_invocations_are_refused():
    src = "@compute @workgroup_size(32, 32, 2) fn main() {}"
    with pytest.raises(wgpu_kernels.ShaderLimitError, match="2048 invocations"):
        wgpu_kernels.check_limits("wide", src, LIMITS)


def test_binding_split_keeps_offsets_aligned():
    # d = 33: 132-byte rows; alignment 256 needs a multiple of 64 rows
    rows = wgpu_kernels.rows_per_chunk(10_000, 33, 1 << 20, 256)
    assert rows * 132 <= 1 << 20 and (rows * 132) % 256 == 0
    assert wgpu_kernels.rows_per_chunk(4, 4096, 1 << 27, 32) == 4
    with pytest.raises(wgpu_kernels.ShaderLimitError):
        wgpu_kernels.rows_per_chunk(10, 1 << 20, 1 << 20, 32)


def test_stderr_tail_drops_stage_lines_and_counts_known_noise():
    err = (
        "vkdoctor-probe: stage import\n"
        "error: XDG_RUNTIME_DIR is invalid or not set in the environment.\n"
        "vkdoctor-probe: stage enumerate-adapters\n"
        "real problem\n"
    )
    assert stages_of(err) == ["import", "enumerate-adapters"]
    assert stderr_tail(err) == (["real problem"], 1)


def test_error_metrics_floor_nan_and_worst_element():
    import numpy as np

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 16), dtype=np.float32)
    x[1, 5] = 0.0  # an exact zero in the reference: the floor keeps it from dividing by zero
    w = rng.uniform(0.5, 1.5, 16).astype(np.float32)
    ref = wgpu_kernels.rmsnorm_reference(x, w)
    exact = rmsnorm_probe.errors(ref.astype(np.float32), ref)
    assert exact["ok"] and exact["nonfinite"] == 0
    assert 0 < exact["max_rel_err"] < 1e-7 and exact["norm_rel_err"] < 1e-7

    y = ref.astype(np.float32)
    y[2, 3] *= 1.001
    off = rmsnorm_probe.errors(y, ref)
    assert not off["ok"] and off["worst"]["index"] == [2, 3]
    assert off["max_rel_err"] == pytest.approx(1e-3, rel=1e-3)

    y[3, 7] = np.nan  # an element the kernel never wrote
    unwritten = rmsnorm_probe.errors(y, ref)
    assert not unwritten["ok"] and unwritten["nonfinite"] == 1
    assert unwritten["max_rel_err"] is None and unwritten["worst"]["index"] == [3, 7]
    assert unwritten["worst"]["value"] == "nan"


def test_no_adapter_without_a_loader_says_to_install_the_loader(tmp_path):
    """The GPU machine as it comes (docs/gpu-h200.md): no libvulkan.so.1, so wgpu sees nothing."""
    from vkdoctor.checks.probe import ComputeProbe
    from vkdoctor.facts.probe import probe_result
    from vkdoctor.model.context import Context

    ctx = Context(root=tmp_path)  # a tree without libvulkan.so.1
    ctx._facts[probe_result] = {
        "status": "no-adapter",
        "reason": "no-adapter",
        "summary": "no Vulkan adapter; wgpu sees no adapter at all",
        "stage": "enumerate-adapters",
    }
    (finding,) = ComputeProbe().run(ctx)
    # VKH002 names the missing loader and its package: no adapter is its consequence
    assert finding.severity.value == "info"
    assert finding.title.endswith("as VKH002 predicted")
    assert "The Vulkan loader (libvulkan.so.1) is missing" in finding.message
    # its fix is VKH002's (which installs the loader), given once, there
    assert finding.fix() == "See VKH002." and finding.evidence["explained_by"] == "VKH002"
    # without VKH002 in the run (--select VKR), the probe's failure is the one there is
    from vkdoctor.facts.selection import selected_codes

    alone = Context(root=tmp_path)
    alone._facts[probe_result] = ctx._facts[probe_result]
    alone._facts[selected_codes] = frozenset({"VKR001"})
    (finding,) = ComputeProbe().run(alone)
    assert finding.severity.value == "fail"


def test_no_adapter_when_no_driver_will_load_points_at_vkd001(tmp_path):
    """A tree with a loader and no driver manifest: the probe's remedy is VKD001's, not an
    install command for a driver that may well be installed but hidden."""
    import shutil

    from vkdoctor.checks.probe import ComputeProbe
    from vkdoctor.facts.probe import probe_result
    from vkdoctor.model.context import Context

    lib = tmp_path / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    for name in ("libvulkan.so.1", "libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"):
        shutil.copyfile(f"/lib/x86_64-linux-gnu/{name}", lib / name)
    ctx = Context(root=tmp_path)
    ctx._facts[probe_result] = {"status": "no-adapter", "summary": "no Vulkan adapter"}
    (finding,) = ComputeProbe().run(ctx)
    assert "The Vulkan loader will load no driver (VKD001)" in finding.message
    assert (finding.fix() or "").startswith("Fix what VKD001 reports first")


def remedy(probe: dict[str, Any], *, in_check: bool = False) -> str | None:
    """The probe's remedy as the report prints it."""
    made = probe_report.remedy(probe, in_check=in_check)
    return made.shown() if made else None


def test_remedies_name_the_interpreter_and_the_wgpu_lib_path():
    missing = {"status": "error", "reason": "wgpu-missing", "command": ["/opt/py/bin/python3", "x"]}
    assert (
        remedy(missing)
        == "Install wgpu in the Python that runs the probe: `/opt/py/bin/python3 -m pip install wgpu`."
    )
    broken = {"status": "error", "reason": "python-error", "env": {"WGPU_LIB_PATH": "/x.so"}}
    assert (remedy(broken) or "").startswith(
        "unset WGPU_LIB_PATH, or point it at a working libwgpu_native: wgpu-py loads /x.so"
    )
    made = probe_report.remedy(broken)
    assert made is not None and made.commands == ("unset WGPU_LIB_PATH",)
    lib = {"status": "error", "reason": "library-error", "env": {"LD_PRELOAD": "/p.so"}}
    made = probe_report.remedy(lib)
    assert made is not None and made.commands == ("unset LD_PRELOAD",)
    assert made.shown().startswith("unset LD_PRELOAD (LD_PRELOAD=/p.so), or give it only to")


def test_no_adapter_remedy_leads_with_a_variable_that_hides_drivers():
    hidden = {
        "status": "no-adapter",
        "reason": "no-adapter",
        "requested": {"cpu": True},
        "env": {"VK_LOADER_DRIVERS_DISABLE": "lvp_icd.x86_64.json"},
    }
    text = remedy(hidden) or ""
    assert text.startswith(
        "unset VK_LOADER_DRIVERS_DISABLE first, as it may hide an installed driver"
    )
    assert text.index("first") < text.index("install the Vulkan CPU driver")
    # "unset X first, as ...; otherwise install ..." is advice, not a command to run
    made = probe_report.remedy(hidden)
    assert made is not None and made.commands == ()
    plain = {"status": "no-adapter", "reason": "no-adapter", "requested": {"cpu": True}, "env": {}}
    assert (remedy(plain) or "").startswith("Install the Vulkan CPU driver (lavapipe)")


def test_no_adapter_never_advises_installing_an_installed_lavapipe():
    installed = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    hidden = {
        "status": "no-adapter",
        "reason": "no-adapter",
        "requested": {"cpu": True},
        "env": {"VK_DRIVER_FILES": "/nonexistent.json"},
        "lavapipe_manifest": installed,
    }
    text = remedy(hidden) or ""
    assert text.startswith(f"lavapipe is installed ({installed}), but VK_DRIVER_FILES=")
    assert "unset VK_DRIVER_FILES" in text and "Install" not in text
    broken = {**hidden, "env": {}}
    text = remedy(broken, in_check=True) or ""
    assert "gives no Vulkan adapter" in text and "VKT001" in text and "Install" not in text


def test_run_probe_with_lavapipe_hidden_says_it_is_installed():
    """For real: the manifest is on this machine, VK_DRIVER_FILES hides it."""
    import json

    from conftest import run_vkdoctor

    assert Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json").is_file()
    proc = run_vkdoctor(
        ["run-probe", "--cpu", "--json", "-"], env={"VK_DRIVER_FILES": "/nonexistent.json"}
    )
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["probe"]["lavapipe_manifest"] == "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    (finding,) = doc["findings"]
    assert "apt install" not in finding["remedy"] and "unset VK_DRIVER_FILES" in finding["remedy"]
    # the fix, applied: unset, the probe passes
    assert run_vkdoctor(["run-probe", "--cpu"]).returncode == 0


def test_no_cpu_adapter_with_nothing_else_wrong_names_this_distributions_lavapipe(tmp_path):
    """Drivers load and nothing hides one, but no CPU adapter: the one command for this
    distribution, not three distributions' commands."""
    from vkdoctor.checks.probe import ComputeProbe
    from vkdoctor.children.loadtest import LoadTestRun
    from vkdoctor.facts.loadtest import load_test
    from vkdoctor.facts.probe import probe_result
    from vkdoctor.model.context import Context, Options

    ctx = Context(env={"PATH": "/usr/bin:/bin"}, options=Options(cpu=True))
    ctx._facts[probe_result] = {"status": "no-adapter", "summary": "no Vulkan CPU adapter"}
    ctx._facts[load_test] = LoadTestRun(outcomes=())
    (finding,) = ComputeProbe().run(ctx)
    # mesa-vulkan-drivers is installed here (.ci/run installs it): installing it again would
    # do nothing
    assert finding.fix() == (
        "Reinstall lavapipe, the Vulkan CPU driver: sudo apt install --reinstall "
        "mesa-vulkan-drivers."
    )


def test_remedies_blame_what_the_user_chose_first():
    custom = {
        "status": "fail",
        "reason": "ladder",
        "command": ["/py", "probe.py", "--cpu", "--shader-dir", "/my/kernels"],
    }
    assert (remedy(custom) or "").startswith(
        "Check the kernels in /my/kernels (--shader-dir) first"
    )
    broken = {"status": "error", "reason": "library-error", "env": {"WGPU_LIB_PATH": "/x.so"}}
    assert (remedy(broken) or "").startswith(
        "unset WGPU_LIB_PATH, or point it at a working libwgpu_native: wgpu-py loads /x.so"
    )
    system = {"status": "error", "reason": "wgpu-missing", "command": ["/usr/bin/python3", "p"]}
    text = remedy(system) or ""
    assert text.startswith("/usr/bin/python3 is the distribution's Python")
    assert "--python ~/.venvs/wgpu/bin/python" in text


def test_a_probe_crash_names_the_layer_the_load_test_saw_crash():
    from vkdoctor.checks.probe import ComputeProbe
    from vkdoctor.children.loadtest import LoadTestRun, TargetOutcome
    from vkdoctor.facts.loadtest import load_test
    from vkdoctor.facts.probe import probe_result
    from vkdoctor.loader.targets import LoadTarget
    from vkdoctor.model.context import Context

    layer = LoadTarget(
        kind="layer", name="VK_LAYER_X", manifest="/m.json", dlopen_name="libVkLayer_x.so"
    )
    ctx = Context(env={"PATH": "/usr/bin:/bin"})
    ctx._facts[probe_result] = {"status": "crash", "signal": "SIGSEGV", "summary": "segfault"}
    ctx._facts[load_test] = LoadTestRun(
        outcomes=(TargetOutcome(target=layer, dlopen="ok", instance="crash", signal="SIGSEGV"),)
    )
    (finding,) = ComputeProbe().run(ctx)
    assert "The load test saw the layer VK_LAYER_X crash or hang too (VKT003)" in finding.message
    assert (finding.fix() or "").startswith(
        "Turn the layer off first (export VK_LOADER_LAYERS_DISABLE=VK_LAYER_X"
    )


def test_a_library_error_is_ld_sos_line_without_the_banner_around_it():
    banner = (
        "\n\nIMPORTANT: PLEASE READ THIS FOR ADVICE ON HOW TO SOLVE THIS ISSUE!\n\n"
        "Importing the numpy C-extensions failed. This error can happen for\nmany reasons...\n\n"
        "Original error was: /env/lib/libstdc++.so.6: version `CXXABI_1.3.9' not found "
        "(required by /numpy/_multiarray_umath.so)\n"
    )
    try:
        try:
            raise OSError("cannot load")
        except OSError as inner:
            raise ImportError(banner) from inner
    except ImportError as exc:
        line = rmsnorm_probe._dlerror_line(exc)
    assert line == (
        "/env/lib/libstdc++.so.6: version `CXXABI_1.3.9' not found "
        "(required by /numpy/_multiarray_umath.so)"
    )
    assert rmsnorm_probe._dlerror_line(ImportError("No module named 'wgpu'")) is None


def test_a_grandchild_that_keeps_the_pipes_open_does_not_turn_a_result_into_a_hang(tmp_path):
    """A driver may start a process in its own session that inherits the probe's stdout: the
    probe's result is read when the probe exits, not when the pipes close."""
    import json
    import os
    import signal
    import time

    from vkdoctor.children.probe import ProbeRequest, run_probe

    pidfile = tmp_path / "daemon.pid"
    script = tmp_path / "fake_probe.py"
    doc = {"status": "pass", "backend": "vulkan", "adapter": None, "cases": [], "summary": "fake"}
    script.write_text(
        "import json, os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        f"print(json.dumps({doc!r}))\n"
    )
    start = time.monotonic()
    result = run_probe(dict(os.environ), ProbeRequest(script=script, timeout=20))
    try:
        assert result["status"] == "pass" and result["summary"] == "fake", result
        assert time.monotonic() - start < 10
        assert "--parent" not in result["command"]
    finally:
        deadline = time.monotonic() + 5
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
    json.dumps(result)


def test_a_bad_python_interpreter_is_named_as_the_suspect():
    for reason, said in (
        ("spawn-failed", "cannot be started"),
        ("no-output", "wrote no probe result"),
    ):
        text = remedy({"status": "error", "reason": reason, "command": ["/bin/true", "probe.py"]})
        assert text and text.startswith(f"The probe's interpreter /bin/true (--python) {said}")


def test_workgroup_sizes_in_every_wgsl_integer_literal_form():
    src = (
        "const WG: u32 = 0x40u;\nconst N = 8i;\nvar<workgroup> s: array<f32, WG>;\n"
        "@compute @workgroup_size(WG, N, 1) fn main() {}"
    )
    assert wgpu_kernels.workgroup_size(src) == (64, 8, 1)
    assert wgpu_kernels.workgroup_storage_bytes(src) == 256
