"""Environment hazards (VKE), through the CLI with crafted environments, on real directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_json, vulkaninfo

from vkdoctor.checks import env as env_checks
from vkdoctor.model import Severity
from vkdoctor.model.context import Context
from vkdoctor.runner import run_checks

LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
DEVICE_SELECT = "/usr/share/vulkan/implicit_layer.d/VkLayer_MESA_device_select.json"


def findings(doc, code):
    return [f for f in doc["findings"] if f["code"] == code]


def test_ld_library_path_syntax_existence_and_writability(tmp_path: Path):
    world = tmp_path / "world"
    world.mkdir()
    world.chmod(0o777)
    foreign_group = tmp_path / "group"
    foreign_group.mkdir()
    os.chown(foreign_group, 0, 54321)
    foreign_group.chmod(0o775)
    foreign_owner = tmp_path / "owner"
    foreign_owner.mkdir()
    os.chown(foreign_owner, 54321, 0)
    private = tmp_path / "private"
    private.mkdir()
    value = (
        f":{tmp_path}/gone:rel/libs:{world}:{foreign_group}:{foreign_owner}:{private}:{world}/later"
    )
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKE00"],
        env={"LD_LIBRARY_PATH": value, "XDG_RUNTIME_DIR": "/run/user/0"},
    )
    assert proc.returncode == 0, proc.stderr

    syntax = findings(doc, "VKE001")
    assert [f["evidence"]["problem"] for f in syntax] == ["empty", "relative"]
    assert syntax[0]["severity"] == "warn" and "current directory" in syntax[0]["message"]
    assert syntax[0]["remedy"] == f"export LD_LIBRARY_PATH={value[1:]}"
    assert syntax[1]["evidence"]["entry"] == "rel/libs"

    # several empty entries are one finding; with nothing else left, the fix is unset
    _, only_empty = run_json(
        ["check", "--no-probe", "--select", "VKE001"], env={"LD_LIBRARY_PATH": "::"}
    )
    (empty,) = findings(only_empty, "VKE001")
    assert empty["title"] == "LD_LIBRARY_PATH has 3 empty entries (positions 1, 2, 3)"
    assert empty["evidence"]["positions"] == [1, 2, 3]
    assert empty["remedy"] == "unset LD_LIBRARY_PATH"

    missing = findings(doc, "VKE002")
    assert [f["evidence"]["entry"] for f in missing] == [f"{tmp_path}/gone", f"{world}/later"]
    assert {f["severity"] for f in missing} == {"info"}

    writable = {f["evidence"]["path"]: f for f in findings(doc, "VKE003")}
    ww = writable[str(world)]
    assert ww["severity"] == "warn" and ww["evidence"]["reasons"] == ["world-writable"]
    assert ww["evidence"]["owner"]["mode"] == "0o777" and ww["evidence"]["owner"]["user"] == "root"
    assert f"chmod go-w {world}" in ww["remedy"]
    assert writable[str(foreign_group)]["evidence"]["reasons"] == [
        "group-writable by group gid 54321"
    ]
    assert writable[str(foreign_owner)]["evidence"]["reasons"] == ["owned by uid 54321"]
    later = writable[f"{world}/later"]
    assert later["evidence"]["culprit"] == str(world) and later["evidence"]["exists"] is False
    assert "others can create it" in later["message"]
    assert str(private) not in writable and f"{tmp_path}/gone" not in writable

    assert findings(doc, "VKE007")[0]["severity"] == "ok"


def test_manifest_search_dirs_under_a_world_writable_dir(tmp_path: Path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKE003"],
        env={"XDG_DATA_DIRS": f"{shared}/share:/usr/share"},
    )
    writable = {f["evidence"]["path"]: f for f in findings(doc, "VKE003")}
    icd = writable[f"{shared}/share/vulkan/icd.d"]
    assert icd["evidence"]["purpose"] == "driver manifest directory"
    assert icd["evidence"]["culprit"] == str(shared)
    assert icd["evidence"]["reasons"] == ["world-writable (the sticky bit does not stop new files)"]
    assert f"{shared}/share/vulkan/implicit_layer.d" in writable
    # the system directories themselves are fine
    assert not [p for p in writable if p.startswith("/usr/share")]


def test_override_variables(tmp_path: Path):
    empty_dir = tmp_path / "no-manifests"
    empty_dir.mkdir()
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKE004", "--select", "VKE005"],
        env={
            "VK_DRIVER_FILES": f"{tmp_path}/absent.json:{LVP_MANIFEST}:{empty_dir}",
            "VK_ICD_FILENAMES": LVP_MANIFEST,
            "VK_ADD_DRIVER_FILES": "/opt/extra",
        },
    )
    (deprecated,) = findings(doc, "VKE004")
    assert deprecated["title"] == "VK_ICD_FILENAMES is set and ignored"
    assert deprecated["remedy"] == "unset VK_ICD_FILENAMES"
    entries = findings(doc, "VKE005")
    by_title = {f["title"]: f for f in entries}
    absent = by_title[f"VK_DRIVER_FILES entry {tmp_path}/absent.json does not exist"]
    assert absent["severity"] == "warn"
    assert [e["kind"] for e in absent["evidence"]["entries"]] == ["missing", "file", "directory"]
    assert (
        by_title[f"VK_DRIVER_FILES directory {empty_dir} holds no manifest"]["severity"] == "warn"
    )
    ignored = by_title["VK_ADD_DRIVER_FILES is ignored"]
    assert ignored["severity"] == "info" and ignored["evidence"]["override"] == "VK_DRIVER_FILES"


def test_override_that_leaves_no_driver_fails():
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKE004", "--select", "VKE005"],
        env={"VK_DRIVER_FILES": ""},
    )
    assert proc.returncode == 1
    (none,) = findings(doc, "VKE005")
    assert none["severity"] == "fail" and none["title"] == "VK_DRIVER_FILES leaves no driver"
    assert "VK_ERROR_INCOMPATIBLE_DRIVER" in none["message"]
    assert findings(doc, "VKE004")[0]["severity"] == "ok"
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKE004", "--select", "VKE005"],
        env={"VK_ICD_FILENAMES": "/nowhere/icd.json"},
    )
    (deprecated,) = findings(doc, "VKE004")
    assert deprecated["title"] == "VK_ICD_FILENAMES is deprecated"
    # renaming the variable would carry the mistake over: it names nothing
    assert deprecated["remedy"].startswith("unset VK_ICD_FILENAMES: it names no existing")
    (none,) = findings(doc, "VKE005")
    assert none["severity"] == "fail" and "/nowhere/icd.json (does not exist)" in none["message"]


def test_xdg_runtime_dir_unset_is_info_naming_device_select():
    proc, doc = run_json(["check", "--no-probe", "--select", "VKE007"])
    assert proc.returncode == 0
    (xdg,) = findings(doc, "VKE007")
    assert xdg["severity"] == "info"
    assert "harmless" in xdg["message"] and "libwayland-client" in xdg["message"]
    assert xdg["evidence"]["device_select_manifest"] == DEVICE_SELECT


def test_elevated_process_ignores_variables():
    ctx = Context(
        env={
            "VK_DRIVER_FILES": "",
            "LD_LIBRARY_PATH": ":rel",
            "XDG_DATA_HOME": "/x",
            "HOME": "/root",
        },
        elevated=True,
    )
    results = {r.code: r for r in run_checks(ctx, list(env_checks.CHECKS))}
    (ignored,) = results["VKE006"].findings
    assert ignored.severity is Severity.WARN
    assert ignored.evidence["ignored"] == ["VK_DRIVER_FILES", "XDG_DATA_HOME", "LD_LIBRARY_PATH"]
    # what is ignored is not analysed as if it applied
    for code in ("VKE001", "VKE005"):
        assert [f.severity for f in results[code].findings] == [Severity.OK]


def test_a_shared_sticky_directory_is_never_chmodded(tmp_path):
    """XDG_DATA_DIRS under /tmp: anyone can create the manifest directory there, but the remedy
    must not be to take the world-write bit off /tmp (or any sticky shared directory)."""
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKE003"],
        env={
            "XDG_DATA_DIRS": f"/tmp/vkdoctor-absent-{tmp_path.name}",
            "XDG_RUNTIME_DIR": "/run/user/0",
        },
    )
    found = findings(doc, "VKE003")
    assert found and all(f["evidence"]["culprit"] == "/tmp" for f in found)
    for f in found:
        assert "chmod" not in f["remedy"]
        assert f["remedy"].startswith("Stop using /tmp/vkdoctor-absent-")


def test_an_ld_preload_entry_that_cannot_be_loaded(tmp_path):
    real = "/lib/x86_64-linux-gnu/libz.so.1"
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKE008"],
        env={"LD_PRELOAD": f"{tmp_path}/gone.so {real}", "XDG_RUNTIME_DIR": "/run/user/0"},
    )
    assert proc.returncode == 0
    (f,) = findings(doc, "VKE008")
    assert f["severity"] == "warn"
    assert f["title"] == f"LD_PRELOAD entry {tmp_path}/gone.so cannot be preloaded"
    assert "cannot open shared object file" in f["message"]
    assert f["remedy"] == f"export LD_PRELOAD='{real}'"


def test_an_unprivileged_user_pointed_at_roots_home_gets_findings_not_crashes():
    """A container run with --user keeps HOME=/root (0700): every path under it is one this user
    may not look into, which pathlib reports by raising. No check may break on it."""
    import json
    import shutil
    import subprocess
    import sys
    import tempfile

    from conftest import REPO, clean_env

    code_dir = Path(tempfile.mkdtemp(prefix="vkdoctor-code-"))
    try:
        code_dir.chmod(0o755)
        shutil.copytree(
            REPO / "vkdoctor", code_dir / "vkdoctor", ignore=shutil.ignore_patterns("__pycache__")
        )
        # and its one dependency: the test environment may live where nobody cannot read it
        # (a clone under a 0700 directory)
        import click

        shutil.copytree(
            Path(click.__file__).parent,
            code_dir / "click",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        env = clean_env(
            {
                "PYTHONPATH": str(code_dir),
                "PYTHONDONTWRITEBYTECODE": "1",
                "HOME": "/root",
                "TMPDIR": "/root/tmp",
                "LD_LIBRARY_PATH": "/root/lib",
                "VK_ADD_DRIVER_FILES": "/root/.x/x.json",
                "XDG_CONFIG_HOME": "/root/.config",
            }
        )
        proc = subprocess.run(
            [
                *("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"),
                *(sys.executable, "-m", "vkdoctor", "check", "--no-probe", "--json", "-"),
            ],
            cwd="/",
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        shutil.rmtree(code_dir)
    doc = json.loads(proc.stdout)
    broke = [f["title"] for f in doc["findings"] if f["code"] == "VKX000"]
    assert broke == [], proc.stderr
    assert proc.returncode in (0, 1)
    (denied,) = [f for f in doc["findings"] if f["code"] == "VKE002"]
    assert denied["title"] == "LD_LIBRARY_PATH entry /root/lib cannot be searched by this user"


def test_home_in_a_shared_directory_is_one_warning_with_the_real_fix():
    _, doc = run_json(["check", "--no-probe", "--select", "VKE003"], env={"HOME": "/tmp"})
    (f,) = [x for x in doc["findings"] if x["code"] == "VKE003"]
    assert f["severity"] == "warn" and f["evidence"]["culprit"] == "/tmp"
    assert len(f["evidence"]["paths"]) >= 4
    assert f["remedy"].startswith("HOME is /tmp, which others can write")
    assert "chmod" not in f["remedy"]


@pytest.mark.parametrize(
    ("content", "renamed"),
    [
        ("{broken json", False),  # the loader stops at it: renaming carries the breakage over
        (None, True),  # lavapipe's own manifest: the rename is the fix
    ],
)
def test_the_deprecated_name_is_renamed_only_when_what_it_names_works(tmp_path, content, renamed):
    manifest = tmp_path / "icd.json"
    if content is None:
        manifest = Path(LVP_MANIFEST)
    else:
        manifest.write_text(content)
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKE004"],
        env={"HOME": str(tmp_path), "VK_ICD_FILENAMES": str(manifest)},
    )
    (f,) = findings(doc, "VKE004")
    if renamed:
        assert f["remedy"].startswith(
            f"export VK_DRIVER_FILES={manifest} && unset VK_ICD_FILENAMES"
        )
        assert f["fix"]["commands"] == [
            f"export VK_DRIVER_FILES={manifest}",
            "unset VK_ICD_FILENAMES",
        ]
    else:
        assert f["remedy"].startswith(
            "unset VK_ICD_FILENAMES: no driver manifest it names is usable"
        )


def test_mesa_vk_device_select_list_is_the_cause_and_unsetting_it_the_fix() -> None:
    """MESA_VK_DEVICE_SELECT=list: Mesa's device-select layer prints the devices and exits 0 in
    vkEnumeratePhysicalDevices. vulkaninfo, the oracle, ends there with status 0 and no summary;
    vkdoctor names the variable (VKE012), its load test finds the layer ending the process there
    (VKT003, explained by VKE012), and without the variable vulkaninfo lists the device."""
    listing = {"MESA_VK_DEVICE_SELECT": "list"}
    real = vulkaninfo(listing)
    assert real.returncode == 0 and b"selectable devices:" in real.stderr
    assert b"deviceName" not in real.stdout
    proc, doc = run_json(["check", "--no-probe"], env=listing)
    (cause,) = findings(doc, "VKE012")
    assert proc.returncode == 1 and cause["severity"] == "fail", proc.stdout
    assert cause["remedy"].startswith("unset MESA_VK_DEVICE_SELECT")
    assert cause["evidence"]["layer_manifest"] == DEVICE_SELECT
    (layer,) = [f for f in findings(doc, "VKT003") if f["evidence"].get("name")]
    assert layer["severity"] == "info" and layer["evidence"]["explained_by"] == "VKE012", layer
    assert "vkEnumeratePhysicalDevices" in layer["message"]
    assert [f["code"] for f in doc["findings"] if f["severity"] == "fail"] == ["VKE012"]
    assert b"deviceName" in vulkaninfo({}).stdout  # the fix: the variable unset

    # the layer turned off, the variable does nothing: vulkaninfo lists the device
    off = {**listing, "NODEVICE_SELECT": "1"}
    assert b"deviceName" in vulkaninfo(off).stdout
    proc, doc = run_json(["check", "--no-probe", "--select", "VKE012"], env=off)
    (quiet,) = findings(doc, "VKE012")
    assert proc.returncode == 0 and quiet["severity"] == "info"


def test_a_home_on_a_read_only_mount_is_writable_by_nobody(tmp_path: Path) -> None:
    """HOME on a tmpfs of mode 1777: world-writable while it is mounted read-write (VKE003 warns,
    as for HOME=/tmp), writable by nobody once it is mounted read-only (no finding)."""
    import subprocess

    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", str(home)], check=True)
    try:
        _, doc = run_json(["check", "--no-probe", "--select", "VKE003"], env={"HOME": str(home)})
        (rw,) = findings(doc, "VKE003")
        assert rw["severity"] == "warn" and str(home) in rw["message"], rw
        subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
        _, doc = run_json(["check", "--no-probe", "--select", "VKE003"], env={"HOME": str(home)})
        (ro,) = findings(doc, "VKE003")
        assert ro["severity"] == "ok", ro
        assert not os.access(home, os.W_OK)  # not even root may write there
    finally:
        subprocess.run(["umount", str(home)], check=False)
