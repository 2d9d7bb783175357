"""VKE010-VKE011: what breaks Vulkan compute from outside Vulkan's own variables: the process's
resource limits, and the variables that the drivers read themselves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.model import Finding, Remedy, Severity
from vkdoctor.model import limits as L
from vkdoctor.model.context import Context

#: the limits whose exhaustion wgpu meets without saying so
_MEMORY_LIMITS = ("RLIMIT_AS", "RLIMIT_DATA")
#: load-test verdicts a resource limit can cause (not "no device", "wrong class")
_LOAD_BREAKS = ("crash", "timeout", "dlopen-failed", "not-run", "instance-failed")


def load_symptoms(ctx: Context) -> list[str]:
    """What went wrong in the load test, in words; [] when it went well."""
    from vkdoctor.children.loadtest import classify

    try:
        run = facts.load_test(ctx)
    except Exception as exc:  # VKT002 reports a load test that did not run
        return [f"the load test did not run ({exc})"]
    out = []
    if run.spawn_error or run.stopped:
        out.append(f"the load test stopped: {run.spawn_error or run.stopped}")
    for o in run.outcomes:
        verdict = classify(o, loader_version=run.loader_version)
        if verdict.kind in _LOAD_BREAKS:
            out.append(verdict.title + (f" ({o.dlerror})" if o.dlerror else ""))
    return out


def probe_symptom(ctx: Context) -> tuple[str, list[str]] | None:
    """The probe's failure in words and the last lines of its stderr, when the probe runs in
    this check and did not pass for a reason a limit can cause (wrong numbers are the
    driver's)."""
    if not ctx.options.probe or not facts.all_selected(ctx, "VKR001"):
        return None
    result = facts.probe_result(ctx)
    status = result.get("status")
    if status == "pass" or result.get("reason") in ("wrong-numbers", "ladder"):
        return None
    tail = [" ".join(str(line).split()) for line in result.get("stderr_tail") or []]
    return _one_line(str(result.get("summary") or status)), [t for t in tail if t]


def _one_line(text: str) -> str:
    """A message of several lines (an exception's "Caused by:" lines) as one sentence."""
    out = ""
    for line in (" ".join(line.split()) for line in text.splitlines()):
        if line:
            out += ("" if not out else " " if out.endswith((".", ":", ";", ",")) else ". ") + line
    return out.rstrip(".")


def unlisted_devices(ctx: Context) -> list[str]:
    """The Vulkan devices the load test found when the probe then found no adapter at all and
    wgpu gave no reason for hiding them: under a tight memory limit wgpu's instance runs out of
    memory without a word (measured: `ulimit -v 300000` here)."""
    if not ctx.options.probe or not facts.all_selected(ctx, "VKR001"):
        return []
    result = facts.probe_result(ctx)
    if result.get("status") != "no-adapter" or result.get("adapters"):
        return []
    if result.get("hidden_adapters"):
        return []  # wgpu said why it hid them (VKR002 names it)
    try:
        outcomes = facts.load_test(ctx).outcomes
    except Exception:  # VKT002 reports a load test that did not run
        return []
    return [d.name for o in outcomes if o.target.kind == "driver" for d in o.devices]


def _probe_words(symptom: tuple[str, list[str]], limit: str) -> str:
    """The probe's failure on one line, with only the stderr lines that show `limit`'s signs
    and that the failure does not already say (not the other libraries' noise)."""
    summary, tail = symptom
    # numpy's import error is a page of advice around the one line that says what failed
    said, _, original = summary.partition("Original error was: ")
    if original:
        summary = f"{said.partition(' (')[0]}: {original.partition(')')[0].strip(' .')}"
    if len(summary) > 300:
        summary = summary[:299] + "…"
    signs = [t for t in tail if L.shows(limit, t) and t.rstrip(".") not in summary][-2:]
    return summary + (f" (stderr: {' / '.join(s[:200] for s in signs)})" if signs else "")


class ResourceLimits(Check):
    """The process's resource limits leave room for the Vulkan drivers.

    A process inherits its limits (`ulimit`, `prlimit`, a systemd unit's `Limit*=`, `docker
    --ulimit`, a CI runner's settings). A small virtual-memory (`ulimit -v`, RLIMIT_AS) or data
    (`ulimit -d`, RLIMIT_DATA) limit makes ld.so fail to map a driver's libraries ("failed to map
    segment from shared object"), LLVM crash while lavapipe starts, or wgpu fail with "Not enough
    memory left" (or list no adapter at all, without a reason); too few open files (`ulimit -n`) stop the probe and the load test from starting;
    a tiny stack (`ulimit -s`) crashes threads. The symptom looks like a broken driver. vkdoctor
    fails here only when a limit is below what Vulkan compute needs and the load test or the
    probe really failed; a small limit that did no harm stays quiet.
    """

    code = "VKE010"
    family = "environment"
    title = "Resource limits too small for the Vulkan drivers"
    live_only = True
    explains = ("VKT001", "VKT002", "VKT003", "VKT004", "VKR001", "VKR002")

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        if symptom.code in ("VKR001", "VKR002"):
            return symptom.code in cause.evidence.get("explains", ())
        if "VKT" not in cause.evidence.get("explains", ()):
            return False
        if symptom.code in ("VKT002", "VKT004"):
            return True  # the sum of the drivers' failures, and their disagreement with the files
        if symptom.code == "VKT001" and symptom.evidence.get("verdict") not in _LOAD_BREAKS:
            return False
        # this driver's or layer's own failure must show the limit's signs
        return L.shows(cause.evidence.get("limit", ""), f"{symptom.title} {symptom.evidence}")

    def run(self, ctx: Context) -> Iterable[Finding]:
        tight = [lim for lim in L.current() if lim.tight]
        if not tight:
            return
        all_load = load_symptoms(ctx)
        all_probe = probe_symptom(ctx)
        for lim in tight:
            # only the failures that look like this limit's (another cause stays its own)
            symptoms = [t for t in all_load if L.shows(lim.spec.name, t)]
            # the probe sees only the drivers that load: theirs failing to is its failure too
            probe = (
                _probe_words(all_probe, lim.spec.name)
                if all_probe
                and (symptoms or L.shows(lim.spec.name, " ".join([all_probe[0], *all_probe[1]])))
                else None
            )
            unlisted = unlisted_devices(ctx) if lim.spec.name in _MEMORY_LIMITS else []
            if probe is None and unlisted:
                probe = (
                    f"wgpu listed no adapter, although the load test found {', '.join(unlisted)} "
                    "(out of memory, wgpu drops an adapter without a word)"
                )
            if not symptoms and probe is None:
                continue  # present and harmless, or not what broke
            seen = [*symptoms, *([f"the compute probe: {probe}"] if probe else [])]
            evidence: dict[str, Any] = {
                **lim.evidence(),
                "symptoms": seen,
                "explains": [
                    *(["VKT"] if symptoms else []),
                    *(["VKR001"] if probe else []),
                    *(["VKR002"] if unlisted else []),
                ],
            }
            yield self.fail(
                f"{lim.spec.name} (ulimit {lim.spec.option}) is {lim.shown(lim.soft)}: too small "
                "for the Vulkan drivers",
                f"This process may use at most {lim.shown(lim.soft)} of {lim.spec.what} "
                f"({lim.spec.name}, soft limit {lim.shown(lim.soft)}, hard limit "
                f"{lim.shown(lim.hard)}); Vulkan compute needs at least "
                f"{lim.shown(lim.spec.minimum)}. Every program started from here inherits it, "
                f"and here it broke: {'; '.join(seen)}. "
                + (
                    "vkdoctor starts its load test and probe through pipes, which this limit "
                    "does not leave room for: it cannot tell whether Vulkan compute works "
                    "(lavapipe itself needs only a few files; GPU drivers open device nodes and "
                    "more). "
                    if lim.spec.name == "RLIMIT_NOFILE"
                    else ""
                )
                + "This is the limit, not the driver.",
                remedy=Remedy(text=f"Raise the limit: {lim.remedy(root=L.can_raise_hard())}."),
                **evidence,
            )


#: NVIDIA's implicit layer (VK_LAYER_NV_optimus) manifest, which reads __VK_LAYER_NV_optimus
NV_LAYER_MANIFEST = "nvidia_layers.json"
#: the driver's documented variables that can take a device away or turn its cache off
#: (NVIDIA's README, "Environment Variables" and "PRIME Render Offload"), with what they do
NVIDIA_VARIABLES = {
    "__VK_LAYER_NV_optimus": "NVIDIA_only: only NVIDIA GPUs are listed; non_NVIDIA_only: none",
    "__NV_PRIME_RENDER_OFFLOAD": "1: the NVIDIA GPU is listed first (harmless)",
    "__GL_SHADER_DISK_CACHE": "0: the driver's shader disk cache is off",
    "__GL_SHADER_DISK_CACHE_PATH": "the cache's directory: unwritable turns it off (VKS002)",
    "__GL_SHADER_DISK_CACHE_SIZE": "the cache's size in bytes: a small one is emptied constantly",
    "__GL_SHADER_DISK_CACHE_SKIP_CLEANUP": "1: the cache is never trimmed and grows without bound",
}
#: below this the driver's cache cannot hold a compute program's pipelines
SMALL_NVIDIA_CACHE = 128 * 1024 * 1024


class NvidiaVariables(Check):
    """NVIDIA's own variables do not hide a device or turn the driver's cache off unseen.

    NVIDIA's driver and its implicit layer read their own variables, which no Vulkan variable
    shows. `__VK_LAYER_NV_optimus=non_NVIDIA_only` makes the layer hide every NVIDIA GPU from
    every Vulkan program; `NVIDIA_only` hides every other device, lavapipe included.
    `__GL_SHADER_DISK_CACHE=0` and a small `__GL_SHADER_DISK_CACHE_SIZE` make every run compile
    its shaders again. They count only where NVIDIA's driver or layer is installed; elsewhere
    nothing reads them and vkdoctor says nothing.
    """

    code = "VKE011"
    family = "environment"
    title = "NVIDIA driver variables"

    def run(self, ctx: Context) -> Iterable[Finding]:
        from vkdoctor.machine import envhazards as eh

        layer = eh.installed_layer(ctx, NV_LAYER_MANIFEST)
        optimus = ctx.env.get("__VK_LAYER_NV_optimus")
        if optimus is not None and layer is not None:
            yield from self._optimus(ctx, optimus, layer)
        if layer is None and not facts.nvidia_gpu_expected(ctx):
            return
        if ctx.env.get("__GL_SHADER_DISK_CACHE") == "0":
            yield self.finding(
                Severity.INFO,
                "__GL_SHADER_DISK_CACHE=0: NVIDIA's shader cache is off",
                "Every Vulkan program compiles every shader again at each start.",
                remedy=Remedy(commands=("unset __GL_SHADER_DISK_CACHE",)),
                evidence={"variable": "__GL_SHADER_DISK_CACHE", "value": "0"},
            )
        size = ctx.env.get("__GL_SHADER_DISK_CACHE_SIZE", "")
        if size.isdigit() and int(size) < SMALL_NVIDIA_CACHE:
            yield self.finding(
                Severity.INFO,
                f"__GL_SHADER_DISK_CACHE_SIZE={size}: NVIDIA's shader cache is small",
                f"{size} bytes is less than a compute program's pipelines need: the cache is "
                "emptied constantly and shaders are compiled again.",
                remedy=Remedy(
                    commands=("unset __GL_SHADER_DISK_CACHE_SIZE",),
                    text="(the driver's default is 1 GiB)",
                ),
                evidence={"variable": "__GL_SHADER_DISK_CACHE_SIZE", "value": size},
            )

    def _optimus(self, ctx: Context, value: str, layer: str) -> Iterable[Finding]:
        evidence = {"variable": "__VK_LAYER_NV_optimus", "value": value, "layer": layer}
        if value == "non_NVIDIA_only":
            yield self.warn(
                "__VK_LAYER_NV_optimus=non_NVIDIA_only hides the NVIDIA GPU",
                f"NVIDIA's implicit layer ({layer}) removes every NVIDIA GPU from the devices "
                "every Vulkan program sees.",
                remedy=Remedy(commands=("unset __VK_LAYER_NV_optimus",)),
                **evidence,
            )
        elif value == "NVIDIA_only":
            hides_cpu = ctx.options.cpu
            yield self.finding(
                Severity.WARN if hides_cpu else Severity.INFO,
                "__VK_LAYER_NV_optimus=NVIDIA_only hides every other device"
                + (", lavapipe included" if hides_cpu else ""),
                f"NVIDIA's implicit layer ({layer}) lists only NVIDIA GPUs: CPU drivers "
                "(lavapipe) and other GPUs disappear from every Vulkan program.",
                remedy=Remedy(commands=("unset __VK_LAYER_NV_optimus",)) if hides_cpu else None,
                evidence=evidence,
            )


CHECKS: tuple[type[Check], ...] = (ResourceLimits, NvidiaVariables)
