"""The runner, the report model, the exit-code contract and the CLI skeleton."""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import HOST, REPO, run_json, run_vkdoctor, validate_report

from vkdoctor.checks import REGISTRY
from vkdoctor.checks.base import Check
from vkdoctor.cli import cli
from vkdoctor.model import Finding, Remedy, Report, ReportStatus, Severity, exit_code
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace
from vkdoctor.model.report_records import probe_result_of
from vkdoctor.render.page import render
from vkdoctor.runner import run_checks, select


class Boom(Check):
    """Always raises."""

    code = "VKZ901"
    family = "test"
    title = "explodes"

    def run(self, ctx: Context) -> Iterable[Finding]:
        raise RuntimeError("kaboom")


class Fails(Check):
    """Always fails."""

    code = "VKZ902"
    family = "test"
    title = "fails"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.fail("it failed", "because", remedy=Remedy(text="do the thing"))


class NeedsFails(Check):
    """Depends on VKZ902."""

    code = "VKZ903"
    family = "test"
    title = "depends"
    requires = frozenset({"VKZ902"})

    def run(self, ctx: Context) -> Iterable[Finding]:
        raise AssertionError("must not run when its prerequisite failed")


class Quiet(Check):
    """Yields nothing."""

    code = "VKZ904"
    family = "test"
    title = "quiet"

    def run(self, ctx: Context) -> Iterable[Finding]:
        return ()


class Symptoms(Check):
    """Two missing libraries."""

    code = "VKZ905"
    family = "test"
    title = "symptoms"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.fail(
            "libA missing", "looked everywhere", remedy=Remedy(text="find libA"), name="libA"
        )
        yield self.fail(
            "libB missing", "looked everywhere", remedy=Remedy(text="find libB"), name="libB"
        )


