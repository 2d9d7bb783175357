"""Benchmark: what each speed piece (vkdoctor/speed/) saves, cold and warm, against its lines.

Each piece is switched off for a run by VKDOCTOR_SPEED_OFF (vkdoctor.launch.SPEED_OFF: read by
the command layer alone, the report is the same either way), and `check --no-probe` is timed
with the piece and without it, in the same rounds as `vulkaninfo --summary`:

    zygote     the load test's child forked at launch, handed last run's request ahead
    factcache  facts of earlier runs kept on disk
    offload    the package checks forked onto another core
    replay     the last run's report printed again when nothing it read changed

The replay needs the fact cache (its store) and the zygote (a run whose load test starts a new
program is never kept): without either, no warm run is replayed. So those two, and the offload
(which a replayed run never reaches), are measured with the replay off in both runs, which is
what each does itself; the replay is measured against everything on.

Cold: a fresh, empty XDG_CACHE_HOME per run (a CI container). Warm: one cache directory per
configuration, filled by three runs before the rounds. Every round runs every configuration,
cold and warm, and vulkaninfo, in a shuffled order, `--gap` seconds apart; medians are
reported, in ms and as a ratio to vulkaninfo's median of the same run. A piece's saving is the
median, over the rounds, of its run without it minus its base configuration's run of the same
round (everything on, or everything but the replay, above), with a 90% bootstrap interval;
its share is that over the base's median. A piece the replay needs is also measured against
everything on ("with_replay": what deleting it would cost, the replay's saving included). The
CPU time of each run (its children's included) is kept too: on a loaded machine it moves less
than the wall time. A piece that saves less than a tenth of a run cold and warm, either way,
does not pay its way.

The lines a piece costs: its modules, the lines elsewhere in vkdoctor/ that name it, and the
functions elsewhere that exist only for it (PIECES). Before the rounds, every configuration
runs once more, its report kept: the reports (but for free space, which other programs
change) and exit codes must agree, or the benchmark exits 2.

It needs only this checkout, its interpreter (a venv with vkdoctor's dependencies) and
vulkaninfo; it reaches no network. The result goes to the JSON file named by --json.

    python benchmarks/pieces.py [-n 9] [--pieces zygote,offload] --json result.json
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from check_vs_vulkaninfo import REPO, adopt_orphans, timed

SPEED_OFF = "VKDOCTOR_SPEED_OFF"


@dataclass(frozen=True)
class Piece:
    #: its own modules, relative to the repository
    modules: tuple[str, ...]
    #: a line elsewhere in vkdoctor/ that matches this names the piece (a hook)
    names: str
    #: (module, function or class name): hooks elsewhere that exist only for this piece
    hooks: tuple[tuple[str, str], ...] = ()
    #: the configuration it is measured against (the pieces already off in both runs)
    base: tuple[str, ...] = ()
    #: the pieces that cannot work without this one: it is also measured against everything on
    needed_by: tuple[str, ...] = ()


PIECES = {
    "zygote": Piece(
        ("vkdoctor/speed/zygote.py",),
        r"\bzygote\b|ForkedChild|hand_ahead|take_ahead|ahead_pending",
        (("vkdoctor/launch.py", "_hand_ahead"), ("vkdoctor/children/loadtest.py", "_adopt_ahead")),
        base=("replay",),
        needed_by=("replay",),
    ),
    "factcache": Piece(
        # the store's interface on the Context, and the one encoder behind it; the readers'
        # part is each line that asks the store
        ("vkdoctor/speed/factcache.py", "vkdoctor/model/factstore.py"),
        r"\bfactcache\b|\bFactKind\b|\.store\.(get|put)\b",
        (),
        base=("replay",),
        needed_by=("replay",),
    ),
    "offload": Piece(
        ("vkdoctor/speed/offload.py",),
        r"\boffload\b|\bFork\b|before_fork|^\s*fork = ",
        (("vkdoctor/runner.py", "Forked"), ("vkdoctor/runner.py", "start_forks")),
        base=("replay",),
    ),
    "replay": Piece(
        ("vkdoctor/speed/replay.py", "vkdoctor/speed/inputs.py", "vkdoctor/facts/kept.py"),
        r"\breplay\b|\binputs\.|import inputs|\brecorder\(",
        (
            ("vkdoctor/launch.py", "_start_recording"),
            ("vkdoctor/launch.py", "_replay"),
            ("vkdoctor/runner.py", "_reading_for"),
        ),
    ),
}


def interval(diffs: list[float], draws: int = 2000) -> tuple[float, float]:
    """A 90% bootstrap interval of the median of the rounds' differences, in seconds: how far
    the machine's noise alone moves the saving."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(draws))
    return medians[int(draws * 0.05)], medians[int(draws * 0.95) - 1]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def _definitions(path: Path, name: str) -> list[tuple[int, int]]:
    """The line spans (first, last) of every function or class called `name` in `path`."""
    tree = ast.parse(path.read_text())
    return [
        (min([node.lineno, *(d.lineno for d in node.decorator_list)]), node.end_lineno or 0)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.name == name
    ]


