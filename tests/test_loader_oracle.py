"""vkdoctor's loader emulation against the real libvulkan.so.1 (the oracle), environment by environment.

Each test builds a tree in tmp_path, runs the real loader on it with VK_LOADER_DEBUG, and asserts
that vkdoctor predicts the same ordered search list, the same files in the same order, the same
per-manifest outcome and the same vkCreateInstance result.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.loader_oracle import (
    DATA,
    LVP_LIBRARY,
    LVP_MANIFEST,
    RealLoader,
    assert_match,
    predict,
    predict_layers,
    write_manifest,
)
from vkdoctor.loader import icd


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> RealLoader:
    out = tmp_path_factory.mktemp("probe") / "vkprobe"
    subprocess.run(
        ["gcc", "-O1", "-o", str(out), str(DATA / "vkprobe.c"), "-ldl"],
        check=True,
        timeout=120,
        capture_output=True,
    )
    return RealLoader(out)


@pytest.fixture(scope="session")
def lib32(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("lib32")
    (d / "empty.c").write_text("int vkdoctor_nothing(void) { return 0; }\n")
    out = d / "libvulkan_fake32.so"
    subprocess.run(
        ["gcc", "-m32", "-nostdlib", "-shared", "-o", str(out), str(d / "empty.c")],
        check=True,
        timeout=120,
        capture_output=True,
    )
    return out


def base_env(tmp: Path) -> dict[str, str]:
    """Private XDG dirs so that only SYSCONFDIR (/etc/vulkan/icd.d, absent here) is system."""
    return {
        "HOME": str(tmp / "home"),
        "XDG_CONFIG_DIRS": str(tmp / "etcxdg"),
        "XDG_DATA_DIRS": str(tmp / "share"),
        "NODEVICE_SELECT": "1",
    }


def lvp(path: Path) -> Path:
    """A copy of Debian's real lavapipe manifest (absolute library path)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(LVP_MANIFEST.read_bytes())
    return path


def check(oracle: RealLoader, env: dict[str, str], cwd: Path, **kw: bool) -> icd.DriverScan:
    real = oracle.run(env, cwd=cwd, **kw)
    scan = predict(env, cwd, portability=kw.get("portability", False))
    assert_match(scan, real)
    return scan


def test_xdg_directories_order_dedup_and_empty_elements(oracle, tmp_path):
    env = base_env(tmp_path)
    env.update(
        {
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "XDG_CONFIG_DIRS": f"{tmp_path}/cd1::{tmp_path}/cd2/:{tmp_path}/cd1",
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_DATA_DIRS": f"{tmp_path}/dd1:{tmp_path}/dd2:{tmp_path}/dd1",
        }
    )
    lvp(tmp_path / "cfg/vulkan/icd.d/lvp_cfg.json")
    write_manifest(tmp_path / "cd2/vulkan/icd.d/missing_abs.json", "/nonexistent/libvk_x.so")
    (tmp_path / "data/vulkan/icd.d/lib").mkdir(parents=True)
    (tmp_path / "data/vulkan/icd.d/lib/libvulkan_lvp.so").symlink_to(LVP_LIBRARY)
    write_manifest(tmp_path / "data/vulkan/icd.d/lvp_rel.json", "lib/libvulkan_lvp.so")
    write_manifest(tmp_path / "dd2/vulkan/icd.d/missing_rel.json", "./nothere/libvk.so")
    lvp(tmp_path / "dd1/vulkan/icd.d/zz_lvp.json")
    scan = check(oracle, env, tmp_path)
    assert [e.origin for e in scan.plan.entries] == [
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_CONFIG_DIRS",
        "SYSCONFDIR",
        "XDG_DATA_HOME",
        "XDG_DATA_DIRS",
        "XDG_DATA_DIRS",
    ]
    outcomes = {Path(d.manifest).name: d.outcome for d in scan.drivers}
    assert outcomes == {
        "lvp_cfg.json": icd.LOADS,
        "missing_abs.json": icd.LIBRARY_MISSING,
        "lvp_rel.json": icd.LOADS,
        "missing_rel.json": icd.LIBRARY_MISSING,
        "zz_lvp.json": icd.LOADS,
    }


