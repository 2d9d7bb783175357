"""The capability ladder on real lavapipe: every rung passes, a deliberately broken kernel of each
is caught, and a feature or limit lavapipe lacks is `unsupported`, named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_json, run_vkdoctor, validate_report

RUNGS = [
    "f16",
    "bf16-storage",
    "subgroups",
    "atomics",
    "workgroup-memory-limit",
    "max-invocations",
    "large-dispatch",
    "large-binding",
    "small-d",
    "timestamps",
]

#: one deliberate defect per kernel: (file, text, replacement)
BREAKS = [
    ("cap_f16.wgsl", "* f16(w[i]);", "* f16(w[i]) * f16(1.0625);"),
    ("cap_bf16.wgsl", "(bits + 0x7fffu +", "(bits + 0xffffu +"),
    (
        "cap_subgroups.wgsl",
        "let sum = subgroupAdd(value);",
        "let sum = subgroupAdd(value) + (gid.x & 1u);",
    ),
    (
        "cap_atomics.wgsl",
        "atomicAdd(&counters[0], 1u);",
        "if (lid.x != 63u) { atomicAdd(&counters[0], 1u); }",
    ),
    ("cap_workgroup_memory.wgsl", "words[i] * (i + 1u)", "words[i] * (i + 1u) * u32(i + 1u != N)"),
    (
        "cap_max_invocations.wgsl",
        "= lid.x + wid.x",
        "= select(lid.x, 0u, lid.x + 1u == WG) + wid.x",
    ),
    (
        "cap_large_dispatch.wgsl",
        "if (linear < p.count) {",
        "if (linear < p.count && wid.y == 0u) {",
    ),
    ("cap_large_binding.wgsl", "big[last] = big[last] +", "big[last - 1u] = big[last] +"),
    (
        "rmsnorm.wgsl",
        "y[base + i] = x[base + i] * inv * w[i];",
        "y[base + i] = x[base + i] * inv * w[i] + select(0.0, 0.5, p.d < 4u);",
    ),
]


def _shaders(tmp_path: Path, edits: list[tuple[str, str, str]]) -> Path:
    out = tmp_path / "shaders"
    shutil.copytree(REPO / "shaders", out)
    for name, old, new in edits:
        path = out / name
        text = path.read_text()
        assert old in text, (name, old)
        path.write_text(text.replace(old, new))
    return out


def _ladder(doc: dict) -> dict[str, dict]:
    caps = doc["probe"]["capabilities"]
    assert [c["name"] for c in caps] == RUNGS
    return {c["name"]: c for c in caps}


def test_every_rung_passes_on_lavapipe() -> None:
    proc, doc = run_json(["check", "--cpu", "--capabilities", "--select", "VKR"])
    assert proc.returncode == 0, proc.stdout
    ladder = _ladder(doc)
    assert {n: c["status"] for n, c in ladder.items()} == dict.fromkeys(RUNGS, "pass")
    assert ladder["f16"]["figures"]["max_rel_err"] <= 1e-2
    assert ladder["bf16-storage"]["figures"]["round_trip"] == "exact"
    assert ladder["subgroups"]["figures"]["subgroup_sizes"]
    limits = doc["probe"]["limits"]
    assert (
        ladder["workgroup-memory-limit"]["figures"]["bytes"]
        == (limits["max-compute-workgroup-storage-size"])
    )
    assert (
        ladder["large-dispatch"]["figures"]["workgroups"]
        > (limits["max-compute-workgroups-per-dimension"])
    )
    # the default check does not climb it
    _, plain = run_json(["run-probe", "--cpu"])
    assert "capabilities" not in plain["probe"]


def test_a_broken_kernel_of_each_rung_is_caught(tmp_path: Path) -> None:
    shaders = _shaders(tmp_path, BREAKS)
    proc, doc = run_json(
        ["run-probe", "--cpu", "--capabilities", "--shader-dir", str(shaders)], timeout=300
    )
    assert proc.returncode == 1
    ladder = _ladder(doc)
    failed = {n for n, c in ladder.items() if c["status"] == "fail"}
    assert failed == set(RUNGS) - {"timestamps"}, {n: c["detail"] for n, c in ladder.items()}
    assert ladder["timestamps"]["status"] == "pass"
    assert "round trip is not exact" in ladder["bf16-storage"]["detail"]
    f16 = ladder["f16"]["figures"]
    assert f16["max_rel_err"] > 1e-2 and len(f16["worst"]["index"]) == 2
    assert "d=" in ladder["small-d"]["detail"]


def test_what_lavapipe_lacks_is_unsupported_and_named(tmp_path: Path) -> None:
    assert "texture-compression-astc" not in json.dumps(run_json(["run-probe", "--cpu"])[1])
    shaders = _shaders(
        tmp_path,
        [
            (
                "cap_f16.wgsl",
                "// requires: shader-f16",
                "// requires: shader-f16 texture-compression-astc",
            ),
            (
                "cap_max_invocations.wgsl",
                "const WG",
                "// requires-limit: max-compute-invocations-per-workgroup >= 4096\nconst WG",
            ),
        ],
    )
    proc, doc = run_json(["run-probe", "--cpu", "--capabilities", "--shader-dir", str(shaders)])
    assert proc.returncode == 0, proc.stdout
    ladder = _ladder(doc)
    assert ladder["f16"]["status"] == "unsupported"
    assert ladder["f16"]["detail"] == "the adapter lacks the feature texture-compression-astc"
    assert ladder["max-invocations"]["status"] == "unsupported"
    assert ladder["max-invocations"]["detail"].startswith(
        "max-compute-invocations-per-workgroup is 1024, the kernel needs 4096"
    )
    assert ladder["atomics"]["status"] == "pass"
    validate_report(doc)


@pytest.mark.parametrize("args", [["run-probe", "--capabilities", "--cpu"]])
def test_the_text_report_lists_the_rungs(args: list[str]) -> None:
    proc = run_vkdoctor(args, env={"COLUMNS": "80"})
    assert proc.returncode == 0
    text = proc.stdout
    assert "    capabilities:" in text
    for name in RUNGS:
        assert f"      {name} " in text
