"""--format github, --junit and --strict: what a CI job reads, parsed the way CI reads it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import junitparser
import pytest
from click.testing import CliRunner
from conftest import HOST, driver_row, run_vkdoctor, validate_report

import vkdoctor.checks
from vkdoctor.checks.base import Check
from vkdoctor.checks.host import HostFacts
from vkdoctor.cli import cli
from vkdoctor.model import CheckResult, CheckStatus, Finding, Remedy, Report, Severity
from vkdoctor.model.context import Context
from vkdoctor.model.report_records import OverlayLink, OverlayReport, probe_result_of
from vkdoctor.render import github, junit

# Everything the workflow-command escaping must handle, in one title and one message.
NASTY_TITLE = "libLLVM.so.23.1: missing, 100% of it"
NASTY_MESSAGE = "line one: a, b\r\nline two 50%\nline three ::error::injected"
# (no sudo in it: run as root without sudo, vkdoctor drops it from fixes)
REMEDY = "pacman -Syu mesa llvm-libs"

ANNOTATION = re.compile(r"^::(error|warning) title=([^:,]*)::(.*)$")

#: the JUnit suite of the probe family (vkdoctor.FAMILY)
PROBE_SUITE = "vkdoctor." + "probe"


def unescape(value: str) -> str:
    for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(code, char)
    return value


class NastyFail(Check):
    """Fails with a title and message full of characters that need escaping."""

    code = "VKZ801"
    family = "drivers"
    title = "crafted failure"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.fail(
            NASTY_TITLE,
            NASTY_MESSAGE,
            remedy=Remedy(commands=(REMEDY,)),
            manifest="/nonexistent.json",
        )


class Warns(Check):
    """Warns."""

    code = "VKZ802"
    family = "environment"
    title = "crafted warning"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.warn(
            "LD_LIBRARY_PATH has an empty entry",
            "':/opt/x' searches the cwd",
            remedy=Remedy(text="drop it"),
        )


class NeedsNasty(Check):
    """Skipped because its prerequisite failed."""

    code = "VKZ803"
    family = "drivers"
    title = "crafted dependent"
    requires = frozenset({"VKZ801"})

    def run(self, ctx: Context) -> Iterable[Finding]:
        raise AssertionError("must be skipped")


class Breaks(Check):
    """Raises: vkdoctor's own bug."""

    code = "VKZ804"
    family = "environment"
    title = "crafted bug"

    def run(self, ctx: Context) -> Iterable[Finding]:
        raise RuntimeError("kaboom")


def invoke(monkeypatch: pytest.MonkeyPatch, checks: tuple[type[Check], ...], *args: str):
    # `vkdoctor check` reads the registry when it runs (vkdoctor.checks builds it on first use)
    monkeypatch.setattr(vkdoctor.checks, "REGISTRY", checks)
    return CliRunner().invoke(cli, ["check", "--no-probe", *args], catch_exceptions=False)


def annotation_lines(output: str) -> list[re.Match[str]]:
    found = []
    for line in output.splitlines():
        if line.startswith("::") and line.split(" ", 1)[0].split("::")[1] in ("error", "warning"):
            m = ANNOTATION.match(line)
            assert m, f"malformed annotation: {line!r}"
            found.append(m)
    return found


def test_github_annotations_escape_newlines_percent_colon_and_comma(monkeypatch):
    result = invoke(monkeypatch, (HostFacts, NastyFail, Warns), "--format", "github")
    assert result.exit_code == 1
    found = annotation_lines(result.output)
    assert [m.group(1) for m in found] == ["error", "warning"]
    err = found[0]
    # the property value: no raw ':' or ',' (they end the property), all of them encoded
    assert err.group(2) == "VKZ801%3A libLLVM.so.23.1%3A missing%2C 100%25 of it"
    assert unescape(err.group(2)) == f"VKZ801: {NASTY_TITLE}"
    # the data: one physical line; a CRLF is one line break, \n and % encoded; ':' and ',' kept
    data = err.group(3)
    assert "\r" not in data and "\n" not in data
    assert data.startswith("line one: a, b%0Aline two 50%25%0Aline three ::error::injected%0A")
    said = NASTY_MESSAGE.replace("\r\n", "\n")
    assert unescape(data) == f"{said}\nFix: {REMEDY}\n(vkdoctor explain VKZ801)"
    # the full text report is in the log, but cannot issue commands: it sits between stop-commands
    lines = result.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    token = lines[start].split("::")[2]
    end = lines.index(f"::{token}::")
    assert any("line three ::error::injected" in line for line in lines[start:end])
    assert token not in "\n".join(lines[start + 1 : end])
    # the verdict names the failure by its code and title, on one line
    assert lines[-1] == f"vkdoctor: FAIL: VKZ801 {NASTY_TITLE}; 1 warning(s)"


