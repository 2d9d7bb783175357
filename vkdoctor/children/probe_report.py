"""The probe's result as a finding (VKR001) and a check result, for `check` and `run-probe`.

Kept outside vkdoctor/checks so that `vkdoctor run-probe` does not import every check.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from vkdoctor.model import CheckResult, CheckStatus, Finding, Remedy, Severity
from vkdoctor.packages import commands

CODE = "VKR001"
FAMILY = "compute"
TITLE = "Compute probe (RMSNorm)"

_INSTALL_CPU = (
    "Install the Vulkan CPU driver (lavapipe): "
    f"{commands.install_each('mesa-vulkan', ('dpkg', 'rpm', 'pacman'))}; "
    "then check that VK_DRIVER_FILES / VK_ICD_FILENAMES do not hide it (`vkdoctor check`)."
)

#: variables that make the Vulkan loader ignore its default driver directories
_DRIVER_SELECTION = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES")
_DRIVER_FILTERS = ("VK_LOADER_DRIVERS_SELECT", "VK_LOADER_DRIVERS_DISABLE")

_REMEDY: dict[str, str] = {
    "wrong-numbers": (
        "Do not trust this adapter for compute. Update or roll back the driver (for lavapipe: Mesa "
        "and the LLVM it was built against, together), re-run `vkdoctor run-probe --seed SEED` "
        "with the random seed above to reproduce, and report the worst element to the driver's "
        "maintainers."
    ),
    "ladder": (
        "The driver cannot run even this basic kernel correctly. Update or roll back the driver; "
        "`vkdoctor run-probe --adapter NAME` tries another adapter."
    ),
    "gpu-error": (
        "wgpu rejected a probe kernel on this adapter (see the message). Update the driver or wgpu "
        "(`pip install -U wgpu`)."
    ),
    "limits": "The adapter's limits are below what the probe's kernels need; use another adapter.",
    "capability": (
        "Kernels that use the failing capability compute wrong or do not run on this adapter: "
        "keep them off it (or off that feature), update the driver, and report the rung's figures "
        "(`vkdoctor run-probe --capabilities --json -`) to its maintainers."
    ),
    "signal": (
        "The driver (or wgpu-native) crashed the process. Run `vkdoctor check` for the static "
        "picture, and isolate the driver with VK_DRIVER_FILES=/path/to/one_icd.json."
    ),
    "timeout": (
        "Either a driver hangs, or --timeout is too short for this machine (the probe takes a "
        "few seconds on lavapipe): run again with a larger --timeout. If it still times out, "
        "run it with one driver at a time, VK_DRIVER_FILES set to one of the manifests that "
        "`vkdoctor drivers` lists."
    ),
    "wgpu-missing": "Install wgpu-py in the Python that runs vkdoctor: `python -m pip install wgpu`.",
    "numpy-missing": "Install numpy in the Python that runs vkdoctor: `python -m pip install numpy`.",
    "device-error": (
        "The adapter's driver would not create a device (the message says why): `vkdoctor "
        "check` loads each driver alone and creates a device on it (VKT001); update or reinstall "
        "that driver, or probe another adapter (`--adapter NAME`, `--cpu`)."
    ),
    "python-error": "This is probably a bug in vkdoctor's probe: report it with the stderr lines.",
    "no-output": "This is probably a bug in vkdoctor's probe: report it with the stderr lines.",
    "shader-unreadable": "Point --shader-dir at a directory with add_one, reduce, matmul and rmsnorm .wgsl.",
    "spawn-failed": "Check that the Python interpreter running vkdoctor can be executed.",
}

#: the same fixes under `vkdoctor check`, whose findings are above them: never "run vkdoctor check"
_REMEDY_IN_CHECK: dict[str, str] = {
    "signal": (
        "The driver (or wgpu-native) crashed the process: the library findings and the load test "
        "(VKL, VKT) say what they saw; isolate the driver with "
        "VK_DRIVER_FILES=/path/to/one_icd.json."
    ),
    "device-error": (
        "The adapter's driver would not create a device (the message says why; the load test, "
        "VKT001, creates a device on each driver alone): update or reinstall that driver, or "
        "probe another adapter (`--adapter NAME`, `--cpu`)."
    ),
}


def _no_adapter_remedy(probe: Mapping[str, Any], in_check: bool) -> str:
    env = probe.get("env") or {}
    lavapipe = probe.get("lavapipe_manifest")
    wants_cpu = not (probe.get("requested") or {}).get("gpu")
    if lavapipe and wants_cpu and _hidden_by(env):
        # installing it again changes nothing: the variable hides it
        set_ = [f"{k}={env[k]}" for k in (*_DRIVER_SELECTION, *_DRIVER_FILTERS) if k in env]
        return (
            f"lavapipe is installed ({lavapipe}), but {' and '.join(set_)} decide"
            f"{'s' if len(set_) == 1 else ''} which drivers the loader reads: unset "
            f"{' and '.join(s.split('=', 1)[0] for s in set_)}, or name that manifest there."
        )
    if lavapipe and wants_cpu:
        return f"lavapipe is installed ({lavapipe}) and gives no Vulkan adapter: " + (
            "the load test (VKT001) and the library findings say why."
            if in_check
            else "`vkdoctor check` says why (its libraries, the load test)."
        )
    hidden = _hidden_by(env)
    install = _install(probe, in_check)
    return f"{hidden}{install[:1].lower()}{install[1:]}" if hidden else install


def remedy(probe: Mapping[str, Any], *, in_check: bool = False) -> Remedy | None:
    """The fix for a failed probe; None where vkdoctor knows none."""
    made = _remedy(probe, in_check)
    reason = str(probe.get("reason") or probe.get("status"))
    if in_check and reason in _REMEDY_IN_CHECK and made == _REMEDY.get(reason):
        made = _REMEDY_IN_CHECK[reason]
    return Remedy(text=made) if isinstance(made, str) else made


def _remedy(probe: Mapping[str, Any], in_check: bool) -> Remedy | str | None:
    """The fix: a Remedy where it runs commands, else its words."""
    reason = str(probe.get("reason") or probe.get("status"))
    if reason == "no-adapter":
        return _no_adapter_remedy(probe, in_check)
    if reason in (
        "signal",
        "python-error",
        "device-error",
        "no-output",
        "spawn-failed",
        "library-error",
    ):
        limited = limit_behind(probe)
        if limited is not None:
            return limited
    lookup = symbol_lookup_error(probe)
    if lookup is not None:
        return (
            f"ld.so ended the probe ({lookup}): a library of the process calls a function that "
            "no library of it defines, usually because another copy of one of its libraries "
            "wins over the system's (LD_PRELOAD, LD_LIBRARY_PATH, an RPATH); "
            + ("VKL006 names it." if in_check else "`vkdoctor check` (VKL006) names it.")
        )
    python = (probe.get("command") or [None])[0]
    shadow = pythonpath_culprit(probe)
    if shadow is not None and reason in ("wgpu-missing", "numpy-missing", "python-error"):
        entry, module = shadow
        kept = [e for e in str((probe.get("env") or {}).get("PYTHONPATH")).split(":") if e != entry]
        setting = f"export PYTHONPATH={':'.join(kept)}" if any(kept) else "unset PYTHONPATH"
        return (
            f"{module} comes from the PYTHONPATH entry {entry}, which comes before the installed "
            f"packages and fails to import: take {entry} out of PYTHONPATH ({setting}), or fix "
            "or remove the package there."
        )

    if reason == "signal":
        full = full_shader_cache(probe)
        if full is not None:
            return full

    if reason in ("wgpu-missing", "numpy-missing") and python:
        package = reason.split("-", 1)[0]
        if str(python).startswith(("/usr/bin/", "/bin/")):
            # a distribution's Python refuses pip (PEP 668, "externally managed")
            return (
                f"{python} is the distribution's Python, where pip may not install: make a "
                "virtual environment with wgpu and numpy (`python3 -m venv ~/.venvs/wgpu && "
                "~/.venvs/wgpu/bin/pip install wgpu numpy`) and run the probe with "
                "`--python ~/.venvs/wgpu/bin/python`."
            )
        return f"Install {package} in the Python that runs the probe: `{python} -m pip install {package}`."
    env = probe.get("env") or {}
    command = [str(c) for c in probe.get("command") or []]
    if "--shader-dir" in command[:-1] and reason in (
        "wrong-numbers",
        "ladder",
        "gpu-error",
        "limits",
    ):
        kernels = command[command.index("--shader-dir") + 1]
        return (
            f"Check the kernels in {kernels} (--shader-dir) first: a compile error, a missing "
            "@workgroup_size or a wrong result there is theirs; without --shader-dir the probe "
            "runs vkdoctor's own."
        )
    lib_path = env.get("WGPU_LIB_PATH")
    if reason in ("python-error", "no-output", "library-error") and lib_path:
        return Remedy(
            commands=("unset WGPU_LIB_PATH",),
            text=", or point it at a working libwgpu_native: wgpu-py loads "
            f"{lib_path} instead of its own wgpu-native (VKL005).",
        )
    if python and python != sys.executable and reason in ("spawn-failed", "no-output"):
        # --python: the interpreter the user named, not vkdoctor's, is the suspect
        what = "cannot be started" if reason == "spawn-failed" else "wrote no probe result"
        return (
            f"The probe's interpreter {python} (--python) {what}: give --python a Python 3.11+ "
            "with wgpu and numpy installed, or leave it out to use the one running vkdoctor."
        )
    if reason == "library-error":
        said = [k for k in ("LD_LIBRARY_PATH", "LD_PRELOAD") if env.get(k)]
        names = (
            "the library findings above (VKL003, VKL004, VKL006) name the copy"
            if in_check
            else "`vkdoctor check` names the copy (VKL003, VKL004, VKL006)"
        )
        if said:
            return Remedy(
                commands=(f"unset {' '.join(said)}",),
                text=f"({', '.join(f'{k}={env[k]}' for k in said)}), or give "
                f"{'it' if len(said) == 1 else 'them'} only to "
                "the program that needs it: an incompatible copy of a library comes first there; "
                f"{names}.",
            )
        return (
            f"{names[:1].upper()}{names[1:]} and the fix: a library the error names is not the "
            "one its users were built against."
        )
    return _REMEDY.get(reason)


def symbol_lookup_error(probe: Mapping[str, Any]) -> str | None:
    """ld.so's "symbol lookup error" line from the probe's stderr, without the program's name."""
    from vkdoctor.children import symbol_lookup_error as first_in

    return first_in(str(line) for line in probe.get("stderr_tail") or ())


