"""`vkdoctor run-probe --cpu` against the minimal wgpu-py RMSNorm script, on the same adapter.

Alternates the two commands N times in fresh processes (python -m vkdoctor, python script), and
prints the median wall time of each, their ratio (target <= 1.10, issue 17), the ratio of median CPU time
(children's user + sys, a figure less sensitive to other load on the machine), and the probe's
GB/s on the d = 4096 case. The sources are byte-compiled first, as pip does on install (a
PYTHONDONTWRITEBYTECODE environment would otherwise recompile vkdoctor on every run).
Usage: python benchmarks/probe_vs_wgpu.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 1.10


def timed(
    cmd: list[str], env: dict[str, str]
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    report = Path(tempfile.mkdtemp()) / "probe.json"
    probe_cmd = [sys.executable, "-m", "vkdoctor", "run-probe", "--cpu", "--json", str(report)]
    minimal_cmd = [sys.executable, str(REPO / "benchmarks" / "minimal_rmsnorm.py")]

    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "vkdoctor", "probes", "benchmarks"],
        cwd=REPO,
        check=True,
        timeout=120,
    )
    probe_s: list[float] = []
    minimal_s: list[float] = []
    cpu: dict[str, list[float]] = {"probe": [], "minimal": []}
    gbps: list[float] = []
    adapters: set[str] = set()
    for i in range(args.runs):
        order = [("probe", probe_cmd), ("minimal", minimal_cmd)]
        for name, cmd in order if i % 2 == 0 else order[::-1]:
            wall, cpu_s, proc = timed(cmd, env)
            cpu[name].append(cpu_s)
            if proc.returncode != 0:
                print(f"{name} failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
                return 2
            if name == "probe":
                probe_s.append(wall)
                doc = json.loads(report.read_text())["probe"]
                adapters.add(f"{doc['adapter']['name']} ({doc['backend']})")
                for case in doc["cases"]:
                    if case["d"] == 4096 and case["timing"]["chunks"] == 1:
                        gbps.append(case["timing"]["gbps"])
                        big = f"{case['rows']}x{case['d']}"
            else:
                minimal_s.append(wall)
                summary = proc.stdout.strip().split(": worst")[0]
                adapters.add(summary.replace(" (CPU) via Vulkan", " (Vulkan)"))
    p, m = statistics.median(probe_s), statistics.median(minimal_s)
    ratio = p / m
    print(f"adapter(s): {sorted(adapters)}")
    print(f"runs: {args.runs} each, alternating")
    print(
        f"vkdoctor run-probe --cpu: median {p:.3f} s  (min {min(probe_s):.3f}, max {max(probe_s):.3f})"
    )
    print(
        f"minimal wgpu-py RMSNorm:  median {m:.3f} s  (min {min(minimal_s):.3f}, max {max(minimal_s):.3f})"
    )
    print(f"ratio of medians: {ratio:.3f} (target <= {TARGET})")
    # each probe run against the baseline run next to it: less sensitive to load that drifts
    pairs = statistics.median(a / b for a, b in zip(probe_s, minimal_s, strict=True))
    print(f"median of paired ratios: {pairs:.3f}")
    cpu_ratio = statistics.median(cpu["probe"]) / statistics.median(cpu["minimal"])
    print(
        f"CPU time (user+sys): probe {statistics.median(cpu['probe']):.3f} s, minimal "
        f"{statistics.median(cpu['minimal']):.3f} s, ratio {cpu_ratio:.3f}"
    )
    print(
        f"probe RMSNorm {big}: {statistics.median(gbps):.2f} GB/s (median over runs, one dispatch each)"
    )
    return 0 if ratio <= TARGET and len(adapters) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
