"""vkdoctor bench's verdict: the specification table, the machine's readings, the sentences.

This machine has no NVIDIA GPU, so nvidia-smi is a script that prints what the H200's
nvidia-smi printed (docs/gpu-h200.md, 4 Dec 2026), changed where a test needs a sick card; the
PCIe link is a sysfs tree with the files the kernel writes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from vkdoctor.children.bench import render
from vkdoctor.machine import gpuspec
from vkdoctor.resources import bandwidth_table_path

#: figures in the table with no vendor document, TechPowerUp, Wikipedia or major review site found
WEAK_FIGURES = 42
H200 = {"type": "DiscreteGPU", "vendor_id": 0x10DE, "device_id": 0x2335, "name": "NVIDIA H200"}


def bench_doc(copy: float, kernel_copy: float, adapter: dict = H200) -> dict:
    """A passing bench document with the H200's figures of 4 Dec 2026 (or others)."""
    return {
        "status": "pass",
        "adapter": adapter,
        "adapters": [adapter],
        "results": [
            {
                "rows": 16384,
                "d": 4096,
                "copy_gbps": copy,
                "kernel_copy_gbps": kernel_copy,
                "rmsnorm_pct_of_copy": 95.5,
            },
            {
                "rows": 65536,
                "d": 4096,
                "copy_gbps": copy,
                "kernel_copy_gbps": kernel_copy,
                "rmsnorm_pct_of_copy": 98.3,
            },
        ],
    }


def fake_smi(tmp_path: Path, gpu: str, apps: str = "") -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\ncase "$1" in\n'
        f"  --query-gpu=*) printf '%s\\n' '{gpu}' ;;\n"
        f"  --query-compute-apps=*) printf '%s' '{apps}' ;;\nesac\n"
    )
    smi.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_the_table_is_keyed_by_unique_pci_ids_each_with_its_source():
    table = json.loads(bandwidth_table_path().read_text())
    ids = [p["id"] for p in table["parts"]]
    assert len(ids) == len(set(ids))
    vendors = {i.split(":")[0] for i in ids}
    assert vendors == {"10de", "1002", "8086"}  # NVIDIA, AMD, Intel
    weak = rows = 0
    for part in table["parts"]:
        assert re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{4}", part["id"]), part
        for one in (part, *part.get("shares_id_with", ())):
            assert set(one) <= {"id", "name", "gbps", "source", "weak", "shares_id_with"}, one
            assert 100 <= one["gbps"] <= 10000 and one["name"], one
            # each figure names the page it was checked against and what that page says
            assert re.match(r"https?://\S+ .*\(.*\d.*\)", one["source"]), one
            # weak: no vendor document, TechPowerUp, Wikipedia or major review site was found
            assert one.get("weak", False) in (True, False), one
            weak += one.get("weak", False)
            rows += 1
    # a change in how many figures rest on a secondary source only is made on purpose
    assert (weak, rows) == (WEAK_FIGURES, 77)
    assert gpuspec.spec_for(0x10DE, 0x2335)["gbps"] == 4800
    assert gpuspec.spec_for(0x10DE, 0xFFFF) is None


def test_the_h200_as_measured_performs_as_expected():
    v = gpuspec.verdict(bench_doc(841.9, 4177.6), {}, {})
    assert v["verdict"] == "as-expected" and v["reasons"] == []
    assert v["line"] == (
        "performs as expected: the copy reaches 87% of the 4,800 GB/s specified for the "
        "NVIDIA H200 SXM 141GB, and RMSNorm at least 95% of the copy"
    )
    assert "specification: NVIDIA H200 SXM 141GB, 4,800 GB/s: m.anandtech.com (AnandTech" in render(
        {"status": "pass", "verdict": v}
    )


