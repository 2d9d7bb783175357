"""The console entry point: gives `run-probe` a head start, then runs the click CLI."""

from __future__ import annotations

import os
import sys


def main() -> None:
    early = None
    if len(sys.argv) > 1 and sys.argv[1] == "run-probe":
        from vkdoctor import probe

        early = probe
        probe.start_early(sys.argv[2:], os.environ)
    try:
        from vkdoctor.cli import main as cli_main

        cli_main()
    finally:
        # a child started early that no command adopted (usage error, --help, Ctrl-C)
        if early is not None:
            early.discard_early()
