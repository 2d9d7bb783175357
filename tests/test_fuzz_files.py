"""Property-based fuzzing of the file readers (targets in tests/fuzz_files.py): mutated real
manifests and package databases never raise anything but the reader's own error type, and never
take time or memory out of proportion to their size. A sample of mutated manifests is also given
to the real Vulkan loader, whose verdict must be vkdoctor's.

Long campaigns: `python benchmarks/fuzz.py` (docs/development.md).
"""

from __future__ import annotations

import gzip
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fuzz_files import TARGETS, manifest_seeds, pacman_mtree_seeds, run_pacman_mtree
from fuzzing import FuzzTarget
from fuzzrun import judge, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loader_oracle import DATA, LVP_MANIFEST, RealLoader, predict, predicted_result

from vkdoctor.loader import icd

#: examples per target: about 30 s in all on the 2-core dev box (the slow ones run a real
#: tool or the layer scan's ELF reads per input)
EXAMPLES = {
    "cjson": 700,
    "icd-manifest": 300,
    "layer-manifest": 150,
    "dpkg-status": 200,
    "dpkg-info": 200,
    "pacman-desc": 200,
    "pacman-files": 200,
    "pacman-mtree": 100,
    "rpm-qa": 500,
    "rpm-db": 25,
}


def test_every_target_has_its_examples() -> None:
    assert sorted(EXAMPLES) == sorted(t.name for t in TARGETS)


def _reproducer(where: Path, target: FuzzTarget, data: bytes) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{target.name}-{len(data)}.bin"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_mutated_real_inputs(target: FuzzTarget, tmp_path: Path) -> None:
    seeds = list(target.seeds())
    assert seeds and all(len(s) < 512 * 1024 for s in seeds)
    scratch = tmp_path / "scratch"
    judge(target, seeds[0], scratch)  # warm: imports, the first reads of system files
    for seed in seeds:  # the real inputs themselves first
        outcome = judge(target, seed, scratch)
        assert not outcome.failed, outcome.describe()

    @settings(
        max_examples=EXAMPLES[target.name],
        deadline=None,  # judge() bounds the time, in proportion to the size
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        seed=st.sampled_from(seeds),
        rng=st.randoms(use_true_random=False),
        extra=st.binary(max_size=64),
    )
    def check(seed: bytes, rng: random.Random, extra: bytes) -> None:
        data = mutate(seed, rng, seeds)
        if extra:  # hypothesis' own bytes, somewhere
            at = rng.randrange(len(data) + 1)
            data = data[:at] + extra + data[at:]
        outcome = judge(target, data, scratch)
        if outcome.failed:
            saved = _reproducer(tmp_path / "reproducers", target, data)
            raise AssertionError(
                f"{target.name} on {len(data)} bytes (saved as {saved}): {outcome.describe()}\n"
                f"input: {data[:2000]!r}"
            )

    check()


def test_the_readers_answer_for_real_on_the_seeds(tmp_path: Path) -> None:
    """The targets exercise the readers (not an early exit): on the real inputs they find the
    packages, owners and digests there are."""
    by_name = {t.name: t for t in TARGETS}
    for name in ("dpkg-status", "rpm-db"):
        target = by_name[name]
        pkgs = target.run(target.seeds()[0], str(tmp_path / name))[0]  # type: ignore[index]
        assert len(pkgs) >= 1, name
    scan = by_name["icd-manifest"].run(LVP_MANIFEST.read_bytes(), str(tmp_path / "icd"))
    assert [d.outcome for d in scan.drivers] == [icd.LOADS]  # type: ignore[attr-defined]
    pkgs, owners, modified = run_pacman_mtree(pacman_mtree_seeds()[0], str(tmp_path / "pacman"))
    assert len(owners) == 2 and modified == [False]