def test_a_figure_from_a_secondary_source_says_so():
    v = gpuspec.verdict(bench_doc(841.9, 4177.6), {}, {})
    weak = {**v, "spec": {**v["spec"], "weak": True}}
    assert "4,800 GB/s (figure from a secondary source): m.anandtech.com" in render(
        {"status": "pass", "verdict": weak}
    )
    assert "secondary" not in render({"status": "pass", "verdict": v})


def test_a_slow_copy_is_below_expectation_with_the_reasons_nvidia_smi_gives(tmp_path):
    before = gpuspec.machine_state(
        fake_smi(
            tmp_path,
            "00000000:00:06.0, 0x233510DE, 97, 0x0000000000000001, 700.00, 700.00",
            "00000000:00:06.0, 4242, python3 train\x1b[31m.py, 81000\n",
        )
    )
    (tmp_path / "bin" / "nvidia-smi").unlink()
    (tmp_path / "bin").rmdir()
    after = gpuspec.machine_state(
        fake_smi(tmp_path, "00000000:00:06.0, 0x233510DE, 0, 0x00000000000000A4, 350.00, 700.00")
    )
    doc = bench_doc(841.9, 2100.0)
    v = gpuspec.verdict(doc, before, after)
    assert v["verdict"] == "below-expectation"
    assert v["line"].startswith("below expectation: the copy reaches 44% of the 4,800 GB/s")
    assert v["reasons"][:4] == [
        "another process was on the GPU when the bench began: python3 train?[31m.py "
        "(pid 4242, 81000 MiB)",
        "the GPU was 97% busy when the bench began",
        "nvidia-smi reports clocks held down: software power cap, software thermal slowdown, "
        "hardware power brake",
        "the power limit is 350 W, below the card's default 700 W",
    ]
    text = render({"status": "pass", "verdict": v})
    assert "  likely reasons:\n    - another process" in text and "\x1b" not in text


def test_below_expectation_with_nothing_found_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(gpuspec, "PCI_DEVICES", tmp_path)  # no PCI device with the H200's id
    v = gpuspec.verdict(bench_doc(841.9, 2100.0), {}, {})
    assert v["verdict"] == "below-expectation" and v["reasons"] == []
    assert "none of the causes vkdoctor can check was found" in render(
        {"status": "pass", "verdict": v}
    )


def test_a_narrow_pcie_link_is_read_from_sysfs(tmp_path):
    dev = tmp_path / "0000:00:06.0"
    dev.mkdir()
    for name, value in {
        "vendor": "0x10de",
        "device": "0x2335",
        "current_link_speed": "16.0 GT/s PCIe",
        "max_link_speed": "32.0 GT/s PCIe",
        "current_link_width": "8",
        "max_link_width": "16",
    }.items():
        (dev / name).write_text(value + "\n")
    other = tmp_path / "0000:00:07.0"
    other.mkdir()
    (other / "vendor").write_text("garbage\x00\n")
    links = gpuspec.pcie_links(0x10DE, 0x2335, tmp_path)
    assert links == [
        {
            "device": "0000:00:06.0",
            "current_link_speed": 16.0,
            "max_link_speed": 32.0,
            "current_link_width": 8.0,
            "max_link_width": 16.0,
        }
    ]
    assert gpuspec._pcie(links)[0] == "PCIe link 0000:00:06.0 runs x8 of x16"
    assert gpuspec.pcie_links(0x10DE, 0x2335, tmp_path / "missing") == []


def test_an_unknown_card_and_a_failed_bench(tmp_path):
    card = {**H200, "device_id": 0x9999, "name": "Some GPU"}
    v = gpuspec.verdict(bench_doc(500.0, 600.0, card), {}, {})
    assert v["verdict"] == "unknown-card"
    assert v["line"] == (
        "unknown card (10de:9999): no specified bandwidth to hold the copy's 600 GB/s against"
    )
    assert gpuspec.verdict({**bench_doc(1.0, 1.0), "status": "fail"}, {}, {}) is None


