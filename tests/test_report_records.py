"""The report's typed records and their one JSON conversion (record.to_json), the report's
`driver_search` against the real Vulkan loader and ld.so, and the drivers view as a renderer of
the report alone."""

from __future__ import annotations

import enum
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import HOST, SCHEMA, clean_env, run_json, run_vkdoctor, validate_report

from tests.loader_oracle import DATA, LVP_MANIFEST, RealLoader
from vkdoctor.model import Report
from vkdoctor.model.record import ABSENT, Absent, record, replace, to_json
from vkdoctor.model.report_records import (
    Distro,
    DriverLibrary,
    DriverRow,
    DriverSearch,
    HostCpu,
    HostLoader,
    HostMemory,
    HostReport,
    ImplicitLayer,
    OverlayLink,
    OverlayReport,
    ProbeHost,
    SearchPathEntry,
)
from vkdoctor.render import drivers as drivers_render
from vkdoctor.render import json as json_render


class _Colour(enum.Enum):
    RED = "red"


@record(frozen=True, kw_only=True)
class _Inner:
    name: str
    colour: _Colour
    note: str | Absent | None = ABSENT


@record(frozen=True, kw_only=True)
class _Outer:
    items: tuple[_Inner, ...]
    table: dict[str, tuple[int, ...]]
    maybe: _Inner | None = None


def test_to_json_keeps_field_order_and_leaves_out_absent_fields() -> None:
    doc = to_json(
        _Outer(
            items=(
                _Inner(name="a", colour=_Colour.RED),
                _Inner(name="b", colour=_Colour.RED, note=None),
            ),
            table={"k": (1, 2)},
        )
    )
    assert doc == {
        "items": [{"name": "a", "colour": "red"}, {"name": "b", "colour": "red", "note": None}],
        "table": {"k": [1, 2]},
        "maybe": None,
    }
    # the order of the fields is the order of the keys (the report's JSON is compared byte for byte)
    assert json.dumps(doc) == (
        '{"items": [{"name": "a", "colour": "red"}, {"name": "b", "colour": "red", "note": null}],'
        ' "table": {"k": [1, 2]}, "maybe": null}'
    )


def _row(**changes: object) -> DriverRow:
    base: dict[str, object] = {
        "index": 0,
        "manifest": "/nowhere/icd.d/made_up.json",
        "origin": "VK_DRIVER_FILES",
        "search_entry": "/nowhere/icd.d/made_up.json",
        "library_path": "libmade_up.so",
        "library": "/nowhere/lib/libmade_up.so",
        "library_rule": "bare",
        "dlopen_name": "libmade_up.so",
        "api_version": "1.3.999",
        "file_format_version": "1.0.0",
        "library_arch": None,
        "is_portability_driver": False,
        "driver": None,
        "outcome": "loads",
        "predicted_error": None,
        "verdict": "ok",
        "reason": "/nowhere/icd.d/made_up.json: the loader will dlopen libmade_up.so",
    }
    base.update(changes)
    return DriverRow(**base)  # type: ignore[arg-type]


def _report(**changes: object) -> Report:
    fields: dict[str, object] = {
        "vkdoctor_version": "test",
        "host": replace(HOST, root="/srv/image"),
        "checks": (),
        "drivers": (
            _row(
                libraries=(
                    DriverLibrary(
                        name="libmade_up.so",
                        path="/nowhere/lib/libmade_up.so",
                        how="default",
                        needed_by=None,
                        package=None,
                    ),
                ),
                missing=(),
                package="made-up 1.0",
            ),
        ),
        "overlay": OverlayReport(
            dir="/nowhere/overlay",
            ld_library_path="/nowhere/overlay",
            libraries=(OverlayLink(soname="libx.so.1", target="/a/libx.so.1", needed_by=("/b",)),),
            applied=False,
            exec="vkdoctor exec -- CMD",
        ),
        "driver_search": DriverSearch(
            loader_version="9.8.7",
            loader_path="/nowhere/libvulkan.so.1",
            override="VK_DRIVER_FILES",
            entries=(
                SearchPathEntry(path="/nowhere/icd.d/made_up.json", origin="VK_DRIVER_FILES"),
            ),
            implicit_layers=(
                ImplicitLayer(name="VK_LAYER_made_up", library="/nowhere/l.so", disable_env="OFF"),
            ),
        ),
    }
    fields.update(changes)
    return Report(**fields)  # type: ignore[arg-type]


def test_the_drivers_view_is_made_from_the_report_alone() -> None:
    """Nothing in this report exists on this machine: every line comes from the report."""
    text = drivers_render.render(_report(), unicode=False)
    assert text.splitlines() == [
        "Vulkan loader 9.8.7 (/nowhere/libvulkan.so.1); root /srv/image",
        "Driver search path, in order (replaced by VK_DRIVER_FILES):",
        "  /nowhere/icd.d/made_up.json  [VK_DRIVER_FILES]",
        "",
        "Drivers, in the loader's order:",
        "   1 ok ok   /nowhere/icd.d/made_up.json",
        "          from VK_DRIVER_FILES",
        "          -> /nowhere/lib/libmade_up.so",
        "          the loader will dlopen libmade_up.so",
        "",
        "Implicit layers the loader adds to every application:",
        "  VK_LAYER_made_up -> /nowhere/l.so (off with OFF=1)",
        "",
        "vkdoctor: 1 of 1 drivers can load (manifest and libraries): made_up.json",
    ]


