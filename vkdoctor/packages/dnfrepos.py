"""What dnf's repositories offer, read from the metadata dnf last downloaded (its cache), the way
`dnf -C` answers without the network.

dnf 4 keeps each repository's metadata in `/var/cache/dnf/<repoid>-<16 hex>/repodata/`, dnf5 in
`/var/cache/libdnf5/<repoid>-<16 hex>/repodata/`: `repomd.xml` names the primary file
(`*-primary.xml.gz`, `.xz`, `.bz2` or, since Fedora 40, `.zst`), which lists every package with
its name, arch and epoch:version-release. Only repositories enabled in `/etc/yum.repos.d` count
(a cache left by a disabled repository is stale); without any `.repo` file every cache counts.
"""

from __future__ import annotations

import bz2
import configparser
import contextlib
import gzip
import lzma
import re
import subprocess
import zlib
from collections.abc import Iterable, Iterator
from functools import cmp_to_key
from pathlib import Path
from typing import IO

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.files import SMALL
from vkdoctor.model.record import record
from vkdoctor.packages.proc import which
from vkdoctor.packages.versions import rpm_compare

CACHE_DIRS = ("/var/cache/libdnf5", "/var/cache/dnf")
_CACHE_NAME = re.compile(r"^(?P<repo>.+)-[0-9a-f]{16}$")
_PRIMARY = re.compile(rb'<data type="primary">.*?<location href="([^"]+)"', re.S)
_CHUNK = 1 << 20


@record(frozen=True)
class RepoCache:
    repo: str
    #: repomd.xml, inside the tree
    repomd: str
    #: the primary metadata file, inside the tree
    primary: str
    #: when dnf last downloaded it (repomd.xml's mtime)
    refreshed: float


def enabled_repos(ctx: Context) -> set[str] | None:
    """The ids of the repositories enabled in /etc/yum.repos.d; None when there is no .repo file."""
    try:
        files = [n for n in tree.names(ctx, "/etc/yum.repos.d") if n.endswith(".repo")]
    except OSError:
        return None
    if not files:
        return None
    enabled: set[str] = set()
    for name in files:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(tree.read_text(ctx, f"/etc/yum.repos.d/{name}"))
        except (OSError, configparser.Error):
            continue
        for section in parser.sections():
            value = parser.get(section, "enabled", fallback="1").strip().lower()
            if value in ("1", "true", "yes", "on"):
                enabled.add(section)
    return enabled


def caches(ctx: Context) -> list[RepoCache]:
    """The metadata caches of the enabled repositories, the newest per repository."""
    enabled = enabled_repos(ctx)
    newest: dict[str, RepoCache] = {}
    for base in CACHE_DIRS:
        try:
            entries = tree.names(ctx, base)
        except OSError:
            continue
        for name in entries:
            m = _CACHE_NAME.match(name)
            if not m or (enabled is not None and m.group("repo") not in enabled):
                continue
            repomd = f"{base}/{name}/repodata/repomd.xml"
            try:
                data = tree.read_bytes(ctx, repomd, SMALL)
                refreshed = ctx.resolve(repomd).lstat().st_mtime
            except OSError:
                continue
            href = _PRIMARY.search(data)
            if href is None:
                continue
            where = href.group(1).decode("utf-8", "replace")
            if where.startswith("/") or ".." in where.split("/"):
                continue  # repomd.xml names a file outside its repository's folder
            primary = ctx.resolve(f"{base}/{name}/{where}")
            if not primary.is_file():
                continue
            cache = RepoCache(
                repo=m.group("repo"),
                repomd=repomd,
                primary=f"{base}/{name}/{where}",
                refreshed=refreshed,
            )
            known = newest.get(cache.repo)
            if known is None or known.refreshed < cache.refreshed:
                newest[cache.repo] = cache
    return [newest[r] for r in sorted(newest)]