def test_home_fallback_and_empty_means_unset(oracle, tmp_path):
    env = base_env(tmp_path)
    env.update({"XDG_CONFIG_HOME": "", "XDG_DATA_HOME": "", "XDG_CONFIG_DIRS": ""})
    lvp(tmp_path / "home/.local/share/vulkan/icd.d/lvp_home.json")
    write_manifest(tmp_path / "home/.config/vulkan/icd.d/cfg.json", "/nonexistent/libvk.so")
    scan = check(oracle, env, tmp_path)
    assert scan.plan.entries[0].path == f"{tmp_path}/home/.config/vulkan/icd.d"
    assert scan.plan.entries[0].origin.startswith("HOME")
    assert scan.plan.entries[1].path == "/etc/xdg/vulkan/icd.d"
    assert scan.plan.entries[1].origin == "default XDG_CONFIG_DIRS"


def test_no_home_drops_the_home_entries(oracle, tmp_path):
    env = base_env(tmp_path)
    del env["HOME"]
    lvp(tmp_path / "share/vulkan/icd.d/lvp.json")
    scan = check(oracle, env, tmp_path)
    assert [e.origin for e in scan.plan.entries] == [
        "XDG_CONFIG_DIRS",
        "SYSCONFDIR",
        "XDG_DATA_DIRS",
    ]


def test_vk_driver_files_with_files_directories_relative_and_odd_entries(oracle, tmp_path):
    env = base_env(tmp_path)
    lvp(tmp_path / "one/lvp_one.json")
    lvp(tmp_path / "dir/lvp_in_dir.json")
    write_manifest(tmp_path / "dir/missing.json", "/nonexistent/libvk.so")
    lvp(tmp_path / "reldir/lvp_rel_dir.json")
    (tmp_path / "sub").mkdir()
    write_manifest(tmp_path / "sub/rel.json", "lib/libvulkan_lvp.so")
    (tmp_path / "sub/lib").mkdir()
    (tmp_path / "sub/lib/libvulkan_lvp.so").symlink_to(LVP_LIBRARY)
    (tmp_path / "manifest.txt").write_text(LVP_MANIFEST.read_text())
    env["VK_DRIVER_FILES"] = ":".join(
        [
            f"{tmp_path}/one/lvp_one.json",
            f"{tmp_path}/dir",
            "reldir",
            "sub/rel.json",
            f"{tmp_path}/nonexistent.json",
            f"{tmp_path}/manifest.txt",
            f"{tmp_path}/dir",
            f"{tmp_path}/dir/",
        ]
    )
    env["VK_ICD_FILENAMES"] = f"{tmp_path}/ignored"
    env["VK_ADD_DRIVER_FILES"] = f"{tmp_path}/ignored_too"
    scan = check(oracle, env, tmp_path)
    assert scan.plan.override == "VK_DRIVER_FILES"
    ignored = dict(scan.plan.ignored)
    assert "VK_ICD_FILENAMES" in ignored and "VK_ADD_DRIVER_FILES" in ignored
    rel = next(d for d in scan.drivers if d.manifest == "sub/rel.json")
    assert (rel.outcome, rel.library, rel.library_rule) == (
        icd.LOADS,
        "sub/lib/libvulkan_lvp.so",
        "relative",
    )
    assert any(d.manifest == f"{tmp_path}/dir//lvp_in_dir.json" for d in scan.drivers)


def test_vk_icd_filenames_alone_takes_files_and_directories(oracle, tmp_path):
    env = base_env(tmp_path)
    lvp(tmp_path / "icds/a.json")
    lvp(tmp_path / "file/b.json")
    env["VK_ICD_FILENAMES"] = f"{tmp_path}/icds:{tmp_path}/file/b.json"
    scan = check(oracle, env, tmp_path)
    assert scan.plan.override == "VK_ICD_FILENAMES"
    assert {d.origin for d in scan.drivers} == {"VK_ICD_FILENAMES"}


