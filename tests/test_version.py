"""`vkdoctor --version`: vkdoctor, Python, wgpu, wgpu-native and the loader, as they really are."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from conftest import run_vkdoctor

from vkdoctor import __version__


def _rows(text: str) -> dict[str, str]:
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def test_version_names_every_part_with_the_real_versions() -> None:
    started = time.monotonic()
    proc = run_vkdoctor(["--version"])
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    rows = _rows(proc.stdout)
    assert list(rows) == ["vkdoctor", "Python", "wgpu", "wgpu-native", "Vulkan loader"]
    assert rows["vkdoctor"] == __version__
    assert rows["Python"].startswith(sys.version.split()[0] + " (")
    # what wgpu itself says of its version and of the library it loads
    said = subprocess.run(
        [
            sys.executable,
            "-c",
            "import wgpu, wgpu.backends.wgpu_native as n; "
            "print(wgpu.__version__, '.'.join(map(str, n.lib_version_info)), n.lib_path)",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert rows["wgpu"] == said[0]
    assert rows["wgpu-native"] == f"{said[1]} ({said[2]})"
    # the loader ld.so resolves libvulkan.so.1 to
    real = os.path.realpath("/lib/x86_64-linux-gnu/libvulkan.so.1")
    version = real.rsplit(".so.", 1)[1]
    assert rows["Vulkan loader"] == f"{version} (/lib/x86_64-linux-gnu/libvulkan.so.1)"
    assert took < 5


def test_version_says_what_is_absent_without_failing(tmp_path) -> None:
    missing = tmp_path / "libwgpu_native.so"
    proc = run_vkdoctor(["--version"], env={"WGPU_LIB_PATH": str(missing)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert _rows(proc.stdout)["wgpu-native"] == f"version unknown ({missing})"
