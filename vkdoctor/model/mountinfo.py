"""The one reader of /proc/self/mountinfo's lines: each mount's point, options and type."""

from __future__ import annotations

from vkdoctor.model.record import record


@record(frozen=True, kw_only=True)
class MountLine:
    #: where it is mounted, unescaped (a space, tab, newline or backslash in it is written \ooo)
    point: str
    #: the per-mount options (ro, noexec, ...)
    options: tuple[str, ...]
    #: the filesystem type after the " - " separator; None on a line without one
    fstype: str | None


def parse(text: str) -> list[MountLine]:
    """Every mount of `text` in its order (later over-mounts last); lines too short are skipped."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 6:
            continue
        after = line.split(" - ", 1)[1].split() if " - " in line else []
        out.append(
            MountLine(
                point=unescape(parts[4]),
                options=tuple(parts[5].split(",")),
                fstype=after[0] if after else None,
            )
        )
    return out


def unescape(field: str) -> str:
    """A mountinfo field as the path it names: the kernel writes space, tab, newline and
    backslash as a backslash and three octal digits."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        code = field[i + 1 : i + 4]
        if field[i] == "\\" and len(code) == 3 and all(c in "01234567" for c in code):
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)
