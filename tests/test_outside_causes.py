"""Causes outside Vulkan's own variables, built for real: resource limits set in the child
(prlimit), broken packages on PYTHONPATH, Mesa's variables, and caches on full or read-only
tmpfs mounts. Each is measured first with the oracle (vulkaninfo, or the probe run directly),
then vkdoctor must name the cause with a fix that, applied, makes the oracle pass; where the
oracle passes, vkdoctor stays quiet."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, clean_env, validate_report, vulkaninfo

PROBE = REPO / "probes" / "rmsnorm_probe.py"
#: no "XDG_RUNTIME_DIR is invalid" lines in the way
BASE = {"XDG_RUNTIME_DIR": "/tmp"}


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = clean_env({**BASE, **(extra or {})})
    env["PYTHONPATH"] = ":".join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def vkdoctor(
    args: Sequence[str], *, limits: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`vkdoctor ARGS --json -` under `prlimit LIMITS` (set in the child, inherited by its own
    children: the load test and the probe)."""
    prefix = ["prlimit", *limits, "--"] if limits else []
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "vkdoctor", *args, "--json", "-"],
        capture_output=True,
        text=True,
        env=_env(env),
        cwd=REPO,
        timeout=300,
        check=False,
    )
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}") from exc
    validate_report(doc)
    return proc, doc


def shell(script: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        env=_env(env),
        cwd=REPO,
        timeout=300,
        check=False,
    )


def lavapipe_listed(proc: subprocess.CompletedProcess[str]) -> bool:
    return proc.returncode == 0 and "llvmpipe" in proc.stdout


def probe_directly(prefix: str = "", env: Mapping[str, str] | None = None) -> int:
    """The oracle for compute: the probe script itself, its exit status (0: it computed)."""
    proc = shell(f"{prefix} {sys.executable} -X faulthandler {PROBE} --backend vulkan --cpu", env)
    if proc.returncode == 0:
        assert '"status": "pass"' in proc.stdout, proc.stdout[-2000:]
    return proc.returncode


