"""Why an overlay could not be built, as data: a message naming the path, and a hint."""

from __future__ import annotations

import errno


class OverlayError(Exception):
    """The overlay (or the store behind it) cannot be built; `message` says why, `hint` what to do
    (`commands`: the hint's commands, when it is only commands to run)."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        path: str | None = None,
        commands: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = path
        self.commands = commands


class StoreError(OverlayError):
    """The private store under the cache directory is unusable (read-only, full, not ours)."""


class ArchiveError(OverlayError):
    """A package file is corrupt, truncated, or not the format its name says."""


def describe_os_error(exc: OSError) -> str:
    """A short reason for an OSError, in words a user acts on."""
    reasons = {
        errno.EROFS: "the file system is read-only",
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "the disk quota is exhausted",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENOTDIR: "a component of the path is not a directory",
        errno.ENOENT: "no such file or directory",
    }
    return reasons.get(exc.errno or 0, exc.strerror or str(exc))


def store_hint(exc: OSError) -> str:
    """What to do when vkdoctor's store cannot be written, by why."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free some space there, or point XDG_CACHE_HOME at a filesystem with space"
    return (
        "point XDG_CACHE_HOME at a directory this user can write "
        "(for one run: XDG_CACHE_HOME=$(mktemp -d) vkdoctor ...)"
    )
