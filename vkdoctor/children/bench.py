"""vkdoctor bench: run probes/bench.py in a child (crash- and hang-safe) and read its result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from vkdoctor.children.probe import ProbeRequest, run_probe
from vkdoctor.machine import gpuspec
from vkdoctor.model.digits import is_digits, saturated
from vkdoctor.resources import probes_dir, shaders_dir

BENCH_SCRIPT = "bench.py"


def run_bench(
    env: Mapping[str, str],
    *,
    cpu: bool = False,
    adapter: str | None = None,
    backend: str = "vulkan",
    sizes: str | None = None,
    repeat: int | None = None,
    seed: int | None = None,
    timeout: float = 600.0,
) -> dict[str, Any]:
    """The bench document: the child's own, or crash/timeout/error as the probe runner saw it."""
    extra: list[str] = []
    if sizes is not None:
        extra += ["--sizes", sizes]
    if repeat is not None:
        extra += ["--repeat", str(repeat)]
    request = ProbeRequest(
        cpu=cpu,
        adapter=adapter,
        backend=backend,
        seed=seed,
        timeout=timeout,
        shader_dir=shaders_dir(),
        script=probes_dir() / BENCH_SCRIPT,
        extra_args=tuple(extra),
    )
    before = gpuspec.machine_state(env)
    with gpuspec.Sampler(env) as sampler:
        doc = run_probe(env, request)
    during = sampler.state(gpuspec.machine_state(env))
    doc["machine"] = {"before": before, "during": during}
    doc["verdict"] = gpuspec.verdict(doc, before, during)
    return doc


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'16384x4096,1024x4096' -> [(16384, 4096), (1024, 4096)]; ValueError says what is wrong."""
    sizes = []
    for item in text.split(","):
        rows, sep, d = item.strip().lower().partition("x")
        if not (sep and is_digits(rows) and is_digits(d)):
            raise ValueError(f"{item.strip()!r} is not ROWSxD")
        # past MAX_ELEMENTS either way, and short enough for int()
        r, c = saturated(rows, MAX_ELEMENTS + 1), saturated(d, MAX_ELEMENTS + 1)
        if r < 1 or c < 4 or c % 4:
            raise ValueError(f"{item.strip()!r}: rows must be >= 1 and d a multiple of 4")
        if r * c > MAX_ELEMENTS:
            count = f"{r * c:,}" if max(r, c) <= MAX_ELEMENTS else f"more than {MAX_ELEMENTS:,}"
            raise ValueError(
                f"{item.strip()!r}: {count} elements; at most {MAX_ELEMENTS:,} (the host keeps x, "
                "y, a float64 reference and the error arrays: about 36 GiB there already)"
            )
        sizes.append((r, c))
    return sizes


#: 2^30 float32 elements: 4 GiB per tensor on the GPU, about 36 bytes per element on the host
#: (x, y, the float64 reference and the error arrays); larger sizes measure the same bandwidth
#: and run out of memory first. The adapter's own limits are checked by the bench child.
MAX_ELEMENTS = 1 << 30


def _gbps(v: float | None) -> str:
    return f"{v:,.1f}" if isinstance(v, (int, float)) else "-"


def _spec_line(part: Mapping[str, Any]) -> str:
    """A part's figure and where it comes from, the page by its host (the JSON has the URL)."""
    url, _, said = str(part["source"]).partition(" ")
    host = urlsplit(url).netloc or url
    weak = " (figure from a secondary source)" if part.get("weak") else ""
    return f"  specification: {part['name']}, {part['gbps']:,g} GB/s{weak}: {host} {said}".rstrip()


def _verdict_lines(verdict: Mapping[str, Any] | None) -> list[str]:
    if not verdict:
        return []
    lines = [f"verdict: {verdict['line']}"]
    spec = verdict.get("spec")
    if spec:
        lines += [_spec_line(part) for part in (spec, *(spec.get("shares_id_with") or ()))]
    low = verdict["verdict"] in ("below-expectation", "undetermined")
    if verdict["reasons"]:
        lines += [f"  {'likely reasons' if low else 'also found'}:"]
        lines += [f"    - {r}" for r in verdict["reasons"]]
    elif low:
        lines.append(
            "  none of the causes vkdoctor can check was found (another process on the GPU, "
            "clocks or power held down as nvidia-smi, amdgpu, i915 or xe report them, a narrow "
            "PCIe link)"
        )
    return lines