def lines_of(piece: Piece) -> dict[str, object]:
    """What `piece` costs in lines: its modules, and its hooks elsewhere (each line once)."""
    own = {m: _lines(REPO / m) for m in piece.modules if (REPO / m).exists()}
    hook_lines: dict[str, set[int]] = {}
    missing = []
    for module, name in piece.hooks:
        path = REPO / module
        spans = _definitions(path, name) if path.exists() else []
        if not spans:
            missing.append(f"{module}:{name}")
        for first, last in spans:
            hook_lines.setdefault(module, set()).update(range(first, last + 1))
    pattern = re.compile(piece.names)
    for path in sorted((REPO / "vkdoctor").rglob("*.py")):
        module = str(path.relative_to(REPO))
        if module in piece.modules:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                hook_lines.setdefault(module, set()).add(number)
    hooks = {m: len(n) for m, n in sorted(hook_lines.items())}
    return {
        "modules": own,
        "hooks": hooks,
        "hooks_not_found": missing,
        "total": sum(own.values()) + sum(hooks.values()),
    }


def _steady(report: str) -> str:
    """A report without what other programs change between two runs (free space)."""
    return re.sub(r"\d+(\.\d+)? [KMGT]iB free", "N free", report)


def configurations(pieces: list[str]) -> dict[str, tuple[str, ...]]:
    """Each configuration to time, by name: the pieces it leaves off."""
    configs: dict[str, tuple[str, ...]] = {"all": ()}
    for name in pieces:
        base = PIECES[name].base
        if base:
            configs["-" + ",".join(base)] = base
        configs["-" + ",".join((*base, name))] = (*base, name)
        if PIECES[name].needed_by:
            configs["-" + name] = (name,)
    return configs


def _env(base: dict[str, str], off: tuple[str, ...], cache: str) -> dict[str, str]:
    env = {**base, "XDG_CACHE_HOME": cache}
    if off:
        env[SPEED_OFF] = ",".join(off)
    return env


def agree(
    doctor: list[str], base: dict[str, str], configs: dict[str, tuple[str, ...]], caches: str
) -> dict[str, object]:
    """Every configuration's report and exit code, cold then warm (a third run in a cache two
    runs filled): they must all be the same."""
    seen: dict[str, tuple[int, str]] = {}
    for name, off in configs.items():
        for kind in ("cold", "warm"):
            cache = f"{caches}/agree-{name}-{kind}"
            for _ in range(1 if kind == "cold" else 3):
                proc = subprocess.run(
                    doctor, env=_env(base, off, cache), capture_output=True, text=True, check=False
                )
            seen[f"{name} {kind}"] = (proc.returncode, _steady(proc.stdout))
    distinct = {v for v in seen.values()}
    return {
        # a report at all (its last line is the verdict), and the same one everywhere
        "same": len(distinct) == 1 and all("vkdoctor: " in out for _, out in distinct),
        "exit_codes": {k: v[0] for k, v in seen.items()},
        "reports": sorted({v[1] for v in seen.values()}),
    }