def test_strict_turns_warnings_into_failures_in_every_format(monkeypatch, tmp_path: Path):
    checks = (HostFacts, Warns)
    plain = invoke(monkeypatch, checks, "--format", "github")
    assert plain.exit_code == 0
    assert [m.group(1) for m in annotation_lines(plain.output)] == ["warning"]
    strict = invoke(monkeypatch, checks, "--format", "github", "--strict")
    assert strict.exit_code == 1
    assert [m.group(1) for m in annotation_lines(strict.output)] == ["error"]

    for fmt in ("text", "json"):
        assert invoke(monkeypatch, checks, "--format", fmt).exit_code == 0
        assert invoke(monkeypatch, checks, "--format", fmt, "--strict").exit_code == 1
    doc = json.loads(invoke(monkeypatch, checks, "--format", "json", "--strict").output)
    validate_report(doc)
    assert doc["status"] == "fail"

    xml = tmp_path / "strict.xml"
    assert invoke(monkeypatch, checks, "--junit", str(xml), "--strict").exit_code == 1
    (case,) = [c for s in junitparser.JUnitXml.fromfile(str(xml)) for c in s if "VKZ802" in c.name]
    (failure,) = case.result
    assert isinstance(failure, junitparser.Failure)
    assert failure.message == "VKZ802: LD_LIBRARY_PATH has an empty entry"
    xml_plain = tmp_path / "plain.xml"
    assert invoke(monkeypatch, checks, "--junit", str(xml_plain)).exit_code == 0
    (case,) = [
        c for s in junitparser.JUnitXml.fromfile(str(xml_plain)) for c in s if "VKZ802" in c.name
    ]
    assert case.is_passed and "LD_LIBRARY_PATH has an empty entry" in (case.system_out or "")


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_exit_codes_do_not_depend_on_the_format(monkeypatch, fmt):
    assert invoke(monkeypatch, (HostFacts,), "--format", fmt).exit_code == 0
    assert invoke(monkeypatch, (HostFacts, NastyFail), "--format", fmt).exit_code == 1
    assert invoke(monkeypatch, (HostFacts, Breaks), "--format", fmt).exit_code == 3
    # a real failure wins over our own bug
    assert invoke(monkeypatch, (Breaks, NastyFail), "--format", fmt).exit_code == 1


def test_junit_has_a_case_per_check_with_failure_skip_and_error(monkeypatch, tmp_path: Path):
    xml = tmp_path / "vkdoctor.xml"
    result = invoke(
        monkeypatch, (HostFacts, NastyFail, NeedsNasty, Warns, Breaks), "--junit", str(xml)
    )
    assert result.exit_code == 1
    doc = junitparser.JUnitXml.fromfile(str(xml))
    suites = {s.name: s for s in doc}
    # a suite per check family, named vkdoctor.FAMILY
    assert set(suites) == {f"vkdoctor.{family}" for family in ("host", "drivers", "environment")}
    assert (doc.tests, doc.failures, doc.errors, doc.skipped) == (5, 1, 1, 1)
    cases = {c.name: c for s in doc for c in s}
    assert set(cases) == {
        "VKH001 Host",
        "VKZ801 crafted failure",
        "VKZ803 crafted dependent",
        "VKZ802 crafted warning",
        "VKZ804 crafted bug",
    }
    for case in cases.values():
        assert case.classname.startswith("vkdoctor.") and case.time >= 0

    (failure,) = cases["VKZ801 crafted failure"].result
    assert isinstance(failure, junitparser.Failure)
    assert failure.message == f"VKZ801: {NASTY_TITLE}"
    assert NASTY_MESSAGE.replace("\r\n", "\n") in failure.text
    assert f"Fix: {REMEDY}" in failure.text

    (skipped,) = cases["VKZ803 crafted dependent"].result
    assert isinstance(skipped, junitparser.Skipped)
    assert skipped.message == "requires VKZ801, which did not pass"

    (error,) = cases["VKZ804 crafted bug"].result
    assert isinstance(error, junitparser.Error)
    assert "kaboom" in error.text and error.type == "VKX000"

    assert cases["VKH001 Host"].is_passed
    assert "Python" in (cases["VKH001 Host"].system_out or "")


