"""The real load test against real misbehaving drivers built with gcc, and the real lavapipe."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from conftest import run_json, vulkaninfo
from pkgtools import icd_manifest

from vkdoctor.children.loadtest import (
    Prediction,
    TargetOutcome,
    apply_event,
    classify,
    disagreements,
    parse_line,
    run_load_test,
)
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model import Severity

DATA = Path(__file__).resolve().parent / "data"
LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
INTEL_MANIFEST = "/usr/share/vulkan/icd.d/intel_icd.x86_64.json"
DEVICE_SELECT = "/usr/share/vulkan/implicit_layer.d/VkLayer_MESA_device_select.json"


def manifest_target(path: str) -> LoadTarget:
    doc = json.loads(Path(path).read_text())
    return LoadTarget(
        kind="driver",
        name=Path(path).name,
        manifest=path,
        dlopen_name=doc["ICD"]["library_path"],
    )


def layer_target(path: str) -> LoadTarget:
    layer = json.loads(Path(path).read_text())["layer"]
    return LoadTarget(
        kind="layer", name=layer["name"], manifest=path, dlopen_name=layer["library_path"]
    )


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LoadTarget]:
    """Driver libraries and their manifests: one per way of misbehaving."""
    root = tmp_path_factory.mktemp("fake-icds")
    out = {}
    for flag in ("CTOR_SEGV", "CTOR_HANG", "GIPA_ABORT", "MISSING_DEP"):
        lib = root / f"libvulkan_{flag.lower()}.so"
        define = [] if flag == "MISSING_DEP" else [f"-D{flag}"]
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-O1", *define, "-o", str(lib), str(DATA / "fake_icd.c")],
            check=True,
            timeout=60,
        )
        if flag == "MISSING_DEP":
            subprocess.run(
                ["patchelf", "--add-needed", "libvkdoctor_absent.so.7", str(lib)],
                check=True,
                timeout=60,
            )
        manifest = root / f"{flag.lower()}_icd.json"
        manifest.write_text(
            json.dumps(
                {
                    "file_format_version": "1.0.0",
                    "ICD": {"library_path": str(lib), "api_version": "1.3.0"},
                }
            )
        )
        out[flag] = LoadTarget(
            kind="driver", name=manifest.name, manifest=str(manifest), dlopen_name=str(lib)
        )
    return out


def descendants() -> list[psutil.Process]:
    return psutil.Process().children(recursive=True)


def test_crash_hang_abort_and_lavapipe_in_one_bounded_run(fakes):
    lvp = manifest_target(LVP_MANIFEST)
    layer = layer_target(DEVICE_SELECT)
    targets = [
        fakes["CTOR_SEGV"],
        lvp,
        fakes["CTOR_HANG"],
        fakes["MISSING_DEP"],
        fakes["GIPA_ABORT"],
        layer,
    ]
    start = time.monotonic()
    run = run_load_test(
        targets, env=dict(os.environ), cwd=Path.cwd(), step_timeout=2.0, total_timeout=30.0
    )
    elapsed = time.monotonic() - start
    segv, lvp_out, hang, missing, abort, layer_out = run.outcomes

    assert segv.dlopen == "crash" and segv.signal == "SIGSEGV"
    assert hang.dlopen == "timeout" and hang.signal is None
    assert abort.dlopen == "ok" and abort.instance == "crash" and abort.signal == "SIGABRT"
    assert missing.dlopen == "failed"
    assert (
        missing.dlerror
        == "libvkdoctor_absent.so.7: cannot open shared object file: No such file or directory"
    )
    assert lvp_out.dlopen == "ok" and lvp_out.instance == "ok" and lvp_out.vk_result == 0
    assert len(lvp_out.devices) == 1
    device = lvp_out.devices[0]
    assert device.name.startswith("llvmpipe") and device.type == "cpu"
    assert device.vendor_id == "0x10005" and device.driver_name == "llvmpipe"
    assert device.driver_info and device.driver_info.startswith("Mesa ")
    assert layer_out.dlopen == "ok" and layer_out.instance == "ok" and layer_out.devices
    assert run.loader_version and run.loader_version.startswith("1.")
    # one child at first, then one more after each crash or hang with targets left
    assert run.children == 4
    assert run.stopped is None
    # the hang costs one step timeout; everything else is quick
    assert elapsed < 2.0 + 6.0
    assert descendants() == []

    verdicts = {
        o.target.name: classify(o, others=[LVP_MANIFEST], loader_version=run.loader_version)
        for o in run.outcomes
    }
    v = verdicts["ctor_segv_icd.json"]
    assert v.severity is Severity.FAIL and v.kind == "crash"
    assert "SIGSEGV" in v.message and "constructors" in v.message
    assert v.remedy and v.remedy.shown().startswith(
        "export VK_LOADER_DRIVERS_DISABLE=ctor_segv_icd.json"
    )
    v = verdicts["ctor_hang_icd.json"]
    assert v.severity is Severity.FAIL and v.kind == "timeout" and "hung" in v.message
    v = verdicts["gipa_abort_icd.json"]
    assert v.kind == "crash" and "SIGABRT" in v.message and "vkCreateInstance" in v.message
    v = verdicts["missing_dep_icd.json"]
    assert v.severity is Severity.FAIL and v.kind == "dlopen-failed"
    assert "libvkdoctor_absent.so.7: cannot open shared object file" in v.message
    v = verdicts["lvp_icd.x86_64.json"]
    assert v.severity is Severity.OK and v.kind == "device" and "llvmpipe" in v.title
    assert verdicts[layer.name].severity is Severity.OK


def test_global_bound_stops_the_run_and_reports_the_rest(fakes):
    targets = [fakes["CTOR_HANG"], manifest_target(LVP_MANIFEST)]
    start = time.monotonic()
    run = run_load_test(
        targets, env=dict(os.environ), cwd=Path.cwd(), step_timeout=10.0, total_timeout=1.0
    )
    assert time.monotonic() - start < 4.0
    hang, lvp = run.outcomes
    assert hang.dlopen == "timeout"
    assert run.stopped and "time bound (1 s)" in run.stopped
    assert lvp.dlopen == "not-run" and lvp.reason == run.stopped
    assert classify(lvp).kind == "not-run"
    assert descendants() == []


def test_cancel_kills_the_child_and_removes_its_directory(fakes):
    """`vkdoctor check` starts the load test before the overlay is planned, and cancels it when
    the checks are to run in the overlay's environment instead."""
    from vkdoctor.children.loadtest import LoadTest

    test = LoadTest(
        [fakes["CTOR_HANG"]], env=dict(os.environ), cwd=Path.cwd(), step_timeout=30.0
    ).start()
    child = test._child
    assert child is not None
    logdir = test._logdir
    assert logdir.is_dir() and [p.pid for p in descendants()] == [child.proc.pid]
    test.cancel()
    assert child.proc.returncode == -signal.SIGKILL
    assert not logdir.exists()
    assert descendants() == []


