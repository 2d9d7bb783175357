"""--redact: what a public issue must not carry goes; what a maintainer needs stays."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import HOST, driver_row, run_vkdoctor, validate_report

from vkdoctor.model import CheckResult, CheckStatus, Finding, Remedy, Report, Severity
from vkdoctor.model.record import replace
from vkdoctor.model.redact import Identity, redact, text_redactor
from vkdoctor.model.report_records import (
    Distro,
    DriverSearch,
    ImplicitLayer,
    OverlayLink,
    OverlayReport,
    SearchPathEntry,
    probe_result_of,
)

ALICE = Identity(
    homes=("/home/alice",),
    users=("alice", "root"),
    hostnames=("box7.lab.example.org",),
)

GPU_UUID = "GPU-5f3c2a1e-9b7d-4c2e-8f10-0123456789ab"
DEVICE_UUID = "0123456789abcdef0123456789abcdef"


def _report() -> Report:
    finding = Finding(
        code="VKD001",
        severity=Severity.FAIL,
        title="lvp_icd.x86_64.json: libLLVM.so.23.1 not found",
        message=(
            "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json names /usr/lib/x86_64-linux-gnu/"
            "libvulkan_lvp.so (mesa-vulkan-drivers 25.2.3-1), which needs libLLVM.so.23.1; "
            "the only candidate is /home/alice/llvm23/lib/libLLVM.so.23.1, built by alice@box7.\n"
            f"NVIDIA device {GPU_UUID}, deviceUUID {DEVICE_UUID}, Serial Number: 1324021012345"
        ),
        remedy=Remedy(
            commands=("vkdoctor check --search-path /home/alice/llvm23/lib --root /srv/img",)
        ),
        evidence={
            "manifest": "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
            "api_version": "1.3.289",
            "candidates": [
                "/home/alice/llvm23/lib/libLLVM.so.23.1",
                "/opt/llvm/lib/libLLVM.so.23.1",
            ],
            "gpus": [{"uuid": "3f2a", "serial": 1324021012345, "name": "NVIDIA L4"}],
            "cwd": "/home/alice",
            "tmp": "/tmp/alice-build/x.json",
            "lookalikes": "malice /home/alicex",
            "load_test": {"/home/alice/vk/libvulkan_lvp.so": {"dlopen": "ok"}},
            "ok": True,
            "count": 3,
        },
    )
    return Report(
        vkdoctor_version="0.1.0",
        host=replace(
            HOST,
            vkdoctor="0.1.0",
            distro=Distro(id="debian", name=None, version="12", like=None),
            python_executable="/home/alice/.venv/bin/python",
            kernel="6.1.0-18-amd64",
            environment={"DISPLAY": "box7.lab.example.org:0"},
        ),
        checks=(
            CheckResult(
                code="VKD001",
                family="drivers",
                title="Drivers",
                status=CheckStatus.RAN,
                findings=(finding,),
            ),
            CheckResult(
                code="VKD002",
                family="drivers",
                title="Layers",
                status=CheckStatus.SKIPPED,
                skip_reason="not applicable: /home/alice/img is not a live root",
            ),
        ),
        drivers=(
            driver_row(
                manifest="/home/alice/.local/share/vulkan/icd.d/nv.json",
                library_path="/usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0",
                verdict="ok",
            ),
        ),
        overlay=OverlayReport(
            dir="/home/alice/.cache/vkdoctor/overlay/3c1f",
            ld_library_path="/home/alice/.cache/vkdoctor/overlay/3c1f:/usr/local/lib",
            libraries=(
                OverlayLink(
                    soname="libLLVM.so.23.1",
                    target="/home/alice/llvm23/lib/libLLVM.so.23.1",
                    needed_by=("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so",),
                ),
            ),
            applied=False,
            exec="vkdoctor exec --search-path /home/alice/llvm23/lib -- CMD",
        ),
        driver_search=DriverSearch(
            loader_version="1.3.239",
            loader_path="/usr/lib/x86_64-linux-gnu/libvulkan.so.1",
            override=None,
            entries=(
                SearchPathEntry(
                    path="/home/alice/.config/vulkan/icd.d",
                    origin="HOME (XDG_CONFIG_HOME unset: $HOME/.config)",
                ),
            ),
            implicit_layers=(
                ImplicitLayer(
                    name="VK_LAYER_box7_capture",
                    library="/home/alice/layers/libcapture.so",
                    disable_env=None,
                ),
            ),
        ),
        probe=probe_result_of(
            {
                "status": "pass",
                "backend": "vulkan",
                "adapter": {
                    "name": "NVIDIA L4",
                    "type": "discrete",
                    "driver": "NVIDIA 550.54.14",
                    "vendor_id": 4318,
                    "device_id": 10168,
                },
                "cases": [{"rows": 64, "d": 8, "max_rel_err": 2.384185791015625e-07, "ok": True}],
                "seconds": 1.2345,
            }
        ),
    )


def test_identifying_values_go_and_the_rest_stays():
    original = _report()
    out = redact(original, ALICE)
    doc = out.as_dict()
    validate_report(doc)
    dumped = json.dumps(doc)
    for secret in ("alice", "box7", "example.org", GPU_UUID, DEVICE_UUID, "1324021012345", "3f2a"):
        assert secret not in dumped.replace("malice /home/alicex", ""), secret

    # the driver search keeps its shape and what is not the user's
    search = doc["driver_search"]
    assert search["loader_path"] == "/usr/lib/x86_64-linux-gnu/libvulkan.so.1"
    assert search["entries"][0]["path"] == "~/.config/vulkan/icd.d"
    assert search["implicit_layers"][0]["library"] == "~/layers/libcapture.so"

    (f,) = out.findings
    assert f.title == original.findings[0].title
    assert f.message == (
        "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json names /usr/lib/x86_64-linux-gnu/"
        "libvulkan_lvp.so (mesa-vulkan-drivers 25.2.3-1), which needs libLLVM.so.23.1; "
        "the only candidate is ~/llvm23/lib/libLLVM.so.23.1, built by <user>@<host>.\n"
        "NVIDIA device GPU-<uuid>, deviceUUID <uuid>, Serial Number: <serial>"
    )
    # "root" is a common word and identifies nobody: --root stays
    assert f.fix() == "vkdoctor check --search-path ~/llvm23/lib --root /srv/img"
    ev = f.evidence
    assert ev["manifest"] == "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    assert ev["api_version"] == "1.3.289"
    assert ev["candidates"] == ["~/llvm23/lib/libLLVM.so.23.1", "/opt/llvm/lib/libLLVM.so.23.1"]
    assert ev["gpus"] == [{"uuid": "<uuid>", "serial": "<serial>", "name": "NVIDIA L4"}]
    assert ev["cwd"] == "~"
    assert ev["tmp"] == "/tmp/<user>-build/x.json"
    assert ev["lookalikes"] == "malice /home/alicex"
    # keys are values too: evidence keyed by path
    assert ev["load_test"] == {"~/vk/libvulkan_lvp.so": {"dlopen": "ok"}}
    assert ev["ok"] is True and ev["count"] == 3

    assert doc["host"]["distro"] == {"id": "debian", "name": None, "version": "12", "like": None}
    assert doc["host"]["python_executable"] == "~/.venv/bin/python"
    assert doc["host"]["kernel"] == "6.1.0-18-amd64"
    assert doc["host"]["environment"] == {"DISPLAY": "<host>:0"}
    assert doc["host"]["redacted"] is True
    assert doc["checks"][1]["skip_reason"] == "not applicable: ~/img is not a live root"
    assert doc["drivers"][0]["manifest"] == "~/.local/share/vulkan/icd.d/nv.json"
    assert doc["drivers"][0]["library_path"] == "/usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0"
    assert doc["overlay"]["ld_library_path"] == "~/.cache/vkdoctor/overlay/3c1f:/usr/local/lib"
    assert doc["overlay"]["libraries"][0]["needed_by"] == [
        "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
    ]
    # the probe's numbers and the driver version are what a maintainer needs
    assert doc["probe"] == original.as_dict()["probe"]
    # pure: the input is untouched
    assert "alice" in json.dumps(original.as_dict())


def test_generic_names_and_system_homes_are_not_redacted():
    r = text_redactor(Identity(homes=("/", "/usr"), users=("debian",), hostnames=("localhost",)))
    text = "debian 12 on localhost: /usr/lib/x86_64-linux-gnu/libvulkan.so.1"
    assert r(text) == text


def test_longest_home_wins_and_home_is_whole_components():
    r = text_redactor(Identity(homes=("/home/a", "/home/a/sub/"), users=(), hostnames=()))
    assert r("/home/a/sub/x /home/a/y /home/ab") == "~/x ~/y /home/ab"


def test_cli_redacts_every_output(tmp_path: Path):
    # The loader searches $HOME/.config/vulkan/icd.d: the drivers checks name it in their evidence.
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    args = ["check", "--no-probe", "--select", "VKH", "--select", "VKD", "-vv"]
    out, xml = tmp_path / "r.json", tmp_path / "r.xml"
    proc = run_vkdoctor(
        [*args, "--redact", "--json", str(out), "--junit", str(xml)], env={"HOME": str(home)}
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    validate_report(doc)
    assert doc["host"]["redacted"] is True
    dumped = json.dumps(doc)
    assert "~/.config/vulkan/icd.d" in dumped
    assert "/usr/share/vulkan/icd.d" in dumped  # system paths stay
    for text in (out.read_text(), xml.read_text(), proc.stdout):
        assert str(home) not in text
    assert "~/.config/vulkan/icd.d" in proc.stdout  # -vv shows the evidence in the text report
    plain = run_vkdoctor([*args, "--json", "-"], env={"HOME": str(home)})
    assert f"{home}/.config/vulkan/icd.d" in plain.stdout
    assert "redacted" not in json.loads(plain.stdout)["host"]