def _report_with_probe(**probe) -> Report:
    host = CheckResult(
        code="VKH001",
        family="host",
        title="Host",
        status=CheckStatus.RAN,
        findings=(Finding(code="VKH001", severity=Severity.INFO, title="Host", message="Debian"),),
    )
    return Report(
        vkdoctor_version="0",
        host=HOST,
        checks=(host,),
        drivers=(
            driver_row(
                manifest="/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
                library_path="/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so",
                verdict="fail",
                reason="libLLVM.so.23.1 | not found",
            ),
        ),
        overlay=OverlayReport(
            dir="/home/u/.cache/vkdoctor/overlay/ab12",
            ld_library_path="/home/u/.cache/vkdoctor/overlay/ab12",
            libraries=(
                OverlayLink(
                    soname="libLLVM.so.23.1",
                    target="/opt/llvm23/lib/libLLVM.so.23.1",
                    needed_by=("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so",),
                ),
            ),
            applied=False,
            exec="vkdoctor exec --search-path /opt/llvm23/lib -- CMD",
        ),
        probe=probe_result_of(
            {
                "status": "fail",
                "backend": "vulkan",
                "adapter": {
                    "name": "llvmpipe (LLVM 23.1.0, 256 bits)",
                    "type": "cpu",
                    "driver": "llvmpipe",
                    "vendor_id": 65541,
                    "device_id": 0,
                },
                "ladder": [
                    {"rung": "add_one", "ok": True, "seconds": 0.01},
                    {"rung": "reduce", "ok": True, "seconds": 0.02},
                    {"rung": "matmul", "ok": True, "seconds": 0.02},
                ],
                "tolerance": 1e-5,
                "cases": [
                    {"rows": 64, "d": 8, "max_rel_err": 2.1e-7, "norm_rel_err": 1e-7, "ok": True},
                    {
                        "rows": 64,
                        "d": 4096,
                        "max_rel_err": 0.37,
                        "norm_rel_err": 0.02,
                        "ok": False,
                        "worst": {
                            "index": [3, 17],
                            "value": 1.37,
                            "reference": 1.0,
                            "rel_err": 0.37,
                        },
                        "timing": {"upload_s": 0.25, "dispatch_s": 0.125, "repeat_s": [0.5, 0.125]},
                    },
                ],
                "seconds": 1.25,
                **probe,
            }
        ),
    )


