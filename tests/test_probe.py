"""The compute probe on real lavapipe, with no Vulkan driver, with a broken kernel, and with fake
ICDs (built here with gcc) whose vkCreateInstance segfaults or hangs. Each probe run costs about a
second of wgpu cold start, so every run is a module-scoped fixture shared by several tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO, run_vkdoctor, validate_report

LVP_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
HANG_TIMEOUT = 5.0

#: a fake driver whose vkCreateInstance crashes, hangs or aborts (built with -DCREATE_<mode>)
FAKE_ICD_C = REPO / "tests" / "data" / "fake_icd.c"


def _probe_run(args, *, env=None, tmp: Path, timeout: float = 120):
    """run-probe with the JSON report in a file and the text on stdout; both returned."""
    out = tmp / "report.json"
    start = time.monotonic()
    proc = run_vkdoctor(["run-probe", *args, "--json", str(out)], env=env, timeout=timeout)
    wall = time.monotonic() - start
    assert out.exists(), f"no report (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    doc = json.loads(out.read_text())
    validate_report(doc)
    return proc, doc, wall


def _leftovers(pid: int) -> list[psutil.Process]:
    """Processes still alive in the probe's process group (its session leader's pid)."""
    alive = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pid:
                alive.append(p)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return alive


@pytest.fixture(scope="module")
def fake_icds(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("icd")
    src = FAKE_ICD_C
    manifests = {}
    for mode in ("SEGV", "HANG", "ABRT"):
        lib = d / f"libfake_{mode.lower()}.so"
        subprocess.run(
            ["gcc", "-shared", "-fPIC", f"-DCREATE_{mode}", "-o", str(lib), str(src)],
            check=True,
            timeout=60,
        )
        manifest = d / f"fake_{mode.lower()}.json"
        manifest.write_text(
            json.dumps(
                {
                    "file_format_version": "1.0.0",
                    "ICD": {"library_path": str(lib), "api_version": "1.3.0"},
                }
            )
        )
        manifests[mode.lower()] = manifest
    return manifests


@pytest.fixture(scope="module")
def passing(tmp_path_factory):
    return _probe_run(["--cpu"], tmp=tmp_path_factory.mktemp("pass"))


@pytest.fixture(scope="module")
def no_vulkan(tmp_path_factory):
    return _probe_run(
        ["--cpu"],
        env={"VK_DRIVER_FILES": "/nonexistent.json"},
        tmp=tmp_path_factory.mktemp("novk"),
    )


@pytest.fixture(scope="module")
def broken_kernel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("broken")
    shaders = tmp / "shaders"
    shutil.copytree(REPO / "shaders", shaders)
    rms = shaders / "rmsnorm.wgsl"
    good = "inverseSqrt(partial[0] / f32(p.d) + p.eps)"
    text = rms.read_text()
    assert good in text
    store = "y[base + i] = x[base + i] * inv * w[i];"
    assert store in text
    # two bugs: the mean divides by d + 1, so every element is off by sqrt((d + 1) / d); and
    # for odd d the last element of each row is never written, so it stays NaN
    text = text.replace(good, "inverseSqrt(partial[0] / f32(p.d + 1u) + p.eps)")
    text = text.replace(store, "if (i + 1u < p.d || p.d % 2u == 0u) { " + store + " }")
    rms.write_text(text)
    return _probe_run(
        ["--cpu", "--seed", "1234", "--shader-dir", str(shaders)],
        env={"VK_DRIVER_FILES": str(LVP_ICD)},
        tmp=tmp,
    )


@pytest.fixture(scope="module")
def segfault(tmp_path_factory, fake_icds):
    return _probe_run(
        ["--cpu", "--timeout", "30"],
        env={"VK_DRIVER_FILES": str(fake_icds["segv"])},
        tmp=tmp_path_factory.mktemp("segv"),
    )


@pytest.fixture(scope="module")
def hang(tmp_path_factory, fake_icds):
    return _probe_run(
        ["--cpu", "--timeout", str(HANG_TIMEOUT)],
        env={"VK_DRIVER_FILES": str(fake_icds["hang"])},
        tmp=tmp_path_factory.mktemp("hang"),
    )


# --- real lavapipe ---------------------------------------------------------------------------


def test_lavapipe_passes_the_ladder_and_every_case(passing):
    proc, doc, _ = passing
    probe = doc["probe"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["status"] == "ok" and probe["status"] == "pass"
    assert probe["backend"] == "Vulkan"
    assert probe["adapter"]["type"] == "CPU" and "llvmpipe" in probe["adapter"]["name"]
    assert probe["adapter"]["driver"].startswith("Mesa")
    assert [(r["rung"], r["ok"]) for r in probe["ladder"]] == [
        ("add-one", True),
        ("workgroup-reduction", True),
        ("matmul", True),
    ]
    assert probe["ladder"][2]["result_2x2"] == [[10, 13], [22, 29]]
    ds = {c["d"] for c in probe["cases"]}
    assert {1, 8, 16, 32, 4096} <= ds
    assert any(d % 2 == 1 and d > 64 for d in ds), "an odd d larger than the workgroup"
    for case in probe["cases"]:
        assert case["ok"], case
        assert 0 <= case["max_rel_err"] <= 1e-5 and 0 <= case["norm_rel_err"] <= 1e-5
        assert case["nonfinite"] == 0
    assert max(c["max_rel_err"] for c in probe["cases"]) > 0, "errors are measured, not zeros"
    split = [c for c in probe["cases"] if c["timing"]["chunks"] > 1]
    assert split and split[0]["timing"]["chunks"] == 5
    big = next(c for c in probe["cases"] if c["d"] == 4096 and c["timing"]["chunks"] == 1)
    assert big["rows"] >= 512 and big["timing"]["gbps"] > 0
    assert big["timing"]["bytes"] == (2 * big["rows"] * 4096 + 4096) * 4
    assert isinstance(probe["seed"], int)
    (finding,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert finding["severity"] == "ok" and finding["title"] == "Compute probe passed"
    assert "llvmpipe" in finding["message"] and "on Vulkan" in finding["message"]


def test_lavapipe_text_shows_adapters_ladder_cases_and_verdict(passing):
    proc, doc, _ = passing
    out = proc.stdout
    assert "adapters seen:" in out
    assert "* Vulkan  CPU" in out and "(used)" in out
    assert "OpenGL" in out, "the GL adapter is listed, not used"
    assert "matmul               ok  [[10, 13], [22, 29]]" in out
    assert "512x4096" in out and "GB/s" in out
    assert f"seed {doc['probe']['seed']}" in out
    assert out.rstrip().endswith("vkdoctor: OK")


def test_lavapipe_stderr_noise_is_counted_not_shown(passing):
    probe = passing[1]["probe"]
    # the tests run without XDG_RUNTIME_DIR: Mesa's device-select layer makes libwayland complain
    assert probe["stderr_noise_lines"] >= 1
    assert not any("XDG_RUNTIME_DIR" in line for line in probe["stderr_tail"])
    assert probe["stage"] == "rmsnorm:300x4096 split" and probe["finished"] is True


# --- no Vulkan driver: the OpenGL fallback is refused ------------------------------------------


def test_no_vulkan_driver_is_no_adapter_and_names_the_refused_gl_adapter(no_vulkan):
    proc, doc, _ = no_vulkan
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "no-adapter" and doc["status"] == "fail"
    assert probe["adapter"] is None and probe["cases"] == []
    assert (
        "no Vulkan CPU adapter; OpenGL llvmpipe is present but does not count" in (probe["summary"])
    )
    refused = probe["refused"]
    assert refused and refused[0]["backend"] == "OpenGL" and "llvmpipe" in refused[0]["name"]
    assert all(a["backend"] != "Vulkan" for a in probe["adapters"])
    (finding,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert finding["severity"] == "fail"
    assert "VK_DRIVER_FILES=/nonexistent.json is set" in finding["message"]
    # lavapipe is installed here: the fix is the variable that hides it, not an install
    assert probe["lavapipe_manifest"] == "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    assert "unset VK_DRIVER_FILES" in finding["remedy"]
    assert "apt install" not in finding["remedy"]
    assert "(refused)" in proc.stdout
    # the probe is the one failure, counted once (VKR001), not again as "probe no-adapter"
    # the verdict names it by its code and title
    title = finding["title"]
    assert proc.stdout.splitlines()[-1] == f"vkdoctor: FAIL: VKR001 {title[0].lower()}{title[1:]}"


# --- a wrong kernel ----------------------------------------------------------------------------


def test_broken_kernel_fails_with_the_error_and_the_worst_element(broken_kernel):
    proc, doc, _ = broken_kernel
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "fail" and probe["reason"] == "wrong-numbers"
    assert probe["seed"] == 1234
    assert all(r["ok"] for r in probe["ladder"]), "the ladder's own kernels are intact"
    bad = [c for c in probe["cases"] if not c["ok"]]
    assert len(bad) == len(probe["cases"])
    d8 = next(c for c in bad if c["d"] == 8)
    # the mean is too small by d / (d + 1): every element is too large by sqrt(9 / 8)
    assert d8["max_rel_err"] == pytest.approx((9 / 8) ** 0.5 - 1, rel=1e-3)
    worst = d8["worst"]
    row, col = worst["index"]
    assert 0 <= row < d8["rows"] and 0 <= col < 8
    assert worst["value"] == pytest.approx(worst["reference"] * (9 / 8) ** 0.5, rel=1e-5)
    assert "max relative error 0.0607" in probe["summary"]
    assert f"worst y[{row},{col}]" in probe["summary"]
    assert "WRONG" in proc.stdout and "worst y[" in proc.stdout
    d33 = next(c for c in bad if c["d"] == 33)
    assert d33["nonfinite"] == d33["rows"] and d33["max_rel_err"] is None
    assert d33["worst"]["value"] == "nan" and d33["worst"]["index"][1] == 32
    assert "5 non-finite" in proc.stdout


def test_opengl_on_purpose_is_probed_while_vulkan_is_gone(tmp_path):
    proc, doc, _ = _probe_run(
        ["--cpu", "--backend", "opengl"],
        env={"VK_DRIVER_FILES": "/nonexistent.json"},
        tmp=tmp_path,
    )
    probe = doc["probe"]
    assert proc.returncode == 0, proc.stdout
    assert probe["status"] == "pass" and probe["backend"] == "OpenGL"
    assert probe["requested"]["backend"] == "opengl"
    assert all(c["ok"] for c in probe["cases"]) and len(probe["ladder"]) == 3


def test_broken_ladder_rung_stops_the_probe_and_is_named(tmp_path):
    shaders = tmp_path / "shaders"
    shutil.copytree(REPO / "shaders", shaders)
    mm = shaders / "matmul.wgsl"
    good = "b[i * p.n + col]"
    text = mm.read_text()
    assert good in text
    mm.write_text(text.replace(good, "b[col * p.n + i]"))  # multiplies by b transposed
    proc, doc, _ = _probe_run(
        ["--cpu", "--shader-dir", str(shaders)], env={"VK_DRIVER_FILES": str(LVP_ICD)}, tmp=tmp_path
    )
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "fail" and probe["reason"] == "ladder"
    assert probe["failed_rung"] == "matmul" and probe["cases"] == []
    assert [(r["rung"], r["ok"]) for r in probe["ladder"]] == [
        ("add-one", True),
        ("workgroup-reduction", True),
        ("matmul", False),
    ]
    # [[1,2],[3,4]] x [[2,4],[3,5]] = [[8,14],[18,32]]: c[0,0] is 8, not 10
    assert "c[0,0] = 8, expected 10" in probe["summary"]
    assert "matmul               FAILED" in proc.stdout


def test_missing_shader_is_a_clear_error(tmp_path):
    (tmp_path / "shaders").mkdir()
    proc, doc, _ = _probe_run(
        ["--cpu", "--shader-dir", str(tmp_path / "shaders")],
        env={"VK_DRIVER_FILES": str(LVP_ICD)},
        tmp=tmp_path,
    )
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "error" and probe["reason"] == "shader-unreadable"
    assert "add_one.wgsl" in probe["summary"]


# --- a driver that crashes, one that hangs -----------------------------------------------------


def test_segfaulting_driver_is_a_crash_with_signal_and_stage(segfault):
    proc, doc, wall = segfault
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "crash" and probe["signal"] == "SIGSEGV"
    assert probe["returncode"] == -11
    assert probe["stage"] == "enumerate-adapters"
    assert any("Segmentation fault" in line for line in probe["stderr_tail"])
    assert any("enumerate_adapters" in line for line in probe["stderr_tail"])
    assert "segmentation fault at stage enumerate-adapters" in probe["summary"]
    assert wall < 20
    assert _leftovers(probe["pid"]) == []


def test_hanging_driver_is_a_timeout_killed_in_time_with_nothing_left(hang):
    proc, doc, wall = hang
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "timeout"
    assert probe["stage"] == "enumerate-adapters"
    assert HANG_TIMEOUT <= probe["seconds"] < HANG_TIMEOUT + 3
    assert wall < HANG_TIMEOUT + 10
    # the stacks dumped on SIGUSR1 before the kill say where it hung
    assert any("enumerate_adapters" in line for line in probe["stderr_tail"])
    assert _leftovers(probe["pid"]) == []
    assert "hung and was killed" in proc.stdout


def test_aborting_driver_is_a_crash_named_sigabrt(tmp_path, fake_icds):
    proc, doc, _ = _probe_run(
        ["--cpu", "--timeout", "30"], env={"VK_DRIVER_FILES": str(fake_icds["abrt"])}, tmp=tmp_path
    )
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "crash" and probe["signal"] == "SIGABRT"
    assert probe["returncode"] == -6 and probe["stage"] == "enumerate-adapters"
    assert "an abort (a Rust panic in wgpu-native" in probe["summary"]
    assert any("Aborted" in line for line in probe["stderr_tail"])
    assert _leftovers(probe["pid"]) == []


# --- other outcomes, through the real runner ---------------------------------------------------


def test_wgpu_not_installed_is_an_error_naming_the_interpreter(tmp_path):
    python = shutil.which("python3", path="/usr/bin")
    assert python, "Debian's /usr/bin/python3 (without wgpu) is part of the test setup"
    proc, doc, _ = _probe_run(["--cpu", "--python", python], tmp=tmp_path)
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "error" and probe["reason"] == "wgpu-missing"
    assert python in probe["summary"] and "the probe needs wgpu and numpy" in probe["summary"]
    # one piece of advice, fit for this Python: the distribution's refuses pip, so a venv
    (f,) = [x for x in doc["findings"] if x["code"] == "VKR001"]
    assert "pip install" not in probe["summary"]
    assert f["remedy"].startswith(f"{python} is the distribution's Python")


def test_a_library_that_cannot_load_in_the_probe_points_at_the_environment(tmp_path):
    """A stub libz.so.1 first on LD_LIBRARY_PATH breaks the probe's own Python (zlib, binascii):
    not "a bug in vkdoctor's probe" and not "install numpy", but the variable and the check."""
    from tests.elfbuild import build_lib

    stub = build_lib(
        tmp_path / "stale" / "libz.so.1", soname="libz.so.1", source="int zstub(void){return 0;}\n"
    )
    proc, doc, _ = _probe_run(["--cpu"], env={"LD_LIBRARY_PATH": str(stub.parent)}, tmp=tmp_path)
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "error" and probe["reason"] == "library-error", probe["summary"]
    assert "undefined symbol" in probe["summary"]
    (f,) = [x for x in doc["findings"] if x["code"] == "VKR001"]
    assert f["remedy"].startswith(f"unset LD_LIBRARY_PATH (LD_LIBRARY_PATH={stub.parent}), or")
    assert "bug in vkdoctor" not in f["remedy"] and "pip install" not in f["remedy"]


def test_python_error_in_the_child_keeps_the_traceback_tail():
    from vkdoctor.children.probe import ProbeRequest, run_probe

    script = REPO / "tests" / "data" / "probe_raises.py"
    result = run_probe({"PATH": "/usr/bin"}, ProbeRequest(script=script, timeout=30))
    assert result["status"] == "error" and result["reason"] == "python-error"
    assert result["stage"] == "import"
    assert "ZeroDivisionError" in result["summary"]
    assert any(line.startswith("Traceback") for line in result["stderr_tail"])


def test_check_runs_the_probe_after_static_checks_and_no_probe_skips_it():
    proc = run_vkdoctor(
        ["check", "--cpu", "--json", "-"], env={"VK_DRIVER_FILES": "/nonexistent.json"}
    )
    doc = json.loads(proc.stdout)
    validate_report(doc)
    assert proc.returncode == 1
    assert doc["probe"]["status"] == "no-adapter"
    assert [c["code"] for c in doc["checks"]][-2:] == ["VKR001", "VKR002"]
    proc = run_vkdoctor(["check", "--no-probe", "--json", "-"])
    doc = json.loads(proc.stdout)
    validate_report(doc)
    assert doc["probe"] is None
    assert not {"VKR001", "VKR002"} & {c["code"] for c in doc["checks"]}


def test_cpu_and_adapter_together_is_a_usage_error():
    proc = run_vkdoctor(["run-probe", "--cpu", "--adapter", "llvmpipe"])
    assert proc.returncode == 2
    assert "--cpu and --adapter choose the adapter two ways" in proc.stderr


def test_a_child_started_early_is_killed_when_the_command_line_is_rejected():
    # plain enough for vkdoctor.launch to start the child, but click rejects --format xml
    marker = "987654321"
    start = time.monotonic()
    proc = run_vkdoctor(["run-probe", "--cpu", "--seed", marker, "--format", "xml"])
    assert proc.returncode == 2 and "xml" in proc.stderr
    assert time.monotonic() - start < 20
    left = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if marker in cmd and any(c.endswith("rmsnorm_probe.py") for c in cmd):
            left.append(p)
    assert left == []


def test_request_from_argv_only_understands_plain_command_lines(tmp_path):
    from vkdoctor.checkargs import request_from_argv
    from vkdoctor.children.probe import ProbeRequest

    assert request_from_argv(
        ["--cpu", "--seed=7", "--timeout", "5", "--json", "-", "--junit", "j.xml", "--redact"]
    ) == ProbeRequest(cpu=True, seed=7, timeout=5.0)
    assert request_from_argv(["--shader-dir", str(tmp_path)]) == ProbeRequest(
        shader_dir=tmp_path.resolve()
    )
    for argv in (
        ["--help"],
        ["--cpu", "--adapter", "x"],
        ["--seed", "-1"],
        ["--backend", "metal"],
        ["--timeout"],
        ["--shader-dir", str(tmp_path / "missing")],
        ["--seed", "1", "--seed", "2"],
    ):
        assert request_from_argv(argv) is None, argv


def test_a_kernel_that_writes_one_past_its_row_is_caught_on_one_thread(tmp_path):
    """The overrun lands in the next row's first element, which that row's own write may or may
    not overwrite after it: a race. The guard after the last row catches it every time, even
    with llvmpipe on one thread."""
    shaders = tmp_path / "shaders"
    shutil.copytree(REPO / "shaders", shaders)
    rms = shaders / "rmsnorm.wgsl"
    loop = "for (var i = lid.x; i < p.d; i = i + WG) {\n            y[base + i]"
    text = rms.read_text()
    assert loop in text
    rms.write_text(
        text.replace(loop, "for (var i = lid.x; i <= p.d; i = i + WG) {\n            y[base + i]")
    )
    proc, doc, _ = _probe_run(
        ["--cpu", "--seed", "1", "--shader-dir", str(shaders)],
        env={"VK_DRIVER_FILES": str(LVP_ICD), "LP_NUM_THREADS": "1"},
        tmp=tmp_path,
    )
    probe = doc["probe"]
    assert proc.returncode == 1
    assert probe["status"] == "fail" and probe["reason"] == "wrong-numbers"
    assert "wrote past the end of its output" in probe["summary"]
    assert probe["cases"][0]["overrun"] >= 1