def failing(doc: Mapping[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code and f["severity"] in ("fail", "warn")]


def of(doc: Mapping[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code and f["severity"] != "ok"]


def only_failure(doc: Mapping[str, Any], code: str) -> dict[str, Any]:
    """The one finding left failing, and it is `code`'s: everything else it caused is info."""
    bad = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert [f["code"] for f in bad] == [code], [(f["code"], f["title"]) for f in bad]
    return bad[0]


def no_driver_blame(doc: Mapping[str, Any]) -> None:
    """Nothing that still counts tells the user the driver crashed or to isolate it."""
    for f in doc["findings"]:
        if f["severity"] in ("fail", "warn"):
            text = f"{f['title']} {f['message']} {f['remedy'] or ''}"
            assert "isolate the driver" not in text, f
            assert "crashed the process" not in text, f


MIB = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# resource limits


@pytest.mark.parametrize(
    ("limit", "option", "soft", "what"),
    [
        # ld.so cannot map lavapipe's libraries: vulkaninfo lists no device
        ("RLIMIT_AS", "--as", 200 * MIB, "vulkaninfo"),
        # vulkaninfo still works; wgpu's device request fails ("Not enough memory left")
        ("RLIMIT_AS", "--as", 1150 * MIB, "probe"),
        # vulkaninfo still works; wgpu lists no adapter at all, and says nothing
        ("RLIMIT_AS", "--as", 300 * MIB, "adapter"),
        # vulkaninfo still works; the probe crashes (SIGSEGV) requesting its device
        ("RLIMIT_DATA", "--data", 190 * MIB, "probe"),
    ],
)
def test_a_memory_limit_is_named_with_the_ulimit_that_fixes_it(limit, option, soft, what):
    prlimit = [f"{option}={soft}:unlimited"]
    ulimit_flag = {"--as": "-v", "--data": "-d"}[option]
    set_soft = f"ulimit -S {ulimit_flag} {soft // 1024};"
    # the oracle: it really breaks
    if what == "vulkaninfo":
        assert not lavapipe_listed(shell(f"{set_soft} vulkaninfo --summary"))
    else:
        assert lavapipe_listed(shell(f"{set_soft} vulkaninfo --summary"))
    assert probe_directly(set_soft) != 0

    proc, doc = vkdoctor(["check", "--cpu"], limits=prlimit)
    assert proc.returncode == 1
    cause = only_failure(doc, "VKE010")
    assert cause["evidence"]["limit"] == limit
    assert cause["evidence"]["soft"] == soft and cause["evidence"]["hard"] is None
    assert limit in cause["title"]
    # the symptoms point at it, and nothing blames the driver
    (probe,) = of(doc, "VKR001")
    assert probe["severity"] == "info" and probe["evidence"]["explained_by"] == "VKE010"
    if what == "vulkaninfo":
        lvp = [f for f in of(doc, "VKT001") if "lvp_icd" in f["title"]]
        assert lvp and all(f["evidence"]["explained_by"] == "VKE010" for f in lvp)
    if what == "adapter":
        # wgpu hid the device the loader gives, without a reason: the limit, not wgpu
        assert doc["probe"]["status"] == "no-adapter"
        (hidden,) = of(doc, "VKR002")
        assert hidden["severity"] == "info", hidden
        if hidden["title"].startswith("No Vulkan device to compare"):
            # this close to the limit the load test's own child (Python, more than vulkaninfo
            # needs) may find no device either, now and then: that too is the limit's
            failed = [f for f in doc["findings"] if f["code"].startswith("VKT")]
            assert all(
                f["severity"] in ("ok", "info") or f["evidence"].get("explained_by") == "VKE010"
                for f in failed
            ), failed
        else:
            assert hidden["evidence"]["explained_by"] == "VKE010", hidden
            assert "wgpu listed no adapter" in cause["message"]
    no_driver_blame(doc)
    # the fix, applied as written, makes the oracle pass
    fix = re.search(rf"ulimit -S {ulimit_flag} unlimited", cause["remedy"])
    assert fix, cause["remedy"]
    assert lavapipe_listed(shell(f"{set_soft} {fix.group(0)}; vulkaninfo --summary"))
    assert probe_directly(f"{set_soft} {fix.group(0)};") == 0


def test_too_few_open_files_under_a_hard_limit_says_who_can_raise_it():
    # root here has no CAP_SYS_RESOURCE (a container): it cannot raise its own hard limit
    assert shell("prlimit --nofile=8:8 bash -c 'ulimit -n 64'").returncode != 0
    # what breaks is vkdoctor's own start of its children (pipes): the probe alone needs 5
    assert probe_directly("prlimit --nofile=4:4") != 0
    proc, doc = vkdoctor(["check", "--cpu"], limits=["--nofile=8:8"])
    assert proc.returncode == 1
    cause = only_failure(doc, "VKE010")
    assert cause["evidence"]["limit"] == "RLIMIT_NOFILE"
    assert (cause["evidence"]["soft"], cause["evidence"]["hard"]) == (8, 8)
    assert "hard limit is 8 too" in cause["remedy"] and "LimitNOFILE=" in cause["remedy"]
    # the load test's child is forked when vkdoctor starts, while the 8 descriptors still have
    # room for its pipes, so the load test itself may pass; whatever of it fails points at it
    assert all(f["evidence"].get("explained_by") == "VKE010" for f in of(doc, "VKT002"))
    assert "cannot tell whether Vulkan compute works" in cause["message"]
    # raised from outside (what the remedy asks for), vkdoctor's own probe runs
    proc, doc = vkdoctor(["run-probe", "--cpu"], limits=["--nofile=1024:1024"])
    assert proc.returncode == 0


def test_soft_open_files_limit_is_fixed_by_the_ulimit_given():
    proc, doc = vkdoctor(["check", "--cpu"], limits=["--nofile=8:4096"])
    assert proc.returncode == 1
    cause = only_failure(doc, "VKE010")
    assert "ulimit -S -n 4096" in cause["remedy"]
    fixed = shell(
        f"ulimit -S -n 8; ulimit -S -n 4096; {sys.executable} -m vkdoctor run-probe --cpu"
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_small_limits_that_do_no_harm_stay_quiet():
    # below vkdoctor's minimums, but the oracle passes: nothing to say
    prefix = "ulimit -S -s 256; ulimit -S -n 32;"
    assert lavapipe_listed(shell(f"{prefix} vulkaninfo --summary"))
    assert probe_directly(prefix) == 0
    _proc, doc = vkdoctor(["check", "--cpu"], limits=["--stack=262144:unlimited", "--nofile=32"])
    assert of(doc, "VKE010") == []
    assert doc["probe"]["status"] == "pass"


def test_limits_unit():
    from vkdoctor.model import limits as L

    spec = L.SPECS[0]
    assert L.Limit(spec=spec, soft=None, hard=None).tight is False
    lim = L.Limit(spec=spec, soft=100 * MIB, hard=200 * MIB)
    assert lim.tight and not lim.raisable()
    assert "hard limit is 200.0 MiB too" in lim.remedy()
    assert "ulimit -v unlimited" in lim.remedy(root=True)
    nofile = L.Limit(spec=L.SPECS[3], soft=8, hard=8)
    assert "ulimit -n 1024" in nofile.remedy(root=True)  # never "unlimited": fs.nr_open
    assert L.can_raise_hard("CapEff:\t000001ffffffffff\n")
    assert not L.can_raise_hard("CapEff:\t000001fffeffffff\n")


# ---------------------------------------------------------------------------------------------
# PYTHONPATH


def _package(root: Path, name: str, body: str) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(body)
    return root


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("numpy", 'raise ImportError("this numpy is a broken copy")\n'),
        ("numpy", 'raise RuntimeError("half-installed numpy")\n'),
        ("wgpu", 'raise RuntimeError("half-installed wgpu")\n'),
    ],
)
def test_a_broken_package_on_pythonpath_is_named_with_the_pythonpath_without_it(
    tmp_path, name, body
):
    harmless = tmp_path / "harmless"
    harmless.mkdir()
    broken = _package(tmp_path / "broken", name, body)
    pythonpath = f"{harmless}:{broken}"
    oracle = shell(f"{sys.executable} -c 'import {name}'", {"PYTHONPATH": pythonpath})
    assert oracle.returncode != 0
    assert probe_directly(env={"PYTHONPATH": pythonpath}) != 0

    proc, doc = vkdoctor(["run-probe", "--cpu"], env={"PYTHONPATH": pythonpath})
    assert proc.returncode == 1
    (finding,) = of(doc, "VKR001")
    assert f"{broken}/{name}/__init__.py" in finding["remedy"]
    assert f"PYTHONPATH entry {broken}" in finding["remedy"]
    setting = re.search(r"export PYTHONPATH=(\S+)\)", finding["remedy"])
    assert setting, finding["remedy"]
    assert str(broken) not in setting.group(1)
    # the PYTHONPATH the fix gives (with the repository first, as the test needs)
    assert probe_directly(env={"PYTHONPATH": setting.group(1)}) == 0


def test_a_working_package_on_pythonpath_stays_quiet(tmp_path):
    shadow = _package(tmp_path / "ok", "unrelated_helper", "X = 1\n")
    proc, doc = vkdoctor(["run-probe", "--cpu"], env={"PYTHONPATH": str(shadow)})
    assert proc.returncode == 0 and doc["probe"]["status"] == "pass"


# ---------------------------------------------------------------------------------------------
# Mesa's variables


#: measured on Mesa 22.3.6: a release build ignores LP_DEBUG, the device-select layer falls back
#: to the default device, MESA_LOADER_DRIVER_OVERRIDE is for OpenGL, 0 threads is single-threaded
HARMLESS_MESA = {
    "LP_NUM_THREADS": "0",
    "MESA_VK_DEVICE_SELECT": "ffff:ffff",
    "MESA_LOADER_DRIVER_OVERRIDE": "zink",
    "LP_DEBUG": "all",
}


def test_mesa_variables_that_do_not_break_lavapipe_stay_quiet():
    assert lavapipe_listed(shell("vulkaninfo --summary", HARMLESS_MESA))
    assert probe_directly(env=HARMLESS_MESA) == 0
    _proc, doc = vkdoctor(["check", "--cpu"], env=HARMLESS_MESA)
    assert doc["probe"]["status"] == "pass"
    for f in doc["findings"]:
        if f["severity"] in ("warn", "fail"):
            text = json.dumps(f)
            assert not any(v in text for v in HARMLESS_MESA), f


# ---------------------------------------------------------------------------------------------
# caches and temp directories on full or read-only filesystems


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Any]:
    made: list[Path] = []

    def mount(name: str, options: str, fill: bool = False) -> Path:
        point = tmp_path / name
        point.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], check=True)
        made.append(point)
        if fill:
            subprocess.run(
                ["dd", "if=/dev/zero", f"of={point}/fill", "bs=4k"],
                capture_output=True,
                check=False,
            )
        return point

    yield mount
    for point in reversed(made):
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.mark.parametrize("variable", ["MESA_SHADER_CACHE_DIR", "XDG_CACHE_HOME"])
def test_a_full_shader_cache_is_a_disk_finding_not_a_driver_crash(mounts, tmp_path, variable):
    full = mounts("full", "size=64k", fill=True)
    env = {variable: str(full)}
    # the oracle: the probe dies of SIGBUS (7) at its first kernel; vulkaninfo compiles nothing
    assert probe_directly(env=env) == -signal.SIGBUS  # bash -c execs the one command
    proc, doc = vkdoctor(["check", "--cpu"], env=env)
    assert proc.returncode == 1
    cause = only_failure(doc, "VKS002")
    ev = cause["evidence"]
    assert ev["problem"] == "full" and ev["mount"] == str(full) and ev["fstype"] == "tmpfs"
    assert ev["decided_by"] == variable and ev["path"] == f"{full}/mesa_shader_cache"
    assert "SIGBUS" in cause["message"]
    (probe,) = of(doc, "VKR001")
    assert probe["evidence"]["signal"] == "SIGBUS"
    assert probe["evidence"]["explained_by"] == "VKS002"
    # the crash came after the adapters were enumerated: the report still lists them, with the
    # one it used, which is the device the real loader lists
    used = doc["probe"]["adapter"]
    assert used["name"] in vulkaninfo({}).stdout.decode()
    assert [a["name"] for a in doc["probe"]["adapters"] if a.get("used")] == [used["name"]]
    no_driver_blame(doc)
    # each fix it gives makes the probe pass
    assert "export MESA_SHADER_CACHE_DISABLE=true" in cause["remedy"]
    assert probe_directly(env={**env, "MESA_SHADER_CACHE_DISABLE": "true"}) == 0
    assert "export MESA_SHADER_CACHE_DIR=" in cause["remedy"]
    roomy = tmp_path / "cache"
    roomy.mkdir()
    assert probe_directly(env={**env, "MESA_SHADER_CACHE_DIR": str(roomy)}) == 0
    (full / "fill").unlink()  # free space
    assert probe_directly(env=env) == 0