def test_each_instance_sees_only_its_own_manifest(tmp_path):
    """The loader re-reads VK_DRIVER_FILES and rescans on every vkCreateInstance in one process."""
    intel, lvp = manifest_target(INTEL_MANIFEST), manifest_target(LVP_MANIFEST)
    env = {**os.environ, "VK_LOADER_DEBUG": "driver"}
    run = run_load_test([intel, lvp], env=env, cwd=tmp_path, step_timeout=10.0, total_timeout=30.0)
    assert run.children == 1
    intel_out, lvp_out = run.outcomes
    for outcome, other in ((intel_out, lvp), (lvp_out, intel)):
        log = outcome.output["instance"]
        assert f"Found ICD manifest file {outcome.target.manifest}" in log
        assert other.manifest not in log
    # No Intel hardware here: intel loads, creates an instance, sees no device.
    assert intel_out.instance == "ok" and intel_out.devices == ()
    verdict = classify(intel_out)
    assert verdict.severity is Severity.INFO and verdict.kind == "no-device"
    assert lvp_out.devices and lvp_out.devices[0].type == "cpu"


def test_wrong_class_driver_is_info(tmp_path):
    lib = tmp_path / "libvulkan_i386.so"
    src = tmp_path / "i386.c"
    src.write_text("int vkdoctor_i386_driver;\n")  # no headers: no 32-bit libc needed
    subprocess.run(
        ["gcc", "-m32", "-shared", "-fPIC", "-nostdlib", "-o", str(lib), str(src)],
        check=True,
        timeout=60,
    )
    target = LoadTarget(
        kind="driver",
        name="i386_icd.json",
        manifest=str(tmp_path / "i386_icd.json"),
        dlopen_name=str(lib),
    )
    run = run_load_test(
        [target], env=dict(os.environ), cwd=tmp_path, step_timeout=10.0, total_timeout=30.0
    )
    (outcome,) = run.outcomes
    assert outcome.dlopen == "failed" and "wrong ELF class: ELFCLASS32" in (outcome.dlerror or "")
    verdict = classify(outcome)
    assert verdict.severity is Severity.INFO and verdict.kind == "wrong-class"


def test_missing_loader_skips_instances_but_still_dlopens(tmp_path):
    lvp = manifest_target(LVP_MANIFEST)
    run = run_load_test(
        [lvp],
        env=dict(os.environ),
        cwd=tmp_path,
        step_timeout=10.0,
        total_timeout=30.0,
        loader="libvulkan_absent.so.9",
    )
    (outcome,) = run.outcomes
    assert run.loader_error and "libvulkan_absent.so.9" in run.loader_error
    assert outcome.dlopen == "ok" and outcome.instance == "skipped"
    assert "could not be loaded" in (outcome.reason or "")


def test_parse_line_and_apply_event_are_strict():
    assert parse_line("garbage") is None
    assert parse_line("[1, 2]") is None
    assert parse_line('{"no": "event"}') is None
    target = LoadTarget(kind="driver", name="x.json", manifest="/x.json", dlopen_name="/x.so")
    outcome = TargetOutcome(target=target)
    outcome = apply_event(
        outcome, {"event": "end", "step": "dlopen", "ok": True, "error": None, "seconds": 0.5}
    )
    assert outcome.dlopen == "ok" and outcome.seconds == {"dlopen": 0.5}
    outcome = apply_event(
        outcome, {"event": "end", "step": "instance", "result": -9, "seconds": 0.1}
    )
    assert outcome.instance == "failed" and outcome.vk_result == -9
    verdict = classify(outcome)
    assert verdict.severity is Severity.WARN and "VK_ERROR_INCOMPATIBLE_DRIVER" in verdict.message
    broken = apply_event(
        TargetOutcome(target=target, dlopen="ok"),
        {"event": "error", "step": "instance", "error": "ValueError: bad"},
    )
    assert broken.finished and broken.instance == "error"
    verdict = classify(broken)
    assert verdict.severity is Severity.ERROR and "ValueError: bad" in verdict.message


def test_remedy_keeps_existing_filters_and_old_loaders():
    target = LoadTarget(
        kind="driver", name="bad.json", manifest="/etc/vulkan/icd.d/bad.json", dlopen_name="/bad.so"
    )
    outcome = TargetOutcome(target=target, dlopen="crash", signal="SIGSEGV")
    v = classify(
        outcome,
        others=["/lvp.json"],
        env={"VK_LOADER_DRIVERS_DISABLE": "nvidia*"},
        loader_version="1.3.239",
    )
    assert v.remedy and v.remedy.shown().startswith(
        "export VK_LOADER_DRIVERS_DISABLE=nvidia*,bad.json"
    )
    # the only driver the loader tries: turning it off is no fix
    v = classify(outcome, loader_version="1.3.239")
    assert v.remedy and v.remedy.shown().startswith("it is the only driver the loader tries")
    v = classify(outcome, others=["/a.json", "/b.json"], loader_version="1.3.204")
    assert v.remedy and v.remedy.shown().startswith("export VK_DRIVER_FILES=/a.json:/b.json")


