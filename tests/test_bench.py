"""vkdoctor bench on real lavapipe: numbers checked against float64, copy compared, numpy baseline."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_vkdoctor

from vkdoctor.children.bench import parse_sizes, render


@pytest.fixture(scope="module")
def lavapipe_bench():
    proc = run_vkdoctor(
        ["bench", "--cpu", "--sizes", "256x4096,8x12", "--repeat", "2", "--json", "-"]
    )
    return proc, json.loads(proc.stdout)


def test_bench_on_lavapipe_checks_every_size_and_times_on_the_device(lavapipe_bench):
    proc, doc = lavapipe_bench
    assert proc.returncode == 0, doc.get("summary")
    assert doc["status"] == "pass"
    assert doc["adapter"]["type"] == "CPU" and doc["backend"] == "Vulkan"
    assert doc["timing"] == "timestamp-query"
    assert [(r["rows"], r["d"]) for r in doc["results"]] == [(256, 4096), (8, 12)]
    for r in doc["results"]:
        assert r["ok"] and r["copy_ok"]
        assert 0 < r["max_rel_err"] <= 1e-5 and 0 < r["norm_rel_err"] <= 1e-5
        assert r["rmsnorm_gbps"] > 0 and r["copy_gbps"] > 0 and r["kernel_copy_gbps"] > 0
        assert r["numpy_gbps"] > 0
        assert r["rmsnorm"]["device_s"] > 0 and r["rmsnorm"]["host_s"] > 0
        # lavapipe has subgroups: three RMSNorm kernels run, each checked on its own output
        assert set(r["kernels"]) == {"workgroup-tree", "subgroup", "unrolled-2rows"}
        assert all(k["ok"] and k["max_rel_err"] <= 1e-5 for k in r["kernels"].values())
        assert r["kernel"] in r["kernels"]
    table = render(doc)
    assert "256x4096" in table and "numpy's speed on the host" in table
    assert doc["verdict"]["verdict"] == "cpu-adapter"
    assert "verdict: a CPU adapter: its figures measure the host's processor and are no " in table
    assert "no measure of a GPU" in proc.stdout + table


def test_the_default_bench_on_lavapipe_runs_in_seconds_and_says_what_it_means():
    """`vkdoctor bench` as a user types it, on a machine whose only Vulkan device is lavapipe."""
    import time

    start = time.monotonic()
    proc = run_vkdoctor(["bench"], env={"COLUMNS": "80"})
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "256x4096" in proc.stdout and "1024x4096" in proc.stdout
    verdict = proc.stdout[proc.stdout.index("verdict: ") :]
    assert " ".join(verdict.split()) == (
        "verdict: a CPU adapter: its figures measure the host's processor and are no measure "
        "of a GPU"
    )
    assert took < 60, f"{took:.1f} s"


def test_every_gpu_kernel_is_right_on_lavapipe_at_awkward_sizes():
    """The unrolled kernels a GPU runs (probes/bench.py UNROLLED), on real lavapipe, each from a
    poisoned output and checked against float64: rows that do not fill a workgroup, d not a
    multiple of the invocations per row, d so small that most invocations idle."""
    import argparse
    import sys

    import numpy as np
    import wgpu

    from vkdoctor.resources import probes_dir, shaders_dir

    sys.path.insert(0, str(probes_dir()))
    import bench as child

    adapter = wgpu.gpu.request_adapter_sync(power_preference="low-power")
    feats = ["timestamp-query", "timestamp-query-inside-encoders", "subgroup"]
    device = adapter.request_device_sync(required_features=feats)
    names = ("workgroup-tree", "subgroup", "unrolled")
    shaders = {
        n: (shaders_dir() / f"bench_{f}.wgsl").read_text()
        for n, f in zip(
            (*names, "copy"),
            ("rmsnorm_vec4", "rmsnorm_subgroup_vec4", "rmsnorm_unrolled", "copy_vec4"),
            strict=True,
        )
    }
    variants = ["workgroup-tree", "subgroup", *child.UNROLLED]
    timer = child.Timer(wgpu, device, set(feats), 1)
    args = argparse.Namespace(repeat=1, warm=0.0)
    for rows, d in ((37, 4096), (9, 12), (33, 1000), (5, 8196)):
        r = child.bench_size(
            wgpu, device, timer, args, rows, d, np.random.default_rng(rows), shaders, variants
        )
        assert r["ok"] and r["wrong_kernels"] == [], (rows, d, r["kernels"])
        assert set(r["kernels"]) == set(variants)
        assert all(0 < k["max_rel_err"] <= 1e-5 for k in r["kernels"].values())
        # two rows per workgroup: the second row of the last workgroup is past the end at 37
        assert (
            r["shapes"]["unrolled-2rows"]["workgroup"]
            == 2 * r["shapes"]["unrolled-2rows"]["per_row"]
        )


def test_bench_without_vulkan_is_no_adapter():
    proc = run_vkdoctor(
        ["bench", "--cpu", "--sizes", "8x8", "--json", "-"],
        env={"VK_DRIVER_FILES": "/nonexistent.json"},
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert doc["status"] == "no-adapter"
    assert "OpenGL llvmpipe is present but does not count" in doc["summary"]


def test_bad_sizes_are_a_usage_error():
    proc = run_vkdoctor(["bench", "--cpu", "--sizes", "10x3"])
    assert proc.returncode == 2
    assert "'10x3': rows must be >= 1 and d a multiple of 4" in proc.stderr
    with pytest.raises(ValueError, match="is not ROWSxD"):
        parse_sizes("4096")
    assert parse_sizes("16384x4096, 2x8") == [(16384, 4096), (2, 8)]
    # a size no host can hold is refused before anything runs (it was a MemoryError traceback)
    proc = run_vkdoctor(["bench", "--cpu", "--sizes", "1000000x100000"])
    assert proc.returncode == 2
    assert "100,000,000,000 elements; at most 1,073,741,824" in proc.stderr


def test_the_bench_catches_a_wrong_eps_and_a_half_copy_and_names_them(tmp_path, monkeypatch):
    """The bench's own numbers are checked like the probe's: inputs scaled so that eps shows,
    each copy from a poisoned destination, and the wrong kernel named."""
    import os
    import shutil

    from vkdoctor.children import bench
    from vkdoctor.resources import shaders_dir

    broken = tmp_path / "shaders"
    shutil.copytree(shaders_dir(), broken)
    sub = broken / "bench_rmsnorm_subgroup_vec4.wgsl"
    sub.write_text(sub.read_text().replace("+ p.eps)", "+ 0.0)"))
    copy = broken / "bench_copy_vec4.wgsl"
    copy.write_text(copy.read_text().replace("if (i >= p.n4)", "if (i >= p.n4 / 2u)"))
    monkeypatch.setattr(bench, "shaders_dir", lambda: broken)
    doc = bench.run_bench(dict(os.environ), cpu=True, sizes="64x1024", repeat=2, seed=3)
    assert doc["status"] == "fail", doc.get("summary")
    (r,) = doc["results"]
    assert r["wrong_kernels"] == ["subgroup"] and not r["ok"]
    assert r["max_rel_err"] > 1e-5  # the failing kernel's error, not the good one's
    assert (r["buffer_copy_ok"], r["kernel_copy_ok"], r["copy_ok"]) == (True, False, False)
    assert "WRONG: subgroup, the copy kernel" in bench.render(doc)


def test_a_size_over_the_adapters_largest_buffer_says_so():
    proc = run_vkdoctor(["bench", "--cpu", "--sizes", "131072x4096", "--json", "-"])
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert doc["reason"] == "limits"
    assert (
        "131072x4096 is 2,147,483,648 bytes per tensor, over the largest buffer" in doc["summary"]
    )


def test_bench_with_wgpus_own_choice_of_adapter():
    """Without --cpu or --adapter the bench takes wgpu's high-performance pick (llvmpipe here),
    the path a GPU machine takes."""
    proc = run_vkdoctor(["bench", "--sizes", "8x8", "--repeat", "1", "--json", "-"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["adapter"]["type"] == "CPU"


def test_a_gpu_bench_table_reads_at_80_columns() -> None:
    """The H200's own result (scripts/gpu/verdicts.sh, 4 Dec 2026): each size one line under its
    column heads, the kernels on a line of their own."""
    from pathlib import Path

    from vkdoctor.render.wrap import fit

    doc = json.loads((Path(__file__).parent / "data" / "bench-h200.json").read_text())
    lines = fit(render(doc), 80).splitlines()
    assert all(len(line) <= 80 for line in lines)
    head = next(i for i, line in enumerate(lines) if "rows x d" in line)
    row = next(line for line in lines if line.lstrip().startswith("16384x4096"))
    assert row.split() == ["16384x4096", "3,953.3", "842.6", "4,144.6", "95%", "2.6e-07", "ok"]
    # every value ends under the end of its column's head
    ends = [m.end() for m in re.finditer(r"\S+", row)][:6]
    for text in ("rows x d", "RMSNorm", "buffer", "kernel", "% of", "max rel"):
        assert lines[head].index(text) + len(text) in ends, text
    assert "    kernel: unrolled-2rows; the others: workgroup-tree 3,536.6" in "\n".join(lines)
    assert not any("numpy" in line for line in lines[head : head + 2])
