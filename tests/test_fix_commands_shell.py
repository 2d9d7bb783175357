"""A fix is pasted into a shell, often root's: names and paths from manifests never reach it as
shell syntax.

Done for real: a tree whose implicit layers name a disable_environment variable, a layer name
and a manifest file name made of shell syntax (`;`, `$(...)`, backquotes, quotes). Before, the fix
read `export A;touch PWNED;B $(id)=1` and the report said to run it in this shell. Every command
the report gives is run here with bash (in an empty folder): none may run anything.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from conftest import run_vkdoctor

from vkdoctor.model.shellwords import export_command, unset_command

EVIL = "A;touch PWNED-1;B $(touch PWNED-2)`touch PWNED-3`'\""


def _layer(path: Path, *, name: str, disable: str, library: str) -> None:
    path.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "layer": {
                    "name": name,
                    "type": "GLOBAL",
                    "library_path": library,
                    "api_version": "1.3.0",
                    "implementation_version": "1",
                    "description": "x",
                    "disable_environment": {disable: "1`touch PWNED-4`"},
                },
            }
        )
    )


def test_no_fix_command_runs_what_a_manifest_says(tmp_path: Path) -> None:
    root = tmp_path / "root"
    layers = root / "usr/share/vulkan/implicit_layer.d"
    layers.mkdir(parents=True)
    _layer(layers / "gone.json", name="VK_LAYER_GONE", disable=EVIL, library="/usr/lib/libgone.so")
    _layer(
        layers / "named.json",
        name="VK_LAYER_$(touch PWNED-5)",
        disable="OK_NAME",
        library="/usr/lib/libnamed.so",
    )
    odd = "x;touch PWNED-6;$(touch PWNED-7)'q `touch PWNED-8`.json"
    _layer(layers / odd, name="VK_LAYER_ODD", disable=EVIL, library="/usr/lib/libodd.so")
    proc = run_vkdoctor(["check", "--root", str(root), "--no-probe", "--json", "-"], timeout=120)
    report = json.loads(proc.stdout)
    commands = [c for f in report["findings"] if f.get("fix") for c in f["fix"]["commands"]]
    texts = [f.get("remedy") or "" for f in report["findings"]]
    assert commands, report["findings"]
    assert any("VK_LOADER_LAYERS_DISABLE=" in t for t in texts), texts
    sandbox = tmp_path / "sandbox"
    for command in commands:
        if not command.startswith(("export ", "unset ")):
            continue  # rm and package commands change things; their words are checked below
        sandbox.mkdir()
        subprocess.run(["bash", "-c", command], cwd=sandbox, check=False, capture_output=True)
        assert list(sandbox.iterdir()) == [], command
        shutil.rmtree(sandbox)
    for command in commands:
        # every other command's words as bash reads them (`set --` runs nothing of its own):
        # a `;`, `$(...)` or backquote outside quotes would run here
        sandbox.mkdir()
        subprocess.run(["bash", "-c", f"set -- {command}"], cwd=sandbox, check=False)
        assert list(sandbox.iterdir()) == [], command
        shutil.rmtree(sandbox)


def test_export_and_unset_commands_quote_values_and_refuse_odd_names() -> None:
    assert export_command("GOOD_1", "a b$(x)") == "export GOOD_1='a b$(x)'"
    assert export_command("GOOD", "1") == "export GOOD=1"
    for name in (EVIL, "1ABC", "A-B", "A=B", "", "A B"):
        assert export_command(name, "1") is None
        assert unset_command(name) is None
    assert unset_command("VK_ICD_FILENAMES") == "unset VK_ICD_FILENAMES"


def test_a_soname_from_an_elf_file_stays_a_word_of_the_find_command(tmp_path: Path) -> None:
    """DT_NEEDED names come from the library (a tree's, a driver's): the `find` a missing one's
    fix gives was `-name '{glob}'`, which a `'` in the name closed."""
    from vkdoctor.model.sonames import find_remedy

    text = find_remedy("libx'$(touch PWNEDx)'y.so.1", "vkdoctor overlay")
    command = text.split("`")[1]
    assert command.startswith("find / -name ")
    subprocess.run(["bash", "-c", f"set -- {command}"], cwd=tmp_path, check=False)
    assert list(tmp_path.iterdir()) == [], command
