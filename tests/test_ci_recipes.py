"""The CI recipes in docs/ci/ run here: every vkdoctor command they hold, with the gate replaced by
`true`, so a recipe cannot drift from what vkdoctor accepts and does."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import junitparser
import yaml
from conftest import REPO, clean_env, run_vkdoctor, validate_report

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


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A `run:` block as GitHub Actions runs it: bash --noprofile --norc -eo pipefail."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_github_matrix_recipe_runs_here(tmp_path: Path):
    """Each runner of the matrix runs its preflight step (one of them with a driver whose
    library is missing), its report goes where upload + download-artifact put it, and the
    summary job's step runs on those: the job summary's table, the log, the exit status."""
    doc = yaml.safe_load((RECIPES / "github-actions-matrix.yml").read_text())
    preflight, final = doc["jobs"]["preflight"], doc["jobs"]["summary"]
    assert preflight["strategy"]["fail-fast"] is False
    assert final["needs"] == "preflight" and final["if"] == "always()"
    upload = next(s for s in preflight["steps"] if "upload-artifact" in str(s.get("uses")))
    assert upload["if"] == "always()" and upload["with"]["path"] == "vkdoctor.json"
    download = next(s for s in final["steps"] if "download-artifact" in str(s.get("uses")))
    assert download["with"] == {"pattern": "vkdoctor-*", "path": "reports"}
    installs = [
        s["run"] for job in (preflight, final) for s in job["steps"] if "pip" in s.get("run", "")
    ]
    assert installs == ["python -m pip install ./vkdoctor-src"] * 2

    # vkdoctor on PATH, as the pip line installs it
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "vkdoctor"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m vkdoctor "$@"\n')
    shim.chmod(0o755)
    base = clean_env({"PYTHONPATH": str(REPO)})
    base["PATH"] = f"{bindir}:{base.get('PATH', '/usr/bin:/bin')}"
    gone = tmp_path / "gone_icd.json"
    gone.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {
                    "library_path": str(tmp_path / "libvulkan_gone.so"),
                    "api_version": "1.3.0",
                },
            }
        )
    )
    # docs/ci.md shows these steps as they are in the recipe
    guide = (REPO / "docs" / "ci.md").read_text()
    for job in (preflight, final):
        for s in job["steps"]:
            for line in _lines(s.get("run", "")):
                if line.startswith("vkdoctor "):
                    assert f"run: {line}" in guide or f"          {line}\n" in guide, line
    steps = [s["run"] for s in preflight["steps"] if s.get("run", "").startswith("vkdoctor ")]
    assert steps == ["vkdoctor check --cpu --redact --format github --json vkdoctor.json"]
    runners = {
        "ubuntu-24.04-py3.12": ({}, 0),
        "ubuntu-22.04-py3.11": ({"VK_DRIVER_FILES": str(gone)}, 1),
    }
    for name, (env, want) in runners.items():
        work = tmp_path / name
        work.mkdir()
        proc = _bash(steps[0], work, {**base, **env})
        assert proc.returncode == want, proc.stdout + proc.stderr
        validate_report(json.loads((work / "vkdoctor.json").read_text()))
        artifact = upload["with"]["name"].replace("${{ matrix.os }}", name.split("-py")[0])
        artifact = artifact.replace("${{ matrix.python }}", name.split("-py")[1])
        assert artifact == f"vkdoctor-{name}"
        (tmp_path / "reports" / artifact).mkdir(parents=True)
        shutil.copy(work / "vkdoctor.json", tmp_path / "reports" / artifact / "vkdoctor.json")

    (step,) = [s for s in final["steps"] if "vkdoctor summary" in s.get("run", "")]
    summary = tmp_path / "step-summary.md"
    proc = _bash(step["run"], tmp_path, {**base, "GITHUB_STEP_SUMMARY": str(summary)})
    # a runner failed: so does the summary job, after writing the table and the log
    assert proc.returncode == 1, proc.stdout + proc.stderr
    md = summary.read_text()
    assert md.startswith("## vkdoctor summary: 1 of 2 machines failed\n")
    assert "| vkdoctor-ubuntu-22.04-py3.11 | debian 12 | none (no-adapter) | ❌ fail |" in md
    assert "| vkdoctor-ubuntu-24.04-py3.12 | debian 12 | llvmpipe" in md
    assert "- <code>VKD001</code> No Vulkan driver will load" in md
    assert proc.stdout.startswith("vkdoctor summary: 2 machines, 1 failed\n")
    assert "Why one fails where another passes:" in proc.stdout
    # the command it prints runs, and names the driver that is there on one runner only
    command = proc.stdout.split("Why one fails where another passes:\n")[1].replace("\\\n", " ")
    diff = _bash(command.strip(), tmp_path, base)
    assert diff.returncode == 1, diff.stderr
    assert "gone_icd.json is on B only: fails:" in " ".join(diff.stdout.split())