def test_disagreements_compare_only_real_dlopen_results():
    a = LoadTarget(kind="driver", name="a.json", manifest="/a.json", dlopen_name="/a.so")
    b = LoadTarget(kind="driver", name="b.json", manifest="/b.json", dlopen_name="/b.so")
    c = LoadTarget(kind="driver", name="c.json", manifest="/c.json", dlopen_name="/c.so")
    from vkdoctor.children.loadtest import LoadTestRun

    run = LoadTestRun(
        outcomes=(
            TargetOutcome(
                target=a, dlopen="failed", dlerror="libLLVM.so.23.1: cannot open shared object file"
            ),
            TargetOutcome(target=b, dlopen="ok", instance="ok"),
            TargetOutcome(target=c, dlopen="crash", signal="SIGSEGV"),
        )
    )
    predictions = {
        a: Prediction(loadable=True, reason="every DT_NEEDED resolves"),
        b: Prediction(loadable=True, reason="every DT_NEEDED resolves"),
        c: Prediction(loadable=False, reason="libfoo.so.1 missing"),
    }
    (d,) = disagreements(predictions, run)
    assert d.target == a and not d.loaded and d.kind == "outcome"
    assert "predicted /a.so (a.json) loadable (every DT_NEEDED resolves)" in d.message()
    assert "libLLVM.so.23.1" in d.message()
    other = "libz.so.1: cannot open shared object file: No such file or directory"
    predictions[a] = Prediction(loadable=False, reason=other, error=other)
    (d,) = disagreements(predictions, run)
    assert d.kind == "reason" and "different reasons" in d.message()
    predictions[a] = Prediction(loadable=False, reason="x", error=run.outcomes[0].dlerror)
    assert list(disagreements(predictions, run)) == []


# --- the checks, through the runner, with targets built here (load_targets is the loader's) ---


def run_load_checks(monkeypatch, targets, *, timeout=30.0, predictor=None):
    from vkdoctor.checks import loadtest as checks
    from vkdoctor.facts import loadtest as facts
    from vkdoctor.model.context import Context, Options
    from vkdoctor.runner import run_checks

    monkeypatch.setattr(facts, "targets_of", lambda ctx: tuple(targets))
    ctx = Context(env=dict(os.environ), cwd=Path.cwd(), options=Options(timeout=timeout))
    selected = [checks.DriversLoad, checks.DeviceAvailable, checks.LayersLoad]
    if predictor is not None:

        class Predicted(checks.PredictionAgrees):
            def predictions(self, ctx):
                return predictor

        selected.append(Predicted)
    results = run_checks(ctx, selected)
    return {r.code: r for r in results}


def test_checks_report_each_driver_and_the_device(monkeypatch, fakes):
    lvp = manifest_target(LVP_MANIFEST)
    targets = [
        manifest_target(INTEL_MANIFEST),
        lvp,
        fakes["MISSING_DEP"],
        fakes["GIPA_ABORT"],
        layer_target(DEVICE_SELECT),
    ]
    predictor = {
        fakes["MISSING_DEP"]: Prediction(loadable=True, reason="every DT_NEEDED resolves"),
        lvp: Prediction(loadable=True, reason="every DT_NEEDED resolves"),
    }
    results = run_load_checks(monkeypatch, targets, predictor=predictor)
    drivers = {f.evidence["manifest"]: f for f in results["VKT001"].findings}
    intel = drivers[INTEL_MANIFEST]
    assert intel.severity is Severity.INFO and intel.evidence["verdict"] == "no-device"
    ok = drivers[LVP_MANIFEST]
    assert ok.severity is Severity.OK and "llvmpipe" in ok.message
    assert ok.evidence["devices"][0]["type"] == "cpu"
    missing = drivers[fakes["MISSING_DEP"].manifest]
    assert missing.severity is Severity.FAIL
    assert (
        "dlopen: libvkdoctor_absent.so.7: cannot open shared object file: No such file or directory"
        in missing.message
    )
    aborted = drivers[fakes["GIPA_ABORT"].manifest]
    assert aborted.severity is Severity.FAIL and "SIGABRT" in aborted.title
    assert aborted.fix() and "VK_LOADER_DRIVERS_DISABLE=gipa_abort_icd.json" in aborted.fix()

    (device,) = results["VKT002"].findings
    # llvmpipe is there, but an application would die in gipa_abort first
    assert device.severity is Severity.INFO and "llvmpipe" in device.title
    assert device.title.endswith("but only with gipa_abort_icd.json out of the way")
    assert device.evidence["children"] == 2 and device.evidence["loader_version"].startswith("1.")

    (layer,) = results["VKT003"].findings
    assert layer.severity is Severity.OK and "VK_LAYER_MESA_device_select" in layer.title

    (disagree,) = results["VKT004"].findings
    assert disagree.severity is Severity.WARN
    assert disagree.evidence["predicted_loadable"] is True and disagree.evidence["loaded"] is False
    assert "libvkdoctor_absent.so.7" in disagree.message


def test_no_device_from_any_driver_fails(monkeypatch, fakes):
    results = run_load_checks(monkeypatch, [manifest_target(INTEL_MANIFEST), fakes["MISSING_DEP"]])
    (device,) = results["VKT002"].findings
    assert device.severity is Severity.FAIL and device.title == "No Vulkan device from any driver"
    assert "intel_icd.x86_64.json" in device.message and "missing_dep_icd.json" in device.message
    assert device.fix() and "mesa-vulkan-drivers" in device.fix()
    assert descendants() == []


