"""Benchmark: `vkdoctor check --no-probe` against `vulkaninfo --summary` on this machine.

Runs the two commands N times each, alternating (so load changes hit both alike), prints each
one's median wall time and the ratio, and the per-check times of one extra JSON run. Exits 1 when
the median ratio is over the budget (2.0 by default), 2 when a command cannot run at all.
This is a benchmark, not a test: run it on a quiet machine.

vkdoctor runs from this checkout with its bytecode compiled first (python -m compileall), as
pip leaves an installed package: with PYTHONDONTWRITEBYTECODE set (some containers set it),
every run would otherwise compile all of vkdoctor from source again (about 0.25 s).

    python benchmarks/check_vs_vulkaninfo.py [-n 15] [--budget 2.0] [-- extra check args]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user+system, children included) and the exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=300, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def breakdown(cmd: list[str], env: dict[str, str]) -> list[tuple[str, float, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        subprocess.run(
            [*cmd, "--json", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            timeout=300,
            check=False,
        )
        try:
            doc = json.loads(out.read_text())
        except (OSError, ValueError):
            return []
    return sorted(
        ((c["code"], c["seconds"], c["severity"]) for c in doc.get("checks", [])),
        key=lambda row: -row[1],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--budget", type=float, default=2.0, help="allowed median ratio")
    parser.add_argument("extra", nargs="*", help="extra arguments for vkdoctor check")
    args = parser.parse_args()

    vulkaninfo = shutil.which("vulkaninfo")
    if vulkaninfo is None:
        print("vulkaninfo not found (Debian/Ubuntu: apt install vulkan-tools)", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONPATH": str(REPO), "LC_ALL": "C"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "vkdoctor")],
        stdout=subprocess.DEVNULL,
        env={k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"},
        timeout=300,
        check=False,
    )
    doctor = [sys.executable, "-m", "vkdoctor", "check", "--no-probe", *args.extra]
    info = [vulkaninfo, "--summary"]

    timed(doctor, env)  # warm the page cache for both before measuring
    timed(info, env)
    t_doctor: list[float] = []
    t_info: list[float] = []
    c_doctor: list[float] = []
    c_info: list[float] = []
    codes: set[int] = set()
    for _ in range(args.n):
        wall, cpu, rc = timed(doctor, env)
        t_doctor.append(wall)
        c_doctor.append(cpu)
        codes.add(rc)
        wall, cpu, _ = timed(info, env)
        t_info.append(wall)
        c_info.append(cpu)

    m_doctor = statistics.median(t_doctor)
    m_info = statistics.median(t_info)
    ratio = m_doctor / m_info
    print(f"runs: {args.n} each, alternating; load average {os.getloadavg()[0]:.2f}")
    print(
        f"vkdoctor check --no-probe: median {m_doctor * 1000:7.1f} ms wall, "
        f"{statistics.median(c_doctor) * 1000:7.1f} ms CPU  (exit codes {sorted(codes)})"
    )
    print(
        f"vulkaninfo --summary:      median {m_info * 1000:7.1f} ms wall, "
        f"{statistics.median(c_info) * 1000:7.1f} ms CPU"
    )
    print(f"ratio (wall medians): {ratio:.2f}  (budget {args.budget:.2f})")
    rows = breakdown(doctor, env)
    if rows:
        print("per check (one run):")
        for code, seconds, severity in rows:
            print(f"  {code:8} {seconds * 1000:7.1f} ms  {severity}")
    if ratio > args.budget:
        print(f"OVER BUDGET: {ratio:.2f} > {args.budget:.2f}")
        return 1
    print("within budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
