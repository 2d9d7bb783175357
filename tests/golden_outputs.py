"""Record what `vkdoctor` prints on this machine and on broken fixtures, to compare two trees.

    python tests/golden_outputs.py FIXTURES OUT

builds the fixtures under FIXTURES the first time (the same paths every run, so two trees see
the same files), then writes into OUT/cold and OUT/warm, for each case, the text (COLUMNS=80),
`--json -`, `--junit FILE` and `--format github` outputs of `check --no-probe` (plus `drivers`
and `overlay --format json` where the overlay is the point) with their exit status: OUT/cold
with vkdoctor's cache emptied first (FIXTURES/cache), OUT/warm with what those runs kept, so
that both the computed and the kept answers are compared. Only timings, free space and what
the speed machinery did are normalised. Compare two OUT directories with `diff -r`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import run_vkdoctor
from elfbuild import build_lib, copy, patchelf

SYSLIB = Path("/usr/lib/x86_64-linux-gnu")
LVP_MANIFEST = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
LVP = SYSLIB / "libvulkan_lvp.so"
LLVM = "libLLVM-15.so.1"

#: what differs between two runs of one tree: timings, free disk space and inodes (other
#: processes write there), the GitHub stop-commands token, and what the speed machinery did (a dpkg run's
#: answer taken from the fact cache, how the load test's child was started)
_TIMINGS = [
    (re.compile(r',\n\s*"kept": true'), ""),
    (re.compile(r'("first_child": )"[a-z]+"'), r'\1"X"'),
    (
        re.compile(
            r'("(?:seconds|elapsed|duration|wall|time|dlopen|instance)[a-z_]*": )[0-9.e+-]+'
        ),
        r"\1T",
    ),
    (re.compile(r'("(?:available|used|free)_(?:bytes|inodes)": )[0-9]+'), r"\1N"),
    (re.compile(r"[0-9.]+ GiB free( of [0-9.]+ GiB \([0-9]+% used\))?"), "N GiB free"),
    (re.compile(r"vkdoctor-[0-9a-f]{32}"), "vkdoctor-TOKEN"),
    (re.compile(r'(time=")[0-9.e+-]+(")'), r"\1T\2"),
    (re.compile(r"\b[0-9]+(?:\.[0-9]+)? ?(ms|s)\b"), r"T \1"),
]


def _normalise(text: str) -> str:
    for pattern, repl in _TIMINGS:
        text = pattern.sub(repl, text)
    return text


def _manifest(path: Path, library: Path) -> Path:
    doc = json.loads(LVP_MANIFEST.read_text())
    doc["ICD"]["library_path"] = str(library)
    path.write_text(json.dumps(doc))
    return path


def build(fixtures: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The cases: name -> (extra arguments, environment)."""
    done = fixtures / "done"
    if not done.exists():
        if fixtures.exists():
            shutil.rmtree(fixtures)
        fixtures.mkdir(parents=True)
        # lavapipe needing an LLVM that is not installed, and a private copy of one
        drv = copy(LVP, fixtures / "drv" / LVP.name)
        patchelf(drv, "--replace-needed", LLVM, "libLLVM.so.23.1")
        _manifest(fixtures / "drv" / LVP_MANIFEST.name, drv)
        llvm = copy(SYSLIB / LLVM, fixtures / "private-llvm" / "libLLVM.so.23.1")
        patchelf(llvm, "--set-soname", "libLLVM.so.23.1")
        # a libstdc++.so.6 that stops at GLIBCXX_3.4.29, first on LD_LIBRARY_PATH
        nodes = [f"GLIBCXX_3.4.{i}" for i in range(1, 30)] + ["GLIBCXX_3.4"]
        nodes += [f"CXXABI_1.3.{i}" for i in range(1, 14)] + ["CXXABI_1.3"]
        build_lib(
            fixtures / "shadow" / "libstdc++.so.6",
            soname="libstdc++.so.6",
            source="void shadow_stub(void) {}\n",
            version_script="".join(f"{n} {{ }};\n" for n in nodes),
        )
        import pkgtrees

        for name, tree in (
            ("arch", pkgtrees.arch_skew_tree),
            ("debian", pkgtrees.debian_skew_tree),
            ("fedora", pkgtrees.fedora_skew_tree),
        ):
            work = fixtures / "trees" / name
            work.mkdir(parents=True)
            root = tree(work)
            (fixtures / f"{name}.root").write_text(str(root))
        done.write_text("")
    missing = {"VK_DRIVER_FILES": str(fixtures / "drv" / LVP_MANIFEST.name)}
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "healthy": ([], {}),
        "missing-llvm": ([], missing),
        "missing-llvm-search-path": (
            ["--search-path", str(fixtures / "private-llvm")],
            missing,
        ),
        "shadow-libstdcxx": ([], {"LD_LIBRARY_PATH": str(fixtures / "shadow")}),
    }
    for name in ("arch", "debian", "fedora"):
        root = (fixtures / f"{name}.root").read_text()
        cases[f"root-{name}"] = (["--root", root], {})
    return cases


def _one(out: Path, cwd: Path, name: str, argv: Sequence[str], env: dict[str, str]) -> None:
    # the working directory is in the disk finding: the same for two trees
    proc = run_vkdoctor(argv, env={"COLUMNS": "80", **env}, cwd=cwd)
    (out / f"{name}.out").write_text(_normalise(proc.stdout))
    (out / f"{name}.err").write_text(_normalise(proc.stderr))
    (out / f"{name}.rc").write_text(f"{proc.returncode}\n")


def record(fixtures: Path, out: Path) -> None:
    cases = build(fixtures)
    cache = fixtures / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    for phase in ("cold", "warm"):
        _record(fixtures, out / phase, cases, {"XDG_CACHE_HOME": str(cache)})


def _record(
    fixtures: Path,
    out: Path,
    cases: dict[str, tuple[list[str], dict[str, str]]],
    common: dict[str, str],
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for case, (extra, own) in cases.items():
        env = {**common, **own}
        check = ["check", "--no-probe", *extra]
        junit = out / f"{case}.junit.xml"
        jobs += [
            (f"{case}.text", check, env),
            (f"{case}.json", [*check, "--json", "-"], env),
            (f"{case}.junit", [*check, "--junit", str(junit)], env),
            (f"{case}.github", [*check, "--format", "github"], env),
        ]
        jobs += [
            (f"{case}.drivers", ["drivers", *extra], env),
            (f"{case}.drivers-json", ["drivers", "--format", "json", *extra], env),
        ]
        if case != "healthy" and "--root" not in extra:
            jobs.append((f"{case}.overlay", ["overlay", "--format", "json", *extra], env))
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda j: _one(out, fixtures, *j), jobs))
    for junit in out.glob("*.junit.xml"):
        junit.write_text(_normalise(junit.read_text()))


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python tests/golden_outputs.py FIXTURES OUT", file=sys.stderr)
        return 2
    record(Path(argv[1]).resolve(), Path(argv[2]).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
