"""Property-based fuzzing of the ELF, ld.so.cache and ld.so.conf readers (tests/fuzz_elf.py):
real inputs mutated where the readers look (headers, the dynamic section, the string, version
and hash tables, the cache's header and extension), each run bounded in time and memory by its
size. Any exception is a failure: these readers report bad input in their results.
"""

from __future__ import annotations

import contextlib
import re
import struct
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import cache

import pytest
from fuzz_elf import MARK, TARGETS
from fuzzing import FuzzTarget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vkdoctor.elf.reader import _Bad, _Image, _layout

#: seconds per MB of input on top of a target's floor
SECONDS_PER_MB = 2.0
EXAMPLES = {"elf-reader": 1000, "elf-dynsym": 500, "ldso-cache": 400, "ldso-conf": 300}
INTERESTING = (0, 1, 2, 4, 7, 8, 16, 24, 0x7F, 0x80, 0xFF, 0xFFFF, 0x10000, 0x7FFFFFFF)
INTERESTING += (0xFFFFFFFF, 0x6FFFFFFE, 0x6FFFFFFC, 1 << 62, 0xFFFFFFFFFFFFFFFF)
DT_REGIONS = (5, 0x6FFFFFFE, 0x6FFFFFFC, 4, 0x6FFFFEF5, 6, 0x6FFFFFF0)


def _elf_hot(data: bytes) -> list[tuple[int, int]]:
    """Where ld.so (and the reader) look: the headers, the dynamic section, and the first bytes
    of each table it points at."""
    hot = [(4, 60 + 56 * 16)]
    image = _Image(data, is64=data[4] == 2, little=data[5] == 1)
    try:
        _, raw = _layout(image)
    except _Bad:
        return hot
    for vaddr, off, filesz in image.loads:
        del vaddr, filesz
        hot.append((off, 64))
    if raw is None:
        return hot
    for tag in DT_REGIONS:
        if tag in raw:
            with contextlib.suppress(_Bad):
                hot.append((image.offset(raw[tag][0], "table"), 512))
    # the dynamic section itself: find it through the program headers once more
    phoff = struct.unpack_from(
        image.e + "Q" if image.is64 else image.e + "I", data, 32 if image.is64 else 28
    )[0]
    for i in range(16):
        at = phoff + i * (56 if image.is64 else 32)
        if at + 8 > len(data):
            break
        if struct.unpack_from(image.e + "I", data, at)[0] == 2:
            off = struct.unpack_from(
                image.e + ("Q" if image.is64 else "I"), data, at + (8 if image.is64 else 4)
            )[0]
            hot.append((off, 512))
    return hot


@cache
def _seeds(name: str) -> tuple[tuple[bytes, tuple[tuple[int, int], ...]], ...]:
    target = _target(name)
    out = []
    for seed in target.seeds():
        if seed[:4] == b"\x7fELF":
            hot = _elf_hot(seed)
        elif name == "ldso-cache":
            (ext,) = struct.unpack_from("<I", seed, 32)
            hot = [(0, 48 + 24 * 8), (ext, 256), (len(seed) - 512, 512)]
        else:
            # the include lines (their globs) and the file names, then anywhere
            hot = [(m.start(), 48) for m in re.finditer(rb"include|@@@ ", seed)]
            hot.append((0, len(seed)))
        out.append(
            (seed, tuple((max(0, a), max(1, min(n, len(seed) - max(0, a)))) for a, n in hot))
        )
    return tuple(out)


def _target(name: str) -> FuzzTarget:
    return next(t for t in TARGETS if t.name == name)


TOKENS = (b"include ", b"*", b"/", b"\n", b"..", b"#", b"\0", MARK + b"ld.so.conf\n")


class _Script:
    """The bytes hypothesis draws, read as numbers (zeros once they run out): one draw per
    example instead of a dozen, and hypothesis still shrinks a failure byte by byte."""

    def __init__(self, raw: bytes) -> None:
        self.raw, self.at = raw, 0

    def take(self, n: int) -> int:
        chunk = self.raw[self.at : self.at + n]
        self.at += n
        return int.from_bytes(chunk, "little")

    def pick(self, count: int, n: int = 1) -> int:
        return self.take(n) % max(count, 1)


def mutate(name: str, raw: bytes) -> bytes:
    """A seed of target `name` with up to 6 mutations, as `raw` says: words set to interesting
    values, bytes changed, a hot region copied over another, a cut, short insertions, tokens."""
    script = _Script(raw)
    seeds = _seeds(name)
    seed, hot = seeds[script.pick(len(seeds))]
    data = bytearray(seed)
    for _ in range(1 + script.pick(6)):
        start, size = hot[script.pick(len(hot))]
        at = min(start + script.pick(size, 3), max(len(data) - 1, 0))
        kind = script.pick(6)
        if kind == 0:
            width = (1, 2, 4, 8)[script.pick(4)]
            choice = script.take(1)
            value = INTERESTING[choice % len(INTERESTING)] if choice < 128 else script.take(4)
            data[at : at + width] = (value & (1 << 8 * width) - 1).to_bytes(width, "little")
        elif kind == 1:
            data[at : at + 1] = bytes([script.take(1)])
        elif kind == 2:
            src, n = hot[script.pick(len(hot))]
            data[at : at + n] = seed[src : src + n]
        elif kind == 3:
            del data[at:]
        elif kind == 4:
            n = script.pick(17)
            data[at:at] = raw[script.at : script.at + n]
            script.at += n
        else:
            data[at:at] = TOKENS[script.pick(len(TOKENS))]
    return bytes(data)


def _rss(field: str) -> int:
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(field.encode()):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def _bounded(target: FuzzTarget, data: bytes, scratch: str) -> None:
    """Run one input; its time and its growth of the peak resident set (Linux resets the peak
    on "5" to /proc/self/clear_refs: cheap, and it sees C allocations too) stay in bounds."""
    before = _rss("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    t0 = time.perf_counter()
    with contextlib.suppress(target.expected):
        target.run(data, scratch)
    took = time.perf_counter() - t0
    grew = _rss("VmHWM") - before
    limit = target.seconds_floor + SECONDS_PER_MB * len(data) / 2**20
    assert took <= limit, f"{target.name}: {took:.2f} s for {len(data)} bytes"
    mem = target.memory_factor * len(data) + 32 * 2**20
    assert grew <= mem, f"{target.name}: {grew >> 20} MB more for {len(data)} bytes"


def _fuzz(name: str) -> Callable[[], None]:
    target = _target(name)

    @settings(
        max_examples=EXAMPLES[name],
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.binary(min_size=1, max_size=128))
    def run(raw: bytes) -> None:
        _bounded(target, mutate(name, raw), SCRATCH[0])

    return run


#: the scratch directory of the running test: on tmpfs, where rewriting a file costs 1 ms, not
#: the 5 ms of an ext4 journal
SCRATCH = [""]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_fuzz(name: str) -> None:
    with tempfile.TemporaryDirectory(dir="/dev/shm") as scratch:
        SCRATCH[0] = scratch
        _fuzz(name)()


def test_every_target_is_fuzzed_and_seeded() -> None:
    assert sorted(t.name for t in TARGETS) == sorted(EXAMPLES)
    for t in TARGETS:
        seeds: Sequence[bytes] = t.seeds()
        assert seeds and all(0 < len(s) < 512 * 1024 for s in seeds), t.name
        for seed in seeds:
            with tempfile.TemporaryDirectory() as scratch:
                _bounded(t, seed, scratch)
