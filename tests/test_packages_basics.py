"""Version order against the real tools, tree detection, tool failures, and process counts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pkgtools import (
    build_deb,
    build_lib,
    build_pkg,
    dpkg_install,
    dpkg_root,
    pacman_install,
    pacman_root,
)

from vkdoctor.checks.packages import (
    ManagerConsistency,
    MissingSonameSkew,
    MissingVersionOwner,
    PackageDatabases,
    SiblingSkew,
    UnownedOrForeign,
)
from vkdoctor.model import Severity
from vkdoctor.model.context import Context
from vkdoctor.packages import inventory
from vkdoctor.packages.facts import MissingSoname, MissingVersion, StackFacts, StackFile
from vkdoctor.packages.paths import spellings, usrmerge_alias
from vkdoctor.packages.proc import run_tool
from vkdoctor.packages.versions import dpkg_compare, pacman_compare, rpm_compare, rpmvercmp

PAIRS = [
    ("1:26.2.3-1", "26.2.4-1"),
    ("22.1.8-1", "23.1.3-1"),
    ("1.0", "1.0"),
    ("1.0~rc1", "1.0"),
    ("1.0a", "1.0"),
    ("1.0", "1.0a"),
    ("1.0.a", "1.0a"),
    ("1.0.0", "1.0"),
    ("1.0-1", "1.0-2"),
    ("1..0", "1.0"),
    ("1:1.0", "2.0"),
    ("0:1.0", "1.0"),
    ("2.0", "10.0"),
    ("1.001", "1.1"),
    ("15.0.6-4+b1", "15.0.6-4"),
    ("1:15.0.6-4+b1", "1:15"),
    ("1.0rc1", "1.0"),
    ("1.0~", "1.0"),
    ("1.0-1.fc43", "1.0-1.fc42"),
    ("22.3.6-1+deb12u2", "22.3.6-1+deb12u1"),
    ("2.34", "2.34.0"),
    ("1.2.3.4", "1.2.3"),
    ("26.2.3-1~kisak1~j", "26.2.3-1"),
    ("3.4.30", "3.4.4"),
    ("1.0+git20260101", "1.0"),
]
ENV = {"LC_ALL": "C", "PATH": "/usr/bin:/bin"}


def _dpkg(a: str, b: str) -> int:
    for op, val in (("lt", -1), ("eq", 0), ("gt", 1)):
        if (
            subprocess.run(
                ["dpkg", "--compare-versions", a, op, b], env=ENV, check=False
            ).returncode
            == 0
        ):
            return val
    raise AssertionError((a, b))


def test_version_order_matches_dpkg_vercmp_and_rpm():
    lua = " ".join(f'print(rpm.vercmp("{a}","{b}")) print(",")' for a, b in PAIRS)
    out = subprocess.run(
        ["rpm", "--eval", "%{lua: " + lua + "}"],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    ).stdout
    rpm_real = [int(x) for x in out.replace("\n", "").split(",") if x.strip()]
    assert len(rpm_real) == len(PAIRS)
    for (a, b), rpm in zip(PAIRS, rpm_real, strict=True):
        vercmp = int(
            subprocess.run(
                ["vercmp", a, b], capture_output=True, text=True, env=ENV, check=True
            ).stdout
        )
        assert pacman_compare(a, b) == (vercmp > 0) - (vercmp < 0), (a, b)
        assert dpkg_compare(a, b) == _dpkg(a, b), (a, b)
        if ":" not in a + b and ("-" in a) == ("-" in b):
            assert rpmvercmp(a, b) == rpm, (a, b)
    # rpm EVR: epoch first; a missing release is not compared (as in dependency ranges)
    assert rpm_compare("1:1.0-1", "2.0-1") == 1
    assert rpm_compare("1.0", "1.0-5") == 0
    assert rpm_compare("1.0-1.fc43", "1.0-1.fc42") == 1


def test_usrmerge_aliases_need_the_merge_in_the_tree(tmp_path: Path):
    assert (
        usrmerge_alias("/lib/x86_64-linux-gnu/libc.so.6") == "/usr/lib/x86_64-linux-gnu/libc.so.6"
    )
    assert usrmerge_alias("/usr/lib64/libLLVM.so") == "/lib64/libLLVM.so"
    assert usrmerge_alias("/usr/share/x") is None
    ctx = Context(root=tmp_path)
    assert spellings(ctx, "/lib/x/libc.so.6") == ("/lib/x/libc.so.6",)
    (tmp_path / "usr/lib/x").mkdir(parents=True)
    (tmp_path / "lib").symlink_to("usr/lib")
    (tmp_path / "usr/lib/x/libc.so.6").write_bytes(b"")
    (tmp_path / "usr/lib/x/libfoo.so.1").symlink_to("/usr/lib/x/libc.so.6")
    ctx = Context(root=tmp_path)  # a Context's answers are one run's: the tree changed
    assert spellings(ctx, "/lib/x/libfoo.so.1") == (
        "/lib/x/libfoo.so.1",
        "/usr/lib/x/libfoo.so.1",
        "/usr/lib/x/libc.so.6",
        "/lib/x/libc.so.6",
    )


def test_tree_without_any_database_says_so_and_the_rules_stay_quiet(tmp_path: Path):
    (tmp_path / "var/lib/rpm").mkdir(parents=True)  # Debian's rpm tool leaves this empty dir
    ctx = Context(root=tmp_path, env=ENV)
    (f,) = PackageDatabases().run(ctx)
    assert f.severity is Severity.INFO and f.title == "No package database"
    assert "no rpm database in /usr/lib/sysimage/rpm or /var/lib/rpm" in f.evidence["absent"]["rpm"]
    facts = StackFacts(
        missing_sonames=(
            MissingSoname(consumer="/usr/lib/libvulkan_lvp.so", soname="libLLVM.so.23.1"),
        ),
        files=(StackFile(path="/usr/local/lib/libvulkan_x.so", role="driver"),),
    )
    assert list(MissingSonameSkew().findings(ctx, facts)) == []
    assert list(UnownedOrForeign().findings(ctx, facts)) == []
    assert list(SiblingSkew().run(ctx)) == [] and list(ManagerConsistency().run(ctx)) == []


def test_rpm_database_without_the_rpm_tool(tmp_path: Path):
    db = tmp_path / "usr/lib/sysimage/rpm"
    db.mkdir(parents=True)
    (db / "rpmdb.sqlite").write_bytes(b"SQLite format 3\x00")
    inv = inventory(Context(root=tmp_path, env={"PATH": str(tmp_path / "nobin")}))
    assert inv.databases == ()
    assert (
        inv.absent["rpm"]
        == "an rpm database is in /usr/lib/sysimage/rpm, but the rpm tool is not installed here"
    )


def test_tool_runs_are_bounded_and_say_what_went_wrong():
    slow = run_tool(["sleep", "5"], env=ENV, timeout=0.2)
    assert slow.returncode is None and slow.problem == "timed out after 0.2s"
    missing = run_tool(["no-such-tool-vkdoctor"], env=ENV, timeout=1)
    assert missing.problem == "no-such-tool-vkdoctor is not installed"
    locale = run_tool(["sh", "-c", "echo $LC_ALL"], env=ENV, timeout=5)
    assert locale.stdout.strip() == "C"


def test_ownership_questions_cost_no_process_for_dpkg_and_pacman(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    lib = build_lib(tmp_path / "s" / "libfoo.so.1", "libfoo.so.1")
    droot = dpkg_root(tmp_path / "d")
    dpkg_install(
        droot,
        build_deb(tmp_path, "libfoo1", "1.0-1", {"/usr/lib/x86_64-linux-gnu/libfoo.so.1": lib}),
    )
    proot = pacman_root(tmp_path / "p")
    pacman_install(proot, build_pkg(tmp_path, "foo", "1.0-1", {"/usr/lib/libfoo.so.1": lib}))
    calls: list[object] = []
    real = subprocess.run

    def counting(*a: object, **k: object) -> object:
        calls.append(a)
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess, "run", counting)
    paths = [f"/usr/lib/x86_64-linux-gnu/lib{i}.so" for i in range(200)]
    for root, path in (
        (droot, "/usr/lib/x86_64-linux-gnu/libfoo.so.1"),
        (proot, "/usr/lib/libfoo.so.1"),
    ):
        (db,) = inventory(Context(root=root, env=ENV)).databases
        owners = db.owners([*paths, path])
        assert [p.name for p in owners[path]] in (["libfoo1"], ["foo"])
        assert len(owners) == 1
    assert calls == []


def test_missing_version_in_an_application_bundle_without_any_package(tmp_path: Path):
    ctx = Context(root=tmp_path, env=ENV)
    facts = StackFacts(
        missing_versions=(
            MissingVersion(
                consumer="/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1",
                soname="libstdc++.so.6",
                version="GLIBCXX_3.4.30",
                provider="/opt/App/usr/lib/libstdc++.so.6",
                provider_versions=("GLIBCXX_3.4.9", "GLIBCXX_3.4.29", "CXXABI_1.3.13"),
            ),
        )
    )
    (f,) = MissingVersionOwner().findings(ctx, facts)
    assert "offers only up to GLIBCXX_3.4.29" in f.message
    assert "(no package: bundled by an application or copied by hand)" in f.message
    # VKL003 is the failure, with how that copy comes to win; the packages add only this
    assert f.severity is Severity.INFO
    assert f.fix() and f.fix().startswith("Update the application that bundles the old copy")


def test_unreadable_databases_are_warnings_not_crashes(tmp_path: Path):
    (tmp_path / "var/lib/dpkg/status").mkdir(parents=True)  # a directory where a file belongs
    rpmdb = tmp_path / "var/lib/rpm"
    rpmdb.mkdir(parents=True)
    (rpmdb / "rpmdb.sqlite").write_bytes(b"this is not a database" * 100)
    ctx = Context(root=tmp_path, env=ENV)
    found = {
        f.evidence["manager"]: f for f in PackageDatabases().run(ctx) if "manager" in f.evidence
    }
    assert set(found) == {"dpkg", "rpm"}
    assert found["dpkg"].severity is Severity.WARN and "Is a directory" in found["dpkg"].message
    # a tree without sudo: its fix is run inside it, as root
    assert "rpm --root" in found["rpm"].message and found["rpm"].fix() == "rpm --rebuilddb"
    assert list(SiblingSkew().run(ctx)) == []


def test_this_hosts_real_dpkg_database():
    """The real Debian 12 database: Mesa's lavapipe and libc (recorded under /lib, merged /usr)."""
    ctx = Context(env=ENV)
    inv = inventory(ctx)
    assert [db.family for db in inv.databases] == ["dpkg"]
    (db,) = inv.databases
    owners = db.owners(
        ["/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so", "/usr/lib/x86_64-linux-gnu/libc.so.6"]
    )
    (mesa,) = owners["/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"]
    assert (mesa.name, mesa.source, mesa.arch) == ("mesa-vulkan-drivers", "mesa", "amd64")
    (libc,) = owners["/usr/lib/x86_64-linux-gnu/libc.so.6"]
    assert libc.name == "libc6" and libc.source == "glibc"
    real = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "mesa-vulkan-drivers"],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    ).stdout
    assert mesa.version == real


