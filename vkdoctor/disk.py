"""Free space on the filesystems a Vulkan compute build and run write to.

The places come from the context (working directory, temp directory, user cache with Mesa's
shader cache, CARGO_TARGET_DIR); each filesystem is measured once, through `disk_usage` (statvfs,
as psutil and df compute it), which tests replace with fake numbers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from vkdoctor import files
from vkdoctor.context import Context
from vkdoctor.model import Severity
from vkdoctor.record import record
from vkdoctor.units import format_size


@record(frozen=True, kw_only=True)
class Usage:
    total: int
    used: int
    free: int


def disk_usage(path: str) -> Usage:
    """psutil.disk_usage's numbers for the filesystem holding `path` (free: what an unprivileged
    user gets; used: all blocks not free, the reserved ones included), without importing psutil."""
    st = os.statvfs(path)
    total = st.f_blocks * st.f_frsize
    used = total - st.f_bfree * st.f_frsize
    return Usage(total=total, used=used, free=st.f_bavail * st.f_frsize)


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
    shader = env.get("MESA_SHADER_CACHE_DIR") or (f"{cache}/mesa_shader_cache" if cache else "")
    if shader:
        out.append(Place(purpose="Mesa shader cache", path=_absolute(ctx, shader)))
    if env.get("CARGO_TARGET_DIR"):
        out.append(Place(purpose="CARGO_TARGET_DIR", path=_absolute(ctx, env["CARGO_TARGET_DIR"])))
    return out


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
    remedy: str | None


def _cleanup_hints(fs: Filesystem) -> list[str]:
    hints = []
    for place, _ in fs.places:
        if place.purpose == "CARGO_TARGET_DIR":
            hints.append(f"cargo clean (CARGO_TARGET_DIR={place.path})")
        elif place.purpose == "Mesa shader cache":
            hints.append(f"rm -rf {place.path}")
        elif place.purpose == "temp directory":
            hints.append(
                f"clear old files in {place.path}, or export TMPDIR to a larger filesystem"
            )
    hints.append(f"see what is big: du -xh --max-depth=2 {fs.mount} | sort -h | tail")
    return hints


def verdict(fs: Filesystem, *, warn_bytes: int, fail_bytes: int) -> SpaceVerdict:
    """ok, warn or fail for one filesystem against the thresholds, with the numbers."""
    u = fs.usage
    if u.total == 0:
        holds = ", ".join(f"{p.purpose} {p.path}" for p, _ in fs.places)
        return SpaceVerdict(
            severity=Severity.WARN,
            title=f"{fs.mount} is not a filesystem with storage",
            message=f"The filesystem mounted at {fs.mount} ({holds}) reports no blocks at all, as "
            "proc, sysfs and some FUSE mounts do: nothing can be stored there, so builds and "
            "caches that expect to write there fail.",
            remedy="Point the variable behind it at a directory on a real disk "
            "(XDG_CACHE_HOME, TMPDIR, CARGO_TARGET_DIR), or run from one.",
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
            remedy="; ".join(_cleanup_hints(fs)),
        )
    if u.free < warn_bytes:
        return SpaceVerdict(
            severity=Severity.WARN,
            title=f"{fs.mount}: {format_size(u.free)} free",
            message=message + f" That is below the warning threshold ({format_size(warn_bytes)}).",
            remedy="; ".join(_cleanup_hints(fs)),
        )
    return SpaceVerdict(
        severity=Severity.OK,
        title=f"{fs.mount}: {format_size(u.free)} free",
        message=message,
        remedy=None,
    )
