"""Free space on the filesystems a Vulkan compute build and run write to.

The places come from the context (working directory, temp directory, user cache with Mesa's
shader cache, CARGO_TARGET_DIR); each filesystem is measured once, through `disk_usage` (statvfs,
as psutil and df compute it), which tests replace with fake numbers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from vkdoctor.model import Remedy, Severity, files
from vkdoctor.model.context import Context
from vkdoctor.model.mountinfo import parse as parse_mountinfo
from vkdoctor.model.record import record, replace
from vkdoctor.model.units import format_size


@record(frozen=True, kw_only=True)
class Usage:
    total: int
    used: int
    free: int
    #: inodes (files, directories, links) in all and free to an unprivileged user; 0 in all
    #: where the filesystem does not count them (btrfs, some FUSE mounts)
    inodes_total: int = 0
    inodes_free: int = 0


def disk_usage(path: str) -> Usage:
    """psutil.disk_usage's numbers for the filesystem holding `path` (free: what an unprivileged
    user gets; used: all blocks not free, the reserved ones included), without importing psutil,
    and its inodes as df -i counts them."""
    st = os.statvfs(path)
    total = st.f_blocks * st.f_frsize
    used = total - st.f_bfree * st.f_frsize
    return Usage(
        total=total,
        used=used,
        free=st.f_bavail * st.f_frsize,
        inodes_total=st.f_files,
        inodes_free=st.f_favail,
    )


@record(frozen=True, kw_only=True)
class Place:
    """A directory something writes to, and why it matters."""

    purpose: str
    path: str


def _absolute(ctx: Context, value: str) -> str:
    p = PurePosixPath(value)
    return str(p if p.is_absolute() else PurePosixPath(ctx.cwd) / p)


def places(ctx: Context) -> list[Place]:
    """The working directory, the temp directory, the user cache directory and Mesa's shader
    cache in it, and CARGO_TARGET_DIR when set, as the process we reason about sees them."""
    env = ctx.env
    out = [Place(purpose="working directory", path=str(ctx.cwd))]
    tmp = next((env[v] for v in ("TMPDIR", "TEMP", "TMP") if env.get(v)), "/tmp")
    out.append(Place(purpose="temp directory", path=_absolute(ctx, tmp)))
    cache = env.get("XDG_CACHE_HOME") or ""
    if not cache.startswith("/"):
        home = env.get("HOME")
        cache = f"{home}/.cache" if home else ""
    if cache:
        out.append(Place(purpose="user cache directory", path=cache))
    # Mesa puts its cache in mesa_shader_cache under MESA_SHADER_CACHE_DIR (or the cache dir)
    base = env.get("MESA_SHADER_CACHE_DIR") or env.get("MESA_GLSL_CACHE_DIR") or cache
    shader = f"{base.rstrip('/')}/mesa_shader_cache" if base else ""
    if shader and _mesa_cache_on(env):
        out.append(Place(purpose="Mesa shader cache", path=_absolute(ctx, shader)))
    if env.get("CARGO_TARGET_DIR"):
        out.append(Place(purpose="CARGO_TARGET_DIR", path=_absolute(ctx, env["CARGO_TARGET_DIR"])))
    return out


def _mesa_cache_on(env: Mapping[str, str]) -> bool:
    return env.get("MESA_SHADER_CACHE_DISABLE", "").lower() not in ("1", "true", "yes")


def nearest_existing(path: Path) -> Path:
    """`path` itself, or its nearest parent that exists (where it would be created)."""
    for candidate in (path, *path.parents):
        if files.exists(candidate):
            return candidate
    return Path("/")


def mount_point(path: Path) -> Path:
    """The top directory of the filesystem holding `path`."""
    path = path.resolve()
    dev = path.stat().st_dev
    while path != path.parent and path.parent.stat().st_dev == dev:
        path = path.parent
    return path


@record(frozen=True, kw_only=True)
class Filesystem:
    """One filesystem, measured once, with every place on it."""

    device: int
    mount: str
    #: (place, the directory really measured: the place or its nearest existing parent)
    places: tuple[tuple[Place, str], ...]
    usage: Usage

    @property
    def purposes(self) -> list[str]:
        return [p.purpose for p, _ in self.places]

    def evidence(self) -> dict[str, object]:
        return {
            "mount": self.mount,
            "device": self.device,
            "total_bytes": self.usage.total,
            "used_bytes": self.usage.used,
            "free_bytes": self.usage.free,
            "total_inodes": self.usage.inodes_total,
            "free_inodes": self.usage.inodes_free,
            "places": [
                {"purpose": p.purpose, "path": p.path, "measured": measured}
                for p, measured in self.places
            ],
        }


def filesystems(
    found: Sequence[Place], usage_of: Callable[[str], Usage] = disk_usage
) -> list[Filesystem]:
    """Group the places by filesystem (st_dev) and measure each filesystem once."""
    groups: dict[int, list[tuple[Place, str]]] = {}
    for place in found:
        measured = nearest_existing(Path(place.path))
        groups.setdefault(measured.stat().st_dev, []).append((place, str(measured)))
    out = []
    for dev, members in groups.items():
        first = Path(members[0][1])
        out.append(
            Filesystem(
                device=dev,
                mount=str(mount_point(first)),
                places=tuple(members),
                usage=usage_of(str(first)),
            )
        )
    return out


@record(frozen=True, kw_only=True)
class SpaceVerdict:
    severity: Severity
    title: str
    message: str
    remedy: Remedy | None


def _cleanup(fs: Filesystem, *, inodes: bool = False) -> Remedy:
    """What frees space (or inodes) there: removing Mesa's shader cache is a command when it
    comes first."""
    hints = _cleanup_hints(fs, inodes=inodes)
    if hints[0].startswith("rm -rf "):
        return Remedy(commands=(hints[0],), text="; " + "; ".join(hints[1:]))
    return Remedy(text="; ".join(hints))


def _too_small(fs: Filesystem, threshold: int, option: str) -> Remedy:
    """A filesystem smaller than the threshold even when empty: no cleanup reaches it."""
    moves = []
    for place, _ in fs.places:
        var = {"temp directory": "TMPDIR", "CARGO_TARGET_DIR": "CARGO_TARGET_DIR"}.get(
            place.purpose, "XDG_CACHE_HOME"
        )
        if var not in moves:
            moves.append(var)
    return Remedy(
        text=f"{fs.mount} holds {format_size(fs.usage.used + fs.usage.free)} in all, less than "
        f"{format_size(threshold)} even when empty, so clearing files cannot reach it: point "
        f"{' and '.join(moves)} at a larger filesystem (export {moves[0]}=DIR), or, when that much "
        f"is enough for what runs here, lower the threshold ({option} SIZE)"
    )


def _cleanup_hints(fs: Filesystem, *, inodes: bool) -> list[str]:
    hints = []
    for place, _ in fs.places:
        if place.purpose == "CARGO_TARGET_DIR":
            hints.append(f"cargo clean (CARGO_TARGET_DIR={place.path})")
        elif place.purpose == "Mesa shader cache" and files.exists(Path(place.path)):
            hints.append(f"rm -rf {place.path}")
        elif place.purpose == "temp directory":
            hints.append(
                f"clear old files in {place.path}, or export TMPDIR to a larger filesystem"
            )
    if inodes:
        hints.append(
            f"see where the files are: du --inodes -x --max-depth=2 {fs.mount} | sort -n | tail"
        )
    else:
        hints.append(f"see what is big: du -xh --max-depth=2 {fs.mount} | sort -h | tail")
    return hints


#: a build or a cache writes thousands of files: fewer free inodes than these fail or warn,
#: unless the filesystem is that small and mostly empty (a share of its inodes still free)
INODES_FAIL = 1000
INODES_WARN = 10000


def verdict(fs: Filesystem, *, warn_bytes: int, fail_bytes: int) -> SpaceVerdict:
    """ok, warn or fail for one filesystem against the byte thresholds and its free inodes,
    whichever is worse, with the numbers."""
    by_bytes = _bytes_verdict(fs, warn_bytes=warn_bytes, fail_bytes=fail_bytes)
    by_inodes = _inodes_verdict(fs)
    if by_inodes is None:
        return by_bytes
    if by_bytes.severity is Severity.OK or by_bytes.remedy is None:
        return by_inodes
    # short of both: one verdict naming both, the worse one's severity
    u = fs.usage
    pct = 100.0 * (u.inodes_total - u.inodes_free) / u.inodes_total
    threshold = fail_bytes if by_bytes.severity is Severity.FAIL else warn_bytes
    where = f"; see where the files are: du --inodes -x --max-depth=2 {fs.mount} | sort -n | tail"
    if u.used + u.free < threshold:  # a larger filesystem is the fix, for both
        where = ""
    return SpaceVerdict(
        severity=max(by_bytes.severity, by_inodes.severity, key=lambda s: s.rank),
        title=f"{by_bytes.title}, {u.inodes_free} inodes free",
        message=f"{by_bytes.message} It is short of inodes too: {u.inodes_free} free of "
        f"{u.inodes_total} ({pct:.0f}% used), and every new file needs one.",
        remedy=replace(by_bytes.remedy, text=by_bytes.remedy.text + where),
    )


def _inodes_verdict(fs: Filesystem) -> SpaceVerdict | None:
    """warn or fail when the filesystem has bytes but few inodes left: every new file, a link
    step's output included, then fails with 'No space left on device' (ENOSPC, as for bytes)."""
    u = fs.usage
    if u.inodes_total == 0:
        return None
    free, total = u.inodes_free, u.inodes_total
    if free >= INODES_WARN or free * 10 >= total:
        return None
    fail = free < INODES_FAIL and free * 20 < total
    holds = ", ".join(f"{p.purpose} {p.path}" for p, _ in fs.places)
    numbers = f"{free} inodes free of {total} ({100.0 * (total - free) / total:.0f}% used)"
    return SpaceVerdict(
        severity=Severity.FAIL if fail else Severity.WARN,
        title=f"{fs.mount}: only {free} inodes free" if fail else f"{fs.mount}: {free} inodes free",
        message=f"The filesystem mounted at {fs.mount} ({holds}): {numbers}, with "
        f"{format_size(u.free)} of bytes free. Every new file needs an inode: "
        + (
            "creating one fails with 'No space left on device' although df -h shows space, "
            "so compiles, links and cache writes fail."
            if fail
            else "a build that writes many files runs out before it runs out of bytes."
        ),
        remedy=_cleanup(fs, inodes=True),
    )


