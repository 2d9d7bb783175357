"""Benchmark: `vkdoctor check --no-probe` against `vulkaninfo --summary` on this machine.

Runs the two commands N times each, alternating (so load changes hit both alike) and a short gap
apart, prints each one's median wall time and the ratio, and the per-check times of one extra
JSON run. Exits 1 when the median ratio is over the budget (2.0 by default), 2 when a command
cannot run at all. This is a benchmark, not a test: run it on a quiet machine.

It also times, in the same rounds, the two things no `check` can do without: starting the
interpreter (`python -c pass`) and the load-test child alone, given the request `check` gives it
here (it dlopens every driver and creates an instance through the real loader, as vulkaninfo
does, in a second interpreter). Their sum is printed as the floor, in multiples of vulkaninfo.

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


def timed(
    cmd: list[str], env: dict[str, str], stdin: bytes | None = None
) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user+system, children included) and the exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # No timeout here: with one, subprocess waits by polling with growing sleeps (up to 50 ms)
    # and a 37 ms vulkaninfo measured 64 ms. A hang is for Ctrl-C.
    proc = subprocess.run(
        cmd,
        input=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        check=False,
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


def child_floor(env: dict[str, str], logdir: str) -> tuple[list[str], bytes]:
    """The load-test child alone, asked what `check` asks it on this machine: the part of a
    check that does what vulkaninfo does (dlopen each driver, create an instance), plus its
    own interpreter start. `check` cannot finish before it."""
    sys.path.insert(0, str(REPO))
    from vkdoctor.commands.common import host_context
    from vkdoctor.loader import load_targets
    from vkdoctor.loadtest import child_command, child_request

    targets = dict(enumerate(load_targets(host_context())))
    request = child_request(targets, good=(), logdir=Path(logdir), loader="libvulkan.so.1")
    return child_command(), json.dumps(request).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--budget", type=float, default=2.0, help="allowed median ratio")
    parser.add_argument(
        "--gap",
        type=float,
        default=0.1,
        help="seconds between two commands, so that one's after-effects (a child still exiting, "
        "caches) do not land on the next (default 0.1)",
    )
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
    start = [sys.executable, "-c", "pass"]
    with tempfile.TemporaryDirectory() as logdir:
        child, request = child_floor(env, logdir)
        commands = {
            "vkdoctor check --no-probe": (doctor, None),
            "vulkaninfo --summary": (info, None),
            "python -c pass": (start, None),
            "load-test child alone": (child, request),
        }
        for cmd, stdin in commands.values():  # warm the page cache before measuring
            timed(cmd, env, stdin)
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        codes: set[int] = set()
        for _ in range(args.n):
            for name, (cmd, stdin) in commands.items():
                time.sleep(args.gap)
                w, c, rc = timed(cmd, env, stdin)
                wall[name].append(w)
                cpu[name].append(c)
                if cmd is doctor:
                    codes.add(rc)

    median = {name: statistics.median(values) for name, values in wall.items()}
    m_doctor = median["vkdoctor check --no-probe"]
    m_info = median["vulkaninfo --summary"]
    ratio = m_doctor / m_info
    print(
        f"runs: {args.n} of each, alternating, {args.gap:g} s apart; load average "
        f"{os.getloadavg()[0]:.2f}; vkdoctor exit codes {sorted(codes)}"
    )
    for name in commands:
        print(
            f"  {name:28} median {median[name] * 1000:7.1f} ms wall, "
            f"{statistics.median(cpu[name]) * 1000:7.1f} ms CPU"
        )
    print(f"ratio (wall medians): {ratio:.2f}  (budget {args.budget:.2f})")
    floor = median["python -c pass"] + median["load-test child alone"]
    print(
        f"floor: vkdoctor's own start and the load-test child one after the other, "
        f"{floor * 1000:.1f} ms = {floor / m_info:.2f} x vulkaninfo, before any static check"
    )
    rows = breakdown(doctor, env)
    if rows:
        print("per check (one run, the slowest 8):")
        for code, seconds, severity in rows[:8]:
            print(f"  {code:8} {seconds * 1000:7.1f} ms  {severity}")
    if ratio > args.budget:
        print(f"OVER BUDGET: {ratio:.2f} > {args.budget:.2f}")
        return 1
    print("within budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