def render(doc: Mapping[str, Any]) -> str:
    """The bench as a table a person reads; the JSON carries every number."""
    lines = []
    adapter = doc.get("adapter") or {}
    status = doc.get("status")
    if adapter:
        lines.append(
            f"vkdoctor bench on {adapter.get('name')} ({doc.get('backend')}, {adapter.get('type')}, "
            f"driver {adapter.get('driver')}), timed with {doc.get('timing')}, "
            f"median of {doc.get('repeat')} runs"
        )
    cpu = adapter.get("type") == "CPU"
    results = doc.get("results") or []
    if results:
        # 78 columns with numpy's (a CPU adapter's) column; the kernels go on a line of their own
        numpy = cpu and any(r.get("numpy_gbps") for r in results)
        cols = ("rows x d", "RMSNorm", "buffer", "kernel", "% of", "max rel") + (("numpy",) * numpy)
        units = ("", "GB/s", "copy GB/s", "copy GB/s", "copy", "err") + (("GB/s",) * numpy)
        widths = (10, 9, 9, 9, 5, 9, 9)[: len(cols)]

        def row(cells: tuple[str, ...]) -> str:
            return "  " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))

        lines += [row(cols).rstrip(), row(units).rstrip()]
        for r in results:
            err = r.get("max_rel_err")
            wrong = list(r.get("wrong_kernels") or ())
            if not r.get("copy_ok", True):
                wrong += [
                    name
                    for name, good in (
                        ("copy_buffer_to_buffer", r.get("buffer_copy_ok", True)),
                        ("the copy kernel", r.get("kernel_copy_ok", True)),
                    )
                    if not good
                ]
            verdict = f"WRONG: {', '.join(wrong) or 'results'}" if wrong else "ok"
            cells = (
                f"{r['rows']}x{r['d']}",
                _gbps(r.get("rmsnorm_gbps")),
                _gbps(r.get("copy_gbps")),
                _gbps(r.get("kernel_copy_gbps")),
                f"{r.get('rmsnorm_pct_of_copy', 0):.0f}%",
                "-" if err is None else format(err, ".1e"),
            ) + ((_gbps(r.get("numpy_gbps")),) * numpy)
            lines.append(f"{row(cells)}  {verdict}")
            others = ", ".join(
                f"{name} {_gbps(k.get('gbps'))}"
                for name, k in (r.get("kernels") or {}).items()
                if name != r.get("kernel")
            )
            lines.append(
                f"    kernel: {r.get('kernel')}" + (f"; the others: {others}" if others else "")
            )
        lines.append(
            "  bytes: RMSNorm reads x and w and writes y; a copy reads and writes the tensor once. "
            "% of copy is against the faster of copy_buffer_to_buffer and the kernel copy."
        )
        if cpu:
            ratios = [r["rmsnorm_gbps"] / r["numpy_gbps"] for r in results if r.get("numpy_gbps")]
            if ratios:
                span = (
                    f"{min(ratios):.2f}"
                    if f"{min(ratios):.2f}" == f"{max(ratios):.2f}"
                    else f"{min(ratios):.2f}-{max(ratios):.2f}"
                )
                lines.append(
                    f"  CPU adapter: RMSNorm runs at {span}x numpy's speed on "
                    "the host; a software rasterizer is not a performance target."
                )
    lines += _verdict_lines(doc.get("verdict"))
    if status != "pass":
        lines.append(f"bench {status}: {doc.get('summary') or doc.get('reason')}")
        tail = doc.get("stderr_tail") or []
        if status in ("crash", "timeout", "error") and tail:
            lines += ["  last stderr lines:", *(f"    {t}" for t in tail[-8:])]
    return "\n".join(lines) + "\n"
