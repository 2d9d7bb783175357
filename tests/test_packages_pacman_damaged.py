"""A pacman database entry cut short or malformed: who owns a file is what the real
`pacman -Qo` says for the same tree, for every damage (the oracle is asked each time)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from pkgtools import build_lib, build_pkg, pacman_install, pacman_root, sh

from vkdoctor.model.context import Context
from vkdoctor.packages import pacman as pacman_module
from vkdoctor.packages.pacman import PacmanDB

LVP = "/usr/lib/libvulkan_lvp.so"
ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
ZX3 = "/usr/lib/libzx3.so.4"
LOADER = "/usr/lib/libvulkan.so.1"
PATHS = (LVP, ICD, ZX3, LOADER)
ENTRY = "vulkan-swrast-1:26.2.3-1"


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("pacdamage")
    s = work / "s"
    z3 = build_lib(s / "z3" / "libzx3.so.4", "libzx3.so.4")
    lvp = build_lib(s / "lvp" / "libvulkan_lvp.so", "libvulkan_lvp.so", needs=[z3])
    loader = build_lib(s / "ld" / "libvulkan.so.1", "libvulkan.so.1")
    icd = s / "icd.json"
    icd.write_text('{"file_format_version": "1.0.1"}\n')
    root = pacman_root(work / "root")
    pacman_install(
        root,
        build_pkg(work, "zx3", "4.8.12-1", {ZX3: z3}),
        build_pkg(work, "vulkan-icd-loader", "1.4.321-1", {LOADER: loader}),
        build_pkg(work, "vulkan-swrast", "1:26.2.3-1", {LVP: lvp, ICD: icd}, depends=["zx3"]),
    )
    return root


def oracle(root: Path) -> dict[str, str]:
    """path -> "name version" of its owner, as pacman -Qo says; unowned paths absent."""
    proc = sh(
        "pacman",
        "--root",
        root,
        "--dbpath",
        root / "var/lib/pacman",
        "-Qo",
        *(f"{root}{p}" for p in PATHS),
        check=False,
    )
    # its exit status is the number of paths no package owns
    out = {}
    for line in proc.stdout.splitlines():
        m = re.match(rf"^{re.escape(str(root))}(\S+) is owned by (\S+) (\S+)$", line)
        assert m, line
        out[m.group(1)] = f"{m.group(2)} {m.group(3)}"
    unowned = re.findall(r"^error: No package owns (\S+)$", proc.stderr, re.M)
    assert len(out) + len(unowned) == len(PATHS), proc.stdout + proc.stderr
    assert proc.returncode == len(unowned)
    return out


def ours(root: Path) -> dict[str, str]:
    db = PacmanDB(Context(root=root, env={"PATH": "/usr/bin:/bin"}))
    return {
        path: " ".join(f"{p.name} {p.version}" for p in pkgs)
        for path, pkgs in db.owners(PATHS).items()
    }


def _cut(name: str, at: Callable[[bytes], int]) -> Callable[[Path], None]:
    def damage(entry: Path) -> None:
        data = (entry / name).read_bytes()
        (entry / name).write_bytes(data[: at(data)])

    return damage


def _write(name: str, make: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def damage(entry: Path) -> None:
        (entry / name).write_bytes(make((entry / name).read_bytes()))

    return damage


def _junk(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "files empty": _cut("files", lambda d: 0),
    "files cut in %FILES%": _cut("files", lambda d: 4),
    "files cut after the header": _cut("files", lambda d: len("%FILES%\n")),
    "files cut in the driver's path": _cut("files", lambda d: d.index(b"libvulkan_lvp") + 5),
    "files cut before the last newline": _cut("files", lambda d: d.index(b"lvp.so\n") + 6),
    "files cut before the manifest": _cut("files", lambda d: d.index(b"usr/share")),
    "files missing": lambda e: (e / "files").unlink(),
    "files binary junk": _write("files", lambda d: _junk(1, 4096)),
    "files junk after": _write("files", lambda d: d + _junk(2, 8192)),
    "files junk before": _write("files", lambda d: _junk(3, 300) + b"\n" + d),
    "files NUL in a path": _write("files", lambda d: d.replace(b"lvp.so\n", b"lvp.so\0x\n")),
    "files NUL starts a line": _write(
        "files", lambda d: d.replace(b"usr/lib/libv", b"\0usr/lib/libv")
    ),
    "files CRLF": _write("files", lambda d: d.replace(b"\n", b"\r\n")),
    "files record separator": _write("files", lambda d: d.replace(b"lvp.so", b"lvp.so\x1cz")),
    "files blank line inside": _write("files", lambda d: d.replace(b"usr/lib/\n", b"usr/lib/\n\n")),
    "files a line longer than 1023": _write(
        "files",
        lambda d: d.replace(b"usr/\n", b"usr/" + b"a" * 1019 + b"usr/lib/libvulkan_lvp.so\n"),
    ),
    "files two %FILES%": _write("files", lambda d: d + b"%FILES%\nusr/lib/other\n\n"),
    "files %BACKUP% swallows %FILES%": _write("files", lambda d: b"%BACKUP%\n" + d),
    "files no header": _write("files", lambda d: d.replace(b"%FILES%\n", b"")),
    "desc empty": _cut("desc", lambda d: 0),
    "desc cut in %NAME%": _cut("desc", lambda d: 3),
    "desc cut after the name": _cut("desc", lambda d: d.index(b"%VERSION%")),
    "desc cut in half": _cut("desc", lambda d: len(d) // 2),
    "desc missing": lambda e: (e / "desc").unlink(),
    "desc binary junk": _write("desc", lambda d: _junk(4, 2048)),
    "desc another name": _write("desc", lambda d: d.replace(b"vulkan-swrast\n", b"mesa\n", 1)),
    "desc and files missing": lambda e: [(e / n).unlink() for n in ("desc", "files")] and None,
}


@pytest.mark.parametrize("scan", [False, True], ids=["indexed", "scanned"])
@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_ownership_is_what_pacman_says(
    clean: Path, tmp_path: Path, damage: str, scan: bool, monkeypatch: pytest.MonkeyPatch
):
    import shutil

    root = tmp_path / "root"
    shutil.copytree(clean, root, symlinks=True)
    assert ours(root) == oracle(root)  # the clean tree first
    DAMAGES[damage](root / "var/lib/pacman/local" / ENTRY)
    if scan:
        # a file list too large to index is scanned for the paths asked
        monkeypatch.setattr(pacman_module, "INDEXED", 0)
    assert ours(root) == oracle(root)


def test_a_huge_file_list_is_scanned_in_bounded_memory(clean: Path, tmp_path: Path):
    """80 MiB of paths after the real ones: above what is indexed, scanned line by line."""
    import shutil
    import tracemalloc

    root = tmp_path / "root"
    shutil.copytree(clean, root, symlinks=True)
    files = root / "var/lib/pacman/local" / ENTRY / "files"
    text = files.read_bytes().rstrip(b"\n") + b"\n"
    with files.open("wb") as f:
        f.write(text)
        line = b"usr/share/junk/" + b"x" * 100 + b"\n"
        for _ in range(80):
            f.write(line * ((1 << 20) // len(line)))
        f.write(b"\n")
    assert files.stat().st_size > pacman_module.INDEXED
    tracemalloc.start()
    got = ours(root)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert got == oracle(root)
    assert got[LVP] == "vulkan-swrast 1:26.2.3-1"
    assert peak < 16 << 20, peak
