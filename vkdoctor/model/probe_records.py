"""The probe's details, typed (report.schema.json's probe part): the adapters wgpu listed, the
ladder's rungs, the RMSNorm cases, the capability ladder and the plan. `details_of` reads them
once from the probe's document, which comes from a child process: an entry that is not an
object is left out and a value of the wrong type reads as None, so a renderer never fails on it.
The report's JSON is the document itself (vkdoctor.model.report_records.ProbeResult)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vkdoctor.model.record import record
from vkdoctor.model.shellwords import export_command, unset_command


@record(frozen=True, kw_only=True)
class ProbeAdapter:
    """An adapter wgpu listed (probe.adapters[], probe.refused[]) or the one used (probe.adapter)."""

    name: str | None
    #: wgpu's adapter type: DiscreteGPU, IntegratedGPU, CPU, ...
    type: str | None
    backend: str | None
    #: the driver's description string
    driver: str | None
    vendor_id: int | None
    device_id: int | None
    #: wgpu's one-line summary of it
    summary: str | None
    #: the adapter the probe ran on
    used: bool


@record(frozen=True, kw_only=True)
class ProbeRung:
    """One rung of the ladder (add one, workgroup reduction, small matmul)."""

    rung: str | None
    ok: bool
    error: str | None
    #: the small matmul's 2x2 result, as the child wrote it
    result_2x2: list[Any] | None
    seconds: float | None


@record(frozen=True, kw_only=True)
class ProbeWorst:
    """The element with the largest element-wise error."""

    index: tuple[int, ...] | None
    #: a number, or "nan" / "inf" / "-inf"
    value: float | str | None
    reference: float | str | None


@record(frozen=True, kw_only=True)
class ProbeTiming:
    chunks: int | None
    #: the case's bandwidth, GB/s
    gbps: float | None
    #: the sum of its `*_s` figures (upload, dispatch, repeats, readback)
    total_s: float


@record(frozen=True, kw_only=True)
class ProbeCase:
    """One RMSNorm case against the float64 reference."""

    #: the kernel's name when it is not RMSNorm's
    name: str | None
    rows: int | None
    d: int | None
    max_rel_err: float | None
    norm_rel_err: float | None
    nonfinite: int | None
    ok: bool
    worst: ProbeWorst | None
    timing: ProbeTiming | None
    seconds: float | None
    worst_index: object
    error: str | None


@record(frozen=True, kw_only=True)
class ProbeCapability:
    """One rung of the capability ladder (--capabilities)."""

    name: str | None
    #: pass, fail, unsupported or error
    status: str | None
    detail: str | None


@record(frozen=True, kw_only=True)
class ProbePlan:
    """What the probe runs: its rungs and its (rows, d) cases."""

    ladder: tuple[str, ...]
    cases: tuple[tuple[int, int], ...]


@record(frozen=True, kw_only=True)
class ProbeDetails:
    """Everything the renderers read from the probe's document beyond its status."""

    adapter: ProbeAdapter | None
    adapters: tuple[ProbeAdapter, ...]
    #: adapters refused for being on another backend
    refused: tuple[ProbeAdapter, ...]
    ladder: tuple[ProbeRung, ...]
    cases: tuple[ProbeCase, ...]
    capabilities: tuple[ProbeCapability, ...]
    tolerance: float | None
    seed: int | None
    #: the loader filter variables the probe ran with, each naming what it turns off
    disabled: Mapping[str, tuple[str, ...]]
    #: the last stage the child reported
    stage: str | None
    stderr_tail: tuple[str, ...]
    plan: ProbePlan | None


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: object) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _number_or_text(value: object) -> float | str | None:
    return value if isinstance(value, str) else _number(value)


def _objects(value: object) -> list[Mapping[str, Any]]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def _adapter(a: Mapping[str, Any]) -> ProbeAdapter:
    return ProbeAdapter(
        name=_text(a.get("name")),
        type=_text(a.get("type")),
        backend=_text(a.get("backend")),
        driver=_text(a.get("driver")),
        vendor_id=_int(a.get("vendor_id")),
        device_id=_int(a.get("device_id")),
        summary=_text(a.get("summary")),
        used=bool(a.get("used")),
    )


def _rung(r: Mapping[str, Any]) -> ProbeRung:
    result = r.get("result_2x2")
    return ProbeRung(
        rung=_text(r.get("rung")),
        ok=bool(r.get("ok")),
        error=_text(r.get("error")),
        result_2x2=result if isinstance(result, list) else None,
        seconds=_number(r.get("seconds")),
    )


