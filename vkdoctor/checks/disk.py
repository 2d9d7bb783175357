"""VKS: free disk space where builds, temp files and shader caches go."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar

from vkdoctor.checks.base import Check
from vkdoctor.machine.disk import (
    Usage,
    WriteProblem,
    disk_usage,
    filesystems,
    places,
    verdict,
    write_places,
    write_problems,
)
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace
from vkdoctor.model.units import format_size


class FreeSpace(Check):
    """The filesystems Vulkan compute work writes to have free space and free inodes.

    vkdoctor measures, once per filesystem, the free space where the working directory, the temp
    directory, the user cache directory (with Mesa's shader cache) and CARGO_TARGET_DIR (when
    set) live; a directory that does not exist yet is measured at its nearest existing parent.
    Below the warning threshold (--disk-warn, default 5G) it warns; below the fail threshold
    (--disk-fail, default 1G) it fails. Free inodes count as well (df -i): with fewer than 1,000
    left (and under 5% of all) it fails, under 10,000 (and 10%) it warns. A full disk makes links and shader-cache writes fail with
    "No space left on device", and a test script that ignores one red cell can print PASS over it.
    """

    code = "VKS001"
    family = "disk"
    title = "Free disk space"
    live_only = True

    #: the one call that reads the disk; tests put fake numbers here
    usage_of: ClassVar[Callable[[str], Usage]] = staticmethod(disk_usage)

    def run(self, ctx: Context) -> Iterable[Finding]:
        warn_bytes = ctx.options.disk_warn_bytes
        fail_bytes = ctx.options.disk_fail_bytes
        for fs in filesystems(places(ctx), type(self).usage_of):
            v = verdict(fs, warn_bytes=warn_bytes, fail_bytes=fail_bytes)
            yield self.finding(
                v.severity,
                v.title,
                v.message,
                remedy=v.remedy,
                evidence={
                    **fs.evidence(),
                    "warn_bytes": warn_bytes,
                    "fail_bytes": fail_bytes,
                },
            )


def _home(ctx: Context) -> str | None:
    """The passwd entry's home directory (Mesa's default), else $HOME."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return ctx.env.get("HOME")


def _mountinfo() -> str:
    try:
        return Path("/proc/self/mountinfo").read_text()
    except OSError:
        return ""


class WritableCaches(Check):
    """The shader caches and temp directories that drivers and vkdoctor write to can be written.

    Mesa's shader cache (`$MESA_SHADER_CACHE_DIR`, else `$XDG_CACHE_HOME`, else `~/.cache`, with
    `mesa_shader_cache` appended) keeps an index file that it maps into memory: on a full
    filesystem the first shader compile dies of SIGBUS, which looks like a driver crash. On a
    read-only one, or one this user cannot write, Mesa turns its cache off (nothing fails; every
    run compiles every shader again). A temp directory (`$TMPDIR`) or vkdoctor's own cache that
    cannot be written breaks what writes there. A directory that cannot be written counts even
    when its filesystem has free bytes.
    """

    code = "VKS002"
    family = "disk"
    title = "Shader caches and temp directories can be written"
    live_only = True
    explains = ("VKS001", "VKR001", "VKT001")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        if symptom.code == "VKS001":
            return symptom.evidence.get("mount") == cause.evidence.get("mount")
        if symptom.code == "VKR001":
            return symptom.evidence.get("status") in ("crash", "error", "timeout")
        return symptom.evidence.get("verdict") == "crash"

    def run(self, ctx: Context) -> Iterable[Finding]:
        own = str(ctx.options.cache_dir) if ctx.options.cache_dir else None
        found = write_places(ctx, home=_home(ctx), own_cache=own)
        problems = write_problems(found, _mountinfo())
        # one full filesystem is one cause, however many of these places it holds
        full: dict[str, list[WriteProblem]] = {}
        for p in problems:
            if p.problem == "full":
                full.setdefault(p.mount.point if p.mount else p.measured, []).append(p)
        for p in problems:
            if p.problem != "full":
                yield self._finding(ctx, p)
            elif full[p.mount.point if p.mount else p.measured][0] is p:
                others = full[p.mount.point if p.mount else p.measured][1:]
                finding = self._finding(ctx, p)
                if others:
                    also = "; ".join(f"{o.place.purpose} {o.place.path}" for o in others)
                    finding = replace(
                        finding,
                        message=f"{finding.message} The same filesystem holds {also}.",
                        evidence={**finding.evidence, "also": [o.place.path for o in others]},
                    )
                yield finding

    def _finding(self, ctx: Context, p: WriteProblem) -> Finding:
        place = p.place
        mount = p.mount
        on = (
            f"{mount.point} ({mount.fstype}, mounted {','.join(mount.options)})"
            if mount
            else p.measured
        )
        evidence = {
            "purpose": place.purpose,
            "path": place.path,
            "decided_by": place.decided_by,
            "measured": p.measured,
            "problem": p.problem,
            "free_bytes": p.free,
            "mount": mount.point if mount else None,
            "fstype": mount.fstype if mount else None,
            "mount_options": list(mount.options) if mount else [],
        }
        where = f"{place.purpose} {place.path} (from {place.decided_by})"
        if p.problem == "full":
            elsewhere = (
                f"{_home(ctx) or '~'}/.cache" if place.decided_by != "XDG_CACHE_HOME" else ""
            )
            move = "export MESA_SHADER_CACHE_DIR=DIR on a filesystem with space" + (
                f" (for example {elsewhere})" if elsewhere else ""
            )
            return self.fail(
                "Mesa's shader cache is on a full filesystem: drivers die of SIGBUS",
                f"{where} is on {on}, which has {format_size(p.free)} free. Mesa maps its cache "
                f"index (about 1.3 MiB) into memory and writes into it: on a full filesystem "
                "that write is a SIGBUS, and the first Vulkan program that compiles a shader "
                "dies as if its driver crashed. The driver is not the cause; the disk is.",
                remedy=Remedy(
                    text=f"Free space on {mount.point if mount else p.measured}; or move the "
                    f"cache: {move}; or, for this run, export MESA_SHADER_CACHE_DISABLE=true"
                ),
                **evidence,
            )
        why = {
            "read-only": f"{on} is mounted read-only",
            "not-a-directory": f"{p.measured} is a file, not a directory",
        }.get(p.problem, f"this user may not write {p.measured}")
        if place.unwritable == "off":
            var = place.decided_by if place.decided_by.isupper() else None
            return self.finding(
                Severity.INFO,
                f"{place.purpose} {place.path} cannot be written: the cache is off",
                f"{where}: {why}. The driver turns its disk cache off: nothing fails, but "
                "every run compiles every shader again.",
                remedy=(
                    Remedy(
                        text=f"Point {var} at a directory you can write"
                        if var
                        else "Make the directory writable, or point MESA_SHADER_CACHE_DIR at one you "
                        "can write"
                    )
                ),
                evidence=evidence,
            )
        var = (
            place.decided_by
            if place.decided_by.isupper()
            else "TMPDIR"
            if place.purpose == "temp directory"
            else "XDG_CACHE_HOME"
        )
        fix = Remedy(commands=(f"export {var}=DIR",), text=", a directory you can write")
        return self.warn(
            f"{place.purpose} {place.path} cannot be written",
            f"{where}: {why}{', even if it has free space' if p.problem != 'not-a-directory' else ''}"
            ". What writes there fails (compilers, pip, tempfile; vkdoctor's overlays).",
            remedy=fix,
            **evidence,
        )


CHECKS: tuple[type[Check], ...] = (FreeSpace, WritableCaches)
