"""What the commands share: the context from the real host, shared options, report output."""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from vkdoctor import __version__
from vkdoctor.cachedir import cache_home, cache_path, distrusted
from vkdoctor.checkargs import MAX_TIMEOUT
from vkdoctor.model import Report, exit_code, files
from vkdoctor.model.context import Context, Options, take_facts
from vkdoctor.trust import foreign_link

if TYPE_CHECKING:
    from vkdoctor.model.redact import Identity
    from vkdoctor.render.style import Style

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("text", "json", "github")

#: a clean run whose --json/--junit file could not be written (the usage-error code: the
#: output asked for cannot be produced)
EXIT_OUTPUT = 2

#: where the options handled by emit() itself (not by each command) keep their values
_META_JUNIT = "vkdoctor.junit"
_META_REDACT = "vkdoctor.model.redact"


def elevated() -> bool:
    """True when this process runs with AT_SECURE (setuid/setgid): the loader then ignores env vars."""
    try:
        return os.getuid() != os.geteuid() or os.getgid() != os.getegid()
    except AttributeError:
        return False


def search_paths_from(given: tuple[str, ...], env: Mapping[str, str]) -> tuple[Path, ...]:
    paths = [Path(p) for p in given]
    paths += [Path(p) for p in env.get("VKDOCTOR_SEARCH_PATH", "").split(":") if p]
    return tuple(paths)


def host_context(
    *,
    root: str | None = None,
    search_path: tuple[str, ...] = (),
    timeout: float = 60.0,
    **options: Any,
) -> Context:
    """The Context of a command on this host: its environment and options, and the load test's
    children from the child forked at launch (vkdoctor.speed.zygote)."""
    from vkdoctor.speed import zygote

    env = dict(os.environ)
    ctx = Context(
        root=Path(root).resolve() if root else Path("/"),
        env=env,
        elevated=elevated(),
        machine=os.uname().machine or "x86_64",
        cwd=Path.cwd(),
        options=Options(
            search_paths=search_paths_from(search_path, env),
            timeout=timeout,
            cache_dir=cache_home(env),
            **options,
        ),
        spawner=zygote.SPAWNER,
    )
    if ctx.options.cache_dir is not None:
        from vkdoctor.speed.factcache import FactCache

        ctx.store = FactCache(ctx.options.cache_dir)
    if not ctx.live:
        from vkdoctor.elf.platform import tree_machine

        ctx.machine = tree_machine(ctx)
    take_facts(ctx)
    return ctx


