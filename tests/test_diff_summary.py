"""`vkdoctor diff` and `vkdoctor summary` on real reports: `check --json` run here on a healthy
machine and on broken setups (a driver whose library needs a missing libLLVM, a driver that
crashes in its constructor), plus the report of a real H200 machine (tests/data/report-h200.json).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import run_json, run_vkdoctor

DATA = Path(__file__).resolve().parent / "data"
H200 = DATA / "report-h200.json"
LVP_MANIFEST = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
LVP = Path("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so")


def _llvm_needed(lib: Path) -> str:
    out = subprocess.run(
        ["patchelf", "--print-needed", str(lib)], capture_output=True, text=True, check=True
    ).stdout.split()
    (llvm,) = [n for n in out if n.startswith("libLLVM")]
    return llvm


def _owner(path: str) -> tuple[str, str]:
    """(package, version) that dpkg says owns `path` (as /lib or /usr/lib: usrmerge)."""
    for spelling in (path, "/usr" + path):
        proc = subprocess.run(
            ["dpkg-query", "-S", spelling], capture_output=True, text=True, check=False
        )
        if proc.returncode == 0:
            break
    assert proc.returncode == 0, proc.stderr
    name = proc.stdout.split(":")[0]
    version = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", name], capture_output=True, text=True, check=True
    ).stdout.strip()
    return name, version


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real reports: healthy (probe on lavapipe), a lavapipe copy whose library needs an LLVM
    that is not installed, a driver that crashes in dlopen; each through VK_DRIVER_FILES."""
    root = tmp_path_factory.mktemp("reports")
    broken = root / "broken"
    broken.mkdir()
    lib = broken / LVP.name
    shutil.copy(LVP, lib)
    subprocess.run(
        ["patchelf", "--replace-needed", _llvm_needed(LVP), "libLLVM-99.so.1", str(lib)],
        check=True,
        timeout=60,
    )
    manifest = json.loads(LVP_MANIFEST.read_text())
    manifest["ICD"]["library_path"] = str(lib)
    (broken / LVP_MANIFEST.name).write_text(json.dumps(manifest))
    crash = root / "crash"
    crash.mkdir()
    subprocess.run(
        [
            *("gcc", "-shared", "-fPIC", "-O1", "-DCTOR_SEGV"),
            *("-o", str(crash / "libvulkan_crash.so"), str(DATA / "fake_icd.c")),
        ],
        check=True,
        timeout=60,
    )
    (crash / "crash_icd.json").write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(crash / "libvulkan_crash.so"), "api_version": "1.3.0"},
            }
        )
    )
    out = {}
    for name, env, want in (
        ("healthy", {}, 0),
        ("missing", {"VK_DRIVER_FILES": str(broken / LVP_MANIFEST.name)}, 1),
        ("crash", {"VK_DRIVER_FILES": str(crash / "crash_icd.json")}, 1),
    ):
        proc, doc = run_json(["check", "--cpu"], env=env)
        assert proc.returncode == want, proc.stderr
        path = root / f"{name}.json"
        path.write_text(json.dumps(doc))
        out[name] = path
    out["h200"] = H200
    return out


