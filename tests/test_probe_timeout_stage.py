"""The stage of a probe that timed out is the stage the child was in when it hung, also when the
driver's wait ends at the signal that asks for the stack dump and the child goes on before the
kill. The driver is real lavapipe behind a wrapper built here with gcc (tests/data/slow_icd.c)
whose vkCreateInstance, vkEnumeratePhysicalDevices, vkCreateDevice or vkQueueSubmit sleeps on
its first call: in a loop that resumes after a signal, or once (nanosleep ends at EINTR)."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, clean_env, run_vkdoctor, validate_report

from vkdoctor.children import probe as probe_runner
from vkdoctor.children.probe import ProbeRequest, split_at_dump, stages_of

LVP_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
SLOW_ICD_C = REPO / "tests" / "data" / "slow_icd.c"
#: long enough for a loaded two-core machine to reach the hang (the wgpu start is ~1-3 s)
TIMEOUT = 12.0
#: the wait for the stack dump in the "once" runs: the 0.5 s vkdoctor waits is often too short
#: for the child to print its next stage on a loaded machine, and the point is that it does
DUMP_SECONDS = 4.0
#: (entry point, mode, the probe's stage while the driver is in that call)
RUNS = (
    ("vkCreateInstance", "once", "enumerate-adapters"),
    ("vkEnumeratePhysicalDevices", "once", "enumerate-adapters"),
    ("vkCreateDevice", "once", "request-device"),
    ("vkQueueSubmit", "once", "ladder:add-one"),
    ("vkCreateDevice", "loop", "request-device"),
    ("vkQueueSubmit", "loop", "ladder:add-one"),
)


def _env(tmp: Path, manifest: Path, at: str, mode: str) -> dict[str, str]:
    return {
        "VK_DRIVER_FILES": str(manifest),
        "SLOW_ICD_REAL": json.loads(LVP_ICD.read_text())["ICD"]["library_path"],
        "SLOW_ICD_AT": at,
        "SLOW_ICD_MODE": mode,
        "SLOW_ICD_LOG": str(tmp / f"{at}-{mode}.log"),
    }


def _events(env: dict[str, str]) -> list[str]:
    log = Path(env["SLOW_ICD_LOG"])
    return log.read_text().splitlines() if log.exists() else []


def _in_process(tmp: Path, manifest: Path, at: str, mode: str) -> dict[str, Any]:
    """vkdoctor's own runner (vkdoctor.children.probe.run_probe) in this process, with a longer wait for
    the stack dump; the report's text is not made here."""
    env = _env(tmp, manifest, at, mode)
    probe = probe_runner.run_probe(clean_env(env), ProbeRequest(cpu=True, timeout=TIMEOUT))
    return {"rc": 1, "text": None, "probe": probe, "events": _events(env)}


def _run(tmp: Path, manifest: Path, at: str, mode: str) -> dict[str, Any]:
    """`vkdoctor run-probe` as a user runs it."""
    out = tmp / f"{at}-{mode}.json"
    env = _env(tmp, manifest, at, mode)
    proc = run_vkdoctor(
        ["run-probe", "--cpu", "--timeout", str(TIMEOUT), "--json", str(out)], env=env, timeout=120
    )
    assert out.exists(), proc.stderr
    doc = json.loads(out.read_text())
    validate_report(doc)
    return {
        "rc": proc.returncode,
        "text": proc.stdout,
        "probe": doc["probe"],
        "events": _events(env),
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("slow")
    lib = tmp / "libslow_icd.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(lib), str(SLOW_ICD_C), "-ldl"], check=True, timeout=60
    )
    manifest = tmp / "slow_icd.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(lib), "api_version": "1.3.0"},
            }
        )
    )
    # three at a time: each mostly sleeps in the driver, and the timeouts overlap
    with pytest.MonkeyPatch.context() as mp, ThreadPoolExecutor(max_workers=3) as pool:
        mp.setattr(probe_runner, "DUMP_SECONDS", DUMP_SECONDS)
        futures = {
            (at, mode): pool.submit(
                _in_process if mode == "once" else _run, tmp, manifest, at, mode
            )
            for at, mode, _ in RUNS
        }
        return {key: f.result() for key, f in futures.items()}


def test_the_wrapper_is_lavapipe_when_nothing_sleeps(tmp_path: Path) -> None:
    """Without SLOW_ICD_AT the wrapper passes the probe: any timeout below is the sleep's."""
    lib = tmp_path / "libslow_icd.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(lib), str(SLOW_ICD_C), "-ldl"], check=True, timeout=60
    )
    manifest = tmp_path / "slow_icd.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(lib), "api_version": "1.3.0"},
            }
        )
    )
    result = _run(tmp_path, manifest, "none", "once")
    assert result["probe"]["status"] == "pass", result["probe"]["summary"]
    assert result["events"] == []


@pytest.mark.parametrize(("at", "mode", "stage"), RUNS)
def test_timeout_names_the_stage_the_child_hung_in(
    runs: dict[tuple[str, str], dict[str, Any]], at: str, mode: str, stage: str
) -> None:
    r = runs[(at, mode)]
    probe = r["probe"]
    assert f"slow_icd: {at} sleeps" in r["events"], f"{at} was not reached in {TIMEOUT} s"
    assert r["rc"] == 1 and probe["status"] == "timeout"
    assert probe["stage"] == stage, probe["summary"]
    assert f"killed at stage {stage}" in probe["summary"]
    if r["text"] is not None:
        assert "hung and was killed" in r["text"]
    if mode == "once":
        # the dump's signal ended the sleep, and the child went past the stage before the kill
        assert f"slow_icd: {at} woke early (signal)" in r["events"]
        later = probe["stages_after_dump"]
        assert later and later[0] != stage, later
        assert (
            f"went on to {[s for s in later if s != 'done'][-1]} before the kill"
            in (probe["summary"])
        )
    else:
        assert len(r["events"]) == 1  # it slept on
        assert "stages_after_dump" not in probe
        assert "went on" not in probe["summary"]


def test_split_at_dump_reads_every_thread_header_form() -> None:
    prefix = "vkdoctor-probe: stage "
    dump_heads = (
        "Current thread 0x00007f53984b5b80 (most recent call first):",
        "Thread 0x00007f53984b5b80 (most recent call first):",
        "Current thread 0x00007f53984b5b80 [python3] (most recent call first):",
    )
    for head in dump_heads:
        err = f'{prefix}import\n{prefix}request-device\n{head}\n  File "x.py", line 1 in f\n'
        err += f"{prefix}ladder:add-one\n"
        before, after = split_at_dump(err)
        assert stages_of(before) == ["import", "request-device"], head
        assert stages_of(after) == ["ladder:add-one"]
    # a Python traceback is no stack dump
    err = f"{prefix}import\nTraceback (most recent call last):\n{prefix}x\n"
    assert split_at_dump(err) == (err, "")
