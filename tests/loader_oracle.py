"""The real Vulkan loader as the oracle: run a tiny vkCreateInstance program, parse what it says.

`RealLoader.run(env)` runs tests/data/vkprobe.c (compiled once per session) with
VK_LOADER_DEBUG=error,warn,info,driver,layer in exactly the environment given (plus PATH), and
returns the parsed debug log and the vkCreateInstance result. `predict(env)` runs vkdoctor's
emulation on the same environment. `compare` puts the two side by side.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vkdoctor.loader import debuglog
from vkdoctor.loader import icd as icd_mod
from vkdoctor.loader.icd import DriverScan, driver_scan
from vkdoctor.loader.layerrecords import LayerScan
from vkdoctor.loader.layers import implicit_layer_scan
from vkdoctor.model.context import Context

DATA = Path(__file__).resolve().parent / "data"
LVP_MANIFEST = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
LVP_LIBRARY = Path("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so")

#: vkdoctor outcome -> what the loader's log shows for it
LOG_OUTCOME = {
    icd_mod.LOADS: debuglog.NO_MESSAGE,
    icd_mod.PORTABILITY: debuglog.NO_MESSAGE,
    icd_mod.LIBRARY_MISSING: debuglog.LOAD_FAILED,
    icd_mod.LIBRARY_UNLOADABLE: debuglog.LOAD_FAILED,
    icd_mod.SILENT_SKIP: debuglog.SILENT,
    icd_mod.NOT_REACHED: debuglog.SILENT,
}


@dataclass
class Real:
    returncode: int
    stdout: str
    stderr: str
    log: debuglog.LoaderLog
    timed_out: bool

    @property
    def create_result(self) -> int | None:
        for line in self.stdout.splitlines():
            if line.startswith("vkCreateInstance -> "):
                return int(line.split("->")[1])
        return None

    @property
    def device_count(self) -> int | None:
        for line in self.stdout.splitlines():
            if line.startswith("vkEnumeratePhysicalDevices -> "):
                return int(line.rsplit("count=", 1)[1])
        return None


class RealLoader:
    def __init__(self, probe: Path) -> None:
        self.probe = probe

    def run(
        self,
        env: dict[str, str],
        *,
        cwd: Path,
        portability: bool = False,
        timeout: float = 20.0,
        uid: int | None = None,
    ) -> Real:
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
        full.update(
            {
                "VK_LOADER_DEBUG": "error,warn,info,driver,layer",
                "VK_LOADER_DISABLE_SELECT": "1",
            }
        )
        full.update(env)
        args = [str(self.probe)] + (["--portability"] if portability else [])
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=full,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="surrogateescape",
            start_new_session=True,
            **({"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}),
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        return Real(proc.returncode, out, err, debuglog.parse(err), timed_out)


def context(env: dict[str, str], cwd: Path, *, elevated: bool = False) -> Context:
    return Context(env=dict(env), cwd=cwd, machine="x86_64", elevated=elevated)


def predict(
    env: dict[str, str], cwd: Path, *, portability: bool = False, elevated: bool = False
) -> DriverScan:
    return driver_scan(context(env, cwd, elevated=elevated), portability_enumeration=portability)


def predict_layers(env: dict[str, str], cwd: Path) -> LayerScan:
    return implicit_layer_scan(context(env, cwd))


def predicted_result(scan: DriverScan) -> int:
    """vkCreateInstance's result as vkdoctor predicts it."""
    if scan.aborted_by is not None and scan.aborted_by.outcome == icd_mod.JSON_ERROR:
        return -1
    return 0 if scan.usable else -9


def predicted_view(scan: DriverScan) -> dict[str, Any]:
    """vkdoctor's prediction in the terms the loader's log can show."""
    return {
        "locations": [e.path for e in scan.plan.entries],
        "files": [d.manifest for d in scan.drivers],
        "outcomes": {d.manifest: LOG_OUTCOME.get(d.outcome, d.outcome) for d in scan.drivers},
        "library_paths": {
            d.manifest: d.library_path
            for d in scan.drivers
            if d.library_path and d.outcome != icd_mod.NOT_REACHED and _printable(d.library_path)
        },
        "result": predicted_result(scan),
    }


def observed_view(real: Real) -> dict[str, Any]:
    log = real.log.drivers
    return {
        "locations": log.locations,
        "files": log.files,
        "outcomes": log.outcomes,
        "library_paths": {k: v for k, v in log.library_paths.items() if v},
        "result": real.create_result,
    }


def compare(scan: DriverScan, real: Real) -> dict[str, Any]:
    """Both views of the first driver block; equal dicts mean vkdoctor matched the loader."""
    return {"predicted": predicted_view(scan), "observed": observed_view(real)}


def _printable(text: str) -> bool:
    """A value a one-line log message can show as it is (no line breaks)."""
    return not any(c in text for c in "\n\r")


def assert_match(scan: DriverScan, real: Real) -> None:
    assert_views_match(predicted_view(scan), real)


def assert_views_match(p: dict[str, Any], real: Real) -> None:
    o = observed_view(real)
    diff = []
    for key, mine in p.items():
        theirs = o[key]
        if isinstance(mine, dict):
            for k in sorted(set(mine) | set(theirs)):
                if mine.get(k) != theirs.get(k):
                    diff.append(f"{key}[{k}]: vkdoctor {mine.get(k)!r} / loader {theirs.get(k)!r}")
        elif mine != theirs:
            diff.append(f"{key}: vkdoctor {mine!r} / loader {theirs!r}")
    assert not diff, (
        "vkdoctor and the real loader disagree:\n"
        + "\n".join(diff)
        + ("\n--- loader stderr ---\n" + real.stderr)
    )


def write_manifest(path: Path, library: str, *, api: str = "1.1.230", **icd: Any) -> Path:
    import json

    body: dict[str, Any] = {"library_path": library, "api_version": api, **icd}
    version = "1.0.1" if ("library_arch" in icd or "is_portability_driver" in icd) else "1.0.0"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"file_format_version": version, "ICD": body}))
    return path
