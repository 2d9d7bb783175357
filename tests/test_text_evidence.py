"""`check -v` shows each finding's evidence as lines people read: `key: value`, lists indented."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_vkdoctor, validate_report

from vkdoctor.render.text import evidence_lines


def test_evidence_lines_nest_keys_and_lists() -> None:
    evidence = {
        "path": "/usr/lib/libvulkan.so.1",
        "found": True,
        "missing": False,
        "like": None,
        "count": 2,
        "searched": ["/usr/lib", "/lib"],
        "drivers": [{"manifest": "a.json", "devices": []}, {"manifest": "b.json"}],
        "load": {"dlopen": "ok", "signal": None},
        "empty": {},
        "blank": "",
        "traceback": "line one\nline two\n",
        "name": "evil\x1b[31mred\rback",
    }
    assert evidence_lines(evidence, "  ") == [
        "  path: /usr/lib/libvulkan.so.1",
        "  found: yes",
        "  missing: no",
        "  like: none",
        "  count: 2",
        "  searched:",
        "    - /usr/lib",
        "    - /lib",
        "  drivers:",
        "    - manifest: a.json",
        "      devices: (none)",
        "    - manifest: b.json",
        "  load:",
        "    dlopen: ok",
        "    signal: none",
        "  empty: (none)",
        "  blank: (empty)",
        "  traceback:",
        "    line one",
        "    line two",
        "  name: evil\\x1b[31mred\\x0dback",
    ]


def _leaves(value: object, key: str = "") -> list[tuple[str, str]]:
    """(key, text) for every scalar of a JSON value, as the text report shows it."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, k)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v, key)]
    shown = {None: "none", True: "yes", False: "no"}.get(value, str(value))
    return [(key, shown)]


def test_check_vv_shows_the_reports_evidence_without_json(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    proc = run_vkdoctor(
        ["check", "--no-probe", "--select", "VKH,VKD001,VKD002", "-vv", "--json", str(report)]
    )
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(report.read_text())
    validate_report(doc)
    text = proc.stdout
    assert '": ' not in text and "{" not in text.replace("${", "")
    lines = text.splitlines()
    shown = [f for f in doc["findings"] if f.get("evidence")]
    assert len(shown) >= 3
    assert lines.count("      evidence:") == len(shown)
    for finding in shown:
        start = next(i for i, x in enumerate(lines) if f" {finding['code']} " in x)
        block = lines[lines.index("      evidence:", start) + 1 :]
        block = block[
            : next((i for i, x in enumerate(block) if not x.startswith("        ")), None)
        ]
        for key, value in _leaves(finding["evidence"]):
            assert any(
                x.strip() in (f"{key}: {value}", f"- {key}: {value}", f"- {value}", value)
                for x in block
            ), (finding["code"], key, value)


def test_check_v_lists_every_check_on_one_line_and_keeps_evidence_for_vv(tmp_path: Path) -> None:
    """On a healthy selection, -v prints each check that ran once, one line (wrapped at 80
    columns at most under itself), no evidence; -vv adds the evidence the JSON holds."""
    report = tmp_path / "r.json"
    args = ["check", "--no-probe", "--select", "VKD,VKE,VKS,VKC", "--json", str(report)]
    proc = run_vkdoctor([*args, "-v"], env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(report.read_text())
    codes = [c["code"] for c in doc["checks"]]
    assert len(codes) > 20
    lines = proc.stdout.splitlines()
    heads = [x for x in lines if x.startswith("  ") and not x.startswith("    ")]
    assert sorted(x.split()[1] for x in heads) == sorted(codes), proc.stdout
    assert "evidence:" not in proc.stdout
    assert all(len(x) <= 80 for x in lines)
    # continuation lines of a wrapped line only: at most 4 per check
    assert len([x for x in lines if x.startswith("      ")]) <= 4 * len(codes)
    loud = run_vkdoctor([*args, "-vv"], env={"COLUMNS": "80"})
    assert loud.stdout.count("      evidence:") == len(
        [f for f in doc["findings"] if f.get("evidence")]
    )
