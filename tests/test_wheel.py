"""The package: a wheel built from this repository works on its own, installed outside it.

The wheel is built from the sdist, as `python -m build` does, with the build backend of the test
environment (`--no-isolation`: hatchling is in the test extra, so the build downloads nothing), and
installed with its dependencies into a fresh virtual environment (no system site-packages) in a
temporary folder. pip takes the dependencies from its cache or the configured index, like a user's
`pip install`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, clean_env, validate_report

import vkdoctor
from vkdoctor.commands.explain import composed, for_terminal


def _run(cmd: list[str], *, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = clean_env({"PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    env.pop("COLUMNS", None)
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _tracked(folder: str) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", folder], cwd=REPO, capture_output=True, text=True, check=True
    )
    return [line for line in out.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = _run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(REPO),
        ],
        cwd=out,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (whl,) = out.glob("*.whl")
    return whl


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("fresh")
    env_dir = home / "venv"
    proc = _run([sys.executable, "-m", "venv", str(env_dir)], cwd=home)
    assert proc.returncode == 0, proc.stderr
    cfg = (env_dir / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg
    proc = _run(
        [
            str(env_dir / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--prefer-binary",
            str(wheel),
        ],
        cwd=home,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return env_dir


def test_wheel_is_named_by_the_one_version_and_holds_shaders_probes_docs_and_schema(wheel: Path):
    init = (REPO / "vkdoctor" / "__init__.py").read_text()
    (version,) = re.findall(r'^__version__ = "([^"]+)"$', init, re.M)
    assert version == vkdoctor.__version__
    assert wheel.name == f"vkdoctor-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = z.read(f"vkdoctor-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    runtime = {
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    for dep in ("click>=", "distro>=1.9", "numpy>=", "wgpu>=0.32"):
        assert any(r.startswith(dep) for r in runtime), dep
    # test oracles only: the runtime imports neither
    assert not any(r.startswith(("psutil", "pyelftools")) for r in runtime)
    expected = {
        "vkdoctor/data/report.schema.json",
        "vkdoctor/data/gpu_bandwidth.json",
        "vkdoctor/__main__.py",
    }
    for src, dest in (
        ("shaders", "_shaders"),
        ("probes", "_probes"),
        ("docs/codes", "_docs/codes"),
    ):
        files = _tracked(src)
        assert files, f"nothing tracked under {src}/"
        expected |= {f"vkdoctor/{dest}/{Path(f).relative_to(src)}" for f in files}
    assert expected - names == set()
    assert not [n for n in names if n.startswith(("tests/", "vkdoctor/tests/", ".ci/"))]


def test_wheel_metadata_has_license_classifiers_keywords_and_no_placeholder_url(wheel: Path):
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    with zipfile.ZipFile(wheel) as z:
        info = f"vkdoctor-{vkdoctor.__version__}.dist-info"
        metadata = z.read(f"{info}/METADATA").decode()
        license_text = z.read(f"{info}/licenses/LICENSE").decode()
    fields: dict[str, list[str]] = {}
    for line in metadata.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(": ")
        fields.setdefault(key, []).append(value)
    assert project["license"] == "MIT"
    assert fields["License-Expression"] == ["MIT"]
    assert fields["License-File"] == ["LICENSE"]
    assert license_text == (REPO / "LICENSE").read_text()
    assert license_text.startswith("MIT License\n\nCopyright (c) 2026 the vkdoctor authors\n")
    assert "Permission is hereby granted, free of charge" in license_text
    assert fields["Classifier"] == project["classifiers"]
    assert "Operating System :: POSIX :: Linux" in fields["Classifier"]
    assert not [
        c for c in fields["Classifier"] if c.startswith("License ::")
    ]  # the expression says it
    assert fields["Keywords"] == [",".join(sorted(project["keywords"]))]
    assert "vulkan" in project["keywords"]
    # no public repository yet: no project URL rather than one that points nowhere
    assert "Project-URL" not in fields and "Home-page" not in fields
    assert "urls" not in project
    assert fields["Author"] == ["the vkdoctor authors"]


def test_installed_wheel_runs_outside_the_repository(venv: Path, tmp_path: Path):
    py = str(venv / "bin" / "python")
    where = _run(
        [
            py,
            "-c",
            "import vkdoctor, vkdoctor.resources as r; "
            "print(vkdoctor.__file__); print(r.shaders_dir()); print(r.probes_dir()); "
            "print(r.codes_dir())",
        ],
        cwd=tmp_path,
    )
    assert where.returncode == 0, where.stderr
    site = str(venv / "lib")
    for line in where.stdout.splitlines():
        assert line.startswith(site), f"{line} is not from the installed wheel"
        assert Path(line).exists(), line

    version = _run([py, "-m", "vkdoctor", "--version"], cwd=tmp_path)
    assert (
        version.returncode == 0
        and version.stdout.splitlines()[0] == f"vkdoctor:      {vkdoctor.__version__}"
    )

    explain = _run([str(venv / "bin" / "vkdoctor"), "explain", "VKH001"], cwd=tmp_path)
    assert explain.returncode == 0, explain.stderr
    page = (REPO / "docs" / "codes" / "VKH001.md").read_text().strip()
    # piped, without COLUMNS (_run drops it): 80 columns
    assert explain.stdout == for_terminal(composed("VKH001", page))
    assert explain.stdout.startswith("VKH001: Host\n")

    # shell completion of the finding codes from the console script
    complete = _run(
        [
            "env",
            "_VKDOCTOR_COMPLETE=bash_complete",
            "COMP_WORDS=vkdoctor check --select VKH00",
            "COMP_CWORD=3",
            str(venv / "bin" / "vkdoctor"),
        ],
        cwd=tmp_path,
    )
    assert complete.returncode == 0, complete.stderr
    assert complete.stdout.split() == ["plain,VKH001", "plain,VKH002"]

    report = tmp_path / "report.json"
    check = _run(
        [str(venv / "bin" / "vkdoctor"), "check", "--no-probe", "--json", str(report)],
        cwd=tmp_path,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    doc = json.loads(report.read_text())
    validate_report(doc)
    assert doc["status"] in ("ok", "warn")
    assert doc["host"]["python_executable"].startswith(str(venv))
    assert doc["vkdoctor_version"] == vkdoctor.__version__


def test_installed_wheel_runs_the_probe_on_lavapipe(venv: Path, tmp_path: Path):
    proc = _run(
        [str(venv / "bin" / "vkdoctor"), "run-probe", "--cpu", "--json", "-"],
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    validate_report(doc)
    probe = doc["probe"]
    assert probe["status"] == "pass"
    assert probe["backend"].lower() == "vulkan"
    assert "llvmpipe" in probe["adapter"]["name"]
    assert probe["cases"] and all(c["ok"] for c in probe["cases"])


def test_the_sdist_holds_what_the_readme_tells_users_to_run(tmp_path: Path) -> None:
    """The README (also the wheel's description) says `bash scripts/install.sh` and
    `bash scripts/test.sh`; an unpacked source archive must have them and what they read."""
    import re
    import tarfile

    build = [sys.executable, "-m", "build", "--sdist", "--no-isolation"]
    proc = _run([*build, "--outdir", str(tmp_path), str(REPO)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    readme = (REPO / "README.md").read_text()
    told = set(re.findall(r"\bbash (scripts/[\w.-]+)", readme))
    assert told >= {"scripts/install.sh", "scripts/test.sh"}, told
    for script in told:
        assert script in names, script
        # the files a script reads from the tree
        for used in re.findall(r"\.ci/[\w.-]+", (REPO / script).read_text()):
            assert used in names, (script, used)
