"""Property-based fuzzing of reading reports back (targets in tests/fuzz_reports.py): mutated
real reports are either refused with ReportError or compared, summed up and rendered without
raising, in time and memory in proportion to their size.

Long campaigns: `python benchmarks/fuzz.py --target reportfile` (docs/development.md).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fuzz_reports import TARGETS
from fuzzing import FuzzTarget
from fuzzrun import judge, mutate

EXAMPLES = {"reportfile": 300, "diff": 100, "summary": 100}


def test_every_target_has_its_examples() -> None:
    assert sorted(EXAMPLES) == sorted(t.name for t in TARGETS)


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_mutated_real_reports(target: FuzzTarget, tmp_path: Path) -> None:
    seeds = list(target.seeds())
    assert seeds
    scratch = tmp_path / "scratch"
    for seed in seeds:  # the real reports themselves load and render
        outcome = judge(target, seed, scratch)
        assert not outcome.failed, outcome.describe()
        assert target.run(seed, str(scratch))

    for i in range(EXAMPLES[target.name]):  # seeded: a failure names the seed that repeats it
        rng = random.Random(i)
        data = mutate(rng.choice(seeds), rng, seeds)
        outcome = judge(target, data, scratch)
        assert not outcome.failed, f"{target.name} seed {i}: {outcome.describe()}\n{data[:2000]!r}"