def test_an_mtree_that_inflates_a_thousandfold_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """60 MiB of zeros between two real lines, gzipped to 60 KB: the digest is still found,
    and the reader's peak stays far below what holding the inflated text would take."""
    from vkdoctor.packages.digests import mtree_entry

    bomb = gzip.compress(
        b"./usr/lib/x sha256digest=AB\n" + b"\0" * (60 << 20) + b"\n./y md5digest=cd\n"
    )
    assert len(bomb) < 100_000
    target = next(t for t in TARGETS if t.name == "pacman-mtree")
    outcome = judge(target, bomb, tmp_path / "scratch")
    assert not outcome.failed, outcome.describe()
    assert outcome.peak_bytes < 8 << 20
    assert mtree_entry(bomb, ["/usr/lib/x"]) == ("sha256", "ab")
    assert mtree_entry(bomb, ["/y"]) == ("md5", "cd")
    assert mtree_entry(bomb[:-20], ["/y"]) is None  # truncated: no answer rather than a guess
    over = gzip.compress(b"\0" * (65 << 20) + b"\n./y md5digest=cd\n")
    assert mtree_entry(over, ["/y"]) is None  # past the bound: not read to the end
    # found by a campaign: a corrupt bomb inflating to 23 million empty lines took 5.8 s of
    # CPU, one Python iteration each; lines are now found by a regular expression. Held as a
    # ratio in one run (no clock bound): the same number of inflated bytes in two lines is
    # the floor, and millions of short lines may cost a few times that, not a Python loop's
    # hundredfold
    size = 50 << 20
    floor = _cpu(mtree_entry, gzip.compress(b"./a " + b"x" * (size - 22) + b"\n./b c\n"))
    for text in (b"\n" * size, b"./a x\n" * (size // 6) + b"./y md5digest=cd\n"):
        outcome = judge(target, gzip.compress(text), tmp_path / "scratch")
        assert not outcome.failed, outcome.describe()
        ratio = _cpu(mtree_entry, gzip.compress(text)) / floor
        assert ratio < 15, f"{ratio:.1f}x the CPU of two long lines"


def _cpu(read: Callable[[bytes, list[str]], object], data: bytes) -> float:
    """The least CPU time of three reads of `data` (the least is the least disturbed)."""
    import time

    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        read(data, ["/y"])
        best = min(best, time.process_time() - start)
    return max(best, 1e-3)


# --- the real loader's verdict on a sample of mutated manifests ---------------------------


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> RealLoader:
    out = tmp_path_factory.mktemp("probe") / "vkprobe"
    subprocess.run(
        ["gcc", "-O1", "-o", str(out), str(DATA / "vkprobe.c"), "-ldl"],
        check=True,
        timeout=120,
        capture_output=True,
    )
    return RealLoader(out)


def _verdict_of_vkdoctor(scan: icd.DriverScan) -> str:
    if any(d.outcome == icd.CRASH for d in scan.drivers):
        return "crash"
    if any(d.outcome == icd.FIFO_HANGS for d in scan.drivers):
        return "hang"
    return f"vkCreateInstance {predicted_result(scan)}"


def _verdict_of_loader(real: object) -> str:
    if real.timed_out:  # type: ignore[attr-defined]
        return "hang"
    if real.returncode < 0:  # type: ignore[attr-defined]
        return "crash"
    return f"vkCreateInstance {real.create_result}"  # type: ignore[attr-defined]


#: field-level mutations of lavapipe's manifest: the byte mutations rarely keep JSON valid
_FIELD_EDITS: tuple[tuple[bytes, bytes], ...] = (
    (b'"1.0.0"', b"1"),
    (b'"1.0.0"', b'"1.0.0.7"'),
    (b'"1.0.0"', b'["1.0.0"]'),
    (b'"1.0.0"', b'"x"'),
    (b'"file_format_version"', b'"File_format_version"'),
    (b'"ICD"', b'"icd"'),
    (b'"library_path"', b'"library_Path"'),
    (b'"api_version"', b'"apiversion"'),
    (b'"/usr/lib/', b'"/usr/lib//'),
    (b"libvulkan_lvp.so", b"libvulkan_lvp.so.0"),
    (b'"/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"', b'"libvulkan_lvp.so"'),
    (b'"/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"', b'""'),
    (b'"/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"', b"7"),
    (
        b'"/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"',
        b'["/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"]',
    ),
    (b"{", b"\xef\xbb\xbf{"),
    (b'"ICD": {', b'"ICD": {"library_arch": "32", '),
    (b'"ICD": {', b'"ICD": {"is_portability_driver": true, '),
    (b'"ICD": {', b'"ICD": ['),
    # deeper than Python's recursion limit (vkdoctor's printer was recursive: internal error)
    (b'"1.0.0"', b"[" * 3000 + b'"1.0.0"' + b"]" * 3000),
    # objects only 400 deep: the loader's cJSON_Print takes 0.7 s at 1000 levels, 15 s at 2000
    (b'"1.1.230"', b'{"a": ' * 400 + b'"1.1.230"' + b"}" * 400),
)


def _oracle_sample() -> list[bytes]:
    lvp = LVP_MANIFEST.read_bytes()
    sample = [lvp.replace(a, b, 1) for a, b in _FIELD_EDITS]
    sample += [lvp + b" trailing text\n", lvp.rstrip()[:-1]]  # cJSON ignores one, not the other
    assert len(set(sample)) == len(_FIELD_EDITS) + 2  # every edit applies
    rng = random.Random(239)  # fixed: the loader runs cost ~0.1 s each
    seeds = list(manifest_seeds())
    sample += [mutate(lvp, rng, seeds, steps=rng.choice((1, 2))) for _ in range(12)]
    return sample


def test_mutated_manifests_get_the_real_loaders_verdict(oracle: RealLoader, tmp_path: Path) -> None:
    disagree = []
    for n, data in enumerate(_oracle_sample()):
        manifest = tmp_path / f"m{n}" / "fuzz_icd.json"
        manifest.parent.mkdir()
        manifest.write_bytes(data)
        env = {"VK_DRIVER_FILES": str(manifest)}
        mine = _verdict_of_vkdoctor(predict(env, manifest.parent))
        theirs = _verdict_of_loader(oracle.run(env, cwd=manifest.parent, timeout=20))
        if mine != theirs:
            disagree.append(f"{data[:300]!r} ({len(data)} bytes): vkdoctor {mine}, loader {theirs}")
    assert not disagree, "\n".join(disagree)


def test_a_manifest_nested_past_pythons_recursion_limit_is_no_internal_error(
    tmp_path: Path,
) -> None:
    """file_format_version and library_path nested 1500 deep: the loader takes it (the oracle
    test above), so vkdoctor must too: it was a RecursionError, exit 3."""
    from conftest import run_vkdoctor

    lvp = LVP_MANIFEST.read_bytes()
    manifest = tmp_path / "deep_icd.json"
    manifest.write_bytes(lvp.replace(b'"1.0.0"', b"[" * 1500 + b'"1.0.0"' + b"]" * 1500))
    proc = run_vkdoctor(
        ["check", "--no-probe", "--select", "VKD"], env={"VK_DRIVER_FILES": str(manifest)}
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "internal error" not in proc.stdout + proc.stderr


def test_a_nul_byte_in_a_pacman_package_name_is_no_internal_error(tmp_path: Path) -> None:
    """Found by the fuzzer: the name went into the path of the package's mtree, and os.open
    raised ValueError for the NUL (an internal error, exit 3). Now the name is the entry
    directory's, as libalpm takes it, whatever desc says."""
    from fuzz_files import pacman_seeds, run_pacman_desc

    desc = pacman_seeds()[0].replace(b"%NAME%\nmesa-fuzz\n", b"%NAME%\n\x00esa-fuzz\n", 1)
    assert b"\x00" in desc
    pkgs, _, modified = run_pacman_desc(desc, str(tmp_path))  # type: ignore[misc]
    assert [p.name for p in pkgs] == ["mesa-fuzz"] and modified == [False]


def test_the_campaign_driver_runs_every_module_and_reports(tmp_path: Path) -> None:
    """benchmarks/fuzz.py finds the targets of every tests/fuzz_*.py, runs one in a child and
    reports its figures (a failing campaign's exit 1 and reproducers: docs/development.md)."""
    import json
    import sys

    from conftest import REPO

    listed = subprocess.run(
        [sys.executable, "benchmarks/fuzz.py", "--list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert {line.split()[0] for line in listed.splitlines()} >= {t.name for t in TARGETS}
    report = tmp_path / "fuzz.json"
    proc = subprocess.run(
        [
            *(sys.executable, "benchmarks/fuzz.py", "--target", "rpm-qa", "--examples", "50"),
            *("--out", str(tmp_path / "out"), "--json", str(report)),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json.loads(report.read_text())
    assert result["target"] == "rpm-qa" and result["inputs"] == 50 and result["failures"] == []
    assert result["peak_rss_kib"] > 0 and result["worst_cpu_seconds"] > 0
