"""`vkdoctor check --no-probe` and `vkdoctor drivers` as a user runs them, on this machine and on
prepared trees; bad input never hangs, never gives a traceback, and every finding names its file."""

from __future__ import annotations

import json
import os
import re
import struct
import time
from pathlib import Path

import pytest

from tests.conftest import run_json, run_vkdoctor, vulkaninfo
from tests.loader_oracle import LVP_MANIFEST
from tests.test_loader_oracle import base_env, oracle  # noqa: F401  (session fixture)

MESA = [
    "/usr/share/vulkan/icd.d/intel_icd.x86_64.json",
    "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
    "/usr/share/vulkan/icd.d/intel_hasvk_icd.x86_64.json",
    "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json",
]


def findings(doc: dict, code: str) -> list[dict]:
    return [f for f in doc["findings"] if f["code"] == code]


def test_debian12_four_mesa_drivers_and_device_select(oracle, tmp_path):  # noqa: F811
    env = {"HOME": str(tmp_path)}
    proc, doc = run_json(["check", "--no-probe"], env=env)
    assert proc.returncode == 0, proc.stderr
    rows = doc["drivers"]
    real = oracle.run({"HOME": str(tmp_path)}, cwd=tmp_path)
    # the same four, in the real loader's (readdir) order, all loading, from the default XDG_DATA_DIRS
    assert [r["manifest"] for r in rows] == real.log.drivers.files
    assert sorted(r["manifest"] for r in rows) == sorted(MESA)
    # lavapipe ok; the GPU drivers load but find no hardware here, as the load test saw
    assert {Path(r["manifest"]).name: r["verdict"] for r in rows} == {
        "lvp_icd.x86_64.json": "ok",
        "intel_icd.x86_64.json": "info",
        "intel_hasvk_icd.x86_64.json": "info",
        "radeon_icd.x86_64.json": "info",
    }
    assert {r["origin"] for r in rows} == {"default XDG_DATA_DIRS"}
    assert {r["file_format_version"] for r in rows} == {"1.0.0"}
    assert {r["library"] for r in rows} == {
        f"/usr/lib/x86_64-linux-gnu/libvulkan_{n}.so"
        for n in ("intel", "lvp", "intel_hasvk", "radeon")
    }
    lvp = next(r for r in rows if "lvp" in r["manifest"])
    assert "lavapipe" in lvp["driver"]
    # each row carries the real load test: every driver loads, only lavapipe has a device
    assert {r["load"]["dlopen"] for r in rows} == {"ok"}
    (device,) = lvp["load"]["devices"]
    assert device["name"].startswith("llvmpipe")
    assert all(r["load"]["devices"] == [] for r in rows if r is not lvp)
    vkd001 = findings(doc, "VKD001")[0]
    assert vkd001["severity"] == "ok" and vkd001["title"].startswith(
        "4 drivers the loader will try"
    )
    assert real.create_result == 0 and real.device_count == 1
    layer = findings(doc, "VKI001")[0]
    assert "1 of 1 implicit layer active: VK_LAYER_MESA_device_select" in layer["title"]
    (ev,) = layer["evidence"]["layers"]
    assert ev["disable_environment"] == {"NODEVICE_SELECT": "1"}
    assert ev["library_path"] == "libVkLayer_MESA_device_select.so"
    assert ev["library"].endswith("/x86_64-linux-gnu/libVkLayer_MESA_device_select.so")
    # the real loader (run without NODEVICE_SELECT) inserts exactly that layer
    assert ev["active"]
    assert real.log.layers.inserted == {
        "VK_LAYER_MESA_device_select": "libVkLayer_MESA_device_select.so"
    }