def test_dpkg_order_on_random_versions_matches_dpkg():
    import random

    rng = random.Random(20261130)
    alphabet = "0123456789.~+-:ab"

    def version() -> str:
        v = str(rng.randint(0, 30)) + "".join(
            rng.choice(alphabet[:-4] + "ab~+.") for _ in range(rng.randint(0, 6))
        )
        if rng.random() < 0.3:
            v = f"{rng.randint(0, 2)}:{v}"
        if rng.random() < 0.5:
            v += f"-{rng.randint(0, 9)}{rng.choice(['', '+b1', '~bpo1', 'ubuntu1', '.1'])}"
        return v

    pairs = [(version(), version()) for _ in range(40)]
    for a, b in pairs:
        assert dpkg_compare(a, b) == _dpkg(a, b), (a, b)


def test_a_container_mounted_nvidia_driver_is_expected_to_be_unowned():
    from vkdoctor.model import Severity
    from vkdoctor.packages.facts import StackFile
    from vkdoctor.packages.model import Inventory
    from vkdoctor.packages.skew import unowned_files

    target = "/usr/local/nvidia/lib64/libGLX_nvidia.so.0"
    files = [
        StackFile(path=target, role="driver", target=target),
        StackFile(
            path="/usr/local/nvidia/lib64/libnvidia-glcore.so.580.159.04",
            role="library",
            target=target,
        ),
        StackFile(
            path="/usr/local/lib/libhandmade.so.1", role="library", target="/usr/lib/libvulkan_x.so"
        ),
    ]
    found = {d.evidence["target"]: d for d in unowned_files(files, Inventory(databases=()), {}, {})}
    mounted, handmade = found[target], found["/usr/lib/libvulkan_x.so"]
    assert mounted.severity is Severity.INFO
    assert "mounts the host's driver" in mounted.message
    assert handmade.severity is Severity.WARN
    assert "installed by hand" in handmade.message