def test_vk_add_driver_files_is_prepended(oracle, tmp_path):
    env = base_env(tmp_path)
    lvp(tmp_path / "share/vulkan/icd.d/system_lvp.json")
    lvp(tmp_path / "add/added.json")
    write_manifest(tmp_path / "adddir/broken.json", "/nonexistent/libvk.so")
    env["VK_ADD_DRIVER_FILES"] = f"{tmp_path}/add/added.json:{tmp_path}/adddir"
    scan = check(oracle, env, tmp_path)
    assert scan.plan.entries[0].origin == "VK_ADD_DRIVER_FILES"
    assert scan.drivers[0].manifest == f"{tmp_path}/add/added.json"


def test_set_but_empty_override_means_no_drivers(oracle, tmp_path):
    env = base_env(tmp_path)
    lvp(tmp_path / "share/vulkan/icd.d/lvp.json")
    env["VK_DRIVER_FILES"] = ""
    real = oracle.run(env, cwd=tmp_path)
    scan = predict(env, tmp_path)
    assert_match(scan, real)
    assert real.create_result == -9 and real.log.drivers.no_drivers
    assert scan.plan.entries == () and scan.plan.override == "VK_DRIVER_FILES"


@pytest.mark.parametrize(
    ("select", "disable"),
    [
        ("LVP*", None),
        (None, "*"),
        ("*lvp*", "~all~"),
        (None, "*_ICD.JSON,zz*"),
        ("lvp_a", None),
        ("lvp_a.json", "*"),
    ],
)
def test_select_and_disable_filters(oracle, tmp_path, select, disable):
    env = base_env(tmp_path)
    for name in ("lvp_a.json", "other_icd.json", "zz_last.json", "LVP_UPPER.json"):
        lvp(tmp_path / "share/vulkan/icd.d" / name)
    if select is not None:
        env["VK_LOADER_DRIVERS_SELECT"] = select
    if disable is not None:
        env["VK_LOADER_DRIVERS_DISABLE"] = disable
    check(oracle, env, tmp_path)


def test_bad_json_aborts_every_instance_even_when_filtered(oracle, tmp_path):
    env = base_env(tmp_path)
    lvp(tmp_path / "good/lvp.json")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad/aaa_broken.json").write_text(
        '{ "file_format_version": "1.0.0", "ICD": { "library_path": "/x.so", "api_version": "1.1.230", } '
    )
    lvp(tmp_path / "later/lvp_later.json")
    env["VK_DRIVER_FILES"] = f"{tmp_path}/good:{tmp_path}/bad:{tmp_path}/later"
    env["VK_LOADER_DRIVERS_DISABLE"] = "aaa_*"
    scan = check(oracle, env, tmp_path)
    assert scan.aborted_by is not None and scan.aborted_by.manifest.endswith("aaa_broken.json")
    assert scan.drivers[-1].outcome == icd.NOT_REACHED


def test_32bit_library_and_library_arch(oracle, tmp_path, lib32):
    env = base_env(tmp_path)
    d = tmp_path / "share/vulkan/icd.d"
    write_manifest(d / "fake32_abs.json", str(lib32))
    write_manifest(d / "fake32_arch.json", str(lib32), library_arch="32")
    write_manifest(d / "lvp_arch64.json", str(LVP_LIBRARY), library_arch="64")
    scan = check(oracle, env, tmp_path)
    outcomes = {Path(x.manifest).name: x.outcome for x in scan.drivers}
    assert outcomes == {
        "fake32_abs.json": icd.WRONG_CLASS,
        "fake32_arch.json": icd.ARCH_MISMATCH,
        "lvp_arch64.json": icd.LOADS,
    }


@pytest.mark.parametrize("portability", [False, True])
def test_portability_driver(oracle, tmp_path, portability):
    env = base_env(tmp_path)
    write_manifest(
        tmp_path / "share/vulkan/icd.d/port.json", str(LVP_LIBRARY), is_portability_driver=True
    )
    write_manifest(
        tmp_path / "share/vulkan/icd.d/port_missing.json",
        "/nonexistent/libvk_port.so",
        is_portability_driver=True,
    )
    real = oracle.run(env, cwd=tmp_path, portability=portability)
    scan = predict(env, tmp_path, portability=portability)
    assert_match(scan, real)
    assert real.log.drivers.portability_skipped is (not portability)
    assert real.device_count == (1 if portability else None)


