"""vkdoctor bench: RMSNorm throughput on the chosen adapter against a device-to-device copy."""

from __future__ import annotations

import json
import os
import sys

import click

from vkdoctor.commands import common


@click.command()
@common.adapter_options
@click.option(
    "--sizes",
    metavar="ROWSxD[,...]",
    help="Tensor shapes; d a multiple of 4. Default: 16384x4096,65536x4096 on a GPU, "
    "256x4096,1024x4096 on a CPU adapter.",
)
@click.option(
    "--repeat",
    # two timestamps per run in one query set, and WebGPU allows 4096 queries in a set
    type=click.IntRange(min=1, max=2048),
    help="Timed runs per kernel and size (at most 2048).",
)
@click.option("--seed", type=click.IntRange(min=0), help="Repeat a run's random inputs.")
@click.option(
    "--timeout",
    type=common.Seconds(1),
    default=600.0,
    show_default=True,
    help="Seconds before the benchmark child is killed.",
)
@click.option(
    "--json",
    "json_file",
    metavar="FILE",
    callback=common.output_path,
    help="Write the JSON result to FILE ('-' for stdout).",
)
def bench(
    cpu: bool,
    adapter: str | None,
    backend: str,
    sizes: str | None,
    repeat: int | None,
    seed: int | None,
    timeout: float,
    json_file: str | None,
) -> None:
    """RMSNorm GB/s against a copy, timed on the device; every size is checked against float64."""
    from vkdoctor.children.bench import parse_sizes, render, run_bench

    common.one_adapter_choice(cpu, adapter)
    if sizes is not None:
        try:
            parse_sizes(sizes)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--sizes") from exc
    doc = run_bench(
        dict(os.environ),
        cpu=cpu,
        adapter=adapter,
        backend=backend,
        sizes=sizes,
        repeat=repeat,
        seed=seed,
        timeout=timeout,
    )
    if json_file != "-":
        from vkdoctor.render.wrap import fit

        common.out(fit(render(doc), common.terminal_width()), nl=False)
    below = (doc.get("verdict") or {}).get("verdict") == "below-expectation"
    code = 0 if doc.get("status") == "pass" and not below else 1
    files = [(json_file, lambda: json.dumps(doc, indent=2) + "\n")] if json_file else []
    sys.exit(code if common.write_outputs(files) else code or common.EXIT_OUTPUT)
