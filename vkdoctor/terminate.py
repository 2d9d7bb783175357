"""SIGTERM unwinds vkdoctor as an exit does (finally blocks, atexit handlers: temporary
directories removed, children stopped), then kills it with the same signal. Inside `held()`
it waits for the end of the block: a temporary directory created or removed half-way would be
left behind."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from types import FrameType, TracebackType
else:
    # the C module under `signal`: `signal` itself builds its enums on import (enum,
    # functools), and this module is imported before the load test's child is forked
    import _signal as signal

_held = [0]  # the depth of held() blocks
_pending: list[int] = []
#: the signal that ended the run, once it has unwound; vkdoctor.launch dies of it at the end
received: list[int] = []


def install() -> None:
    signal.signal(signal.SIGTERM, _terminated)


def _exit(signum: int) -> None:
    signal.signal(signum, signal.SIG_IGN)  # a second one while cleaning up
    received.append(signum)
    raise SystemExit(128 + signum)  # what a shell reports for a process the signal killed


def die_of_it() -> None:
    """After the cleanup: end by the signal received, so the parent sees what it sent."""
    if received:
        signal.signal(received[0], signal.SIG_DFL)
        os.kill(os.getpid(), received[0])


def _terminated(signum: int, frame: FrameType | None) -> None:
    if _held[0]:
        _pending.append(signum)
        return
    _exit(signum)


class held:  # used as `with terminate.held():`, as a function would be
    """A SIGTERM that comes inside the block takes effect at its end. (A class, not
    contextlib.contextmanager: this module is imported before the load test's child is forked,
    and contextlib's imports would delay the fork.)"""

    def __enter__(self) -> None:
        _held[0] += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _held[0] -= 1
        if not _held[0] and _pending:
            _exit(_pending.pop())
