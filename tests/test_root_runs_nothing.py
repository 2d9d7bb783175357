"""`check --root TREE` hands the tree's configuration to no program: an image whose
/etc/apt/apt.conf.d (or apt.conf) names programs and options for apt to run gets its package
fixes simulated all the same, and strace sees no program started that the tree named.

The attack is the one an image author can mount against a support engineer who checks the image
as root: apt reads Dir::Bin::dpkg, DPkg::Options, the Invoke hooks and Dir::Bin::methods from
its configuration and runs them, even for `apt-get -s`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import debroot
from conftest import REPO, clean_env

#: what an image's apt configuration can make apt run
HOSTILE = """\
Dir::Bin::dpkg "/bin/sh";
DPkg::Options {{ "-c"; "echo dpkg >> {marker}; exec /usr/bin/dpkg \\"$@\\""; "sh"; }};
DPkg::Pre-Invoke {{ "echo pre-invoke >> {marker}"; }};
DPkg::Post-Invoke {{ "echo post-invoke >> {marker}"; }};
DPkg::Pre-Install-Pkgs {{ "echo pre-install >> {marker}"; }};
APT::Update::Pre-Invoke {{ "echo update >> {marker}"; }};
APT::Update::Post-Invoke-Success {{ "echo update >> {marker}"; }};
Dir::Bin::methods "{tree}/evil-methods/";
Dir::Bin::solvers {{ "{tree}/evil-solvers/"; }};
Dir::Bin::planners {{ "{tree}/evil-solvers/"; }};
APT::Solver "evil";
APT::Architectures {{ "evilarch"; }};
"""


def _plant(root: Path, marker: Path) -> None:
    text = HOSTILE.format(marker=marker, tree=root)
    (root / "etc/apt/apt.conf.d/00evil").write_text(text)
    (root / "etc/apt/apt.conf").write_text(text)
    for sub in ("evil-methods", "evil-solvers"):
        (root / sub).mkdir()
        for name in ("http", "https", "file", "copy", "store", "gpgv", "evil", "apt", "dump"):
            script = root / sub / name
            script.write_text(f"#!/bin/sh\necho {sub}/{name} >> {marker}\n")
            script.chmod(0o755)


def _python(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "vkdoctor", *argv]


def _traced_check(root: Path, trace: Path) -> subprocess.CompletedProcess[str]:
    env = clean_env()
    env["PYTHONPATH"] = str(REPO)
    argv = ["check", "--root", str(root), "--no-probe", "--select", "VKP,VKL", "--json", "-"]
    return subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace), *_python(argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def _started(trace: Path) -> list[tuple[str, str]]:
    """(program, whole line) of every execve that succeeded."""
    out = []
    for line in trace.read_text(errors="replace").splitlines():
        m = re.search(r'execve\("([^"]*)", (.*) = 0$', line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def test_an_image_whose_apt_configuration_names_programs_runs_none_of_them(
    debian_root: Path, tmp_path: Path
) -> None:
    import json

    broke = debroot.chroot(debian_root, "dpkg", "--force-depends", "-r", "libllvm15")
    assert broke.returncode == 0, broke.stderr
    marker = tmp_path / "marker"
    _plant(debian_root, marker)
    trace = tmp_path / "trace"
    proc = _traced_check(debian_root, trace)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert not marker.exists(), marker.read_text()
    started = _started(trace)
    assert started, "strace saw nothing"
    for program, line in started:
        assert not program.startswith(str(debian_root)), line
        assert program not in ("/bin/sh", "/usr/bin/sh", "/bin/dash", "/usr/bin/dash"), line
    # the fix is still checked by apt-get -s over the tree's own data, and it still works
    doc = json.loads(proc.stdout)
    [skew] = [f for f in doc["findings"] if f["code"] == "VKP002" and f["severity"] == "fail"]
    ev = skew["evidence"]
    assert "--fix-broken" in ev["fix"]
    assert "Checked with apt-get -s: it installs libllvm15" in skew["message"], skew["message"]
    assert any(p.endswith("/apt-get") for p, _ in started)


def test_the_tree_architectures_are_taken_from_its_dpkg_database_as_data(tmp_path: Path) -> None:
    from vkdoctor.packages.aptroot import architectures, configuration

    dpkg = tmp_path / "var/lib/dpkg"
    dpkg.mkdir(parents=True)
    (dpkg / "status").write_text(
        "Package: libc6\nStatus: install ok installed\nArchitecture: arm64\n\n"
        "Package: dpkg\nStatus: install ok installed\nVersion: 1.21.22\nArchitecture: arm64\n"
    )
    assert architectures(tmp_path) == ("arm64", [])
    no_dpkg = tmp_path / "other"
    (no_dpkg / "var/lib/dpkg").mkdir(parents=True)
    (no_dpkg / "var/lib/dpkg/status").write_text(
        "Package: a\nArchitecture: all\n\nPackage: b\nArchitecture: riscv64\n\n"
        "Package: c\nArchitecture: riscv64\n\nPackage: d\nArchitecture: amd64\n"
    )
    assert architectures(no_dpkg) == ("riscv64", [])
    (dpkg / "arch").write_text('arm64\narmhf\ni386\n`evil" ;\n')
    assert architectures(tmp_path) == ("arm64", ["armhf", "i386"])
    private = tmp_path / "private"
    private.mkdir()
    conf = configuration(tmp_path, private)
    assert 'APT::Architecture "arm64";' in conf
    assert 'APT::Architectures { "arm64"; "armhf"; "i386"; };' in conf
    assert f'Dir::Etc::parts "{private}/parts/";' in conf and not any((private / "parts").iterdir())
    assert f'Dir::Etc::main "{private}/empty.conf";' in conf
    # nothing of the tree's own apt configuration is named: of its /etc/apt, only the data
    data = ("sourcelist", "sourceparts", "preferences", "preferencesparts")
    named = [line.split()[0] for line in conf.splitlines() if "etc/apt" in line]
    assert named and set(named) <= {f"Dir::Etc::{d}" for d in data}, named
    assert "apt.conf" not in conf.replace(f"{private}/", "")


def test_a_tree_that_does_not_say_its_architecture_gets_no_simulation(tmp_path: Path) -> None:
    from vkdoctor.model.context import Context
    from vkdoctor.packages.simulate import simulate

    lists = tmp_path / "var/lib/apt/lists"
    lists.mkdir(parents=True)
    (lists / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages").write_text("")
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    (tmp_path / "var/lib/dpkg/status").write_text("")
    ctx = Context(root=tmp_path, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    sim = simulate(ctx, "apt --fix-broken install", ["libvulkan1"])
    assert not sim.ran and "names no architecture" in sim.why


#: what a pacman tree's configuration can make pacman run (hooks, the download command)
PACMAN_HOSTILE = """\
[options]
XferCommand = /bin/sh -c "echo xfer >> {marker}"
HookDir = {tree}/evil-hooks/
Include = {tree}/etc/evil.conf
[extra]
Server = file:///nonexistent
Include = {tree}/etc/evil.conf
"""

PACMAN_HOOK = """\
[Trigger]
Operation = Install
Operation = Upgrade
Operation = Remove
Type = Package
Target = *
[Action]
When = PreTransaction
Exec = /bin/sh -c "echo hook >> {marker}"
"""


def _plant_pacman(root: Path, marker: Path) -> None:
    (root / "etc/pacman.d/hooks").mkdir(parents=True, exist_ok=True)
    (root / "etc/pacman.conf").write_text(PACMAN_HOSTILE.format(marker=marker, tree=root))
    (root / "etc/evil.conf").write_text(
        f'[options]\nXferCommand = /bin/sh -c "echo inc >> {marker}"\n'
    )
    for hooks in ("etc/pacman.d/hooks", "evil-hooks", "usr/share/libalpm/hooks"):
        (root / hooks).mkdir(parents=True, exist_ok=True)
        (root / hooks / "evil.hook").write_text(PACMAN_HOOK.format(marker=marker))


def test_a_pacman_tree_whose_configuration_names_hooks_and_commands_runs_none_of_them(
    tmp_path: Path,
) -> None:
    from pactrees import file_repo, zx3_tree

    root, zx3, swrast = zx3_tree(tmp_path)
    file_repo(root, zx3, swrast)
    marker = tmp_path / "marker"
    _plant_pacman(root, marker)
    trace = tmp_path / "trace"
    code = (
        "from pactrees import ctx_for, lvp_missing\n"
        "from vkdoctor.checks.packages import MissingSonameSkew\n"
        f"(f,) = MissingSonameSkew().findings(ctx_for(__import__('pathlib').Path({str(root)!r})),"
        " lvp_missing('libzx3.so.4', ()))\n"
        "print(f.message)\n"
    )
    env = clean_env()
    env["PYTHONPATH"] = f"{REPO}:{REPO / 'tests'}"
    proc = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not marker.exists(), marker.read_text()
    started = _started(trace)
    assert any(p.endswith("/pacman") for p, _ in started), started
    for program, line in started:
        assert not program.startswith(str(root)), line
        assert program not in ("/bin/sh", "/usr/bin/sh", "/bin/dash", "/usr/bin/dash"), line
    # pacman still checked the fix over the tree's own databases
    assert "Fix: sudo pacman -S zx3. Checked with pacman's own transaction check" in proc.stdout


def test_a_sync_database_whose_file_name_holds_configuration_is_not_a_repository(
    tmp_path: Path,
) -> None:
    from pactrees import ctx_for

    from vkdoctor.packages.pacman import PacmanDB

    sync = tmp_path / "var/lib/pacman/sync"
    sync.mkdir(parents=True)
    (sync / "extra.db").write_bytes(b"")
    (sync / "x]\nInclude = evil.conf\n[y.db").write_bytes(b"")
    (sync / "core repo.db").write_bytes(b"")
    assert PacmanDB(ctx_for(tmp_path), "/var/lib/pacman").sync_repos() == ["extra"]


def _plant_dnf(root: Path, marker: Path) -> None:
    plugins = root / "evil-plugins"
    plugins.mkdir()
    (plugins / "evil.py").write_text(
        f"open({str(marker)!r}, 'a').write('plugin\\n')\n"
        "import dnf\n\n\nclass Evil(dnf.Plugin):\n    name = 'evil'\n"
    )
    (plugins / "evil.conf").write_text("[main]\nenabled=1\n")
    (root / "etc/dnf/plugins").mkdir(parents=True, exist_ok=True)
    (root / "etc/dnf/plugins/evil.conf").write_text("[main]\nenabled=1\n")
    (root / "etc/dnf/dnf.conf").write_text(
        f"[main]\nplugins=1\npluginpath={plugins}\npluginconfpath={plugins}\n"
        f"reposdir={root}/evil-repos\n"
    )


def test_a_dnf_tree_whose_configuration_names_plugins_runs_none_of_them(tmp_path: Path) -> None:
    from test_packages_dnfsim import fedora, llvm23

    root = fedora(tmp_path, *llvm23(tmp_path))
    marker = tmp_path / "marker"
    _plant_dnf(root, marker)
    trace = tmp_path / "trace"
    code = (
        "from pathlib import Path\n"
        "from test_packages_dnfsim import skew\n"
        f"print(skew(Path({str(root)!r})).message)\n"
    )
    env = clean_env()
    env["PYTHONPATH"] = f"{REPO}:{REPO / 'tests'}"
    proc = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not marker.exists(), marker.read_text()
    started = _started(trace)
    assert any(p.endswith("/dnf") for p, _ in started), started
    for program, line in started:
        assert not program.startswith(str(root)), line
    assert "Checked with dnf --assumeno: it installs llvm-libs 23.1.0-1.fc43" in proc.stdout


def test_a_source_whose_scheme_walks_out_of_apts_methods_is_not_handed_to_apt(
    debian_root: Path, tmp_path: Path
) -> None:
    """apt starts the download method named by a source's URI scheme, `..` and all, and
    apt-get -s starts the methods of what it would fetch: a scheme that walks to a program in
    the tree ran it as root. The tree's sources are then not used and the fix is unverified."""
    import json

    broke = debroot.chroot(debian_root, "dpkg", "--force-depends", "-r", "libllvm15")
    assert broke.returncode == 0, broke.stderr
    marker = tmp_path / "marker"
    method = debian_root / "evil-method"
    method.write_text(f"#!/bin/sh\necho method >> {marker}\n")
    method.chmod(0o755)
    walk = "../" * 12 + str(method).lstrip("/")
    sources = debian_root / "etc/apt/sources.list"
    sources.write_text(sources.read_text().replace("http://", f"{walk}://"))
    # the attack, for real: apt-get -s with the tree's sources as they are runs the method
    conf = tmp_path / "apt.conf"
    conf.write_text(
        f'Dir "{debian_root}/";\nDir::Etc::main "/dev/null";\nDir::Etc::parts "{tmp_path}/";\n'
        f'Dir::Cache "{tmp_path}/";\nDir::Cache::pkgcache "";\nDebug::NoLocking "1";\n'
    )
    (tmp_path / "archives/partial").mkdir(parents=True)
    subprocess.run(
        ["apt-get", "-s", "-q", "--fix-broken", "install"],
        env={"PATH": "/usr/bin:/bin", "APT_CONFIG": str(conf)},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert marker.read_text() == "method\n"
    marker.unlink()

    trace = tmp_path / "trace"
    proc = _traced_check(debian_root, trace)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert not marker.exists()
    for program, line in _started(trace):
        assert not program.startswith(str(debian_root)), line
        assert "/apt/methods/" not in program, line
    doc = json.loads(proc.stdout)
    [skew] = [f for f in doc["findings"] if f["code"] == "VKP002" and f["severity"] == "fail"]
    assert "The fix is unverified: the tree's sources are not used: " in skew["message"]
    assert "which is no download method apt ships" in skew["message"], skew["message"]
    # and no other check takes the missing sources for "no repository carries it"
    assert not [f for f in doc["findings"] if f["code"] == "VKP004" and f["severity"] != "ok"]


def test_every_uri_apt_reads_from_the_sources_is_judged(tmp_path: Path) -> None:
    """What apt reads, in both formats and all their spellings (options glued to the URI, a
    `#` inside a deb822 field, a lower-case key), is judged, since apt itself lists it."""
    from vkdoctor.packages.aptroot import unsafe_source

    walk = "../../../bin/sh"
    good = (
        "deb [arch=amd64 signed-by=/k.gpg] http://deb.debian.org/debian bookworm main\n"
        "deb-src file:/srv/debian bookworm main\n"
    )
    forms = {
        "good": ("sources.list", good),
        "glued": ("sources.list.d/a.list", f"deb [arch=amd64]{walk}://x bookworm main\n"),
        "tab": ("sources.list.d/a.list", f"deb\t{walk}://x bookworm main\n"),
        "hash": (
            "sources.list.d/a.sources",
            f"Types: deb\nURIs: http://x/ #c {walk}://x\nSuites: s\nComponents: main\n",
        ),
        "case": (
            "sources.list.d/a.sources",
            f"Types: deb\nuris: {walk}://x\nsuites: s\ncomponents: main\n",
        ),
        "rsh": (
            "sources.list.d/a.sources",
            "Types: deb\nURIs: http://a/\n rsh://h/\nSuites: s\nComponents: main\n",
        ),
        "mirror": ("sources.list.d/a.list", "deb mirror+file:/srv/mirrors.txt bookworm main\n"),
    }
    for name, (where, text) in forms.items():
        root = tmp_path / name
        (root / "etc/apt/sources.list.d").mkdir(parents=True)
        (root / "var/lib/dpkg").mkdir(parents=True)
        (root / "var/lib/dpkg/status").write_text("Package: dpkg\nArchitecture: amd64\n")
        (root / "etc/apt/sources.list").write_text(good)
        (root / "etc/apt" / where).write_text(text)
        why = unsafe_source(root)
        if name == "good":
            assert why is None, why
        elif name in ("glued", "hash"):  # apt cannot read it: not handed to apt either
            assert why and why.startswith("apt cannot read them (E: Malformed entry"), why
        else:
            scheme = {"rsh": "rsh", "mirror": "mirror+file"}.get(name, walk)
            assert why and f"names {scheme!r}" in why, (name, why)


def test_a_tree_path_apt_cannot_quote_is_not_written_into_its_configuration(
    tmp_path: Path,
) -> None:
    from vkdoctor.packages.aptroot import configuration, unsafe_source

    root = tmp_path / 'img";\nDir::Bin::dpkg "/bin/sh'
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text("Package: dpkg\nArchitecture: amd64\n")
    private = tmp_path / "private"
    private.mkdir()
    conf = configuration(root, private)
    assert "/bin/sh" not in conf and str(root) not in conf
    assert "quote or a control character" in (unsafe_source(root) or "")


def test_a_tool_in_a_path_folder_another_user_can_write_is_not_run(tmp_path: Path) -> None:
    """vkdoctor runs dpkg, apt-get and grep as whoever runs it, often root. A folder on PATH
    that another user owns (nobody, here) holds their own `dpkg`, `apt-get` and `grep`: none of
    them runs; the system's do, and the check still reads the package database."""
    import os

    from tests.nobody import NOBODY, world_readable_dir

    with world_readable_dir() as top:
        theirs = top / "bin"
        theirs.mkdir()
        marker = top / "ran"
        for tool in ("dpkg", "apt-get", "apt-cache", "grep", "dpkg-query"):
            script = theirs / tool
            script.write_text(f"#!/bin/sh\necho {tool} >> {marker}\nexit 1\n")
            script.chmod(0o755)
            os.chown(script, NOBODY, NOBODY)
        os.chown(theirs, NOBODY, NOBODY)
        env = clean_env({"PATH": f"{theirs}:/usr/bin:/bin"})
        env["PYTHONPATH"] = str(REPO)
        proc = subprocess.run(
            _python(["check", "--no-probe", "--select", "VKP", "--json", "-"]),
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert not marker.exists(), marker.read_text()
    import json

    doc = json.loads(proc.stdout)
    assert any(f["code"].startswith("VKP") for f in doc["findings"]), proc.stderr[-2000:]
    assert "is not installed" not in proc.stdout
