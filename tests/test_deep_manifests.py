"""Manifest values nested deep: vkdoctor's verdict against loader 1.3.239's own behaviour,
measured here with vulkaninfo in a child with a timeout (numbers in docs/loader-emulation.md).

The loader's parser and printer recurse: a value nested past their stack crashes every Vulkan
program (SIGSEGV), and a field of objects nested a couple of thousand levels makes cJSON_Print
copy gigabytes, so vkCreateInstance hangs. vkdoctor prints iteratively (no RecursionError, no
exit 3) and says which one happens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import run_json

LVP = "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


def nested(kind: str, depth: int) -> str:
    return (
        "[" * depth + "1" + "]" * depth if kind == "array" else '{"":' * depth + "1" + "}" * depth
    )


def driver(tmp: Path, value: str, field: str = "api_version") -> Path:
    icd = f'"library_path": "{LVP}", "api_version": "1.3.0"'
    if field == "api_version":
        icd = f'"library_path": "{LVP}", "api_version": {value}'
        extra = ""
    else:
        extra = f', "{field}": {value}'
    path = tmp / "deep_icd.json"
    path.write_text('{"file_format_version": "1.0.0", "ICD": {' + icd + "}" + extra + "}")
    return path


def layer(tmp: Path, value: str) -> Path:
    d = tmp / "layers"
    d.mkdir()
    (d / "deep.json").write_text(
        '{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_deep", "type": "GLOBAL", '
        '"library_path": "libVkLayer_nothing.so", "implementation_version": "1", '
        f'"description": "deep", "api_version": {value}}}}}'
    )
    return d


def real_loader(env: dict[str, str], timeout: float) -> str:
    """What vulkaninfo does: "lists llvmpipe", "crashes" (a signal) or "hangs" (the timeout)."""
    try:
        proc = subprocess.run(
            ["vulkaninfo", "--summary"],
            env={**os.environ, **env},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "hangs"
    if proc.returncode < 0:
        assert proc.returncode == -signal.SIGSEGV, proc.returncode
        return "crashes"
    assert b"llvmpipe" in proc.stdout, proc.stdout[-2000:]
    return "lists llvmpipe"


def vkdoctor_drivers(manifest: Path) -> tuple[str, dict]:
    proc, doc = run_json(["drivers"], env={"VK_DRIVER_FILES": str(manifest)}, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    (row,) = doc["drivers"]
    return row["outcome"], row


@pytest.mark.parametrize(
    ("kind", "depth", "field", "loader", "outcome"),
    [
        # printed fields: ~1000 levels made vkdoctor's recursive printer raise (exit 3)
        ("array", 3000, "api_version", "lists llvmpipe", "loads"),
        ("object", 600, "api_version", "lists llvmpipe", "loads"),
        ("array", 100_000, "api_version", "crashes", "loader-crash"),
        # stalls: still running after 10 s on a loaded machine, a SIGSEGV at about 10 s on a
        # quiet one (below)
        ("object", 3000, "api_version", "hangs or crashes", "loader-crash"),
        # a field the loader never reads is only parsed: it survives 150000 levels
        ("array", 20_000, "x", "lists llvmpipe", "loads"),
        ("object", 200_000, "x", "crashes", "loader-crash"),
    ],
)
def test_deep_driver_manifest_matches_the_loader(
    tmp_path: Path, kind: str, depth: int, field: str, loader: str, outcome: str
) -> None:
    manifest = driver(tmp_path, nested(kind, depth), field)
    assert real_loader({"VK_DRIVER_FILES": str(manifest)}, timeout=10) in loader.split(" or ")
    got, row = vkdoctor_drivers(manifest)
    assert got == outcome, row
    if outcome == "loader-crash":
        assert row["verdict"] == "fail"
        word = "stalls" if "hangs" in loader else "crash"
        assert word in row["reason"], row["reason"]


@pytest.mark.parametrize(
    ("kind", "depth", "loader", "severity"),
    [
        ("object", 600, "lists llvmpipe", None),
        ("array", 100_000, "crashes", "fail"),
        # the loader stalls on this one: seen still running after 10 s on a loaded machine, and
        # crashing (SIGSEGV) within them on a quiet one (a fresh-clone CI run): both stop every
        # Vulkan application, which is what vkdoctor must say
        ("object", 3000, "hangs or crashes", "fail"),
    ],
)
def test_deep_layer_manifest_matches_the_loader(
    tmp_path: Path, kind: str, depth: int, loader: str, severity: str | None
) -> None:
    d = layer(tmp_path, nested(kind, depth))
    env = {"VK_ADD_LAYER_PATH": str(d), "VK_DRIVER_FILES": LVP_MANIFEST}
    assert real_loader(env, timeout=10) in loader.split(" or ")
    env["VK_INSTANCE_LAYERS"] = "VK_LAYER_deep"
    proc, doc = run_json(["check", "--no-probe", "--select", "VKI004"], env=env, timeout=120)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr[-3000:]
    stops = [f for f in doc["findings"] if "stops every Vulkan application" in f["title"]]
    if severity is None:
        assert stops == [] and proc.returncode == 0
    else:
        assert len(stops) == 1 and stops[0]["severity"] == severity, doc["findings"]
        assert proc.returncode == 1
        assert str(d / "deep.json") in stops[0]["title"]


def test_deep_values_print_as_the_loader_prints_them(tmp_path: Path) -> None:
    # 600 levels: the driver loads, and the api_version vkdoctor shows is the printed text's
    _, row = vkdoctor_drivers(driver(tmp_path, nested("array", 600)))
    assert row["api_version"].startswith("[[[[") and row["api_version"].endswith("]]]]")
    assert len(row["api_version"]) == 2 * 600 + 1
    json.dumps(row)


@pytest.mark.parametrize(
    ("kind", "depth", "loader"),
    [
        ("object", 600, "lists llvmpipe"),
        ("array", 100_000, "crashes"),
        ("object", 3000, "hangs or crashes"),
    ],
)
def test_deep_implicit_layer_manifest_matches_the_loader(
    tmp_path: Path, kind: str, depth: int, loader: str
) -> None:
    d = tmp_path / "data/vulkan/implicit_layer.d"
    d.mkdir(parents=True)
    (d / "deep.json").write_text(
        '{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_deep", "type": "GLOBAL", '
        '"library_path": "libVkLayer_nothing.so", "implementation_version": "1", '
        '"description": "deep", "disable_environment": {"DISABLE_DEEP": "1"}, '
        f'"api_version": {nested(kind, depth)}}}}}'
    )
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert real_loader({**env, "VK_DRIVER_FILES": LVP_MANIFEST}, timeout=10) in loader.split(" or ")
    proc, doc = run_json(["check", "--no-probe", "--select", "VKI"], env=env, timeout=120)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr[-3000:]
    stops = [f for f in doc["findings"] if "stops every Vulkan application" in f["title"]]
    if loader == "lists llvmpipe":
        assert stops == []
    else:
        assert proc.returncode == 1
        assert len(stops) == 1 and stops[0]["severity"] == "fail", doc["findings"]
        word = "stalls" if "hangs" in loader else "crashes"
        assert word in stops[0]["message"], stops[0]["message"]
