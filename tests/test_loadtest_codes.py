"""One driver that breaks them all: a fake driver whose vkCreateInstance or
vkEnumeratePhysicalDevices returns a chosen VkResult, installed beside the real lavapipe. The real
loader (a tiny C client) says whether lavapipe's device survives; vkdoctor's verdict must agree,
and the filter it names must bring the device back (docs/load-test.md has the loader's table)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import run_json

from vkdoctor.children.loadtest import TargetOutcome, classify, run_load_test, wrecks_all
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model import Severity

DATA = Path(__file__).resolve().parent / "data"
LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
FAKE = "fake_codes_icd.json"
CODES = (5, -1, -2, -3, -4, -6, -7, -9)
GCC_SHARED = ("gcc", "-shared", "-fPIC", "-O1")


class Lab:
    def __init__(self, root: Path) -> None:
        self.lib = root / "libvulkan_fake_codes.so"
        self.client = root / "vk_devices"
        self.icd_dir = root / "icd.d"
        self.icd_dir.mkdir()
        self.manifest = self.icd_dir / FAKE
        subprocess.run(
            [*GCC_SHARED, "-Wall", "-Werror", "-o", str(self.lib), str(DATA / "fake_icd_codes.c")],
            check=True,
            timeout=60,
        )
        subprocess.run(
            [
                "gcc",
                "-O1",
                "-Wall",
                "-Werror",
                "-o",
                str(self.client),
                str(DATA / "vk_devices.c"),
                "-ldl",
            ],
            check=True,
            timeout=60,
        )
        self.manifest.write_text(
            json.dumps(
                {
                    "file_format_version": "1.0.0",
                    "ICD": {"library_path": str(self.lib), "api_version": "1.3.0"},
                }
            )
        )

    def real(self, env: dict[str, str]) -> dict[str, str]:
        """What an application gets from the real loader: create, enumerate, devices."""
        proc = subprocess.run(
            [str(self.client)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        line = proc.stdout.strip()
        fields = dict(part.split("=", 1) for part in line.split(" ", 2))
        assert set(fields) == {"create", "enumerate", "devices"}, line
        return fields


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    return Lab(tmp_path_factory.mktemp("codes"))


def beside_lavapipe(lab: Lab, var: str, code: int, **extra: str) -> dict[str, str]:
    """The fake installed beside lavapipe: its manifest's directory added to the search."""
    return {"VK_ADD_DRIVER_FILES": str(lab.icd_dir), var: str(code), **extra}


CASES = [("VKDOCTOR_FAKE_CREATE", c, {}) for c in CODES] + [
    ("VKDOCTOR_FAKE_ENUM", c, {}) for c in CODES
]
CASES.append(("VKDOCTOR_FAKE_ENUM", 5, {"VKDOCTOR_FAKE_ENUM_ON": "fill"}))


