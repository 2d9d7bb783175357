"""A Vulkan loader copied as a plain libvulkan.so.1 (a build from source, a copy bundled in an
application's folder, a container that copied the file): its version is read from its code, not
its name. Real loaders: Debian 12's 1.3.239 and trixie's 1.4.309 (tests/trixieloader.py), each
renamed to libvulkan.so.1 in a folder on LD_LIBRARY_PATH, the real loader's own
vkEnumerateInstanceVersion the oracle; and the same copies with the constant vkdoctor reads made
unreadable to it (the loader still works, and still says its version when asked), where the
version is unknown and the rules that predict no failure apply: no false red, and a real failure
is still red (the real load test)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import trixieloader
from conftest import REPO, clean_env
from trixieloader import TrixieLoader

from vkdoctor.loader.version import loader_version, version_in_code
from vkdoctor.model.context import Context

BOOKWORM = Path("/usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.239")
LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
#: terminator_EnumerateInstanceVersion's store as gcc builds it: movl $imm32, (%reg); xor; ret
_STORE = re.compile(rb"\xc7[\x00-\x07](.{4})\x31\xc0\xc3", re.DOTALL)
_ORACLE = (
    "import ctypes; lib = ctypes.CDLL('libvulkan.so.1'); v = ctypes.c_uint32(); "
    "assert lib.vkEnumerateInstanceVersion(ctypes.byref(v)) == 0; "
    "print((v.value >> 22) & 0x7F, (v.value >> 12) & 0x3FF, v.value & 0xFFF)"
)


@pytest.fixture(scope="module")
def trixie() -> TrixieLoader:
    return trixieloader.trixie_loader()


def _unreadable(data: bytes) -> bytes:
    """The loader with its version constant's variant bits set: vkdoctor no longer takes it for
    a Vulkan version, the loader runs as before (its answer's major, minor and patch unchanged)."""

    def flip(m: re.Match[bytes]) -> bytes:
        value = int.from_bytes(m[1], "little") | (7 << 29)
        return m[0][:2] + value.to_bytes(4, "little") + m[0][6:]

    out, count = _STORE.subn(flip, data)
    assert count >= 1
    return out


def _plain_copy(
    trixie: TrixieLoader, tmp_path: Path, which: str, *, readable: bool = True
) -> tuple[TrixieLoader | None, Path]:
    """A folder holding only a plain libvulkan.so.1 copy of `which` ("1.3.239" or "1.4.309")."""
    src = BOOKWORM if which == "1.3.239" else trixie.loader_dir / "libvulkan.so.1.4.309"
    folder = tmp_path / f"{which}{'' if readable else '-unreadable'}" / "lib"
    folder.mkdir(parents=True)
    data = src.read_bytes()
    (folder / "libvulkan.so.1").write_bytes(data if readable else _unreadable(data))
    return (trixie if which == "1.4.309" else None), folder


def _run(
    loader: TrixieLoader | None, argv: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`argv` with `env` (the plain copy on LD_LIBRARY_PATH, nothing of trixie's own loader
    folder), with trixie's glibc when the copy is trixie's loader."""
    full = clean_env(env)
    full["PYTHONPATH"] = str(REPO)
    command = loader.command(argv) if loader is not None else argv
    return subprocess.run(
        command, env=full, capture_output=True, text=True, timeout=300, check=False
    )


def _real_version(loader: TrixieLoader | None, folder: Path) -> str:
    """The loader's own answer to vkEnumerateInstanceVersion, in a process that loads it."""
    proc = _run(loader, [sys.executable, "-c", _ORACLE], {"LD_LIBRARY_PATH": str(folder)})
    assert proc.returncode == 0, proc.stderr
    return ".".join(proc.stdout.split())


@pytest.mark.parametrize("which", ["1.3.239", "1.4.309"])
def test_a_plain_copy_is_read_for_its_version(trixie, tmp_path, which):
    """`--version`, VKH002 and the emulation's rules all have the version the loader itself
    answers, though its file is named only libvulkan.so.1."""
    loader, folder = _plain_copy(trixie, tmp_path, which)
    assert _real_version(loader, folder) == which
    ctx = Context(env={"LD_LIBRARY_PATH": str(folder)}, cwd=tmp_path, machine="x86_64")
    found = loader_version(ctx)
    assert (found.file, found.text) == ("libvulkan.so.1", which)
    env = {"LD_LIBRARY_PATH": str(folder), "COLUMNS": "80"}
    shown = _run(loader, [sys.executable, "-m", "vkdoctor", "--version"], env)
    assert f"Vulkan loader: {which} ({folder}/libvulkan.so.1)" in shown.stdout, shown.stdout
    proc = _run(
        loader, [sys.executable, "-m", "vkdoctor", "check", "--no-probe", "--json", "-"], env
    )
    (vkh002,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "VKH002"]
    assert vkh002["title"] == f"Vulkan loader {which}"
    assert vkh002["evidence"]["version"] == which


def test_only_a_loader_is_read_for_a_version(tmp_path):
    """A driver's code stores its own API version the same way; it exports no
    vkEnumerateInstanceVersion and is not taken for a loader. A file that is not a library,
    or not there, has no version."""
    ctx = Context(env={}, cwd=tmp_path, machine="x86_64")
    assert version_in_code(ctx, str(BOOKWORM)) == (1, 3, 239)
    assert version_in_code(ctx, "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so") is None
    assert version_in_code(ctx, "/bin/ls") is None
    assert version_in_code(ctx, str(tmp_path / "absent.so")) is None
    (tmp_path / "libvulkan.so.1").write_bytes(b"\x7fELF" + b"\xc7\x06\xef\x30\x40\x00\x31\xc0\xc3")
    assert version_in_code(ctx, str(tmp_path / "libvulkan.so.1")) is None


def _broken_explicit_layer(tmp_path: Path) -> Path:
    """An explicit layer manifest with a JSON syntax error: 1.3.239 fails every vkCreateInstance
    on it, 1.4.309 skips it."""
    folder = tmp_path / "data" / "vulkan" / "explicit_layer.d"
    folder.mkdir(parents=True)
    broken = folder / "broken.json"
    broken.write_text('{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_broken", ')
    return tmp_path / "data"


@pytest.mark.parametrize("readable", [True, False], ids=["version-read", "version-unknown"])
@pytest.mark.parametrize("which", ["1.3.239", "1.4.309"])
def test_the_verdict_follows_the_copy_that_runs(trixie, tmp_path, which, readable):
    """A manifest 1.3.239 fails on and 1.4.309 skips, under plain copies of each: the verdict is
    the loader's, whether its version is read from its code or, where that cannot be read, from
    its answer to the load test (no false red on 1.4.309, the failure named on 1.3.239)."""
    loader, folder = _plain_copy(trixie, tmp_path, which, readable=readable)
    assert _real_version(loader, folder) == which  # the unreadable copy still says it
    data = _broken_explicit_layer(tmp_path)
    env = {
        "LD_LIBRARY_PATH": str(folder),
        "XDG_DATA_HOME": str(data),
        "VK_DRIVER_FILES": LVP_MANIFEST,
        "COLUMNS": "80",
    }
    argv = [sys.executable, "-m", "vkdoctor", "check", "--no-probe", "--json", "-"]
    proc = _run(loader, argv, env)
    doc = json.loads(proc.stdout)
    failed = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert doc["driver_search"]["loader_version"] == (which if readable else "unknown")
    if which == "1.4.309":
        assert proc.returncode == 0 and not failed, doc["findings"]
        assert not [f for f in doc["findings"] if "broken.json" in f["title"]]
        return
    assert proc.returncode == 1 and [f["code"] for f in failed] == ["VKI004"], failed
    answered = "The loader answered the load test that it is version 1.3.239."
    assert (answered in failed[0]["message"]) is not readable


@pytest.mark.parametrize("readable", [True, False], ids=["version-read", "version-unknown"])
def test_under_root_an_unknown_version_says_what_older_loaders_do(trixie, tmp_path, readable):
    """Under --root nothing of the tree runs: a copy whose version cannot be read is not failed
    on what only older loaders do, and the warning says it; one that can be read is judged."""
    _, folder = _plain_copy(trixie, tmp_path, "1.3.239", readable=readable)
    root = tmp_path / "root"
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libvulkan.so.1").write_bytes((folder / "libvulkan.so.1").read_bytes())
    layers = root / "usr/share/vulkan/explicit_layer.d"
    layers.mkdir(parents=True)
    (layers / "broken.json").write_text('{"file_format_version": "1.0.0", "layer": {"name": ')
    proc = _run(
        None, [sys.executable, "-m", "vkdoctor", "check", "--root", str(root), "--json", "-"], {}
    )
    doc = json.loads(proc.stdout)
    said = [
        (f["code"], f["severity"], f["title"]) for f in doc["findings"] if "broken" in f["title"]
    ]
    if readable:
        assert [s[:2] for s in said] == [("VKI004", "fail")], said
        return
    assert said == [
        (
            "VKI004",
            "warn",
            "Explicit layer manifest /usr/share/vulkan/explicit_layer.d/broken.json is not "
            "valid JSON: loaders before 1.3.268 fail every Vulkan application on it",
        )
    ], said
    assert not [f for f in doc["findings"] if f["severity"] == "fail" and f["code"] == "VKI004"]
