"""What a bench figure means: the card's specified memory bandwidth, what the machine says about
the GPU (nvidia-smi, sysfs), and a verdict on the copy against the specification."""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vkdoctor.machine import drmclients
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
#: amdgpu's power_dpm_force_performance_level values that hold the clocks at their lowest
LOW_LEVELS = ("low", "profile_min_sclk", "profile_min_mclk")
#: where each driver keeps the clock ceiling and the hardware's highest clock
FREQ_FILES = {
    "i915": "drm/card*/gt_max_freq_mhz against gt_RP0_freq_mhz",
    "xe": "tile0/gt0/freq0/max_freq against rp0_freq",
    "amdgpu": "",
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
    for dev in _devices(root):
        if _ids(dev) != (vendor_id, device_id):
            continue
        link = {
            f: _number(_text(dev / f) or "")
            for f in (
                "current_link_speed",
                "max_link_speed",
                "current_link_width",
                "max_link_width",
            )
        }
        links.append({"device": plain(dev.name), **link})
    return links


def _text(path: Path) -> str | None:
    try:
        return files.read_text(path, 4096).strip()
    except (OSError, ValueError):
        return None


def _first(dev: Path, pattern: str) -> Path | None:
    """The first of `dev`'s entries matching `pattern` (hwmon/hwmon*, drm/card*), by name."""
    try:
        return next(iter(sorted(dev.glob(pattern))[:64]), None)
    except (OSError, ValueError):
        return None


def _levels(text: str | None) -> tuple[list[float], float | None]:
    """amdgpu's pp_dpm_sclk ('0: 500Mhz', '1: 2482Mhz *'): every level's MHz, the current one."""
    levels, now = [], None
    for line in (text or "").splitlines()[:64]:
        m = re.fullmatch(r"\s*\d+:\s*(\d+(?:\.\d+)?)\s*[Mm][Hh]z\s*(\*?)\s*", line)
        if m:
            levels.append(float(m.group(1)))
            now = float(m.group(1)) if m.group(2) else now
    return levels, now


def _watts(text: str | None) -> float | None:
    """hwmon's power caps are in microwatts."""
    n = _number(text or "")
    return None if n is None else n / 1e6


def _amdgpu(dev: Path) -> dict[str, Any]:
    hwmon = _first(dev, "hwmon/hwmon*")
    levels, now = _levels(_text(dev / "pp_dpm_sclk"))
    return {
        "busy_pct": _number(_text(dev / "gpu_busy_percent") or ""),
        "performance_level": plain(_text(dev / "power_dpm_force_performance_level") or "", 40),
        "sclk_mhz": levels,
        "sclk_now_mhz": now,
        "power_cap_w": _watts(_text(hwmon / "power1_cap")) if hwmon else None,
        "power_cap_default_w": _watts(_text(hwmon / "power1_cap_default")) if hwmon else None,
    }


def _i915(dev: Path) -> dict[str, Any]:
    card = _first(dev, "drm/card*")
    mhz = {
        f: _number(_text(card / f"gt_{f}_freq_mhz") or "") if card else None
        for f in ("max", "RP0", "min", "RPn")
    }
    return {"gt_max_mhz": mhz["max"], "gt_rp0_mhz": mhz["RP0"]}


def _xe(dev: Path) -> dict[str, Any]:
    freq = _first(dev, "tile0/gt0/freq0")
    return {
        "gt_max_mhz": _number(_text(freq / "max_freq") or "") if freq else None,
        "gt_rp0_mhz": _number(_text(freq / "rp0_freq") or "") if freq else None,
    }


DRIVER_READINGS = {"amdgpu": _amdgpu, "i915": _i915, "xe": _xe}


def driver_readings(root: Path = PCI_DEVICES) -> list[dict[str, Any]]:
    """What amdgpu, i915 or xe say in sysfs about each PCI device they drive: load, clock
    levels and power cap (amdgpu), the clock ceiling against the hardware's (i915, xe)."""
    out = []
    for dev in _devices(root):
        ids = _ids(dev)
        try:
            driver = (dev / "driver").readlink().name
        except (OSError, ValueError):
            continue
        read = DRIVER_READINGS.get(driver)
        if ids is not None and read is not None:
            out.append(
                {
                    "device": plain(dev.name),
                    "vendor_id": ids[0],
                    "device_id": ids[1],
                    "driver": driver,
                    **read(dev),
                }
            )
    return out[:64]


def _devices(root: Path) -> list[Path]:
    try:
        return [root / name for name in sorted(p.name for p in root.iterdir())[:4096]]
    except OSError:
        return []


def _ids(dev: Path) -> tuple[int, int] | None:
    try:
        vendor, device = (
            int(files.read_text(dev / f, 64).strip(), 16) for f in ("vendor", "device")
        )
    except (OSError, ValueError):
        return None
    return vendor, device


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
    """What nvidia-smi says about every NVIDIA GPU now (nothing where it is not installed), and
    what amdgpu, i915 and xe say in sysfs about theirs."""
    return {
        "nvidia_smi": nvidia_gpus(env),
        "drm": driver_readings(PCI_DEVICES),
        "drm_clients": drmclients.busy_clients(_wait, drmclients.PROC),
    }


def _wait() -> float:
    time.sleep(0.25)
    return 0.25


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
        return {"nvidia_smi": gpus, "drm": after.get("drm") or [], "readings": len(self.samples)}


def _nvidia(state: Mapping[str, Any], device_id: int) -> dict[str, Any] | None:
    return next((g for g in state.get("nvidia_smi") or [] if g["device_id"] == device_id), None)


def _drm(state: Mapping[str, Any], vendor_id: int, device_id: int) -> list[dict[str, Any]]:
    return [
        d
        for d in state.get("drm") or []
        if d["vendor_id"] == vendor_id and d["device_id"] == device_id
    ]


def _busy(before: Mapping[str, Any], vendor_id: int, device_id: int) -> list[str]:
    out = []
    gpu = _nvidia(before, device_id) if vendor_id == 0x10DE else None
    if gpu is not None and gpu["processes"]:
        out.append(
            "another process was on the GPU when the bench began: " + "; ".join(gpu["processes"])
        )
    if gpu is not None and (gpu["utilization_pct"] or 0) >= 10:
        out.append(f"the GPU was {gpu['utilization_pct']:.0f}% busy when the bench began")
    pdevs = {link["device"] for link in pcie_links(vendor_id, device_id, PCI_DEVICES)}
    for c in before.get("drm_clients") or []:
        if c["device"] in pdevs:
            out.append(
                f"{c['process']} kept {c['device']} {c['busy_pct']:.0f}% busy when the bench "
                "began (its DRM usage statistics in /proc)"
            )
    for d in _drm(before, vendor_id, device_id):
        if (d.get("busy_pct") or 0) >= 10:
            out.append(
                f"{d['device']} was {d['busy_pct']:.0f}% busy when the bench began (amdgpu's "
                "gpu_busy_percent): another program is using the GPU"
            )
    return out


def _nvidia_clocks(gpu: Mapping[str, Any]) -> list[str]:
    out = []
    slow = [text for bit, text in CLOCK_REASONS.items() if gpu["clock_reasons"] & bit]
    if slow:
        out.append("nvidia-smi reports clocks held down: " + ", ".join(slow))
    limit, default = gpu["power_limit_w"], gpu["default_power_limit_w"]
    if limit and default and limit < 0.95 * default:
        out.append(f"the power limit is {limit:.0f} W, below the card's default {default:.0f} W")
    return out


def _drm_clocks(d: Mapping[str, Any]) -> list[str]:
    out, dev = [], d["device"]
    level = d.get("performance_level")
    if level in LOW_LEVELS:
        out.append(
            f"{dev}: amdgpu's power_dpm_force_performance_level is '{level}': clocks are held "
            "low (echo auto > .../power_dpm_force_performance_level lets them rise)"
        )
    elif level == "manual":
        top = max(d.get("sclk_mhz") or [0])
        out.append(
            f"{dev}: amdgpu's clocks are set by hand (power_dpm_force_performance_level is "
            f"'manual'; pp_dpm_sclk's highest level is {top:.0f} MHz)"
        )
    cap, default = d.get("power_cap_w"), d.get("power_cap_default_w")
    if cap and default and cap < 0.95 * default:
        out.append(
            f"{dev}: amdgpu's power cap is {cap:.0f} W, below the card's default {default:.0f} W "
            "(hwmon power1_cap)"
        )
    ceiling, hardware = d.get("gt_max_mhz"), d.get("gt_rp0_mhz")
    if ceiling and hardware and ceiling < 0.95 * hardware:
        out.append(
            f"{dev}: {d['driver']} caps the GPU's clock at {ceiling:.0f} MHz, below the "
            f"{hardware:.0f} MHz it can run ({FREQ_FILES[d['driver']]})"
        )
    return out


def _clocks(during: Mapping[str, Any], vendor_id: int, device_id: int) -> list[str]:
    gpu = _nvidia(during, device_id) if vendor_id == 0x10DE else None
    out = _nvidia_clocks(gpu) if gpu is not None else []
    for d in _drm(during, vendor_id, device_id):
        out += _drm_clocks(d)
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
        *_busy(before, vendor, device),
        *_clocks(during, vendor, device),
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
    return _spec_verdict(spec, copy, min(r["rmsnorm_pct_of_copy"] for r in doc["results"]), reasons)


def _figures(spec: Mapping[str, Any]) -> list[tuple[float, str]]:
    """Every (GB/s, name) this PCI id may be, highest first."""
    parts = [spec, *(spec.get("shares_id_with") or [])]
    return sorted(((float(p["gbps"]), str(p["name"])) for p in parts), reverse=True)


def _spec_verdict(
    spec: Mapping[str, Any], copy: float, rms: float, reasons: list[str]
) -> dict[str, Any]:
    figures = _figures(spec)
    (high, high_name), (low, low_name) = figures[0], figures[-1]
    shared = (
        f" (cards of {low:,g} to {high:,g} GB/s share this PCI id; vkdoctor cannot tell which "
        "this one is)"
    )
    if copy / high >= EXPECTED_SHARE:
        gbps, name, kind = high, high_name, "as-expected"
    elif copy / low < EXPECTED_SHARE:
        gbps, name, kind = low, low_name, "below-expectation"
    else:
        gbps, name, kind = low, low_name, "undetermined"
    said = (
        f"the copy reaches {100 * copy / gbps:.0f}% of the {gbps:,g} GB/s specified for the {name}"
    )
    said += shared if len(figures) > 1 else ""
    if kind == "as-expected":
        line = f"performs as expected: {said}, and RMSNorm at least {math.floor(rms)}% of the copy"
    elif kind == "below-expectation":
        line = f"below expectation: {said} (a healthy card reaches {100 * EXPECTED_SHARE:.0f}% or more)"
    else:
        line = (
            f"cannot say: {said}, but only {100 * copy / high:.0f}% of the {high:,g} GB/s of the "
            f"{high_name}; a healthy card reaches {100 * EXPECTED_SHARE:.0f}% or more of its own"
        )
    return {
        "verdict": kind,
        "line": line,
        "spec": dict(spec),
        "copy_pct_of_spec": 100 * copy / gbps,
        "reasons": reasons,
    }
