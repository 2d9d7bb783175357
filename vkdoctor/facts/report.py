"""The report of a run: the checks' results with the run-wide facts that go beside them."""

from __future__ import annotations

from collections.abc import Sequence

from vkdoctor import __version__
from vkdoctor.model import CheckResult, Report, Severity
from vkdoctor.model.context import Context
from vkdoctor.model.report_records import probe_result_of


def build_report(ctx: Context, results: Sequence[CheckResult], *, command: str) -> Report:
    """`check`'s and `drivers`' report: the drivers list (with what the load test saw, when a
    load check ran, and the packages VKP009 found), the overlay when VKO001 proved it, the
    probe's result when the probe ran, and the loader's driver search."""
    from vkdoctor.facts.drivers import (
        driver_search,
        drivers_report,
        with_load_results,
        with_packages,
    )
    from vkdoctor.machine.host import collect

    load_chosen = any(r.family == "load" for r in results)
    probes = any(r.code[:3] == "VKR" for r in results)
    # an overlay under which the drivers still fail is no fix to show (VKO001 says why)
    overlay_proven = any(r.code == "VKO001" and r.worst is not Severity.FAIL for r in results)
    overlay = None
    if overlay_proven:
        from vkdoctor.facts.overlay import report_overlay

        overlay = report_overlay(ctx)
    probe = None
    if probes and ctx.options.probe:
        from vkdoctor.facts.probe import probe_result

        probe = probe_result_of(ctx.fact(probe_result))
    return Report(
        vkdoctor_version=__version__,
        host=ctx.fact(collect),
        checks=tuple(results),
        drivers=with_packages(with_load_results(ctx, drivers_report(ctx), load_chosen), results),
        overlay=overlay,
        probe=probe,
        driver_search=driver_search(ctx),
        command=command,
        sudo=shows_sudo(ctx),
    )


def shows_sudo(ctx: Context) -> bool:
    """Whether the commands of a fix that need root are shown after `sudo `: always, but for root
    on a machine without sudo (a container, a CI image: `sudo apt ...` would be "command not
    found"). For a --root tree, as written (the package fixes already say whether the tree has
    sudo: packages.verify.for_tree)."""
    import os

    from vkdoctor.packages.proc import which

    if not ctx.live or os.geteuid() != 0:
        return True
    # shutil.which's search: the PATH of the environment the face handed in, else the default
    path = ctx.env.get("PATH", os.defpath)
    return bool(path) and which("sudo", {"PATH": path}) is not None