def _raw(path: Path, text: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())


def test_odd_entries_and_wrong_types(oracle, tmp_path):
    env = base_env(tmp_path)
    d = tmp_path / "share/vulkan/icd.d"
    lvp(d / ".hidden.json")
    lvp(d / "UPPER.JSON")
    lvp(d / "nested/inner.json")
    (d / "dir.json").mkdir()
    (d / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    (d / "loop_a.json").symlink_to(d / "loop_b.json")
    (d / "loop_b.json").symlink_to(d / "loop_a.json")
    _raw(d / "empty.json", b"")
    lib = f'"{LVP_LIBRARY}"'
    _raw(
        d / "garbage_after.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":'
        + lib
        + ',"api_version":"1.0.0"}} trailing garbage',
    )
    _raw(
        d / "nul_after.json",
        b'{"file_format_version":"1.0.0","ICD":{"library_path":"/nonexistent/a.so","api_version":"1.0.0"}}\0{{{',
    )
    _raw(
        d / "ctrl_chars.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":"/nonexistent/\x01b.so","api_version":"1.0.0"}}',
    )
    _raw(
        d / "not_utf8.json",
        b'{"file_format_version":"1.0.0","ICD":{"library_path":"/nonexistent/\xff\xfe.so","api_version":"1.0.0"}}',
    )
    _raw(
        d / "lib_number.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":12345,"api_version":"1.0.0"}}',
    )
    _raw(
        d / "lib_true.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":true,"api_version":"1.0.0"}}',
    )
    _raw(
        d / "lib_object.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":{},"api_version":"1.0.0"}}',
    )
    _raw(
        d / "lib_empty.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":"","api_version":"1.0.0"}}',
    )
    _raw(
        d / "ffv_number.json",
        '{"file_format_version":1,"ICD":{"library_path":"/nonexistent/c.so","api_version":"1.0.0"}}',
    )
    _raw(
        d / "ffv_unknown.json",
        '{"file_format_version":"1.0.7","ICD":{"library_path":' + lib + ',"api_version":"1.0.0"}}',
    )
    _raw(
        d / "variant.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":"/nonexistent/d.so","api_version":"1.1.2.3"}}',
    )
    _raw(
        d / "no_api.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":"/nonexistent/e.so"}}',
    )
    _raw(
        d / "no_icd.json",
        '{"file_format_version":"1.0.0","icd":{"library_path":"/nonexistent/f.so","api_version":"1.0.0"}}',
    )
    _raw(d / "icd_string.json", '{"file_format_version":"1.0.0","ICD":"x"}')
    _raw(d / "no_ffv.json", '{"ICD":{"library_path":"/nonexistent/g.so","api_version":"1.0.0"}}')
    _raw(d / "top_string.json", '"just a string"')
    _raw(
        d / "dup_keys.json",
        '{"file_format_version":"1.0.0","ICD":{"library_path":'
        + lib
        + ',"library_path":"/nonexistent/h.so","api_version":"1.0.0"}}',
    )
    _raw(d / "deep_ok.json", '{"x":' + "[" * 3000 + "]" * 3000 + "}")
    scan = check(oracle, env, tmp_path)
    outcomes = {Path(x.manifest).name: x.outcome for x in scan.drivers}
    assert "UPPER.JSON" not in outcomes and "inner.json" not in outcomes
    assert outcomes["dangling.json"] == icd.OPEN_FAILED
    assert any(x.manifest == "dangling.json" for x in scan.drivers)  # listed without its directory
    assert outcomes["loop_a.json"] == icd.OPEN_FAILED
    assert outcomes["dir.json"] == outcomes["empty.json"] == icd.SILENT_SKIP
    assert outcomes["garbage_after.json"] == icd.LOADS
    assert outcomes["variant.json"] == icd.API_VARIANT
    assert outcomes["icd_string.json"] == icd.NO_LIBRARY_PATH
    dup = next(x for x in scan.drivers if x.manifest.endswith("dup_keys.json"))
    assert dup.library == str(LVP_LIBRARY)


