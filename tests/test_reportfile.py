"""Reports read back (`diff`, `summary`) are hostile input: every attack of this kind done for
real (a FIFO, a link to a character device, a folder nobody may read, a loop of links, a folder
tree deeper than Python's recursion, a wrong-typed field, a report of millions of empty objects),
each answered with a named input and an exit status, never a hang, a traceback or exit 3; and
the schema check held to the `jsonschema` package over real and mutated reports."""

from __future__ import annotations

import copy
import gc
import json
import os
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO, clean_env, run_vkdoctor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.nobody import vkdoctor_as_nobody, world_readable_dir
from vkdoctor.model.reportschema import problem, schema

H200 = REPO / "tests" / "data" / "report-h200.json"


def _h200() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(H200.read_text())
    return doc


def _paths(doc: object, at: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    out = [at]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            out += _paths(v, (*at, i))
    return out


WRONG = [5, -1, 1.5, "x", "", True, None, [], {}, [1], {"a": 1}]
#: the JSON Schema keywords vkdoctor.model.reportschema checks (and the ones that only annotate)
KNOWN = {
    *("type", "properties", "required", "items", "enum", "const", "additionalProperties"),
    *("minimum", "minLength", "minItems", "pattern", "oneOf", "$ref", "$defs"),
    *("$schema", "$id", "title", "description"),
}


def test_the_schema_uses_only_keywords_the_check_knows() -> None:
    used: set[str] = set()
    todo: list[tuple[object, bool]] = [(schema(), False)]
    while todo:
        node, named = todo.pop()
        if isinstance(node, dict):
            if not named:
                used |= set(node)
            todo += [(v, k in ("properties", "$defs") and not named) for k, v in node.items()]
        elif isinstance(node, list):
            todo += [(v, False) for v in node]
    assert used <= KNOWN, used - KNOWN


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_the_schema_check_agrees_with_jsonschema_on_mutated_reports(rnd: random.Random) -> None:
    doc = _h200()
    validator = jsonschema.Draft202012Validator(schema())
    assert validator.is_valid(doc) and problem(doc) is None
    where = rnd.choice(_paths(doc)[1:])
    mutated = copy.deepcopy(doc)
    node: Any = mutated
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = rnd.choice(WRONG)
    ours = problem(mutated)
    assert (ours is None) == validator.is_valid(mutated), (where, ours)


def test_a_wrong_typed_field_is_an_input_error_that_names_it(tmp_path: Path) -> None:
    doc = _h200()
    doc["drivers"][0]["libraries"] = 5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    proc = run_vkdoctor(["diff", str(H200), str(bad)])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "drivers[0].libraries is integer, not array" in proc.stderr


def test_special_files_among_reports_are_named_not_waited_on(tmp_path: Path) -> None:
    folder = tmp_path / "artifacts"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "vkdoctor.json").write_text(H200.read_text())
    os.mkfifo(folder / "fifo.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    (folder / "kmsg.json").symlink_to("/proc/kmsg")
    start = time.monotonic()
    proc = run_vkdoctor(["summary", str(folder)], timeout=60)
    assert time.monotonic() - start < 30
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 machine, 0 failed" in proc.stdout and "Not read (3):" in proc.stdout
    assert f"{folder / 'fifo.json'}: not a regular file (a FIFO)" in proc.stderr
    assert f"{folder / 'zero.json'}: not a regular file (a character device)" in proc.stderr
    assert f"{folder / 'kmsg.json'}: " in proc.stderr
    proc = run_vkdoctor(["diff", str(H200), str(folder / "fifo.json")], timeout=60)
    assert proc.returncode == 2 and "not a regular file (a FIFO)" in proc.stderr


def test_a_folder_the_user_cannot_read_is_named_and_fails_the_summary() -> None:
    """Run as nobody: a subfolder of another user's, mode 0700, holds a failing machine's
    report. Skipping it in silence gave "0 failed" and exit 0."""
    with world_readable_dir() as top:
        folder = top / "artifacts"
        (folder / "ok").mkdir(parents=True)
        (folder / "ok" / "vkdoctor.json").write_text(H200.read_text())
        secret = folder / "locked"
        secret.mkdir()
        failing = _h200()
        failing["status"] = "fail"
        (secret / "vkdoctor.json").write_text(json.dumps(failing))
        for p in (folder, folder / "ok", folder / "ok" / "vkdoctor.json"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        secret.chmod(0o700)
        proc = vkdoctor_as_nobody(["summary", str(folder)])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{secret}: a folder that cannot be read (Permission denied)" in proc.stderr


def test_loops_and_depth_in_a_folder_tree_end(tmp_path: Path) -> None:
    folder = tmp_path / "artifacts"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "vkdoctor.json").write_text(H200.read_text())
    (folder / "a" / "back").symlink_to(folder)
    deep = folder / "deep"
    deep.mkdir()
    # deeper than the recursion a walk by recursion would need (1,100 levels)
    for _ in range(1100):
        deep = deep / "d"
        deep.mkdir()
    (deep / "r.json").write_text(H200.read_text())
    try:
        proc = run_vkdoctor(["summary", str(folder)], timeout=120)
    finally:
        # shutil.rmtree (pytest's cleanup) recurses: 1,100 levels are past its limit
        subprocess.run(["rm", "-rf", str(folder / "deep")], check=True)
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{folder / 'a' / 'back'}: a link back to a folder already read" in proc.stderr
    assert "deeper than 32 folders; skipped" in proc.stderr


def test_a_report_of_millions_of_empty_objects_is_refused_before_it_is_parsed(
    tmp_path: Path,
) -> None:
    """16 MiB of `{}` took 1.7 GB to parse (64 MiB: MemoryError, exit 3). The objects are
    counted before parsing: the refusal names the bound, exit 2."""
    bomb = tmp_path / "bomb.json"
    count = (15 << 20) // 3
    bomb.write_text('{"schema_version": 1, "x": [' + "{}," * (count - 1) + "{}]}")
    proc = run_vkdoctor(["diff", str(H200), str(bomb)])
    assert proc.returncode == 2, proc.stderr
    assert "more than 200,000 JSON objects and arrays" in proc.stderr
    proc = run_vkdoctor(["summary", str(bomb), str(H200)])
    assert proc.returncode == 1 and "more than 200,000" in proc.stderr


@pytest.mark.parametrize("rows", [8000])
def test_diff_is_linear_in_rows(rows: int) -> None:
    """8,000 drivers and findings on each side took 48 s (each row looked up in a list):
    the time for 8x the rows stays near 8x, not 64x (a ratio in one run, not a clock)."""
    from vkdoctor.model.compare import compare

    def pair(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
        doc = _h200()
        driver, finding = doc["drivers"][0], doc["findings"][0]
        a, b = copy.deepcopy(doc), copy.deepcopy(doc)
        a["drivers"] = [dict(driver, manifest=f"/a/{i}/x.json", index=i) for i in range(n)]
        b["drivers"] = [
            dict(driver, manifest=f"/b/{i}/x.json", index=i, verdict="fail") for i in range(n)
        ]
        a["findings"] = [dict(finding, code="VKL002", title=f"a{i}") for i in range(n)]
        b["findings"] = [
            dict(finding, code="VKL002", title=f"b{i}", severity="fail") for i in range(n)
        ]
        b["status"] = "fail"
        return a, b

    def cpu(n: int) -> float:
        # the collector's passes over every live object are not the algorithm's; on a loaded
        # machine they alone took 8x the rows past 20x the time (CI, 4 Dec 2026)
        a, b = pair(n)
        best = float("inf")
        for _ in range(5):
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                compare(a, b)
                best = min(best, time.process_time() - start)
            finally:
                gc.enable()
        return best

    ratio = cpu(rows) / cpu(rows // 8)
    assert ratio < 20, f"{ratio:.1f}x the time for 8x the rows"


def test_a_hostile_file_name_in_an_error_is_shown_as_data(tmp_path: Path) -> None:
    """The file name is the user's input: an OSC 52 sequence and a workflow command in it reach
    neither the terminal nor the CI log, in vkdoctor's own errors and in click's usage errors."""
    name = "bad\x1b]52;c;aGk=\x07\n::error::x"
    bad = tmp_path / f"{name}.json"
    bad.write_text('{"a":1')
    proc = run_vkdoctor(["diff", str(bad), str(H200)])
    assert proc.returncode == 2
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert not [ln for ln in proc.stderr.splitlines() if ln.lstrip().startswith("::")]
    assert "bad\\x1b]52;c;aGk=\\x07" in proc.stderr
    folder = tmp_path / name
    folder.mkdir()
    proc = run_vkdoctor(["check", "--no-probe", "--json", str(folder)])
    assert proc.returncode == 2, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr, proc.stderr
    assert not [ln for ln in proc.stderr.splitlines() if ln.lstrip().startswith("::")]


def test_summary_memory_does_not_grow_with_the_reports(tmp_path: Path) -> None:
    """Each report becomes its row as it is read and is dropped: 400 reports take about the
    memory of 40 (before, every parsed report was kept: 1,000 took 369 MB). Peak RSS of the real
    command, measured in one run as a ratio."""
    import sys

    def peak(n: int) -> int:
        folder = tmp_path / f"r{n}"
        folder.mkdir()
        text = H200.read_text()
        for i in range(n):
            (folder / f"m{i}.json").write_text(text)
        probe = (
            "import resource, subprocess, sys;"
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL);"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        env = clean_env()
        env["PYTHONPATH"] = str(REPO)
        out = subprocess.run(
            [sys.executable, "-c", probe, sys.executable, "-m", "vkdoctor", "summary", str(folder)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=True,
        )
        return int(out.stdout.strip())

    small, large = peak(40), peak(400)
    assert large < small * 1.5, f"{small} KiB for 40 reports, {large} KiB for 400"


def test_a_number_of_thousands_of_digits_is_an_input_error_not_exit_3(tmp_path: Path) -> None:
    """Python's json hands a digit run to int(), which refuses more than 4,300 digits with a
    ValueError that is no JSONDecodeError: a report holding one was an internal error."""
    text = json.dumps(_h200())
    (tmp_path / "m" / "a").mkdir(parents=True)
    bad = tmp_path / "m" / "a" / "vkdoctor.json"
    bad.write_text(text[:-1] + ', "x": ' + "1" * 5000 + "}")
    for argv in (["diff", str(H200), str(bad)], ["summary", str(tmp_path / "m")]):
        proc = run_vkdoctor(argv)
        assert proc.returncode == 2 and "internal error" not in proc.stderr, proc.stderr
        assert "a JSON integer of 5,000 digits" in proc.stderr, proc.stderr


def test_every_reader_of_outside_json_refuses_huge_numbers_and_depth() -> None:
    """The one reader (files.json_value) and the child lines read with it: a driver that writes
    such a line to the probe's stdout or stderr leaves no document, never an exception."""
    from vkdoctor.children import loadtest, probe
    from vkdoctor.model import files

    for text in ("1" * 5000, "-" + "9" * 5000, "[" * 100_000 + "]" * 100_000):
        with pytest.raises(ValueError):
            files.json_value(text)
        assert loadtest.parse_line(text) is None
        assert probe._document(text) is None
        assert probe.seen_of(probe.SEEN_PREFIX + text) is None
    assert files.json_value('{"a": [1, -2, 3.5]}') == {"a": [1, -2, 3.5]}


def test_summary_lists_machines_in_natural_order(tmp_path: Path) -> None:
    """report-2 before report-10, whether a folder is walked or the shell's (text-sorted) glob
    hands the files; folders below are walked in the same order."""
    doc = _h200()
    failed = copy.deepcopy(doc)
    failed["status"] = "fail"
    names = ["report-1", "report-10", "report-2", "report-20", "report-3"]
    for name in names:
        (tmp_path / "flat").mkdir(exist_ok=True)
        report = failed if name == "report-10" else doc
        (tmp_path / "flat" / f"{name}.json").write_text(json.dumps(report))
        (tmp_path / "nested" / f"job-{name[7:]}").mkdir(parents=True)
        (tmp_path / "nested" / f"job-{name[7:]}" / "vkdoctor.json").write_text(json.dumps(doc))
    want = ["report-1", "report-2", "report-3", "report-10", "report-20"]
    globbed = sorted(str(p) for p in (tmp_path / "flat").glob("*.json"))
    assert [Path(p).stem for p in globbed] == names  # the shell's order, as text
    for args, labels in (
        ([str(tmp_path / "flat")], want),
        (globbed, want),
        ([str(tmp_path / "nested")], [f"job-{n[7:]}" for n in want]),
    ):
        proc = run_vkdoctor(["summary", *args], env={"COLUMNS": "80"})
        assert "Traceback" not in proc.stderr
        rows = [line.split()[0] for line in proc.stdout.splitlines()[3:] if line.strip()]
        assert rows[: len(labels)] == labels, proc.stdout
        data = json.loads(run_vkdoctor(["summary", "--format", "json", *args]).stdout)
        assert [m["label"] for m in data["machines"]] == labels
