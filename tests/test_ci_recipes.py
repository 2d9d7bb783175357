"""The CI recipes in docs/ci/ run here: every vkdoctor command they hold, with the gate replaced by
`true`, so a recipe cannot drift from what vkdoctor accepts and does."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import junitparser
import yaml
from conftest import REPO, run_vkdoctor, validate_report

RECIPES = REPO / "docs" / "ci"


def _lines(run: str) -> list[str]:
    return [line.strip() for line in run.splitlines() if line.strip()]


def github_commands(doc: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """(command line, env) for every `run:` line of every step, in order."""
    out = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            env = {**job.get("env", {}), **step.get("env", {})}
            out += [(line, env) for line in _lines(step.get("run", ""))]
    return out


def gitlab_commands(doc: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    out = []
    for job in doc.values():
        if not isinstance(job, dict) or "script" not in job:
            continue
        env = {k: str(v) for k, v in job.get("variables", {}).items()}
        for key in ("before_script", "script"):
            out += [(line, env) for entry in job.get(key, []) for line in _lines(entry)]
    return out


def run_recipe(
    commands: list[tuple[str, dict[str, str]]], workdir: Path, extra_env: dict[str, str]
):
    """Run the vkdoctor lines; the gate after `exec --` becomes `true`."""
    ran = []
    for line, env in commands:
        argv = shlex.split(line, comments=True)
        if argv[0] != "vkdoctor":
            continue
        if argv[1] == "exec":
            argv = [*argv[: argv.index("--") + 1], "true"]
        proc = run_vkdoctor(argv[1:], env={**env, **extra_env}, cwd=workdir)
        assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr
        ran.append(argv)
    return ran


def _installs(commands: list[tuple[str, dict[str, str]]]) -> str:
    return "\n".join(line for line, _ in commands)


def install_from_checkout(commands: list[tuple[str, dict[str, str]]], workdir: Path) -> None:
    """Run the recipe's pip line for real, with the checkout it names being this repository:
    it must build and install vkdoctor (into a folder here, offline: the test environment's
    build backend, no dependencies fetched)."""
    import subprocess
    import sys

    (line,) = [line for line, _ in commands if " pip install " in f" {line} "]
    argv = shlex.split(line, comments=True)
    assert argv[:4] == ["python", "-m", "pip", "install"], line
    (source,) = argv[4:]
    (workdir / source).symlink_to(REPO, target_is_directory=True)
    site = workdir / "site"
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation"),
            *("--no-deps", "--no-index", "--target", str(site), source),
        ],
        cwd=workdir,
        check=True,
        timeout=300,
    )
    where = subprocess.run(
        [sys.executable, "-c", "import vkdoctor; print(vkdoctor.__file__)"],
        cwd="/",
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert where.stdout.strip() == str(site / "vkdoctor" / "__init__.py")


def _check_reports(workdir: Path) -> None:
    doc = json.loads((workdir / "vkdoctor.json").read_text())
    validate_report(doc)
    assert doc["status"] in ("ok", "warn")
    xml = junitparser.JUnitXml.fromfile(str(workdir / "vkdoctor.xml"))
    names = {case.name for suite in xml for case in suite}
    assert "VKH001 Host" in names
    assert xml.failures == 0 and xml.errors == 0


def test_github_actions_recipe_runs_here(tmp_path: Path):
    doc = yaml.safe_load((RECIPES / "github-actions.yml").read_text())
    commands = github_commands(doc)
    text = _installs(commands)
    assert "apt-get install" in text and "mesa-vulkan-drivers" in text and "libvulkan1" in text
    # vkdoctor is not on PyPI: the checkout step names the path the pip line installs
    steps = doc["jobs"]["gate"]["steps"]
    (checkout,) = [s for s in steps if s.get("with", {}).get("path") == "vkdoctor-src"]
    assert checkout["uses"].startswith("actions/checkout@")
    install_from_checkout(commands, tmp_path)
    summary = tmp_path / "step-summary.md"
    ran = run_recipe(commands, tmp_path, {"GITHUB_STEP_SUMMARY": str(summary)})
    # the preflight comes before the gate, and both are there
    assert [a[1] for a in ran] == ["check", "exec"]
    check = ran[0]
    assert {"--cpu", "--format", "github", "--json", "--junit"} <= set(check)
    _check_reports(tmp_path)
    assert summary.read_text().startswith("## vkdoctor check: ")
    # the upload step names the files the preflight writes
    steps = doc["jobs"]["gate"]["steps"]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["if"] == "always()"
    assert set(_lines(upload["with"]["path"])) == {"vkdoctor.json", "vkdoctor.xml"}


def test_gitlab_recipe_runs_here(tmp_path: Path):
    doc = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text())
    commands = gitlab_commands(doc)
    text = _installs(commands)
    assert "mesa-vulkan-drivers" in text and "libvulkan1" in text
    assert 'git clone --depth 1 "$VKDOCTOR_GIT" vkdoctor-src' in text
    install_from_checkout(commands, tmp_path)
    ran = run_recipe(commands, tmp_path, {})
    assert [a[1] for a in ran] == ["check", "exec"]
    _check_reports(tmp_path)
    artifacts = doc["vulkan-compute-gate"]["artifacts"]
    assert artifacts["when"] == "always"
    assert artifacts["reports"]["junit"] == "vkdoctor.xml"
    assert set(artifacts["paths"]) == {"vkdoctor.json", "vkdoctor.xml"}
