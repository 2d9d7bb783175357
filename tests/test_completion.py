"""Shell completion through click's protocol (the variables a shell's completion script sets),
and through real bash with the script `_VKDOCTOR_COMPLETE=bash_source vkdoctor` prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, clean_env

from vkdoctor.checks import REGISTRY
from vkdoctor.commands.explain import known_codes


@pytest.fixture(scope="module")
def bindir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `vkdoctor` on PATH that runs this checkout, as an installed console script would."""
    folder = tmp_path_factory.mktemp("bin")
    script = folder / "vkdoctor"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m vkdoctor "$@"\n')
    script.chmod(0o755)
    return folder


def _env(bindir: Path, **extra: str) -> dict[str, str]:
    env = clean_env({"PYTHONPATH": str(REPO), **extra})
    env["PATH"] = f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def _complete(bindir: Path, shell: str, words: list[str], incomplete: str) -> str:
    """What vkdoctor answers a shell asking for completions of `incomplete` after `words`."""
    line = " ".join(["vkdoctor", *words, incomplete])
    if shell == "fish":
        extra = {"COMP_WORDS": line, "COMP_CWORD": incomplete}
    else:
        extra = {"COMP_WORDS": line, "COMP_CWORD": str(len(words) + 1)}
    proc = subprocess.run(
        ["vkdoctor"],
        env=_env(bindir, _VKDOCTOR_COMPLETE=f"{shell}_complete", **extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def _bash_values(out: str) -> list[str]:
    pairs = [line.split(",", 1) for line in out.splitlines()]
    assert all(kind == "plain" for kind, _ in pairs), out
    return [value for _, value in pairs]


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_select_and_ignore_complete_the_check_codes(bindir: Path, option: str) -> None:
    expected = sorted(c.code for c in REGISTRY if c.code.startswith("VKL"))
    assert len(expected) > 1
    values = _bash_values(_complete(bindir, "bash", ["check", option], "VKL"))
    assert values == ["VKL", *expected]
    # the last of a comma-separated list, lower case as typed
    values = _bash_values(_complete(bindir, "bash", ["check", option], "VKD,vkl00"))
    assert values == [f"VKD,{c}" for c in expected]
    every = _bash_values(_complete(bindir, "bash", ["check", option], ""))
    assert {c.code for c in REGISTRY} <= set(every)
    assert "VKX000" not in every  # not a check: --select VKX000 is a usage error
    assert _complete(bindir, "bash", ["check", option], "VKQ").strip() == ""


def test_zsh_and_fish_get_each_codes_title(bindir: Path) -> None:
    titles = {c.code: c.title for c in REGISTRY}
    out = _complete(bindir, "zsh", ["check", "--select"], "VKH00").splitlines()
    triples = [out[i : i + 3] for i in range(0, len(out), 3)]
    assert triples == [["plain", code, titles[code]] for code in ("VKH001", "VKH002")]
    fish = _complete(bindir, "fish", ["check", "--ignore"], "VKH00").splitlines()
    assert fish == [f"plain,{code}\t{titles[code]}" for code in ("VKH001", "VKH002")]


def test_explain_completes_every_finding_code(bindir: Path) -> None:
    assert _bash_values(_complete(bindir, "bash", ["explain"], "VKX")) == ["VKX000"]
    every = _bash_values(_complete(bindir, "bash", ["explain"], "VK"))
    assert set(known_codes()) <= set(every)


def test_real_bash_completes_with_the_script_vkdoctor_prints(bindir: Path) -> None:
    script = (
        'eval "$(_VKDOCTOR_COMPLETE=bash_source vkdoctor)"\n'
        "complete -p vkdoctor\n"
        "for line in 'vkdoctor check --select VKT00' 'vkdoctor expl' 'vkdoctor check --no-pr'; do\n"
        '  read -ra COMP_WORDS <<< "$line"\n'
        "  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
        "  COMPREPLY=()\n"
        "  _vkdoctor_completion vkdoctor\n"
        '  echo "${COMPREPLY[*]}"\n'
        "done\n"
    )
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script],
        env=_env(bindir),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    registered, load, explain, no_probe = proc.stdout.splitlines()
    assert registered == "complete -o nosort -F _vkdoctor_completion vkdoctor"
    assert load.split() == sorted(c.code for c in REGISTRY if c.code.startswith("VKT00"))
    assert explain == "explain"
    assert no_probe == "--no-probe"
