"""The VK_LOADER_DEBUG parser on real captures (tests/data/loader-debug-samples.txt, loader 1.3.239)."""

from __future__ import annotations

import re
from pathlib import Path

from vkdoctor.loader.debuglog import LOAD_FAILED, NO_MESSAGE, parse

SAMPLES = (Path(__file__).parent / "data" / "loader-debug-samples.txt").read_text()


def section(title_start: str) -> str:
    parts = re.split(r"^## (?=\d)", SAMPLES, flags=re.M)
    for part in parts:
        if part.startswith(title_start):
            return part
    raise AssertionError(f"no section {title_start!r}")


def test_baseline_listing_order_and_libraries():
    log = parse(section("1. Baseline"))
    assert log.drivers.locations[0] == "/root/.config/vulkan/icd.d"
    assert log.drivers.files == [
        "/usr/share/vulkan/icd.d/intel_icd.x86_64.json",
        "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        "/usr/share/vulkan/icd.d/intel_hasvk_icd.x86_64.json",
        "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json",
    ]
    assert set(log.drivers.outcomes.values()) == {NO_MESSAGE}
    assert log.drivers.versions["/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"] == '"1.0.0"'


def test_missing_library_and_missing_dependency():
    log = parse(section("3c. Only the broken ones"))
    assert log.drivers.outcomes == {
        "/lab/w/sample/lvp_missing_lib.x86_64.json": LOAD_FAILED,
        "/lab/w/sample/lvp_bad_needed.x86_64.json": LOAD_FAILED,
    }
    assert log.drivers.no_drivers


def test_wrong_class_and_library_arch():
    assert set(parse(section("4. 32-bit")).drivers.outcomes.values()) == {"wrong-elf-class"}
    assert set(parse(section("4b. Manifest")).drivers.outcomes.values()) == {
        "library-arch-mismatch"
    }


def test_json_error_aborts_the_scan():
    log = parse(section("5. Syntactically invalid"))
    assert log.drivers.aborted_by == "/lab/w/icd2/aaa_broken_syntax.json"
    assert log.drivers.outcomes["/lab/w/icd2/lvp_good.json"] == NO_MESSAGE


def test_select_filter_lines():
    outcomes = parse(section("6. Driver filters")).drivers.outcomes
    assert sorted(outcomes.values()) == ["filtered-select"] * 3 + [NO_MESSAGE]


def test_newer_loader_prefix_is_accepted():
    text = "\n".join(
        f"[Vulkan Loader] {line}"
        for line in section("5. Syntactically invalid").splitlines()
        if line.startswith(("DRIVER", "DEBUG", "ERROR", "INFO", "WARNING"))
    )
    assert parse(text).drivers.files == [
        "/lab/w/icd2/lvp_good.json",
        "/lab/w/icd2/aaa_broken_syntax.json",
    ]