def limit_behind(probe: Mapping[str, Any]) -> str | None:
    """The fix when a resource limit of this process (the probe's too) is below what Vulkan
    compute needs and the failure looks like it (VKE010)."""
    from vkdoctor.model import limits

    said = " ".join([str(probe.get("summary") or ""), *map(str, probe.get("stderr_tail") or [])])
    for lim in limits.current():
        if lim.tight and limits.shows(lim.spec.name, said):
            return (
                f"{_capital(lim.remedy(root=limits.can_raise_hard()))} ({lim.spec.name} is "
                f"{lim.shown(lim.soft)}, below the {lim.shown(lim.spec.minimum)} Vulkan compute "
                "needs: the limit, not the driver)."
            )
    return None


def full_shader_cache(probe: Mapping[str, Any]) -> str | None:
    """The fix when the crashed probe's Mesa shader cache is on a full filesystem: Mesa writes its
    mmapped index there, and that write is a SIGBUS (VKS002), not a driver crash."""
    import os
    from pathlib import Path

    from vkdoctor.machine.disk import SHADER_INDEX_BYTES, mesa_cache_dir, nearest_existing
    from vkdoctor.model.context import Context

    env = {str(k): str(v) for k, v in (probe.get("env") or {}).items()}
    if env.get("MESA_SHADER_CACHE_DISABLE", "").lower() in ("1", "true", "yes"):
        return None
    try:
        import pwd

        home: str | None = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = None
    found = mesa_cache_dir(Context(env=env, cwd=Path.cwd()), home)
    if found is None:
        return None
    path, var = found
    try:
        st = os.statvfs(nearest_existing(Path(path)))
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if st.f_blocks == 0 or st.f_flag & os.ST_RDONLY or free >= SHADER_INDEX_BYTES:
        return None
    return (
        f"Free space where Mesa's shader cache {path} (from {var}) is, or move it (export "
        "MESA_SHADER_CACHE_DIR=DIR), or for this run export MESA_SHADER_CACHE_DISABLE=true: "
        f"with {free} bytes free, Mesa's write of its cache index through mmap is a SIGBUS, not "
        "a driver crash."
    )


