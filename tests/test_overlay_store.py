"""The private store and LD_LIBRARY_PATH: real directories, real permission bits, real mounts."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from vkdoctor.overlay import ldpath, safety, store
from vkdoctor.overlay.errors import StoreError

REPO = Path(__file__).resolve().parent.parent


def _libs(tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "libs"
    d.mkdir()
    a = d / "libA.so.1"
    b = d / "libB.so.2"
    a.write_bytes(b"\x7fELF a")
    b.write_bytes(b"\x7fELF b")
    return a, b


def test_overlay_is_private_content_addressed_and_exact(tmp_path: Path) -> None:
    a, b = _libs(tmp_path)
    cache = tmp_path / "cache" / "vkdoctor"
    links = [
        store.Link(soname="libA.so.1", target=a, needed_by=("/x/drv.so",)),
        store.Link(soname="libB.so.2", target=b),
    ]
    first = store.build_overlay(cache, links)
    assert first.parent == cache / "overlays"
    assert stat.S_IMODE(first.stat().st_mode) == 0o700
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert first.stat().st_uid == os.geteuid()
    assert sorted(p.name for p in first.iterdir()) == ["libA.so.1", "libB.so.2"]
    assert (first / "libA.so.1").readlink() == a
    # Same inputs, same directory; order of the inputs does not matter.
    assert store.build_overlay(cache, list(reversed(links))) == first
    # Nothing left over from the build.
    assert [p.name for p in (cache / "overlays").iterdir()] == [first.name]
    # Different content (a file changed), another directory.
    b.write_bytes(b"\x7fELF b, rebuilt and longer")
    assert store.build_overlay(cache, links) != first


def test_tampered_overlay_is_rebuilt(tmp_path: Path) -> None:
    a, _ = _libs(tmp_path)
    cache = tmp_path / "cache"
    links = [store.Link(soname="libA.so.1", target=a)]
    d = store.build_overlay(cache, links)
    (d / "libstdc++.so.6").symlink_to("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
    again = store.build_overlay(cache, links)
    assert again == d
    assert [p.name for p in again.iterdir()] == ["libA.so.1"]


def test_foreign_or_shared_store_is_refused(tmp_path: Path) -> None:
    a, _ = _libs(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    links = [store.Link(soname="libA.so.1", target=a)]
    with pytest.raises(StoreError, match=r"writable by anyone \(mode 0777\)") as err:
        store.build_overlay(cache, links)
    assert err.value.hint == f"chmod 700 {cache}"
    cache.chmod(0o700)
    if os.geteuid() == 0:
        os.chown(cache, 65534, 65534)
        foreign, owner = cache, 65534
    else:  # a directory root owns, mode 0755, outside the system prefixes
        foreign, owner = Path("/home"), 0
    with pytest.raises(StoreError, match=rf"owned by \w+ \(uid {owner}\), not by you"):
        store.build_overlay(foreign, links)
    with pytest.raises(StoreError, match="system directory"):
        store.ensure_private_dir(Path("/usr/lib/vkdoctor-test"))
    assert not Path("/usr/lib/vkdoctor-test").exists()


def _in_mount_namespace(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run `script` (shell) as root of a private mount namespace (unshare -rm)."""
    assert shutil.which("unshare"), "unshare (util-linux) is needed for the read-only/full tests"
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )


def test_read_only_and_full_cache_give_clear_errors(tmp_path: Path) -> None:
    a, _ = _libs(tmp_path)
    ro = tmp_path / "ro"
    full = tmp_path / "full"
    ro.mkdir()
    full.mkdir()
    code = (
        "import sys; from pathlib import Path; from vkdoctor.overlay import store\n"
        "from vkdoctor.overlay.errors import StoreError\n"
        "try:\n"
        f"    store.build_overlay(Path(sys.argv[1]) / 'vkdoctor', [store.Link(soname='libA.so.1', target=Path('{a}'))])\n"
        "except StoreError as e:\n"
        "    print('ERR', e.message); print('HINT', e.hint)\n"
        "print('LEFT', sorted(str(p) for p in Path(sys.argv[1]).rglob('*')))\n"
    )
    (tmp_path / "probe.py").write_text(code)
    py = f"PYTHONPATH={REPO} {sys.executable} probe.py"
    proc = _in_mount_namespace(
        f"mount -t tmpfs -o ro,size=64k tmpfs {ro} && {py} {ro}; "
        f"mount -t tmpfs -o size=64k,nr_inodes=3 tmpfs {full} && mkdir {full}/vkdoctor && {py} {full}",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert f"ERR cannot create vkdoctor's store {ro}/vkdoctor: the file system is read-only" in out
    assert f"LEFT {[]}" in out
    assert any(
        line.startswith("ERR cannot") and "no space left on the device" in line for line in out
    ), out
    # Nothing half-written: the full store holds only the directories that fitted, no temp dirs.
    left = [line for line in out if line.startswith("LEFT")][-1]
    assert ".tmp-" not in left and "libA.so.1" not in left


def test_ld_library_path_puts_overlay_first_and_drops_bad_entries() -> None:
    got = ldpath.with_overlay(Path("/c/ov"), "/opt/x/lib::lib;/usr/local/lib:/c/ov/:./here")
    assert got.value == "/c/ov:/opt/x/lib:/usr/local/lib"
    assert [(d.entry, d.reason) for d in got.dropped] == [
        ("", "an empty entry means the current directory"),
        ("lib", "a relative entry depends on the current directory"),
        ("./here", "a relative entry depends on the current directory"),
    ]
    assert ldpath.with_overlay(Path("/c/ov"), None).value == "/c/ov"
    assert ldpath.with_overlay(Path("/c/ov"), "").dropped == ()


@pytest.mark.parametrize(
    ("soname", "protected"),
    [
        ("libc.so.6", True),
        ("ld-linux-x86-64.so.2", True),
        ("libm.so.6", True),
        ("libpthread.so.0", True),
        ("libdl.so.2", True),
        ("libstdc++.so.6", True),
        ("libgcc_s.so.1", True),
        ("libvulkan.so.1", True),
        ("libdrm.so.2", True),
        ("libdrm_amdgpu.so.1", True),
        ("libLLVM.so.23.1", False),
        ("libz.so.1", False),
        ("libcrypt.so.1", False),
    ],
)
def test_protected_sonames(soname: str, protected: bool) -> None:
    assert (safety.protected_reason(soname) is not None) is protected


def test_families_and_clashes() -> None:
    assert safety.family("libLLVM-15.so.1") == "llvm"
    assert safety.family("libLLVM.so.23.1") == "llvm"
    assert safety.family("libxcb-dri3.so.0") != safety.family("libxcb.so.1")
    clashes = safety.family_clashes(
        ["libLLVM.so.23.1"],
        {
            "libLLVM-15.so.1": ("/usr/lib/libLLVM-15.so.1", "/usr/lib/libvulkan_radeon.so"),
            "libz.so.1": ("/usr/lib/libz.so.1", "/usr/lib/libvulkan_radeon.so"),
        },
    )
    assert [(c.added, c.existing, c.loaded_by) for c in clashes] == [
        ("libLLVM.so.23.1", "libLLVM-15.so.1", "/usr/lib/libvulkan_radeon.so")
    ]
