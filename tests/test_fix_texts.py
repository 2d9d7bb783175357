"""Fix lines people can act on: the command(s) and at most one sentence (the reasons are in the
message and on the code's explain page), and a fix printed once per report, the other findings
saying "see CODE". Real runs: the machine as it is, lavapipe missing its libLLVM (the library only
in a private folder), the Arch, Debian and Fedora trees with a partial upgrade (built with the real
package tools, checked with --root), and an environment with broken variables."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pkgtrees import arch_skew_tree, debian_skew_tree, fedora_skew_tree

from tests import overlay_lab as lab
from tests.conftest import run_vkdoctor, validate_report

#: how a command starts (after "then"): a fix's sentences that start so are commands
COMMANDS = {
    "apt",
    "apt-get",
    "apt-mark",
    "chmod",
    "conda",
    "cp",
    "dnf",
    "docker",
    "dpkg",
    "export",
    "find",
    "ldconfig",
    "ln",
    "pacman",
    "patchelf",
    "pip",
    "ppa-purge",
    "rm",
    "rpm",
    "sudo",
    "unset",
    "vkdoctor",
}
#: a prose sentence longer than this is reasoning that belongs in the message
MAX_WORDS = 30


def sentences(fix: str) -> list[str]:
    """A fix's sentences: split after . ! ? and a space (paths and versions have no space after
    their dots)."""
    return [s for s in re.split(r"(?<=[.!?])\s+", fix.strip()) if s]


def is_command(sentence: str) -> bool:
    words = re.sub(r"^(then|and|or)\s+", "", sentence.strip("`"), flags=re.I).split()
    return bool(words) and words[0].strip("`(") in COMMANDS


def words(sentence: str) -> int:
    """Its words of prose: not paths, file names, variables or quoted commands."""
    return sum(1 for w in re.sub(r"`[^`]*`", "", sentence).split() if not re.search(r"[/._=$]", w))


def problems(fix: str) -> list[str]:
    """What is wrong with a fix text, by the rule (empty when nothing)."""
    prose = [s for s in sentences(fix) if not is_command(s)]
    out = []
    if len(prose) > 1:
        out.append(f"{len(prose)} sentences besides commands: {prose}")
    out += [f"{words(s)} words: {s!r}" for s in prose if words(s) > MAX_WORDS]
    return out


def test_the_rule_itself() -> None:
    # the rule fails what it must: the long package fix of old, two sentences of reasons
    old = (
        "sudo pacman -Syu. Upgrade everything together, never a single package (lib32-* "
        "packages come along when multilib is enabled). If the mirror does not carry the "
        "matching package yet, refresh or rank the mirrors first (reflector, pacman-mirrors), "
        "then -Syu; never `pacman -Sy <pkg>`, which makes the next partial upgrade."
    )
    assert problems(old)
    assert problems("Fix the manifest. Then run it again.")
    assert not problems(
        "sudo apt update && sudo apt --fix-broken install. Then sudo apt full-upgrade."
    )
    assert not problems("sudo ldconfig (rebuilds /etc/ld.so.cache)")
    assert not problems(
        "sudo apt install --reinstall libllvm15. If apt proposes to REMOVE the driver package, "
        "answer no (vkdoctor explain VKP008)."
    )


def fix_blocks(text: str) -> list[str]:
    """The fix lines of a text report, each with its continuation lines joined."""
    out: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("fix: "):
            indent = len(line) - len(line.lstrip())
            parts = [line.strip()[len("fix: ") :]]
            for more in lines[i + 1 :]:
                if more.startswith(" " * (indent + 2)) and more.strip():
                    parts.append(more.strip())
                else:
                    break
            out.append(" ".join(parts))
    return out


def runs(args: list[str], tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The JSON report of `check ARGS`, and its text at once and with -v (wide: no wrapping)."""
    tmp_path.mkdir(exist_ok=True)
    report = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    proc = run_vkdoctor(["check", *args, "--json", str(report)], env={"COLUMNS": "400", **env})
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    doc = json.loads(report.read_text())
    validate_report(doc)
    verbose = run_vkdoctor(["check", "-v", *args], env={"COLUMNS": "400", **env})
    assert verbose.returncode == proc.returncode, verbose.stdout + verbose.stderr
    return doc, [proc.stdout, verbose.stdout]