@pytest.mark.parametrize("moved", ["MESA_SHADER_CACHE_DIR", "MESA_SHADER_CACHE_DISABLE"])
def test_once_the_shader_cache_is_moved_or_off_the_full_disk_is_no_sigbus(mounts, tmp_path, moved):
    """VKS002's own fixes, applied: the probe passes, and no finding says SIGBUS any more (the
    cache directory's filesystem is still full: VKS001 says so, with a fix that exists)."""
    full = mounts("full", "size=64k", fill=True)
    roomy = tmp_path / "roomy"
    roomy.mkdir()
    value = str(roomy) if moved == "MESA_SHADER_CACHE_DIR" else "true"
    env = {"XDG_CACHE_HOME": str(full), moved: value}
    assert probe_directly(env=env) == 0  # the oracle: the fix works
    _, doc = vkdoctor(["check", "--cpu"], env=env)
    assert doc["probe"]["status"] == "pass"
    assert [f for f in doc["findings"] if f["code"] == "VKS002" and f["severity"] == "fail"] == []
    (space,) = [f for f in doc["findings"] if f["code"] == "VKS001" and f["severity"] == "fail"]
    for command in space["remedy"].split("; "):
        if command.startswith("rm -rf "):
            assert Path(command.removeprefix("rm -rf ")).exists(), command