@pytest.mark.parametrize(
    "text",
    [
        "[1]",
        '{"file_format_version":"1.0.0","ICD":[1]}',
        '{"file_format_version":"1.0.0","ICD":{"library_path":5,"api_version":"1.0.0"}}',
    ],
)
def test_manifests_that_crash_the_loader(oracle, tmp_path, text):
    env = base_env(tmp_path)
    _raw(tmp_path / "share/vulkan/icd.d/crash.json", text)
    real = oracle.run(env, cwd=tmp_path)
    assert real.returncode < 0, real.stderr  # killed by a signal
    scan = predict(env, tmp_path)
    assert [d.outcome for d in scan.drivers] == [icd.CRASH]
    assert scan.aborted_by is not None


def test_fifo_hangs_the_loader_but_not_vkdoctor(oracle, tmp_path):
    env = base_env(tmp_path)
    d = tmp_path / "share/vulkan/icd.d"
    d.mkdir(parents=True)
    os.mkfifo(d / "pipe.json")
    real = oracle.run(env, cwd=tmp_path, timeout=3)
    assert real.timed_out and real.create_result is None
    assert real.log.drivers.files == [f"{d}/pipe.json"]
    start = time.monotonic()
    scan = predict(env, tmp_path)
    assert time.monotonic() - start < 2
    assert [x.outcome for x in scan.drivers] == [icd.FIFO_HANGS]


def _layer(path: Path, name: str, library: str, **extra: object) -> None:
    layer = {
        "name": name,
        "type": extra.pop("type", "GLOBAL"),
        "library_path": library,
        "api_version": "1.3.211",
        "implementation_version": "1",
        "description": "test layer",
        **extra,
    }
    _raw(path, json.dumps({"file_format_version": "1.0.0", "layer": layer}))


def test_implicit_layers_activation_against_the_loader(oracle, tmp_path):
    env = base_env(tmp_path)
    del env["NODEVICE_SELECT"]
    env["XDG_DATA_DIRS"] = f"{tmp_path}/share:/usr/share"
    device_select = "/usr/lib/x86_64-linux-gnu/libVkLayer_INTEL_nullhw.so"
    d = tmp_path / "home/.local/share/vulkan/implicit_layer.d"
    _layer(
        d / "a.json",
        "VK_LAYER_TEST_enable_exact",
        device_select,
        enable_environment={"T_ENABLE": "1"},
        disable_environment={"T_DIS_A": "1"},
    )
    _layer(
        d / "b.json",
        "VK_LAYER_TEST_disabled_empty",
        device_select,
        disable_environment={"T_DIS_B": "1"},
    )
    _layer(
        d / "c.json",
        "VK_LAYER_TEST_missing_lib",
        "/nonexistent/libVkLayer_x.so",
        disable_environment={"T_DIS_C": "1"},
    )
    _layer(
        d / "d.json",
        "VK_LAYER_TEST_forced",
        device_select,
        enable_environment={"T_NEVER": "1"},
        disable_environment={"T_DIS_D": "1"},
    )
    _layer(
        d / "e.json",
        "VK_LAYER_TEST_forced_but_disabled",
        device_select,
        enable_environment={"T_NEVER": "1"},
        disable_environment={"T_DIS_E": "1"},
    )
    _layer(d / "f.json", "VK_LAYER_TEST_no_disable_env", device_select)
    _layer(
        d / "g.json",
        "VK_LAYER_TEST_filtered_off",
        device_select,
        disable_environment={"T_DIS_G": "1"},
    )
    env.update(
        {
            "T_ENABLE": "yes",  # not exactly "1": stays off
            "T_DIS_B": "",  # defined but empty: off
            "T_DIS_E": "0",
            "VK_LOADER_LAYERS_ENABLE": "*forced*",
            "VK_LOADER_LAYERS_DISABLE": "*filtered_off",
        }
    )
    real = oracle.run(env, cwd=tmp_path)
    layers = predict_layers(env, tmp_path)
    log = real.log.layers
    assert [e.path for e in layers.plan.entries] == log.locations
    assert [f.manifest for f in layers.files] == log.files
    active = {x.name: x for x in layers.active}
    predicted_loaded = {n for n, x in active.items() if x.library_state == "ok"}
    predicted_failed = {n for n, x in active.items() if x.library_state != "ok"}
    assert predicted_loaded == set(log.inserted), (active, real.stderr)
    assert predicted_failed == set(log.failed), (active, real.stderr)
    assert predicted_loaded == {"VK_LAYER_TEST_forced", "VK_LAYER_MESA_device_select"}
    assert real.create_result == 0