@pytest.mark.parametrize(("var", "code", "extra"), CASES)
def test_the_verdict_agrees_with_the_real_loader(lab, var, code, extra):
    env = beside_lavapipe(lab, var, code, **extra)
    assert "llvmpipe" in lab.real({"VK_ADD_DRIVER_FILES": str(lab.icd_dir)})["devices"]
    real = lab.real(env)
    lavapipe_gone = "llvmpipe" not in real["devices"]
    # the loader 1.3.239 table (docs/load-test.md): out of host memory from vkCreateInstance
    # aborts every instance; any failure of vkEnumeratePhysicalDevices hides every device
    creating = var == "VKDOCTOR_FAKE_CREATE"
    assert lavapipe_gone == (code == -1 if creating else True), real
    if lavapipe_gone:
        assert real == (
            {"create": str(code), "enumerate": "none", "devices": ""}
            if creating
            else {"create": "0", "enumerate": str(code), "devices": ""}
        )

    proc, doc = run_json(["check", "--no-probe", "--select", "VKT001,VKT002"], env=env)
    drivers = {f["evidence"]["name"]: f for f in doc["findings"] if f["code"] == "VKT001"}
    fake, lvp = drivers[FAKE], drivers["lvp_icd.x86_64.json"]
    assert lvp["severity"] == "ok" and "llvmpipe" in lvp["title"]  # lavapipe is not blamed
    (device,) = [f for f in doc["findings"] if f["code"] == "VKT002"]
    fails = [f for f in doc["findings"] if f["severity"] == "fail"]
    if not lavapipe_gone:
        # the fake only drops itself: a warning for it, and the machine stays green
        assert fake["severity"] == "warn" and fake["evidence"]["verdict"] == "instance-failed"
        assert device["severity"] == "ok" and "llvmpipe" in device["title"]
        assert fails == [] and proc.returncode == 0, proc.stdout
        return
    assert proc.returncode == 1
    assert fails == [fake], fails  # the one failure is the driver at fault
    assert fake["evidence"]["verdict"] == ("aborts-instances" if creating else "hides-devices")
    assert FAKE in fake["title"] and str(lab.lib) in fake["title"]
    assert fake["evidence"]["manifest"] == str(lab.manifest)
    assert fake["evidence"]["library"] == str(lab.lib)
    assert fake["evidence"]["beside"]["drivers"][-1] == str(lab.manifest)
    assert device["severity"] == "info"
    assert device["title"].endswith(f"but only with {FAKE} out of the way")
    assert fake["remedy"].startswith(f"export VK_LOADER_DRIVERS_DISABLE={FAKE};")
    # the filter vkdoctor names really brings lavapipe back
    fixed = lab.real({**env, "VK_LOADER_DRIVERS_DISABLE": FAKE})
    assert fixed["create"] == "0" and fixed["enumerate"] == "0"
    assert "llvmpipe" in fixed["devices"]


def test_a_driver_the_user_asked_for_that_drops_itself_is_a_failure(lab):
    """VK_ADD_DRIVER_FILES naming the manifest itself asks for that driver: lavapipe still
    works, but what the user asked for does not."""
    env = {"VK_ADD_DRIVER_FILES": str(lab.manifest), "VKDOCTOR_FAKE_CREATE": "-3"}
    assert "llvmpipe" in lab.real(env)["devices"]
    proc, doc = run_json(["check", "--no-probe", "--select", "VKT001,VKT002"], env=env)
    assert proc.returncode == 1
    fails = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert [f["evidence"]["name"] for f in fails] == [FAKE]
    (fake,) = fails
    assert "VK_ADD_DRIVER_FILES asks for" in fake["title"]
    assert f"take {lab.manifest} out of VK_ADD_DRIVER_FILES" in fake["remedy"]


