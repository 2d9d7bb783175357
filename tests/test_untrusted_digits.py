"""Numbers in untrusted text never reach `int()` unbounded: a version node of 5,000 digits, a
dpkg epoch in superscript digits or of 5,000 digits, a manifest api_version of 5,000 digits,
`--disk-warn` with 400 digits give a finding or a usage error, never exit 3.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import run_json, run_vkdoctor
from elfwriter import Spec, write
from pkgtrees import debian_skew_tree

from vkdoctor.elf.explain import highest_per_family
from vkdoctor.loader.fields import parse_version
from vkdoctor.model.digits import digits_key, numbers_key, saturated
from vkdoctor.packages.versions import dpkg_compare, rpm_compare

HUGE = "9" * 5000


def _dpkg_says(a: str, op: str, b: str) -> bool:
    proc = subprocess.run(
        ["dpkg", "--compare-versions", a, op, b], capture_output=True, check=False
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode == 0


def test_digit_keys_order_like_values() -> None:
    assert digits_key("0010") == digits_key("10") < digits_key("9" * 30) < digits_key(HUGE)
    assert numbers_key("GLIBCXX_3.4.30") > numbers_key("GLIBCXX_3.4.9")
    assert saturated(HUGE, 2**63 - 1) == 2**63 - 1 and saturated("0042", 100) == 42


def test_dpkg_versions_of_5000_digits_compare_as_dpkg_does() -> None:
    bigger, smaller = f"1.{HUGE}-1", f"1.{HUGE[:-1]}-1"
    assert dpkg_compare(bigger, smaller) == 1
    assert _dpkg_says(bigger, "gt", smaller)
    assert dpkg_compare(f"1.0{HUGE}", f"1.{HUGE}") == 0
    assert _dpkg_says(f"1.0{HUGE}", "eq", f"1.{HUGE}")


def test_dpkg_and_rpm_epochs_never_raise() -> None:
    # dpkg itself rejects both epochs ("not number", "too big"); vkdoctor compares without raising
    assert dpkg_compare("²:1.0-1", "0:1.0-1") == 0
    assert dpkg_compare(f"{HUGE}:1.0-1", "1:1.0-1") == 1
    assert rpm_compare("²:1.0-1", "1.0-1") == 0
    assert rpm_compare(f"{HUGE}:1.0-1", "1:2.0-1") == 1


def test_version_nodes_of_5000_digits() -> None:
    assert highest_per_family([f"GLIBCXX_3.4.{HUGE}", "GLIBCXX_3.4.30"]) == [f"GLIBCXX_3.4.{HUGE}"]
    assert parse_version(f'"1.{HUGE}.0"'.encode()) == parse_version(b'"1.65535.0"')


def test_driver_needing_a_5000_digit_version_node_is_a_finding(tmp_path: Path) -> None:
    lib = tmp_path / "libhuge.so"
    node = f"GLIBCXX_3.4.{HUGE}"
    lib.write_bytes(
        write(Spec(needed=["libstdc++.so.6"], verneed=[("libstdc++.so.6", [(node, False)])]))
    )
    manifest = tmp_path / "huge.json"
    icd = {"library_path": str(lib), "api_version": f"1.3.{HUGE}"}
    manifest.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": icd}))
    proc, doc = run_json(
        ["check", "--no-probe"],
        env={"VK_DRIVER_FILES": str(manifest)},
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    codes = {f["code"] for f in doc["findings"]}
    assert "VKX000" not in codes, [f for f in doc["findings"] if f["code"] == "VKX000"]
    # VKL003 names the missing node; VKP005 finds its cause (the installed libstdc++ is older)
    # and carries the failure
    named = {f["code"]: f["severity"] for f in doc["findings"] if node[:40] in f["title"]}
    assert named == {"VKL003": "info", "VKP005": "fail"}, named


def test_disk_warn_of_400_digits_is_a_usage_error() -> None:
    proc = run_vkdoctor(["check", "--no-probe", "--disk-warn", "9" * 400])
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "at most 1 EiB" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_vkdoctor(["check", "--no-probe", "--disk-warn", "５G"])
    assert proc.returncode == 2 and "is not a size" in proc.stderr


def test_dpkg_database_with_hostile_epochs_is_findings_not_exit_3(tmp_path: Path) -> None:
    # a real dpkg tree (tests/pkgtrees.py), its status file then edited: dpkg itself refuses to
    # install such versions, so only a damaged or forged database has them
    root = debian_skew_tree(tmp_path)
    status = root / "var/lib/dpkg/status"
    text = status.read_text()
    assert "Version: 12.2.0-14\n" in text and "Version: 1:22.1.8-1\n" in text
    text = text.replace("Version: 12.2.0-14\n", f"Version: {HUGE}:12.2.0-14\n")
    text = text.replace("Version: 1:22.1.8-1\n", "Version: \u00b2:22.1.8-1\n")
    status.write_text(text)
    proc, doc = run_json(["check", "--root", str(root), "--no-probe"])
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "VKX000" not in {f["code"] for f in doc["findings"]}, doc["findings"]
    (skew,) = [f for f in doc["findings"] if f["code"] == "VKP002"]
    assert "\u00b2:22.1.8-1" in skew["message"] and skew["severity"] == "fail"


def test_bench_sizes_of_5000_digits_or_superscripts_are_usage_errors() -> None:
    proc = run_vkdoctor(["bench", "--cpu", "--sizes", f"{HUGE}x4"])
    assert proc.returncode == 2 and "more than 1,073,741,824 elements" in proc.stderr
    assert "set_int_max_str_digits" not in proc.stderr
    proc = run_vkdoctor(["bench", "--cpu", "--sizes", "\u00b2x4"])
    assert proc.returncode == 2 and "is not ROWSxD" in proc.stderr


def test_a_title_spans_the_missing_versions_of_a_family_from_the_first_to_the_highest() -> None:
    from vkdoctor.elf.explain import span_per_family

    missing = ["GLIBCXX_3.4.30", "CXXABI_1.3.13", "GLIBCXX_3.4.29", f"GLIBCXX_3.4.{HUGE}"]
    assert span_per_family(missing) == [f"GLIBCXX_3.4.29 to GLIBCXX_3.4.{HUGE}", "CXXABI_1.3.13"]
    assert span_per_family(["GLIBCXX_3.4.30"]) == ["GLIBCXX_3.4.30"]


def test_natural_key_orders_numbers_by_value_and_takes_any_length() -> None:
    from vkdoctor.model.digits import natural_key

    names = ["gpu-10", "gpu-9", "gpu-009b", "gpu", "a2b10", "a2b9", "x" + "9" * 5000, "x10"]
    assert sorted(names, key=natural_key) == [
        "a2b9", "a2b10", "gpu", "gpu-9", "gpu-009b", "gpu-10", "x10", "x" + "9" * 5000,
    ]  # fmt: skip
