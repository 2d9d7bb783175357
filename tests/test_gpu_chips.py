"""vkdoctor/data/gpu_chips.json is what scripts/gen_gpu_chips.py makes of the sources it names:
the test fetches those very .debs from Debian's archive (SHA256 checked, cached under
~/.cache/vkdoctor-tests/gpu-chips), re-runs the generator and compares."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

from vkdoctor.machine.gpuchain import chips, model, nvidia_chip
from vkdoctor.render.escape import visible


def test_the_generator_remakes_the_committed_tables_from_their_sources() -> None:
    proc = subprocess.run(
        [sys.executable, "scripts/gen_gpu_chips.py", "--pinned", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_tables_name_their_sources_and_place_real_chips() -> None:
    t = chips()
    committed = json.loads((REPO / "vkdoctor/data/gpu_chips.json").read_text())
    assert t == committed
    pci, linux = t["sources"]["pci.ids"], t["sources"]["linux"]
    assert pci["package"] == "pci.ids" and pci["database"] == "2026.10.24"
    assert linux["package"].startswith("linux-source-") and len(linux["sha256"]) == 64
    # NVIDIA: H200, RTX 5090, a GA102GL card, a TU117 laptop chip by pci.ids' name
    assert nvidia_chip("0x2335") == "gh100" and nvidia_chip("2b85") == "gb202"
    assert nvidia_chip("0x2230") == "ga102" and nvidia_chip("0x1f91") == "tu117"
    assert nvidia_chip("0x1b80") is None and nvidia_chip("0x3f00") is None  # GP104; not listed
    assert "1b80" in t["listed"]["0x10de"] and "3f00" not in t["listed"]["0x10de"]
    assert t["nvidia"]["nouveau_gsp"]["ga106"]["versions"] == ["535.113.01", "570.144"]
    assert "fmc-570.144.bin" in t["nvidia"]["nouveau_gsp"]["gh100"]["files"]
    # AMD: Navi 31 desktop, Navi 33 laptop, Phoenix APU with the kernel's two IP variants
    amd = t["amd"]
    assert amd["ids"]["744c"] == "navi31" and amd["ids"]["73f0"] == "navi33"
    assert [v["required"] for v in amd["chips"]["navi31"]["variants"]] == [
        [
            "gc_11_0_0_pfp.bin",
            "gc_11_0_0_me.bin",
            "gc_11_0_0_mec.bin",
            "sdma_6_0_0.bin",
            "psp_13_0_0_sos.bin",
        ]
    ]
    phoenix = amd["chips"][amd["ids"]["15bf"]]["variants"]
    assert [(v["gc"], v["psp"]) for v in phoenix] == [("11_0_1", "13_0_4"), ("11_0_4", "13_0_11")]
    assert phoenix[0]["required"][-1] == "psp_13_0_4_toc.bin"  # an APU's PSP loads a TOC
    assert amd["chips"]["navi48"]["family"] == "RDNA 4 (GFX12)"
    for prefix, declared in amd["firmware"].items():
        assert all(n.startswith(prefix) for n in declared), prefix
    # MI300 (GC 9.4.3) is found by IP discovery but is not an RDNA 3+ chip of the tables
    assert "74a1" not in amd["ids"] and "74a1" in t["listed"]["0x1002"]


def test_nvidia_gpus_are_named_by_pci_ids_and_no_other_function_is() -> None:
    names = chips()["names"]
    assert set(names) == {"0x10de"}  # AMD's GPUs are named by their family (gpu_ids.json)
    assert model("0x10de", "0x2330") == "H100 SXM5 80GB (GH100)"
    assert model("0x10de", "2335") == "H200 SXM 141GB (GH100)"
    assert model("0x10de", "0x1b80") == "GeForce GTX 1080 (GP104)"  # older than Turing too
    # the chip's HDMI audio function, a chipset's SMBus; an ID pci.ids does not list; AMD
    assert "1aef" in chips()["listed"]["0x10de"] and model("0x10de", "0x1aef") is None
    assert model("0x10de", "0x0aa2") is None and model("0x10de", "0x3f00") is None
    assert model("0x1002", "0x744c") is None
    # pci.ids is data: every name kept is printable and reads the same escaped
    assert all(n.isprintable() and visible(n) == n for n in names["0x10de"].values())


def test_the_generator_keeps_no_name_a_terminal_would_act_on() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_gpu_chips
    finally:
        sys.path.remove(str(REPO / "scripts"))
    kept = gen_gpu_chips.gpu_names(
        {
            "2330": "GH100 [H100 SXM5 80GB]",
            "2331": "GH100 [H100 \x1b]52;c;ZWNobw==\x07]",
            "2332": "GH100 [H100\u202e]",
            "1aef": "GA102 High Definition Audio Controller",
            "0aa2": "MCP79 SMBus Controller",
        }
    )
    assert kept == {"2330": "GH100 [H100 SXM5 80GB]"}