def test_the_probe_runs_past_a_driver_that_aborts_every_instance(lab):
    """As things are, every Vulkan program fails in vkCreateInstance; the probe runs with the
    loader's filter for the driver, passes, and the one failure is the load test's."""
    env = beside_lavapipe(lab, "VKDOCTOR_FAKE_CREATE", -1)
    proc, doc = run_json(["check", "--cpu", "--select", "VKT001,VKR001"], env=env, timeout=300)
    assert proc.returncode == 1
    (vkr,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert vkr["severity"] == "info", vkr
    assert vkr["title"] == f"Compute probe passed once {FAKE} was turned off"
    assert doc["probe"]["disabled"] == {"VK_LOADER_DRIVERS_DISABLE": [FAKE]}
    failures = [(f["code"], f["evidence"].get("name")) for f in doc["findings"]]
    failures = [
        c for c, f in zip(failures, doc["findings"], strict=True) if f["severity"] == "fail"
    ]
    assert failures == [("VKT001", FAKE)]


def test_a_suspect_tested_before_a_crash_is_measured_by_the_next_child(lab):
    """The fake comes first (no driver has given a device yet), a driver then kills the child:
    the next child measures the fake beside lavapipe, which it has not met."""
    crasher = lab.lib.parent / "libvulkan_gipa_abort.so"
    subprocess.run(
        [*GCC_SHARED, "-DGIPA_ABORT", "-o", str(crasher), str(DATA / "fake_icd.c")],
        check=True,
        timeout=60,
    )
    crash_manifest = lab.lib.parent / "gipa_abort_icd.json"
    crash_manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(crasher), "api_version": "1.3.0"},
            }
        )
    )
    lvp_lib = json.loads(Path(LVP_MANIFEST).read_text())["ICD"]["library_path"]
    targets = [
        LoadTarget(kind="driver", name=FAKE, manifest=str(lab.manifest), dlopen_name=str(lab.lib)),
        LoadTarget(
            kind="driver",
            name=crash_manifest.name,
            manifest=str(crash_manifest),
            dlopen_name=str(crasher),
        ),
        LoadTarget(
            kind="driver", name="lvp_icd.x86_64.json", manifest=LVP_MANIFEST, dlopen_name=lvp_lib
        ),
    ]
    env = {**os.environ, "VKDOCTOR_FAKE_ENUM": "-4"}
    run = run_load_test(targets, env=env, cwd=Path.cwd(), total_timeout=30.0)
    fake, crash, lvp = run.outcomes
    assert run.children == 2
    assert crash.signal == "SIGABRT" and lvp.devices
    assert fake.suspect and fake.beside is not None
    assert fake.beside["drivers"] == [LVP_MANIFEST, str(lab.manifest)]
    assert fake.beside["enumerate_result"] == -4 and fake.beside["devices"] == 0
    assert wrecks_all(fake, run.loader_version) == "enumerate"
    verdict = classify(fake, others=[LVP_MANIFEST], loader_version=run.loader_version)
    assert verdict.severity is Severity.FAIL and verdict.kind == "hides-devices"
    assert "VK_ERROR_DEVICE_LOST" in verdict.title


def _alone(**fields: object) -> TargetOutcome:
    target = LoadTarget(kind="driver", name="x.json", manifest="/x.json", dlopen_name="/x.so")
    return TargetOutcome(target=target, dlopen="ok", **fields)  # type: ignore[arg-type]


def test_with_no_device_to_compare_with_the_loaders_rule_stands_in():
    failed_enum = dict(instance="ok", enumerate_result=-3, suspect=True)
    assert wrecks_all(_alone(**failed_enum), "1.3.239") == "enumerate"
    assert wrecks_all(_alone(**failed_enum), None) == "enumerate"  # unknown: the old rule
    assert wrecks_all(_alone(**failed_enum), "1.3.284") is None  # it only drops itself there
    oom = dict(instance="failed", vk_result=-1, suspect=True)
    assert wrecks_all(_alone(**oom), "1.4.300") == "instance"
    # the loader's own "no device at all" for a driver without hardware is no suspect
    assert wrecks_all(_alone(instance="ok", enumerate_result=-3), "1.3.239") is None
    measured = _alone(
        **failed_enum,
        beside={"result": 0, "enumerate_result": 0, "devices": 1, "drivers": ["/l", "/x"]},
    )
    assert wrecks_all(measured, "1.3.239") is None  # the real loader has the last word
    v = classify(measured, others=["/l"], loader_version="1.3.239")
    assert v.severity is Severity.WARN and "leaves its devices out" in v.message


