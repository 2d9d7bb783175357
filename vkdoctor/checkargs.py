"""What `vkdoctor check`'s words say before the command line interface has read them (it
starts the load test's child and the package reading early: vkdoctor.launch). Imports nothing."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

#: the longest --timeout: a week (the waits that use it overflow at about 24.8 days)
MAX_TIMEOUT = 7 * 24 * 3600.0


def plain_timeout(argv: Sequence[str]) -> float | None:
    """The --timeout of `vkdoctor check ARGV` when ARGV is plain (no --root, --select,
    --ignore or --help), read before the command line interface is; None otherwise."""
    timeout = 60.0
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if name in ("--root", "--select", "--ignore", "--help", "-h") or arg == "--":
            return None
        if name == "--timeout":
            if not eq:
                if not args:
                    return None
                value = args.pop(0)
            try:
                timeout = float(value)
            except ValueError:
                return None
            if not 0.1 <= timeout <= MAX_TIMEOUT:  # nan too: click refuses it
                return None
    return timeout
