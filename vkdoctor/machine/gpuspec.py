"""What a bench figure means: the card's specified memory bandwidth, what the machine says about
the GPU (nvidia-smi, sysfs), and a verdict on the copy against the specification."""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vkdoctor.model import files
from vkdoctor.packages.proc import run_tool
from vkdoctor.resources import bandwidth_table_path

#: a copy under this share of the specification is below expectation: a plain device copy
#: reaches 85-95 % of it on a healthy card (87 % on an H200, docs/gpu-h200.md)
EXPECTED_SHARE = 0.75
PCI_DEVICES = Path("/sys/bus/pci/devices")
#: nvidia-smi's clocks event reasons that slow a busy GPU (idle, 0x1, does not)
CLOCK_REASONS = {
    0x2: "clocks held by an applications-clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}
SMI_GPU = (
    "pci.bus_id,pci.device_id,utilization.gpu,clocks_event_reasons.active,power.limit,"
    "power.default_limit"
)


def spec_for(vendor_id: int | None, device_id: int | None) -> dict[str, Any] | None:
    """The specification entry (name, gbps, source) for a PCI id, or None: an unknown card."""
    if vendor_id is None or device_id is None:
        return None
    key = f"{vendor_id:04x}:{device_id:04x}"
    table = json.loads(files.read_text(bandwidth_table_path()))
    return next((p for p in table["parts"] if p["id"] == key), None)


def plain(text: str, limit: int = 80) -> str:
    """An outside string safe for a terminal: printable ASCII, at most `limit` characters."""
    return "".join(c if " " <= c <= "~" else "?" for c in text[:limit])


def _number(text: str) -> float | None:
    m = re.match(r"\s*(\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else None


def pcie_links(vendor_id: int, device_id: int, root: Path = PCI_DEVICES) -> list[dict[str, Any]]:
    """The PCIe link of each PCI device with these ids, as sysfs gives it (speed in GT/s)."""
    links = []
    try:
        entries = sorted(p.name for p in root.iterdir())[:4096]
    except OSError:
        return []
    for name in entries:
        dev = root / name
        try:
            ids = [int(files.read_text(dev / f, 64).strip(), 16) for f in ("vendor", "device")]
            link = {
                f: files.read_text(dev / f, 64).strip()
                for f in (
                    "current_link_speed",
                    "max_link_speed",
                    "current_link_width",
                    "max_link_width",
                )
            }
        except (OSError, ValueError):
            continue
        if ids == [vendor_id, device_id]:
            links.append({"device": plain(name), **{k: _number(v) for k, v in link.items()}})
    return links


def _smi(args: list[str], env: Mapping[str, str]) -> list[list[str]]:
    """nvidia-smi's CSV rows, or [] where it is missing, fails or hangs."""
    run = run_tool(["nvidia-smi", *args, "--format=csv,noheader,nounits"], env=env, timeout=15)
    if run.returncode != 0:
        return []
    lines = run.stdout[: 1 << 16].splitlines()
    return [[c.strip() for c in line.split(",")] for line in lines if line.strip()]


def _process(row: list[str]) -> str:
    _, pid, name, memory = row
    return f"{plain(name, 60)} (pid {plain(pid, 12)}, {plain(memory, 12)} MiB)"


def nvidia_gpus(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """nvidia-smi's view of each GPU: device id, load, clock reasons, power limit, processes."""
    rows = [r for r in _smi([f"--query-gpu={SMI_GPU}"], env) if len(r) == 6][:64]
    apps = _smi(["--query-compute-apps=gpu_bus_id,pid,process_name,used_memory"], env)
    gpus = []
    for bus, pci_id, util, reasons, limit, default in rows:
        ok = re.fullmatch(r"0x[0-9a-fA-F]{8}", pci_id) and re.fullmatch(
            r"0x[0-9a-fA-F]{1,16}", reasons
        )
        if not ok:
            continue
        gpus.append(
            {
                "device_id": int(pci_id[2:6], 16),
                "utilization_pct": _number(util),
                "clock_reasons": int(reasons, 16),
                "power_limit_w": _number(limit),
                "default_power_limit_w": _number(default),
                "processes": [_process(a) for a in apps if len(a) == 4 and a[0] == bus][:16],
            }
        )
    return gpus


def machine_state(env: Mapping[str, str]) -> dict[str, Any]:
    """What nvidia-smi says about every NVIDIA GPU now (nothing where it is not installed)."""
    return {"nvidia_smi": nvidia_gpus(env)}


class Sampler:
    """nvidia-smi read every `interval` seconds on a thread while the bench runs, so that clocks
    held down under load are seen (after the bench an idle GPU reports only 'idle')."""

    def __init__(self, env: Mapping[str, str], interval: float = 2.0) -> None:
        self.env, self.interval = env, interval
        self.samples: list[list[dict[str, Any]]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        if shutil.which("nvidia-smi", path=self.env.get("PATH")) is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval) and len(self.samples) < 1000:
            self.samples.append(nvidia_gpus(self.env))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=20)

    def state(self, after: Mapping[str, Any]) -> dict[str, Any]:
        """`after` with each GPU's clock event reasons or-ed over every reading taken."""
        gpus = [dict(g) for g in after.get("nvidia_smi") or []]
        for gpu in gpus:
            for sample in self.samples:
                for seen in sample:
                    if seen["device_id"] == gpu["device_id"]:
                        gpu["clock_reasons"] |= seen["clock_reasons"]
        return {"nvidia_smi": gpus, "readings": len(self.samples)}


def _nvidia(state: Mapping[str, Any], device_id: int) -> dict[str, Any] | None:
    return next((g for g in state.get("nvidia_smi") or [] if g["device_id"] == device_id), None)


def _busy(before: Mapping[str, Any], device_id: int) -> list[str]:
    gpu = _nvidia(before, device_id)
    if gpu is None:
        return []
    out = []
    if gpu["processes"]:
        out.append(
            "another process was on the GPU when the bench began: " + "; ".join(gpu["processes"])
        )
    if (gpu["utilization_pct"] or 0) >= 10:
        out.append(f"the GPU was {gpu['utilization_pct']:.0f}% busy when the bench began")
    return out


def _clocks(during: Mapping[str, Any], device_id: int) -> list[str]:
    gpu = _nvidia(during, device_id)
    if gpu is None:
        return []
    out = []
    slow = [text for bit, text in CLOCK_REASONS.items() if gpu["clock_reasons"] & bit]
    if slow:
        out.append("nvidia-smi reports clocks held down: " + ", ".join(slow))
    limit, default = gpu["power_limit_w"], gpu["default_power_limit_w"]
    if limit and default and limit < 0.95 * default:
        out.append(f"the power limit is {limit:.0f} W, below the card's default {default:.0f} W")
    return out


def _pcie(links: list[dict[str, Any]]) -> list[str]:
    out = []
    for link in links:
        cur_w, max_w = link["current_link_width"], link["max_link_width"]
        cur_s, max_s = link["current_link_speed"], link["max_link_speed"]
        if cur_w and max_w and cur_w < max_w:
            out.append(f"PCIe link {link['device']} runs x{cur_w:.0f} of x{max_w:.0f}")
        if cur_s and max_s and cur_s < max_s:
            out.append(
                f"PCIe link {link['device']} runs at {cur_s:g} of {max_s:g} GT/s (an idle GPU "
                "lowers it; it slows transfers to and from the host, not the device copy)"
            )
    return out


def likely_reasons(
    doc: Mapping[str, Any], before: Mapping[str, Any], during: Mapping[str, Any]
) -> list[str]:
    """The causes of a low figure that this machine lets vkdoctor check, as sentences."""
    adapter = doc.get("adapter") or {}
    vendor, device = adapter.get("vendor_id"), adapter.get("device_id")
    if not isinstance(vendor, int) or not isinstance(device, int):
        return []
    return [
        *_busy(before, device),
        *_clocks(during, device),
        *_pcie(pcie_links(vendor, device, PCI_DEVICES)),
    ]


def _copy_gbps(doc: Mapping[str, Any]) -> float:
    return max(
        max(r.get("copy_gbps") or 0.0, r.get("kernel_copy_gbps") or 0.0) for r in doc["results"]
    )


def _cpu_verdict(doc: Mapping[str, Any]) -> dict[str, Any]:
    gpus = [
        a for a in doc.get("adapters") or [] if a.get("type") in ("DiscreteGPU", "IntegratedGPU")
    ]
    line = "a CPU adapter: its figures measure the host's processor and are no measure of a GPU"
    if gpus:
        name = plain(str(gpus[0].get("name")))
        line += f"; this machine has a GPU: vkdoctor bench --adapter {shlex.quote(name)}"
    return {"verdict": "cpu-adapter", "line": line, "spec": None, "reasons": []}


def verdict(
    doc: Mapping[str, Any], before: Mapping[str, Any], during: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The bench's meaning for the user: as expected, below expectation (with the likely
    reasons found), an unknown card, or a CPU adapter. None when the bench did not pass."""
    adapter = doc.get("adapter") or {}
    if doc.get("status") != "pass" or not doc.get("results"):
        return None
    if adapter.get("type") == "CPU":
        return _cpu_verdict(doc)
    vendor, device = adapter.get("vendor_id"), adapter.get("device_id")
    spec = spec_for(vendor, device)
    copy = _copy_gbps(doc)
    reasons = likely_reasons(doc, before, during)
    if spec is None:
        ids = (
            f"{vendor:04x}:{device:04x}"
            if isinstance(vendor, int) and isinstance(device, int)
            else "?"
        )
        line = (
            f"unknown card ({ids}): no specified bandwidth to hold the copy's {copy:,.0f} GB/s "
            "against"
        )
        return {"verdict": "unknown-card", "line": line, "spec": None, "reasons": reasons}
    share = copy / spec["gbps"]
    rms = min(r["rmsnorm_pct_of_copy"] for r in doc["results"])
    said = (
        f"the copy reaches {100 * share:.0f}% of the {spec['gbps']:,g} GB/s specified for the "
        f"{spec['name']}"
    )
    if share >= EXPECTED_SHARE:
        line = f"performs as expected: {said}, and RMSNorm at least {math.floor(rms)}% of the copy"
        kind = "as-expected"
    else:
        line = f"below expectation: {said} (a healthy card reaches {100 * EXPECTED_SHARE:.0f}% or more)"
        kind = "below-expectation"
    return {
        "verdict": kind,
        "line": line,
        "spec": spec,
        "copy_pct_of_spec": 100 * share,
        "reasons": reasons,
    }