def test_a_hanging_child_dies_with_vkdoctor(fakes):
    """vkdoctor killed while a driver hangs: the child must not outlive it (PR_SET_PDEATHSIG)."""
    script = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from vkdoctor.loader.targets import LoadTarget\n"
        "from vkdoctor.children.loadtest import LoadTest\n"
        f"t = LoadTarget(kind='driver', name='h.json', manifest='/h.json', dlopen_name={fakes['CTOR_HANG'].dlopen_name!r})\n"
        "test = LoadTest([t], env=dict(os.environ), cwd=Path('/'), step_timeout=60, total_timeout=60).start()\n"
        "print(test._child.proc.pid, flush=True)\n"
        "time.sleep(1.0)\n"
        "os._exit(0)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).resolve().parent.parent,
        check=True,
    )
    pid = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 5
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    assert not alive, f"load test child {pid} outlived its parent"


def test_relative_manifest_is_read_from_the_working_directory(tmp_path):
    """A manifest named relative to the cwd (as VK_DRIVER_FILES allows) is found from ctx.cwd."""
    lvp = manifest_target(LVP_MANIFEST)
    (tmp_path / "mine.json").write_text(Path(LVP_MANIFEST).read_text())
    target = LoadTarget(
        kind="driver", name="mine.json", manifest="mine.json", dlopen_name=lvp.dlopen_name
    )
    run = run_load_test([target], env=dict(os.environ), cwd=tmp_path, total_timeout=30.0)
    (outcome,) = run.outcomes
    assert outcome.instance == "ok" and [d.type for d in outcome.devices] == ["cpu"]


def marked_processes(mark: str) -> list[int]:
    """Processes, anywhere, whose environment carries `mark` (the load test's children inherit it)."""
    pids = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get("LOADTEST_MARK") == mark:
                pids.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return pids


def test_cli_load_test_through_the_real_loader_emulation(fakes):
    """VK_DRIVER_FILES picks the drivers; the loader emulation lists them; the load test loads them."""
    mark = f"vkdoctor-{os.getpid()}-{time.monotonic_ns()}"
    files = [fakes[k].manifest for k in ("CTOR_SEGV", "CTOR_HANG", "MISSING_DEP")] + [LVP_MANIFEST]
    start = time.monotonic()
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKT", "--select", "VKL001", "--timeout", "6"],
        env={"VK_DRIVER_FILES": ":".join(files), "LOADTEST_MARK": mark},
        timeout=60,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr
    assert elapsed < 15
    drivers = {f["evidence"]["name"]: f for f in doc["findings"] if f["code"] == "VKT001"}
    assert list(drivers) == [
        "ctor_segv_icd.json",
        "ctor_hang_icd.json",
        "missing_dep_icd.json",
        "lvp_icd.x86_64.json",
    ]
    segv = drivers["ctor_segv_icd.json"]
    assert segv["severity"] == "fail" and segv["evidence"]["signal"] == "SIGSEGV"
    assert segv["remedy"].startswith("export VK_LOADER_DRIVERS_DISABLE=ctor_segv_icd.json")
    hang = drivers["ctor_hang_icd.json"]
    assert hang["severity"] == "fail" and hang["evidence"]["verdict"] == "timeout"
    missing = drivers["missing_dep_icd.json"]
    assert missing["evidence"]["dlerror"] == (
        "libvkdoctor_absent.so.7: cannot open shared object file: No such file or directory"
    )
    lvp = drivers["lvp_icd.x86_64.json"]
    assert lvp["severity"] == "ok" and lvp["evidence"]["devices"][0]["type"] == "cpu"
    (device,) = [f for f in doc["findings"] if f["code"] == "VKT002"]
    # the device is there, behind two drivers that crash and hang every application
    assert device["severity"] == "info" and device["evidence"]["children"] == 3
    assert device["title"].endswith(
        "but only with ctor_segv_icd.json, ctor_hang_icd.json out of the way"
    )
    (layer,) = [f for f in doc["findings"] if f["code"] == "VKT003"]
    assert layer["severity"] == "ok" and layer["evidence"]["name"] == "VK_LAYER_MESA_device_select"
    # the ld.so emulation predicted the missing library; the real dlopen agrees, word for word
    (agree,) = [f for f in doc["findings"] if f["code"] == "VKT004"]
    assert agree["severity"] == "ok", agree
    assert marked_processes(mark) == []


def test_cli_implicit_layer_that_aborts_in_vkcreateinstance(tmp_path):
    """A broken implicit layer kills every Vulkan program (vulkaninfo too); VKT003 names it."""
    lib = tmp_path / "libVkLayer_vkdoctor_crash.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(lib), str(DATA / "fake_layer.c")],
        check=True,
        timeout=60,
    )
    layers = tmp_path / "share" / "vulkan" / "implicit_layer.d"
    layers.mkdir(parents=True)
    (layers / "crash.json").write_text(
        json.dumps(
            {
                "file_format_version": "1.1.0",
                "layer": {
                    "name": "VK_LAYER_VKDOCTOR_crash",
                    "type": "GLOBAL",
                    "library_path": str(lib),
                    "api_version": "1.3.0",
                    "implementation_version": "1",
                    "description": "aborts in vkGetInstanceProcAddr",
                    "disable_environment": {"VKDOCTOR_NO_CRASH_LAYER": "1"},
                },
            }
        )
    )
    env = {"XDG_DATA_HOME": str(tmp_path / "share"), "VK_DRIVER_FILES": LVP_MANIFEST}
    oracle = vulkaninfo(env)
    assert oracle.returncode == -signal.SIGABRT
    proc, doc = run_json(["check", "--no-probe", "--select", "VKT003"], env=env, timeout=60)
    assert proc.returncode == 1
    layers_found = {f["evidence"]["name"]: f for f in doc["findings"] if f["code"] == "VKT003"}
    crash = layers_found["VK_LAYER_VKDOCTOR_crash"]
    assert crash["severity"] == "fail" and crash["evidence"]["signal"] == "SIGABRT"
    assert crash["evidence"]["instance"] == "crash" and crash["evidence"]["dlopen"] == "ok"
    assert "Every Vulkan application that loads this layer does the same" in crash["message"]
    # the layer's own off switch, which every loader version honours; and it works
    assert crash["remedy"].startswith("export VKDOCTOR_NO_CRASH_LAYER=1")
    assert layers_found["VK_LAYER_MESA_device_select"]["severity"] == "ok"
    fixed = vulkaninfo({**env, "VKDOCTOR_NO_CRASH_LAYER": "1"})
    assert fixed.returncode == 0, fixed.stderr