def _bytes_verdict(fs: Filesystem, *, warn_bytes: int, fail_bytes: int) -> SpaceVerdict:
    u = fs.usage
    if u.total == 0:
        holds = ", ".join(f"{p.purpose} {p.path}" for p, _ in fs.places)
        return SpaceVerdict(
            severity=Severity.WARN,
            title=f"{fs.mount} is not a filesystem with storage",
            message=f"The filesystem mounted at {fs.mount} ({holds}) reports no blocks at all, as "
            "proc, sysfs and some FUSE mounts do: nothing can be stored there, so builds and "
            "caches that expect to write there fail.",
            remedy=Remedy(
                text="Point the variable behind it at a directory on a real disk "
                "(XDG_CACHE_HOME, TMPDIR, CARGO_TARGET_DIR), or run from one."
            ),
        )
    # as df and psutil count it: the blocks reserved for root are neither used nor available
    pct = 100.0 * u.used / (u.used + u.free) if u.used + u.free else 100.0
    holds = ", ".join(f"{p.purpose} {p.path}" for p, _ in fs.places)
    numbers = f"{format_size(u.free)} free of {format_size(u.total)} ({pct:.0f}% used)"
    message = f"The filesystem mounted at {fs.mount} ({holds}): {numbers}."
    if u.free < fail_bytes:
        return SpaceVerdict(
            severity=Severity.FAIL,
            title=f"{fs.mount}: only {format_size(u.free)} free",
            message=message
            + f" That is below the fail threshold ({format_size(fail_bytes)}): builds and "
            "links die with 'No space left on device', and a script may print PASS over them.",
            remedy=_cleanup(fs)
            if u.used + u.free >= fail_bytes
            else _too_small(fs, fail_bytes, "--disk-fail"),
        )
    if u.free < warn_bytes:
        return SpaceVerdict(
            severity=Severity.WARN,
            title=f"{fs.mount}: {format_size(u.free)} free",
            message=message + f" That is below the warning threshold ({format_size(warn_bytes)}).",
            remedy=_cleanup(fs)
            if u.used + u.free >= warn_bytes
            else _too_small(fs, warn_bytes, "--disk-warn"),
        )
    return SpaceVerdict(
        severity=Severity.OK,
        title=f"{fs.mount}: {format_size(u.free)} free",
        message=message,
        remedy=None,
    )