@pytest.mark.parametrize("garbage", ["", "x,y,z", "0xZZ, 0x1, 1, 0x1, 1, 1", "a" * 5000])
def test_nvidia_smi_garbage_is_no_reading(tmp_path, garbage):
    assert gpuspec.machine_state(fake_smi(tmp_path, garbage))["nvidia_smi"] == []


def test_a_cpu_adapter_on_a_machine_with_a_gpu_names_the_command_for_the_gpu():
    cpu = {"type": "CPU", "vendor_id": 0x10005, "device_id": 0, "name": "llvmpipe"}
    doc = {**bench_doc(50.0, 5.0, cpu), "adapters": [cpu, {**H200, "name": "NVIDIA H200 $(x)"}]}
    v = gpuspec.verdict(doc, {}, {})
    assert v["verdict"] == "cpu-adapter"
    assert v["line"] == (
        "a CPU adapter: its figures measure the host's processor and are no measure of a GPU; "
        "this machine has a GPU: vkdoctor bench --adapter 'NVIDIA H200 $(x)'"
    )


def test_clocks_held_down_under_load_are_seen_by_the_readings_taken_during_the_bench(tmp_path):
    """After the bench the GPU is idle (0x1); a power cap (0x4) seen while it ran still counts."""
    import time

    env = fake_smi(tmp_path, "00000000:00:06.0, 0x233510DE, 100, 0x0000000000000004, 700, 700")
    with gpuspec.Sampler(env, interval=0.05) as sampler:
        deadline = time.monotonic() + 10
        while not sampler.samples and time.monotonic() < deadline:
            time.sleep(0.05)
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.write_text(smi.read_text().replace("0x0000000000000004", "0x0000000000000001"))
    after = gpuspec.machine_state(env)
    assert after["nvidia_smi"][0]["clock_reasons"] == 1
    during = sampler.state(after)
    assert during["readings"] >= 1 and during["nvidia_smi"][0]["clock_reasons"] == 5
    v = gpuspec.verdict(bench_doc(841.9, 4177.6), {}, during)
    assert v["verdict"] == "as-expected"
    assert "nvidia-smi reports clocks held down: software power cap" in v["reasons"]
    assert "  also found:\n    - nvidia-smi reports clocks held down" in render(
        {"status": "pass", "verdict": v}
    )


def test_without_nvidia_smi_the_sampler_reads_nothing(tmp_path):
    with gpuspec.Sampler({"PATH": str(tmp_path)}, interval=0.01) as sampler:
        pass
    assert sampler.samples == [] and sampler.state({}) == {
        "nvidia_smi": [],
        "drm": [],
        "readings": 0,
    }


RTX_4070 = {"type": "DiscreteGPU", "vendor_id": 0x10DE, "device_id": 0x2786, "name": "RTX 4070"}


@pytest.mark.parametrize(
    ("copy", "kind", "start"),
    [
        (400.0, "as-expected", "performs as expected: the copy reaches 79% of the 504.2 GB/s"),
        (300.0, "below-expectation", "below expectation: the copy reaches 62% of the 480 GB/s"),
        (370.0, "undetermined", "cannot say: the copy reaches 77% of the 480 GB/s"),
    ],
)
def test_cards_of_different_bandwidth_behind_one_pci_id_are_judged_against_each(
    tmp_path, monkeypatch, copy, kind, start
):
    """The RTX 4070 came with GDDR6X (504.2 GB/s) and later GDDR6 (480 GB/s) on 10de:2786."""
    monkeypatch.setattr(gpuspec, "PCI_DEVICES", tmp_path)
    v = gpuspec.verdict(bench_doc(copy, copy, RTX_4070), {}, {})
    assert v["verdict"] == kind and v["line"].startswith(start)
    assert (
        "(cards of 480 to 504.2 GB/s share this PCI id; vkdoctor cannot tell which this one is)"
        in v["line"]
    )
    text = render({"status": "pass", "verdict": v})
    assert text.count("  specification: NVIDIA GeForce RTX 4070") == 2


