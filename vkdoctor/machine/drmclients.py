"""Which processes keep a GPU busy, from the DRM usage statistics the kernel writes in each open
file's /proc/PID/fdinfo/FD (Documentation/gpu/drm-usage-stats.rst): `drm-pdev` names the PCI
device, `drm-client-id` the client, `drm-engine-*` the nanoseconds each engine has run its work
(amdgpu, i915, nouveau and others), `drm-cycles-*` / `drm-total-cycles-*` the cycles (xe)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vkdoctor.model import files

PROC = Path("/proc")
#: bounds on the walk: processes, open files per process
MAX_PIDS = 8192
MAX_FDS = 1024

#: (pdev, driver, client id) -> (process, engine ns, cycles, total cycles)
Sample = dict[tuple[str, str, str], tuple[str, float, float, float]]


def _plain(text: str, limit: int = 60) -> str:
    return "".join(c if " " <= c <= "~" else "?" for c in text[:limit])


def _counters(text: str) -> tuple[dict[str, str], float, float, float]:
    keys: dict[str, str] = {}
    ns = cycles = total = 0.0
    for line in text.splitlines()[:256]:
        name, _, value = line.partition(":")
        value = value.strip()
        if name in ("drm-driver", "drm-client-id", "drm-pdev"):
            keys[name] = value
        m = re.fullmatch(r"(\d+)(?: ns)?", value)
        if m is None:
            continue
        if name.startswith("drm-engine-") and not name.startswith("drm-engine-capacity-"):
            ns += float(m.group(1))
        elif name.startswith("drm-total-cycles-"):
            total += float(m.group(1))
        elif name.startswith("drm-cycles-"):
            cycles += float(m.group(1))
    return keys, ns, cycles, total


def _drm_fds(pid: Path) -> list[str]:
    out = []
    try:
        fds = sorted(pid.joinpath("fd").iterdir(), key=lambda p: p.name)[:MAX_FDS]
    except (OSError, ValueError):
        return []
    for fd in fds:
        try:
            if str(fd.readlink()).startswith("/dev/dri/"):
                out.append(fd.name)
        except (OSError, ValueError):
            continue
    return out


def sample(proc: Path = PROC) -> Sample:
    """Every DRM client of every other process now, by PCI device, driver and client id."""
    out: Sample = {}
    try:
        pids = [p for p in proc.iterdir() if p.name.isdigit() and p.name != str(os.getpid())]
    except OSError:
        return out
    for pid in sorted(pids, key=lambda p: int(p.name))[:MAX_PIDS]:
        for fd in _drm_fds(pid):
            try:
                text = files.read_text(pid / "fdinfo" / fd, 16384)
                comm = files.read_text(pid / "comm", 256).strip()
            except (OSError, ValueError):
                continue
            keys, ns, cycles, total = _counters(text)
            if "drm-pdev" in keys:
                key = (keys["drm-pdev"], keys.get("drm-driver", ""), keys.get("drm-client-id", ""))
                out[key] = (f"{_plain(comm)} (pid {pid.name})", ns, cycles, total)
    return out


def busy_clients(
    wait: Callable[[], float], proc: Path = PROC, threshold: float = 10.0
) -> list[dict[str, Any]]:
    """The other processes' DRM clients busy at least `threshold` % of the time between two
    samples; `wait` sleeps and returns the seconds it slept."""
    first = sample(proc)
    if not first:
        return []
    seconds = wait()
    out = []
    for key, (who, ns, cycles, total) in sample(proc).items():
        if key not in first:
            continue
        _, ns0, cycles0, total0 = first[key]
        if total > total0:
            pct = 100 * (cycles - cycles0) / (total - total0)
        else:
            pct = 100 * (ns - ns0) / (seconds * 1e9) if seconds > 0 else 0.0
        if pct >= threshold:
            out.append({"device": _plain(key[0], 16), "process": who, "busy_pct": min(pct, 100.0)})
    return out[:32]