# ---------------------------------------------------------------------------------------------
# Where the drivers write: can it be written at all?

#: Mesa maps its cache index (64Ki keys of 20 bytes, about 1.3 MiB) with mmap after ftruncate:
#: on a filesystem with less free than this, the first write into the map is a SIGBUS (measured:
#: the probe dies of SIGBUS on a full 64 KiB tmpfs, at its first kernel)
SHADER_INDEX_BYTES = 2 * 1024 * 1024


def mesa_cache_dir(ctx: Context, home: str | None) -> tuple[str, str] | None:
    """Mesa's shader cache directory and the variable that decides it (Mesa 22: the variable's
    directory with mesa_shader_cache appended; without one, the passwd entry's home, not $HOME)."""
    for var in ("MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR", "XDG_CACHE_HOME"):
        value = ctx.env.get(var)
        if value:
            return f"{_absolute(ctx, value).rstrip('/')}/mesa_shader_cache", var
    if home:
        return f"{home.rstrip('/')}/.cache/mesa_shader_cache", "the home directory"
    return None


@record(frozen=True, kw_only=True)
class WritePlace:
    purpose: str
    path: str
    #: the variable (or default) that puts it there
    decided_by: str
    #: what happens when it cannot be written: "off" (the writer turns itself off), "fails"
    unwritable: str
    #: a full filesystem makes the writer die of SIGBUS (Mesa's mmapped index)
    mmapped: bool = False