def pythonpath_culprit(probe: Mapping[str, Any]) -> tuple[str, str] | None:
    """(PYTHONPATH entry, file) when a file of the probe's failed import lies under an entry of
    the probe's PYTHONPATH: a package there shadows the installed one. The deepest frame wins;
    the probe's own files do not count."""
    import re

    from vkdoctor.resources import probes_dir

    entries = [
        e.rstrip("/")
        for e in str((probe.get("env") or {}).get("PYTHONPATH") or "").split(":")
        if e.startswith("/")
    ]
    if not entries:
        return None
    tail = "\n".join(str(line) for line in probe.get("stderr_tail") or [])
    files = [*re.findall(r'File "([^"]+)"', tail), *(probe.get("import_files") or [])]
    own = str(probes_dir()).rstrip("/") + "/"
    for path in reversed([str(f) for f in files]):
        if path.startswith(own):
            continue
        for entry in entries:
            if not path.startswith(entry + "/"):
                continue
            # a module imported from the entry itself: its first part names a package there
            # (not a virtual environment's site-packages that happens to lie below the entry)
            top = path[len(entry) + 1 :].split("/")[0].split(".")[0]
            if top.isidentifier():
                return entry, path
    return None


def _hidden_by(env: Mapping[str, Any]) -> str:
    """'unset VK_DRIVER_FILES first, as it may hide ...; otherwise ' when a variable decides
    which drivers the loader reads (an installed driver may be hidden), else ''."""
    set_ = [f"{k}={env[k]}" for k in (*_DRIVER_SELECTION, *_DRIVER_FILTERS) if k in env]
    if not set_:
        return ""
    return (
        f"unset {' '.join(s.split('=')[0] for s in set_)} first, as "
        f"{'it' if len(set_) == 1 else 'they'} may hide an installed driver (`vkdoctor check` "
        "shows which); otherwise "
    )