def amdgpu_card(root: Path, **files: str) -> Path:
    """An RX 7900 XTX (1002:744c) behind its switch on amdgpu, as Linux 6.x lays it out."""
    from tests.gputrees import pci_gpu

    dev = pci_gpu(
        root,
        parent="0000:00:01.1/0000:01:00.0/0000:02:00.0",
        address="0000:03:00.0",
        vendor="0x1002",
        device="0x744c",
        subsystem=("0x1da2", "0xe471"),
        driver="amdgpu",
    )
    base = {
        "gpu_busy_percent": "0\n",
        "power_dpm_force_performance_level": "auto\n",
        "pp_dpm_sclk": "0: 500Mhz \n1: 1500Mhz *\n2: 2482Mhz \n",
        "hwmon/hwmon3/power1_cap": "339000000\n",
        "hwmon/hwmon3/power1_cap_default": "339000000\n",
        "hwmon/hwmon3/power1_cap_max": "402000000\n",
        "current_link_speed": "16.0 GT/s PCIe\n",
        "max_link_speed": "16.0 GT/s PCIe\n",
        "current_link_width": "16\n",
        "max_link_width": "16\n",
    }
    for name, text in {**base, **files}.items():
        (dev / name).parent.mkdir(parents=True, exist_ok=True)
        (dev / name).write_text(text)
    return dev


RX_7900 = {"type": "DiscreteGPU", "vendor_id": 0x1002, "device_id": 0x744C, "name": "RX 7900"}


def test_a_healthy_amdgpu_card_gives_no_reason(tmp_path, monkeypatch):
    amdgpu_card(tmp_path)
    monkeypatch.setattr(gpuspec, "PCI_DEVICES", tmp_path / "sys/bus/pci/devices")
    state = gpuspec.machine_state({"PATH": str(tmp_path)})
    assert state["drm"] == [
        {
            "device": "0000:03:00.0",
            "vendor_id": 0x1002,
            "device_id": 0x744C,
            "driver": "amdgpu",
            "busy_pct": 0.0,
            "performance_level": "auto",
            "sclk_mhz": [500.0, 1500.0, 2482.0],
            "sclk_now_mhz": 1500.0,
            "power_cap_w": 339.0,
            "power_cap_default_w": 339.0,
        }
    ]
    v = gpuspec.verdict(bench_doc(880.0, 880.0, RX_7900), state, state)
    assert v["verdict"] == "as-expected" and v["reasons"] == []


def test_a_busy_amdgpu_card_held_low_on_a_narrow_link_says_why(tmp_path, monkeypatch):
    amdgpu_card(
        tmp_path,
        gpu_busy_percent="93\n",
        power_dpm_force_performance_level="low\n",
        **{"hwmon/hwmon3/power1_cap": "150000000\n"},
        current_link_speed="2.5 GT/s PCIe\n",
        current_link_width="4\n",
    )
    monkeypatch.setattr(gpuspec, "PCI_DEVICES", tmp_path / "sys/bus/pci/devices")
    state = gpuspec.machine_state({"PATH": str(tmp_path)})
    v = gpuspec.verdict(bench_doc(300.0, 300.0, RX_7900), state, state)
    assert v["verdict"] == "below-expectation"
    assert v["reasons"] == [
        "0000:03:00.0 was 93% busy when the bench began (amdgpu's gpu_busy_percent): another "
        "program is using the GPU",
        "0000:03:00.0: amdgpu's power_dpm_force_performance_level is 'low': clocks are held low "
        "(echo auto > .../power_dpm_force_performance_level lets them rise)",
        "0000:03:00.0: amdgpu's power cap is 150 W, below the card's default 339 W (hwmon "
        "power1_cap)",
        "PCIe link 0000:03:00.0 runs x4 of x16",
        "PCIe link 0000:03:00.0 runs at 2.5 of 16 GT/s (an idle GPU lowers it; it slows "
        "transfers to and from the host, not the device copy)",
    ]
    assert "  likely reasons:\n    - 0000:03:00.0 was 93% busy" in render(
        {"status": "pass", "verdict": v}
    )


