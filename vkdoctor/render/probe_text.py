"""The probe section of the text report: adapters seen, the ladder, each case's error, the verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vkdoctor.model import Severity

if TYPE_CHECKING:
    from vkdoctor.render.style import Style


def _err(v: Any) -> str:
    return "not finite" if v is None else f"{float(v):.2e}"


def _adapters(probe: Mapping[str, Any]) -> list[str]:
    adapters = probe.get("adapters") or []
    if not adapters:
        return ["    adapters seen: none"]
    refused = {a.get("summary") for a in probe.get("refused") or []}
    rows = []
    for a in adapters:
        mark = "used" if a.get("used") else "refused" if a.get("summary") in refused else ""
        ids = f"{a.get('vendor_id') or 0:#06x}:{a.get('device_id') or 0:#06x}"
        # two lines: the table fits 80 columns with the longest driver strings
        head = f"      {'*' if a.get('used') else ' '} {a.get('backend', '?'):<7} {a.get('type', '?'):<13} "
        rows.append(f"{head}{a.get('name')}" + (f"  ({mark})" if mark else ""))
        rows.append(f"{' ' * len(head)}{a.get('driver') or 'no driver string'}, {ids}")
    return ["    adapters seen:", *rows]


def _ladder(probe: Mapping[str, Any]) -> list[str]:
    rungs = probe.get("ladder") or []
    if not rungs:
        return []
    out = ["    ladder:"]
    for r in rungs:
        detail = ""
        if r.get("ok") and r.get("result_2x2") is not None:
            detail = f"  {r['result_2x2']}"
        elif not r.get("ok"):
            detail = f"  {r.get('error')}"
        out.append(f"      {r.get('rung'):<20} {'ok' if r.get('ok') else 'FAILED'}{detail}")
    return out


def _cases(probe: Mapping[str, Any]) -> list[str]:
    cases = probe.get("cases") or []
    if not cases:
        return []
    out = [
        f"    RMSNorm (tolerance {probe.get('tolerance', 1e-5):g}, seed {probe.get('seed')}):",
        f"      {'rows x d':<12} {'max rel err':>11} {'norm err':>10}  result",
    ]
    for c in cases:
        shape = f"{c.get('rows')}x{c.get('d')}"
        timing = c.get("timing") or {}
        notes = []
        if (timing.get("chunks") or 1) > 1:
            notes.append(f"{timing['chunks']} bindings")
        if (c.get("d") or 0) >= 1024 and (timing.get("chunks") or 1) == 1 and timing.get("gbps"):
            notes.append(f"{timing['gbps']:.2f} GB/s")
        verdict = "ok" if c.get("ok") else "WRONG"
        if not c.get("ok"):
            w = c.get("worst") or {}
            idx = w.get("index") or ["?", "?"]
            notes.append(
                f"worst y[{idx[0]},{idx[1]}] = {w.get('value')} vs {w.get('reference')}"
                + (f", {c.get('nonfinite')} non-finite" if c.get("nonfinite") else "")
            )
        out.append(
            f"      {shape:<12} {_err(c.get('max_rel_err')):>11} {_err(c.get('norm_rel_err')):>10}  "
            f"{verdict}" + (f"  ({'; '.join(notes)})" if notes else "")
        )
    return out


def _capabilities(probe: Mapping[str, Any]) -> list[str]:
    rungs = probe.get("capabilities") or []
    if not rungs:
        return []
    out = ["    capabilities:"]
    for r in rungs:
        detail = " ".join(str(r.get("detail") or "").split())
        head = f"      {r.get('name')!s:<22} {r.get('status')!s:<11}"
        if r.get("status") == "pass":
            # the pass details are short: the row fits 80 columns
            out.append(f"{head} {detail}")
        else:
            out += [head.rstrip(), f"        {detail}"]
    return out


def probe_lines(probe: Mapping[str, Any], style: Style) -> list[str]:
    status = str(probe.get("status"))
    sev = Severity.OK if status == "pass" else Severity.FAIL
    adapter = probe.get("adapter") or {}
    head = f"  {style.paint(style.glyph(sev), sev)} probe: {style.paint(status, sev, bold=True)}"
    if adapter.get("name"):
        head += f" on {adapter['name']} ({probe.get('backend')}, {adapter.get('type')})"
    seconds = probe.get("seconds")
    if seconds is not None:
        head += f" in {float(seconds):.2f} s"
    # the summary is VKR001's line, right above this section
    lines = [head]
    off = probe.get("disabled") or {}
    if off:
        from vkdoctor.probe_report import disabled_setting

        setting, _ = disabled_setting(off)
        lines.append(
            f"    ran with {setting}: they crash or hang every Vulkan program (VKT001, VKT003)"
        )
    lines += _adapters(probe)
    lines += _ladder(probe)
    lines += _cases(probe)
    lines += _capabilities(probe)
    if status != "pass":
        if probe.get("stage"):
            lines.append(f"    stage reached: {probe['stage']}")
        tail = probe.get("stderr_tail") or []
        if tail and not all(line in str(probe.get("summary") or "") for line in tail):
            lines.append("    last lines of stderr:")
            lines += [f"      | {line}" for line in tail]
    return lines