def _install(probe: Mapping[str, Any], in_check: bool) -> str:
    requested = probe.get("requested") or {}
    install = _INSTALL_CPU
    if in_check:
        # the driver findings above (VKD) already say what those variables hide
        install = install.replace("(`vkdoctor check`)", "(the driver findings, VKD, say so)")
    if requested.get("cpu"):
        return install
    if requested.get("gpu"):
        # lavapipe does not count here: installing it is no fix
        return (
            "See VKT005: it names each GPU driver and why it gives no device."
            if in_check
            else "Run `vkdoctor check --gpu`: it loads each GPU driver and says why it gives no "
            "device (a missing device node, a driver for other hardware, a library that fails)."
        )
    if requested.get("adapter"):
        return "Pick one of the adapters listed in the probe section with --adapter, or install its driver."
    return "Install the Vulkan driver for your GPU, or " + install[0].lower() + install[1:]


def finding(probe: Mapping[str, Any], *, in_check: bool = False) -> Finding:
    """The VKR001 finding for a probe result: ok when it passed, fail with the summary otherwise.
    `in_check`: part of `vkdoctor check`, whose other findings the fix can point at."""
    status = str(probe.get("status"))
    evidence = {
        k: probe.get(k)
        for k in (
            "status",
            "reason",
            "stage",
            "signal",
            "seed",
            "backend",
            "adapter",
            "failed_rung",
        )
        if probe.get(k) is not None
    }
    bad = [c for c in probe.get("cases") or [] if not c.get("ok")]
    if bad:
        evidence["worst_case"] = bad[0]
    if probe.get("stderr_tail") and status != "pass":
        evidence["stderr_tail"] = probe.get("stderr_tail")
    message = str(probe.get("summary") or f"the probe ended with status {status}")
    if status == "pass":
        title = "Compute probe passed"
        return Finding(
            code=CODE,
            severity=Severity.OK,
            title=title,
            message=message,
            evidence=evidence,
        )
    stage = probe.get("stage")
    # where it stopped, for a run that stopped early (a finished run's last stage says nothing)
    if (
        status not in ("pass", "error")
        and stage
        and not probe.get("finished")
        and f"stage {stage}" not in message
    ):
        message += f" (stage reached: {stage})"
    hiding = {k: v for k, v in (probe.get("env") or {}).items() if k in _DRIVER_SELECTION}
    if status == "no-adapter" and hiding:
        shown = ", ".join(f"{k}={v}" for k, v in hiding.items())
        message += f". {shown} is set: the Vulkan loader reads only the drivers named there"
    title = {
        "fail": "Compute probe computed wrong results" if bad else "Compute probe failed",
        "crash": f"Compute probe crashed ({probe.get('signal') or 'signal'})",
        "timeout": "Compute probe hung and was killed",
        "no-adapter": "No GPU adapter for the compute probe"
        if (probe.get("requested") or {}).get("gpu")
        else "No adapter for the compute probe",
        "error": "Compute probe could not run",
    }.get(status, f"Compute probe: {status}")
    return Finding(
        code=CODE,
        severity=Severity.FAIL,
        title=title,
        message=message,
        remedy=remedy(probe, in_check=in_check),
        evidence=evidence,
    )