def test_a_read_only_shader_cache_is_information_the_cache_is_off(mounts):
    ro = mounts("ro", "ro,size=4g")
    env = {"MESA_SHADER_CACHE_DIR": str(ro)}
    assert probe_directly(env=env) == 0  # Mesa turns its cache off
    _proc, doc = vkdoctor(["check", "--cpu", "--select", "VKS,VKR"], env=env)
    (finding,) = of(doc, "VKS002")
    assert finding["severity"] == "info"
    assert finding["evidence"]["problem"] == "read-only"
    assert "ro" in finding["evidence"]["mount_options"]
    assert "mounted ro" in finding["message"]
    assert doc["probe"]["status"] == "pass"


def test_a_read_only_temp_dir_is_a_finding_though_it_has_free_bytes(mounts):
    ro = mounts("tmp-ro", "ro,size=4g")
    _proc, doc = vkdoctor(["check", "--no-probe", "--select", "VKS"], env={"TMPDIR": str(ro)})
    (finding,) = failing(doc, "VKS002")
    assert finding["severity"] == "warn" and finding["evidence"]["decided_by"] == "TMPDIR"
    assert finding["evidence"]["free_bytes"] > 1024**3
    assert "export TMPDIR=" in finding["remedy"]
    # and the probe does not mind: nothing else fails
    assert probe_directly(env={"TMPDIR": str(ro)}) == 0