def measure(args: argparse.Namespace) -> dict[str, object]:
    vulkaninfo = shutil.which("vulkaninfo")
    if vulkaninfo is None:
        print("vulkaninfo not found (Debian/Ubuntu: apt install vulkan-tools)", file=sys.stderr)
        sys.exit(2)
    # the machine as it is (LD_LIBRARY_PATH may be how its driver is found), this checkout first
    base = {k: v for k, v in os.environ.items() if not k.startswith("VKDOCTOR_")}
    path = [str(REPO), *(p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p)]
    base.update(PYTHONPATH=os.pathsep.join(path), LC_ALL="C", COLUMNS="80")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "vkdoctor")],
        stdout=subprocess.DEVNULL,
        env={k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"},
        timeout=300,
        check=False,
    )
    doctor = [sys.executable, "-m", "vkdoctor", "check", "--no-probe"]
    configs = configurations(args.pieces)
    wall: dict[str, list[float]] = {f"{c} {k}": [] for c in configs for k in ("cold", "warm")}
    wall["vulkaninfo"] = []
    cpu: dict[str, list[float]] = {name: [] for name in wall}
    codes: dict[str, set[int]] = {name: set() for name in wall}
    load = [os.getloadavg()]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="vkdoctor-pieces-") as caches:
        agreement = agree(doctor, base, configs, caches)
        if not agreement["same"]:
            print(json.dumps(agreement, indent=1), file=sys.stderr)
            print(
                "the configurations' reports differ, or one printed no report: a piece changes "
                "what vkdoctor says, or vkdoctor cannot run here",
                file=sys.stderr,
            )
            sys.exit(2)
        for name, off in configs.items():
            for _ in range(3):
                timed(doctor, _env(base, off, f"{caches}/warm-{name}"))
        for n in range(args.n):
            jobs = [(f"{c} {k}", c, k) for c in configs for k in ("cold", "warm")]
            jobs.append(("vulkaninfo", "", ""))
            random.shuffle(jobs)
            for label, config, kind in jobs:
                time.sleep(args.gap)
                if label == "vulkaninfo":
                    w, c, rc = timed([vulkaninfo, "--summary"], base)
                else:
                    cache = f"{caches}/{kind}-{config}" + (f"-{n}" if kind == "cold" else "")
                    w, c, rc = timed(doctor, _env(base, configs[config], cache))
                wall[label].append(w)
                cpu[label].append(c)
                codes[label].add(rc)
            load.append(os.getloadavg())
    median = {name: statistics.median(v) for name, v in wall.items()}
    info = median["vulkaninfo"]
    pieces = {}
    for name in args.pieces:
        piece = PIECES[name]
        on = "all" if not piece.base else "-" + ",".join(piece.base)
        row = saving(wall, cpu, on, "-" + ",".join((*piece.base, name)))
        row["lines"] = lines_of(piece)
        if piece.needed_by:  # and with what cannot work without it
            row["with_" + ",".join(piece.needed_by)] = saving(wall, cpu, "all", "-" + name)
        row["pays"] = any(
            r["cold"]["share_of_run"] >= 0.1 or r["warm"]["share_of_run"] >= 0.1
            for r in (row, *(v for k, v in row.items() if k.startswith("with_")))
        )
        pieces[name] = row
    return {
        "machine": {
            "node": platform.node(),
            "cores": len(os.sched_getaffinity(0)),
            "load_average_per_round": [round(x[0], 2) for x in load],
            "python": sys.version.split()[0],
            "commit": _commit(),
        },
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "rounds": args.n,
        "gap_s": args.gap,
        "configurations": {name: list(off) for name, off in configs.items()},
        "median_ms": {name: round(m * 1000, 1) for name, m in median.items()},
        "ratio_to_vulkaninfo": {n: round(m / info, 2) for n, m in median.items()},
        "runs_ms": {name: [round(w * 1000, 1) for w in v] for name, v in wall.items()},
        "cpu_median_ms": {n: round(statistics.median(v) * 1000, 1) for n, v in cpu.items()},
        "exit_codes": {name: sorted(c) for name, c in codes.items()},
        "reports_agree": agreement,
        "pieces": pieces,
    }