def test_instance_failure_quotes_the_loaders_reason():
    """Recorded on the H200 machine (docs/gpu-h200.md): the NVIDIA ICD without GLVND's libEGL."""
    from vkdoctor.children.loadtest import loader_errors

    log = (
        "ERROR:            loader_scanned_icd_add: Could not get 'vkCreateInstance' via "
        "'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0\n"
        "ERROR | DRIVER:   vkCreateInstance: Found no drivers!\n"
        "error: XDG_RUNTIME_DIR is invalid or not set in the environment.\n"
    )
    assert loader_errors(log) == [
        "loader_scanned_icd_add: Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr' "
        "for ICD libGLX_nvidia.so.0",
        "vkCreateInstance: Found no drivers!",
    ]


def _nvidia_instance_failure() -> TargetOutcome:
    target = LoadTarget(
        kind="driver",
        name="nvidia_icd.json",
        manifest="/usr/share/vulkan/icd.d/nvidia_icd.json",
        dlopen_name="libGLX_nvidia.so.0",
    )
    return TargetOutcome(
        target=target,
        dlopen="ok",
        instance="failed",
        vk_result=-9,
        output={
            "instance": "ERROR:            loader_scanned_icd_add: Could not get 'vkCreateInstance' "
            "via 'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0\n"
        },
    )


def test_the_only_driver_failing_its_instance_is_not_told_to_disable_itself():
    verdict = classify(_nvidia_instance_failure(), others=(), env={}, loader_version="1.3.239")
    assert verdict.kind == "instance-failed"
    assert (
        "The loader said: loader_scanned_icd_add: Could not get 'vkCreateInstance'"
        in verdict.message
    )
    assert "VK_LOADER_DRIVERS_DISABLE" not in (verdict.remedy.shown() if verdict.remedy else "")
    assert "vkdoctor explain VKC004" in (verdict.remedy.shown() if verdict.remedy else "")
    other = classify(
        _nvidia_instance_failure(),
        others=("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",),
        env={},
        loader_version="1.3.239",
    )
    assert other.remedy is not None
    assert other.remedy.commands == ("export VK_LOADER_DRIVERS_DISABLE=nvidia_icd.json",)
    assert other.remedy.shown() == "export VK_LOADER_DRIVERS_DISABLE=nvidia_icd.json"


def test_a_manifest_that_stops_every_instance_is_one_failure_not_a_passing_load_test(tmp_path):
    """A FIFO named *.json next to lavapipe's manifest: the real loader hangs on it in every
    application, though lavapipe loaded alone works. VKD003 says so; VKT002 must not report a
    device as if all were well (it is skipped, naming VKD003)."""
    from conftest import run_json

    shutil.copy(LVP_MANIFEST, tmp_path / "a_lvp.json")
    os.mkfifo(tmp_path / "z_fifo.json")
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKD003", "--select", "VKT", "--timeout", "20"],
        env={"VK_DRIVER_FILES": str(tmp_path)},
    )
    assert proc.returncode == 1
    assert any(f["code"] == "VKD003" and f["severity"] == "fail" for f in doc["findings"])
    (vkt002,) = [c for c in doc["checks"] if c["code"] == "VKT002"]
    assert vkt002["status"] == "skipped" and "VKD003" in vkt002["skip_reason"]


def test_a_driver_hidden_by_a_variable_is_named_before_any_install_advice(tmp_path):
    """Lavapipe installed but filtered out, or hidden by VK_DRIVER_FILES: VKT002 says which
    variable to unset instead of "install mesa-vulkan-drivers" (which is installed)."""
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKT002"],
        env={"VK_LOADER_DRIVERS_DISABLE": "lvp_icd.x86_64.json"},
    )
    (f,) = [x for x in doc["findings"] if x["code"] == "VKT002"]
    assert f["severity"] == "fail"
    assert f["remedy"].startswith(
        "unset VK_LOADER_DRIVERS_DISABLE (VK_LOADER_DRIVERS_DISABLE=lvp_icd.x86_64.json "
        "filters out the installed lvp_icd.x86_64.json)"
    )
    intel = "/usr/share/vulkan/icd.d/intel_icd.x86_64.json"  # loads, but no device here
    _, doc = run_json(["check", "--no-probe", "--select", "VKT002"], env={"VK_DRIVER_FILES": intel})
    (f,) = [x for x in doc["findings"] if x["code"] == "VKT002"]
    assert f["remedy"].startswith(
        "unset VK_DRIVER_FILES (it replaces the loader's search, which finds "
    )
    assert "lvp_icd.x86_64.json" in f["remedy"].split("), or point it")[0]


def test_devices_behind_a_crashing_driver_get_no_check_mark(fakes):
    """Each driver is loaded alone, so lavapipe shows its device; an application loads them
    all and dies in the crashing one first: VKT002 must not say all is well."""
    env = {"VK_ADD_DRIVER_FILES": fakes["GIPA_ABORT"].manifest}
    proc, doc = run_json(["check", "--no-probe", "--select", "VKT001,VKT002"], env=env, timeout=120)
    assert proc.returncode == 1
    (vkt2,) = [f for f in doc["findings"] if f["code"] == "VKT002"]
    assert vkt2["severity"] == "info"
    assert vkt2["title"].startswith("1 Vulkan device(s): llvmpipe")
    assert vkt2["title"].endswith("but only with gipa_abort_icd.json out of the way")
    assert "crashes it first (VKT001)" in vkt2["message"]
    crash = [
        f
        for f in doc["findings"]
        if f["code"] == "VKT001" and f["evidence"]["name"] == "gipa_abort_icd.json"
    ]
    assert crash and crash[0]["severity"] == "fail"


