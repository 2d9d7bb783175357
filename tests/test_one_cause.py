"""One cause, one failure, everywhere: on real broken machines (no driver at all, a truncated
libvulkan.so.1 copy on LD_LIBRARY_PATH, an explicit or implicit layer manifest that is not JSON,
an implicit layer that corrupts large copies) the probe's failure is reported as the cause's consequence,
not as a failure of its own, and the cause comes first, in text, JSON, JUnit, GitHub
annotations, the step summary and `vkdoctor summary`; no fix sends the user to the command
they just ran."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import clean_env, run_vkdoctor, validate_report, vulkaninfo

DATA = Path(__file__).parent / "data"
LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
LOADER = "/lib/x86_64-linux-gnu/libvulkan.so.1"


def _layer(root: Path, flag: str, *, home: bool = False) -> dict[str, str]:
    """The gcc-built layer of tests/data/drop_layer.c with `flag`, as an implicit layer where a
    user's own layers go (XDG_DATA_HOME, or ~/.local/share with `home`): its environment,
    manifest, name and disable."""
    lib = root / f"lib{flag.lower()}.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-D{flag}", "-o", str(lib), str(DATA / "drop_layer.c")],
        check=True,
    )
    share = root / ".local" / "share" if home else root / "share"
    folder = share / "vulkan" / "implicit_layer.d"
    folder.mkdir(parents=True)
    name = f"VK_LAYER_TEST_{flag.lower()}"
    layer = {
        "name": name,
        "type": "GLOBAL",
        "library_path": str(lib),
        "api_version": "1.3.0",
        "implementation_version": "1",
        "description": "a test layer that breaks things",
        "disable_environment": {f"DISABLE_{flag}": "1"},
    }
    manifest = folder / f"{flag.lower()}.json"
    manifest.write_text(json.dumps({"file_format_version": "1.1.0", "layer": layer}))
    return {
        **({"HOME": str(root)} if home else {"XDG_DATA_HOME": str(share)}),
        "manifest": str(manifest),
        "name": name,
        "off": f"DISABLE_{flag}",
    }


def _no_driver(root: Path) -> tuple[dict[str, str], str]:
    return {"VK_DRIVER_FILES": str(root / "nothing" / "icd.json")}, "VKD001"


def _truncated_loader(root: Path) -> tuple[dict[str, str], str]:
    folder = root / "lib"
    folder.mkdir()
    (folder / "libvulkan.so.1").write_bytes(Path(LOADER).read_bytes()[:4096])
    return {"LD_LIBRARY_PATH": str(folder)}, "VKH002"


def _broken_manifest(root: Path, kind: str) -> dict[str, str]:
    """A layer manifest that is not JSON in XDG_DATA_HOME/vulkan/KIND_layer.d: loader 1.3.239
    fails every vkCreateInstance on it (vulkaninfo too)."""
    folder = root / "vulkan" / f"{kind}_layer.d"
    folder.mkdir(parents=True)
    (folder / "broken.json").write_text('{"file_format_version": "1.1.0", "layer": {"name": ,}}')
    env = {"XDG_DATA_HOME": str(root)}
    assert vulkaninfo(env).returncode == 1
    return env


def _broken_explicit_manifest(root: Path) -> tuple[dict[str, str], str]:
    return _broken_manifest(root, "explicit"), "VKI004"


def _broken_implicit_manifest(root: Path) -> tuple[dict[str, str], str]:
    return _broken_manifest(root, "implicit"), "VKI002"


def _guilty_layer(root: Path) -> tuple[dict[str, str], str]:
    layer = _layer(root, "CORRUPT_LARGE_COPIES")
    return {"XDG_DATA_HOME": layer["XDG_DATA_HOME"]}, "VKR001"


MACHINES = {
    "no-driver": _no_driver,
    "truncated-loader": _truncated_loader,
    "broken-explicit-layer-manifest": _broken_explicit_manifest,
    "broken-implicit-layer-manifest": _broken_implicit_manifest,
    "guilty-layer": _guilty_layer,
}


class Broken:
    """One broken machine, checked once in every format."""

    def __init__(self, root: Path, env: dict[str, str], cause: str) -> None:
        self.root, self.env, self.cause = root, env, cause
        self.json_file = root / "report.json"
        summary = root / "step-summary.md"
        summary.write_text("")
        junit = root / "report.xml"
        args = ["check", "--cpu", "--json", str(self.json_file), "--junit", str(junit)]
        gh = run_vkdoctor(
            [*args, "--format", "github"], env={**env, "GITHUB_STEP_SUMMARY": str(summary)}
        )
        assert gh.returncode == 1, gh.stdout + gh.stderr
        self.github = gh.stdout
        self.step_summary = summary.read_text()
        self.junit = ET.parse(junit).getroot()
        self.doc: dict[str, Any] = json.loads(self.json_file.read_text())
        validate_report(self.doc)
        text = run_vkdoctor(["check", "--cpu"], env={**env, "COLUMNS": "80"})
        assert text.returncode == 1, text.stdout + text.stderr
        self.text = text.stdout


@pytest.fixture(scope="module", params=sorted(MACHINES))
def broken(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Broken:
    root = tmp_path_factory.mktemp(request.param)
    env, cause = MACHINES[request.param](root)
    return Broken(root, env, cause)


def _cause_and_probe(broken: Broken) -> tuple[dict[str, Any], dict[str, Any]]:
    findings = broken.doc["findings"]
    cause = next(f for f in findings if f["code"] == broken.cause and f["severity"] == "fail")
    (probe,) = [f for f in findings if f["code"] == "VKR001" and f is not cause]
    return cause, probe


def test_json_the_cause_first_the_probe_its_consequence(broken: Broken) -> None:
    findings = broken.doc["findings"]
    cause, probe = _cause_and_probe(broken)
    assert probe["severity"] == "info" and probe["evidence"]["explained_by"] == broken.cause
    failing = [f["code"] for f in findings if f["severity"] == "fail"]
    assert failing == [broken.cause], failing  # one cause, one failure
    # the cause, then what it explains, right after it
    at = findings.index(cause)
    after = findings[at + 1 : findings.index(probe) + 1]
    assert all(f["evidence"].get("explained_by") == broken.cause for f in after), after
    assert not any(f["evidence"].get("explained_by") == broken.cause for f in findings[:at])
    if broken.cause != "VKR001":
        # no driver is blamed, and no layer is re-run where the loader cannot reach one
        assert "(VKT001)" not in probe["message"] and "localised" not in probe["evidence"]
    # no fix sends the user to the command they just ran
    assert not any("vkdoctor check`" in (f["remedy"] or "") for f in findings)
    assert not any("run vkdoctor check" in (f["remedy"] or "") for f in findings)


def test_text_the_cause_first_with_its_consequences_under_it(broken: Broken) -> None:
    text = broken.text
    assert max(len(line) for line in text.splitlines()) <= 80, text
    failures = text[text.index("\nFailures") :]
    heads = re.findall(r"^  ✗ (VK[A-Z][0-9]{3}) ", failures, re.M)
    assert heads == [broken.cause], failures
    consequences = " ".join(failures[failures.index("consequences: ") :].split())
    assert "VKR001" in consequences.split("vkdoctor:")[0], failures
    if broken.doc["probe"]["status"] != "pass":
        section = text[text.index("\nProbe\n") :]
        probe_head = " ".join(section[: section.index("adapters seen")].split())
        assert probe_head.endswith(f"the consequence of {broken.cause}"), probe_head
        # the crash's own stderr is no news beside its cause: counted, shown with -v
        assert "      | " not in section[: section.index("\nFailures")], section
        if "last lines of stderr" in section:
            assert re.search(r"last lines of stderr: \d+ \(-v shows them\)", section), section
    verdict = " ".join(text[text.rindex("\nvkdoctor: ") :].split())
    assert verdict.startswith(f"vkdoctor: FAIL: {broken.cause} ")
    if broken.cause != "VKR001":
        assert f"({broken.cause}'s consequence)" in verdict, verdict
    assert "vkdoctor check" not in re.sub(r"`vkdoctor check --search-path[^`]*`", "", text)


def test_github_annotations_the_cause_first_and_no_second_failure(broken: Broken) -> None:
    annotations = [line for line in broken.github.splitlines() if line.startswith("::error")]
    assert len(annotations) == 1, annotations
    (only,) = annotations
    assert only.startswith(f"::error title={broken.cause}%3A")
    assert "Consequences (not failures of their own): " in only
    assert "VKR001" in only.split("Consequences (not failures of their own): ")[1]
    assert "title=vkdoctor probe" not in broken.github


def test_junit_one_failure_the_consequences_marked(broken: Broken) -> None:
    failures = broken.junit.findall(".//testcase/failure")
    assert [f.get("message", "").split(":")[0] for f in failures] == [broken.cause]
    assert "Consequences (not failures of their own): " in (failures[0].text or "")
    probe_case = next(
        c for c in broken.junit.iter("testcase") if c.get("name", "").startswith("VKR001 ")
    )
    out = probe_case.findtext("system-out") or ""
    assert f"VKR001 [consequence of {broken.cause}]" in out, out
    probe_cases = [
        c for c in broken.junit.iter("testcase") if c.get("classname", "").endswith("probe")
    ]
    skipped = [c.find("skipped") for c in probe_cases]
    said = [s.get("message", "") for s in skipped if s is not None]
    assert said and all(f"consequence of {broken.cause}" in m for m in said), said


def test_step_summary_the_cause_then_its_consequence(broken: Broken) -> None:
    rows = [line for line in broken.step_summary.splitlines() if line.startswith("| ")]
    marked = [r for r in rows if r.startswith(("| ❌", "| ↳"))]
    assert marked[0].startswith(f"| ❌ | <code>{broken.cause}</code>")
    assert all(r.startswith("| ↳") for r in marked[1:]), marked
    probe = next(r for r in marked if "<code>VKR001</code>" in r and r.startswith("| ↳"))
    assert f"the consequence of <code>{broken.cause}</code>" in probe
    if broken.doc["probe"]["status"] != "pass":
        (head,) = [
            line for line in broken.step_summary.splitlines() if line.startswith("### Probe")
        ]
        assert head.endswith(f"the consequence of <code>{broken.cause}</code>")


def test_summary_shows_what_each_cause_causes(broken: Broken) -> None:
    proc = run_vkdoctor(["summary", str(broken.json_file)], env={"COLUMNS": "200"})
    assert proc.returncode == 1, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("report "))
    caused = "the probe's failure" if broken.cause == "VKR001" else "[A-Z0-9 ]*VKR001[A-Z0-9 ]*"
    assert re.search(rf"fail +{broken.cause} \(causes {caused}\)$", row), row
    proc = run_vkdoctor(["summary", "--format", "json", str(broken.json_file)])
    (machine,) = json.loads(proc.stdout)["machines"]
    (failing,) = machine["failing"]
    assert failing["code"] == broken.cause and "VKR001" in failing["consequences"]


def test_a_layer_that_corrupts_only_large_copies_is_named_and_its_disable_proven(
    tmp_path: Path,
) -> None:
    """In ~/.local/share/vulkan/implicit_layer.d. Checked first with vulkaninfo and a plain wgpu
    script (small copies right, large ones wrong), then judged: the layer is THE cause, with its manifest and the disable the re-run
    proved; that disable, run, makes the next check green."""
    layer = _layer(tmp_path, "CORRUPT_LARGE_COPIES", home=True)
    env = {"HOME": layer["HOME"], "VK_DRIVER_FILES": LVP_MANIFEST}
    seen = vulkaninfo({**env, "VK_LOADER_DEBUG": "layer"})
    assert seen.returncode == 0 and layer["manifest"].encode() in seen.stdout + seen.stderr
    script = DATA / "copy_sizes.py"
    copies = subprocess.run(
        [sys.executable, str(script)],
        env=clean_env(env),
        capture_output=True,
        text=True,
        check=False,
    )
    assert copies.stdout.split() == ["1024", "ok", "4194304", "wrong"], copies
    proc = run_vkdoctor(["check", "--cpu", "--json", "-"], env=env)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    cause, probe = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert cause["severity"] == "fail" and layer["name"] in cause["title"]
    assert layer["manifest"] in cause["message"]
    assert cause["fix"]["commands"] == [f"export {layer['off']}=1"]
    assert probe["evidence"]["explained_by"] == "VKR001"
    # wrong numbers in the large cases only: the small ones passed with the layer on
    cases = {f"{c['rows']}x{c['d']}": c["ok"] for c in doc["probe"]["cases"]}
    assert cases["4x8"] and not cases["512x4096"]
    green = run_vkdoctor(["check", "--cpu", "--select", "VKR001"], env={**env, layer["off"]: "1"})
    assert green.returncode == 0, green.stdout


def test_a_layer_that_crashes_in_vkcreateinstance_is_the_cause_its_disable_proven(
    tmp_path: Path,
) -> None:
    """The layer kills every Vulkan program in vkCreateInstance (vulkaninfo too): the load test
    names it (VKT003) with its manifest and disable; the probe, run with that disable, passed,
    which is the proof and the consequence; the printed disable makes the next check green."""
    layer = _layer(tmp_path, "CRASH_CREATE_INSTANCE")
    env = {"XDG_DATA_HOME": layer["XDG_DATA_HOME"], "VK_DRIVER_FILES": LVP_MANIFEST}
    assert vulkaninfo(env).returncode == -11  # SIGSEGV
    proc = run_vkdoctor(["check", "--cpu", "--json", "-"], env=env)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    failing = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert [f["code"] for f in failing] == ["VKT003"], failing
    (cause,) = failing
    assert layer["name"] in cause["title"] and layer["manifest"] in cause["message"]
    assert "vkCreateInstance" in cause["message"]
    assert cause["fix"]["commands"][0] == f"export {layer['off']}=1"
    (probe,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert probe["severity"] == "info" and probe["evidence"]["explained_by"] == "VKT003"
    assert probe["title"] == f"Compute probe passed once {layer['name']} was turned off"
    assert doc["probe"]["status"] == "pass"
    green = run_vkdoctor(["check", "--cpu"], env={**env, layer["off"]: "1", "COLUMNS": "80"})
    assert green.returncode == 0, green.stdout


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real driver that corrupts large copies (lavapipe, passed through by
    tests/data/shim_icd.c), its device named "vkdoctor test shim"; its manifest."""
    root = tmp_path_factory.mktemp("shim")
    lib = root / "libshim.so"
    lvp = json.loads(Path(LVP_MANIFEST).read_text())["ICD"]["library_path"]
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            f'-DLVP="{lvp}"',
            '-DNAME="vkdoctor test shim"',
            "-o",
            str(lib),
            str(DATA / "shim_icd.c"),
            "-ldl",
        ],
        check=True,
    )
    manifest = root / "shim.json"
    icd = {"library_path": str(lib), "api_version": "1.3.230"}
    manifest.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": icd}))
    seen = vulkaninfo({"VK_DRIVER_FILES": str(manifest)})
    assert seen.returncode == 0 and b"vkdoctor test shim" in seen.stdout
    return str(manifest)