def test_a_stray_library_shared_by_drivers_is_one_finding_naming_them_all():
    from vkdoctor.packages.facts import StackFile
    from vkdoctor.packages.model import Inventory
    from vkdoctor.packages.skew import unowned_files

    lvp = "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
    radv = "/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so"
    files = [StackFile(path="/opt/z/libz.so.1", role="library", target=lvp, targets=(lvp, radv))]
    (d,) = unowned_files(files, Inventory(databases=()), {}, {})
    assert d.title == "lavapipe and RADV: files no package owns"
    assert d.message.startswith("lavapipe and RADV load files that no ")
    assert "/opt/z/libz.so.1 (/opt, a vendor installer)" in d.message


def test_unowned_files_from_ld_library_path_point_at_the_variable():
    from vkdoctor.model import Severity
    from vkdoctor.packages.facts import StackFile
    from vkdoctor.packages.model import Inventory
    from vkdoctor.packages.skew import unowned_files

    lvp = "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
    files = [
        StackFile(
            path="/tmp/stale/libz.so.1",
            role="library",
            target=lvp,
            targets=(lvp,),
            how="LD_LIBRARY_PATH",
        )
    ]
    (d,) = unowned_files(files, Inventory(databases=()), {}, {})
    assert d.severity is Severity.INFO
    assert d.title == "lavapipe: files no package owns, from LD_LIBRARY_PATH"
    assert d.remedy is not None and "take /tmp/stale off LD_LIBRARY_PATH" in d.remedy.text


