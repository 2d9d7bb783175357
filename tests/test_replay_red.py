"""A kept `check --no-probe`, the machine changed in a way only reads below Python's file
functions (or answers they do not keep) tell, and the next run held to a full run's report.

Each test keeps a run (the next one is replayed: strace sees it import no click), changes the
machine, and compares the next run with a full one (`VKDOCTOR_SPEED_OFF=replay`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from tests.conftest import REPO, clean_env

#: a file changed this close to a run is not kept (vkdoctor.speed.replay.RACY_NS)
RACY_S = 1.2


def _run(
    cache: Path, extra_path: Path, tmp: Path, *, full: bool = False, within: Sequence[str] = ()
) -> tuple[int, str, bool]:
    """`vkdoctor check --no-probe` with `extra_path` on PYTHONPATH, started by `within`
    (nsenter): its exit code, report, and whether it was replayed (strace saw it open no
    module of click's)."""
    env = clean_env({"XDG_CACHE_HOME": str(cache), "PYTHONPATH": f"{REPO}:{extra_path}"})
    if full:
        env["VKDOCTOR_SPEED_OFF"] = "replay"
    trace = tmp / "trace"
    strace = ["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(trace)]
    proc = subprocess.run(
        [*within, *strace, sys.executable, "-m", "vkdoctor", "check", "--no-probe"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    replayed = "/click/" not in trace.read_text(errors="replace")
    # other programs change the free space between two runs
    return proc.returncode, re.sub(r"\d+\.\d [KMGT]iB free", "N GiB free", proc.stdout), replayed


def _held(
    tmp: Path, extra_path: Path, change: Callable[[], None], within: Sequence[str] = ()
) -> tuple[int, str]:
    """Keep a run, `change` the machine, and hold the next run to a full one (its code and
    report, which the caller holds to what the change must show)."""
    cache = tmp / "cache"
    time.sleep(RACY_S)
    for _ in range(8):
        code, _, replayed = _run(cache, extra_path, tmp, within=within)
        if replayed:
            break
        time.sleep(RACY_S)
    assert replayed and code == 0, "no run was replayed: nothing to hold"
    change()
    after = _run(cache, extra_path, tmp, within=within)
    full = _run(cache, extra_path, tmp, full=True, within=within)
    assert not full[2]
    assert after[:2] == full[:2]
    return after[:2]


def _broken_wgpu(folder: Path) -> None:
    """A wgpu package without its native library (a half-done `pip install --target`)."""
    (folder / "wgpu" / "resources").mkdir(parents=True)
    (folder / "wgpu" / "__init__.py").write_text("")


def test_a_package_found_first_on_sys_path(tmp_path: Path) -> None:
    """wgpu installed in a folder searched before the one that held it: the module search
    reads folders below os.listdir, and VKL005 follows what it finds."""
    first = tmp_path / "site"
    first.mkdir()
    code, out = _held(tmp_path, first, lambda: _broken_wgpu(first))
    assert code == 1 and "VKL005" in out, out


def test_a_package_in_a_sys_path_folder_that_did_not_exist(tmp_path: Path) -> None:
    """A PYTHONPATH folder that did not exist is made, with wgpu in it."""
    first = tmp_path / "later"
    code, out = _held(tmp_path, first, lambda: _broken_wgpu(first))
    assert code == 1 and "VKL005" in out, out


@pytest.fixture
def pci_bus(tmp_path: Path) -> Iterator[tuple[list[str], Path]]:
    """A mount namespace of its own, kept by a bind mount (each run enters the same one: its
    identity is part of a run's situation), where /sys/bus/pci/devices is a tmpfs holding this
    machine's devices: the nsenter command line and the folder's path."""
    keep = tmp_path / "ns"
    keep.mkdir()
    (keep / "mnt").touch()
    subprocess.run(["mount", "--bind", keep, keep], check=True)
    subprocess.run(["mount", "--make-private", keep], check=True)
    try:
        subprocess.run(
            ["unshare", f"--mount={keep}/mnt", "--propagation", "private", "true"], check=True
        )
        within = ["nsenter", f"--mount={keep}/mnt", "--"]
        devices = Path("/sys/bus/pci/devices")
        links = {e.name: os.readlink(e) for e in devices.iterdir()}
        copy = "; ".join(f"ln -s {t} {devices}/{n}" for n, t in links.items())
        subprocess.run([*within, "sh", "-ec", f"mount -t tmpfs none {devices}; {copy}"], check=True)
        yield within, devices
    finally:
        subprocess.run(["umount", f"{keep}/mnt"], check=False)
        subprocess.run(["umount", keep], check=False)


def test_a_gpu_that_appears_on_the_pci_bus(tmp_path: Path, pci_bus: tuple[list[str], Path]) -> None:
    """A listing of a kernel folder (/sys, /proc) sees its names: no time of the folder changes
    when a device appears in it (a GPU bound back from vfio, an eGPU plugged in)."""
    within, devices = pci_bus
    gpu = devices / "0000:00:1f.7"
    files = {"class": "0x030000", "vendor": "0x10de", "device": "0x2684"}
    writes = "; ".join(f"echo {v} > {gpu}/{k}" for k, v in files.items())

    def plug() -> None:
        subprocess.run([*within, "sh", "-ec", f"mkdir {gpu}; {writes}"], check=True)

    empty = tmp_path / "empty"
    empty.mkdir()
    _, out = _held(tmp_path, empty, plug, within)
    assert "VKG001" in out and "0000:00:1f.7" in out, out