def test_wrong_numbers_name_what_was_tried_before_the_driver(shim: str) -> None:
    """Wrong numbers that no layer explains: the failure says the layers were turned off, that
    there is no other Vulkan adapter, which cases passed, and only then the driver, with its
    manifest; the JSON keeps that evidence."""
    proc = run_vkdoctor(["check", "--cpu", "--json", "-"], env={"VK_DRIVER_FILES": shim})
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    (vkr,) = [f for f in doc["findings"] if f["code"] == "VKR001"]
    assert vkr["severity"] == "fail" and vkr["title"] == "Compute probe computed wrong results"
    localised = vkr["evidence"]["localised"]
    assert localised["culprit"] is None and localised["other_adapter"] is None
    assert [t["status"] for t in localised["tried"]] == ["fail"]
    assert "4x8" in localised["cases_passed"] and "512x4096" in localised["cases_failed"]
    message = vkr["message"]
    order = [
        "turned off in turn, the probe still failed",
        "there is no other Vulkan adapter to compare with",
        "the smaller cases passed (4x8",
        "the driver of vkdoctor test shim (Mesa",
        f"{shim}, is what is left",
    ]
    at = [message.index(part) for part in order]
    assert at == sorted(at), message


def test_wrong_numbers_tried_on_another_adapter(shim: str) -> None:
    """The same probe on the other Vulkan adapter (lavapipe itself) passes: evidence that the
    driver of the failing one, not wgpu or the probe, computes wrong."""
    env = {"VK_DRIVER_FILES": f"{shim}:{LVP_MANIFEST}"}
    proc = run_vkdoctor(["check", "--adapter", "vkdoctor test shim", "--json", "-"], env=env)
    assert proc.returncode == 1
    (vkr,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "VKR001"]
    other = vkr["evidence"]["localised"]["other_adapter"]
    assert other["name"].startswith("llvmpipe") and other["status"] == "pass"
    assert f"on the other Vulkan adapter, {other['name']}, the probe passed" in vkr["message"]
    assert "with the layers ruled out, the driver of vkdoctor test shim" in vkr["message"]