def _byte_size(ctx: click.Context, param: click.Parameter, value: Any) -> int:
    """A size such as 5G, 500M, 1.5GiB or 4096 (bytes), as an int of bytes."""
    from vkdoctor.model.units import parse_size

    try:
        return parse_size(str(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc


def disk_options(f: F) -> F:
    defaults = Options()
    f = click.option(
        "--disk-fail",
        "disk_fail",
        default=str(defaults.disk_fail_bytes),
        callback=_byte_size,
        metavar="SIZE",
        help="Fail when a filesystem vkdoctor checks has less free space (e.g. 1G, 500M). [default: 1G]",
    )(f)
    f = click.option(
        "--disk-warn",
        "disk_warn",
        default=str(defaults.disk_warn_bytes),
        callback=_byte_size,
        metavar="SIZE",
        help="Warn when a filesystem vkdoctor checks has less free space (e.g. 5G). [default: 5G]",
    )(f)
    return f


def root_option(f: F) -> F:
    return click.option(
        "--root",
        type=click.Path(exists=True, file_okay=False, dir_okay=True),
        help="Inspect this tree (a container image, a chroot) instead of the live host. Static checks only.",
    )(f)


def _no_empty_path(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> Any:
    if any(not v for v in value):
        raise click.BadParameter("an empty path would mean the current directory; give a directory")
    return value


def search_path_option(f: F) -> F:
    return click.option(
        "--search-path",
        multiple=True,
        type=click.Path(),
        callback=_no_empty_path,
        help="A directory to look in for missing libraries (repeatable; also VKDOCTOR_SEARCH_PATH).",
    )(f)


class Seconds(click.ParamType):  # type: ignore[type-arg]
    """A finite number of seconds from `low` to MAX_TIMEOUT (the waits below it take no more)."""

    name = "seconds"

    def __init__(self, low: float) -> None:
        self.low = low

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not self.low <= seconds <= MAX_TIMEOUT:  # also false for nan
            self.fail(
                f"{value} is not a number of seconds from {self.low:g} to {MAX_TIMEOUT:g} (a week)",
                param,
                ctx,
            )
        return seconds


def adapter_text(_ctx: click.Context | None, param: click.Parameter, value: Any) -> Any:
    """--adapter TEXT: part of an adapter's name; an empty one would match every adapter."""
    if value is not None and not str(value).strip():
        raise click.BadParameter("give part of an adapter's name, e.g. llvmpipe", param=param)
    return value


def timeout_option(children: str) -> Callable[[F], F]:
    """--timeout, whose help names the child processes (`children`) the command starts."""

    def add(f: F) -> F:
        return click.option(
            "--timeout",
            type=Seconds(0.1),
            default=60.0,
            show_default=True,
            help=f"Seconds each child process this command starts ({children}) may run before "
            f"it is killed; from 0.1 to {MAX_TIMEOUT:g} (a week).",
        )(f)

    return add


def output_path(_ctx: click.Context | None, param: click.Parameter, value: Any) -> Any:
    """An output FILE ('-': stdout) that can be written, checked before anything runs, so that a
    typo is a usage error and not a failure after the whole check."""
    if value is None or value == "-":
        return value
    if not value:
        raise click.BadParameter("give a file name ('-' for stdout)", param=param)
    target = Path(value)
    parent = target.parent
    if len(target.name.encode(errors="surrogateescape")) > 255:
        raise click.BadParameter(f"the file name {target.name[:40]}... is too long", param=param)
    if files.is_dir(target):
        raise click.BadParameter(f"{value} is a directory", param=param)
    if not files.is_dir(parent):
        raise click.BadParameter(
            f"the directory {parent} does not exist or cannot be entered", param=param
        )
    if not os.access(parent, os.W_OK) and not (files.exists(target) and os.access(target, os.W_OK)):
        try:
            read_only = bool(os.statvfs(parent).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        why = "is on a read-only file system" if read_only else "is not writable by you"
        raise click.BadParameter(
            f"cannot write {value}: the directory {parent.absolute()} {why}", param=param
        )
    return value


def _remember(key: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if key == _META_JUNIT:
            output_path(ctx, param, value)
        ctx.meta[key] = value
        return value

    return callback


def gpu_option(f: F) -> F:
    """--gpu: the gate's question, whether compute runs on a GPU (not on lavapipe)."""
    return click.option(
        "--gpu",
        is_flag=True,
        help="The probe must pass on a Vulkan adapter that is not a CPU (discrete, integrated or "
        "virtual GPU): a pass on lavapipe fails. For GPU test gates.",
    )(f)


def capabilities_option(f: F) -> F:
    """--capabilities: the capability ladder after the probe."""
    return click.option(
        "--capabilities",
        is_flag=True,
        help="After the probe, the capability ladder: f16, bf16 storage, subgroups, atomics, the "
        "workgroup memory and invocation limits, large dispatches and bindings, d < 4, "
        "timestamps; each checked against a reference (a few seconds on lavapipe).",
    )(f)


def one_adapter_choice(cpu: bool, adapter: str | None, gpu: bool = False) -> None:
    """--cpu, --gpu and --adapter each choose the adapter: at most one of them."""
    given = [name for name, on in (("--cpu", cpu), ("--gpu", gpu), ("--adapter", adapter)) if on]
    if len(given) > 1:
        raise click.UsageError(f"{' and '.join(given)} choose the adapter two ways; give one")


def adapter_options(f: F) -> F:
    """--cpu, --adapter TEXT and --backend: which wgpu adapter a child (probe, bench) uses."""
    f = click.option(
        "--backend",
        type=click.Choice(["vulkan", "opengl"]),
        default="vulkan",
        show_default=True,
        help="Which wgpu backend; adapters on other backends never count.",
    )(f)
    f = click.option(
        "--adapter",
        metavar="TEXT",
        callback=adapter_text,
        help="Use the adapter whose name contains TEXT.",
    )(f)
    f = click.option(
        "--cpu",
        is_flag=True,
        help="Use a CPU adapter on the chosen backend (lavapipe on Vulkan, llvmpipe on OpenGL).",
    )(f)
    return f


def output_options(f: F) -> F:
    # --junit and --redact are handled by emit() through the click context, so commands need not
    # pass them along.
    f = click.option(
        "--junit",
        metavar="FILE",
        expose_value=False,
        callback=_remember(_META_JUNIT),
        help="Also write a JUnit XML file (one test case per check and per probe case).",
    )(f)
    f = click.option(
        "--redact",
        is_flag=True,
        expose_value=False,
        callback=_remember(_META_REDACT),
        help="Remove the home directory, user and host names, GPU UUIDs and serials from every "
        "output, for pasting into a public issue.",
    )(f)
    f = click.option(
        "--json",
        "json_file",
        metavar="FILE",
        callback=output_path,
        help="Write the JSON report to FILE ('-' for stdout).",
    )(f)
    f = click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="text",
        show_default=True,
        help="How to print the report on stdout. github: workflow-command annotations, and a "
        "Markdown summary appended to $GITHUB_STEP_SUMMARY when it is set.",
    )(f)
    f = click.option("--strict", is_flag=True, help="Treat warnings as failures (exit 1).")(f)
    f = click.option(
        "-v",
        "--verbose",
        count=True,
        help="-v: list every check, one line each; -vv: every finding's details and evidence "
        "too (--json always holds them).",
    )(f)
    f = click.option(
        "--debug", is_flag=True, help="Keep tracebacks of vkdoctor's own errors in the report."
    )(f)
    return f


def want_colour(stream: Any, env: Mapping[str, str] = os.environ) -> bool:
    if "NO_COLOR" in env and env["NO_COLOR"] != "":
        return False
    if env.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and env.get("TERM") != "dumb"


def terminal_width(default: int | None = None) -> int | None:
    """The columns text is wrapped to: COLUMNS when it is set (also when stdout is a pipe), else
    the terminal's width; `default` for a pipe or a file without COLUMNS."""
    columns = os.environ.get("COLUMNS", "")
    if columns.strip().isdigit() and int(columns) > 0:
        return int(columns)
    isatty = getattr(sys.stdout, "isatty", None)
    if isatty is not None and isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return default


def err(text: str) -> None:
    """A line for stderr, never wrapped, with what it quotes from outside shown as data."""
    from vkdoctor.render.escape import no_commands, visible

    click.echo(no_commands(visible(text, prose=True)), err=True)


def say_cache_unused() -> None:
    """Say on stderr when vkdoctor's cache is not used, and why (vkdoctor.cachedir.distrusted)."""
    why = distrusted(os.environ)
    if why:
        say(
            f"vkdoctor: the cache {cache_path(os.environ)} is not used (nothing is read from it "
            f"or written to it): {why}"
        )


def say(text: str) -> None:
    """A line for people on stderr, wrapped to COLUMNS or to the terminal stderr is (stdout
    may be a pipe to eval: what goes there is never wrapped)."""
    from vkdoctor.render.escape import no_commands, visible
    from vkdoctor.render.wrap import fit

    width = terminal_width()
    if width is None and getattr(sys.stderr, "isatty", lambda: False)():
        import shutil

        width = shutil.get_terminal_size().columns
    click.echo(no_commands(visible(fit(text, width), prose=True)), err=True)


def text_style(verbose: int) -> Style:
    from vkdoctor.render.style import Style

    env = os.environ
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower()
    width = terminal_width()
    return Style(
        colour=want_colour(sys.stdout, env),
        unicode="utf" in encoding,
        verbose=verbose >= 1,
        evidence=verbose >= 2,
        width=width,
        machine=os.uname().machine,
    )


#: who is given what standard output receives, as it receives it (the face installs the
#: recorder of a run that a later one may replay, vkdoctor.launch)
OUTPUT_TAPS: list[Callable[[str], None]] = []


def out(text: str, *, nl: bool = True, color: bool | None = None, commands: bool = False) -> None:
    """Write to standard output. A reader that stops reading (`vkdoctor explain | head`) ends
    the output, not the command: the rest goes to /dev/null and the exit status stays the
    command's own (a check's verdict is not turned into a failure by `| head`). Nothing in it
    is a CI runner's command unless `commands` (GitHub annotations, which escape their data)."""
    from vkdoctor.render.escape import no_commands

    if not commands:
        text = no_commands(text)
    if OUTPUT_TAPS:
        # what click.echo writes: the text, its ANSI codes stripped unless colour is asked for
        keep = color if color is not None else sys.stdout.isatty()
        for tap in OUTPUT_TAPS:
            tap((text if keep else click.unstyle(text)) + ("\n" if nl else ""))
    try:
        try:
            click.echo(text, nl=nl, color=color)
        except UnicodeEncodeError:
            # a stdout whose encoding lacks ✓ or → (PYTHONIOENCODING=latin-1): the same text
            # with "?" for those, and paths' undecodable bytes kept
            encoding = getattr(sys.stdout, "encoding", None) or "ascii"
            data = "".join(_encodable(c, encoding) for c in text + ("\n" if nl else ""))
            sys.stdout.flush()
            sys.stdout.buffer.write(data.encode(encoding, "surrogateescape"))
            sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()
    except OSError as exc:
        # the run goes on (its report files are still written) and exits with its verdict, or
        # 2 (vkdoctor.launch)
        stdout_lost(exc)


def stdout_lost(exc: OSError) -> None:
    """Standard output refuses writes (a full disk, > /dev/full): an output failure, not a bug
    of vkdoctor's. The rest goes to /dev/null, and the reason is said and recorded."""
    _stdout_to_devnull()
    STDOUT_FAILED.append(exc.strerror or str(exc))
    err(f"vkdoctor: cannot write to standard output: {exc.strerror or exc}")


#: the reasons standard output refused writes in this run (empty: it did not)
STDOUT_FAILED: list[str] = []


def _encodable(char: str, encoding: str) -> str:
    try:
        char.encode(encoding, "surrogateescape")
    except UnicodeEncodeError:
        return "?"
    return char


def _stdout_to_devnull() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def write_file(path: str, text: str) -> None:
    """Write atomically (temp file + rename) so a crash never leaves half a report."""
    if path == "-":
        out(text, nl=False)
        return
    link = foreign_link(path)
    if link:
        raise click.ClickException(f"cannot write {path}: {link}; not followed")
    try:
        st = Path(path).stat()
    except (OSError, ValueError):
        st = None  # not there yet (or not ours to look at: the write below says why)
    if st is not None and _is_stdout(st):
        # /dev/stdout, /proc/self/fd/1: in order after what went to stdout already, and a
        # regular file there is neither rewritten from its start nor renamed over
        out(text, nl=False)
        return
    if st is not None and not stat.S_ISREG(st.st_mode):
        # /dev/null, /dev/stdout, a FIFO: renaming over it would replace the device node itself
        try:
            _write_special(path, text, append=False)
        except OutputRefused as exc:
            raise click.ClickException(f"cannot write {path}: {exc}") from exc
        return
    # through a link: the file it points to is replaced, not the link (a link foreign_link
    # passed). Anything else is renamed over as it is, never resolved: another user's file
    # swapped for a link of theirs after the check is replaced, not followed
    target = Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)
    tmp: Path | None = None
    try:
        # a name nobody can plant first (O_EXCL): a predictable one in /tmp could be a link;
        # tempfile (and the random and hashlib it imports) only where a file is written
        import tempfile

        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        tmp = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode())
            f.write(text)
        tmp.replace(target)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from exc


def _new_file_mode() -> int:
    """0666 less the umask, as open(2) would create the file."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _is_stdout(st: os.stat_result) -> bool:
    try:
        fd1 = os.fstat(1)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (fd1.st_dev, fd1.st_ino)


class OutputRefused(Exception):
    """The reason a report file could not be written."""


def _write_special(path: str, text: str, *, append: bool) -> None:
    """Write `text` to what `path` names when that is not a plain file to replace: a regular
    file to append to, a FIFO with a reader, a terminal or a character device (/dev/null,
    /dev/stdout). Never blocks on the open: a FIFO nothing reads is refused (it would wait for
    a reader forever), and so is anything that is not a file or a character device."""
    link = foreign_link(path)
    if link:
        raise OutputRefused(f"{link}; not followed")
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    if append:
        flags |= os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO (or a socket) with no process reading it
            reason = "nothing reads it (a FIFO needs its reader started first)"
        else:
            reason = exc.strerror or str(exc)
        raise OutputRefused(reason) from exc
    try:
        kind = stat.S_IFMT(os.fstat(fd).st_mode)
        if kind not in (stat.S_IFREG, stat.S_IFIFO, stat.S_IFCHR):
            what = "a block device" if kind == stat.S_IFBLK else "not a file"
            raise OutputRefused(f"{what}; give a file")
        # the reader is there: from now on a full pipe waits for it, as stdout does
        os.set_blocking(fd, True)
        data = text.encode("utf-8", "surrogateescape")
        while data:
            data = data[os.write(fd, data) :]
    except OSError as exc:
        raise OutputRefused(exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)


def host_identity() -> Identity:
    """What identifies this user and machine, for --redact."""
    import pwd
    import socket

    from vkdoctor.model.redact import Identity

    homes = {os.environ.get("HOME", ""), str(Path.home())}
    users = {os.environ.get(k, "") for k in ("USER", "LOGNAME", "SUDO_USER")}
    for uid in (os.getuid(), os.geteuid()):
        try:
            entry = pwd.getpwuid(uid)
        except KeyError:
            continue
        users.add(entry.pw_name)
        homes.add(entry.pw_dir)
    homes |= {os.path.realpath(h) for h in homes if h}
    hostnames = {socket.gethostname(), os.uname().nodename}
    return Identity(
        homes=tuple(sorted(h for h in homes if h)),
        users=tuple(sorted(u for u in users if u)),
        hostnames=tuple(sorted(h for h in hostnames if h)),
    )


def _append_step_summary(report: Report, *, strict: bool) -> None:
    """GitHub's job summary: appended, because other steps write to the same file."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    from vkdoctor.render import github as github_render

    try:
        text = github_render.summary(report, strict=strict)
        # the step before may have left its last line open: the heading starts a line
        _write_special(path, ("\n" if _ends_open(path) else "") + text, append=True)
    except OutputRefused as exc:
        err(f"vkdoctor: cannot append the job summary to {path}: {exc}")


def _ends_open(path: str) -> bool:
    """Whether the regular file `path` holds text whose last line has no line break."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        return (
            stat.S_ISREG(st.st_mode) and st.st_size > 0 and os.pread(fd, 1, st.st_size - 1) != b"\n"
        )
    except OSError:
        return False
    finally:
        os.close(fd)


def _same_file(a: str, b: str) -> bool:
    """Whether the second report would replace the first; /dev/null takes both."""
    try:
        return Path(a).samefile(b) and not stat.S_ISCHR(Path(a).stat().st_mode)
    except OSError:  # not there yet: compare the names
        return Path(a).absolute() == Path(b).absolute()


def check_outputs(fmt: str, json_file: str | None) -> None:
    """Usage errors for outputs that cannot share stdout; called before anything runs."""
    click_ctx = click.get_current_context(silent=True)
    junit_file = (click_ctx.meta if click_ctx is not None else {}).get(_META_JUNIT)
    if json_file == "-" and junit_file == "-":
        raise click.UsageError("--json - and --junit - both want stdout; send one to a file")
    if json_file and junit_file and json_file != "-" and _same_file(json_file, junit_file):
        # the second write would replace the first report
        raise click.UsageError(f"--json and --junit both name {json_file}; give each its own file")
    if fmt == "github" and "-" in (json_file, junit_file):
        # the annotations are workflow commands on stdout: a report there would bury them
        raise click.UsageError(
            "--format github writes its annotations to stdout; send --json/--junit to a file"
        )


def emit(
    report: Report,
    *,
    fmt: str,
    json_file: str | None,
    strict: bool,
    verbose: int,
    **extra: Any,
) -> int:
    """Print the report in `fmt`, write the requested files, and return the exit code."""
    from vkdoctor.render import json as json_render
    from vkdoctor.render import text as text_render

    # The exit code depends only on the report and --strict, never on the format or the files.
    click_ctx = click.get_current_context(silent=True)
    meta = click_ctx.meta if click_ctx is not None else {}
    junit_file = meta.get(_META_JUNIT)
    check_outputs(fmt, json_file)
    if meta.get(_META_REDACT):
        from vkdoctor.model.redact import redact

        report = redact(report, host_identity())
    files: list[tuple[str, Callable[[], str]]] = []
    if json_file:
        files.append((json_file, lambda: json_render.render(report, strict=strict)))
    if junit_file:
        from vkdoctor.render import junit as junit_render

        files.append((junit_file, lambda: junit_render.render(report, strict=strict)))
    # stdout first: a report file that cannot be written (a full disk) must not cost the
    # report itself
    if json_file != "-" and junit_file != "-":
        if fmt == "json":
            out(json_render.render(report, strict=strict), nl=False)
        elif fmt == "github":
            from vkdoctor.render import github as github_render

            out(github_render.render(report, strict=strict), nl=False, commands=True)
        else:
            style = text_style(verbose)
            # color=: click strips ANSI codes when stdout is no terminal, FORCE_COLOR included
            out(
                text_render.render(report, style=style, strict=strict), nl=False, color=style.colour
            )
    if fmt == "github":
        _append_step_summary(report, strict=strict)
    code = exit_code(report.status(strict=strict))
    return code if write_outputs(files) else code or EXIT_OUTPUT


def write_outputs(files: Sequence[tuple[str, Callable[[], str]]]) -> bool:
    """Write each (path, render) report file, after the report went to stdout; say on stderr
    which could not be written. False when one could not: the verdict then stands (a failure
    stays 1), but a clean run whose report file is lost is no pass a CI gate may trust."""
    written = True
    for path, render in files:
        try:
            write_file(path, render())
        except click.ClickException as exc:
            err(f"vkdoctor: {exc.message}")
            written = False
    return written


def version() -> str:
    return __version__
