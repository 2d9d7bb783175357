"""What a run leaves behind and how it ends: a closed stdout is a lost report (exit 2), a
SIGTERM removes the load test's directory, and the drivers' shader cache stays in vkdoctor's
own cache directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO, clean_env


def _closed_stdout(args: list[str], extra: dict[str, str] | None = None) -> tuple[int, str]:
    """`vkdoctor ARGS >&-`: started with descriptor 1 closed, as the shell does it."""
    env = clean_env({"PYTHONPATH": str(REPO), **(extra or {})})
    proc = subprocess.run(
        ["bash", "-c", 'exec "$0" -m vkdoctor "$@" >&-', sys.executable, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stderr.strip()


def test_a_closed_stdout_is_a_lost_report_like_dev_full(tmp_path: Path) -> None:
    lost = "vkdoctor: cannot write to standard output: it was closed when vkdoctor started"
    for args in (["check", "--no-probe", "--select", "VKH001"], ["explain", "VKH001"], ["--help"]):
        assert _closed_stdout(args) == (2, lost), args
    # a failure stays a failure, and the report file is still written
    report = tmp_path / "r.json"
    missing = {"VK_DRIVER_FILES": "/nonexistent.json"}
    rc, err = _closed_stdout(["check", "--no-probe", "--json", str(report)], missing)
    assert (rc, err) == (1, lost)
    assert '"status": "fail"' in report.read_text()


def test_a_closed_stdout_is_not_reused_for_a_file(tmp_path: Path) -> None:
    """With descriptor 1 closed, the next file opened would be 1: the JSON report must not end
    up in whatever vkdoctor or its children open next."""
    report = tmp_path / "r.json"
    rc, _ = _closed_stdout(["check", "--no-probe", "--select", "VKD", "--json", str(report)])
    assert rc == 2
    text = report.read_text()
    assert text.startswith("{") and text.rstrip().endswith("}")


def test_sigterm_removes_the_load_test_directory(tmp_path: Path) -> None:
    """SIGTERM at once, and later, once the load test's directory exists: none is left, and the
    status is that of a process SIGTERM killed. A driver whose constructor hangs keeps the load
    test going until the signal (a healthy warm run can end before a busy test sends it)."""
    hang = _hanging_driver(tmp_path / "driver")
    logs = tmp_path / "tmp"
    logs.mkdir()
    env = clean_env(
        {"PYTHONPATH": str(REPO), "TMPDIR": str(logs), "VK_ADD_DRIVER_FILES": str(hang)}
    )
    tmp_path = logs
    seen = 0
    for delay in (0.0, 0.01, 0.03, 0.1, 0.2):
        proc = subprocess.Popen(
            [sys.executable, "-m", "vkdoctor", "check", "--no-probe"],
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if any(p.name.startswith("vkdoctor-load-") for p in tmp_path.iterdir()):
                seen += 1
                break
            time.sleep(0.001)
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGTERM, err
        assert b"Traceback" not in err
        assert list(tmp_path.iterdir()) == []
    assert seen == 5  # the signal came while the directory existed


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_the_drivers_shader_cache_stays_in_vkdoctors_directory(tmp_path: Path) -> None:
    """`check` (load test and probe) and `run-probe --cpu` on lavapipe, with a fresh
    XDG_CACHE_HOME and HOME: Mesa's cache is written, and only under vkdoctor's directory."""
    cache, home = tmp_path / "cache", tmp_path / "home"
    cache.mkdir()
    home.mkdir()
    env = clean_env({"PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(cache), "HOME": str(home)})
    for args in (["check"], ["run-probe", "--cpu"]):
        proc = subprocess.run(
            [sys.executable, "-m", "vkdoctor", *args],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr  # the driver still works
        outside = {p for p in _tree(cache) if p != "vkdoctor" and not p.startswith("vkdoctor/")}
        assert outside == set(), args
        assert _tree(home) == set(), args
    # Mesa did cache: the test would pass for nothing if lavapipe kept no cache at all
    assert any(
        p.startswith("vkdoctor/mesa/mesa_shader_cache/") and (cache / p).is_file()
        for p in _tree(cache)
    )
    assert "MESA_SHADER_CACHE_DIR" not in os.environ


def _hanging_driver(folder: Path) -> Path:
    """The manifest of a driver whose constructor never returns (tests/data/fake_icd.c)."""
    folder.mkdir()
    library = folder / "libvulkan_ctor_hang.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", "-DCTOR_HANG", "-o", str(library),
         str(REPO / "tests" / "data" / "fake_icd.c")],
        check=True, timeout=60,
    )  # fmt: skip
    manifest = folder / "hang_icd.json"
    manifest.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": '
        f'"{library}", "api_version": "1.3.0"}}}}'
    )
    return manifest
