"""vkdoctor's children never load a driver or implicit layer another user could have chosen.

Done for real: a second user (made with useradd) owns a home whose loader folders hold a driver
manifest and an implicit layer manifest, each naming a library (built with gcc) whose
constructor writes a marker file. vkdoctor runs as root with that HOME (what `sudo -E` keeps;
an XDG_DATA_DIRS entry of theirs does the same). Before, the load test and the probe dlopened
both, as root, while the report itself warned that the folder was the other user's.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import run_vkdoctor

from tests.elfbuild import build_lib

ATTACKER = "vkdoctor-mallory"


@pytest.fixture(scope="module")
def attacker() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(ATTACKER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", ATTACKER], check=True)
        return pwd.getpwnam(ATTACKER)


def _constructor(marker: Path, entry: str) -> str:
    return (
        "#include <stdio.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void planted(void) {\n"
        f'  FILE *f = fopen("{marker}", "a"); if (f) {{ fprintf(f, "uid=%d\\n", (int)getuid()); '
        "fclose(f); }\n}\n"
        f"void *{entry}(void *i, const char *n) {{ (void)i; (void)n; return 0; }}\n"
    )


def _plant(home: Path, marker: Path) -> None:
    """The other user's loader folders: one driver, one implicit layer, each with a constructor."""
    share = home / ".local/share/vulkan"
    icd = build_lib(
        home / "lib/libplanted_icd.so", source=_constructor(marker, "vk_icdGetInstanceProcAddr")
    )
    layer = build_lib(
        home / "lib/libplanted_layer.so", source=_constructor(marker, "vkGetInstanceProcAddr")
    )
    (share / "icd.d").mkdir(parents=True)
    (share / "implicit_layer.d").mkdir(parents=True)
    (share / "icd.d/planted.json").write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(icd), "api_version": "1.3.0"},
            }
        )
    )
    (share / "implicit_layer.d/planted.json").write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "layer": {
                    "name": "VK_LAYER_PLANTED",
                    "type": "GLOBAL",
                    "library_path": str(layer),
                    "api_version": "1.3.0",
                    "implementation_version": "1",
                    "description": "planted",
                    "disable_environment": {"DISABLE_PLANTED": "1"},
                },
            }
        )
    )


def _owned_by(top: Path, user: pwd.struct_passwd) -> None:
    for p in [top, *top.rglob("*")]:
        os.lchown(p, user.pw_uid, user.pw_gid)


def test_another_users_driver_and_layer_are_never_loaded(
    attacker: pwd.struct_passwd, tmp_path: Path
) -> None:
    marker = tmp_path / "ran-as-root"
    home = tmp_path / "home"
    _plant(home, marker)
    _owned_by(home, attacker)
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = run_vkdoctor(["check", "--no-probe", "--json", "-"], env=env, timeout=300)
    assert not marker.exists(), marker.read_text()
    report = json.loads(proc.stdout)
    failed = {f["code"]: f["title"] for f in report["findings"] if f["severity"] == "fail"}
    assert "another user's code: not loaded" in failed.get("VKT001", ""), failed
    assert "another user's code: not loaded" in failed.get("VKT003", ""), failed
    assert proc.returncode == 1
    probe = run_vkdoctor(["run-probe", "--cpu", "--json", "-"], env=env, timeout=300)
    assert not marker.exists(), marker.read_text()
    # the probe itself passes on lavapipe without them, but that is no pass for the programs
    # run here, which load them: a preflight must not go green on it
    doc = json.loads(probe.stdout)
    assert doc["probe"]["status"] == "pass"
    left = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert [f["evidence"]["left_out"] for f in left] == [
        {"DISABLE_PLANTED": "1", "VK_LOADER_DRIVERS_DISABLE": "planted.json"}
    ]
    assert probe.returncode == 1


def test_the_same_files_of_roots_own_are_loaded(tmp_path: Path) -> None:
    """The oracle that the planted code runs when loaded: the same home, root's own."""
    marker = tmp_path / "ran"
    home = tmp_path / "home"
    _plant(home, marker)
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run_vkdoctor(["check", "--no-probe", "--select", "VKT"], env=env, timeout=300)
    assert marker.read_text().startswith("uid=0")
    shutil.rmtree(home)