def test_junit_has_a_case_per_probe_case_and_survives_control_characters(tmp_path: Path):
    report = _report_with_probe(summary="driver said \x1b[31mboom\x1b[0m\x00")
    validate_report(report.as_dict())
    path = tmp_path / "probe.xml"
    path.write_text(junit.render(report), encoding="utf-8")
    doc = junitparser.JUnitXml.fromfile(str(path))
    (probe_suite,) = [s for s in doc if s.name == PROBE_SUITE]
    cases = {c.name: c for c in probe_suite}
    assert set(cases) == {
        "probe on llvmpipe (LLVM 23.1.0, 256 bits) (vulkan)",
        "ladder add_one",
        "ladder reduce",
        "ladder matmul",
        "rmsnorm rows=64 d=8",
        "rmsnorm rows=64 d=4096",
    }
    (overall,) = cases["probe on llvmpipe (LLVM 23.1.0, 256 bits) (vulkan)"].result
    assert overall.type == "fail" and "\\x1b[31mboom" in overall.text
    assert cases["rmsnorm rows=64 d=8"].is_passed
    (wrong,) = cases["rmsnorm rows=64 d=4096"].result
    assert wrong.message == "wrong numbers: max_rel_err=0.37"
    assert wrong.text == (
        "max_rel_err=0.37, norm_rel_err=0.02, tolerance=1e-05\n"
        "worst element [3, 17]: value 1.37, reference 1.0"
    )
    assert cases["ladder matmul"].is_passed
    assert cases["rmsnorm rows=64 d=4096"].time == 1.0
    assert probe_suite.time == pytest.approx(1.25)


def test_failed_probe_is_an_error_annotation():
    lines = github.annotation_lines(_report_with_probe(status="crash", cases=[]))
    (line,) = lines
    m = ANNOTATION.match(line)
    assert m and m.group(1) == "error" and unescape(m.group(2)) == "vkdoctor probe"
    assert unescape(m.group(3)).startswith("probe crash on llvmpipe (LLVM 23.1.0, 256 bits)")


def test_step_summary_is_appended_with_verdict_drivers_probe_and_overlay(
    monkeypatch, tmp_path: Path
):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = invoke(monkeypatch, (HostFacts, NastyFail), "--format", "github")
    assert result.exit_code == 1
    text = summary.read_text()
    assert text.startswith("# earlier step\n## vkdoctor check: ❌ FAIL\n")
    assert f"**{NASTY_TITLE}**<br>line one: a, b<br>line two 50%" in text
    assert REMEDY in text

    md = github.summary(_report_with_probe())
    assert "### Drivers" in md and "libLLVM.so.23.1 \\| not found" in md
    assert "### Probe: fail on llvmpipe (LLVM 23.1.0, 256 bits) (vulkan)" in md
    assert "| 64 | 4096 | 0.37 | ❌ |" in md
    # report text is literal Markdown: _ [ ] escaped, so nothing turns into emphasis or links
    assert (
        "rows=64 d=4096: max\\_rel\\_err=0.37, worst element \\[3, 17\\] = 1.37 (reference 1.0)"
        in md
    )
    assert "Ladder: add\\_one ✅, reduce ✅, matmul ✅" in md
    assert "export LD_LIBRARY_PATH=/home/u/.cache/vkdoctor/overlay/ab12" in md
    assert "| <code>libLLVM.so.23.1</code> | /opt/llvm23/lib/libLLVM.so.23.1 |" in md


def test_step_summary_shows_report_text_as_it_is():
    """A redacted <user>, a path with * _ ` | and HTML in a message: shown literally, not as
    markup (GitHub drops unknown tags, italicises *c*, and a backtick ends a code span)."""
    from vkdoctor.render.github import _cell, _code

    assert _cell("**x** <user> a*b*c `q` [l](u) #h") == (
        "\\*\\*x\\*\\* &lt;user&gt; a\\*b\\*c \\`q\\` \\[l\\](u) \\#h"
    )
    assert _code("/tmp/a|b`c<img>.json") == "<code>/tmp/a&#124;b`c&lt;img&gt;.json</code>"


