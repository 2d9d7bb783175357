"""Which processes keep a GPU busy, read from /proc/PID/fdinfo as the kernel writes it
(Documentation/gpu/drm-usage-stats.rst): a /proc tree with the links and files Linux makes."""

from __future__ import annotations

import os
from pathlib import Path

from vkdoctor.machine import drmclients, gpuspec

AMDGPU = (
    "pos:\t0\nflags:\t02100002\nmnt_id:\t25\nino:\t1121\ndrm-driver:\tamdgpu\n"
    "drm-client-id:\t12\ndrm-pdev:\t0000:03:00.0\npasid:\t32783\n"
    "drm-memory-vram:\t1048576 KiB\ndrm-engine-gfx:\t{gfx} ns\ndrm-engine-compute:\t0 ns\n"
    "drm-engine-dma:\t0 ns\n"
)
XE = (
    "pos:\t0\nflags:\t02100002\ndrm-driver:\txe\ndrm-client-id:\t3\ndrm-pdev:\t0000:03:00.0\n"
    "drm-cycles-rcs:\t{cycles}\ndrm-total-cycles-rcs:\t{total}\ndrm-cycles-ccs:\t0\n"
    "drm-total-cycles-ccs:\t{total}\n"
)


def process(proc: Path, pid: int, comm: str, fds: dict[int, tuple[str, str]]) -> None:
    """/proc/PID with its comm, fd/N links and fdinfo/N files."""
    (proc / str(pid) / "fd").mkdir(parents=True)
    (proc / str(pid) / "fdinfo").mkdir()
    (proc / str(pid) / "comm").write_text(comm + "\n")
    for fd, (target, info) in fds.items():
        (proc / str(pid) / "fd" / str(fd)).symlink_to(target)
        (proc / str(pid) / "fdinfo" / str(fd)).write_text(info)


def test_a_process_busy_on_the_gpu_is_named_with_its_share(tmp_path):
    proc = tmp_path / "proc"
    process(proc, 4242, "blender", {7: ("/dev/dri/renderD128", AMDGPU.format(gfx=10**9))})
    # the same client seen through a second descriptor, and a file that is not a GPU
    process(
        proc,
        977,
        "gnome-shell",
        {
            3: ("/dev/dri/card1", AMDGPU.replace("12", "40").format(gfx=5 * 10**9)),
            4: ("/home/u/.xsession-errors", "pos:\t0\n"),
        },
    )
    process(proc, os.getpid(), "vkdoctor", {5: ("/dev/dri/renderD128", AMDGPU.format(gfx=0))})

    def wait() -> float:
        (proc / "4242/fdinfo/7").write_text(AMDGPU.format(gfx=10**9 + 200_000_000))
        (proc / "977/fdinfo/3").write_text(AMDGPU.replace("12", "40").format(gfx=5 * 10**9 + 10))
        (proc / f"{os.getpid()}/fdinfo/5").write_text(AMDGPU.format(gfx=250_000_000))
        return 0.25

    busy = drmclients.busy_clients(wait, proc)
    assert busy == [{"device": "0000:03:00.0", "process": "blender (pid 4242)", "busy_pct": 80.0}]


def test_xe_cycles_give_the_share(tmp_path):
    proc = tmp_path / "proc"
    process(proc, 31, "ollama\x1b[2J", {9: ("/dev/dri/renderD129", XE.format(cycles=0, total=0))})

    def wait() -> float:
        (proc / "31/fdinfo/9").write_text(XE.format(cycles=450, total=1000))
        return 0.25

    assert drmclients.busy_clients(wait, proc) == [
        {"device": "0000:03:00.0", "process": "ollama?[2J (pid 31)", "busy_pct": 22.5}
    ]


def test_no_gpu_client_means_no_wait(tmp_path):
    process(tmp_path, 1, "init", {0: ("/dev/null", "pos:\t0\n")})
    assert drmclients.busy_clients(lambda: 1 / 0, tmp_path) == []
    assert drmclients.busy_clients(lambda: 1 / 0, tmp_path / "missing") == []


def test_the_busy_process_is_a_likely_reason_for_its_card(tmp_path, monkeypatch):
    from tests.test_gpuspec import RX_7900, amdgpu_card, bench_doc

    amdgpu_card(tmp_path)
    monkeypatch.setattr(gpuspec, "PCI_DEVICES", tmp_path / "sys/bus/pci/devices")
    proc = tmp_path / "proc"
    process(proc, 4242, "blender", {7: ("/dev/dri/renderD128", AMDGPU.format(gfx=0))})

    def wait() -> float:
        (proc / "4242/fdinfo/7").write_text(AMDGPU.format(gfx=200_000_000))
        return 0.25

    before = {"drm_clients": drmclients.busy_clients(wait, proc)}
    v = gpuspec.verdict(bench_doc(300.0, 300.0, RX_7900), before, {})
    assert v["reasons"] == [
        "blender (pid 4242) kept 0000:03:00.0 80% busy when the bench began (its DRM usage "
        "statistics in /proc)"
    ]
    # a process busy on another GPU is no reason for this one
    other = [{**before["drm_clients"][0], "device": "0000:00:02.0"}]
    assert (
        gpuspec.verdict(bench_doc(300.0, 300.0, RX_7900), {"drm_clients": other}, {})["reasons"]
        == []
    )
