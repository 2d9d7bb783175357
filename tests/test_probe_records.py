"""The probe's details as typed records (vkdoctor.model.probe_records) and run-probe's host record:
read once from the probe's real document, and never a reason for a renderer to fail."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import HOST, SCHEMA, run_json

from vkdoctor.model import Report
from vkdoctor.model.probe_records import ProbeCase, details_of
from vkdoctor.model.report_records import ProbeHost, probe_result_of
from vkdoctor.render import github, junit
from vkdoctor.render import json as json_render
from vkdoctor.render import text as text_render
from vkdoctor.render.style import Style


@pytest.fixture(scope="module")
def probe_run() -> dict[str, Any]:
    """A real `run-probe --capabilities` on lavapipe, its report."""
    proc, doc = run_json(["run-probe", "--cpu", "--capabilities", "--seed", "3"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    return doc


def _sum_seconds(timing: dict[str, Any]) -> float:
    total = 0.0
    for key, value in timing.items():
        if key.endswith("_s"):
            total += sum(value) if isinstance(value, list) else value
    return total


def _check_case(case: ProbeCase, raw: dict[str, Any]) -> None:
    assert (case.rows, case.d, case.ok) == (raw["rows"], raw["d"], raw["ok"])
    assert (case.max_rel_err, case.norm_rel_err) == (raw["max_rel_err"], raw["norm_rel_err"])
    assert case.nonfinite == raw["nonfinite"]
    assert case.worst is not None
    assert list(case.worst.index or ()) == raw["worst"]["index"]
    assert (case.worst.value, case.worst.reference) == (
        raw["worst"]["value"],
        raw["worst"]["reference"],
    )
    assert case.timing is not None
    assert case.timing.chunks == raw["timing"]["chunks"]
    assert case.timing.total_s == pytest.approx(_sum_seconds(raw["timing"]))


def test_the_records_say_what_the_probes_document_says(probe_run: dict[str, Any]) -> None:
    doc = probe_run["probe"]
    details = probe_result_of(doc).details
    used = [a for a in details.adapters if a.used]
    assert len(used) == 1 and used[0].type == "CPU" and used[0].backend == "Vulkan"
    assert details.adapter is not None and details.adapter.name == doc["adapter"]["name"]
    assert [(a.name, a.vendor_id, a.device_id) for a in details.adapters] == [
        (a["name"], a["vendor_id"], a["device_id"]) for a in doc["adapters"]
    ]
    assert [(r.rung, r.ok, r.result_2x2) for r in details.ladder] == [
        (r["rung"], r["ok"], r.get("result_2x2")) for r in doc["ladder"]
    ]
    assert len(details.cases) == len(doc["cases"]) > 0
    for case, raw in zip(details.cases, doc["cases"], strict=True):
        _check_case(case, raw)
    assert [(c.name, c.status, c.detail) for c in details.capabilities] == [
        (c["name"], c["status"], c["detail"]) for c in doc["capabilities"]
    ]
    assert (details.seed, details.tolerance) == (3, doc["tolerance"])
    assert details.plan is not None
    assert list(details.plan.ladder) == [r["rung"] for r in doc["ladder"]]
    assert [list(c) for c in details.plan.cases] == [[c["rows"], c["d"]] for c in doc["cases"]]


def test_the_probe_json_is_the_document_key_for_key(probe_run: dict[str, Any]) -> None:
    doc = probe_run["probe"]
    report = Report(vkdoctor_version="0", host=HOST, checks=(), probe=probe_result_of(doc))
    again = json.loads(json_render.render(report))["probe"]
    assert json.dumps(again) == json.dumps(doc)


def test_run_probes_host_is_its_record_in_its_order(probe_run: dict[str, Any]) -> None:
    host = probe_run["host"]
    fields = [n for n in ProbeHost.__record_spec__.names if n != "redacted"]  # type: ignore[attr-defined]
    assert list(host) == fields
    assert set(fields) <= set(SCHEMA["properties"]["host"]["properties"])
    assert host["wgpu"] == probe_run["probe"]["wgpu"]
    assert host["wgpu"]


#: what a broken or foreign probe child can print: entries that are not objects, values of the
#: wrong type, a plan of pairs that are not pairs
_HOSTILE: dict[str, Any] = {
    "status": "fail",
    "adapter": "llvmpipe",
    "adapters": ["x", {"name": 5, "vendor_id": "0x10de", "used": 1}, None],
    "refused": "none",
    "ladder": [{"rung": None, "ok": False}, 3],
    "cases": [
        {"rows": "4", "d": None, "worst": {"index": "0,1", "value": [1]}, "timing": [1]},
        {"ok": False, "worst": {"index": [1, "a"]}, "timing": {"upload_s": "1", "chunks": 2}},
    ],
    "capabilities": {"name": "f16"},
    "tolerance": "1e-5",
    "seed": 1.5,
    "disabled": {"VK_LOADER_DRIVERS_DISABLE": "x", "VK_LOADER_LAYERS_DISABLE": ["~implicit~"]},
    "stderr_tail": "boom",
    "plan": {"ladder": "add-one", "cases": [[1], [2, 3], ["a", 4]]},
}


def test_a_hostile_probe_document_reads_as_records_and_renders() -> None:
    details = details_of(_HOSTILE)
    assert details.adapter is None and details.refused == ()
    assert [(a.name, a.vendor_id, a.used) for a in details.adapters] == [("5", None, True)]
    assert [(r.rung, r.ok) for r in details.ladder] == [(None, False)]
    first, second = details.cases
    assert (first.rows, first.worst and first.worst.index, first.timing) == (None, None, None)
    assert second.worst is not None and second.worst.index is None
    assert second.timing is not None and (second.timing.chunks, second.timing.total_s) == (2, 0.0)
    assert details.capabilities == () and details.stderr_tail == ()
    assert (details.tolerance, details.seed) == (None, None)
    assert details.disabled == {"VK_LOADER_LAYERS_DISABLE": ("~implicit~",)}
    assert details.plan is not None and details.plan.cases == ((2, 3),)

    report = Report(
        vkdoctor_version="0",
        host=HOST,
        checks=(),
        probe=probe_result_of(_HOSTILE),
        command="run-probe",
    )
    text = text_render.render(report, style=Style(width=80))
    assert "probe: fail" in text and "2 bindings" in text
    assert "rmsnorm rows=2 d=3" in junit.render(report)
    assert "probe fail" in github.summary(report)
    assert "probe fail" in github.render(report)