def test_unwritable_step_summary_is_reported_and_keeps_the_exit_code(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no-such-dir" / "summary.md"))
    result = CliRunner().invoke(
        cli, ["check", "--no-probe", "--select", "VKH", "--format", "github"]
    )
    assert result.exit_code == 0
    assert "cannot append the job summary" in result.output


def test_real_cli_github_and_junit_on_this_host(tmp_path: Path):
    xml = tmp_path / "vkdoctor.xml"
    summary = tmp_path / "summary.md"
    proc = run_vkdoctor(
        ["check", "--no-probe", "--format", "github", "--junit", str(xml)],
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    found = annotation_lines(proc.stdout)
    doc = junitparser.JUnitXml.fromfile(str(xml))
    cases = [c for s in doc for c in s]
    assert "VKH001 Host" in {c.name for c in cases}
    failing = [c for c in cases if not c.is_passed and not c.is_skipped]
    # every failing test case has its annotation, and the exit code says the same
    assert len([m for m in found if m.group(1) == "error"]) >= len(failing)
    assert proc.returncode == (1 if failing else 0)
    assert summary.read_text().startswith("## vkdoctor check: ")
    # the verdict once, last, outside the folded report
    lines = proc.stdout.splitlines()
    assert [i for i, line in enumerate(lines) if line.startswith("vkdoctor: ")] == [len(lines) - 1]
    assert lines[-2] == "::endgroup::"


def test_a_probe_finding_is_not_repeated_by_the_probe_annotation_or_case(tmp_path: Path):
    base = _report_with_probe(
        status="no-adapter", ladder=[], cases=[], summary="no Vulkan CPU adapter"
    )
    vkr = CheckResult(
        code="VKR001",
        family="compute",
        title="Compute probe (RMSNorm)",
        status=CheckStatus.RAN,
        findings=(
            Finding(
                code="VKR001",
                severity=Severity.FAIL,
                title="No adapter for the compute probe",
                message="no Vulkan CPU adapter; OpenGL llvmpipe is present but does not count",
            ),
        ),
    )
    report = Report(vkdoctor_version="0", host=HOST, checks=(*base.checks, vkr), probe=base.probe)
    (line,) = github.annotation_lines(report)
    assert line.startswith("::error title=VKR001%3A No adapter for the compute probe::")
    path = tmp_path / "j.xml"
    path.write_text(junit.render(report))
    doc = junitparser.JUnitXml.fromfile(str(path))
    names = [c.name for s in doc for c in s]
    assert names == ["VKH001 Host", "VKR001 Compute probe (RMSNorm)"]
    assert doc.failures == 1
    # without the check, the probe's own case carries the failure
    alone = Report(vkdoctor_version="0", host=HOST, checks=base.checks, probe=base.probe)
    path.write_text(junit.render(alone))
    doc = junitparser.JUnitXml.fromfile(str(path))
    assert [c.name for s in doc for c in s][
        -1
    ] == "probe on llvmpipe (LLVM 23.1.0, 256 bits) (vulkan)"
    assert doc.failures == 1


def test_junit_to_stdout_is_pure_xml_and_two_stdout_reports_are_a_usage_error(monkeypatch):
    result = invoke(monkeypatch, (HostFacts, NastyFail), "--junit", "-")
    assert result.exit_code == 1
    assert result.output.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    clash = invoke(monkeypatch, (HostFacts,), "--junit", "-", "--json", "-")
    assert clash.exit_code == 2 and "both want stdout" in clash.output


def test_drivers_command_speaks_github_too(tmp_path: Path):
    proc = run_vkdoctor(
        ["drivers", "--format", "github"], env={"VK_DRIVER_FILES": "/nonexistent.json"}
    )
    assert proc.returncode == 1, proc.stderr
    found = annotation_lines(proc.stdout)
    assert found and all(m.group(1) in ("error", "warning") for m in found)
    assert any("nonexistent.json" in unescape(m.group(3)) for m in found)
    assert proc.stdout.splitlines()[-1].startswith("vkdoctor: FAIL")


def test_a_probe_that_stops_early_keeps_its_cases_as_skipped(tmp_path: Path):
    """No adapter: the ladder and the RMSNorm cases the probe plans are skipped test cases, so
    a CI's test history shows them skipped, not gone. The plan comes from the real probe."""
    proc = run_vkdoctor(
        ["run-probe", "--cpu", "--junit", str(tmp_path / "p.xml")],
        env={"VK_DRIVER_FILES": "/nonexistent.json"},
    )
    assert proc.returncode == 1, proc.stderr
    doc = junitparser.JUnitXml.fromfile(str(tmp_path / "p.xml"))
    (probe_suite,) = [s for s in doc if s.name == PROBE_SUITE]
    cases = {c.name: c for c in probe_suite}
    assert "ladder add-one" in cases and "rmsnorm rows=300 d=4096" in cases
    assert len(cases) == 3 + 8
    for case in cases.values():
        (skipped,) = case.result
        assert isinstance(skipped, junitparser.Skipped)
        assert skipped.message == "not run: the probe ended with no-adapter"


@pytest.mark.parametrize("option", ["--json", "--junit"])
def test_github_annotations_and_a_report_on_stdout_are_a_usage_error(option: str):
    proc = run_vkdoctor(["check", "--no-probe", "--format", "github", option, "-"])
    assert proc.returncode == 2
    assert "--format github writes its annotations to stdout" in proc.stderr
    assert proc.stdout == ""  # refused before anything ran


@pytest.mark.parametrize("option", ["--json", "--junit"])
def test_a_report_option_without_its_file_says_what_to_give(option: str):
    proc = run_vkdoctor(["check", "--no-probe", option])
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"Option '{option}' requires an argument: a file to write" in proc.stderr
    assert f"or - for stdout ({option} -)." in proc.stderr


def test_a_path_that_is_not_utf8_is_reported_not_fatal(tmp_path: Path):
    """Paths and variables are bytes: one that is not UTF-8 goes to the terminal as the same
    bytes and into the JSON and XML files as \\xNN, whatever the locale's error handler."""
    import os
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    from conftest import REPO, clean_env

    out, xml = tmp_path / "r.json", tmp_path / "r.xml"
    env = {"LD_LIBRARY_PATH": os.fsdecode(b"/opt/\xe9t\xe9/lib"), "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "vkdoctor", "check", "--no-probe", "--format", "github"),
            *("--json", str(out), "--junit", str(xml)),
        ],
        cwd=REPO,
        env=clean_env({**env, "PYTHONPATH": str(REPO)}),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert b"internal error" not in proc.stderr
    # shown as escapes: a byte that is not UTF-8 may be a control (0x9b is CSI) to a terminal
    assert b"/opt/\\xe9t\\xe9/lib" in proc.stdout and b"\xe9" not in proc.stdout
    doc = json.loads(out.read_text())
    (entry,) = [f for f in doc["findings"] if f["code"] == "VKE002"]
    assert "/opt/\\xe9t\\xe9/lib" in entry["message"]
    assert "/opt/\\xe9t\\xe9/lib" in ET.tostring(ET.parse(xml).getroot(), encoding="unicode")


def test_a_probe_killed_before_it_reported_still_lists_its_plan_in_junit(tmp_path: Path):
    """Killed by the time bound before it wrote anything: every rung and case is in the JUnit
    report, skipped (not reached), instead of the suite vanishing from the CI history."""
    xml = tmp_path / "probe.xml"
    proc = run_vkdoctor(["run-probe", "--cpu", "--timeout", "0.3", "--junit", str(xml)])
    assert proc.returncode == 1, proc.stderr
    suites = {s.name: s for s in junitparser.JUnitXml.fromfile(str(xml))}
    probe = suites[PROBE_SUITE]
    names = [c.name for c in probe]
    assert "ladder add-one" in names and "rmsnorm rows=512 d=4096" in names
    assert probe.skipped == probe.tests == len(names) >= 11


def test_the_job_summary_shows_control_characters_instead_of_passing_them_through():
    """A path with \\x01 or an escape sequence in it (a driver's output, a crafted name): the
    Markdown summary shows \\x01, as the JUnit file does, not the raw byte."""
    from vkdoctor.render.github import _cell, _code

    cell = _cell("/tmp/a\x01b\x1b[31m\nnext")
    assert "\x01" not in cell and "\x1b" not in cell
    assert "x01" in cell and "x1b" in cell and "<br>next" in cell
    assert _code("x\x07y") == "<code>x\\x07y</code>"
    # and the annotations: an ESC from a driver's output does not reach the log raw
    from vkdoctor.render.github import command

    assert command("error", "a\x1b[31mb", file="/x\x01") == "::error file=/x\\x01::a\\x1b[31mb"