def test_a_noexec_temp_dir_stays_quiet(mounts):
    noexec = mounts("tmp-noexec", "noexec,size=4g")
    assert probe_directly(env={"TMPDIR": str(noexec)}) == 0
    _proc, doc = vkdoctor(["check", "--cpu", "--select", "VKS,VKR"], env={"TMPDIR": str(noexec)})
    assert of(doc, "VKS002") == [] and doc["probe"]["status"] == "pass"


# ---------------------------------------------------------------------------------------------
# NVIDIA's variables: no NVIDIA driver here, so on a tree with its layer manifest


def _nvidia_root(tmp_path: Path, layer: bool = True) -> Path:
    if layer:
        d = tmp_path / "usr/share/vulkan/implicit_layer.d"
        d.mkdir(parents=True)
        (d / "nvidia_layers.json").write_text(
            json.dumps(
                {
                    "file_format_version": "1.0.0",
                    "layer": {
                        "name": "VK_LAYER_NV_optimus",
                        "type": "INSTANCE",
                        "library_path": "libGLX_nvidia.so.0",
                        "api_version": "1.3.242",
                        "implementation_version": "1",
                        "description": "NVIDIA Optimus layer",
                        "enable_environment": {"__NV_PRIME_RENDER_OFFLOAD": "1"},
                        "disable_environment": {"DISABLE_LAYER_NV_OPTIMUS_1": ""},
                    },
                }
            )
        )
    return tmp_path


def _vke011(root: Path, env: Mapping[str, str], *, cpu: bool = False) -> list[Any]:
    from vkdoctor.checks.outside import NvidiaVariables
    from vkdoctor.model.context import Context, Options

    ctx = Context(root=root, env=dict(env), options=Options(cpu=cpu))
    return list(NvidiaVariables().run(ctx))


@pytest.mark.parametrize(
    ("env", "cpu", "expected"),
    [
        ({"__VK_LAYER_NV_optimus": "non_NVIDIA_only"}, False, [("warn", "hides the NVIDIA GPU")]),
        ({"__VK_LAYER_NV_optimus": "NVIDIA_only"}, True, [("warn", "lavapipe included")]),
        ({"__VK_LAYER_NV_optimus": "NVIDIA_only"}, False, [("info", "hides every other")]),
        ({"__GL_SHADER_DISK_CACHE": "0"}, False, [("info", "shader cache is off")]),
        ({"__GL_SHADER_DISK_CACHE_SIZE": "1048576"}, False, [("info", "cache is small")]),
        ({"__GL_SHADER_DISK_CACHE_SIZE": str(2 * 1024**3)}, False, []),
        ({"__NV_PRIME_RENDER_OFFLOAD": "1"}, False, []),
        ({"__GL_SHADER_DISK_CACHE": "1"}, False, []),
    ],
)
def test_nvidia_variables_where_nvidias_layer_is_installed(tmp_path, env, cpu, expected):
    found = _vke011(_nvidia_root(tmp_path), env, cpu=cpu)
    assert [(f.severity.value, next(w for _, w in expected if w in f.title)) for f in found] == [
        (s, w) for s, w in expected
    ]
    for f in found:
        assert (f.fix() and f.fix().startswith("unset ")) or f.severity.value == "info"


def test_nvidia_variables_without_nvidia_stay_quiet(tmp_path):
    env = {
        "__VK_LAYER_NV_optimus": "non_NVIDIA_only",
        "__GL_SHADER_DISK_CACHE": "0",
        "__GL_SHADER_DISK_CACHE_SIZE": "1",
    }
    assert _vke011(_nvidia_root(tmp_path, layer=False), env) == []


def test_every_documented_nvidia_variable_is_on_the_page():
    from vkdoctor.checks.outside import NVIDIA_VARIABLES

    page = (REPO / "docs/codes/VKE011.md").read_text()
    for name in NVIDIA_VARIABLES:
        assert f"`{name}`" in page, name
    assert "__GL_SHADER_DISK_CACHE_PATH" in NVIDIA_VARIABLES


