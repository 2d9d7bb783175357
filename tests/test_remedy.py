"""A remedy is data: its commands (never with sudo), whether they need root, and one sentence.
The renderers decide how root's commands are shown; the JSON report carries both the line and
the commands."""

from __future__ import annotations

from conftest import HOST, validate_report
from sentences import remedy_from

from vkdoctor.model import CheckResult, CheckStatus, Finding, Remedy, Report, Severity
from vkdoctor.render import github, junit
from vkdoctor.render import text as text_render


def test_commands_are_shown_with_sudo_only_where_the_report_says_so() -> None:
    r = Remedy(commands=("apt update", "apt full-upgrade"), needs_root=True, text="Then look.")
    assert r.shown() == "sudo apt update && sudo apt full-upgrade. Then look."
    assert r.shown(sudo=False) == "apt update && apt full-upgrade. Then look."
    # a user's own variable needs no root, whoever runs it
    unset = Remedy(commands=("unset VK_ICD_FILENAMES",))
    assert unset.shown() == unset.shown(sudo=False) == "unset VK_ICD_FILENAMES"
    assert Remedy(commands=("ldconfig",), needs_root=True, text="(rebuilds it)").shown() == (
        "sudo ldconfig (rebuilds it)"
    )
    assert Remedy(text="Fix the manifest.").shown(sudo=False) == "Fix the manifest."


def test_a_fix_written_as_one_string_is_read_into_commands() -> None:
    r = remedy_from(
        "sudo apt update && sudo apt --fix-broken install. Then sudo apt full-upgrade. "
        "If apt proposes to REMOVE the driver package, answer no."
    )
    assert r.commands == ("apt update", "apt --fix-broken install", "apt full-upgrade")
    assert r.needs_root and r.text == "If apt proposes to REMOVE the driver package, answer no."
    for fix in (
        "sudo apt install --reinstall zlib1g.",
        "sudo ldconfig (rebuilds /etc/ld.so.cache)",
        "unset VK_ICD_FILENAMES: it names no existing driver manifest (VKD001)",
        "chmod a+rx /x (this user cannot read it)",
        "sudo pacman -S x. Unverified: pacman could not check it.",
    ):
        assert remedy_from(fix).shown() == fix
        assert not any(c.startswith("sudo") for c in remedy_from(fix).commands)
    # words first, or commands with and without sudo mixed: all text, as written
    for fix in ("Fix the manifest. Then run it again.", "unset X && sudo ldconfig"):
        assert remedy_from(fix) == Remedy(text=fix)


def _report(sudo: bool, *findings: Finding) -> Report:
    check = CheckResult(
        code="VKP002", family="packages", title="t", status=CheckStatus.RAN, findings=findings
    )
    return Report(vkdoctor_version="0", host=HOST, checks=(check,), sudo=sudo)


def test_every_renderer_shows_root_as_the_report_says() -> None:
    f = Finding(
        code="VKP002",
        severity=Severity.FAIL,
        title="lavapipe needs libz.so.1: package skew",
        message="zlib1g lists libz.so.1, but the file is gone; sudo is no help here. Fix: sudo "
        "apt install --reinstall zlib1g.",
        remedy=Remedy(commands=("apt install --reinstall zlib1g",), needs_root=True),
    )
    for sudo in (True, False):
        report = _report(sudo, f)
        line = ("sudo " if sudo else "") + "apt install --reinstall zlib1g"
        doc = report.as_dict()
        validate_report(doc)
        (found,) = doc["findings"]
        assert found["remedy"] == line
        assert found["fix"] == {"commands": ["apt install --reinstall zlib1g"], "needs_root": True}
        # the message repeats the command as the fix shows it; the prose keeps its word
        assert found["message"].endswith(f"sudo is no help here. Fix: {line}.")
        out = text_render.render(report, style=text_render.Style())
        assert f"      fix: {line}" in out.splitlines()
        assert out.count("apt install --reinstall zlib1g") == 1
        assert f"Fix: {line}" in junit.render(report)
        assert f"Fix: {line}" in "\n".join(github.annotation_lines(report))


def test_a_fix_is_printed_once_when_another_runs_all_its_commands() -> None:
    big = Finding(
        code="VKP002",
        severity=Severity.FAIL,
        title="skew",
        remedy=Remedy(
            commands=("apt update", "apt --fix-broken install", "apt full-upgrade"),
            needs_root=True,
        ),
    )
    small = Finding(
        code="VKP003",
        severity=Severity.WARN,
        title="held",
        remedy=Remedy(commands=("apt update", "apt full-upgrade"), needs_root=True),
    )
    other = Finding(
        code="VKP004",
        severity=Severity.WARN,
        title="other",
        remedy=Remedy(commands=("apt full-upgrade", "apt autoremove"), needs_root=True),
    )
    owners = text_render.fix_owners([small, other, big])
    assert owners[id(small)] is big and owners[id(big)] is big and owners[id(other)] is other
    out = text_render.render(_report(False, small, other, big), style=text_render.Style())
    assert "      fix: see VKP002 below" in out.splitlines()
    assert "      fix: apt update && apt --fix-broken install && apt full-upgrade" in (
        out.splitlines()
    )
