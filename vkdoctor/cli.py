"""The command line. The only place that reads os.environ, prints, and exits."""

from __future__ import annotations

import sys
import traceback

import click

from vkdoctor import __version__
from vkdoctor.commands import check, drivers, explain, overlay
from vkdoctor.commands.exec import exec_command
from vkdoctor.model import EXIT_INTERNAL


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vkdoctor")
def cli() -> None:
    """Will Vulkan compute run correctly on this machine, and if not, why and what to do?

    Start with `vkdoctor check`.
    """


cli.add_command(check.check)
cli.add_command(drivers.drivers)
cli.add_command(explain.explain)
cli.add_command(overlay.overlay)
cli.add_command(exec_command)


def main() -> None:
    try:
        cli.main(prog_name="vkdoctor", standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("vkdoctor: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug of ours: say so, exit 3, keep the traceback for --debug
        click.echo(f"vkdoctor: internal error: {type(exc).__name__}: {exc}", err=True)
        if "--debug" in sys.argv:
            traceback.print_exc()
        else:
            click.echo("Re-run with --debug for the traceback, and please report it.", err=True)
        sys.exit(EXIT_INTERNAL)
