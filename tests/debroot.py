"""A real Debian 12 root (debootstrap minbase + Mesa's Vulkan drivers), built once and cached.

The first build takes about 90 s (debootstrap from the Debian mirror this machine's apt uses,
then apt inside the chroot); the tree is kept as a tarball under the cache directory, keyed by
what goes into it, and each test works on a copy of its own.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

SUITE = "bookworm"
PACKAGES = ("mesa-vulkan-drivers", "libvulkan1", "vulkan-tools")
#: bump when the recipe below changes what the tree holds
RECIPE = "1"
CACHE = Path(os.environ.get("VKDOCTOR_TEST_CACHE", Path.home() / ".cache" / "vkdoctor-tests"))


def host_mirror() -> str:
    """The Debian archive this machine's apt is configured with (deb822 .sources or the
    one-line format); the tree gets its packages from the same place."""
    etc = Path("/etc/apt")
    files = sorted((etc / "sources.list.d").glob("*.sources"))
    for f in files:
        for stanza in f.read_text().split("\n\n"):
            fields = dict(
                (k.strip().lower(), v.strip())
                for line in stanza.splitlines()
                if not line.startswith("#") and ":" in line
                for k, v in [line.split(":", 1)]
            )
            suites = fields.get("suites", "").split()
            if "deb" in fields.get("types", "").split() and SUITE in suites:
                return fields["uris"].split()[0]
    for f in [etc / "sources.list", *sorted((etc / "sources.list.d").glob("*.list"))]:
        if not f.is_file():
            continue
        for line in f.read_text().splitlines():
            m = re.match(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m and m.group(2) == SUITE:
                return m.group(1)
    raise AssertionError(f"no deb source for {SUITE} in /etc/apt: cannot debootstrap")


@contextmanager
def proc_mounted(root: Path) -> Iterator[None]:
    """/proc mounted in the tree while apt or the drivers run there; unmounted after."""
    target = root / "proc"
    target.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(target)], check=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def chroot(
    root: Path, *argv: str, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`argv` run inside the tree (chroot, /proc mounted), as the image build would run it."""
    base = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "DEBIAN_FRONTEND": "noninteractive",
        "LC_ALL": "C",
        "HOME": "/root",
    }
    with proc_mounted(root):
        return subprocess.run(
            ["chroot", str(root), *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**base, **(env or {})},
            check=False,
        )


