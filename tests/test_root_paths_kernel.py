"""A path inside --root resolves as the kernel resolves it in a chroot of the tree, the oracle.

A hostile image's symbolic links must neither reach the host's files nor find a file the image's
own programs cannot open: `x/..` after a missing folder or a file, and a chain longer than the
kernel follows, fail in the tree and must fail here too (they were a false green: an image whose
lavapipe cannot load libLLVM passed `check --root`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.elfbuild import build_lib
from vkdoctor.model.context import Context

LIB = "usr/lib/x86_64-linux-gnu"


def _in_chroot(root: Path, path: str) -> bool:
    """Whether `path` opens inside a chroot of `root`: the kernel decides."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.chroot(root)
            os.chdir("/")
            os.close(os.open(path, os.O_RDONLY))
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _opens(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError:
        return False
    return True


def _tree(tmp_path: Path, host_file: Path) -> Path:
    root = tmp_path / "root"
    (root / LIB).mkdir(parents=True)
    (root / "tmp").mkdir()
    (root / LIB / "real.so").write_bytes(b"tree")
    (root / "etc").mkdir()
    (root / "etc" / "file").write_text("x")
    links = {
        "missing-then-up": "../../../tmp/nonexistent/../../" + LIB + "/real.so",
        "file-then-up": "../../../etc/file/../../" + LIB + "/real.so",
        "fine-up": "../../../" + LIB + "/../x86_64-linux-gnu/real.so",
        "past-root": "../../../../../../../../" + LIB + "/real.so",
        "absolute": "/" + LIB + "/real.so",
        "to-host": str(host_file),
        "host-up": "../../../../../../.." + str(host_file),
    }
    for name, target in links.items():
        (root / LIB / name).symlink_to(target)
    # a chain longer than the kernel follows, whose end is a file on this host
    (root / LIB / "c0").symlink_to(str(host_file))
    for i in range(1, 46):
        (root / LIB / f"c{i}").symlink_to(f"c{i - 1}")
    return root


def test_resolve_inside_root_agrees_with_the_kernel_in_a_chroot(tmp_path):
    host_file = tmp_path / "host-only.so"
    host_file.write_bytes(b"host")
    root = _tree(tmp_path, host_file)
    ctx = Context(root=root, env={})
    names = sorted(p.name for p in (root / LIB).iterdir())
    assert "missing-then-up" in names and "c45" in names
    for name in names:
        path = f"/{LIB}/{name}"
        kernel = _in_chroot(root, path)
        resolved = ctx.resolve(path)
        assert _opens(resolved) == kernel, (name, resolved, kernel)
        if kernel:
            assert resolved.read_bytes() == b"tree", name  # never the host's file
    # the attacks themselves: the kernel refuses them, and so does vkdoctor
    assert not _in_chroot(root, f"/{LIB}/missing-then-up")
    assert not _in_chroot(root, f"/{LIB}/c45")
    assert _in_chroot(root, f"/{LIB}/fine-up")


def test_a_driver_library_behind_a_missing_folder_and_dot_dot_is_missing(tmp_path):
    """End to end: check --root fails on a tree whose driver library only a lexical `..` finds."""
    root = tmp_path / "root"
    (root / LIB).mkdir(parents=True)
    (root / "tmp").mkdir()
    icd = root / "usr/share/vulkan/icd.d"
    icd.mkdir(parents=True)
    real = root / LIB / "libreal_icd.so.real"
    build_lib(real, soname="libreal_icd.so", flags=["-nostdlib"])
    (root / LIB / "libreal_icd.so").symlink_to(
        "../../../tmp/gone/../../" + LIB + "/libreal_icd.so.real"
    )
    (icd / "real.json").write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": f"/{LIB}/libreal_icd.so", "api_version": "1.3.0"},
            }
        )
    )
    assert not _in_chroot(root, f"/{LIB}/libreal_icd.so")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vkdoctor",
            "check",
            "--root",
            str(root),
            "--no-probe",
            *("--json", "-", "--select", "VKD,VKL"),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(proc.stdout)
    (driver,) = report["drivers"]
    assert driver["verdict"] != "ok", driver
    failing = {f["code"] for f in report["findings"] if f["severity"] in ("fail", "warn")}
    assert "VKD005" in failing, failing  # the library the manifest names cannot be opened
    assert report["status"] == "fail" and proc.returncode == 1, proc.stderr


def _kernel_realpath(root: Path, path: str) -> str | None:
    """realpath inside a chroot of `root`, or None when the path does not open there."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            os.chroot(root)
            os.chdir("/")
            os.close(os.open(path, os.O_RDONLY))
            os.write(w, os.path.realpath(path).encode())
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        text = f.read().decode()
    _, status = os.waitpid(pid, 0)
    return text if os.waitstatus_to_exitcode(status) == 0 else None


def test_package_path_spellings_agree_with_the_kernel_in_a_chroot(tmp_path):
    """packages.paths.resolve_in_root spells a path for the package databases: the kernel's
    realpath where the path opens, and never an existing file's name where it does not (a
    lexical `..` after a missing folder made a file look owned by a package)."""
    from vkdoctor.packages.paths import resolve_in_root

    host_file = tmp_path / "host-only.so"
    host_file.write_bytes(b"host")
    root = _tree(tmp_path, host_file)
    ctx = Context(root=root, env={})
    for name in sorted(p.name for p in (root / LIB).iterdir()):
        path = f"/{LIB}/{name}"
        spelt = resolve_in_root(ctx, path)
        kernel = _kernel_realpath(root, path)
        if kernel is not None:
            assert spelt == kernel, (name, spelt, kernel)
        else:
            assert _kernel_realpath(root, spelt) is None, (name, spelt)
