"""The text people read: a healthy check on one screen, failures last with the verdict naming
them, every line within the width (COLUMNS, a real terminal's), and a first failing run that
says how to find the library it misses. Real runs: the machine as it is, and the seed's
lavapipe (libLLVM.so.23.1 only in a private folder) on the real loader."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import overlay_lab as lab
from tests.conftest import HOST, REPO, clean_env, read_pty, run_vkdoctor, validate_report

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
FAMILIES = (
    "Host",
    "Drivers",
    "Layers",
    "Libraries",
    "Packages",
    "Container",
    "Disk",
    "Environment",
    "Load",
    "Overlay",
    "Compute",
)


@dataclass(frozen=True)
class Lab:
    root: Path
    driver: Path
    manifest: Path
    llvm_dir: Path

    def env(self, cache: Path, **extra: str) -> dict[str, str]:
        return {"VK_DRIVER_FILES": str(self.manifest), "XDG_CACHE_HOME": str(cache), **extra}


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    """lavapipe built against libLLVM.so.23.1, which only a private folder holds."""
    root = tmp_path_factory.mktemp("layout-seed")
    drv = root / "drv" / "libvulkan_lvp.so"
    drv.parent.mkdir()
    drv.write_bytes(lab.LVP.read_bytes())
    lab.run(["patchelf", "--replace-needed", "libLLVM-15.so.1", lab.NEW_LLVM, str(drv)])
    llvm_dir = root / "opt" / "x" / "lib"
    llvm_dir.mkdir(parents=True)
    lab.run(["cp", str(lab.SYSTEM_LLVM), str(llvm_dir / lab.NEW_LLVM)])
    lab.run(["patchelf", "--set-soname", lab.NEW_LLVM, str(llvm_dir / lab.NEW_LLVM)])
    return Lab(
        root=root, driver=drv, manifest=lab.manifest(root / "lvp.json", drv), llvm_dir=llvm_dir
    )


def _run(
    args: list[str], tmp_path: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The text on stdout and the JSON report of the same run (--json FILE)."""
    report = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    proc = run_vkdoctor([*args, "--json", str(report)], env=env)
    doc = json.loads(report.read_text())
    validate_report(doc)
    return proc, doc


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _verdict(text: str) -> str:
    """The verdict, its wrapped lines joined: from the last line that starts with vkdoctor:."""
    lines = text.rstrip("\n").splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("vkdoctor: "))
    return " ".join(line.strip() for line in lines[start:])