def test_recorded_digests_are_found_by_any_spelling_of_the_path():
    import gzip

    from vkdoctor.packages.digests import md5sums_entry, mtree_entry

    sums = "0123456789abcdef0123456789abcdef  usr/lib/x86_64-linux-gnu/libvulkan_lvp.so\n"
    assert md5sums_entry(sums, ["/lib/x86_64-linux-gnu/libvulkan_lvp.so"]) is None
    assert (
        md5sums_entry(sums, ["/lib/x", "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"])
        == "0123456789abcdef0123456789abcdef"
    )
    tree = (
        "#mtree\n/set type=file uid=0 gid=0 mode=644\n"
        "./usr/lib/odd\\040name.so time=1.0 size=3 md5digest=aa sha256digest=BB\n"
        "./usr/lib/old.so time=1.0 size=3 md5digest=cc\n"
    )
    data = gzip.compress(tree.encode())
    assert mtree_entry(data, ["/usr/lib/odd name.so"]) == ("sha256", "bb")
    assert mtree_entry(data, ["/usr/lib/old.so"]) == ("md5", "cc")
    assert mtree_entry(b"not gzip", ["/usr/lib/old.so"]) is None


def test_a_driver_package_of_another_distributions_manager_is_removed_not_upgraded(tmp_path: Path):
    """An rpm installed on Debian: `dnf distro-sync` does not exist there, and no upgrade brings
    an rpm's libraries and a .deb's together."""
    from vkdoctor.checks.packages import _on_another_distribution
    from vkdoctor.packages.skew import Diagnosis

    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text("ID=debian\nVERSION_ID=12\n")
    skew = Diagnosis(
        severity=Severity.FAIL,
        title="lavapipe needs libLLVM.so.23.1: package skew",
        message="lavapipe (/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so, mesa-vulkan-drivers.x86_64 "
        "26.2.3-1.fc43) needs libLLVM.so.23.1, but libllvm22:amd64 1:22.1.8-1 provides only "
        "libLLVM.so.22.1: mesa was upgraded without LLVM, a partial upgrade. Fix: sudo dnf "
        "distro-sync.",
        evidence={"consumer_package": {"manager": "rpm", "name": "mesa-vulkan-drivers"}},
    )
    d = _on_another_distribution(Context(root=tmp_path, env=ENV), skew)
    assert d is not None
    assert "mesa-vulkan-drivers is an rpm package on a Debian system" in d.message
    assert d.message.endswith(
        "Fix: sudo rpm -e --nodeps mesa-vulkan-drivers, then sudo apt install mesa-vulkan-drivers."
    )
    assert "dnf" not in d.message
    # one sentence ("A, then B"): the remedy is its words, no command cut out of it
    assert d.remedy is not None and d.remedy.commands == ()
    assert d.remedy.shown() == (
        "sudo rpm -e --nodeps mesa-vulkan-drivers, then sudo apt install mesa-vulkan-drivers."
    )
    # on Fedora it is the native manager: nothing to change
    (tmp_path / "etc/os-release").write_text("ID=fedora\n")
    assert _on_another_distribution(Context(root=tmp_path, env=ENV), skew) is None


