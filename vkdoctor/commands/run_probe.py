"""vkdoctor run-probe: the compute probe alone, in the current environment exactly."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vkdoctor.commands import common

if TYPE_CHECKING:
    from vkdoctor.model.report_records import ProbeHost


@click.command("run-probe")
@common.adapter_options
@common.gpu_option
@common.capabilities_option
@click.option(
    "--seed", type=click.IntRange(min=0), help="Repeat a run's random inputs (see its report)."
)
@click.option(
    "--shader-dir",
    type=click.Path(exists=True, file_okay=False, dir_okay=True),
    help="Run the kernels from this directory instead of vkdoctor's own shaders.",
)
@click.option(
    "--python",
    "python",
    type=click.Path(exists=True, dir_okay=False),
    help="The Python interpreter that runs the probe, e.g. your test suite's (default: vkdoctor's).",
)
@common.timeout_option("the probe")
@common.output_options
def run_probe(
    cpu: bool,
    adapter: str | None,
    backend: str,
    gpu: bool,
    capabilities: bool,
    seed: int | None,
    shader_dir: str | None,
    python: str | None,
    timeout: float,
    json_file: str | None,
    fmt: str,
    strict: bool,
    verbose: int,
    debug: bool,
) -> None:
    """Run the RMSNorm compute probe on one adapter and check its numbers.

    Lists every adapter wgpu sees, climbs the ladder (add one, workgroup reduction, small matmul)
    and runs RMSNorm cases against a float64 reference. Exits 1 when the probe fails, crashes,
    hangs or finds no suitable adapter.
    """
    common.one_adapter_choice(cpu, adapter, gpu)
    from vkdoctor.children import probe

    request = probe.ProbeRequest(
        cpu=cpu,
        gpu=gpu,
        capabilities=capabilities,
        adapter=adapter,
        backend=backend,
        seed=seed,
        shader_dir=Path(shader_dir).resolve() if shader_dir else None,
        timeout=timeout,
        python=python or sys.executable,
    )
    # start the child first (or adopt the one vkdoctor.launch started); the rest happens meanwhile
    env = dict(os.environ)
    running = probe.adopt(request, env) or probe.start(env, request)

    from vkdoctor.children.probe_report import check_result
    from vkdoctor.model import Report
    from vkdoctor.model.record import replace
    from vkdoctor.model.report_records import probe_result_of

    host = _light_host()
    from vkdoctor.cachedir import foreign_code_off

    left_out = foreign_code_off(env)  # the probe ran without them: a failure of its own
    result = probe.finish(running)
    wgpu = result.get("wgpu")
    host = replace(host, wgpu=None if wgpu is None else str(wgpu))
    from vkdoctor.facts.report import shows_sudo
    from vkdoctor.model.context import Context

    report = Report(
        vkdoctor_version=common.version(),
        host=host,
        checks=(check_result(result, left_out),),
        probe=probe_result_of(result),
        command="run-probe",
        sudo=shows_sudo(Context(env=env)),
    )
    sys.exit(common.emit(report, fmt=fmt, json_file=json_file, strict=strict, verbose=verbose))


def _light_host() -> ProbeHost:
    """The host facts that matter next to a probe result, without `check`'s package and distro
    queries (lsb_release, importlib.metadata scans): they would cost run-probe ~0.1 s of CPU."""
    from vkdoctor.machine.host import os_release
    from vkdoctor.model.context import Context
    from vkdoctor.model.report_records import Distro, ProbeHost

    release = os_release(Context())
    uname = platform.uname()
    return ProbeHost(
        root="/",
        distro=Distro(
            id=release.get("ID"),
            name=release.get("PRETTY_NAME") or release.get("NAME"),
            version=release.get("VERSION_ID"),
            like=release.get("ID_LIKE"),
        ),
        kernel=uname.release,
        machine=uname.machine,
        python=platform.python_version(),
        python_executable=sys.executable,
        vkdoctor=common.version(),
        # the probe child's, once it has said
        wgpu=None,
    )