def saving(
    wall: dict[str, list[float]], cpu: dict[str, list[float]], on: str, off: str
) -> dict[str, Any]:
    """What configuration `off` takes longer than `on`, cold and warm."""
    row: dict[str, Any] = {"base": on, "without": off}
    for kind in ("cold", "warm"):
        with_, without = wall[f"{on} {kind}"], wall[f"{off} {kind}"]
        # each round's difference: the load of that moment weighs on both runs alike
        diffs = [a - b for a, b in zip(without, with_, strict=True)]
        saved = statistics.median(diffs)
        low, high = interval(diffs)
        cpu_saved = statistics.median(cpu[f"{off} {kind}"]) - statistics.median(cpu[f"{on} {kind}"])
        row[kind] = {
            "saved_ms": round(saved * 1000, 1),
            "saved_ms_90pct_interval": [round(low * 1000, 1), round(high * 1000, 1)],
            "share_of_run": round(saved / statistics.median(with_), 3),
            "cpu_saved_ms": round(cpu_saved * 1000, 1),
            "with_ms": round(statistics.median(with_) * 1000, 1),
            "without_ms": round(statistics.median(without) * 1000, 1),
        }
    return row


def _commit() -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except OSError:
        return None
    return proc.stdout.strip() or None


def table(result: dict[str, object]) -> str:
    out = []
    machine = result["machine"]
    assert isinstance(machine, dict)
    loads = machine["load_average_per_round"]
    median = result["median_ms"]
    assert isinstance(median, dict)
    out.append(
        f"{result['rounds']} rounds on {machine['cores']} cores, load average "
        f"{min(loads):.2f}-{max(loads):.2f}; medians:"
    )
    ratio = result["ratio_to_vulkaninfo"]
    assert isinstance(ratio, dict)
    for name, ms in median.items():
        out.append(f"  {name:24} {ms:8.1f} ms  {ratio[name]:5.2f} x vulkaninfo")
    out.append("saved: median of the rounds' differences, % of the run, 90% interval")
    out.append(f"{'piece':12}{'lines':>5}  {'cold saved':23} {'warm saved':23} verdict")
    pieces = result["pieces"]
    assert isinstance(pieces, dict)
    for name, row in pieces.items():
        rows = [(name, row), *((f" {k}", v) for k, v in row.items() if k.startswith("with_"))]
        for label, r in rows:
            cells = []
            for kind in ("cold", "warm"):
                c = r[kind]
                low, high = c["saved_ms_90pct_interval"]
                cells.append(
                    f"{c['saved_ms']:4.0f} ms {c['share_of_run']:5.0%} {low:.0f}..{high:.0f}"
                )
            lines = f"{row['lines']['total']:5}" if label == name else ""
            verdict = "" if label != name else "pays" if row["pays"] else "under a tenth"
            out.append(f"{label:12}{lines:>5}  {cells[0]:23} {cells[1]:23} {verdict}".rstrip())
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=9, help="rounds (default 9)")
    parser.add_argument(
        "--pieces",
        default=",".join(p for p in PIECES if (REPO / PIECES[p].modules[0]).exists()),
        help="comma-separated pieces to measure (default: every one in this checkout)",
    )
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between two commands")
    parser.add_argument("--json", type=Path, required=True, help="where to write the result")
    args = parser.parse_args()
    args.pieces = [p for p in args.pieces.split(",") if p]
    unknown = [p for p in args.pieces if p not in PIECES]
    if unknown:
        parser.error(f"unknown pieces: {', '.join(unknown)} (known: {', '.join(PIECES)})")
    adopt_orphans()
    result = measure(args)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
