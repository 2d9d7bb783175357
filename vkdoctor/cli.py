"""The command line. The only place that reads os.environ, prints, and exits."""

from __future__ import annotations

import importlib
import sys

import click

from vkdoctor.model import EXIT_INTERNAL

#: name -> "module:attribute"; a command's module is imported only when that command runs, so
#: `vkdoctor run-probe` starts its child without loading every check first
LAZY_COMMANDS = {
    "check": "vkdoctor.commands.check:check",
    "diff": "vkdoctor.commands.diff:diff",
    "drivers": "vkdoctor.commands.drivers:drivers",
    "exec": "vkdoctor.commands.exec:exec_command",
    "explain": "vkdoctor.commands.explain:explain",
    "overlay": "vkdoctor.commands.overlay:overlay",
    "run-probe": "vkdoctor.commands.run_probe:run_probe",
    "bench": "vkdoctor.commands.bench:bench",
    "summary": "vkdoctor.commands.summary:summary",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            module, _, attr = LAZY_COMMANDS[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attr)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise click.UsageError(
                f"No such command '{name}'.{hint} Commands: {', '.join(self.list_commands(ctx))}.",
                ctx,
            )
        return super().resolve_command(ctx, args)


def _show_version(ctx: click.Context) -> None:
    from vkdoctor.commands.about import version_text
    from vkdoctor.commands.common import out

    out(version_text())
    ctx.exit(0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=lambda ctx, _param, value: _show_version(ctx) if value else None,
    help="Show the versions of vkdoctor, Python, wgpu, wgpu-native and the Vulkan loader.",
)
def cli() -> None:
    """Will Vulkan compute run correctly on this machine, and if not, why and what to do?

    Start with `vkdoctor check`.
    """


def _from_click_echo(exc: BaseException) -> bool:
    """`exc` came from click writing (--help, --version, a usage message), not from a check."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "echo" and code.co_filename.endswith("/click/utils.py"):
            return True
        tb = tb.tb_next
    return False


#: what to give an option that came without its value
_VALUE_HINTS = {
    "--json": "a file to write the report to, or - for stdout (--json -)",
    "--junit": "a file to write the JUnit XML to, or - for stdout (--junit -)",
}


def _err(text: str) -> None:
    from vkdoctor.render.escape import no_commands, visible

    click.echo(no_commands(visible(text, prose=True)), err=True)


def _show(exc: click.ClickException) -> None:
    """click's usage error as click words it, with the paths and values it quotes shown as
    data (a file name can carry an escape sequence or a CI runner's command)."""
    import io

    buffer = io.StringIO()
    exc.show(file=buffer)
    _err(buffer.getvalue().rstrip("\n"))


def main() -> None:
    try:
        # not standalone: click would turn Ctrl-C into "Aborted!" and exit 1, a failed check
        code = cli.main(prog_name="vkdoctor", standalone_mode=False)
    except SystemExit:
        raise
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("vkdoctor: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if isinstance(exc, click.BadOptionUsage) and exc.option_name in _VALUE_HINTS:
            hint = _VALUE_HINTS[exc.option_name]
            exc = click.BadOptionUsage(
                exc.option_name, f"{exc.message.rstrip('.')}: {hint}.", ctx=exc.ctx
            )
        _show(exc)
        sys.exit(exc.exit_code)
    except Exception as exc:  # a bug of ours: say so, exit 3, keep the traceback for --debug
        if isinstance(exc, OSError) and _from_click_echo(exc):
            from vkdoctor.commands import common

            common.stdout_lost(exc)
            sys.exit(common.EXIT_OUTPUT)
        # Under a tight address-space limit CPython fails in more ways than MemoryError (a
        # compile() of generated code cut short raises ValueError "field 'target' is required
        # for AnnAssign"): any failure under such a limit is the limit's, and says so.
        from vkdoctor.model.limits import out_of_memory

        limited = out_of_memory()
        if limited:
            # the environment's, not ours: no Vulkan program gets further than this
            click.echo(f"vkdoctor: out of memory: {limited}", err=True)
            if "--debug" in sys.argv:
                import traceback

                traceback.print_exc()
            sys.exit(1)
        _err(f"vkdoctor: internal error: {type(exc).__name__}: {exc}")
        if "--debug" in sys.argv:
            import traceback

            traceback.print_exc()
        else:
            click.echo("Re-run with --debug for the traceback, and please report it.", err=True)
        sys.exit(EXIT_INTERNAL)
    sys.exit(code if isinstance(code, int) else 0)