def test_the_probe_runs_past_a_crashing_driver_and_says_so(fakes):
    """The probe would die in the crashing driver as every Vulkan program does: it runs with the
    loader's filter for it, and the one failure is the load test's."""
    env = {"VK_ADD_DRIVER_FILES": fakes["GIPA_ABORT"].manifest}
    proc, doc = run_json(["check", "--cpu", "--select", "VKT001,VKR001"], env=env, timeout=300)
    assert proc.returncode == 1
    (vkr,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert vkr["severity"] == "info", vkr
    assert vkr["title"] == "Compute probe passed once gipa_abort_icd.json was turned off"
    assert "VK_LOADER_DRIVERS_DISABLE=gipa_abort_icd.json" in vkr["message"]
    # the consequence of VKT001, whose fix (that filter) is given there, once
    assert vkr["remedy"] == "See VKT001." and vkr["evidence"]["explained_by"] == "VKT001"
    assert doc["probe"]["status"] == "pass"
    assert doc["probe"]["disabled"] == {"VK_LOADER_DRIVERS_DISABLE": ["gipa_abort_icd.json"]}
    # the filter is vkdoctor's, not the user's: the probe's variables are the user's own
    assert "VK_LOADER_DRIVERS_DISABLE" not in doc["probe"]["env"]
    failures = [f["code"] for f in doc["findings"] if f["severity"] == "fail"]
    assert failures == ["VKT001"]


def test_a_layer_forced_on_by_a_glob_is_turned_off_by_unsetting_the_glob():
    """VK_LOADER_LAYERS_ENABLE=* forces Mesa's explicit nullhw layer, which segfaults in
    vkCreateDevice on lavapipe, into every program. VK_LOADER_LAYERS_DISABLE cannot take it
    out (the real loader's precedence): the fix and the probe's own filter unset the glob."""
    env = {"VK_LOADER_LAYERS_ENABLE": "*"}
    proc, doc = run_json(["check", "--cpu", "--select", "VKI004,VKT003,VKR001"], env=env)
    assert proc.returncode == 1
    by_code: dict[str, list[dict]] = {}
    for f in doc["findings"]:
        by_code.setdefault(f["code"], []).append(f)
    (crash,) = [f for f in by_code["VKT003"] if f["severity"] == "fail"]
    assert "VK_LAYER_INTEL_nullhw" in crash["title"] and "SIGSEGV" in crash["title"]
    assert crash["remedy"].startswith(
        "unset VK_LOADER_LAYERS_ENABLE, or narrow it so that it no longer matches "
        "VK_LAYER_INTEL_nullhw (VK_LOADER_LAYERS_DISABLE cannot turn off a layer it forces on)"
    )
    assert "reinstall" not in crash["remedy"]
    forced = {f["title"].split()[0]: f["severity"] for f in by_code["VKI004"]}
    assert forced == {"VK_LAYER_INTEL_nullhw": "warn", "VK_LAYER_MESA_overlay": "warn"}
    assert doc["probe"]["status"] == "pass"
    assert doc["probe"]["disabled"] == {"VK_LOADER_LAYERS_ENABLE": ["VK_LAYER_INTEL_nullhw"]}
    (vkr,) = by_code["VKR001"]
    assert vkr["severity"] == "info" and "VK_LOADER_LAYERS_ENABLE unset" in vkr["message"]
    # an exact name is a deliberate choice: information, not a warning
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKI004"],
        env={"VK_LOADER_LAYERS_ENABLE": "VK_LAYER_MESA_overlay"},
    )
    (f,) = doc["findings"]
    assert f["severity"] == "info" and f["title"].startswith("VK_LAYER_MESA_overlay is in every")


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 130)], ids=["term", "int"]
)
def test_a_stopped_vkdoctor_takes_its_hanging_probe_child_with_it(fakes, sig, code):
    """A cancelled CI job sends SIGTERM to vkdoctor alone (the probe child has its own session,
    so that a hang can be killed as a group): the child must not live on. Ctrl-C exits 130."""
    from conftest import REPO, clean_env

    env = clean_env({"VK_ADD_DRIVER_FILES": fakes["CTOR_HANG"].manifest, "PYTHONPATH": str(REPO)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "vkdoctor", "run-probe", "--timeout", "120"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal's foreground program has it: started from a background job of a
        # shell without job control (nohup ... &), SIGINT would come ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    me = psutil.Process(proc.pid)
    deadline = time.monotonic() + 30
    while not me.children() and time.monotonic() < deadline:
        time.sleep(0.1)
    children = me.children(recursive=True)
    assert children, "the probe child did not start"
    time.sleep(1.0)  # in the driver's hanging constructor by now
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code
    if sig == signal.SIGINT:
        assert "vkdoctor: interrupted" in err
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []


def test_a_load_test_child_that_cannot_start_is_said_as_such(monkeypatch):
    """Not "ran out of time": the interpreter could not be started (a user who may not run it)."""
    import vkdoctor.children.loadtest as lt

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/venv/bin/python")

    monkeypatch.setattr(lt, "_spawn", refuse)
    results = run_load_checks(monkeypatch, [manifest_target(LVP_MANIFEST)])
    (device,) = results["VKT002"].findings
    assert device.severity is Severity.WARN
    assert device.title == "The load test could not run"
    assert "cannot start the load test child" in device.message
    assert "Permission denied" in device.message


def test_a_failure_left_to_the_library_findings_stays_a_failure_when_they_do_not_run():
    """`check --select VKT` as a gate: "as the library findings predicted" would make the one
    failure vanish when those findings are not part of the run."""
    import os as _os

    from conftest import run_json

    lvp = _os.path.realpath("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so")
    env: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        drv = Path(tmp) / "libvulkan_lvp.so"
        subprocess.run(["cp", lvp, str(drv)], check=True)
        subprocess.run(
            ["patchelf", "--add-needed", "libvkdoctor_absent.so.3", str(drv)], check=True
        )
        manifest = Path(tmp) / "lvp_broken.json"
        manifest.write_text(
            json.dumps(
                {
                    "file_format_version": "1.0.0",
                    "ICD": {"library_path": str(drv), "api_version": "1.3.0"},
                }
            )
        )
        env["VK_DRIVER_FILES"] = str(manifest)
        proc, doc = run_json(["check", "--no-probe", "--select", "VKT001,VKT002"], env=env)
        assert proc.returncode == 1
        sev = {f["code"]: f["severity"] for f in doc["findings"]}
        assert sev == {"VKT001": "fail", "VKT002": "fail"}
        # with the library checks in the run, they have the failure and VKT says so
        proc, doc = run_json(["check", "--no-probe", "--select", "VKL,VKT001,VKT002"], env=env)
        sev = {
            f["code"]: f["severity"]
            for f in doc["findings"]
            if f["code"] in ("VKT001", "VKT002", "VKL002")
        }
        assert sev == {"VKL002": "fail", "VKT001": "info", "VKT002": "info"}


def test_under_a_selection_without_the_load_test_the_crash_is_the_probes_failure(fakes):
    env = {"VK_ADD_DRIVER_FILES": fakes["GIPA_ABORT"].manifest}
    proc, doc = run_json(["check", "--cpu", "--select", "VKR001"], env=env, timeout=300)
    assert proc.returncode == 1
    (vkr,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert vkr["severity"] == "fail"
    assert vkr["title"] == "Compute probe passed only with gipa_abort_icd.json turned off"
    proc, doc = run_json(["check", "--no-probe", "--select", "VKT002"], env=env, timeout=300)
    assert proc.returncode == 1
    (vkt,) = [f for f in doc["findings"] if f["code"] == "VKT002"]
    assert vkt["severity"] == "fail" and "dies in gipa_abort_icd.json first" in vkt["title"]


def test_a_truncated_driver_is_predicted_to_crash_as_it_really_does(tmp_path):
    """A copy of lavapipe cut short (a full disk during an install, an interrupted download):
    ld.so maps it by its headers and the process dies with SIGBUS, which is what VKL001 says
    and what the real load test sees."""
    lib = tmp_path / "libvulkan_lvp.so"
    shutil.copy("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so", lib)
    os.truncate(lib, 2_000_000)
    manifest = tmp_path / "cut.json"
    manifest.write_text(icd_manifest(str(lib)))
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKL001,VKT001"],
        env={"HOME": str(tmp_path), "VK_DRIVER_FILES": str(manifest)},
    )
    assert proc.returncode == 1
    (predicted,) = [f for f in doc["findings"] if f["code"] == "VKL001" and f["severity"] == "fail"]
    assert predicted["title"] == f"cut.json: {lib} is truncated"
    assert "kills the process with SIGBUS" in predicted["message"]
    (real,) = [f for f in doc["findings"] if f["code"] == "VKT001"]
    assert real["evidence"]["signal"] == "SIGBUS"


def test_a_library_path_that_is_not_utf8_is_loaded_like_any_other(tmp_path):
    """A manifest naming /tmp/.../libvulkan_lvp\\xff.so: the real loader loads it, and so must
    the load test child (it crashed on encoding the name before, reported as the driver's
    crash)."""
    lib = os.fsencode(tmp_path) + b"/libvulkan_lvp\xff.so"
    shutil.copyfile(b"/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so", lib)
    manifest = tmp_path / "icd.json"
    manifest.write_bytes(
        b'{"file_format_version": "1.0.0", "ICD": {"library_path": "'
        + lib
        + b'", "api_version": "1.3.230"}}'
    )
    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(manifest)}
    real = vulkaninfo(env)
    assert real.returncode == 0 and b"llvmpipe" in real.stdout
    proc, doc = run_json(["check", "--no-probe", "--select", "VKT001"], env=env)
    assert proc.returncode == 0, proc.stdout
    (f,) = [f for f in doc["findings"] if f["code"] == "VKT001"]
    assert f["severity"] == "ok" and "llvmpipe" in f["title"]


def test_a_load_test_out_of_time_before_any_driver_confirms_no_device():
    """--timeout too small for even the first dlopen: nothing is known about any device, and a
    preflight must not pass on that (it was a warning, exit 0)."""
    from vkdoctor.checks.loadtest import DeviceAvailable
    from vkdoctor.children.loadtest import LoadTestRun, TargetOutcome
    from vkdoctor.facts.loadtest import load_test
    from vkdoctor.model.context import Context, Options

    stopped = "the load test's time bound (0.1 s) ran out"
    run = LoadTestRun(
        outcomes=(
            TargetOutcome(target=manifest_target(LVP_MANIFEST), dlopen="not-run", reason=stopped),
        ),
        stopped=stopped,
    )
    ctx = Context(env={}, options=Options(timeout=0.1))
    ctx._facts[load_test] = run
    (f,) = DeviceAvailable().run(ctx)
    assert f.severity is Severity.FAIL
    assert f.title.startswith("No Vulkan device confirmed: the load test ran out of time")
    assert f.fix() == "Run again with a larger --timeout (the default is 60 s)."


def test_a_library_cut_inside_its_program_headers_is_a_dlopen_error_as_predicted(tmp_path):
    """Cut at 100 bytes, the program headers themselves are missing: glibc refuses it with
    "cannot read file data" (no crash), and the prediction is that error, not a SIGBUS."""
    lib = tmp_path / "libvulkan_lvp.so"
    lib.write_bytes(Path("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so").read_bytes()[:100])
    manifest = tmp_path / "cut.json"
    manifest.write_text(icd_manifest(str(lib)))
    _proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKL001,VKT001,VKT004"],
        env={"HOME": str(tmp_path), "VK_DRIVER_FILES": str(manifest)},
    )
    (predicted,) = [f for f in doc["findings"] if f["code"] == "VKL001" and f["severity"] == "fail"]
    assert f'"{lib}: cannot read file data"' in predicted["message"]
    (real,) = [f for f in doc["findings"] if f["code"] == "VKT001"]
    assert real["evidence"]["dlerror"] == f"{lib}: cannot read file data"
    assert [f["severity"] for f in doc["findings"] if f["code"] == "VKT004"] == ["ok"]