def test_an_unwritable_nvidia_cache_path_is_reported_where_the_caches_are(tmp_path):
    from vkdoctor.machine.disk import write_places, write_problems

    locked = tmp_path / "locked"
    locked.mkdir()
    from vkdoctor.model.context import Context

    ctx = Context(env={"__GL_SHADER_DISK_CACHE_PATH": str(locked)}, cwd=tmp_path)
    places = write_places(ctx, home=str(tmp_path), own_cache=None)
    nvidia = [p for p in places if p.purpose == "NVIDIA shader cache"]
    assert nvidia and nvidia[0].path == str(locked)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1g", "tmpfs", str(locked)], check=True)
    try:
        (problem,) = [p for p in write_problems(nvidia, Path("/proc/self/mountinfo").read_text())]
        assert problem.problem == "read-only" and problem.mount is not None
        assert "ro" in problem.mount.options
    finally:
        subprocess.run(["umount", "-l", str(locked)], check=False)


CHECK = ("check", "--cpu")


# where the memory runs out moves with the limit, and CPython fails differently at each point
# (MemoryError, SystemError, a ValueError from a compile cut short): a sweep meets them all
@pytest.mark.parametrize("mib", [16, 20, 24, 32, 40, 48, 64, 96])
def test_a_limit_too_small_for_vkdoctor_itself_is_named_not_called_a_bug(mib: int):
    proc = subprocess.run(
        ["prlimit", f"--as={mib * MIB}:unlimited", "--", sys.executable, "-m", "vkdoctor", *CHECK],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    if proc.stderr:  # vkdoctor itself ran out: it says so and which limit
        assert proc.stderr.startswith("vkdoctor: out of memory: ")
        assert "ulimit -S -v unlimited" in proc.stderr
    else:  # it got through on this little and reports the limit (at 40 MiB, now and then)
        assert "VKE010 RLIMIT_AS (ulimit -v) is" in proc.stdout
        assert "ulimit -S -v unlimited" in proc.stdout


def test_a_small_limit_does_not_take_the_blame_for_another_failure():
    # 32 files is below vkdoctor's minimum, but the probe fails for its own reason
    proc, doc = vkdoctor(
        ["check", "--adapter", "no such adapter"], limits=["--nofile=32:4096", "--stack=262144"]
    )
    assert proc.returncode == 1
    assert of(doc, "VKE010") == []
    (probe,) = of(doc, "VKR001")
    assert probe["severity"] == "fail" and "explained_by" not in probe["evidence"]


def test_run_probe_alone_ties_its_sigbus_to_the_full_shader_cache(mounts):
    full = mounts("full", "size=64k", fill=True)
    proc, doc = vkdoctor(["run-probe", "--cpu"], env={"XDG_CACHE_HOME": str(full)})
    assert proc.returncode == 1 and doc["probe"]["signal"] == "SIGBUS"
    (f,) = of(doc, "VKR001")
    assert f"{full}/mesa_shader_cache (from XDG_CACHE_HOME)" in f["remedy"]
    assert "export MESA_SHADER_CACHE_DISABLE=true" in f["remedy"]
    no_driver_blame(doc)


@pytest.mark.parametrize("limit", [f"--as={1150 * MIB}:unlimited", f"--data={190 * MIB}:unlimited"])
def test_run_probe_alone_names_the_memory_limit(limit):
    proc, doc = vkdoctor(["run-probe", "--cpu"], limits=[limit])
    assert proc.returncode == 1
    (f,) = of(doc, "VKR001")
    name = "RLIMIT_AS" if limit.startswith("--as") else "RLIMIT_DATA"
    # the command first, then which limit and why it is the cause
    assert f["remedy"].startswith("ulimit -S ")
    assert f"({name} is " in f["remedy"] and "the limit, not the driver" in f["remedy"]
    no_driver_blame(doc)


def test_a_virtual_environment_below_a_pythonpath_entry_is_not_a_shadow():
    from vkdoctor.children.probe_report import pythonpath_culprit

    def probe(*files: str) -> dict[str, Any]:
        return {
            "env": {"PYTHONPATH": "/r:/other"},
            "stderr_tail": [f'  File "{f}", line 1, in <module>' for f in files],
        }

    assert pythonpath_culprit(probe("/r/.venv/lib/python3.11/site-packages/wgpu/_a.py")) is None
    assert pythonpath_culprit(probe("/r/numpy/__init__.py")) == ("/r", "/r/numpy/__init__.py")
    assert pythonpath_culprit(probe("/other/wgpu.py")) == ("/other", "/other/wgpu.py")
