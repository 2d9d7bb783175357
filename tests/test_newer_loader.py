"""The loader that runs decides the layer rules. Every case runs twice, under the system's loader
1.3.239 and under Debian trixie's real 1.4.309 (tests/trixieloader.py: a user's copy on
LD_LIBRARY_PATH, the way an application loads it), and vkdoctor's verdict is compared with what
that loader really does: the implicit layer search variables of loaders 1.3.296 and later
(VK_IMPLICIT_LAYER_PATH, VK_ADD_IMPLICIT_LAYER_PATH), and the explicit layer manifest with a JSON
syntax error that 1.3.239 fails every vkCreateInstance on and newer loaders skip. Real layers built
with gcc: a pass-through one, and one that aborts inside vkCreateInstance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trixieloader
from conftest import REPO, clean_env, validate_report
from trixieloader import TrixieLoader

from vkdoctor.loader import debuglog, icd
from vkdoctor.loader.icd import driver_scan
from vkdoctor.loader.layers import explicit_layer_scan, implicit_layer_scan
from vkdoctor.model.context import Context

DATA = Path(__file__).parent / "data"
LVP_MANIFEST = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
LOADERS = ("1.3.239", "1.4.309")


@pytest.fixture(scope="module")
def trixie() -> TrixieLoader:
    return trixieloader.trixie_loader()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """vkprobe (vkCreateInstance through dlopen), a pass-through layer and a crashing one."""
    out = tmp_path_factory.mktemp("built")
    steps = {
        "vkprobe": ["gcc", "-o", str(out / "vkprobe"), str(DATA / "vkprobe.c"), "-ldl"],
        "pass": [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(out / "libpass.so"),
            str(DATA / "drop_layer.c"),
        ],
        "crash": [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(out / "libcrash.so"),
            str(DATA / "fake_layer.c"),
        ],
    }
    for argv in steps.values():
        subprocess.run(argv, check=True)
    return {"vkprobe": out / "vkprobe", "pass": out / "libpass.so", "crash": out / "libcrash.so"}


def _loader(version: str, trixie: TrixieLoader) -> TrixieLoader | None:
    return trixie if version == "1.4.309" else None


def write_layer(folder: Path, name: str, library: Path) -> Path:
    """An implicit layer manifest for `library`, turned off by DISABLE_<NAME>=1."""
    folder.mkdir(parents=True, exist_ok=True)
    layer = {
        "name": f"VK_LAYER_TEST_{name}",
        "type": "GLOBAL",
        "library_path": str(library),
        "api_version": "1.3.0",
        "implementation_version": "1",
        "description": name,
        "disable_environment": {f"DISABLE_{name.upper()}": "1"},
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"file_format_version": "1.1.0", "layer": layer}))
    return path


def base_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "LC_ALL": "C",
        "VK_DRIVER_FILES": LVP_MANIFEST,
    }


def predicted(loader: TrixieLoader | None, env: dict[str, str], cwd: Path) -> Context:
    """The Context vkdoctor builds for `env` as the application sees it (trixie's loader on
    LD_LIBRARY_PATH)."""
    return Context(env=loader.env(env) if loader else dict(env), cwd=cwd, machine="x86_64")


#: (case, variables with {a} and {b} for two folders of one layer each, which folders'
#:  layers each loader inserts, whether 1.4.309 keeps Mesa's device_select from the standard
#:  folders; 1.3.239 always does)
SEARCH_CASES = [
    ("add", {"VK_ADD_IMPLICIT_LAYER_PATH": "{a}"}, {"1.3.239": "", "1.4.309": "a"}, True),
    ("override", {"VK_IMPLICIT_LAYER_PATH": "{a}"}, {"1.3.239": "", "1.4.309": "a"}, False),
    (
        "override names a file",
        {"VK_IMPLICIT_LAYER_PATH": "{a}/a.json"},
        {"1.3.239": "", "1.4.309": "a"},
        False,
    ),
    (
        "override beats add",
        {"VK_IMPLICIT_LAYER_PATH": "{a}", "VK_ADD_IMPLICIT_LAYER_PATH": "{b}"},
        {"1.3.239": "", "1.4.309": "a"},
        False,
    ),
    (
        "add: two folders, empty elements, a duplicate",
        {"VK_ADD_IMPLICIT_LAYER_PATH": ":{b}::{a}:{b}"},
        {"1.3.239": "", "1.4.309": "ab"},
        True,
    ),
    ("the explicit variables do not reach implicit layers", {"VK_ADD_LAYER_PATH": "{a}"}, {}, True),
]


@pytest.mark.parametrize("version", LOADERS)
@pytest.mark.parametrize(
    ("variables", "inserted", "device_select"),
    [c[1:] for c in SEARCH_CASES],
    ids=[c[0] for c in SEARCH_CASES],
)
def test_the_implicit_layer_search_follows_the_loader(
    trixie, built, tmp_path, version, variables, inserted, device_select
):
    """The search list (in order), the layers inserted into the instance and where each came
    from, as the real loader's VK_LOADER_DEBUG log shows them."""
    loader = _loader(version, trixie)
    folders = {"a": tmp_path / "a", "b": tmp_path / "b"}
    for key, folder in folders.items():
        write_layer(folder, key, built["pass"])
    env = {
        **base_env(tmp_path),
        **{k: v.format(**{n: str(f) for n, f in folders.items()}) for k, v in variables.items()},
    }
    real = trixieloader.run(
        loader, [str(built["vkprobe"])], {**env, "VK_LOADER_DEBUG": "layer"}, timeout=60
    )
    assert real.returncode == 0, real.stdout + real.stderr
    log = debuglog.parse(real.stderr).layers
    scan = implicit_layer_scan(predicted(loader, env, tmp_path))
    assert scan.loader.text == version
    assert [e.path for e in scan.plan.entries] == log.locations, real.stderr
    expected = {f"VK_LAYER_TEST_{k}" for k in inserted.get(version, "")}
    if device_select or version == "1.3.239":
        expected.add("VK_LAYER_MESA_device_select")
    assert set(log.inserted) == expected, real.stderr
    assert {x.name for x in scan.active} == expected
    for layer in scan.active:
        if layer.name != "VK_LAYER_MESA_device_select":
            assert layer.origin in variables, layer
    if version == "1.3.239":
        ignored = dict(scan.plan.ignored)
        for var in variables:
            if "IMPLICIT" in var:
                assert "loader 1.3.239 does not read it" in ignored[var]