def _worst(w: object) -> ProbeWorst | None:
    if not isinstance(w, Mapping):
        return None
    index = w.get("index")
    return ProbeWorst(
        index=tuple(index)
        if isinstance(index, list) and all(_int(i) is not None for i in index)
        else None,
        value=_number_or_text(w.get("value")),
        reference=_number_or_text(w.get("reference")),
    )


def _timing(t: object) -> ProbeTiming | None:
    if not isinstance(t, Mapping):
        return None
    total = 0.0
    for key, value in t.items():
        if str(key).endswith("_s"):
            values = value if isinstance(value, list) else [value]
            total += sum(float(v) for v in values if _number(v) is not None)
    return ProbeTiming(chunks=_int(t.get("chunks")), gbps=_number(t.get("gbps")), total_s=total)


def _case(c: Mapping[str, Any]) -> ProbeCase:
    return ProbeCase(
        name=_text(c.get("name")),
        rows=_int(c.get("rows")),
        d=_int(c.get("d")),
        max_rel_err=_number(c.get("max_rel_err")),
        norm_rel_err=_number(c.get("norm_rel_err")),
        nonfinite=_int(c.get("nonfinite")),
        ok=bool(c.get("ok")),
        worst=_worst(c.get("worst")),
        timing=_timing(c.get("timing")),
        seconds=_number(c.get("seconds")),
        worst_index=c.get("worst_index"),
        error=_text(c.get("error")),
    )


def _capability(r: Mapping[str, Any]) -> ProbeCapability:
    return ProbeCapability(
        name=_text(r.get("name")), status=_text(r.get("status")), detail=_text(r.get("detail"))
    )


def _plan(plan: object) -> ProbePlan | None:
    if not isinstance(plan, Mapping):
        return None
    ladder = plan.get("ladder")
    cases = plan.get("cases")
    return ProbePlan(
        ladder=tuple(str(r) for r in ladder) if isinstance(ladder, list) else (),
        cases=tuple(
            (c[0], c[1])
            for c in (cases if isinstance(cases, list) else [])
            if isinstance(c, list) and len(c) == 2 and all(_int(x) is not None for x in c)
        ),
    )


def _disabled(value: object) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(var): tuple(str(n) for n in names)
        for var, names in value.items()
        if isinstance(names, list)
    }


def details_of(document: Mapping[str, Any]) -> ProbeDetails:
    """The typed details of the probe's `document` (vkdoctor.children.probe's object)."""
    adapter = document.get("adapter")
    tail = document.get("stderr_tail")
    return ProbeDetails(
        adapter=_adapter(adapter) if isinstance(adapter, Mapping) else None,
        adapters=tuple(map(_adapter, _objects(document.get("adapters")))),
        refused=tuple(map(_adapter, _objects(document.get("refused")))),
        ladder=tuple(map(_rung, _objects(document.get("ladder")))),
        cases=tuple(map(_case, _objects(document.get("cases")))),
        capabilities=tuple(map(_capability, _objects(document.get("capabilities")))),
        tolerance=_number(document.get("tolerance")),
        seed=_int(document.get("seed")),
        disabled=_disabled(document.get("disabled")),
        stage=_text(document.get("stage")),
        stderr_tail=tuple(map(str, tail)) if isinstance(tail, list) else (),
        plan=_plan(document.get("plan")),
    )


#: a layer this variable forces on can only be kept out by unsetting it
FORCING = "VK_LOADER_LAYERS_ENABLE"


def disabled_setting(off: Mapping[str, Sequence[str]]) -> tuple[str, tuple[str, ...]]:
    """What the probe ran with (its `disabled` variables), in words and as shell commands."""
    said = []
    shell = []
    for var, names in off.items():
        if var == FORCING:
            said.append(f"{var} unset")
            command = unset_command(var)
        elif not var.startswith("VK_LOADER_"):
            # a layer's own disable_environment: defined at all turns the layer off
            said.append(f"{var}=1")
            command = export_command(var, "1")
        else:
            said.append(f"{var}={','.join(names)}")
            command = export_command(var, ",".join(names))
        if command:  # a manifest's variable no shell can set gets no command
            shell.append(command)
    return " ".join(said), tuple(shell)
