"""The one fork-and-pipe block: a child forked with pipes to and from its parent.

os only: the load test's child is forked from here before pathlib or typing is imported
(vkdoctor.speed.zygote).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def fork_piped(
    child: Callable[[list[int]], object], *to_child: bool
) -> tuple[int, list[int]] | None:
    """Fork with one pipe per entry of `to_child` (True: the parent writes and the child reads;
    False: the other way). The child closes the parent's ends and runs `child(its ends)`, which
    ends the process (os._exit); the parent closes the child's ends and gets (pid, its ends).
    None, with nothing left open, when a pipe or the fork cannot be made."""
    pipes: list[tuple[int, int]] = []
    try:
        for _ in to_child:
            pipes.append(os.pipe())
        pid = os.fork()
    except OSError:
        _close(*(fd for pipe in pipes for fd in pipe))
        return None
    # (read, write) of each pipe: the child reads what the parent writes when to_child
    mine = [w if down else r for (r, w), down in zip(pipes, to_child, strict=True)]
    theirs = [r if down else w for (r, w), down in zip(pipes, to_child, strict=True)]
    if pid == 0:
        _close(*mine)
        child(theirs)
        os._exit(70)  # `child` returned: it must not run on as a copy of the parent
    _close(*theirs)
    return pid, mine


def _close(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