def test_a_report_built_by_hand_is_valid_json_and_its_absent_keys_are_absent() -> None:
    doc = json.loads(json_render.render(_report(drivers=(_row(),))))
    validate_report(doc)
    row = doc["drivers"][0]
    assert not {"libraries", "missing", "load", "package"} & set(row)
    assert list(row)[:3] == ["index", "manifest", "origin"]
    assert doc["overlay"]["libraries"] == [
        {"soname": "libx.so.1", "target": "/a/libx.so.1", "needed_by": ["/b"]}
    ]
    assert list(doc)[-1] == "driver_search"
    assert doc["driver_search"]["entries"] == [
        {"path": "/nowhere/icd.d/made_up.json", "origin": "VK_DRIVER_FILES"}
    ]
    # the schema holds the new object to its shape: a search without its entries is refused
    del doc["driver_search"]["entries"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> RealLoader:
    out = tmp_path_factory.mktemp("probe") / "vkprobe"
    subprocess.run(
        ["gcc", "-O1", "-o", str(out), str(DATA / "vkprobe.c"), "-ldl"],
        check=True,
        timeout=120,
        capture_output=True,
    )
    return RealLoader(out)


@pytest.mark.parametrize(
    "extra",
    [{}, {"VK_DRIVER_FILES": str(LVP_MANIFEST)}, {"XDG_CONFIG_DIRS": "/etc/a:/etc/b"}],
    ids=["default", "VK_DRIVER_FILES", "XDG_CONFIG_DIRS"],
)
def test_driver_search_is_what_the_real_loader_searches(
    oracle: RealLoader, tmp_path: Path, extra: dict[str, str]
) -> None:
    env = {"HOME": str(tmp_path), **extra}
    _, doc = run_json(["drivers"], env=env)
    search = doc["driver_search"]
    real = oracle.run(env, cwd=tmp_path)
    assert real.log.drivers.locations, real.stderr
    assert [e["path"] for e in search["entries"]] == real.log.drivers.locations
    assert search["override"] == ("VK_DRIVER_FILES" if extra.get("VK_DRIVER_FILES") else None)
    assert [x["name"] for x in search["implicit_layers"]] == list(real.log.layers.inserted)
    for layer in search["implicit_layers"]:
        # the loader names the library as the manifest does; the report where it is
        named = real.log.layers.inserted[layer["name"]]
        assert os.path.basename(layer["library"]) == os.path.basename(named)


def test_driver_search_names_the_loader_ld_so_loads(tmp_path: Path) -> None:
    _, doc = run_json(["drivers"], env={"HOME": str(tmp_path)})
    search = doc["driver_search"]
    # ld.so's own answer: the file dlopen maps for libvulkan.so.1
    mapped = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ctypes; ctypes.CDLL('libvulkan.so.1');"
            "print(next(l.split()[-1] for l in open('/proc/self/maps') if 'libvulkan.so' in l))",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
    ).stdout.strip()
    assert os.path.realpath(search["loader_path"]) == os.path.realpath(mapped)
    # and the loader's own version, as vulkaninfo has the loader report it
    info = subprocess.run(
        ["vulkaninfo", "--summary"], capture_output=True, text=True, check=False, env=clean_env()
    ).stdout
    version = re.search(r"Vulkan Instance Version: (\S+)", info)
    assert version is not None, info
    assert search["loader_version"] == version.group(1)


def test_drivers_text_shows_the_reports_driver_search(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "VK_DRIVER_FILES": str(LVP_MANIFEST), "COLUMNS": "200"}
    _, doc = run_json(["drivers"], env=env)
    text = run_vkdoctor(["drivers"], env=env).stdout.splitlines()
    search = doc["driver_search"]
    assert text[0] == f"Vulkan loader {search['loader_version']} ({search['loader_path']})"
    assert text[1] == "Driver search path, in order (replaced by VK_DRIVER_FILES):"
    assert text[2].split() == [str(LVP_MANIFEST), f"[{search['entries'][0]['origin']}]"]


def test_the_drivers_view_without_a_driver_search_says_so() -> None:
    """A scan that broke (the VKD checks' VKX000) leaves no driver_search: the view says that
    instead of a loader line it does not have."""
    text = drivers_render.render(_report(drivers=(), driver_search=None), unicode=True)
    assert text.splitlines() == [
        "Vulkan loader: its driver search could not be read (see the findings below)",
        "",
        "Drivers: none found.",
        "",
        "vkdoctor: FAIL: no Vulkan driver will load",
    ]


def _fields(cls: type) -> list[str]:
    return [n for n in cls.__record_spec__.names if n != "redacted"]  # type: ignore[attr-defined]


def test_the_host_records_are_the_schemas_host() -> None:
    schema = SCHEMA["properties"]["host"]
    # check's host has every key the schema names, in the schema's order; run-probe's a part
    assert _fields(HostReport) == list(schema["properties"])
    assert set(schema["required"]) <= set(_fields(ProbeHost)) <= set(schema["properties"])
    assert _fields(Distro) == list(schema["properties"]["distro"]["properties"])
    assert _fields(HostLoader) == list(schema["properties"]["loader"]["properties"])


def test_checks_host_is_the_host_record_and_vkh001_says_the_same() -> None:
    _, doc = run_json(["check", "--no-probe", "--select", "VKH001"])
    host = doc["host"]
    assert list(host) == _fields(HostReport)
    assert list(host["distro"]) == _fields(Distro)
    assert list(host["memory"]) == _fields(HostMemory)
    assert list(host["cpu"]) == _fields(HostCpu)
    (vkh001,) = [f for f in doc["findings"] if f["code"] == "VKH001" and f["title"] == "Host"]
    evidence = vkh001["evidence"]
    # the same facts, gathered once (MemAvailable is read once too)
    assert evidence == host
    _, redacted = run_json(["check", "--no-probe", "--select", "VKH001", "--redact"])
    assert list(redacted["host"]) == [*_fields(HostReport), "redacted"]
    assert redacted["host"]["redacted"] is True