def test_amdgpu_clocks_set_by_hand_are_named(tmp_path, monkeypatch):
    amdgpu_card(tmp_path, power_dpm_force_performance_level="manual\n")
    monkeypatch.setattr(gpuspec, "PCI_DEVICES", tmp_path / "sys/bus/pci/devices")
    state = gpuspec.machine_state({"PATH": str(tmp_path)})
    v = gpuspec.verdict(bench_doc(300.0, 300.0, RX_7900), state, state)
    assert v["reasons"] == [
        "0000:03:00.0: amdgpu's clocks are set by hand (power_dpm_force_performance_level is "
        "'manual'; pp_dpm_sclk's highest level is 2482 MHz)"
    ]


@pytest.mark.parametrize(
    ("driver", "device", "files", "said"),
    [
        (
            "i915",
            "0x56a1",
            {"drm/card0/gt_max_freq_mhz": "1000\n", "drm/card0/gt_RP0_freq_mhz": "2400\n"},
            "i915 caps the GPU's clock at 1000 MHz, below the 2400 MHz it can run "
            "(drm/card*/gt_max_freq_mhz against gt_RP0_freq_mhz)",
        ),
        (
            "xe",
            "0xe20b",
            {"tile0/gt0/freq0/max_freq": "1200\n", "tile0/gt0/freq0/rp0_freq": "2850\n"},
            "xe caps the GPU's clock at 1200 MHz, below the 2850 MHz it can run "
            "(tile0/gt0/freq0/max_freq against rp0_freq)",
        ),
    ],
)
def test_an_intel_clock_ceiling_below_the_hardware_is_a_reason(
    tmp_path, monkeypatch, driver, device, files, said
):
    """An Arc A750 on i915 and an Arc B580 on xe, each behind its card's PCIe switch."""
    from tests.gputrees import pci_gpu

    dev = pci_gpu(
        tmp_path,
        parent="0000:00:01.1/0000:01:00.0/0000:02:01.0",
        address="0000:03:00.0",
        vendor="0x8086",
        device=device,
        subsystem=("0x8086", "0x1021"),
        driver=driver,
    )
    for name, text in files.items():
        (dev / name).parent.mkdir(parents=True, exist_ok=True)
        (dev / name).write_text(text)
    monkeypatch.setattr(gpuspec, "PCI_DEVICES", tmp_path / "sys/bus/pci/devices")
    state = gpuspec.machine_state({"PATH": str(tmp_path)})
    card = {"type": "DiscreteGPU", "vendor_id": 0x8086, "device_id": int(device, 16)}
    v = gpuspec.verdict(bench_doc(200.0, 200.0, card), state, state)
    assert v["verdict"] == "below-expectation" and v["reasons"] == [f"0000:03:00.0: {said}"]
    # the same files with the ceiling at the hardware's top: nothing to say
    top = next(t for n, t in files.items() if "RP0" in n or "rp0" in n)
    for name in files:
        if "max" in name:
            (dev / name).write_text(top)
    state = gpuspec.machine_state({"PATH": str(tmp_path)})
    assert gpuspec.verdict(bench_doc(200.0, 200.0, card), state, state)["reasons"] == []


def test_driver_readings_of_hostile_files_are_bounded_and_plain(tmp_path, monkeypatch):
    amdgpu_card(
        tmp_path,
        gpu_busy_percent="x" * 100000,
        power_dpm_force_performance_level="\x1b[31mlow\n",
        pp_dpm_sclk="garbage\n" * 10000,
    )
    readings = gpuspec.driver_readings(tmp_path / "sys/bus/pci/devices")
    assert readings[0]["busy_pct"] is None and readings[0]["sclk_mhz"] == []
    assert readings[0]["performance_level"] == "?[31mlow"