def test_which_finds_what_shutil_which_finds(tmp_path: Path) -> None:
    """vkdoctor.packages.proc.which without shutil: shutil.which over the PATH's trusted
    folders is the oracle, over PATHs of real, empty, relative, trailing-slash and missing
    entries, files that cannot run, folders."""
    import random
    import shutil

    from vkdoctor.packages.proc import DEFAULT_PATH, which
    from vkdoctor.trust import trusted_search_path

    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "tool"
    tool.write_text("")
    tool.chmod(0o755)
    (tmp_path / "dir" / "tool").mkdir(parents=True)
    (tmp_path / "noexec").write_text("")
    entries = ["/usr/bin", "/bin", "", f"{tmp_path}/bin", f"{tmp_path}/bin/", f"{tmp_path}/dir"]
    entries += ["/nonexistent", str(tmp_path), ".", "bin"]
    tools = ["ls", "tool", "noexec", "dpkg", "nope", str(tool), f"{tmp_path}/noexec", "bin/tool"]
    rng = random.Random(1)
    here = os.getcwd()
    try:
        for _ in range(1500):
            path = os.pathsep.join(rng.choice(entries) for _ in range(rng.randrange(0, 5)))
            name = rng.choice([*tools, "dir"])
            os.chdir(rng.choice(["/", str(tmp_path)]))
            # vkdoctor looks only in absolute folders nobody else can write (vkdoctor.trust)
            want = shutil.which(name, path=trusted_search_path(path or DEFAULT_PATH))
            assert which(name, {"PATH": path}) == want, (name, path)
    finally:
        os.chdir(here)


def test_an_unowned_file_in_a_system_directory_is_not_said_to_be_in_an_unmanaged_one() -> None:
    from vkdoctor.packages.skew import _where

    assert _where("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so").startswith("a system directory")
    assert _where("/srv/drivers/libvulkan_x.so") == "a directory no package manages"
    assert _where("/usr/local/lib/libvulkan_x.so").startswith("/usr/local")
