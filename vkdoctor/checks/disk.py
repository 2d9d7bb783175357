"""VKS: free disk space where builds, temp files and shader caches go."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar

from vkdoctor.checks.base import Check
from vkdoctor.context import Context
from vkdoctor.disk import Usage, disk_usage, filesystems, places, verdict
from vkdoctor.model import Finding


class FreeSpace(Check):
    """The filesystems Vulkan compute work writes to have free space.

    vkdoctor measures, once per filesystem, the free space where the working directory, the temp
    directory, the user cache directory (with Mesa's shader cache) and CARGO_TARGET_DIR (when
    set) live; a directory that does not exist yet is measured at its nearest existing parent.
    Below the warning threshold (--disk-warn, default 5G) it warns; below the fail threshold
    (--disk-fail, default 1G) it fails. A full disk makes links and shader-cache writes fail with
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


CHECKS: tuple[type[Check], ...] = (FreeSpace,)
