"""What `vkdoctor check`'s and `run-probe`'s words say before the command line interface has
read them: vkdoctor.launch starts the load test's child, the package reading or the probe's child
early, and hands them these values. Part of the face: nothing below it reads the command line.
Imports nothing at the top."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from vkdoctor.children.probe import ProbeRequest

#: the longest --timeout: a week (the waits that use it overflow at about 24.8 days)
MAX_TIMEOUT = 7 * 24 * 3600.0


def loads_drivers(args: Sequence[str]) -> bool:
    """Whether the command line is one whose run starts the load test: `check` or `drivers` on
    the live machine (a guess from the raw words; the load test takes the child only if its
    environment fits, vkdoctor.speed.zygote)."""
    if not args or args[0] not in ("check", "drivers"):
        return False
    return not any(a == "--root" or a.startswith("--root=") or a in ("--help", "-h") for a in args)


def plain_selection(args: Sequence[str]) -> bool:
    """No option that changes which checks run (the load test adopts a child handed its
    request ahead only if the request is the same, so this only saves a wasted start)."""
    return not any(a.partition("=")[0] in ("--select", "--ignore") for a in args)


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


_VALUED = ("--adapter", "--backend", "--seed", "--shader-dir", "--timeout", "--python")
_IGNORED_VALUED = ("--json", "--format", "--junit")
_IGNORED_FLAGS = ("--strict", "-v", "-vv", "--verbose", "--debug", "--redact")


def request_from_argv(argv: list[str]) -> ProbeRequest | None:
    """The request `run-probe ARGV` will make, or None when ARGV is anything but plain
    (anything this parser does not understand means: no head start)."""
    import sys
    from pathlib import Path

    from vkdoctor.children.probe import ProbeRequest

    values: dict[str, str] = {}
    flags = {"--cpu": False, "--gpu": False, "--capabilities": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        if arg in flags:
            flags[arg] = True
        elif arg in _IGNORED_FLAGS:
            pass
        elif name in _VALUED or name in _IGNORED_VALUED:
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                return None
            if name in values:
                return None
            values[name] = value
        else:
            return None
        i += 1
    try:
        timeout = float(values.get("--timeout", "60"))
        seed = int(values["--seed"]) if "--seed" in values else None
    except ValueError:
        return None
    backend = values.get("--backend", "vulkan")
    shader_dir = values.get("--shader-dir")
    python = values.get("--python", sys.executable)
    if (
        not 0.1 <= timeout <= MAX_TIMEOUT  # nan too
        or (seed is not None and seed < 0)
        or backend not in ("vulkan", "opengl")
        or flags["--cpu"] + flags["--gpu"] + ("--adapter" in values) > 1
        or not values.get("--adapter", "x").strip()
        or (shader_dir is not None and not _is_dir(shader_dir))
        or not Path(python).is_file()
    ):
        return None
    return ProbeRequest(
        cpu=flags["--cpu"],
        gpu=flags["--gpu"],
        capabilities=flags["--capabilities"],
        adapter=values.get("--adapter"),
        backend=backend,
        seed=seed,
        shader_dir=Path(shader_dir).resolve() if shader_dir else None,
        timeout=timeout,
        python=python,
    )


def _is_dir(path: str) -> bool:
    from pathlib import Path

    # the early start reads the raw command line: a path that cannot even be looked at is
    # click's to refuse, as a usage error
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False