def shell(root: Path, script: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return chroot(root, "sh", "-ec", script, timeout=timeout)


def lavapipe_works(root: Path) -> subprocess.CompletedProcess[str]:
    """The tree's own loader and vulkaninfo: lavapipe must be listed."""
    return chroot(root, "vulkaninfo", "--summary", timeout=120)


def _key(mirror: str) -> str:
    text = "\n".join([RECIPE, SUITE, mirror, *PACKAGES])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _checked(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode != 0:
        raise AssertionError(f"{what} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def build(root: Path, mirror: str) -> None:
    """debootstrap minbase, then the Vulkan packages with apt inside the tree."""
    proc = subprocess.run(
        ["debootstrap", "--variant=minbase", SUITE, str(root), mirror],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    _checked(proc, "debootstrap")
    archives = root / "var/cache/apt/archives"
    # the base system's packages are not needed again; those apt installs next stay, so that
    # putting one of them back needs no download
    for deb in archives.glob("*.deb"):
        deb.unlink()
    _checked(shell(root, "apt-get update -q"), "apt-get update in the tree")
    _checked(
        chroot(root, "apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES),
        "apt-get install in the tree",
    )
    works = lavapipe_works(root)
    if works.returncode != 0 or "llvmpipe" not in works.stdout:
        raise AssertionError(
            f"lavapipe does not work in the new tree:\n{works.stdout}{works.stderr}"
        )
    for cache in (root / "var/cache/apt").glob("*.bin"):
        cache.unlink()  # apt's binary caches: rebuilt when apt runs in a copy


def cached_tarball() -> Path:
    """The tree's tarball, built the first time (under CACHE, keyed by what goes in it)."""
    mirror = host_mirror()
    tarball = CACHE / f"debian12-vulkan-{_key(mirror)}.tar.zst"
    if tarball.is_file():
        return tarball
    CACHE.mkdir(parents=True, exist_ok=True)
    work = CACHE / f"build-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        build(work / "root", mirror)
        partial = tarball.with_suffix(f".partial{os.getpid()}")
        subprocess.run(
            [
                "tar",
                "-C",
                str(work / "root"),
                "--numeric-owner",
                "-I",
                "zstd -1 -T0",
                "-cf",
                str(partial),
                ".",
            ],
            check=True,
        )
        partial.rename(tarball)
    finally:
        subprocess.run(
            ["umount", "-l", str(work / "root" / "proc")], check=False, stderr=subprocess.DEVNULL
        )
        shutil.rmtree(work, ignore_errors=True)
    return tarball


def unpack(tarball: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    subprocess.run(
        ["tar", "-C", str(dest), "--numeric-owner", "-I", "zstd", "-xf", str(tarball)], check=True
    )
    return dest


#: hard-linked into each copy: dpkg and apt replace files there (a new file renamed over the
#: old), never write into one, so the copy's changes stay its own. A test must do the same
#: under these directories (rm, or write a new file and rename it), never edit a file in place.
SHARED = ("usr", "var/lib/apt/lists", "var/cache/apt/archives")


def copy_of(base: Path, dest: Path, _at: str = "") -> Path:
    """A copy a test may break: the SHARED directories hard-linked (most of the tree), the rest
    copied (reflinks where the filesystem has them)."""
    dest.mkdir(exist_ok=bool(_at))
    for entry in sorted(base.iterdir()):
        rel = f"{_at}{entry.name}"
        if rel in SHARED:
            how = ["-al"]
        elif (
            any(s.startswith(f"{rel}/") for s in SHARED)
            and entry.is_dir()
            and not entry.is_symlink()
        ):
            copy_of(entry, dest / entry.name, f"{rel}/")
            continue
        else:
            how = ["-a", "--reflink=auto"]
        subprocess.run(["cp", *how, str(entry), str(dest / entry.name)], check=True)
    shutil.copystat(base, dest)
    return dest


def clean(root: Path) -> Sequence[str]:
    """What dpkg --audit and apt-get check say inside the tree; empty when both are clean."""
    problems = []
    audit = chroot(root, "dpkg", "--audit")
    if audit.returncode != 0 or audit.stdout.strip():
        problems.append(f"dpkg --audit: {audit.stdout}{audit.stderr}")
    check = chroot(root, "apt-get", "check", "-q")
    if check.returncode != 0:
        problems.append(f"apt-get check: {check.stdout}{check.stderr}")
    return problems


def newer_deb(package: str, suite: str = "trixie") -> Path:
    """`package`'s .deb from a newer suite of the same mirror, downloaded once and cached."""
    [deb] = suite_debs(suite, [package])
    return deb


def suite_debs(suite: str, packages: Sequence[str]) -> list[Path]:
    """The .debs of `packages` in `suite` of the mirror this machine's apt uses, downloaded
    once with the host's apt (a private configuration and lists: the host's own are left
    alone) and cached."""
    found = {p: sorted(CACHE.glob(f"{suite}-{p}_*.deb")) for p in packages}
    missing = [p for p, debs in found.items() if not debs]
    if missing:
        _download(suite, missing)
        found = {p: sorted(CACHE.glob(f"{suite}-{p}_*.deb")) for p in packages}
    return [found[p][-1] for p in packages]


def _download(suite: str, packages: Sequence[str]) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    work = CACHE / f"{suite}-apt-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    for d in ("lists/partial", "cache/archives/partial", "etc/apt.conf.d", "etc/preferences.d"):
        (work / d).mkdir(parents=True)
    (work / "etc/sources.list").write_text(source_line(suite))
    (work / "apt.conf").write_text(
        f'Dir::Etc "{work}/etc/";\nDir::State::Lists "{work}/lists/";\n'
        f'Dir::Cache "{work}/cache/";\nDir::State::status "/dev/null";\n'
        'Acquire::Languages "none";\n'
    )
    env = {**os.environ, "APT_CONFIG": str(work / "apt.conf"), "LC_ALL": "C"}
    try:
        for argv in (["apt-get", "update", "-q"], ["apt-get", "download", "-q", *packages]):
            proc = subprocess.run(
                argv, cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False
            )
            _checked(proc, " ".join(argv) + f" from {suite}")
        for package in packages:
            [deb] = work.glob(f"{package}_*.deb")
            deb.rename(CACHE / f"{suite}-{deb.name}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def source_line(suite: str) -> str:
    """The one-line apt source of `suite` on this machine's mirror."""
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    return f"deb [signed-by={keyring}] {host_mirror()} {suite} main\n"


def add_suite(root: Path, suite: str) -> None:
    """`suite` in the tree's apt sources, and its lists fetched by the tree's own apt."""
    (root / f"etc/apt/sources.list.d/{suite}.list").write_text(source_line(suite))
    _checked(shell(root, "apt-get update -q"), f"apt-get update with {suite} in the tree")


def install_cached(root: Path, *packages: str, tag: str) -> None:
    """`packages` installed with the tree's apt, their .debs kept under CACHE/`tag` between
    runs (apt takes a cached one whose checksum matches the lists, and fetches the rest)."""
    store = CACHE / tag
    store.mkdir(parents=True, exist_ok=True)
    archives = root / "var/cache/apt/archives"
    before = {d.name for d in archives.glob("*.deb")}
    for deb in store.glob("*.deb"):
        if not (archives / deb.name).exists():
            shutil.copy(deb, archives / deb.name)
    _checked(
        chroot(root, "apt-get", "install", "-y", "-q", "--no-install-recommends", *packages),
        f"apt-get install {' '.join(packages)} in the tree",
    )
    for deb in archives.glob("*.deb"):
        if deb.name not in before and not (store / deb.name).exists():
            shutil.copy(deb, store / deb.name)