@pytest.mark.parametrize("version", LOADERS)
@pytest.mark.parametrize(("kind", "code"), [("explicit", "VKI004"), ("implicit", "VKI002")])
def test_a_layer_manifest_with_a_json_error_by_loader_version(
    trixie, built, tmp_path, version, kind, code
):
    """A layer manifest with a JSON syntax error (an explicit one nothing enables, or an
    implicit one): 1.3.239 fails every vkCreateInstance (vkdoctor fails, naming the file),
    1.4.309 skips it (vkdoctor passes; an implicit one is a warning, its layer being lost)."""
    loader = _loader(version, trixie)
    folder = tmp_path / "data" / "vulkan" / f"{kind}_layer.d"
    folder.mkdir(parents=True)
    broken = folder / "broken.json"
    broken.write_text('{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_broken", ')
    env = {**base_env(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    real = trixieloader.run(loader, [str(built["vkprobe"])], env, timeout=60)
    aborts = version == "1.3.239"
    assert ("vkCreateInstance -> -1" if aborts else "vkCreateInstance -> 0") in real.stdout
    scan = (explicit_layer_scan if kind == "explicit" else implicit_layer_scan)(
        predicted(loader, env, tmp_path)
    )
    assert scan.loader.json_error_aborts is aborts
    proc, doc = check(loader, ["--cpu"], env)
    failed = [f for f in doc["findings"] if f["severity"] == "fail"]
    if aborts:
        assert proc.returncode == 1 and [f["code"] for f in failed] == [code]
        assert str(broken) in failed[0]["title"]
    else:
        assert proc.returncode == 0 and not failed, [(f["code"], f["title"]) for f in failed]
        said = [f for f in doc["findings"] if f["code"] == code and str(broken) in f["title"]]
        assert [f["severity"] for f in said] == (["warn"] if kind == "implicit" else [])


def check(
    loader: TrixieLoader | None, args: list[str], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`vkdoctor check ARGS --json -` as a user runs it, under `loader`."""
    full = clean_env(env)
    full["PYTHONPATH"] = str(REPO)
    argv = [sys.executable, "-m", "vkdoctor", "check", *args, "--json", "-"]
    proc = trixieloader.run(loader, argv, full)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(
            f"not JSON (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        ) from exc
    validate_report(doc)
    return proc, doc


@pytest.mark.parametrize("version", LOADERS)
@pytest.mark.parametrize("variable", ["VK_ADD_IMPLICIT_LAYER_PATH", "VK_IMPLICIT_LAYER_PATH"])
def test_a_crashing_layer_from_the_newer_variables(trixie, built, tmp_path, version, variable):
    """A layer that aborts in vkCreateInstance, installed through `variable`. Under 1.4.309
    every Vulkan program dies (vulkaninfo, the oracle): vkdoctor names the layer, its manifest
    and the variable it came through as the one cause, with its disable, and the disable, run,
    makes vulkaninfo and the next check pass. Under 1.3.239 nothing reads the variable: both are
    green, and vkdoctor says the variable is ignored."""
    loader = _loader(version, trixie)
    manifest = write_layer(tmp_path / "layers", "crash", built["crash"])
    env = {**base_env(tmp_path), variable: str(manifest.parent)}
    oracle = trixieloader.run(loader, ["vulkaninfo", "--summary"], env, timeout=60)
    proc, doc = check(loader, ["--cpu"], env)
    listed = next(f for f in doc["findings"] if f["code"] == "VKI001")["evidence"]
    names = {x["name"]: x for x in listed["layers"]}
    if version == "1.3.239":
        assert oracle.returncode == 0, oracle.stderr
        assert proc.returncode == 0, [(f["code"], f["title"]) for f in doc["findings"]]
        assert "VK_LAYER_TEST_crash" not in names
        assert variable in listed["ignored_variables"]
        return
    assert oracle.returncode != 0 and "VK_LAYER_TEST_crash" not in oracle.stdout
    assert proc.returncode == 1
    assert names["VK_LAYER_TEST_crash"]["origin"] == variable
    failed = [f for f in doc["findings"] if f["severity"] == "fail"]
    assert [f["code"] for f in failed] == ["VKT003"], [(f["code"], f["title"]) for f in failed]
    (cause,) = failed
    assert "VK_LAYER_TEST_crash" in cause["title"] and str(manifest) in cause["message"]
    assert cause["fix"]["commands"] == ["export DISABLE_CRASH=1"]
    (probe,) = (f for f in doc["findings"] if f["code"] == "VKR001")
    assert probe["severity"] == "info" and probe["evidence"]["status"] == "pass"
    # the probe passed with the disable: the proof, shown as the crash's consequence
    assert probe["evidence"]["explained_by"] == "VKT003"
    assert probe["fix"] is None or "VKT003" in str(probe["fix"])
    # the printed disable, run: the real loader and the next check agree it works
    fixed = {**env, "DISABLE_CRASH": "1"}
    assert trixieloader.run(loader, ["vulkaninfo", "--summary"], fixed, timeout=60).returncode == 0
    proc, doc = check(loader, ["--cpu"], fixed)
    assert proc.returncode == 0, [(f["code"], f["title"]) for f in doc["findings"]]


def test_a_layer_from_the_newer_variable_that_breaks_the_probe_is_named(trixie, tmp_path):
    """A layer that drops vkCmdDispatch, added with VK_ADD_IMPLICIT_LAYER_PATH under 1.4.309:
    the probe's wrong numbers are localised to it (the probe re-run with it off passes), the
    failure names it with its disable, and that disable makes the next check green."""
    lib = tmp_path / "libdrop.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-DDROP_DISPATCH", "-o", str(lib), str(DATA / "drop_layer.c")],
        check=True,
    )
    manifest = write_layer(tmp_path / "layers", "drop", lib)
    env = {**base_env(tmp_path), "VK_ADD_IMPLICIT_LAYER_PATH": str(manifest.parent)}
    proc, doc = check(trixie, ["--cpu", "--select", "VKR001"], env)
    assert proc.returncode == 1
    cause = next(f for f in doc["findings"] if f["code"] == "VKR001" and f["severity"] == "fail")
    assert cause["evidence"]["localised"]["culprit"]["name"] == "VK_LAYER_TEST_drop"
    assert cause["evidence"]["localised"]["culprit"]["origin"] == "VK_ADD_IMPLICIT_LAYER_PATH"
    assert f"{manifest}, found through VK_ADD_IMPLICIT_LAYER_PATH" in cause["message"]
    assert cause["fix"]["commands"] == ["export DISABLE_DROP=1"]
    proc, doc = check(trixie, ["--cpu", "--select", "VKR001"], {**env, "DISABLE_DROP": "1"})
    assert proc.returncode == 0


@pytest.mark.parametrize("version", LOADERS)
@pytest.mark.parametrize("innermost", ["[]", "[1]"])
@pytest.mark.parametrize("levels", [1000, 1001])
def test_nesting_past_the_newer_loaders_limit_is_invalid_json(
    trixie, built, tmp_path, version, innermost, levels
):
    """An implicit layer manifest whose unread extra field nests the file `levels` deep (an
    empty innermost array is a level too): 1.3.239 reads it and inserts the layer; 1.4.309's
    cJSON refuses more than 1000 levels, calls the file invalid JSON and skips the layer."""
    loader = _loader(version, trixie)
    data = tmp_path / "data"
    manifest = write_layer(data / "vulkan/implicit_layer.d", "deep", built["pass"])
    arrays = levels - 2  # the top object and the layer object are two levels
    nested = "[" * (arrays - 1) + innermost + "]" * (arrays - 1)
    text = manifest.read_text()
    manifest.write_text(text[:-2] + f', "extra": {nested}}}}}')
    env = {**base_env(tmp_path), "XDG_DATA_HOME": str(data)}
    real = trixieloader.run(
        loader, [str(built["vkprobe"])], {**env, "VK_LOADER_DEBUG": "layer,error"}, timeout=60
    )
    assert "vkCreateInstance -> 0" in real.stdout, real.stdout + real.stderr
    refused = version == "1.4.309" and levels > 1000
    assert ("VK_LAYER_TEST_deep" not in debuglog.parse(real.stderr).layers.inserted) is refused
    assert (f"Invalid JSON file {manifest}" in real.stderr) is refused, real.stderr
    scan = implicit_layer_scan(predicted(loader, env, tmp_path))
    assert ("VK_LAYER_TEST_deep" not in {x.name for x in scan.active}) is refused
    (deep,) = [f for f in scan.files if f.manifest.endswith("deep.json")]
    assert (deep.outcome == "json-error") is refused, deep


@pytest.mark.parametrize("version", LOADERS)
def test_of_two_implicit_layers_with_one_name_the_loader_version_picks(
    trixie, built, tmp_path, version
):
    """Two manifests for VK_LAYER_TEST_dup, one in XDG_CONFIG_HOME (found first) and one in
    XDG_DATA_HOME, each with its own copy of the library: 1.3.239 inserts the one found last,
    1.4.309 (from 1.3.247) the one found first; vkdoctor's active layer is the same copy."""
    loader = _loader(version, trixie)
    copies = {}
    for where in ("first", "last"):
        lib = tmp_path / f"lib{where}.so"
        lib.write_bytes(built["pass"].read_bytes())
        copies[where] = str(lib)
    folders = {
        "first": tmp_path / "cfg/vulkan/implicit_layer.d",
        "last": tmp_path / "data/vulkan/implicit_layer.d",
    }
    for where, folder in folders.items():
        manifest = write_layer(folder, "dup", Path(copies[where]))
        manifest.write_text(manifest.read_text().replace("DISABLE_DUP", f"DISABLE_DUP_{where}"))
    env = {
        **base_env(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "VK_LOADER_LAYERS_DISABLE": "VK_LAYER_MESA_device_select",
    }
    real = trixieloader.run(
        loader, [str(built["vkprobe"])], {**env, "VK_LOADER_DEBUG": "layer"}, timeout=60
    )
    winner = copies["first" if version == "1.4.309" else "last"]
    assert debuglog.parse(real.stderr).layers.inserted == {"VK_LAYER_TEST_dup": winner}, real.stderr
    scan = implicit_layer_scan(predicted(loader, env, tmp_path))
    assert {x.name: x.library for x in scan.active} == {"VK_LAYER_TEST_dup": winner}


def _triple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def _odd_layer(**fields: Any) -> dict[str, Any]:
    layer = {
        "name": "VK_LAYER_TEST_odd",
        "type": "GLOBAL",
        "library_path": "/nonexistent/libodd.so",
        "api_version": "1.3.0",
        "implementation_version": "1",
        "description": "odd",
        "disable_environment": {"DISABLE_ODD": "1"},
    }
    return {**layer, **fields}


#: (case, the "layer" value, implicit or explicit, the first loader that skips the layer instead
#:  of crashing (None: no loader crashes), the warning that loader prints when it skips it)
CRASH_OR_SKIP_CASES = [
    ("an array layer", [1], "implicit", "1.3.302", 'didn\'t find required layer value "name"'),
    ("an array layer, explicit", [1], "explicit", "1.3.302", None),
    (
        "a numeric disable value",
        _odd_layer(disable_environment={"DISABLE_ODD": 1}),
        "implicit",
        "1.3.251",
        "doesn't contain required child value in object disable_environment",
    ),
    (
        "a numeric disable value, explicit (never read)",
        _odd_layer(disable_environment={"DISABLE_ODD": 1}),
        "explicit",
        None,
        None,
    ),
]


@pytest.mark.parametrize("version", LOADERS)
@pytest.mark.parametrize(
    ("layer", "kind", "skips_from", "warning"),
    [c[1:] for c in CRASH_OR_SKIP_CASES],
    ids=[c[0] for c in CRASH_OR_SKIP_CASES],
)
def test_a_layer_manifest_that_crashes_older_loaders_is_skipped_by_newer_ones(
    trixie, built, tmp_path, version, layer, kind, skips_from, warning
):
    """Layer fields of the wrong type that 1.3.239 crashes on (every Vulkan program dies) and
    1.4.309 skips the layer for, with a warning; vkdoctor's prediction and `vkdoctor check`'s
    verdict follow the loader that runs (a failure naming the manifest, or a pass)."""
    loader = _loader(version, trixie)
    folder = tmp_path / "data" / "vulkan" / f"{kind}_layer.d"
    folder.mkdir(parents=True)
    manifest = folder / "odd.json"
    manifest.write_text(json.dumps({"file_format_version": "1.1.0", "layer": layer}))
    env = {**base_env(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    real = trixieloader.run(
        loader, [str(built["vkprobe"])], {**env, "VK_LOADER_DEBUG": "warn,layer"}, timeout=60
    )
    crashes = skips_from is not None and _triple(version) < _triple(skips_from)
    scan = (explicit_layer_scan if kind == "explicit" else implicit_layer_scan)(
        predicted(loader, env, tmp_path)
    )
    (odd,) = [f for f in scan.files if f.manifest == str(manifest)]
    if crashes:
        assert real.returncode < 0, real.stdout + real.stderr  # killed by a signal
        assert odd.outcome == "loader-crash", odd
    else:
        assert "vkCreateInstance -> 0" in real.stdout, real.stdout + real.stderr
        assert "VK_LAYER_TEST_odd" not in debuglog.parse(real.stderr).layers.inserted
        if warning is not None and kind == "implicit":
            assert f"{warning}" in real.stderr, real.stderr
        assert odd.outcome == "ok", odd
        assert not [x for x in odd.layers if x.active]
        if kind == "implicit":
            assert [x.invalid is not None for x in odd.layers] == [True]
    proc, doc = check(loader, ["--cpu", "--select", "VKI002,VKI004"], env)
    failed = [f for f in doc["findings"] if f["severity"] == "fail"]
    if crashes:
        assert proc.returncode == 1 and failed, doc["findings"]
        assert str(manifest) in failed[0]["title"] + failed[0]["message"]
    else:
        assert proc.returncode == 0 and not failed, [(f["code"], f["title"]) for f in failed]


@pytest.mark.parametrize("version", LOADERS)
def test_a_numeric_file_format_version_skips_the_driver_on_newer_loaders(
    trixie, built, tmp_path, version
):
    """lavapipe's manifest with `"file_format_version": 1` as the only driver: 1.3.239 prints
    the number and loads lavapipe; 1.4.309 (from 1.4.303) wants a string and skips the driver,
    so vkCreateInstance finds none. vkdoctor's prediction and verdict follow the loader."""
    loader = _loader(version, trixie)
    real_manifest = json.loads(Path(LVP_MANIFEST).read_text())
    manifest = tmp_path / "icd" / "lvp_number.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({**real_manifest, "file_format_version": 1}))
    env = {**base_env(tmp_path), "VK_DRIVER_FILES": str(manifest)}
    real = trixieloader.run(loader, [str(built["vkprobe"])], env, timeout=60)
    skips = version == "1.4.309"
    assert ("vkCreateInstance -> -9" if skips else "vkCreateInstance -> 0") in real.stdout, (
        real.stdout + real.stderr
    )
    scan = driver_scan(predicted(loader, env, tmp_path))
    assert [d.outcome for d in scan.drivers] == [icd.NO_FILE_FORMAT if skips else icd.LOADS], (
        scan.drivers
    )
    proc, doc = check(loader, ["--cpu"], env)
    failed = [f for f in doc["findings"] if f["severity"] == "fail"]
    if skips:
        assert proc.returncode == 1 and failed
        assert any(str(manifest) in f["message"] for f in failed), failed
    else:
        assert proc.returncode == 0, [(f["code"], f["title"]) for f in failed]


#: (a non-string ICD.library_path, what 1.3.239 reads (None: it crashes), what 1.4.309 reads)
LIBRARY_PATH_CASES = [
    ("12345", "234", "12345"),
    ("true", "ru", "true"),
    ("5", None, "5"),
]


@pytest.mark.parametrize("version", LOADERS)
@pytest.mark.parametrize(("value", "old", "new"), LIBRARY_PATH_CASES)
def test_a_non_string_library_path_is_read_whole_by_newer_loaders(
    trixie, built, tmp_path, version, value, old, new
):
    """A driver manifest whose library_path is a number or `true`: 1.3.239 prints it and drops
    its first and last character (a one-digit number underflows: every Vulkan program crashes);
    1.4.309 (from 1.3.251) uses the printed text whole. The library searched for, as the real
    loader's log prints it, is the one vkdoctor predicts."""
    loader = _loader(version, trixie)
    manifest = tmp_path / "icd" / "odd.json"
    manifest.parent.mkdir()
    manifest.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": '
        + value
        + ', "api_version": "1.3.0"}}'
    )
    env = {**base_env(tmp_path), "VK_DRIVER_FILES": str(manifest)}
    real = trixieloader.run(
        loader, [str(built["vkprobe"])], {**env, "VK_LOADER_DEBUG": "driver"}, timeout=60
    )
    scan = driver_scan(predicted(loader, env, tmp_path))
    (driver,) = scan.drivers
    read = old if version == "1.3.239" else new
    if read is None:
        assert real.returncode < 0, real.stdout + real.stderr  # killed by a signal
        assert driver.outcome == icd.CRASH, driver
        return
    assert "vkCreateInstance -> -9" in real.stdout, real.stdout + real.stderr
    printed = debuglog.parse(real.stderr).drivers.library_paths
    assert printed == {str(manifest): read}, real.stderr
    assert driver.library_path == read, driver
    assert driver.outcome == icd.LIBRARY_MISSING, driver


def _lvp_text(icd_key: str = "ICD") -> str:
    real = json.loads(Path(LVP_MANIFEST).read_text())
    return json.dumps({"file_format_version": "1.0.0", icd_key: real["ICD"]})


#: (case, the driver manifest's text, each loader's outcome, each loader's vkCreateInstance
#:  result; None: the loader crashes)
DRIVER_LOOKUP_CASES = [
    ("a top-level array", "[1]", {"1.3.239": None, "1.4.309": icd.NO_FILE_FORMAT}),
    (
        "an ICD array",
        '{"file_format_version": "1.0.0", "ICD": [1]}',
        {"1.3.239": None, "1.4.309": icd.NO_LIBRARY_PATH},
    ),
    (
        "an icd spelled in lower case",
        _lvp_text("icd"),
        {"1.3.239": icd.NO_ICD, "1.4.309": icd.LOADS},
    ),
]


@pytest.mark.parametrize("version", LOADERS)
@pytest.mark.parametrize(
    ("text", "outcomes"),
    [c[1:] for c in DRIVER_LOOKUP_CASES],
    ids=[c[0] for c in DRIVER_LOOKUP_CASES],
)
def test_driver_manifest_keys_are_looked_up_as_the_loader_does(
    trixie, built, tmp_path, version, text, outcomes
):
    """1.3.239 compares keys with strcmp (case matters) and crashes looking a key up in an
    array; 1.4.309 (from 1.4.303, cJSON updated) ignores case and finds no key in an array,
    skipping the driver. The real loader's result and vkdoctor's outcome for the manifest."""
    loader = _loader(version, trixie)
    manifest = tmp_path / "icd" / "odd.json"
    manifest.parent.mkdir()
    manifest.write_text(text)
    env = {**base_env(tmp_path), "VK_DRIVER_FILES": str(manifest)}
    real = trixieloader.run(loader, [str(built["vkprobe"])], env, timeout=60)
    (driver,) = driver_scan(predicted(loader, env, tmp_path)).drivers
    expected = outcomes[version]
    if expected is None:
        assert real.returncode < 0, real.stdout + real.stderr  # killed by a signal
        assert driver.outcome == icd.CRASH, driver
        return
    created = "0" if expected == icd.LOADS else "-9"
    assert f"vkCreateInstance -> {created}" in real.stdout, real.stdout + real.stderr
    assert driver.outcome == expected, driver


#: (case, the layer's odd field, what 1.3.239 reads (the layer then fails to load), the warning
#:  1.4.309 skips the layer with)
LAYER_STRING_CASES = [
    ("a one-digit name", {"name": 5}, "", 'didn\'t find required layer value "name"'),
    (
        "a numeric library_path",
        {"library_path": 12345},
        "VK_LAYER_TEST_odd",
        "is missing both library_path and component_layers",
    ),
]


@pytest.mark.parametrize("version", LOADERS)
@pytest.mark.parametrize(
    ("fields", "old_name", "warning"),
    [c[1:] for c in LAYER_STRING_CASES],
    ids=[c[0] for c in LAYER_STRING_CASES],
)
def test_layer_fields_that_are_not_strings_by_loader_version(
    trixie, built, tmp_path, version, fields, old_name, warning
):
    """An implicit layer whose name or library_path is a number: 1.3.239 prints it and strips
    its first and last character (a one-digit name becomes "", 12345 the library "234"), so it
    tries to load the layer and fails (the instance is still created); 1.4.309 (from 1.4.303) wants strings and skips the
    layer with a warning. vkdoctor's active layers are the real loader's."""
    loader = _loader(version, trixie)
    folder = tmp_path / "data" / "vulkan" / "implicit_layer.d"
    folder.mkdir(parents=True)
    manifest = folder / "odd.json"
    manifest.write_text(json.dumps({"file_format_version": "1.1.0", "layer": _odd_layer(**fields)}))
    env = {
        **base_env(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "VK_LOADER_LAYERS_DISABLE": "VK_LAYER_MESA_device_select",
    }
    real = trixieloader.run(
        loader, [str(built["vkprobe"])], {**env, "VK_LOADER_DEBUG": "warn,layer"}, timeout=60
    )
    log = debuglog.parse(real.stderr).layers
    scan = implicit_layer_scan(predicted(loader, env, tmp_path))
    (odd,) = [f for f in scan.files if f.manifest == str(manifest)]
    assert "vkCreateInstance -> 0" in real.stdout, real.stdout + real.stderr
    if version == "1.3.239":
        assert log.failed == [old_name], real.stderr
        assert [(x.name, x.library_state != "ok") for x in scan.active] == [(old_name, True)]
        if "library_path" in fields:
            assert [x.library_path for x in scan.active] == ["234"]
        return
    assert warning in real.stderr and not log.failed and not log.inserted, real.stderr
    assert not scan.active
    assert [x.invalid is not None and "not a string" in x.invalid for x in odd.layers] == [True]


@pytest.mark.parametrize("version", LOADERS)
def test_layer_manifest_keys_in_another_case_by_loader_version(trixie, built, tmp_path, version):
    """An implicit layer manifest whose keys are spelled in another case ("Layer",
    "Library_Path", "DISABLE_ENVIRONMENT"): 1.3.239 compares keys with strcmp and finds no
    layer; 1.4.309 (from 1.4.303) ignores case and inserts the layer. vkdoctor's active layers
    are the real loader's."""
    loader = _loader(version, trixie)
    folder = tmp_path / "data" / "vulkan" / "implicit_layer.d"
    manifest = write_layer(folder, "case", built["pass"])
    text = manifest.read_text()
    for key in ('"layer"', '"library_path"', '"disable_environment"'):
        assert key in text
    manifest.write_text(
        text.replace('"layer"', '"Layer"')
        .replace('"library_path"', '"Library_Path"')
        .replace('"disable_environment"', '"DISABLE_ENVIRONMENT"')
    )
    env = {
        **base_env(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "VK_LOADER_LAYERS_DISABLE": "VK_LAYER_MESA_device_select",
    }
    real = trixieloader.run(
        loader, [str(built["vkprobe"])], {**env, "VK_LOADER_DEBUG": "layer"}, timeout=60
    )
    assert "vkCreateInstance -> 0" in real.stdout, real.stdout + real.stderr
    expected = {"VK_LAYER_TEST_case": str(built["pass"])} if version == "1.4.309" else {}
    assert debuglog.parse(real.stderr).layers.inserted == expected, real.stderr
    scan = implicit_layer_scan(predicted(loader, env, tmp_path))
    assert {x.name: x.library for x in scan.active} == expected