def write_places(ctx: Context, *, home: str | None, own_cache: str | None) -> list[WritePlace]:
    """Where the drivers, the programs and vkdoctor write while Vulkan compute runs."""
    out = []
    mesa = mesa_cache_dir(ctx, home)
    mesa_on = _mesa_cache_on(ctx.env)
    if mesa is not None and mesa_on:
        out.append(
            WritePlace(
                purpose="Mesa shader cache",
                path=mesa[0],
                decided_by=mesa[1],
                unwritable="off",
                mmapped=True,
            )
        )
    nvidia = ctx.env.get("__GL_SHADER_DISK_CACHE_PATH")
    if nvidia and ctx.env.get("__GL_SHADER_DISK_CACHE") != "0":
        out.append(
            WritePlace(
                purpose="NVIDIA shader cache",
                path=_absolute(ctx, nvidia),
                decided_by="__GL_SHADER_DISK_CACHE_PATH",
                unwritable="off",
            )
        )
    var = next((v for v in ("TMPDIR", "TEMP", "TMP") if ctx.env.get(v)), None)
    out.append(
        WritePlace(
            purpose="temp directory",
            path=_absolute(ctx, ctx.env[var]) if var else "/tmp",
            decided_by=var or "the default",
            unwritable="fails",
        )
    )
    if own_cache:
        out.append(
            WritePlace(
                purpose="vkdoctor's cache",
                path=own_cache,
                decided_by="XDG_CACHE_HOME" if ctx.env.get("XDG_CACHE_HOME") else "HOME",
                unwritable="fails",
                # the load test's and the probe's Mesa shader cache is kept in it, unless the
                # user chose one (vkdoctor.cachedir.driver_env)
                mmapped=mesa_on
                and not (
                    ctx.env.get("MESA_SHADER_CACHE_DIR") or ctx.env.get("MESA_GLSL_CACHE_DIR")
                ),
            )
        )
    return out


@record(frozen=True, kw_only=True)
class Mount:
    point: str
    fstype: str
    options: tuple[str, ...]


def mount_of(path: Path, mountinfo: str) -> Mount | None:
    """The mount that holds `path` (the longest mount point above it) in /proc/self/mountinfo."""
    real = str(path.resolve())
    best: Mount | None = None
    for line in parse_mountinfo(mountinfo):
        point, fstype = line.point, line.fstype
        if fstype is None:
            continue
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best.point)):
            best = Mount(point=point, fstype=fstype, options=line.options)
    return best


@record(frozen=True, kw_only=True)
class WriteProblem:
    place: WritePlace
    #: the directory looked at: the place or its nearest existing parent
    measured: str
    #: "read-only" (the mount), "not-a-directory" (a file in the way), "denied"
    #: (permissions), "full"
    problem: str
    free: int
    mount: Mount | None


def write_problems(places_: list[WritePlace], mountinfo: str) -> list[WriteProblem]:
    out = []
    for place in places_:
        measured = nearest_existing(Path(place.path))
        try:
            st = os.statvfs(measured)
        except OSError:
            continue
        if st.f_blocks == 0:
            continue  # proc, sysfs: VKS001 says that nothing can be stored there
        mount = mount_of(measured, mountinfo)
        free = st.f_bavail * st.f_frsize
        if st.f_flag & os.ST_RDONLY:
            problem = "read-only"
        elif not measured.is_dir():
            problem = "not-a-directory"  # a file where a directory is to be made: nobody can
        elif not os.access(measured, os.W_OK | os.X_OK):
            problem = "denied"
        elif place.mmapped and free < SHADER_INDEX_BYTES:
            problem = "full"
        else:
            continue
        out.append(
            WriteProblem(
                place=place, measured=str(measured), problem=problem, free=free, mount=mount
            )
        )
    return out