def test_implicit_layer_disable_all_implicit(oracle, tmp_path):
    env = base_env(tmp_path)
    del env["NODEVICE_SELECT"]
    env["XDG_DATA_DIRS"] = "/usr/share"
    env["VK_LOADER_LAYERS_DISABLE"] = "~implicit~"
    real = oracle.run(env, cwd=tmp_path)
    layers = predict_layers(env, tmp_path)
    assert real.log.layers.inserted == {} and layers.active == ()
    dsel = layers.layers[0]
    assert (
        dsel.name == "VK_LAYER_MESA_device_select" and "VK_LOADER_LAYERS_DISABLE" in dsel.activation
    )


@pytest.mark.parametrize(
    ("variables", "inserted"),
    [
        # VK_LOADER_LAYERS_ENABLE wins over VK_LOADER_LAYERS_DISABLE, by name or by class
        ({"VK_LOADER_LAYERS_ENABLE": "*test_x*", "VK_LOADER_LAYERS_DISABLE": "*test_x*"}, {"x"}),
        ({"VK_LOADER_LAYERS_ENABLE": "*test_x*", "VK_LOADER_LAYERS_DISABLE": "~all~"}, {"x"}),
        ({"VK_LOADER_LAYERS_ENABLE": "*test_x*", "VK_LOADER_LAYERS_DISABLE": "~explicit~"}, {"x"}),
        # ... while VK_INSTANCE_LAYERS loses to it
        ({"VK_INSTANCE_LAYERS": "VK_LAYER_TEST_x:VK_LAYER_TEST_y"}, {"x", "y"}),
        (
            {
                "VK_INSTANCE_LAYERS": "VK_LAYER_TEST_x:VK_LAYER_TEST_y",
                "VK_LOADER_LAYERS_DISABLE": "*_y",
            },
            {"x"},
        ),
        (
            {"VK_INSTANCE_LAYERS": "VK_LAYER_TEST_x", "VK_LOADER_LAYERS_DISABLE": "~explicit~"},
            set(),
        ),
        ({"VK_LOADER_LAYERS_ENABLE": "*", "VK_LOADER_LAYERS_DISABLE": "*_y"}, {"x", "y"}),
    ],
)
def test_explicit_layer_precedence_against_the_loader(oracle, tmp_path, variables, inserted):
    """Which explicit layers the environment puts into every instance, and which variable wins;
    the remedy vkdoctor gives for each is the one that works here."""
    env = base_env(tmp_path)
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    nullhw = "/usr/lib/x86_64-linux-gnu/libVkLayer_INTEL_nullhw.so"
    d = tmp_path / "data/vulkan/explicit_layer.d"
    _layer(d / "x.json", "VK_LAYER_TEST_x", nullhw)
    _layer(d / "y.json", "VK_LAYER_TEST_y", nullhw)
    lvp(tmp_path / "share/vulkan/icd.d/lvp.json")  # layers are inserted only once a driver exists
    env.update(variables)
    real = oracle.run(env, cwd=tmp_path)
    names = {n.removeprefix("VK_LAYER_TEST_") for n in real.log.layers.inserted}
    assert names == inserted, real.stderr
    from tests.loader_oracle import context
    from vkdoctor.loader.layers import explicit_layer_scan

    active = {
        x.name.removeprefix("VK_LAYER_TEST_"): x
        for x in explicit_layer_scan(context(env, tmp_path)).active
    }
    assert set(active) == inserted
    for layer in active.values():
        if "VK_LOADER_LAYERS_ENABLE" in variables:
            assert layer.remedy.startswith("unset VK_LOADER_LAYERS_ENABLE")
        else:
            # the command keeps the variable's other layers, in order, and takes this one out
            (command,) = layer.fix.commands
            kept = [n for n in env["VK_INSTANCE_LAYERS"].split(":") if n and n != layer.name]
            assert command == (
                f"export VK_INSTANCE_LAYERS={':'.join(kept)}"
                if kept
                else "unset VK_INSTANCE_LAYERS"
            )