class Cause(Check):
    """A package skew behind libA; libB outside the packages (no cause of ours)."""

    code = "VKZ906"
    family = "test"
    title = "causes"
    explains = ("VKZ905",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return symptom.evidence.get("name") == cause.evidence.get("name")

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.fail(
            "skew behind libA", "partial upgrade", remedy=Remedy(text="upgrade"), name="libA"
        )
        yield self.info("libB belongs to no package", name="libB")


def _report(checks) -> Report:
    return Report(vkdoctor_version="0", host=HOST, checks=checks)


def test_exception_in_a_check_becomes_an_error_finding_naming_it():
    results = run_checks(Context(), [Boom])
    (res,) = results
    assert res.status.value == "error"
    (f,) = res.findings
    assert f.severity is Severity.ERROR
    assert "VKZ901" in f.title and "kaboom" in f.message
    report = _report(results)
    assert report.status() is ReportStatus.ERROR
    assert exit_code(report.status()) == 3


def test_failed_prerequisite_skips_dependent_and_fail_beats_error():
    results = run_checks(Context(), [NeedsFails, Fails, Boom])
    by = {r.code: r for r in results}
    assert by["VKZ903"].status.value == "skipped"
    assert "VKZ902" in (by["VKZ903"].skip_reason or "")
    report = _report(results)
    assert report.status() is ReportStatus.FAIL
    assert exit_code(report.status()) == 1


def test_quiet_check_is_ok_and_strict_turns_warnings_into_failure():
    results = run_checks(Context(), [Quiet])
    assert results[0].findings[0].severity is Severity.OK
    warn = Finding(code="VKH001", severity=Severity.WARN, title="w")
    from vkdoctor.model import CheckResult, CheckStatus

    r = _report(
        (
            CheckResult(
                code="VKH001", family="host", title="t", status=CheckStatus.RAN, findings=(warn,)
            ),
        )
    )
    assert exit_code(r.status()) == 0
    assert exit_code(r.status(strict=True)) == 1


def test_select_and_ignore_by_prefix():
    assert select([Boom, Fails, Quiet], ["VKZ90"], ["VKZ902"]) == [Boom, Quiet]
    # a comma-separated list is the same as the option given twice
    assert select([Boom, Fails, Quiet], ["VKZ901, VKZ904"], []) == [Boom, Quiet]
    assert select([Boom, Fails, Quiet], [], ["VKZ901,VKZ902"]) == [Quiet]


def test_failed_probe_fails_the_report():
    r = Report(
        vkdoctor_version="0", host=HOST, checks=(), probe=probe_result_of({"status": "timeout"})
    )
    assert r.status() is ReportStatus.FAIL
    # a probe document without a status the parent knows is no pass either
    odd = Report(vkdoctor_version="0", host=HOST, checks=(), probe=probe_result_of({}))
    assert odd.status() is ReportStatus.FAIL
    passed = probe_result_of({"status": "pass", "seconds": 1})
    assert Report(vkdoctor_version="0", host=HOST, checks=(), probe=passed).status() is (
        ReportStatus.OK
    )


def test_check_json_report_validates(tmp_path: Path):
    out = tmp_path / "r.json"
    proc = run_vkdoctor(["check", "--no-probe", "--select", "VKH", "--json", str(out)])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    validate_report(doc)
    assert doc["schema_version"] == 1
    host = doc["host"]
    assert host["distro"]["id"] == "debian"
    assert host["python"] and host["kernel"] and host["memory"]["total_bytes"] > 0
    assert host["loader"]["path"].endswith("/libvulkan.so.1")
    assert host["loader"]["version"].startswith("1.")
    assert "vkdoctor: OK" in proc.stdout


def test_a_root_that_is_no_system_tree_is_said_first(tmp_path: Path):
    proc, doc = run_json(["check", "--root", str(tmp_path), "--select", "VKH001"])
    assert proc.returncode == 0
    (info, warn) = doc["findings"]
    assert info["severity"] == "info"
    assert warn["severity"] == "warn"
    assert warn["title"] == f"{tmp_path} does not look like a root filesystem"
    assert "not one layer" in warn["remedy"]


def test_os_release_escapes_are_undone_and_the_family_comes_from_id_like(tmp_path: Path):
    """NAME="Foo \\"Rolling\\" Linux" is Foo "Rolling" Linux, as a shell reads it (distro parses
    it); an unknown ID with ID_LIKE=arch gets Arch's commands; a FIFO or a huge file is not read."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text(
        'NAME=Foo\nPRETTY_NAME="Foo \\"Rolling\\" Linux"\n'
        'ID=foo\nID_LIKE="arch"\nVERSION_ID=2026.1\n'
    )
    proc, doc = run_json(["check", "--root", str(tmp_path), "--select", "VKH001"])
    assert proc.returncode == 0, proc.stderr
    assert doc["host"]["distro"] == {
        "id": "foo",
        "name": 'Foo "Rolling" Linux',
        "version": "2026.1",
        "like": "arch",
    }
    from vkdoctor.machine.host import distro_family

    assert distro_family(Context(root=tmp_path)) == "arch"
    big = tmp_path / "etc" / "os-release"
    big.write_text("ID=foo\n" + "#" * (1 << 20))
    assert distro_family(Context(root=tmp_path)) is None
    big.unlink()
    os.mkfifo(big)
    assert distro_family(Context(root=tmp_path)) is None


def test_root_host_facts_describe_the_tree_not_this_process(tmp_path: Path):
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    (tmp_path / "usr" / "lib" / "os-release").write_text(
        'ID=arch\nPRETTY_NAME="Arch Linux"\nVERSION_ID=rolling\n'
    )
    proc, doc = run_json(["check", "--root", str(tmp_path), "--select", "VKH001"])
    assert proc.returncode == 0, proc.stderr
    host = doc["host"]
    assert host["distro"] == {
        "id": "arch",
        "name": "Arch Linux",
        "version": "rolling",
        "like": None,
    }
    # the interpreter running vkdoctor is not the tree's: nothing about it is reported
    assert [host[k] for k in ("python", "python_executable", "wgpu", "kernel", "cpu")] == [None] * 5
    assert host["vkdoctor"] == doc["vkdoctor_version"]
    (finding,) = doc["findings"]
    assert finding["message"] == f"Arch Linux, x86_64, inspected as a tree under --root {tmp_path}"


def test_explain_lists_codes_and_shows_a_page():
    runner = CliRunner()
    listing = runner.invoke(cli, ["explain"])
    assert listing.exit_code == 0
    assert "VKH001" in listing.output and "VKX000" in listing.output
    page = runner.invoke(cli, ["explain", "vkh001"])
    assert page.exit_code == 0 and page.output.startswith("VKH001: Host\n")
    bad = runner.invoke(cli, ["explain", "nope"])
    assert bad.exit_code == 2 and "unknown finding code" in bad.output


@pytest.mark.parametrize("code", [c.code for c in REGISTRY])
def test_explain_shows_the_check_docstring_and_its_page(code: str) -> None:
    check = next(c for c in REGISTRY if c.code == code)
    shown = run_vkdoctor(["explain", code])
    assert shown.returncode == 0
    doc = inspect.cleandoc(check.__doc__ or "")
    first_line = doc.splitlines()[0]
    words = " ".join(shown.stdout.split())
    # the docstring's first paragraph is shown, unless the page already says it (most of its
    # longer words in one of the page's paragraphs): a page never says a thing twice
    shown_as_doc = f"What vkdoctor checks. {' '.join(render(first_line).split())}" in words

    def longer(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z0-9_.+-]+", text.lower()) if len(w) > 3}

    first = longer(doc.split("\n\n")[0])
    page = (REPO / "docs" / "codes" / f"{code}.md").read_text().split("\n\n")
    said = any(len(first & longer(p)) >= 0.6 * len(first) for p in page)
    assert first_line and (shown_as_doc or said), code
    assert "How to fix." in words and "What it means." in words


def test_explain_styles_markdown_only_for_colour() -> None:
    plain = run_vkdoctor(["explain", "VKL002"])
    assert "\nWhat it means. " in plain.stdout and "\x1b[" not in plain.stdout
    assert "**" not in plain.stdout and "DT_NEEDED" in plain.stdout
    styled = run_vkdoctor(["explain", "VKL002"], env={"FORCE_COLOR": "1"})
    assert "\x1b[1mWhat it means.\x1b[0m" in styled.stdout
    assert "\x1b[36mDT_NEEDED\x1b[0m" in styled.stdout
    assert "**" not in styled.stdout and not styled.stdout.startswith("#")


def test_usage_error_exits_2():
    proc = run_vkdoctor(["check", "--no-such-flag"])
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_unwritable_json_target_is_a_usage_error_before_anything_runs(tmp_path: Path):
    proc = run_vkdoctor(["check", "--no-probe", "--json", str(tmp_path / "missing-dir" / "r.json")])
    assert proc.returncode == 2
    assert "the directory" in proc.stderr and "does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    proc = run_vkdoctor(["check", "--no-probe", "--junit", str(tmp_path)])
    assert proc.returncode == 2 and "is a directory" in proc.stderr


def test_a_selection_that_matches_nothing_is_a_usage_error():
    proc = run_vkdoctor(["check", "--select", "VKD", "--ignore", "VKD"])
    assert proc.returncode == 2
    assert "leave no check to run" in proc.stderr


def test_json_to_stdout_is_pure_json():
    _, doc = run_json(["check", "--no-probe", "--select", "VKH"])
    assert doc["status"] == "ok"


def test_colour_only_when_asked_for_off_a_terminal():
    plain = run_vkdoctor(["check", "--no-probe", "--select", "VKH"])
    assert "\x1b[" not in plain.stdout
    forced = run_vkdoctor(["check", "--no-probe", "--select", "VKH"], env={"FORCE_COLOR": "1"})
    assert "\x1b[32m" in forced.stdout
    both = run_vkdoctor(
        ["check", "--no-probe", "--select", "VKH"], env={"FORCE_COLOR": "1", "NO_COLOR": "1"}
    )
    assert "\x1b[" not in both.stdout


@pytest.mark.parametrize("value", ["2200000", "inf", "nan", "1e20", "0.01", "soon"])
@pytest.mark.parametrize("command", [["check", "--no-probe"], ["run-probe", "--cpu"], ["bench"]])
def test_an_unusable_timeout_is_a_usage_error(command: list[str], value: str):
    proc = run_vkdoctor([*command, "--timeout", value])
    assert proc.returncode == 2, proc.stderr
    assert "Invalid value for '--timeout':" in proc.stderr and value in proc.stderr
    assert "is not a number of seconds" in proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run-probe", "--adapter", ""], "Invalid value for '--adapter': give part of"),
        (["check", "--adapter", " "], "Invalid value for '--adapter': give part of"),
        (
            ["overlay", "--from-package", "/nonexistent/llvm.deb"],
            "File '/nonexistent/llvm.deb' does not exist",
        ),
        (
            ["check", "--no-probe", "--from-package", "/nonexistent/llvm.deb"],
            "File '/nonexistent/llvm.deb' does not exist",
        ),
        (
            ["check", "--no-probe", "--ignore", "VKZ999"],
            "--ignore VKZ999: no check has such a code",
        ),
        (
            ["check", "--no-probe", "--select", "VKH001,VKZ999"],
            "--select VKZ999: no check has such a code",
        ),
        (["check", "--no-probe", "--select", ""], "--select needs a check code or prefix"),
        (
            [
                "check",
                "--no-probe",
                "--json",
                "/tmp/vkdoctor-same",
                "--junit",
                "/tmp/vkdoctor-same",
            ],
            "--json and --junit both name /tmp/vkdoctor-same",
        ),
        (["exec", "--", ""], "the command to run is an empty string"),
        (["check", "--no-probe", "--json", ""], "give a file name ('-' for stdout)"),
        (["check", "--no-probe", "--json", "/tmp/" + "a" * 300], "is too long"),
        (["check", "--no-probe", "--search-path", ""], "an empty path would mean the current"),
        (["bench", "--cpu", "--repeat", "100000"], "100000 is not in the range 1<=x<=2048"),
        (["run-probe", "--shader-dir", "/tmp/" + "a" * 300], "Invalid value for '--shader-dir'"),
    ],
)
def test_input_that_cannot_mean_anything_is_a_usage_error(args: list[str], message: str):
    proc = run_vkdoctor(args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_exec_names_a_missing_program_by_what_is_missing():
    proc = run_vkdoctor(["exec", "--", "/nonexistent/cmd"])
    assert proc.returncode == 127
    assert proc.stderr.strip().endswith(
        "vkdoctor exec: /nonexistent/cmd: No such file or directory"
    )
    proc = run_vkdoctor(["exec", "--", "no-such-command-here"])
    assert proc.returncode == 127
    assert proc.stderr.strip().endswith("vkdoctor exec: no-such-command-here: command not found")


def test_a_terminal_gets_wrapped_messages_and_a_pipe_gets_one_line_each():
    from vkdoctor.model import CheckResult, CheckStatus
    from vkdoctor.render import text

    path = "/usr/lib/x86_64-linux-gnu/libvulkan_lvp_with_a_long_name.so"
    f = Finding(
        code="VKL002",
        severity=Severity.FAIL,
        title="t",
        message=f"{path} needs libLLVM.so.23.1, which no directory ld.so searches holds at all.",
        remedy=Remedy(text="upgrade both together with the distribution's command"),
    )
    report = Report(
        vkdoctor_version="0",
        host=HOST,
        checks=(
            CheckResult(
                code="VKL002", family="libraries", title="t", status=CheckStatus.RAN, findings=(f,)
            ),
        ),
    )
    piped = text.render(report, style=text.Style())
    assert f"      {f.message}" in piped.splitlines()
    wrapped = text.render(report, style=text.Style(width=60)).splitlines()
    # a path longer than the line is shortened in the middle, never split or cut at the end
    from vkdoctor.render.wrap import shorten_path

    assert f"      {shorten_path(path, 52)}" in wrapped
    assert shorten_path(path, 52).endswith("…/libvulkan_lvp_with_a_long_name.so")
    assert all(len(line) <= 60 for line in wrapped)
    assert "        command" in wrapped  # the fix's next line is indented under it


def test_a_cause_found_from_two_sides_is_one_failure():
    by = {r.code: r for r in run_checks(Context(), [Symptoms, Cause])}
    a, b = by["VKZ905"].findings
    assert (a.severity, b.severity) == (Severity.INFO, Severity.FAIL)
    assert a.title == "libA missing: VKZ906 gives the cause"
    assert a.fix() == "See VKZ906: skew behind libA."
    assert a.message == "looked everywhere" and a.evidence == {
        "name": "libA",
        "explained_by": "VKZ906",
    }
    assert b.fix() == "find libB"  # an info cause explains nothing
    failures = [f for r in by.values() for f in r.findings if f.severity is Severity.FAIL]
    assert [f.title for f in failures] == ["libB missing", "skew behind libA"]
    # without the check that gives the cause, the symptom is the failure
    (alone,) = run_checks(Context(), [Symptoms])
    assert [f.severity for f in alone.findings] == [Severity.FAIL, Severity.FAIL]


def test_closed_stdout_is_no_traceback():
    """`vkdoctor explain VKH001 >&-`: nothing can be printed, nothing breaks, and the lost
    output is said and is no success (exit 2, as `>/dev/full`)."""
    import subprocess
    import sys

    from conftest import REPO, clean_env

    for args in (["explain", "VKH001"], ["check", "--no-probe", "--select", "VKH001"]):
        proc = subprocess.run(
            [sys.executable, "-m", "vkdoctor", *args],
            cwd=REPO,
            env=clean_env({"PYTHONPATH": str(REPO)}),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
            # the descriptor closed as a shell's >&- closes it
            preexec_fn=lambda: os.close(1),
        )
        assert proc.returncode == 2, proc.stderr
        assert "cannot write to standard output: it was closed" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_a_root_tree_with_fifos_and_device_links_is_read_without_hanging(tmp_path: Path):
    """An image tree is someone else's: FIFOs where os-release, ld.so.conf, the dpkg status and
    a file list belong, and ld.so.cache linked to /dev/zero (absolute: inside the tree, not on
    this host). Each is "cannot read"; nothing blocks or reads without end."""
    for d in ("etc", "var/lib/dpkg/info"):
        (tmp_path / d).mkdir(parents=True)
    for f in (
        "etc/os-release",
        "etc/ld.so.conf",
        "var/lib/dpkg/status",
        "var/lib/dpkg/info/x.list",
    ):
        os.mkfifo(tmp_path / f)
    (tmp_path / "etc/ld.so.cache").symlink_to("/dev/zero")
    proc, doc = run_json(["check", "--no-probe", "--root", str(tmp_path)], timeout=60)
    assert proc.returncode == 1, proc.stderr
    (db,) = [f for f in doc["findings"] if f["code"] == "VKP001"]
    assert db["severity"] == "warn" and "not a regular file" in db["message"]


def test_bounded_reads_refuse_what_is_no_regular_file_or_too_large(tmp_path: Path):
    from vkdoctor.model import files

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    for path, limit, errno_name in (
        (fifo, 100, "ESPIPE"),
        (Path("/dev/zero"), 100, "ESPIPE"),
        (big, 1024, "EFBIG"),
    ):
        with pytest.raises(OSError) as info:
            files.read_bytes(path, limit)
        assert info.value.errno == getattr(__import__("errno"), errno_name)
    assert files.read_bytes(big, 4096) == b"x" * 2048
    assert not files.exists(tmp_path / ("a" * 300))  # ENAMETOOLONG: no, not an error


def test_names_too_long_for_the_system_are_findings_not_crashes():
    """ENAMETOOLONG from a variable is the system's answer about that path, not a bug of ours."""
    long = "/tmp/" + "a" * 300
    env = {
        "LD_LIBRARY_PATH": long,
        "TMPDIR": long,
        "HOME": long,
        "VK_ADD_DRIVER_FILES": f"{long}/x.json",
    }
    proc, doc = run_json(["check", "--no-probe"], env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert [f["title"] for f in doc["findings"] if f["code"] == "VKX000"] == []


def test_information_with_a_remedy_is_not_filed_as_evidence():
    with pytest.raises(TypeError):
        Symptoms().info("wgpu is not installed", remedy="pip install wgpu")
    fix = Remedy(commands=("pip install wgpu",))
    f = Symptoms().finding(Severity.INFO, "wgpu is not installed", remedy=fix)
    assert (f.severity, f.fix(), dict(f.evidence)) == (Severity.INFO, "pip install wgpu", {})


def test_the_probe_under_root_is_said_not_applicable(tmp_path: Path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text("ID=debian\n")
    proc, doc = run_json(["check", "--root", str(tmp_path), "--select", "VKR001"])
    assert proc.returncode == 0, proc.stderr
    (vkr,) = doc["checks"]
    assert vkr["status"] == "skipped" and "needs the live machine" in vkr["skip_reason"]
    assert doc["probe"] is None


def test_a_mistyped_command_gets_the_close_one():
    proc = run_vkdoctor(["chek"])
    assert proc.returncode == 2
    assert "No such command 'chek'. Did you mean 'check'?" in proc.stderr


def test_an_area_that_is_fine_is_one_line_unless_verbose(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    quiet = run_vkdoctor(
        ["check", "--no-probe", "--select", "VKD,VKE"], env={"XDG_RUNTIME_DIR": str(runtime)}
    )
    assert quiet.returncode == 0, quiet.stderr
    lines = quiet.stdout.splitlines()
    # One line per area: what it found in a few words, or that it found nothing.
    assert len(lines) == 5, quiet.stdout
    assert lines[0].startswith("  ✓ Drivers      ") and "the loader will try: " in lines[0]
    from vkdoctor.checks import REGISTRY

    environment = [c for c in REGISTRY if c.family == "environment"]
    assert lines[1:] == [
        f"  ✓ Environment  {len(environment)} check(s): nothing found",
        "  (-v lists every check)",
        "",
        "vkdoctor: OK",
    ]
    # information is no tick: the area says it
    noted = run_vkdoctor(["check", "--no-probe", "--select", "VKE"])
    assert noted.stdout.splitlines()[0] == (
        "  · Environment  XDG_RUNTIME_DIR is unset: expect harmless stderr lines"
    )
    loud = run_vkdoctor(["check", "--no-probe", "--select", "VKD,VKE", "-v"])
    assert "VKD003 Driver manifests the loader cannot parse: none" in loud.stdout
    assert "nothing found" not in loud.stdout and "(-v lists" not in loud.stdout
    # An area with something to say is never one line: an empty LD_LIBRARY_PATH entry.
    hazard = run_vkdoctor(
        ["check", "--no-probe", "--select", "VKE"], env={"LD_LIBRARY_PATH": ":/usr/lib"}
    )
    hazard_lines = hazard.stdout.splitlines()
    assert hazard_lines[0] == "  ! Environment  VKE001 warning (below)", hazard.stdout
    warnings = hazard.stdout[hazard.stdout.index("\nWarnings (vkdoctor explain CODE") :]
    assert "\n  ! VKE001 " in warnings


@pytest.mark.parametrize(
    ("files", "links", "machine"),
    [
        # an arm64 image inspected from this x86_64 host, merged /usr
        ({"usr/lib/ld-linux-aarch64.so.1"}, {"lib": "usr/lib"}, "aarch64"),
        # an x86_64 tree with i386 multiarch: the host's machine wins
        (
            {"usr/lib64/ld-linux-x86-64.so.2", "usr/lib/ld-linux.so.2"},
            {"lib64": "usr/lib64", "lib": "usr/lib"},
            "x86_64",
        ),
        # an i386-only tree
        ({"lib/ld-linux.so.2"}, {}, "i686"),
        # nothing to tell from: the host's
        (set(), {}, "x86_64"),
    ],
)
def test_a_root_tree_is_judged_as_the_machine_its_ldso_is_for(tmp_path, files, links, machine):
    import platform

    from vkdoctor.commands.common import host_context

    if platform.machine() != "x86_64":
        raise AssertionError("this test describes an x86_64 host (CI's)")
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes(b"\x7fELF")
    for link, target in links.items():
        if not (tmp_path / link).exists():
            (tmp_path / link).symlink_to(target)
    assert host_context(root=str(tmp_path)).machine == machine


def test_with_root_the_text_report_says_the_fixes_are_the_trees():
    from vkdoctor.model import CheckResult, CheckStatus
    from vkdoctor.render import text

    f = Finding(
        code="VKH002",
        severity=Severity.FAIL,
        title="libvulkan.so.1 not found",
        remedy=Remedy(commands=("apt install libvulkan1",), needs_root=True),
    )
    checks = (
        CheckResult(code="VKH002", family="host", title="t", status=CheckStatus.RAN, findings=(f,)),
    )
    tree = Report(vkdoctor_version="0", host=replace(HOST, root="/srv/img"), checks=checks)
    assert (
        "The fixes that change files or packages are for the system in /srv/img: run them inside "
        "it (sudo chroot /srv/img ..., or in the image's build), where the paths above are its "
        "own. Those that unset or export a variable are for this shell."
    ) in text.render(tree, style=text.Style(machine="x86_64")).splitlines()
    arm = Report(
        vkdoctor_version="0", host=replace(HOST, root="/srv/img", machine="aarch64"), checks=checks
    )
    assert (
        "(an aarch64 tree: chroot needs qemu-user-static here, or use docker run --platform)"
        in (text.render(arm, style=text.Style(machine="x86_64")))
    )
    live = Report(vkdoctor_version="0", host=HOST, checks=checks)
    assert "The fixes that" not in text.render(live, style=text.Style(machine="x86_64"))


def test_with_root_the_shells_loader_variables_are_named(tmp_path):
    """--root reads this shell's VK_*/LD_* variables as the tree's: the report says so."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text('ID=debian\nNAME="Debian GNU/Linux"\n')
    select = ["check", "--root", str(tmp_path), "--no-probe", "--select", "VKH001"]
    _, doc = run_json(select, env={"LD_LIBRARY_PATH": "/opt/x", "VK_DRIVER_FILES": "/a.json"})
    titles = [f["title"] for f in doc["findings"] if f["code"] == "VKH001"]
    assert "This shell's LD_LIBRARY_PATH, VK_DRIVER_FILES applied to the tree" in titles
    _, doc = run_json(select)
    assert [f["title"] for f in doc["findings"] if f["code"] == "VKH001"] == ["Host"]
    # an implicit layer's own switch counts too
    layers = tmp_path / "usr/share/vulkan/implicit_layer.d"
    layers.mkdir(parents=True)
    (layers / "ds.json").write_text(
        '{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_MESA_device_select", '
        '"type": "GLOBAL", "library_path": "libVkLayer_MESA_device_select.so", '
        '"api_version": "1.3.211", "implementation_version": "1", "description": "ds", '
        '"disable_environment": {"NODEVICE_SELECT": "1"}}}'
    )
    _, doc = run_json(select, env={"NODEVICE_SELECT": "1"})
    titles = [f["title"] for f in doc["findings"] if f["code"] == "VKH001"]
    assert "This shell's NODEVICE_SELECT applied to the tree" in titles


def test_a_tree_without_its_dynamic_linker_is_one_failure_with_the_link_to_restore(tmp_path):
    """A merged-/usr tree that lost its /lib link: /lib64/ld-linux-x86-64.so.2 dangles, no
    program can start. Before, every library resolved and the tree passed."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text('ID=debian\nNAME="Debian GNU/Linux"\n')
    real = tmp_path / "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"\x7fELF")
    (tmp_path / "usr/lib64").mkdir()
    (tmp_path / "usr/lib64/ld-linux-x86-64.so.2").symlink_to(
        "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    )
    (tmp_path / "lib64").symlink_to("usr/lib64")
    (tmp_path / "usr/lib/x86_64-linux-gnu/libc.so.6").write_bytes(b"\x7fELF")
    select = ["check", "--root", str(tmp_path), "--no-probe", "--select", "VKH001"]
    proc, doc = run_json(select)
    assert proc.returncode == 1
    (f,) = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert f["title"] == (
        "The tree's dynamic linker /lib64/ld-linux-x86-64.so.2 is missing: no program in it can "
        "start"
    )
    assert f["remedy"] == f"ln -s usr/lib {tmp_path}/lib (the merged-/usr links)"
    (tmp_path / "lib").symlink_to("usr/lib")
    proc, doc = run_json(select)
    assert proc.returncode == 0
    assert [f["severity"] for f in doc["findings"]] == ["info"]


def test_a_tree_without_any_dynamic_linker_is_judged_by_its_programs(tmp_path):
    from vkdoctor.commands.common import host_context

    env = tmp_path / "usr/bin/env"
    env.parent.mkdir(parents=True)
    # a whole ELF header: 64-bit, little-endian, ET_DYN, EM_AARCH64 (183), no program headers
    import struct

    env.write_bytes(
        b"\x7fELF\x02\x01\x01"
        + bytes(9)
        + struct.pack("<HHIQQQIHHHHHH", 3, 183, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)
    )
    assert host_context(root=str(tmp_path)).machine == "aarch64"


def test_the_text_report_does_not_say_a_fix_twice():
    """Package findings end their message with "Fix: X." for JSON readers; the text report
    shows X once, on its fix line."""
    from vkdoctor.model import CheckResult, CheckStatus
    from vkdoctor.render import text

    f = Finding(
        code="VKP002",
        severity=Severity.FAIL,
        title="lavapipe needs libz.so.1: package skew",
        message="zlib1g lists libz.so.1, but the file is gone. Fix: sudo apt install --reinstall zlib1g.",
        remedy=Remedy(commands=("apt install --reinstall zlib1g",), needs_root=True, text="."),
    )
    check = CheckResult(
        code="VKP002", family="packages", title="t", status=CheckStatus.RAN, findings=(f,)
    )
    out = text.render(Report(vkdoctor_version="0", host=HOST, checks=(check,)), style=text.Style())
    assert out.count("sudo apt install --reinstall zlib1g") == 1
    assert "      zlib1g lists libz.so.1, but the file is gone." in out.splitlines()


class Installs(Check):
    """Test double: a failure whose fix is a sudo command."""

    code = "VKZ906"
    family = "test"
    title = "installs"

    def run(self, ctx: Context) -> Iterable[Finding]:
        yield self.fail(
            "x missing",
            "/tmp/a sudo dir breaks under sudo or cron. Fix: sudo apt install x.",
            remedy=Remedy(commands=("apt install x",), needs_root=True, text="."),
        )


def test_fixes_drop_sudo_for_root_on_a_machine_without_it(tmp_path):
    """A root CI container has no sudo: `sudo apt install x` would be "command not found"."""
    if os.geteuid() != 0:
        raise AssertionError("CI runs as root; this test describes root")
    from vkdoctor.facts.report import shows_sudo

    def shown(ctx: Context) -> tuple[str | None, str]:
        (found,) = run_checks(ctx, [Installs])
        f = found.findings[0]
        assert f.remedy == Remedy(commands=("apt install x",), needs_root=True, text=".")
        return f.fix(sudo=shows_sudo(ctx)), f.said(sudo=shows_sudo(ctx))

    fix, message = shown(Context(env={"PATH": str(tmp_path)}))
    assert fix == "apt install x."
    # prose and paths keep the word: only a command loses it
    assert message == "/tmp/a sudo dir breaks under sudo or cron. Fix: apt install x."
    # with sudo on PATH, or inspecting a tree, the command stays as written
    sudo = tmp_path / "sudo"
    sudo.write_text("#!/bin/sh\n")
    sudo.chmod(0o755)
    assert shown(Context(env={"PATH": str(tmp_path)}))[0] == "sudo apt install x."
    assert shown(Context(root=tmp_path, env={"PATH": "/nonexistent"}))[0] == "sudo apt install x."


def test_a_json_target_on_a_read_only_file_system_says_so(tmp_path):
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], check=True)
    try:
        proc = run_vkdoctor(["check", "--no-probe", "--json", str(ro / "r.json")])
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert proc.returncode == 2
    assert f"the directory {ro} is on a read-only file system" in proc.stderr


def test_strict_warning_beside_an_internal_error_is_a_failure():
    """--strict makes a warning a failure, and a failure beats vkdoctor's own error (exit 1,
    as the JUnit file of the same run says), not 3."""
    from vkdoctor.model import CheckResult, CheckStatus

    warn = Finding(code="VKS001", severity=Severity.WARN, title="low disk")
    broke = Finding(code="VKX000", severity=Severity.ERROR, title="a check broke")
    checks = (
        CheckResult(
            code="VKS001", family="disk", title="t", status=CheckStatus.RAN, findings=(warn,)
        ),
        CheckResult(
            code="VKE008", family="env", title="t", status=CheckStatus.RAN, findings=(broke,)
        ),
    )
    report = Report(vkdoctor_version="0", host=HOST, checks=checks)
    assert report.status(strict=True) is ReportStatus.FAIL
    assert exit_code(report.status(strict=True)) == 1
    assert report.status() is ReportStatus.ERROR


def test_a_tree_without_drivers_counts_no_library_as_resolved(tmp_path: Path) -> None:
    """The libraries' line of a tree with no driver and no layer says there is nothing to
    resolve (the check's "none" is not a target)."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "usr").mkdir()
    (tmp_path / "etc" / "os-release").write_text("ID=debian\n")
    proc = run_vkdoctor(["check", "--root", str(tmp_path)], env={"COLUMNS": "80"})
    lines = [line for line in proc.stdout.splitlines() if "Libraries" in line]
    assert lines == ["  · Libraries    No driver or layer library to resolve"], proc.stdout