def check_result(probe: Mapping[str, Any], left_out: Mapping[str, str]) -> CheckResult:
    """A VKR001 result for a probe run outside the check runner (vkdoctor run-probe).
    `left_out`: the settings that kept another user's drivers and layers out of the probe
    (vkdoctor.cachedir.foreign_code_off): every Vulkan program run here loads them, so a pass
    without them says nothing of those programs and is not a pass."""
    findings: tuple[Finding, ...] = (finding(probe),)
    if left_out:
        settings = " ".join(f"{name}={value}" for name, value in left_out.items())
        findings += (
            Finding(
                code=CODE,
                severity=Severity.FAIL,
                title="The probe ran without another user's driver or layer that every Vulkan "
                "program here loads",
                message=f"vkdoctor runs no other user's code, so the probe ran with {settings}; "
                "programs run in this environment load them, and the probe's result says "
                "nothing of what they do there.",
                remedy=Remedy(
                    text="vkdoctor check names each one (VKT001, VKT003): remove it or take "
                    "its folder out of the loader's search, or run as the user who owns it"
                ),
                evidence={"left_out": dict(left_out)},
            ),
        )
    return CheckResult(
        code=CODE,
        family=FAMILY,
        title=TITLE,
        status=CheckStatus.RAN,
        findings=findings,
        seconds=float(probe.get("seconds") or 0.0),
    )


def _capital(text: str) -> str:
    """A sentence's first letter, unless it starts with a command (ulimit ...)."""
    if text.startswith(("ulimit ", "unset ", "export ")):
        return text
    return text[:1].upper() + text[1:]