NOBODY = 65534


def _predict_as(uid: int, env: dict[str, str], cwd: Path) -> dict:
    """vkdoctor's prediction computed in a forked child that dropped to `uid` (permissions apply)."""
    from tests.loader_oracle import predicted_view

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no return from here
        code = 0
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            payload = json.dumps(predicted_view(predict(env, cwd))).encode()
            with os.fdopen(w, "wb") as f:
                f.write(payload)
        except BaseException:
            code = 1
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the unprivileged prediction failed"
    return json.loads(data)


def test_unreadable_files_and_directories_as_an_unprivileged_user(oracle):
    """Tests run as root, which reads everything; the loader and vkdoctor both run as nobody here."""
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="vkdoctor-nobody-", dir="/tmp"))
    try:
        top.chmod(0o755)
        probe = top / "vkprobe"
        shutil.copy2(oracle.probe, probe)
        probe.chmod(0o755)
        lvp(top / "icd/good.json")
        lvp(top / "icd/secret.json").chmod(0o000)
        lvp(top / "locked/hidden.json")
        (top / "locked").chmod(0o000)
        lvp(top / "noexec/listed_but_unopenable.json")
        (top / "noexec").chmod(0o644)
        for p in (top / "icd", top / "icd/good.json"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        env = {
            "HOME": str(top),
            "NODEVICE_SELECT": "1",
            "VK_DRIVER_FILES": f"{top}/icd:{top}/locked:{top}/noexec",
        }
        real = RealLoader(probe).run(env, cwd=top, uid=NOBODY)
        predicted = _predict_as(NOBODY, env, top)
        from tests.loader_oracle import assert_views_match

        assert_views_match(predicted, real)
        assert predicted["outcomes"][f"{top}/icd/secret.json"] == "open-failed"
        assert predicted["outcomes"]["listed_but_unopenable.json"] == "open-failed"
        assert not any("hidden.json" in f for f in predicted["files"])
        assert real.create_result == 0
    finally:
        for p in (top / "locked", top / "noexec"):
            p.chmod(0o755)
        shutil.rmtree(top)


def test_duplicate_layer_names_and_dropped_layers(oracle, tmp_path):
    env = base_env(tmp_path)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "cfg")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    nullhw = "/usr/lib/x86_64-linux-gnu/libVkLayer_INTEL_nullhw.so"
    overlay = "/usr/lib/x86_64-linux-gnu/libVkLayer_MESA_overlay.so"
    first = tmp_path / "cfg/vulkan/implicit_layer.d"
    later = tmp_path / "data/vulkan/implicit_layer.d"
    _layer(first / "dup.json", "VK_LAYER_TEST_dup", nullhw, disable_environment={"T_D1": "1"})
    _layer(later / "dup.json", "VK_LAYER_TEST_dup", overlay, disable_environment={"T_D2": "1"})
    _layer(later / "nodisable.json", "VK_LAYER_TEST_nodisable", nullhw)
    _layer(
        later / "device.json",
        "VK_LAYER_TEST_device",
        nullhw,
        type="DEVICE",
        disable_environment={"X": "1"},
    )
    lvp(tmp_path / "share/vulkan/icd.d/lvp.json")  # layers are inserted only once a driver exists
    real = oracle.run(env, cwd=tmp_path)
    layers = predict_layers(env, tmp_path)
    # loader 1.3.239: for a duplicate name the manifest found later wins
    assert {x.name: x.library for x in layers.active} == {"VK_LAYER_TEST_dup": overlay}
    assert real.log.layers.inserted == {"VK_LAYER_TEST_dup": overlay}
    # and VKI001 says which copy is not used
    from tests.loader_oracle import context
    from vkdoctor.checks.layers import ImplicitLayers

    (summary,) = ImplicitLayers().run(context(env, tmp_path))
    loser = next(line for line in summary.message.splitlines() if nullhw in line)
    assert f"[not used: {later / 'dup.json'} has the same name and wins]" in loser
    dropped = {x.name: x.invalid for x in layers.layers if x.invalid}
    assert set(dropped) == {"VK_LAYER_TEST_nodisable", "VK_LAYER_TEST_device"}