def _doc(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _diff(a: Path, b: Path, *args: str, columns: str | None = None):
    env = {"COLUMNS": columns} if columns else None
    proc = run_vkdoctor(["diff", str(a), str(b), *args], env=env)
    assert "Traceback" not in proc.stderr
    return proc


def _sections(text: str) -> list[str]:
    """The headings (and the A:, B:, Verdict: lines), without what follows their colon."""
    return [line.split(":")[0] for line in text.splitlines() if line and not line[0].isspace()]


def test_the_report_carries_closures_packages_and_environment(reports):
    healthy, missing = _doc(reports["healthy"]), _doc(reports["missing"])
    (lvp,) = [r for r in healthy["drivers"] if r["manifest"] == str(LVP_MANIFEST)]
    llvm = _llvm_needed(LVP)
    (row,) = [lib for lib in lvp["libraries"] if lib["name"] == llvm]
    assert row["how"] == "ld.so.cache"
    # the package and version dpkg itself names for that file
    name, version = _owner(row["path"])
    assert row["package"].split(":")[0] == name and row["package"].endswith(f" {version}")
    assert lvp["package"].startswith(_owner(str(LVP))[0])
    (stack,) = [f for f in healthy["findings"] if f["code"] == "VKP009"]
    assert {p["name"].split(":")[0] for p in stack["evidence"]["packages"]} >= {name}
    assert healthy["host"]["environment"] == {}
    assert missing["host"]["environment"]["VK_DRIVER_FILES"].endswith(LVP_MANIFEST.name)
    (broken,) = missing["drivers"]
    assert broken["missing"] == [{"name": "libLLVM-99.so.1", "needed_by": broken["library"]}]


def test_environment_is_redacted_like_the_rest(tmp_path: Path):
    home = tmp_path / "home" / "zoe"
    (home / "lib").mkdir(parents=True)
    env = {"HOME": str(home), "LD_LIBRARY_PATH": str(home / "lib"), "USER": "zoe"}
    _, doc = run_json(["check", "--no-probe", "--select", "VKH,VKD", "--redact"], env=env)
    assert doc["host"]["environment"]["LD_LIBRARY_PATH"] == "~/lib"
    assert str(home) not in json.dumps(doc)


def test_diff_names_the_missing_library_first(reports):
    proc = _diff(reports["healthy"], reports["missing"])
    assert proc.returncode == 1, proc.stderr
    text = proc.stdout
    assert "Verdict: A pass (ok, exit 0); B fail (fail, exit 1): different verdicts" in text
    sections = _sections(text)
    assert sections[:5] == [
        "A",
        "B",
        "Verdict",
        "Why",
        "Drivers that fail or give a device on one side only",
    ]
    assert (
        sections.index("Environment (Vulkan, loader, ld.so, XDG, wgpu variables)")
        < (sections.index("Findings"))
        < sections.index("Probe")
    )
    why = text.split("\nWhy:\n")[1].split("\n\n")[0]
    first = why.split("\n  * ")[0]
    assert "lvp_icd.x86_64.json loads on A and not on B" in first
    assert "libLLVM-99.so.1: cannot open shared object file" in " ".join(first.split())
    # the driver: the library missing on B, the LLVM that A resolves and the package behind it
    driver = text.split("Drivers that fail or give a device on one side only:\n")[1].split("\n\n")[
        0
    ]
    assert "libLLVM-99.so.1: A not in its closure; B missing" in driver
    llvm = _llvm_needed(LVP)
    name, version = _owner(f"/lib/x86_64-linux-gnu/{llvm}")
    flat = " ".join(driver.split())
    assert f"{llvm} A: /lib/x86_64-linux-gnu/{llvm} (ld.so.cache, {name}" in flat
    assert version in flat
    assert "found through: A default XDG_DATA_DIRS; B VK_DRIVER_FILES" in driver
    env = text.split("wgpu variables):\n")[1].split("\n\n")[0]
    # one line when it fits, else the name and a line per side
    assert re.match(r"  VK_DRIVER_FILES(: A unset; B |\n    A: unset\n    B: )/", env), env
    findings = text.split("\nFindings:\n")[1].split("\n\n")[0]
    assert findings.startswith("  VKL002: A ok, B fail")
    assert "Probe:\n  status: A pass; B no-adapter" in text
    assert all(len(line) <= 80 for line in text.splitlines()), text


def test_diff_a_crashing_driver(reports):
    proc = _diff(reports["healthy"], reports["crash"], columns="60")
    assert proc.returncode == 1
    why = " ".join(proc.stdout.split("\nWhy:\n")[1].split("\n\n")[0].split())
    assert "crash_icd.json is on B only: fails: the real load test: crash_icd.json" in why
    assert "crashes the process (SIGSEGV)" in why
    assert "VK_DRIVER_FILES differs (A unset, B " in why
    assert "lvp_icd.x86_64.json loads, llvmpipe" in why
    assert all(len(line) <= 60 for line in proc.stdout.splitlines()), proc.stdout


def test_a_driver_listed_and_failing_on_one_side_is_not_said_to_give_a_device(reports):
    """Both fail: the driver that crashes is listed on B only and gives no device on either
    side; the heading it is offered under says it fails there, not that it gives a device."""
    proc = _diff(reports["missing"], reports["crash"])
    text = proc.stdout
    assert "Drivers that give a device" not in text, text
    section = text.split("Drivers that fail or give a device on one side only:\n")[1]
    assert "  crash_icd.json\n    A: not listed\n    B: fails: " in section.split("\n\n")[0]


def test_a_skipped_driver_is_said_skipped_once(reports, tmp_path: Path):
    absent = tmp_path / "absent.json"
    proc, doc = run_json(["check", "--no-probe"], env={"VK_DRIVER_FILES": str(absent)})
    assert proc.returncode == 1, proc.stderr
    report = tmp_path / "absent-report.json"
    report.write_text(json.dumps(doc))
    text = _diff(report, reports["crash"]).stdout
    assert "A: skipped: cannot be opened (No such file or directory)\n" in text, text


def test_same_verdict_on_another_machine_exits_0(reports):
    proc = _diff(reports["h200"], reports["healthy"])
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Verdict: A pass (ok, exit 0); B pass (ok, exit 0): the same verdict" in text
    assert "\nWhy:" not in text
    assert "  nvidia_icd.json\n    A: loads, NVIDIA H200\n    B: not listed" in text
    # the H200 report predates host.environment: said, not guessed
    assert "A's report does not record the environment" in text
    probe = text.split("\nProbe:\n")[1]
    assert probe.startswith("  adapter\n    A: NVIDIA H200 (DiscreteGPU, Vulkan)\n    B: llvmpipe")
    assert "distribution: A Ubuntu 24.04.3 LTS; B " in text
    same = _diff(reports["healthy"], reports["healthy"])
    assert same.returncode == 0
    assert same.stdout.rstrip().endswith("No difference in what vkdoctor records.")


def test_diff_h200_against_a_broken_machine_as_json(reports):
    proc = _diff(reports["h200"], reports["missing"], "--format", "json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["same_verdict"] is False and doc["verdict_b"] == "fail"
    assert doc["causes"][0].startswith("lvp_icd.x86_64.json is on B only: fails:")
    assert doc["causes"][1] == "nvidia_icd.json loads, NVIDIA H200 on A; B does not list it"
    decisive = [d["name"] for d in doc["drivers"] if d["decisive"]]
    assert decisive == ["nvidia_icd.json", "lvp_icd.x86_64.json"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not JSON"),
        ('{"a": 1}', "JSON, but not a vkdoctor report (no schema_version)"),
        ("[1, 2]", "JSON, but not a vkdoctor report"),
        ('{"schema_version": 2, "status": "ok"}', "a report of schema version 2"),
        (
            '{"schema_version": 1, "status": "ok"}',
            "not a vkdoctor report as its schema says: the report has no ",
        ),
        ("\udcff".encode("utf-8", "surrogateescape").decode("latin-1"), "not JSON"),
    ],
)
def test_unreadable_input_exits_2_and_says_which(tmp_path: Path, content: str, says: str):
    """diff needs both reports: exit 2. summary names the bad input, sums up the rest and exits
    1 (an input it could not read is no pass); 2 only when it could read none."""
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="latin-1")
    proc = run_vkdoctor(["diff", str(H200), str(bad)])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert f"vkdoctor: {bad}: {says}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_vkdoctor(["summary", str(H200), str(bad)])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 machine, 0 failed" in proc.stdout and "Not read (1):" in proc.stdout
    assert f"vkdoctor summary: {bad}: {says}" in proc.stderr, proc.stderr
    # the job page's heading does not say "all pass" over an input it could not read
    md = run_vkdoctor(["summary", "--format", "github", str(H200), str(bad)])
    assert md.returncode == 1, md.stdout + md.stderr
    assert md.stdout.startswith("## vkdoctor summary: 1 not read; 1 machine read, none failed\n")
    proc = run_vkdoctor(["summary", str(bad)])
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert "no report could be read" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_file_and_directory_exit_2(tmp_path: Path):
    for target in (tmp_path / "absent.json", tmp_path):
        proc = run_vkdoctor(["diff", str(H200), str(target)])
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and str(target) in proc.stderr


