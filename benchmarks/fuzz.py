"""Long fuzz campaigns over every target in tests/fuzz_*.py (tests/fuzzing.py's interface).

    python benchmarks/fuzz.py [--seconds T | --examples N] [--target NAME ...] [--out DIR]
                              [--seed S] [--json FILE] [--list]

Each target runs in its own child process (so a crash or a runaway allocation costs only that
target, and its ru_maxrss is its own), mutating its seeds for T seconds or N inputs. Each input
is judged as the hypothesis tests judge it (tests/fuzzrun.py): an exception other than the
target's `expected` ones, or CPU time or Python memory out of proportion to the input's size, is
a failure. One reproducer per distinct failure is saved under --out (the target's name, then a
digest of the input); a child killed by a signal leaves the input it was running there too.

The report gives, per target: inputs run, failures (distinct), the worst CPU time per input,
the Python heap peak (tracemalloc) and the child's peak RSS. Exit 1 when anything failed.
Reproduce one input: `python benchmarks/fuzz.py --replay TARGET FILE`.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"


def _import_path() -> None:
    for p in (str(REPO), str(TESTS)):
        if p not in sys.path:
            sys.path.insert(0, p)


def modules() -> list[str]:
    """The fuzz target modules there are (tests/fuzz_files.py, tests/fuzz_elf.py when present)."""
    return sorted(p.stem for p in TESTS.glob("fuzz_*.py"))


def targets() -> dict[str, Any]:
    _import_path()
    found: dict[str, Any] = {}
    for name in modules():
        for target in importlib.import_module(name).TARGETS:
            if target.name in found:
                raise SystemExit(f"fuzz target {target.name} is defined twice")
            found[target.name] = target
    return found


def _signature(error: str) -> str:
    """What tells two failures apart: the exception line and the innermost frame of ours."""
    lines = error.strip().splitlines()
    frames = [ln.strip() for ln in lines if ln.strip().startswith('File "') and "/vkdoctor/" in ln]
    return (frames[-1] if frames else "") + " | " + (lines[-1] if lines else "")


def campaign(name: str, *, seconds: float, examples: int, seed: int, out: Path) -> dict[str, Any]:
    """One target's campaign, in this process (the child)."""
    _import_path()
    from fuzzrun import judge, mutate

    target = targets()[name]
    started = time.monotonic()
    seeds = list(target.seeds())
    seed_seconds = time.monotonic() - started
    rng = random.Random(seed)
    scratch = Path(tempfile.mkdtemp(prefix=f"vkdoctor-fuzz-{name}-"))
    current = out / f"{name}-current.bin"
    out.mkdir(parents=True, exist_ok=True)
    judge(target, seeds[0], scratch / "run")  # warm: imports, first reads of system files
    count, worst, worst_size, heap = 0, 0.0, 0, 0
    failures: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + seconds if seconds else None
    while (deadline is None and count < examples) or (
        deadline is not None and time.monotonic() < deadline
    ):
        data = seeds[count] if count < len(seeds) else mutate(rng.choice(seeds), rng, seeds)
        current.write_bytes(data)  # what a crash of the whole process leaves to replay
        outcome = judge(target, data, scratch / "run")
        count += 1
        if outcome.seconds > worst:
            worst, worst_size = outcome.seconds, outcome.size
        heap = max(heap, outcome.peak_bytes)
        if outcome.failed:
            key = _signature(outcome.error) if outcome.error else outcome.over
            if key not in failures:
                path = out / f"{name}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
                path.write_bytes(data)
                failures[key] = {"reproducer": str(path), "what": outcome.describe()[-2000:]}
            failures[key]["count"] = failures[key].get("count", 0) + 1
    current.unlink(missing_ok=True)
    return {
        "target": name,
        "seeds": len(seeds),
        "seed_seconds": round(seed_seconds, 2),
        "inputs": count,
        "seconds": round(time.monotonic() - started, 1),
        "failures": list(failures.values()),
        "worst_cpu_seconds": round(worst, 4),
        "worst_input_bytes": worst_size,
        "peak_python_heap_bytes": heap,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }


def _run_child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        name,
        "--seconds",
        str(args.seconds or 0),
        "--examples",
        str(args.examples),
        "--seed",
        str(args.seed),
        "--out",
        str(args.out),
    ]
    # the child's own bound: its campaign, its seeds (a few seconds) and a last slow input
    limit = (args.seconds or args.examples) + 600
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        return _broken(name, args, f"the campaign ran past {limit} s")
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return _broken(name, args, f"exit status {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return dict(json.loads(lines[-1]))


def _broken(name: str, args: argparse.Namespace, why: str) -> dict[str, Any]:
    current = Path(args.out) / f"{name}-current.bin"
    return {
        "target": name,
        "inputs": None,
        "failures": [
            {
                "what": f"the campaign's process died: {why}",
                "reproducer": str(current) if current.exists() else None,
            }
        ],
    }


def _table(results: list[dict[str, Any]]) -> str:
    rows = [("target", "inputs", "failures", "worst CPU s/input", "Python peak", "peak RSS")]
    for r in results:
        rows.append(
            (
                r["target"],
                str(r.get("inputs")),
                str(len(r["failures"])),
                f"{r['worst_cpu_seconds']:.4f} ({r['worst_input_bytes']} B)"
                if "worst_cpu_seconds" in r
                else "-",
                f"{r['peak_python_heap_bytes'] / 2**20:.1f} MiB"
                if "peak_python_heap_bytes" in r
                else "-",
                f"{r['peak_rss_kib'] / 1024:.0f} MiB" if "peak_rss_kib" in r else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    text = "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows
    )
    for r in results:
        for f in r["failures"]:
            text += f"\n\n{r['target']}: {f['what']}\n  reproducer: {f.get('reproducer')}"
            if f.get("count"):
                text += f" ({f['count']} inputs)"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, help="per target (default: --examples)")
    parser.add_argument("--examples", type=int, default=2000, help="per target [2000]")
    parser.add_argument("--target", action="append", help="only these (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-out"), help="reproducers [fuzz-out]")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--replay", nargs=2, metavar=("TARGET", "FILE"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        result = campaign(
            args.child,
            seconds=args.seconds or 0,
            examples=args.examples,
            seed=args.seed,
            out=args.out,
        )
        print(json.dumps(result))
        return 0
    found = targets()
    if args.list:
        for name, t in found.items():
            print(f"{name}  ({t.run.__module__})")
        return 0
    if args.replay:
        from fuzzrun import judge  # targets() put tests/ on the path

        name, file = args.replay
        outcome = judge(found[name], Path(file).read_bytes(), Path(tempfile.mkdtemp()) / "run")
        print(outcome.describe() if outcome.failed else f"no failure ({outcome})")
        return 1 if outcome.failed else 0
    names = args.target or list(found)
    unknown = [n for n in names if n not in found]
    if unknown:
        parser.error(f"no such target: {', '.join(unknown)} (there are: {', '.join(found)})")
    print(f"fuzz modules: {', '.join(modules())}; targets: {', '.join(names)}", flush=True)
    results = []
    for name in names:
        result = _run_child(name, args)
        results.append(result)
        print(
            f"{name}: {result.get('inputs')} inputs, {len(result['failures'])} failures",
            flush=True,
        )
    print()
    print(_table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