def test_bad_json_implicit_layer_breaks_every_instance(oracle, tmp_path):
    env = base_env(tmp_path)
    env["VK_LOADER_LAYERS_DISABLE"] = "~all~"  # does not help: parsing comes first
    lvp(tmp_path / "share/vulkan/icd.d/lvp.json")
    _raw(
        tmp_path / "share/vulkan/implicit_layer.d/broken.json",
        '{"file_format_version": "1.0.0", "layer": {,}}',
    )
    real = oracle.run(env, cwd=tmp_path)
    layers = predict_layers(env, tmp_path)
    assert real.create_result == -1
    assert real.log.layers.json_errors == [f"{tmp_path}/share/vulkan/implicit_layer.d/broken.json"]
    assert (
        layers.aborted_by is not None
        and layers.aborted_by.manifest == real.log.layers.json_errors[0]
    )


@pytest.mark.parametrize(
    ("layer", "crashes"),
    [
        ([1], True),
        (
            {
                "name": "VK_LAYER_x",
                "type": "GLOBAL",
                "library_path": "/x.so",
                "api_version": "1.0.0",
                "implementation_version": "1",
                "description": "d",
                "disable_environment": {"A": 1},
            },
            True,
        ),
        (
            {
                "name": 5,
                "type": "GLOBAL",
                "library_path": "/nonexistent/x.so",
                "api_version": "1.0.0",
                "implementation_version": "1",
                "description": "d",
                "disable_environment": {"A": "1"},
            },
            False,
        ),
    ],
)
def test_implicit_layer_wrong_types(oracle, tmp_path, layer, crashes):
    env = base_env(tmp_path)
    del env["NODEVICE_SELECT"]
    lvp(tmp_path / "share/vulkan/icd.d/lvp.json")
    _raw(
        tmp_path / "home/.local/share/vulkan/implicit_layer.d/l.json",
        json.dumps({"file_format_version": "1.0.0", "layer": layer}),
    )
    real = oracle.run(env, cwd=tmp_path)
    layers = predict_layers(env, tmp_path)
    if crashes:
        assert real.returncode < 0
        assert [f.outcome for f in layers.files] == ["loader-crash"]
    else:
        # a one-digit name is read as "": the layer is active under an empty name, its library fails
        assert real.log.layers.failed == [""]
        assert [(x.name, x.active, x.library_state) for x in layers.active] == [
            ("", True, "missing")
        ]


def test_setuid_process_ignores_the_secure_variables(oracle):
    """A setuid-root copy of the probe run as nobody: AT_SECURE, so secure_getenv returns NULL."""
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="vkdoctor-suid-", dir="/tmp"))
    try:
        top.chmod(0o755)
        probe = top / "vkprobe"
        shutil.copy2(oracle.probe, probe)
        probe.chmod(0o4755)
        lvp(top / "icd/only_this.json")
        (top / "icd").chmod(0o755)
        (top / "icd/only_this.json").chmod(0o644)
        env = {
            "HOME": str(top),
            "XDG_CONFIG_HOME": str(top),
            "XDG_DATA_DIRS": str(top),
            "VK_DRIVER_FILES": f"{top}/icd",
            "VK_LOADER_DRIVERS_DISABLE": "*",
            "NODEVICE_SELECT": "1",
        }
        real = RealLoader(probe).run(env, cwd=top, uid=NOBODY)
        scan = predict(env, top, elevated=True)
        assert_match(scan, real)
        assert scan.plan.entries[0].path == "/etc/xdg/vulkan/icd.d"
        assert real.create_result == 0
        # the same environment without AT_SECURE honours every variable
        assert predict(env, top).plan.override == "VK_DRIVER_FILES"
    finally:
        shutil.rmtree(top)