def _fleet(reports: dict[str, Path], root: Path, counts: dict[str, int]) -> list[str]:
    names = []
    for kind, n in counts.items():
        for i in range(n):
            d = root / "artifacts" / f"{kind}-{i}"
            d.mkdir(parents=True)
            shutil.copy(reports[kind], d / "vkdoctor.json")
            names.append(d.name)
    return names


def test_summary_of_a_dozen_machines(reports, tmp_path: Path):
    counts = {"healthy": 5, "missing": 3, "crash": 2, "h200": 2}
    names = _fleet(reports, tmp_path, counts)
    # as a CI job gives them: relative to where it runs
    files = sorted(
        str(p.relative_to(tmp_path)) for p in (tmp_path / "artifacts").glob("*/vkdoctor.json")
    )
    proc = run_vkdoctor(["summary", *files], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    text = proc.stdout
    assert text.startswith("vkdoctor summary: 12 machines, 5 failed\n")
    rows = [line for line in text.splitlines() if line.split(" ")[0] in names]
    assert len(rows) == 12
    by_name = {r.split()[0]: r for r in rows}
    assert re.search(
        r"missing-0 +debian 12 +none \(no-adapter\) +fail +VKL002", by_name["missing-0"]
    )
    assert re.search(r"h200-1 +ubuntu 24\.04 +NVIDIA H200 +pass$", by_name["h200-1"])
    assert re.search(r"healthy-3 +debian 12 +llvmpipe.* +pass$", by_name["healthy-3"])
    groups = " ".join(text.split("Failures by code:\n")[1].split())
    assert (
        "VKL002 libLLVM-99.so.1 missing (needed by libvulkan_lvp.so): 3 of 12 machines; "
        "its consequences there: VKR001 (missing-0, missing-1, missing-2)" in groups
    )
    assert "VKT001 crash_icd.json" in groups and "2 of 12 machines" in groups
    assert "(crash-0, crash-1)" in groups
    assert text.endswith(
        "Why one fails where another passes:\n"
        "  vkdoctor diff artifacts/h200-0/vkdoctor.json artifacts/crash-0/vkdoctor.json\n"
    )
    assert all(len(line) <= 80 for line in text.splitlines()), text
    narrow = run_vkdoctor(["summary", *files], env={"COLUMNS": "60"}, cwd=tmp_path)
    assert all(len(line) <= 60 for line in narrow.stdout.splitlines()), narrow.stdout

    # the directory stands for the files below it; as data
    data = run_vkdoctor(["summary", str(tmp_path / "artifacts"), "--json", "-"])
    assert data.returncode == 1
    doc = json.loads(data.stdout)
    assert doc["total"] == 12 and doc["failed"] == 5
    assert sorted(m["label"] for m in doc["machines"]) == sorted(names)
    # one cause, one failure: where the only driver misses its LLVM, the probe's "no adapter"
    # is information pointing at VKL002; the crash is VKT001's alone
    assert [(g["code"], g["count"]) for g in doc["groups"]] == [("VKL002", 3), ("VKT001", 2)]
    md = run_vkdoctor(["summary", "--format", "github", *files], cwd=tmp_path)
    assert md.returncode == 1
    lines = md.stdout.splitlines()
    assert lines[0] == "## vkdoctor summary: 5 of 12 machines failed"
    table = [line for line in lines if line.startswith("| ")]
    assert table[0] == "| machine | host | adapter | verdict | failing codes |"
    assert len(table) == 13
    assert (
        "| missing-0 | debian 12 | none (no-adapter) | ❌ fail | <code>VKL002</code>" in md.stdout
    )
    assert "| h200-0 | ubuntu 24.04 | NVIDIA H200 | ✅ pass |  |" in md.stdout
    assert (
        "- <code>VKL002</code> libLLVM-99.so.1 missing (needed by libvulkan\\_lvp.so): "
        in md.stdout
    )
    assert "**3 of 12** machines" in md.stdout


def test_summary_all_pass_exits_0(reports, tmp_path: Path):
    _fleet(reports, tmp_path, {"healthy": 2, "h200": 1})
    proc = run_vkdoctor(["summary", str(tmp_path / "artifacts")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("vkdoctor summary: 3 machines, 0 failed\n")
    assert "Failures by code" not in proc.stdout
    md = run_vkdoctor(["summary", "--format", "github", str(tmp_path / "artifacts")])
    assert md.stdout.startswith("## vkdoctor summary: all 3 machines pass\n")


def _layer_home(
    root: Path, name: str, flag: str | None, *, built: bool, kind: str = "implicit"
) -> dict[str, str]:
    """XDG_DATA_HOME with a layer VK_LAYER_TEST_pass (implicit, or explicit: put in every
    program by VK_INSTANCE_LAYERS): tests/data/drop_layer.c built with gcc (with `flag`), or,
    with built=False, a manifest whose library does not exist."""
    home = root / name
    folder = home / "vulkan" / f"{kind}_layer.d"
    folder.mkdir(parents=True)
    lib = home / "libpass.so"
    if built:
        cmd = ["gcc", "-shared", "-fPIC", *([f"-D{flag}"] if flag else [])]
        subprocess.run([*cmd, "-o", str(lib), str(DATA / "drop_layer.c")], check=True, timeout=60)
    layer = {
        "name": "VK_LAYER_TEST_pass",
        "type": "GLOBAL",
        "library_path": str(lib),
        "api_version": "1.3.0",
        "implementation_version": "1",
        "description": "a test layer",
        "disable_environment": {"DISABLE_PASS": "1"},
    }
    (folder / "pass.json").write_text(json.dumps({"file_format_version": "1.1.0", "layer": layer}))
    if kind == "explicit":
        return {"XDG_DATA_HOME": str(home), "VK_INSTANCE_LAYERS": "VK_LAYER_TEST_pass"}
    return {"XDG_DATA_HOME": str(home)}


@pytest.fixture(scope="module")
def layer_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real `check --no-probe --json` reports: the layer loaded, its library missing, no such
    layer, a layer that crashes vkCreateInstance, the missing layer beside a crashing driver,
    and the crashing layer as an explicit one that VK_INSTANCE_LAYERS turns on."""
    root = tmp_path_factory.mktemp("layers")
    crash = root / "crash"
    crash.mkdir()
    subprocess.run(
        [
            *("gcc", "-shared", "-fPIC", "-O1", "-DCTOR_SEGV"),
            *("-o", str(crash / "libvulkan_crash.so"), str(DATA / "fake_icd.c")),
        ],
        check=True,
        timeout=60,
    )
    icd = {"library_path": str(crash / "libvulkan_crash.so"), "api_version": "1.3.0"}
    (crash / "crash_icd.json").write_text(json.dumps({"file_format_version": "1.0.0", "ICD": icd}))
    missing = _layer_home(root, "missing", None, built=False)
    setups = {
        "loaded": (_layer_home(root, "loaded", None, built=True), 0),
        "missing": (missing, 0),
        "none": ({"XDG_DATA_HOME": str(root / "none")}, 0),
        "crashing": (_layer_home(root, "crashing", "CRASH_CREATE_INSTANCE", built=True), 1),
        "missing-crash-driver": ({**missing, "VK_DRIVER_FILES": str(crash / "crash_icd.json")}, 1),
        "explicit-crashing": (
            _layer_home(root, "explicit", "CRASH_CREATE_INSTANCE", built=True, kind="explicit"),
            1,
        ),
    }
    out = {}
    for name, (env, want) in setups.items():
        proc, doc = run_json(["check", "--no-probe"], env=env)
        assert proc.returncode == want, proc.stdout + proc.stderr
        out[name] = root / f"{name}.json"
        out[name].write_text(json.dumps(doc))
    return out


def _layer_row(text: str) -> str:
    """The text diff's two sides of the layer's row, its wrapped lines joined."""
    lines = text.splitlines()
    at = lines.index("  implicit layer VK_LAYER_TEST_pass")
    below = lines[at + 1 :]
    rows = below[: next(i for i, line in enumerate(below) if not line.startswith("    "))]
    return " ".join(line.strip() for line in rows)


def test_diff_says_what_each_report_records_of_a_layer(layer_reports):
    """Loaded on one side; on the other absent from the list, or listed with a library that
    does not exist (so not loaded): never "unknown", never "loaded"."""
    doc = _doc(layer_reports["missing"])
    (layer,) = [
        x for x in doc["driver_search"]["implicit_layers"] if x["name"] == "VK_LAYER_TEST_pass"
    ]
    assert layer["library_state"] == "missing"
    loaded = _diff(layer_reports["loaded"], layer_reports["missing"], columns="80")
    assert loaded.returncode == 0, loaded.stderr
    a_lib = str(layer_reports["loaded"].parent / "loaded" / "libpass.so")
    b_lib = str(layer_reports["loaded"].parent / "missing" / "libpass.so")
    a_json = str(layer_reports["loaded"].parent / "loaded" / "vulkan/implicit_layer.d/pass.json")
    b_json = str(layer_reports["loaded"].parent / "missing" / "vulkan/implicit_layer.d/pass.json")
    # compared without spaces: a path longer than the line is broken where it reaches the edge
    assert _layer_row(loaded.stdout).replace(" ", "") == (
        f"A: loaded: {a_lib}, API 1.3.0, from {a_json}; off with DISABLE_PASS=1 "
        f"B: not loaded: its library {b_lib} does not exist, API 1.3.0, from {b_json}"
    ).replace(" ", ""), loaded.stdout
    absent = _diff(layer_reports["loaded"], layer_reports["none"], columns="80")
    assert _layer_row(absent.stdout).endswith("B: absent"), absent.stdout
    assert "unknown" not in absent.stdout
    data = json.loads(
        _diff(layer_reports["none"], layer_reports["missing"], "--format", "json").stdout
    )
    rows = [c for c in data["rest"] if c["what"] == "implicit layer VK_LAYER_TEST_pass"]
    assert rows == [
        {
            "what": "implicit layer VK_LAYER_TEST_pass",
            "a": "absent",
            "b": f"not loaded: its library {b_lib} does not exist, API 1.3.0, from {b_json}",
        }
    ]


def test_diff_blames_a_layer_only_where_it_is_loaded(layer_reports):
    """A layer whose library is missing explains no failure; the same layer loaded (and
    crashing) on the failing side does, and the other side's missing library is said."""
    proc = _diff(layer_reports["none"], layer_reports["missing-crash-driver"], columns="80")
    assert proc.returncode == 1
    why = proc.stdout.split("Why:\n")[1].split("\n\n")[0]
    assert "VK_LAYER_TEST_pass" not in why, why
    assert "crash_icd.json is on B only" in why
    data = json.loads(
        _diff(layer_reports["missing"], layer_reports["crashing"], "--format", "json").stdout
    )
    root = layer_reports["crashing"].parent
    crashing, missing = root / "crashing", root / "missing"
    manifest = "vulkan/implicit_layer.d/pass.json"
    assert data["causes"][0] == (
        f"implicit layer VK_LAYER_TEST_pass is loaded on B only ({crashing / 'libpass.so'}, "
        f"API 1.3.0, from {crashing / manifest}; off with DISABLE_PASS=1): every Vulkan program "
        f"there loads it; on A: not loaded: its library {missing / 'libpass.so'} does not "
        f"exist, API 1.3.0, from {missing / manifest}"
    ), data["causes"]
    text = _diff(layer_reports["missing"], layer_reports["crashing"], columns="80").stdout
    assert all(len(line) <= 80 for line in text.splitlines()), text


def test_diff_offers_an_explicit_layer_the_environment_turns_on(layer_reports):
    """VK_INSTANCE_LAYERS puts a layer that crashes into every program on B: the layer itself
    (its library, version and manifest, no disable variable: the loader reads none for an
    explicit layer) and the variable are offered, and A's environment without the variable
    says "unset", not "unknown"."""
    proc = _diff(layer_reports["none"], layer_reports["explicit-crashing"], columns="80")
    assert proc.returncode == 1
    data = json.loads(
        _diff(layer_reports["none"], layer_reports["explicit-crashing"], "--format", "json").stdout
    )
    home = layer_reports["none"].parent / "explicit"
    assert data["causes"][:2] == [
        f"explicit layer VK_LAYER_TEST_pass is loaded on B only ({home / 'libpass.so'}, API "
        f"1.3.0, from {home / 'vulkan/explicit_layer.d/pass.json'}): every Vulkan program "
        "there loads it; on A: absent",
        "VK_INSTANCE_LAYERS differs (A unset, B VK_LAYER_TEST_pass): it chooses the layers "
        "every program loads",
    ], data["causes"]
    assert "  VK_INSTANCE_LAYERS: A unset; B VK_LAYER_TEST_pass" in proc.stdout.splitlines()
    assert "unknown" not in proc.stdout