def test_a_timeout_too_short_to_start_the_child_is_one_failure_with_its_reason(tmp_path):
    """--timeout 0.1: the child cannot even start within its step bound. The reason says so
    (not "stopped answering"), and each "was not load-tested" points at VKT002's failure."""
    from vkdoctor.checks.loadtest import DeviceAvailable
    from vkdoctor.children.loadtest import _child_broke
    from vkdoctor.model import Finding

    assert _child_broke(tmp_path, None, "step", 0.1 / 3) == (
        "the load test child was still starting when its step bound (0.033 s, a third of "
        "--timeout) ran out"
    )
    cause = Finding(
        code="VKT002", severity=Severity.FAIL, title="t", evidence={"out_of_time": True}
    )
    untested = Finding(
        code="VKT001", severity=Severity.WARN, title="t", evidence={"dlopen": "not-run"}
    )
    crashed = Finding(
        code="VKT001", severity=Severity.FAIL, title="t", evidence={"dlopen": "crash"}
    )
    assert DeviceAvailable().explained(untested, cause)
    assert not DeviceAvailable().explained(crashed, cause)


def test_a_bug_of_ours_before_dlopen_is_vkdoctors_error_not_the_drivers_crash():
    """The child could not even pass the name to dlopen (it raised): an internal error that
    says so, not "the driver crashes the process"."""
    from vkdoctor.children.loadtest import apply_event

    outcome = TargetOutcome(target=manifest_target(LVP_MANIFEST))
    broke = apply_event(
        outcome, {"event": "error", "index": 0, "step": "dlopen", "error": "ValueError: nope"}
    )
    assert broke.dlopen == "error" and broke.finished
    verdict = classify(broke)
    assert verdict.severity is Severity.ERROR and verdict.kind == "internal-error"
    assert "ValueError: nope" in verdict.message and "not in the driver" in verdict.message