@contextlib.contextmanager
def _opened(path: Path, zstd: str | None) -> Iterator[IO[bytes] | None]:
    """The decompressed primary metadata as a stream; None for a compression not readable here."""
    name = path.name
    if name.endswith(".zst"):
        if zstd is None:
            yield None
            return
        proc = subprocess.Popen(
            [zstd, "-dcq", "--", str(path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        try:
            yield proc.stdout
        finally:
            assert proc.stdout is not None
            proc.stdout.close()
            proc.kill()
            proc.wait()
        return
    openers = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open, ".xml": open}
    opener = next((o for suffix, o in openers.items() if name.endswith(suffix)), None)
    if opener is None:
        yield None
        return
    with opener(path, "rb") as stream:  # type: ignore[operator]
        yield stream


def _packages(stream: IO[bytes], names: set[str]) -> Iterator[tuple[str, str, str]]:
    """(name, arch, evr) of each package in NAMES, scanning the XML as it streams: createrepo_c
    and dnf write name, arch and version first in each <package>."""
    alternatives = b"|".join(re.escape(n.encode()) for n in sorted(names))
    pattern = re.compile(
        rb"<name>(" + alternatives + rb")</name>\s*<arch>([^<]*)</arch>\s*"
        rb'<version epoch="([^"]*)" ver="([^"]*)" rel="([^"]*)"'
    )
    tail = b""
    while True:
        chunk = stream.read(_CHUNK)
        data = tail + chunk
        end = 0
        for m in pattern.finditer(data):
            end = m.end()
            name, arch, epoch, ver, rel = (g.decode("utf-8", "replace") for g in m.groups())
            evr = f"{epoch}:{ver}-{rel}" if epoch not in ("", "0") else f"{ver}-{rel}"
            yield name, arch, evr
        if not chunk:
            return
        # keep what a match could still straddle
        tail = data[max(end, len(data) - 4096) :]


def offered(
    ctx: Context, names: Iterable[str], arches: Iterable[str]
) -> dict[str, str | None] | None:
    """The newest version the enabled repositories' cached metadata offer for each name (for
    one of ARCHES or noarch), None for a name none offers; None when there is no metadata."""
    wanted = set(names)
    arch_set = {*arches, "noarch"}
    found = caches(ctx)
    if not found or not wanted:
        return None
    versions: dict[str, list[str]] = {n: [] for n in wanted}
    read_any = False
    zstd = which("zstd", ctx.env)
    for cache in found:
        try:
            with _opened(ctx.resolve(cache.primary), zstd) as stream:
                if stream is None:
                    continue
                for name, arch, evr in _packages(stream, wanted):
                    if arch in arch_set:
                        versions[name].append(evr)
            read_any = True
        except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError):
            continue
    if not read_any:
        return None
    newest = cmp_to_key(rpm_compare)
    return {n: (max(v, key=newest) if v else None) for n, v in versions.items()}


def lists_date(ctx: Context) -> float | None:
    """When dnf last downloaded the metadata of an enabled repository: the newest repomd.xml."""
    return max((c.refreshed for c in caches(ctx)), default=None)


_COPR_VENDOR = re.compile(r"^Fedora Copr - (user|group) (\S+)$")
_COPR_FILE = re.compile(r"^_copr:[^:]+:(?P<owner>[^:]+):(?P<project>[^:]+)\.repo$")


def copr_projects(ctx: Context, vendor: str) -> list[str]:
    """The COPR projects (`OWNER/PROJECT`, `@GROUP/PROJECT`) whose .repo file dnf copr wrote in
    /etc/yum.repos.d, of the owner an rpm's Vendor ("Fedora Copr - user OWNER") names."""
    m = _COPR_VENDOR.match(vendor.strip())
    if m is None:
        return []
    owner = m.group(2) if m.group(1) == "user" else f"group_{m.group(2)}"
    try:
        names = tree.names(ctx, "/etc/yum.repos.d")
    except OSError:
        return []
    found = []
    for name in names:
        f = _COPR_FILE.match(name)
        if f and f.group("owner") == owner:
            shown = owner if m.group(1) == "user" else f"@{m.group(2)}"
            found.append(f"{shown}/{f.group('project')}")
    return found