def _in_terminal(args: list[str], columns: int, env: dict[str, str]) -> str:
    """vkdoctor ARGS on a real pty `columns` wide (no COLUMNS), as the terminal shows it."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    full = clean_env({"PYTHONPATH": str(REPO), "TERM": "xterm", **env})
    full.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "vkdoctor", *args],
        stdin=child,
        stdout=child,
        stderr=child,
        env=full,
        cwd=REPO,
    )
    os.close(child)
    try:
        data = read_pty(main, proc, timeout=240)
    finally:
        os.close(main)
    return ANSI.sub("", data.decode().replace("\r\n", "\n"))


def test_a_healthy_check_fits_one_screen(tmp_path: Path) -> None:
    proc, doc = _run(["check"], tmp_path, COLUMNS="80")
    text = proc.stdout
    assert proc.returncode == 0 and doc["status"] == "ok", text + proc.stderr
    lines = text.splitlines()
    assert len(lines) <= 30, text
    assert _widest(text) <= 80, text
    assert lines[-1] == "vkdoctor: OK"
    # one line per area, each fine
    families = list(dict.fromkeys(c["family"] for c in doc["checks"]))
    heads = [line for line in lines if re.match(r"^  [✓·] [A-Z]", line)]
    assert [h.split()[1] for h in heads] == [f.capitalize() for f in families]
    assert set(FAMILIES) <= {h.split()[1] for h in heads}
    # the compute line: the adapter the probe used and its figure
    compute = "\n".join(lines[lines.index(next(h for h in heads if "Compute" in h)) :])
    compute = " ".join(compute.split("\n  (-v")[0].split())
    assert doc["probe"]["adapter"]["name"] in compute
    cases = len(doc["probe"]["cases"])
    assert f"{cases} RMSNorm cases within 1e-05" in compute
    # no single check in the short form
    assert not re.search(r"\bVK[A-Z][0-9]{3}\b", text), text
    assert "(-v lists every check)" in text


def test_verbose_lists_every_check(tmp_path: Path) -> None:
    proc, doc = _run(["check", "-v"], tmp_path, COLUMNS="80")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for c in doc["checks"]:
        assert re.search(rf"^  . {c['code']} ", proc.stdout, re.M), c["code"]
    assert "Probe\n" in proc.stdout and "RMSNorm (tolerance" in proc.stdout
    assert _widest(proc.stdout) <= 80


def test_a_failing_verbose_check_ends_with_each_failure_and_its_fix(
    seed: Lab, tmp_path: Path
) -> None:
    """-v lists every check, area by area, and the probe: a thousand lines. It ends, as the
    short report does, with the failures and their fixes right above the verdict, the deepest
    cause first, each with its consequences under it."""
    env = seed.env(tmp_path / "cache", COLUMNS="80")
    proc, doc = _run(["check", "--cpu", "-v"], tmp_path, **env)
    text = proc.stdout
    assert proc.returncode == 1, text + proc.stderr
    assert _widest(text) <= 80, text
    body = text[: text.rindex("\nvkdoctor: ")]
    recap = body[body.rindex("\nFailures (the reasons are above, under each area)\n") :]
    assert body.index("\nProbe\n") < body.index(recap)
    failed = [f for f in doc["findings"] if f["severity"] in ("fail", "error")]
    heads = re.findall(r"^  ✗ (VK[A-Z][0-9]{3}) ", recap, re.M)
    assert heads == [f["code"] for f in failed]
    (vkl,) = [f for f in failed if f["code"] == "VKL002"]
    (vkr,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert " ".join(recap[recap.index("fix: ") :].split()) == (
        f"fix: {vkl['remedy']} consequences: VKR001 {vkr['title']}"
    )


def test_a_healthy_check_in_a_real_terminal_uses_its_width() -> None:
    text = _in_terminal(["check"], 72, {})
    lines = text.splitlines()
    assert lines[-1] == "vkdoctor: OK", text
    assert len(lines) <= 30, text
    assert _widest(text) <= 72, text


def test_the_first_failing_run_ends_with_the_cause_and_how_to_find_the_library(
    seed: Lab, tmp_path: Path
) -> None:
    proc, doc = _run(["check", "--cpu"], tmp_path, **seed.env(tmp_path / "cache", COLUMNS="80"))
    text = proc.stdout
    assert proc.returncode == 1, text + proc.stderr
    assert _widest(text) <= 80, text
    failed = [f for f in doc["findings"] if f["severity"] == "fail"]
    # one cause, one failure: the probe's "no adapter" follows from VKL002 (information)
    assert [f["code"] for f in failed] == ["VKL002"]
    (vkr,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert vkr["severity"] == "info"
    # the verdict names each failure with its one-line cause
    (vkl,) = failed
    assert _verdict(text) == (
        f"vkdoctor: FAIL: VKL002 {vkl['title']}; probe no-adapter (VKL002's consequence); "
        "2 warning(s)"
    )
    assert vkl["title"] == "libLLVM.so.23.1 missing (needed by libvulkan_lvp.so)"
    # failures come last, the deepest cause (VKL002) first, with its fix and its consequence
    body = text[: text.rindex("\nvkdoctor: ")]
    # the first heading says where the reasons are
    assert body.index("\nWarnings (vkdoctor explain CODE: why, and other ways to fix)\n") < (
        body.index("\nFailures\n")
    )
    last = body[body.rindex("\n  ✗ ") :]
    assert last.startswith(f"\n  ✗ VKL002 {vkl['title']}")
    fix = " ".join(last[last.index("fix: ") :].split())
    assert fix == f"fix: {vkl['remedy']} consequences: VKR001 {vkr['title']}"
    # where it looked, and how to search: the command and one sentence
    assert "Looked in: ld.so.cache; system directories" in vkl["message"]
    assert vkl["remedy"].startswith(
        "`find / -name 'libLLVM*23*' -not -path '*/vkdoctor/overlays/*' 2>/dev/null`, then "
    )
    assert "`vkdoctor check --search-path DIR`" in vkl["remedy"]
    assert vkl["remedy"].count(". ") == 0
    # VKO001 gives the same fix: printed once, referred to
    (vko,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    assert vko["remedy"] == vkl["remedy"]
    assert text.count("find / -name") == 1
    assert "fix: see VKL002 below" in text
    # what the fix says, done: the find (over the lab, not the whole machine) gives the folder,
    # and the run with it passes under the overlay
    find = vkl["remedy"].split("`")[1].replace("find / ", f"find {seed.root} ")
    found = subprocess.run(["sh", "-c", find], capture_output=True, text=True, check=False)
    folders = {str(Path(p).parent) for p in found.stdout.split()}
    assert folders == {str(seed.llvm_dir)}
    proc, doc = _run(
        ["check", "--cpu", "--search-path", str(seed.llvm_dir)],
        tmp_path,
        **seed.env(tmp_path / "cache", COLUMNS="80"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _verdict(proc.stdout) == (
        "vkdoctor: OK with warnings: 2 warning(s); only under the overlay: run your programs as "
        f"vkdoctor exec --search-path {seed.llvm_dir} -- CMD"
    )
    assert _widest(proc.stdout) <= 80


def test_a_failing_check_in_a_real_terminal(seed: Lab, tmp_path: Path) -> None:
    text = _in_terminal(["check", "--no-probe"], 80, seed.env(tmp_path / "cache"))
    assert _widest(text) <= 80, text
    assert _verdict(text).startswith(
        "vkdoctor: FAIL: VKL002 libLLVM.so.23.1 missing (needed by libvulkan_lvp.so)"
    ), text
    assert (
        " ".join(text.split()).count(
            "find / -name 'libLLVM*23*' -not -path '*/vkdoctor/overlays/*' 2>/dev/null"
        )
        == 1  # one fix, however the terminal's width wrapped it
    )


@pytest.mark.parametrize("columns", [80, 60])
def test_drivers_and_run_probe_fit_the_width(seed: Lab, tmp_path: Path, columns: int) -> None:
    for args, env in (
        (["drivers"], {}),
        (["drivers"], seed.env(tmp_path / "cache")),
        (["run-probe", "--cpu"], {}),
        (["run-probe", "--cpu", "-v"], {}),
    ):
        proc = run_vkdoctor(args, env={**env, "COLUMNS": str(columns)})
        assert _verdict(proc.stdout).startswith("vkdoctor: "), proc.stdout
        assert _widest(proc.stdout) <= columns, (args, proc.stdout)


def test_bench_fits_the_width() -> None:
    proc = run_vkdoctor(
        ["bench", "--cpu", "--sizes", "64x256", "--repeat", "2"], env={"COLUMNS": "60"}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _widest(proc.stdout) <= 60, proc.stdout


def test_piped_without_columns_lines_are_whole() -> None:
    """A log or a tool reading the pipe gets each message on one line, as before."""
    proc = run_vkdoctor(["check", "--no-probe", "-v", "--select", "VKL005"])
    assert any(len(line) > 80 for line in proc.stdout.splitlines()), proc.stdout


def test_paths_are_shortened_in_the_middle_never_cut() -> None:
    from vkdoctor.render.wrap import fit, shorten_path

    path = "/work/a-long-checkout/.venv/lib/python3.11/site-packages/wgpu/resources/libwgpu.so"
    short = shorten_path(path, 50)
    assert len(short) == 50 and short.endswith("…/libwgpu.so") and path.startswith(short[:37])
    assert shorten_path("no-slash-" * 10, 20) == "no-slash-" * 10
    text = fit(f"      path: {path}\n  fine", 60)
    assert text.splitlines() == ["      path:", f"          {shorten_path(path, 50)}", "  fine"]
    assert fit("x " * 50, None) == "x " * 50


def test_the_verdict_is_one_line_whatever_a_title_holds() -> None:
    """A soname is the ELF's own string: a line break in it must not make a second line (under
    --format github, one starting with :: would be a workflow command)."""
    from vkdoctor.model import CheckResult, CheckStatus, Finding, Report, Severity
    from vkdoctor.render.text import Style, verdict

    bad = Finding(code="VKL002", severity=Severity.FAIL, title="lib\n::error::x.so\x1b missing.")
    checks = tuple(
        CheckResult(
            code=f"VKL00{i}", family="libraries", title="t", status=CheckStatus.RAN, findings=(bad,)
        )
        for i in range(6)
    )
    report = Report(vkdoctor_version="0", host=HOST, checks=checks)
    line = verdict(report, style=Style())
    assert line == (
        "vkdoctor: FAIL: "
        + "; ".join(["VKL002 lib\\x0a::error::x.so\\x1b missing"] * 4)
        + "; and 2 more failure(s)"
    )
    wrapped = verdict(report, style=Style(width=60))
    assert max(len(x) for x in wrapped.splitlines()) <= 60
    assert " ".join(x.strip() for x in wrapped.splitlines()) == line


def test_an_area_whose_failure_another_check_explains_does_not_claim_it_is_fine() -> None:
    """VKL002 turned into information (VKP002 gives the cause): the Libraries line names it, it
    never says the libraries resolve; the failure is VKP002's, in Failures, named by the verdict."""
    from vkdoctor.model import CheckResult, CheckStatus, Finding, Remedy, Report, Severity
    from vkdoctor.render.text import Style, render

    def result(code: str, family: str, *findings: Finding) -> CheckResult:
        return CheckResult(
            code=code, family=family, title="t", status=CheckStatus.RAN, findings=findings
        )

    vkl1 = Finding(code="VKL001", severity=Severity.INFO, title="lvp.json", message="found, but")
    vkl2 = Finding(
        code="VKL002",
        severity=Severity.INFO,
        title="libLLVM.so.23.1 missing: VKP002 gives the cause",
    )
    vkp2 = Finding(
        code="VKP002",
        severity=Severity.FAIL,
        title="lavapipe needs libLLVM.so.23.1: package skew",
        message="mesa was upgraded without LLVM.",
        remedy=Remedy(commands=("pacman -Syu",), needs_root=True),
    )
    report = Report(
        vkdoctor_version="0",
        host=HOST,
        checks=(
            result("VKL001", "libraries", vkl1),
            result("VKL002", "libraries", vkl2),
            result("VKP002", "packages", vkp2),
        ),
    )
    text = render(report, style=Style(width=80))
    lines = text.splitlines()
    assert lines[0] == "  · Libraries  VKL002 libLLVM.so.23.1 missing: VKP002 gives the cause"
    assert lines[1] == "  ✗ Packages   VKP002 failed (below)"
    assert "resolve" not in text
    assert lines[-4:] == [
        "      mesa was upgraded without LLVM.",
        "      fix: sudo pacman -Syu",
        "",
        "vkdoctor: FAIL: VKP002 lavapipe needs libLLVM.so.23.1: package skew",
    ]


def test_an_indented_line_keeps_its_indent_when_it_wraps() -> None:
    from vkdoctor.render.text import _indent

    text = "head line\n  forces on VK_LAYER_X: in every application (/a/very/long/path/x.json)"
    out = _indent(text, "      ", 50).splitlines()
    assert out[0] == "      head line"
    assert out[1].startswith("        forces on") and len(out) >= 3
    assert all(line.startswith("        ") for line in out[1:]), out
