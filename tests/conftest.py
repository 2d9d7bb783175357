"""Shared fixtures: a clean environment, CLI runners, and schema validation of every report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from vkdoctor.model.report_records import Distro, DriverRow, HostReport

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "vkdoctor" / "data" / "report.schema.json").read_text())

#: variables that change what the loader, ld.so or wgpu do; tests start without them
SCRUBBED_PREFIXES = ("VK_", "XDG_", "WGPU", "MESA_", "LP_", "VKDOCTOR_")
SCRUBBED = (
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "NO_COLOR",
    "FORCE_COLOR",
    "NODEVICE_SELECT",
    "GITHUB_STEP_SUMMARY",
    # a width the developer's shell exports would wrap the text the tests read
    "COLUMNS",
    "CONDA_PREFIX",
    "CARGO_TARGET_DIR",
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(SCRUBBED_PREFIXES) and k not in SCRUBBED
    }
    env.update(extra or {})
    return env


def vulkaninfo(env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    """The real loader's own answer, the oracle: `vulkaninfo --summary` with `env` over the
    test's environment (scrubbed of the user's Vulkan variables by _scrub_env)."""
    return subprocess.run(
        ["vulkaninfo", "--summary"],
        env={**os.environ, **env},
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(autouse=True)
def _scrub_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith(SCRUBBED_PREFIXES) or key in SCRUBBED:
            monkeypatch.delenv(key)
    yield


def read_pty(fd: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> bytes:
    """Everything the child writes to the pty `fd` until it exits (or `timeout` passes)."""
    import select
    import time

    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            data += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    return data


def validate_report(doc: Mapping[str, Any]) -> None:
    """Every report the tests produce goes through the shipped schema."""
    jsonschema.validate(doc, SCHEMA)


def run_vkdoctor(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m vkdoctor ARGS` as a user would, in a real child process."""
    full_env = clean_env(env)
    full_env["PYTHONPATH"] = str(REPO) + (
        ":" + full_env["PYTHONPATH"] if full_env.get("PYTHONPATH") else ""
    )
    return subprocess.run(
        [sys.executable, "-m", "vkdoctor", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd or REPO,
        check=False,
    )


def run_json(
    args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 300
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run with `--json -` and return the process and the validated report."""
    proc = run_vkdoctor([*args, "--json", "-"], env=env, timeout=timeout)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(
            f"not JSON (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        ) from exc
    validate_report(doc)
    return proc, doc


#: a host object as the schema requires it, for reports a test builds by hand
HOST = HostReport(
    root="/",
    distro=Distro(id="debian", name=None, version=None, like=None),
    machine="x86_64",
    loader=None,
    vkdoctor="test",
    python=None,
    python_executable=None,
    wgpu=None,
    kernel=None,
    cpu=None,
    memory=None,
    environment={},
)


def driver_row(*, manifest: str, verdict: str, **fields: Any) -> DriverRow:
    """A report's driver row for a report a test builds by hand: `fields` over a driver the
    loader lists from the default directories and will dlopen."""
    base: dict[str, Any] = {
        "index": 0,
        "origin": "default XDG_DATA_DIRS",
        "search_entry": os.path.dirname(manifest),
        "library_path": None,
        "library": None,
        "library_rule": None,
        "dlopen_name": None,
        "api_version": None,
        "file_format_version": "1.0.0",
        "library_arch": None,
        "is_portability_driver": False,
        "driver": None,
        "outcome": "loads",
        "predicted_error": None,
        "reason": None,
    }
    return DriverRow(manifest=manifest, verdict=verdict, **{**base, **fields})


@pytest.fixture(scope="session")
def debian_root_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real Debian 12 root with lavapipe (tests/debroot.py), unpacked once per session from
    its cached tarball (built the first time: debootstrap and apt, about 90 s)."""
    import shutil

    import debroot

    base = debroot.unpack(debroot.cached_tarball(), tmp_path_factory.mktemp("debroot") / "root")
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def debian_root(debian_root_base: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the Debian root this test may break (removed after the test)."""
    import shutil

    import debroot

    root = debroot.copy_of(debian_root_base, tmp_path / "root")
    yield root
    subprocess.run(["umount", "-l", str(root / "proc")], check=False, capture_output=True)
    shutil.rmtree(root, ignore_errors=True)
