"""Benchmark: `vkdoctor check --no-probe` against `vulkaninfo --summary` on this machine.

Runs the two commands N times each, alternating (so load changes hit both alike) and a short gap
apart, prints each one's median wall time and the ratio, and the per-check times of one extra
JSON run. `check` runs twice per round: cold (a fresh, empty XDG_CACHE_HOME, as in a CI
container) and warm (a cache directory an earlier run on this unchanged machine filled:
vkdoctor.speed.factcache). Exits 1 when a median ratio is over its budget (cold 2.5, warm 1.6), 2 when
a command cannot run at all. This is a benchmark, not a test: run it on a quiet machine.

It also times, in the same rounds, the two things no `check` can do without: starting the
interpreter (`python -c pass`) and the load-test child alone, given the request `check` gives it
here (it dlopens every driver and creates an instance through the real loader, as vulkaninfo
does, in a second interpreter). Their sum is printed as the floor, in multiples of vulkaninfo.

vkdoctor runs from this checkout with its bytecode compiled first (python -m compileall), as
pip leaves an installed package: with PYTHONDONTWRITEBYTECODE set (some containers set it),
every run would otherwise compile all of vkdoctor from source again (about 0.25 s).

    python benchmarks/check_vs_vulkaninfo.py [-n 15] [--cold 2.5] [--warm 1.6] [-- check args]
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
    """Wall seconds, CPU seconds (user+system, of every descendant: `adopt_orphans`) and the
    exit code."""
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
    _reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def adopt_orphans() -> None:
    """Become the reaper of every process the commands leave behind (PR_SET_CHILD_SUBREAPER):
    a child that its parent never waits for (vkdoctor's load-test child) is
    reaped here, and its CPU time counts in RUSAGE_CHILDREN with the command's own."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        sys.exit("cannot become a subreaper (prctl PR_SET_CHILD_SUBREAPER): the CPU would be short")


def _reap_orphans(limit: float = 5.0) -> None:
    """Wait for the descendants that outlived the command (they end with it: vkdoctor ties
    them to its life), at most `limit` seconds."""
    deadline = time.monotonic() + limit
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > deadline:
                return
            time.sleep(0.001)


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
    from vkdoctor.children.loadtest import child_command, child_request
    from vkdoctor.commands.common import host_context
    from vkdoctor.loader import load_targets

    targets = dict(enumerate(load_targets(host_context())))
    request = child_request(targets, good=(), logdir=Path(logdir), loader="libvulkan.so.1")
    return child_command(), json.dumps(request).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--cold", type=float, default=2.5, help="allowed cold median ratio")
    parser.add_argument("--warm", type=float, default=1.6, help="allowed warm median ratio")
    parser.add_argument(
        "--gap",
        type=float,
        default=0.1,
        help="seconds between two commands, so that one's after-effects (a child still exiting, "
        "caches) do not land on the next (default 0.1)",
    )
    parser.add_argument("extra", nargs="*", help="extra arguments for vkdoctor check")
    args = parser.parse_args()
    adopt_orphans()

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
    cold, warm = "check --no-probe, cold", "check --no-probe, warm"
    with tempfile.TemporaryDirectory() as logdir, tempfile.TemporaryDirectory() as caches:
        child, request = child_floor(env, logdir)
        commands = {
            cold: (doctor, None),
            warm: (doctor, None),
            "vulkaninfo --summary": (info, None),
            "python -c pass": (start, None),
            "load-test child alone": (child, request),
        }
        warm_env = {**env, "XDG_CACHE_HOME": f"{caches}/warm"}
        envs = {name: env for name in commands}
        envs[warm] = warm_env
        for name, (cmd, stdin) in commands.items():  # warm the page cache (and the cache)
            timed(cmd, envs[name], stdin)
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        codes: set[int] = set()
        for n in range(args.n):
            envs[cold] = {**env, "XDG_CACHE_HOME": f"{caches}/cold-{n}"}
            for name, (cmd, stdin) in commands.items():
                time.sleep(args.gap)
                w, c, rc = timed(cmd, envs[name], stdin)
                wall[name].append(w)
                cpu[name].append(c)
                if cmd is doctor:
                    codes.add(rc)
        breakdowns = {
            name: breakdown(doctor, run_env)
            for name, run_env in (
                (cold, {**env, "XDG_CACHE_HOME": f"{caches}/last"}),
                (warm, warm_env),
            )
        }

    median = {name: statistics.median(values) for name, values in wall.items()}
    m_info = median["vulkaninfo --summary"]
    ratios = {cold: median[cold] / m_info, warm: median[warm] / m_info}
    budgets = {cold: args.cold, warm: args.warm}
    print(
        f"runs: {args.n} of each, alternating, {args.gap:g} s apart; load average "
        f"{os.getloadavg()[0]:.2f}; vkdoctor exit codes {sorted(codes)}"
    )
    for name in commands:
        print(
            f"  {name:28} median {median[name] * 1000:7.1f} ms wall, "
            f"{statistics.median(cpu[name]) * 1000:7.1f} ms CPU"
        )
    for name, ratio in ratios.items():
        print(
            f"ratio {name.split(', ')[1]} (wall medians): {ratio:.2f}  (budget {budgets[name]:.2f})"
        )
    floor = median["python -c pass"] + median["load-test child alone"]
    print(
        f"floor: vkdoctor's own start and the load-test child one after the other, "
        f"{floor * 1000:.1f} ms = {floor / m_info:.2f} x vulkaninfo, before any static check"
    )
    cores = len(os.sched_getaffinity(0))
    for name in (cold, warm):
        spread = statistics.median(cpu[name]) / cores
        print(
            f"CPU floor, {name.split(', ')[1]}: its CPU time spread over {cores} cores, "
            f"{spread * 1000:.1f} ms = {spread / m_info:.2f} x vulkaninfo"
        )
    for name, rows in breakdowns.items():
        if rows:
            print(f"per check, {name.split(', ')[1]} (one run, the slowest 8):")
            for code, seconds, severity in rows[:8]:
                print(f"  {code:8} {seconds * 1000:7.1f} ms  {severity}")
    over = [name for name, ratio in ratios.items() if ratio > budgets[name]]
    for name in over:
        print(f"OVER BUDGET, {name.split(', ')[1]}: {ratios[name]:.2f} > {budgets[name]:.2f}")
    if over:
        return 1
    print("within budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
