"""Running one fuzz input, and mutating seeds: what the hypothesis tests (tests/test_fuzz_*.py)
and `benchmarks/fuzz.py` share, so both judge an input the same way.

`judge(target, data, scratch)` runs the target once under tracemalloc and returns an Outcome:
the exception when it is not one of `target.expected`, the CPU time and the Python heap peak,
and whether either is out of proportion to the input's size (the bounds in tests/fuzzing.py); a
run past ten times its bound in wall-clock time is stopped and counts as out of time.
`mutate(seed, rng, others)` applies a few byte-level mutations, as AFL-style fuzzers do: flips,
interesting bytes and tokens, deletions, duplications, splices from another seed.
"""

from __future__ import annotations

import random
import shutil
import signal
import time
import traceback
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fuzzing import FuzzTarget

MB = 1 << 20

#: tokens the readers care about: JSON syntax, manifest keys, dpkg/pacman/rpm field syntax
TOKENS: tuple[bytes, ...] = (
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b":",
    b",",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"\\u0000",
    b"null",
    b"true",
    b"1e999",
    b"-0",
    b"0x10",
    b"[[[[[[[[",
    b"{{{{",
    b'"ICD"',
    b'"library_path"',
    b'"file_format_version"',
    b'"api_version"',
    b'"layer"',
    b'"layers"',
    b'"name"',
    b'"type"',
    b'"enable_environment"',
    b'"disable_environment"',
    b'"functions"',
    b'"library_arch"',
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\x00",
    b"\n",
    b"\n\n",
    b"\r\n",
    b" ",
    b"\t",
    b"Package: ",
    b"Status: install ok installed\n",
    b"Version: ",
    b"Architecture: ",
    b"Depends: ",
    b"Provides: ",
    b"Conffiles:\n /etc/x 0123456789abcdef0123456789abcdef\n",
    b" config-files\n",
    b":any",
    b" (>= ",
    b" | ",
    b"%NAME%\n",
    b"%VERSION%\n",
    b"%DEPENDS%\n",
    b"%PROVIDES%\n",
    b"%FILES%\n",
    b"%",
    b"P\t",
    b"R\t",
    b"V\t",
    b"\t(none)\t",
    b"./usr/lib/",
    b" sha256digest=",
    b" md5digest=",
    b"\\040",
    b"0123456789abcdef0123456789abcdef  usr/lib/x",
    b"/",
    b"..",
    b"$ORIGIN",
    b"\xc3\x28",
    b"\xe2\x82",
)
INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x20, 0x0A, 0x22, 0x5C, 0x25)


def mutate(seed: bytes, rng: random.Random, others: Sequence[bytes] = (), steps: int = 0) -> bytes:
    """`seed` with 1-8 mutations (or `steps`)."""
    data = bytearray(seed)
    for _ in range(steps or rng.choice((1, 1, 2, 2, 3, 4, 8))):
        pos = rng.randrange(len(data) + 1)
        op = rng.randrange(9)
        if op == 0 and data:  # flip a bit
            i = min(pos, len(data) - 1)
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1 and data:  # an interesting byte
            data[min(pos, len(data) - 1)] = rng.choice(INTERESTING)
        elif op == 2:  # insert a token
            data[pos:pos] = rng.choice(TOKENS)
        elif op == 3 and data:  # replace a stretch with a token
            data[pos : pos + rng.randrange(1, 16)] = rng.choice(TOKENS)
        elif op == 4 and data:  # delete a stretch
            data[pos : pos + rng.randrange(1, max(2, len(data) // 8))] = b""
        elif op == 5 and data:  # duplicate a stretch
            start = rng.randrange(len(data))
            piece = data[start : start + rng.randrange(1, 256)]
            data[pos:pos] = piece * rng.choice((1, 2, 16))
        elif op == 6 and others:  # splice a piece of another seed
            other = rng.choice(others)
            if other:
                start = rng.randrange(len(other))
                data[pos:pos] = other[start : start + rng.randrange(1, 512)]
        elif op == 7:  # cut the end off
            del data[pos:]
        else:  # random bytes
            data[pos:pos] = rng.randbytes(rng.randrange(1, 9))
    return bytes(data)


@dataclass
class Outcome:
    size: int
    #: CPU seconds of this process (a tool the reader runs is bounded by its own timeout)
    seconds: float
    wall: float
    peak_bytes: int
    #: the unexpected exception, formatted ("" when none)
    error: str = ""
    #: "time" or "memory" when a bound was passed ("" when none)
    over: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.error or self.over)

    def describe(self) -> str:
        if self.error:
            return self.error
        return (
            f"{self.over} out of proportion: {self.seconds:.3f} s of CPU ({self.wall:.3f} s), peak {self.peak_bytes} bytes "
            f"of Python memory for {self.size} bytes of input"
        )


def time_bound(target: FuzzTarget, size: int) -> float:
    """`seconds_floor` plus as much again per MB of input."""
    return target.seconds_floor * (1 + size / MB)


def memory_bound(target: FuzzTarget, size: int) -> int:
    return int(target.memory_factor * size) + 32 * MB


class Hung(BaseException):
    """Raised into a target that ran ten times past its time bound."""


def _hung(signum: int, frame: object) -> None:
    raise Hung


def judge(target: FuzzTarget, data: bytes, scratch: Path) -> Outcome:
    """Run `target` on `data` in an emptied `scratch` directory, under tracemalloc; a run over
    its time bound is run again without it (tracemalloc makes allocation several times slower),
    and that time is the one judged."""
    outcome = _judge(target, data, scratch, trace_memory=True)
    if outcome.over == "time" and not outcome.error:
        again = _judge(target, data, scratch, trace_memory=False)
        outcome.seconds, outcome.wall, outcome.error = again.seconds, again.wall, again.error
        outcome.over = again.over or (
            "memory" if outcome.peak_bytes > memory_bound(target, len(data)) else ""
        )
    return outcome


def _judge(target: FuzzTarget, data: bytes, scratch: Path, *, trace_memory: bool) -> Outcome:
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    error = ""
    if trace_memory:
        tracemalloc.start()
        tracemalloc.reset_peak()
    # a hang never returns: stopped at ten times the bound, and reported as out of time
    limit = 10 * time_bound(target, len(data))
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.setitimer(signal.ITIMER_REAL, limit)
    started, cpu = time.perf_counter(), time.process_time()
    try:
        target.run(data, str(scratch))
    except Hung:
        pass
    except target.expected:
        pass
    except Exception as exc:
        error = "".join(traceback.format_exception(exc)).rstrip()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        wall = time.perf_counter() - started
        # the bound is on CPU time: two cores shared with other work stretch the wall clock
        seconds = time.process_time() - cpu
        peak = 0
        if trace_memory:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    over = ""
    if seconds > time_bound(target, len(data)) or wall > limit:
        over = "time"
    elif peak > memory_bound(target, len(data)):
        over = "memory"
    return Outcome(
        size=len(data), seconds=seconds, wall=wall, peak_bytes=peak, error=error, over=over
    )