def test_the_only_driver_crashing_is_one_failure_and_no_fix_disables_it(
    fakes: dict[str, LoadTarget],
) -> None:
    """VK_DRIVER_FILES names one driver, and it crashes: turning it off would leave no Vulkan at
    all, so the fix is the variable; no device and no adapter follow from it, counted once."""
    env = {"VK_DRIVER_FILES": fakes["CTOR_SEGV"].manifest}
    assert vulkaninfo(env).returncode != 0
    proc, doc = run_json(["check", "--cpu"], env=env)
    assert proc.returncode == 1
    failed = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert [f["code"] for f in failed] == ["VKT001"]
    (crash,) = failed
    assert crash["evidence"]["only_driver"] is True
    assert crash["remedy"].startswith(
        f"VK_DRIVER_FILES={fakes['CTOR_SEGV'].manifest} lets the loader try this driver alone: "
        "unset VK_DRIVER_FILES"
    )
    assert "VK_LOADER_DRIVERS_DISABLE" not in crash["remedy"]
    for code in ("VKT002", "VKR001"):
        (f,) = [f for f in doc["findings"] if f["code"] == code]
        assert f["severity"] == "info" and f["evidence"]["explained_by"] == "VKT001"
    # the fix, applied: without the variable the loader's own search finds lavapipe
    assert vulkaninfo({}).returncode == 0
    proc, _ = run_json(["check", "--cpu", "--select", "VKT,VKR"])
    assert proc.returncode == 0


def test_the_early_load_test_takes_the_timeouts_the_command_line_takes() -> None:
    """`start_early` reads --timeout with the bound the command line checks (MAX_TIMEOUT, a
    week): a value past it starts nothing early, and the command refuses it."""
    from conftest import run_vkdoctor

    from vkdoctor.checkargs import MAX_TIMEOUT
    from vkdoctor.checkargs import plain_timeout as plain_check_timeout

    assert plain_check_timeout(["--timeout", f"{MAX_TIMEOUT:g}"]) == MAX_TIMEOUT
    assert plain_check_timeout([f"--timeout={MAX_TIMEOUT + 1:g}"]) is None
    assert plain_check_timeout(["--timeout", "0.05"]) is None
    refused = run_vkdoctor(["check", "--no-probe", "--timeout", f"{MAX_TIMEOUT + 1:g}"])
    assert refused.returncode == 2
    assert f"from 0.1 to {MAX_TIMEOUT:g} (a week)" in refused.stderr


def test_what_the_child_said_while_vkdoctor_was_busy_counts_before_a_bound() -> None:
    """The checks run while the load test does: a child that finished its steps while
    vkdoctor was busy for longer than the step bound is read, not called a hang."""
    from vkdoctor.children.loadtest import LoadTest

    lvp = manifest_target(LVP_MANIFEST)
    test = LoadTest(
        [lvp], env=dict(os.environ), cwd=Path.cwd(), step_timeout=0.5, total_timeout=30.0
    ).start()
    time.sleep(2.0)  # the static checks, on a slow machine
    run = test.result()
    (outcome,) = run.outcomes
    assert run.stopped is None, run.stopped
    assert outcome.dlopen == "ok" and outcome.instance == "ok", outcome
    # the oracle: the real loader lists the same device
    assert outcome.devices[0].name in vulkaninfo({"VK_DRIVER_FILES": LVP_MANIFEST}).stdout.decode()