def assert_fixes_are_short_and_once(doc: dict[str, Any], texts: list[str]) -> list[str]:
    fixes = {f["code"]: f["remedy"] for f in doc["findings"] if f["remedy"]}
    bad = {code: problems(fix) for code, fix in fixes.items() if problems(fix)}
    assert not bad, json.dumps(bad, indent=1)
    for f in doc["findings"]:
        # the commands as data: never with sudo, and the printed fix runs them in order
        fix = f["fix"]
        if fix is not None:
            assert not any(c.startswith("sudo ") for c in fix["commands"]), f
            sudo = "sudo " if fix["needs_root"] and f["remedy"].startswith("sudo ") else ""
            assert f["remedy"].startswith(" && ".join(sudo + c for c in fix["commands"])), f
    printed = [f for f in doc["findings"] if f["remedy"] and f["severity"] in ("warn", "fail")]
    for text in texts:
        blocks = fix_blocks(text)
        # every fix that needs attention is on screen, itself or as a reference to one
        assert len(blocks) == len(printed), text
        said = [b for b in blocks if not b.startswith("see VK")]
        assert len(said) == len(set(said)), text
        for ref in (b for b in blocks if b.startswith("see VK")):
            code = ref.split()[1]
            assert code in fixes and fixes[code].rstrip(". ") in {s.rstrip(". ") for s in said}, (
                ref,
                text,
            )
    return list(fixes.values())


def test_a_healthy_machine_prints_no_fix(tmp_path: Path) -> None:
    doc, texts = runs(["--no-probe"], tmp_path, {})
    assert doc["status"] == "ok", texts[0]
    assert assert_fixes_are_short_and_once(doc, texts) == []
    assert not any(fix_blocks(t) for t in texts)


@pytest.fixture(scope="module")
def missing_llvm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lavapipe built against libLLVM.so.23.1, which only a private folder holds; its manifest."""
    root = tmp_path_factory.mktemp("fix-llvm")
    drv = root / "drv" / "libvulkan_lvp.so"
    drv.parent.mkdir()
    drv.write_bytes(lab.LVP.read_bytes())
    lab.run(["patchelf", "--replace-needed", "libLLVM-15.so.1", lab.NEW_LLVM, str(drv)])
    llvm_dir = root / "opt" / "x" / "lib"
    llvm_dir.mkdir(parents=True)
    lab.run(["cp", str(lab.SYSTEM_LLVM), str(llvm_dir / lab.NEW_LLVM)])
    return lab.manifest(root / "lvp.json", drv)


def test_lavapipe_missing_its_llvm(missing_llvm: Path, tmp_path: Path) -> None:
    env = {"VK_DRIVER_FILES": str(missing_llvm), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    doc, texts = runs(["--no-probe"], tmp_path, env)
    assert doc["status"] == "fail"
    codes = {f["code"] for f in doc["findings"] if f["severity"] == "fail"}
    assert "VKL002" in codes, texts[0]
    assert assert_fixes_are_short_and_once(doc, texts)


@pytest.mark.parametrize("build", [arch_skew_tree, debian_skew_tree, fedora_skew_tree])
def test_a_partial_upgrade_in_a_tree(build: Any, tmp_path: Path) -> None:
    root = build(tmp_path / "tree")
    doc, texts = runs(["--root", str(root), "--no-probe"], tmp_path / "out", {})
    assert doc["status"] == "fail"
    assert any(f["code"] == "VKP002" and f["severity"] == "fail" for f in doc["findings"])
    assert_fixes_are_short_and_once(doc, texts)
    # the siblings' fix (VKP003) is the upgrade VKP002's fix runs too (on Debian after its
    # --fix-broken): printed once, with VKP002, and referred to
    for text in texts:
        assert any(b.startswith("see VKP002 ") for b in fix_blocks(text)), text


def test_broken_variables(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    env = {
        "LD_LIBRARY_PATH": "::relative/lib",
        "LD_PRELOAD": "/nonexistent/libnothing.so",
        "VK_ICD_FILENAMES": "/nonexistent/icd.json",
        "VK_ADD_DRIVER_FILES": str(tmp_path / "empty"),
        "WGPU_BACKEND_TYPE": "Metal",
        "WGPU_ADAPTER_NAME": "no such adapter",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    doc, texts = runs(["--no-probe"], tmp_path / "out", env)
    assert doc["status"] == "fail"
    assert len([f for f in doc["findings"] if f["remedy"]]) >= 4, texts[0]
    assert_fixes_are_short_and_once(doc, texts)
