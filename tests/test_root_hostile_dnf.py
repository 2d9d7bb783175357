"""A Fedora tree's dnf files are data, read within bounds and inside the tree: a `.repo` that is
a link to /dev/zero (or a FIFO) once made `check --root` read without end (memory) and copy
without end (disk); a link with an absolute target was followed on this machine, not in the
tree; and a repomd.xml could name a primary file outside its repository's folder. Each is done
for real on a real rpm tree with real dnf metadata, and dnf still checks the fix."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from conftest import REPO, clean_env
from test_packages_dnfsim import fedora, llvm23

CHECKED = (
    "Fix: sudo dnf distro-sync. Checked with dnf --assumeno: it installs llvm-libs "
    "23.1.0-1.fc43, mesa-dri-drivers 26.2.3-1.fc43 and removes nothing."
)


def _bounded() -> None:
    # what an endless read or copy would exhaust, held low so it fails fast instead
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))


def _skew_message(root: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "from pathlib import Path\nfrom test_packages_dnfsim import skew\n"
        f"print(skew(Path({str(root)!r})).message)\n"
    )
    env = clean_env()
    env["PYTHONPATH"] = f"{REPO}:{REPO / 'tests'}"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        preexec_fn=_bounded,
    )


def test_repo_files_that_are_devices_or_fifos_are_left_out_and_the_fix_still_checked(
    tmp_path: Path,
) -> None:
    root = fedora(tmp_path, *llvm23(tmp_path))
    repos = root / "etc/yum.repos.d"
    (repos / "zero.repo").symlink_to("/dev/zero")
    os.mkfifo(repos / "fifo.repo")
    (root / "etc/dnf/vars").mkdir(parents=True)
    (root / "etc/dnf/vars/releasever").symlink_to("/dev/urandom")
    proc = _skew_message(root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith(CHECKED), proc.stdout


def test_a_fifo_in_the_metadata_cache_is_not_handed_to_dnf(tmp_path: Path) -> None:
    """dnf reads a repository's cached metadata itself: a FIFO among it blocked dnf until its
    timeout. The fix is then not simulated, and says why, in seconds."""
    import time

    root = fedora(tmp_path, *llvm23(tmp_path))
    [filelists] = root.glob("var/cache/*/fedora-*/repodata/*filelists.xml*")
    filelists.unlink()
    os.mkfifo(filelists)
    started = time.monotonic()
    proc = _skew_message(root)
    assert time.monotonic() - started < 30
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = (
        f"the tree's dnf metadata is not used: /{filelists.relative_to(root)} is not a regular file"
    )
    assert said in proc.stdout, proc.stdout


def test_a_repo_file_linked_with_an_absolute_target_is_read_inside_the_tree(
    tmp_path: Path,
) -> None:
    """The image keeps its .repo elsewhere and links it by an absolute path, as an image does:
    that path means the tree's file, not this machine's (which does not exist here)."""
    root = fedora(tmp_path, *llvm23(tmp_path))
    kept = root / "usr/share/fedora-repos"
    kept.mkdir(parents=True)
    (root / "etc/yum.repos.d/fedora.repo").rename(kept / "fedora.repo")
    (root / "etc/yum.repos.d/fedora.repo").symlink_to("/usr/share/fedora-repos/fedora.repo")
    assert not Path("/usr/share/fedora-repos/fedora.repo").exists()
    proc = _skew_message(root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith(CHECKED), proc.stdout


def test_a_primary_file_named_outside_its_repository_folder_is_not_read(tmp_path: Path) -> None:
    from vkdoctor.model.context import Context
    from vkdoctor.packages.dnfrepos import caches

    root = fedora(tmp_path, *llvm23(tmp_path))
    [cache] = caches(Context(root=root, env={"PATH": "/usr/bin:/bin"}))
    repomd = root / cache.repomd.lstrip("/")
    outside = tmp_path / "outside-primary.xml"
    outside.write_text("<metadata></metadata>\n")
    depth = len(repomd.parent.parent.relative_to(tmp_path).parts)
    escape = "../" * depth + outside.name
    text = repomd.read_text()
    start = text.index('<data type="primary">')
    href = text.index('href="', start) + len('href="')
    repomd.write_text(text[:href] + escape + text[text.index('"', href) :])
    assert (repomd.parent.parent / escape).resolve() == outside
    assert caches(Context(root=root, env={"PATH": "/usr/bin:/bin"})) == []


def test_an_rpm_database_linked_by_an_absolute_path_is_the_trees_not_this_machines(
    tmp_path: Path,
) -> None:
    """The tree's /usr/lib/sysimage/rpm is a link to the absolute path of its database. rpm
    --root follows that link on this machine, where a database also lies at that path (put
    there for the test, one package short): the tree's packages are read, not this machine's."""
    import shutil

    from vkdoctor.model.context import Context
    from vkdoctor.packages.rpm import RpmDB, find_dbpath

    root = fedora(tmp_path, cache=False)
    kept = f"/tmp/vkd-rpmdb-{tmp_path.name}"
    (root / kept.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    shutil.move(root / "var/lib/rpm", root / kept.lstrip("/"))
    shutil.rmtree(root / "usr/lib/sysimage", ignore_errors=True)
    (root / "usr/lib/sysimage").mkdir(parents=True)
    (root / "usr/lib/sysimage/rpm").symlink_to(kept)
    host = Path(kept)
    shutil.copytree(root / kept.lstrip("/"), host)
    try:
        erased = subprocess.run(
            ["rpm", "--dbpath", kept, "-e", "--justdb", "--nodeps", "llvm-libs"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert erased.returncode == 0, erased.stderr
        ctx = Context(root=root, env={"PATH": "/usr/bin:/bin"})
        dbpath = find_dbpath(ctx)
        assert dbpath is not None
        assert [p.name for p in RpmDB(ctx, dbpath).by_name("llvm-libs")] == ["llvm-libs"]
        assert dbpath == kept
    finally:
        shutil.rmtree(host, ignore_errors=True)


def test_a_dpkg_database_linked_by_an_absolute_path_is_the_trees_not_this_machines(
    tmp_path: Path,
) -> None:
    """The tree's /var/lib/dpkg is a link to an absolute path: that path means the tree's
    folder. Followed on this machine, it read this machine's database (or none) as the tree's;
    vkdoctor and apt now read the tree's."""
    from vkdoctor.model.context import Context
    from vkdoctor.packages.aptroot import architectures, configuration
    from vkdoctor.packages.detect import inventory

    here = Path("/var/lib/dpkg/status")
    assert here.is_file()  # this machine's database, which must not be read
    kept = tmp_path / "usr/share/dpkg-db"
    kept.mkdir(parents=True)
    (kept / "status").write_text(
        "Package: dpkg\nStatus: install ok installed\nVersion: 1.21.22\nArchitecture: riscv64\n\n"
        "Package: libvulkan1\nStatus: install ok installed\nVersion: 9.9-1\n"
        "Architecture: riscv64\nMulti-Arch: same\n"
    )
    (kept / "arch").write_text("riscv64\nloong64\n")
    (tmp_path / "var/lib").mkdir(parents=True)
    (tmp_path / "var/lib/dpkg").symlink_to("/usr/share/dpkg-db")
    ctx = Context(root=tmp_path, env={"PATH": "/usr/bin:/bin"})
    [db] = inventory(ctx).databases
    assert [(p.name, p.version) for p in db.packages()] == [
        ("dpkg", "1.21.22"),
        ("libvulkan1", "9.9-1"),
    ]
    assert architectures(tmp_path) == ("riscv64", ["loong64"])
    private = tmp_path / "private"
    private.mkdir()
    assert f'Dir::State::status "{kept / "status"}";' in configuration(tmp_path, private)