def test_drivers_text_tells_the_order_origin_and_layer(tmp_path):
    proc = run_vkdoctor(["drivers"], env={"HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    listing = sorted(MESA, key=out.index)
    assert listing == [
        "/usr/share/vulkan/icd.d/" + n for n in os.listdir("/usr/share/vulkan/icd.d")
    ]
    assert re.search(r"^  /usr/share/vulkan/icd\.d +\[default XDG_DATA_DIRS\]$", out, re.M)
    assert "(lavapipe, Mesa's CPU driver (works without a GPU))" in out
    assert "4 of 4 drivers can load (manifest and libraries)" in out
    assert "VK_LAYER_MESA_device_select" in out and "(off with NODEVICE_SELECT=1)" in out
    # NODEVICE_SELECT defined, even empty, turns the layer off
    proc = run_vkdoctor(["drivers"], env={"HOME": str(tmp_path), "NODEVICE_SELECT": ""})
    assert "Implicit layers the loader adds" not in proc.stdout


def test_an_override_that_leaves_no_driver_is_one_failure(tmp_path):
    """Empty, or a directory without manifests: VKD001 fails once, naming the variable and the
    fix; VKD002 only describes the search path."""
    (tmp_path / "empty").mkdir()
    for value, said in (
        ("", "VK_DRIVER_FILES='' replaces the whole search path with nothing."),
        (
            str(tmp_path / "empty"),
            f"VK_DRIVER_FILES='{tmp_path / 'empty'}' replaces the whole search path, and holds none.",
        ),
    ):
        proc, doc = run_json(
            ["check", "--no-probe"], env={"HOME": str(tmp_path), "VK_DRIVER_FILES": value}
        )
        assert proc.returncode == 1
        failures = [f["code"] for f in doc["findings"] if f["severity"] == "fail"]
        assert failures == ["VKD001"], failures
        (vkd001,) = findings(doc, "VKD001")
        assert said in vkd001["message"]
        assert vkd001["remedy"].startswith("unset VK_DRIVER_FILES")
        assert {f["severity"] for f in findings(doc, "VKD002")} == {"info"}
        assert doc["drivers"] == []


def test_no_manifest_anywhere_fails_with_the_distro_install_command(tmp_path):
    """A Debian 12 tree with no driver installed at all (no XDG variable hides one)."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text(
        'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian 12"\n'
    )
    proc, doc = run_json(["check", "--no-probe", "--root", str(tmp_path), "--select", "VKD"])
    assert proc.returncode == 1
    (vkd001,) = findings(doc, "VKD001")
    assert vkd001["severity"] == "fail"
    assert vkd001["remedy"] == "sudo apt install mesa-vulkan-drivers"
    assert vkd001["fix"] == {"commands": ["apt install mesa-vulkan-drivers"], "needs_root": True}
    assert "/usr/share/vulkan/icd.d" in vkd001["message"]
    text = run_vkdoctor(["drivers", "--root", str(tmp_path)]).stdout
    assert "fix: sudo apt install mesa-vulkan-drivers" in text


def test_bad_input_is_named_bounded_and_never_a_traceback(tmp_path):
    d = tmp_path / "icd"
    d.mkdir()
    os.mkfifo(d / "a_fifo.json")
    (d / "b_big.json").write_bytes(b"{" + b" " * (1024 * 1024 + 10) + b"}")
    (d / "c_deep.json").write_text('{"x":' + "[" * 20000 + "]" * 20000 + "}")
    (d / "d_utf8.json").write_bytes(LVP_MANIFEST.read_bytes().replace(b'"1.0.0"', b'"1.0.0\xff"'))
    (d / "e_loop.json").symlink_to(d / "e_loop.json")
    (d / "f_trunc.json").write_bytes(LVP_MANIFEST.read_bytes()[:40])
    (d / "g_types.json").write_text(
        '{"file_format_version": [1], "ICD": {"library_path": 12345, "api_version": {}}}'
    )
    (d / "h_empty.json").write_bytes(b"")
    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": f"{d}/f_trunc.json:{d}"}
    start = time.monotonic()
    proc, doc = run_json(["drivers"], env=env, timeout=120)
    assert time.monotonic() - start < 60
    assert "Traceback" not in proc.stderr and proc.returncode == 1
    by_manifest: dict[str, dict] = {}
    for r in doc["drivers"]:  # f_trunc.json is listed twice: as a file, then from the directory
        by_manifest.setdefault(Path(r["manifest"]).name, r)
    # the truncated file (first in VK_DRIVER_FILES) aborts loader 1.3.239's scan: nothing after it is read
    assert by_manifest["f_trunc.json"]["outcome"] == "json-error"
    assert by_manifest["f_trunc.json"]["verdict"] == "fail"
    assert {r["outcome"] for r in doc["drivers"][1:]} == {"not-reached"}
    assert any(
        "f_trunc.json" in f["message"] and f["severity"] == "fail" for f in findings(doc, "VKD003")
    )
    # without the truncated file, every other defect gets its own finding naming the file
    env["VK_DRIVER_FILES"] = str(d)
    proc, doc = run_json(["drivers"], env=env, timeout=120)
    assert "Traceback" not in proc.stderr and proc.returncode == 1
    outcomes = {Path(r["manifest"]).name: r["outcome"] for r in doc["drivers"]}
    first = next(iter(outcomes))
    expected = {
        "a_fifo.json": "fifo-hangs",
        "b_big.json": "too-large",
        "c_deep.json": "no-icd-object",  # 20000 levels: the loader parses them (crashes at 175000)
        "d_utf8.json": "loads",
        "e_loop.json": "open-failed",
        "g_types.json": "library-missing",
        "h_empty.json": "skipped-silently",
    }
    # the FIFO stops the loader; files listed after it are never reached
    for name, outcome in outcomes.items():
        if outcome != "not-reached":
            assert expected[name] == outcome, (name, outcome)
    messages = " ".join(f["message"] + f["title"] for f in doc["findings"])
    for name, outcome in outcomes.items():
        if outcome not in ("not-reached", "loads"):
            assert name in messages, name
    assert first in outcomes


def test_broken_implicit_layers_name_their_disable_variable(tmp_path):
    d = tmp_path / "data/vulkan/implicit_layer.d"
    d.mkdir(parents=True)
    layer = {
        "file_format_version": "1.0.0",
        "layer": {
            "name": "VK_LAYER_TEST_gone",
            "type": "GLOBAL",
            "library_path": "/nonexistent/libVkLayer_gone.so",
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "x",
            "disable_environment": {"DISABLE_GONE": "1"},
        },
    }
    (d / "gone.json").write_text(json.dumps(layer))
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    proc, doc = run_json(["check", "--no-probe"], env=env)
    (broken,) = findings(doc, "VKI002")
    assert broken["severity"] == "warn"
    assert (
        "VK_LAYER_TEST_gone" in broken["title"]
        and "/nonexistent/libVkLayer_gone.so" in broken["title"]
    )
    # left behind (no package owns it): removed for good, or turned off where the variable is set
    assert broken["remedy"].startswith(f"rm {d / 'gone.json'} (or, only where it is set: ")
    assert "export DISABLE_GONE=1" in broken["remedy"]
    # defined, even empty, the disable variable turns it off
    env["DISABLE_GONE"] = ""
    proc, doc = run_json(["check", "--no-probe"], env=env)
    assert findings(doc, "VKI002")[0]["severity"] == "ok"
    # a JSON error in a layer manifest breaks every application on loader 1.3.239
    (d / "zz_bad.json").write_text('{"file_format_version": "1.0.0", "layer": {,}}')
    proc, doc = run_json(["check", "--no-probe"], env=env)
    assert proc.returncode == 1
    bad = [f for f in findings(doc, "VKI002") if f["severity"] == "fail"]
    assert (
        bad
        and "zz_bad.json" in bad[0]["title"]
        and "VK_LOADER_LAYERS_DISABLE does not help" in bad[0]["remedy"]
    )


def _elf64(path: Path) -> None:
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HH", 3, 62)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + bytes(64))


def test_root_tree_with_a_newer_loader_only_warns_on_bad_json(tmp_path):
    root = tmp_path / "root"
    lib = root / "usr/lib/x86_64-linux-gnu"
    _elf64(lib / "libvulkan.so.1.3.280")
    (lib / "libvulkan.so.1").symlink_to("libvulkan.so.1.3.280")
    _elf64(lib / "libvulkan_fake.so")
    icd = root / "usr/share/vulkan/icd.d"
    icd.mkdir(parents=True)
    (icd / "broken.json").write_text("{")
    (icd / "fake.json").write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {
                    "library_path": "/usr/lib/x86_64-linux-gnu/libvulkan_fake.so",
                    "api_version": "1.3.0",
                },
            }
        )
    )
    proc, doc = run_json(["drivers", "--root", str(root)], env={"HOME": "/nonexistent-home"})
    assert proc.returncode == 0, proc.stdout
    rows = {Path(r["manifest"]).name: r for r in doc["drivers"]}
    assert (
        rows["broken.json"]["verdict"] == "warn"
        and "1.3.280 skips it" in rows["broken.json"]["reason"]
    )
    assert rows["fake.json"]["verdict"] == "ok"
    text = run_vkdoctor(["drivers", "--root", str(root)], env={"HOME": "/nonexistent-home"}).stdout
    assert "Vulkan loader 1.3.280 (/usr/lib/x86_64-linux-gnu/libvulkan.so.1); root" in text


def test_override_pointing_at_nothing_and_ignored_additions(tmp_path):
    (tmp_path / "manifest.txt").write_text(LVP_MANIFEST.read_text())
    env = {
        "HOME": str(tmp_path),
        "VK_ICD_FILENAMES": f"{tmp_path}/nonexistent_dir:{tmp_path}/manifest.txt",
        "VK_ADD_DRIVER_FILES": str(LVP_MANIFEST),
    }
    proc, doc = run_json(["check", "--no-probe"], env=env)
    assert proc.returncode == 1
    vkd002 = findings(doc, "VKD002")
    titles = [f["title"] for f in vkd002]
    assert "VK_ADD_DRIVER_FILES is ignored" in titles
    assert f"VK_ICD_FILENAMES entry {tmp_path}/nonexistent_dir gives no driver manifest" in titles
    txt = next(f for f in vkd002 if "manifest.txt" in f["title"])
    assert "does not end in .json, so the loader treats it as a directory" in txt["message"]
    # no driver at all: VKD001 is the one failure; VKD002 says why each entry gives none
    assert {f["severity"] for f in vkd002} == {"info", "warn"}  # the ignored addition warns
    assert "VK_ICD_FILENAMES points at no driver manifest" in titles
    assert [f["code"] for f in doc["findings"] if f["severity"] == "fail"] == ["VKD001"]


@pytest.mark.parametrize(
    ("os_release", "command"),
    [
        ('ID=arch\nNAME="Arch Linux"\n', "sudo pacman -S vulkan-swrast"),
        ("ID=fedora\nVERSION_ID=40\n", "sudo dnf install mesa-vulkan-drivers"),
        ("ID=ubuntu\nID_LIKE=debian\n", "sudo apt install mesa-vulkan-drivers"),
    ],
)
def test_install_command_follows_the_inspected_distribution(tmp_path, os_release, command):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text(os_release)
    proc, doc = run_json(["drivers", "--root", str(tmp_path)], env={"HOME": "/nonexistent-home"})
    assert proc.returncode == 1
    (vkd001,) = findings(doc, "VKD001")
    assert vkd001["remedy"].startswith(command)
    # the command alone, as `vkdoctor fix` would run it (Arch's note on the GPU packages is text)
    assert vkd001["fix"] == {"commands": [command.removeprefix("sudo ")], "needs_root": True}


def test_xdg_data_dirs_that_drop_usr_share_is_named_as_the_cause(tmp_path):
    """A custom XDG_DATA_DIRS replaces /usr/local/share:/usr/share: the installed drivers vanish.
    The remedy is to keep the defaults, not to install a driver that is already there."""
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKD00"],
        env={"HOME": str(tmp_path), "XDG_DATA_DIRS": str(tmp_path / "data")},
    )
    assert proc.returncode == 1
    (vkd001,) = findings(doc, "VKD001")
    assert vkd001["severity"] == "fail"
    assert (
        "manifest(s) in /usr/share/vulkan/icd.d are not searched because XDG_DATA_DIRS is set"
        in vkd001["message"]
    )
    assert "apt" not in vkd001["remedy"]
    assert (
        f"export XDG_DATA_DIRS={tmp_path / 'data'}:/usr/local/share:/usr/share" in vkd001["remedy"]
    )
    # VKD002's warning about the same variable is the same cause: it points at VKD001
    assert [f["code"] for f in doc["findings"] if f["severity"] in ("warn", "fail")] == ["VKD001"]
    hidden = [f for f in findings(doc, "VKD002") if f["title"].startswith("XDG_DATA_DIRS hides")]
    assert [f["title"] for f in hidden] == [
        "XDG_DATA_DIRS hides /usr/share/vulkan/icd.d: VKD001 gives the cause"
    ]
    # a relative entry is no part of the fix
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKD001"],
        env={"HOME": str(tmp_path), "XDG_DATA_DIRS": "relative/share"},
    )
    (vkd001,) = findings(doc, "VKD001")
    assert vkd001["remedy"].endswith("(export XDG_DATA_DIRS=/usr/local/share:/usr/share)")


def test_a_layer_manifest_that_fails_every_instance_is_the_one_failure(tmp_path):
    """Loader 1.3.239 fails every vkCreateInstance over a bad implicit layer manifest: the load
    test would blame each driver in turn; it waits for VKI002 instead."""
    layers = tmp_path / "data" / "vulkan" / "implicit_layer.d"
    layers.mkdir(parents=True)
    (layers / "bad.json").write_text('{"file_format_version": "1.0.0", "layer": {,}}')
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKI002", "--select", "VKT"],
        env={"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")},
    )
    assert proc.returncode == 1
    failed = [f["code"] for f in doc["findings"] if f["severity"] in ("fail", "warn")]
    assert failed == ["VKI002"]
    skipped = {c["code"]: c["skip_reason"] for c in doc["checks"] if c["status"] == "skipped"}
    assert skipped["VKT001"] == skipped["VKT002"] == "requires VKI002, which did not pass"


def _explicit_layer(directory: Path, name: str, library: Path | str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {
        "file_format_version": "1.0.0",
        "layer": {
            "name": name,
            "type": "INSTANCE",
            "library_path": str(library),
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "vkdoctor test layer",
        },
    }
    (directory / f"{name}.json").write_text(json.dumps(manifest))


def test_an_explicit_layer_the_environment_turns_on_is_loaded_for_real(tmp_path):
    """VK_INSTANCE_LAYERS with a layer whose constructor aborts: the real vulkaninfo dies, and
    vkdoctor says so (VKT003) instead of "OK"; a name with no manifest is named too."""

    from tests.elfbuild import build_lib

    lib = build_lib(
        tmp_path / "lib" / "libVkLayer_abort.so",
        source="#include <stdlib.h>\n__attribute__((constructor)) static void die(void){abort();}\n",
    )
    _explicit_layer(tmp_path / "data/vulkan/explicit_layer.d", "VK_LAYER_TEST_abort", lib)
    env = {
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "VK_INSTANCE_LAYERS": "VK_LAYER_TEST_abort:VK_LAYER_TEST_nowhere",
    }
    real = vulkaninfo(env)
    assert real.returncode == -6  # SIGABRT: the oracle for "every application dies"
    proc, doc = run_json(["check", "--no-probe", "--select", "VKI004", "--select", "VKT"], env=env)
    assert proc.returncode == 1
    by_title = {f["title"]: f for f in findings(doc, "VKI004")}
    missing = by_title[
        "VK_INSTANCE_LAYERS names VK_LAYER_TEST_nowhere, which no explicit layer manifest provides"
    ]
    assert missing["severity"] == "warn"
    on = [f for f in findings(doc, "VKI004") if f["severity"] == "info"]
    assert on and on[0]["title"].startswith("VK_LAYER_TEST_abort is in every Vulkan application")
    (crash,) = [f for f in findings(doc, "VKT003") if f["severity"] == "fail"]
    assert "VK_LAYER_TEST_abort" in crash["title"] and "SIGABRT" in crash["title"]
    # without the variable the layer is the applications' business: nothing loads it
    del env["VK_INSTANCE_LAYERS"]
    proc, doc = run_json(["check", "--no-probe", "--select", "VKI004", "--select", "VKT"], env=env)
    assert proc.returncode == 0
    assert [f["severity"] for f in findings(doc, "VKI004")] == ["ok"]


def test_a_layer_without_entry_points_is_skipped_by_the_loader_and_said(tmp_path):
    """The real loader logs "Failed to find 'vkGetInstanceProcAddr'" and leaves the layer out;
    that is no "loads and passes"."""
    from tests.elfbuild import build_lib

    lib = build_lib(tmp_path / "lib" / "libnoep.so", source="int nothing(void){return 0;}\n")
    _explicit_layer(tmp_path / "data/vulkan/explicit_layer.d", "VK_LAYER_TEST_noep", lib)
    env = {
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "VK_INSTANCE_LAYERS": "VK_LAYER_TEST_noep",
    }
    proc, doc = run_json(["check", "--no-probe", "--select", "VKT003"], env=env)
    assert proc.returncode == 0
    (skipped,) = [f for f in findings(doc, "VKT003") if f["severity"] == "warn"]
    assert skipped["title"] == f"layer VK_LAYER_TEST_noep ({lib}) loads, but the loader skips it"
    assert "Failed to find 'vkGetInstanceProcAddr'" in skipped["message"]


def test_a_requested_layer_that_matches_nothing_says_why(tmp_path):
    env = {
        "HOME": str(tmp_path),
        "VK_LAYER_PATH": str(tmp_path / "nowhere"),
        "VK_INSTANCE_LAYERS": "VK_LAYER_MESA_overlay: VK_LAYER_X :VK_LAYER_MESA_device_select",
    }
    _, doc = run_json(["check", "--no-probe", "--select", "VKI004"], env=env)
    by_name = {f["evidence"]["name"]: f for f in findings(doc, "VKI004")}
    hidden = by_name["VK_LAYER_MESA_overlay"]
    assert hidden["message"].startswith(
        f"VK_LAYER_PATH={tmp_path / 'nowhere'} replaces the layer search path, and "
        f"{tmp_path / 'nowhere'} does not exist"
    )
    assert hidden["remedy"].startswith("unset VK_LAYER_PATH")
    spaced = by_name[" VK_LAYER_X "]
    assert spaced["title"] == (
        "VK_INSTANCE_LAYERS names ' VK_LAYER_X ', which no explicit layer manifest provides"
    )
    assert spaced["remedy"] == "remove the spaces around VK_LAYER_X in VK_INSTANCE_LAYERS"
    implicit = by_name["VK_LAYER_MESA_device_select"]
    assert "is an implicit layer" in implicit["message"]


def test_a_layer_that_crashes_in_vkcreatedevice_is_caught(tmp_path):
    """Mesa's VK_LAYER_INTEL_nullhw, turned on for every program: vkCreateInstance passes, and
    the real vulkaninfo then dies with SIGSEGV creating a device on lavapipe. The load test
    creates a device too, and says where it crashed."""

    env = {"HOME": str(tmp_path), "VK_INSTANCE_LAYERS": "VK_LAYER_INTEL_nullhw"}
    real = vulkaninfo(env)
    assert real.returncode == -11  # SIGSEGV: the oracle
    proc, doc = run_json(["check", "--no-probe", "--select", "VKT003"], env=env)
    assert proc.returncode == 1
    (crash,) = [f for f in findings(doc, "VKT003") if f["severity"] == "fail"]
    assert crash["title"].startswith("layer VK_LAYER_INTEL_nullhw (libVkLayer_INTEL_nullhw.so)")
    assert "was killed by SIGSEGV in vkCreateDevice" in crash["message"]
    # only what opens a device gets there: a program that lists the adapters does not
    assert "that loads this layer and opens a device does the same" in crash["message"]
    # the variable that forces it on is the fix (DISABLE would only hide it for one run)
    assert crash["remedy"].startswith(
        "unset VK_INSTANCE_LAYERS (takes VK_LAYER_INTEL_nullhw out of VK_INSTANCE_LAYERS)"
    )


def test_an_enable_pattern_that_matches_no_layer_is_said(tmp_path):
    """VK_LOADER_LAYERS_ENABLE=*validation* without the validation layer turns nothing on; a
    pattern that matches a layer the loader finds is fine."""
    from tests.elfbuild import build_lib

    lib = build_lib(tmp_path / "lib" / "libVkLayer_mine.so")
    _explicit_layer(tmp_path / "data/vulkan/explicit_layer.d", "VK_LAYER_TEST_mine", lib)
    env = {
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "VK_LOADER_LAYERS_ENABLE": "*validation*,*test_mine",
    }
    proc, doc = run_json(["check", "--no-probe", "--select", "VKI004"], env=env)
    assert proc.returncode == 0
    warns = {f["title"]: f for f in findings(doc, "VKI004") if f["severity"] == "warn"}
    warn = warns["VK_LOADER_LAYERS_ENABLE pattern *validation* matches no layer"]
    # a glob that forces an explicit layer on is a warning of its own: it catches every layer
    # installed later that matches it, and DISABLE cannot undo it
    forced = warns[
        "VK_LAYER_TEST_mine is in every Vulkan application (forced on by "
        "VK_LOADER_LAYERS_ENABLE=*validation*,*test_mine)"
    ]
    assert forced["remedy"].startswith("Unset VK_LOADER_LAYERS_ENABLE, or narrow it")
    assert "VK_LAYER_TEST_mine" in warn["evidence"]["layers"]
    assert "vulkan-validationlayers" in warn["remedy"]


def test_a_relative_xdg_entry_is_a_warning():
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKD002"], env={"XDG_DATA_DIRS": "rel/share:/usr/share"}
    )
    (warn,) = [f for f in findings(doc, "VKD002") if f["severity"] == "warn"]
    assert warn["title"] == (
        "XDG_DATA_DIRS has a relative entry: rel/share/vulkan/icd.d depends on the current directory"
    )
    assert warn["remedy"].startswith("Use absolute paths in XDG_DATA_DIRS (rel/share from ")


def test_an_implicit_layer_whose_library_is_gone_is_one_warning(tmp_path):
    """VKI002 says the loader skips the layer; VKL001 points at it instead of warning again."""
    manifest = {
        "file_format_version": "1.0.0",
        "layer": {
            "name": "VK_LAYER_TEST_gone",
            "type": "GLOBAL",
            "library_path": str(tmp_path / "libVkLayer_gone.so"),
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "vkdoctor test layer",
            "disable_environment": {"DISABLE_TEST_GONE": "1"},
        },
    }
    layers = tmp_path / "data/vulkan/implicit_layer.d"
    layers.mkdir(parents=True)
    (layers / "gone.json").write_text(json.dumps(manifest))
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    _, doc = run_json(["check", "--no-probe", "--select", "VKI002,VKL001"], env=env)
    warnings = [(f["code"], f["title"]) for f in doc["findings"] if f["severity"] == "warn"]
    assert [code for code, _ in warnings] == ["VKI002"], warnings
    (vkl,) = [f for f in findings(doc, "VKL001") if "VK_LAYER_TEST_gone" in f["title"]]
    assert vkl["severity"] == "info" and vkl["title"].endswith("cannot be loaded (VKI002)")


def test_drivers_fails_without_the_loader(tmp_path):
    """A tree with a driver and no libvulkan.so.1: no driver is ever tried, so `drivers` must
    not exit 0 with "1 of 1 drivers can load"."""
    from tests.elfbuild import build_lib

    root = tmp_path / "root"
    lib = root / "usr/lib/x86_64-linux-gnu"
    # no DT_NEEDED: the tree has no libc, and the driver's own closure is not the point
    build_lib(lib / "libvulkan_lvp.so", flags=["-nostdlib"])
    icd = root / "usr/share/vulkan/icd.d"
    icd.mkdir(parents=True)
    (icd / "lvp_icd.x86_64.json").write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {
                    "library_path": "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so",
                    "api_version": "1.3.255",
                },
            }
        )
    )
    proc = run_vkdoctor(["drivers", "--root", str(root)])
    assert proc.returncode == 1, proc.stdout
    assert "✗ VKH002 libvulkan.so.1 not found" in proc.stdout or "XX VKH002" in proc.stdout
    assert proc.stdout.rstrip().endswith("vkdoctor: FAIL: libvulkan.so.1 not found")


def test_a_driver_filter_that_drops_every_driver_is_unset_by_name(tmp_path):

    env = {"HOME": str(tmp_path), "VK_LOADER_DRIVERS_DISABLE": "*"}
    real = vulkaninfo(env)
    assert real.returncode != 0  # the oracle: no driver left
    proc, doc = run_json(["check", "--no-probe", "--select", "VKD001"], env=env)
    assert proc.returncode == 1
    (f,) = findings(doc, "VKD001")
    assert f["remedy"] == "unset VK_LOADER_DRIVERS_DISABLE"  # not SELECT, which is not set


def test_an_override_naming_nothing_usable_points_at_a_manifest_that_works(tmp_path):

    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(tmp_path / "nope.json")}
    proc, doc = run_json(["check", "--no-probe", "--select", "VKD001"], env=env)
    assert proc.returncode == 1
    (f,) = findings(doc, "VKD001")
    example = f["remedy"].rpartition("for example ")[2]
    assert example == f"VK_DRIVER_FILES={LVP_MANIFEST}"
    # the example the fix gives works with the real loader
    var, _, value = example.partition("=")
    real = vulkaninfo({"HOME": str(tmp_path), var: value})
    assert real.returncode == 0 and b"llvmpipe" in real.stdout


def test_a_filter_that_drops_the_override_s_good_manifest_is_the_cause(tmp_path):
    """VK_ICD_FILENAMES names lavapipe's manifest, VK_LOADER_DRIVERS_DISABLE=*lvp* drops it: the
    filter is what to undo (not the override, which is fine), and the real loader agrees."""

    env = {
        "HOME": str(tmp_path),
        "VK_ICD_FILENAMES": LVP_MANIFEST,
        "VK_LOADER_DRIVERS_DISABLE": "*lvp*",
    }
    proc, doc = run_json(["check", "--no-probe", "--select", "VKD001,VKE004"], env=env)
    assert proc.returncode == 1
    (vkd001,) = findings(doc, "VKD001")
    assert vkd001["remedy"] == "unset VK_LOADER_DRIVERS_DISABLE"
    (vke004,) = findings(doc, "VKE004")
    assert vke004["remedy"].startswith(f"export VK_DRIVER_FILES={LVP_MANIFEST}")
    fixed = {k: v for k, v in env.items() if k != "VK_LOADER_DRIVERS_DISABLE"}
    real = vulkaninfo(fixed)
    assert real.returncode == 0 and b"llvmpipe" in real.stdout