@pytest.mark.parametrize(
    ("end", "returncode", "title", "how"),
    [
        ("segv", -11, "crashes the process (SIGSEGV)", "was killed by SIGSEGV"),
        ("exit", 0, "ends the process (exit status 0)", "ended the process (exit status 0)"),
        ("hang", None, "hangs in vkEnumeratePhysicalDevices", "hung"),
    ],
)
def test_a_driver_that_ends_the_process_in_enumeration_is_blamed_for_enumeration(
    lab, end, returncode, title, how
):
    """vkCreateInstance succeeds and vkEnumeratePhysicalDevices crashes, exits or hangs: the
    verdict names the call that did it, as the real loader's client finds it, and the filter it
    names lets that client through."""
    env = {"VK_ADD_DRIVER_FILES": str(lab.icd_dir), "VKDOCTOR_FAKE_ENUM_END": end}
    try:
        real = subprocess.run(
            [str(lab.client)],
            env={**os.environ, **env},
            capture_output=True,
            timeout=5,
            check=False,
        )
    except subprocess.TimeoutExpired:
        assert returncode is None  # the client hangs as the driver does
    else:
        assert real.returncode == returncode and b"create=" not in real.stdout, real
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKT001", "--timeout", "5"], env=env, timeout=120
    )
    (fake,) = [f for f in doc["findings"] if f["evidence"].get("name") == FAKE]
    assert proc.returncode == 1 and fake["severity"] == "fail"
    assert fake["title"].endswith(title), fake["title"]
    assert f"{how} in vkEnumeratePhysicalDevices" in fake["message"], fake["message"]
    assert "vkCreateInstance" not in fake["message"]
    assert fake["remedy"].startswith(f"export VK_LOADER_DRIVERS_DISABLE={FAKE};")
    fixed = lab.real({**env, "VK_LOADER_DRIVERS_DISABLE": FAKE})
    assert "llvmpipe" in fixed["devices"]


def test_a_driver_whose_device_cannot_be_created_is_no_device(tmp_path):
    """lavapipe behind a driver whose vkCreateDevice fails: the loader lists llvmpipe, and
    vulkaninfo, the oracle, dies opening it. The load test, which opens a device too, fails that
    driver with the VkResult (no "1 Vulkan device" green), the probe's "Request device failed"
    points at it, and the fix (the variable unset) gives vulkaninfo its device."""
    lvp_lib = json.loads(Path(LVP_MANIFEST).read_text())["ICD"]["library_path"]
    lib = tmp_path / "librefusing.so"
    subprocess.run(
        [
            *GCC_SHARED,
            "-Wall",
            "-Werror",
            f'-DLVP="{lvp_lib}"',
            "-o",
            str(lib),
            str(DATA / "refusing_icd.c"),
            "-ldl",
        ],
        check=True,
        timeout=60,
    )
    manifest = tmp_path / "refusing.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(lib), "api_version": "1.3.0"},
            }
        )
    )
    env = {"VK_DRIVER_FILES": str(manifest)}
    real = subprocess.run(
        ["vulkaninfo", "--summary"],
        env={**os.environ, **env},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert real.returncode != 0 and b"vkCreateDevice failed" in real.stdout + real.stderr
    proc, doc = run_json(["check", "--cpu", "--select", "VKT001,VKT002,VKR001"], env=env)
    assert proc.returncode == 1
    (driver,) = [f for f in doc["findings"] if f["code"] == "VKT001"]
    assert driver["severity"] == "fail" and driver["evidence"]["verdict"] == "device-refused"
    assert driver["evidence"]["device_result"] == "VK_ERROR_INITIALIZATION_FAILED"
    assert "llvmpipe" in driver["title"] and "vkCreateDevice fails" in driver["title"]
    assert [f["code"] for f in doc["findings"] if f["severity"] == "fail"] == ["VKT001"]
    (probe,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert (
        probe["evidence"]["reason"] == "device-error"
        and probe["evidence"]["explained_by"] == "VKT001"
    )
    assert (
        driver["remedy"].startswith("VK_DRIVER_FILES=")
        and "unset VK_DRIVER_FILES" in driver["remedy"]
    )
    fixed = subprocess.run(
        ["vulkaninfo", "--summary"], capture_output=True, timeout=60, check=False
    )
    assert fixed.returncode == 0 and b"deviceName" in fixed.stdout
