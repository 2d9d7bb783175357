"""VKR002: the Vulkan devices the loader gives, held against the adapters wgpu lists."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context

#: what wgpu says when it hides an adapter, and what to do about it
_WHY = {
    "not Vulkan compliant": (
        "the driver reports a Vulkan conformance version of 0.0.0.0, and wgpu hides adapters that "
        "are not conformant",
        "Use a conformant driver for this device (the vendor's, or Mesa's for its hardware); a Rust "
        "program can still take it with wgpu::InstanceFlags::ALLOW_UNDERLYING_NONCOMPLIANT_ADAPTER "
        "(wgpu-py and wgpu-native have no such switch).",
    ),
}


def _why(reason: str) -> tuple[str, str]:
    for key, said in _WHY.items():
        if key in reason:
            return said
    return (
        f"wgpu says: {reason}" if reason else "wgpu gives no reason, even at debug level",
        "Update wgpu and the driver; `vkdoctor run-probe --json -` shows what wgpu lists.",
    )


class AdaptersMatchDevices(Check):
    """Every Vulkan device the loader gives is an adapter wgpu lists.

    The load test lists each driver's devices through the real loader; the probe lists the
    adapters wgpu sees. wgpu hides some devices the loader gives: drivers that report no Vulkan
    conformance (conformance version 0.0.0.0), and devices below what it requires. wgpu logs each
    at debug level ("hiding adapter"); the probe captures those lines. A device hidden this way is
    a failure when the probe then found no adapter (the cause of VKR001's failure), a warning
    otherwise (programs on wgpu cannot use it).
    """

    code = "VKR002"
    family = "compute"
    title = "wgpu sees the loader's devices"
    live_only = True
    explains = ("VKR001",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return symptom.evidence.get("status") == "no-adapter" and bool(cause.evidence.get("hidden"))

    def run(self, ctx: Context) -> Iterable[Finding]:
        probe = facts.probe_result(ctx)
        try:
            outcomes = facts.load_test(ctx).outcomes
        except Exception:  # the VKT checks report a broken load test
            outcomes = ()
        devices = [(o, d) for o in outcomes if o.target.kind == "driver" for d in o.devices]
        listed = Counter(
            str(a.get("name")) for a in probe.get("adapters") or [] if a.get("backend") == "Vulkan"
        )
        said = {
            str(h.get("name")): str(h.get("reason")) for h in probe.get("hidden_adapters") or []
        }
        if not devices:
            yield self.info("No Vulkan device to compare (VKT002)")
            return
        if not probe.get("adapters") and probe.get("status") != "no-adapter":
            yield self.info(
                "Not compared: the probe listed no adapters", probe.get("summary") or ""
            )
            return
        # devices of one name (two drivers for one GPU) count: wgpu may list one of them
        given = Counter(d.name for _, d in devices)
        hidden_names = {name: n - listed[name] for name, n in given.items() if n > listed[name]}
        hidden = [(o, d) for o, d in devices if d.name in hidden_names]
        evidence: dict[str, Any] = {
            "loader_devices": [d.name for _, d in devices],
            "wgpu_adapters": sorted(listed.elements()),
            "hidden": [
                {
                    "device": name,
                    "count": count,
                    "manifests": [o.target.manifest for o, d in hidden if d.name == name],
                    "wgpu_reason": said.get(name, ""),
                }
                for name, count in hidden_names.items()
            ],
        }
        if not hidden:
            yield self.ok(
                f"wgpu lists every Vulkan device: {', '.join(d.name for _, d in devices)}",
                **evidence,
            )
            return
        whys = {name: _why(said.get(name, "")) for name in hidden_names}
        parts = []
        for entry in evidence["hidden"]:
            froms = ", ".join(Path(m).name for m in entry["manifests"])
            what = (
                entry["device"]
                if entry["count"] == len(entry["manifests"])
                else (
                    f"{entry['count']} of the {len(entry['manifests'])} devices named {entry['device']}"
                )
            )
            parts.append(f"{what} (from {froms}): {whys[entry['device']][0]}")
        message = "; ".join(parts)
        remedy = Remedy(text=" ".join(dict.fromkeys(fix for _, fix in whys.values())))
        names = ", ".join(hidden_names)
        severity = Severity.FAIL if probe.get("status") == "no-adapter" else Severity.WARN
        yield self.finding(
            severity,
            f"wgpu hides {names}, which the Vulkan loader gives",
            f"The loader gives it, and wgpu does not list it: {message}.",
            remedy=remedy,
            evidence=evidence,
        )


CHECKS: tuple[type[Check], ...] = (AdaptersMatchDevices,)
