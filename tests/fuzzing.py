"""The interface between the fuzz targets (tests/fuzz_*.py) and their two drivers: the
hypothesis tests in the suite and `benchmarks/fuzz.py` for long campaigns.

A target takes bytes (a mutated real input: a manifest, an ELF file, an ld.so.cache, a package
database entry) and runs one reader on them. It may raise only its module's own error types
(`expected`); anything else, or time or memory out of proportion to the input's size, is a bug.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FuzzTarget:
    #: stable name, used by `benchmarks/fuzz.py --target NAME`
    name: str
    #: real inputs to mutate (read or built once; keep each under a few hundred KB)
    seeds: Callable[[], Sequence[bytes]]
    #: runs the reader on one input; it gets a scratch directory it may write the input into
    run: Callable[[bytes, str], object]
    #: the exceptions the reader is allowed to raise for bad input
    expected: tuple[type[BaseException], ...] = field(default=())
    #: a bound per input: seconds per MB of input, plus this floor
    seconds_floor: float = 0.5
    #: peak Python memory allowed, as a multiple of the input size, plus 32 MB
    memory_factor: float = 64.0
