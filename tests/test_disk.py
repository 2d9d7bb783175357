"""Disk space (VKS001): fake numbers for the thresholds, and one real measurement through the CLI."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from conftest import run_json, run_vkdoctor

from vkdoctor.checks.disk import FreeSpace
from vkdoctor.machine.disk import Place, Usage, filesystems, places
from vkdoctor.model import Severity
from vkdoctor.model.context import Context, Options
from vkdoctor.model.units import format_size, parse_size
from vkdoctor.runner import run_checks

GiB = 1024**3


def test_parse_and_format_sizes():
    assert parse_size("5G") == 5 * GiB
    assert parse_size("500M") == 500 * 1024**2
    assert parse_size("1.5GiB") == int(1.5 * GiB)
    assert parse_size("10k") == 10240
    assert parse_size("4096") == 4096
    assert parse_size(" 2 TB ") == 2 * 1024**4
    for bad in ("", "abc", "-1G", "5X", "G"):
        with pytest.raises(ValueError, match="is not a size"):
            parse_size(bad)
    with pytest.raises(ValueError, match="more than any filesystem holds"):
        parse_size("99999999999999999999999P")
    assert parse_size("1024P") == 1 << 60
    assert format_size(512) == "512 B"
    assert format_size(int(1.5 * GiB)) == "1.5 GiB"


def test_places_follow_the_environment(tmp_path: Path):
    ctx = Context(
        cwd=tmp_path,
        env={
            "TMPDIR": "/var/tmp",
            "XDG_CACHE_HOME": "/srv/cache",
            "HOME": "/home/u",
            "CARGO_TARGET_DIR": "target",
        },
    )
    assert [(p.purpose, p.path) for p in places(ctx)] == [
        ("working directory", str(tmp_path)),
        ("temp directory", "/var/tmp"),
        ("user cache directory", "/srv/cache"),
        ("Mesa shader cache", "/srv/cache/mesa_shader_cache"),
        ("CARGO_TARGET_DIR", f"{tmp_path}/target"),
    ]
    ctx = Context(cwd=tmp_path, env={"HOME": "/home/u", "MESA_SHADER_CACHE_DIR": "/fast/mesa"})
    assert [(p.purpose, p.path) for p in places(ctx)][1:] == [
        ("temp directory", "/tmp"),
        ("user cache directory", "/home/u/.cache"),
        # Mesa 22.3 keeps its cache in mesa_shader_cache under the variable's directory
        ("Mesa shader cache", "/fast/mesa/mesa_shader_cache"),
    ]
    # a cache Mesa does not keep is no place it writes
    ctx = Context(cwd=tmp_path, env={"HOME": "/home/u", "MESA_SHADER_CACHE_DISABLE": "true"})
    assert "Mesa shader cache" not in [p.purpose for p in places(ctx)]


def test_each_filesystem_measured_once_at_the_nearest_existing_dir(tmp_path: Path):
    calls = []

    def fake(path: str) -> Usage:
        calls.append(path)
        return Usage(total=100 * GiB, used=90 * GiB, free=10 * GiB)

    found = [
        Place(purpose="working directory", path=str(tmp_path)),
        Place(purpose="CARGO_TARGET_DIR", path=f"{tmp_path}/not/yet/built"),
        Place(purpose="temp directory", path="/dev/shm"),
    ]
    fss = filesystems(found, fake)
    assert len(fss) == 2 and len(calls) == 2
    here, shm = fss
    assert here.purposes == ["working directory", "CARGO_TARGET_DIR"]
    assert [m for _, m in here.places] == [str(tmp_path), str(tmp_path)]
    assert shm.purposes == ["temp directory"] and shm.mount == "/dev/shm"


class Fake(FreeSpace):
    free = 0

    @staticmethod
    def usage_of(path: str) -> Usage:
        return Usage(total=200 * GiB, used=200 * GiB - Fake.free, free=Fake.free)


@pytest.mark.parametrize(
    ("free", "severity", "words"),
    [
        (100 * GiB, Severity.OK, "100.0 GiB free of 200.0 GiB (50% used)"),
        (3 * GiB, Severity.WARN, "below the warning threshold (5.0 GiB)"),
        (512 * 1024**2, Severity.FAIL, "below the fail threshold (1.0 GiB)"),
    ],
)
def test_thresholds_with_fake_numbers(tmp_path: Path, free, severity, words):
    Fake.free = free
    ctx = Context(
        cwd=tmp_path,
        env={"TMPDIR": str(tmp_path), "HOME": str(tmp_path), "CARGO_TARGET_DIR": f"{tmp_path}/t"},
        options=Options(disk_warn_bytes=5 * GiB, disk_fail_bytes=GiB),
    )
    (result,) = run_checks(ctx, [Fake])
    (finding,) = result.findings
    assert finding.severity is severity
    assert words in finding.message and str(tmp_path) in finding.message
    assert finding.evidence["free_bytes"] == free
    assert [p["purpose"] for p in finding.evidence["places"]] == [
        "working directory",
        "temp directory",
        "user cache directory",
        "Mesa shader cache",
        "CARGO_TARGET_DIR",
    ]
    if severity is not Severity.OK:
        assert f"cargo clean (CARGO_TARGET_DIR={tmp_path}/t)" in finding.fix()
        assert f"du -xh --max-depth=2 {finding.evidence['mount']}" in finding.fix()


def test_real_free_space_on_the_temp_dir_through_the_cli(tmp_path: Path):
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKS", "--disk-warn", "2P", "--disk-fail", "1P"],
        env={"TMPDIR": str(tmp_path), "CARGO_TARGET_DIR": str(tmp_path / "target")},
    )
    assert proc.returncode == 1
    by_mount = {f["evidence"]["mount"]: f for f in doc["findings"] if f["code"] == "VKS001"}
    real = psutil.disk_usage(str(tmp_path))
    (finding,) = [
        f
        for f in by_mount.values()
        if str(tmp_path) in [p["path"] for p in f["evidence"]["places"]]
    ]
    assert finding["severity"] == "fail"
    assert finding["evidence"]["fail_bytes"] == 1024**5
    assert finding["evidence"]["total_bytes"] == real.total
    assert abs(finding["evidence"]["free_bytes"] - real.free) < 256 * 1024**2
    cargo = [p for p in finding["evidence"]["places"] if p["purpose"] == "CARGO_TARGET_DIR"]
    assert cargo == [
        {"purpose": "CARGO_TARGET_DIR", "path": str(tmp_path / "target"), "measured": str(tmp_path)}
    ]
    assert "below the fail threshold (1024.0 TiB)" in finding["message"]


def test_a_filesystem_without_storage_is_not_called_full():
    """proc reports no blocks at all: a cache pointed there cannot be written, but no amount
    of cleaning up frees space in it."""
    proc, doc = run_json(
        ["check", "--no-probe", "--select", "VKS"], env={"XDG_CACHE_HOME": "/proc"}
    )
    assert proc.returncode == 0, proc.stderr
    (finding,) = [f for f in doc["findings"] if f["evidence"].get("mount") == "/proc"]
    assert finding["severity"] == "warn"
    assert finding["title"] == "/proc is not a filesystem with storage"
    assert "rm -rf" not in (finding["remedy"] or "")
    assert finding["evidence"]["total_bytes"] == 0


def test_bad_sizes_are_usage_errors():
    proc = run_vkdoctor(["check", "--no-probe", "--disk-warn", "lots"])
    assert proc.returncode == 2 and "'lots' is not a size" in proc.stderr
    proc = run_vkdoctor(["check", "--no-probe", "--disk-warn", "1G", "--disk-fail", "2G"])
    assert proc.returncode == 2 and "must not be larger than --disk-warn" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_file_where_the_cache_directory_goes_is_named_as_a_file(tmp_path: Path):
    """XDG_CACHE_HOME naming a file: no one can make directories in it, root included; VKS002
    says it is a file, not that this user lacks permission."""
    import os

    plain = tmp_path / "cache-file"
    plain.write_text("x")
    assert not os.access(plain, os.X_OK)
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKS"], env={"XDG_CACHE_HOME": str(plain)}
    )
    warned = [f for f in doc["findings"] if f["code"] == "VKS002" and f["severity"] == "warn"]
    assert warned and all(f["evidence"]["problem"] == "not-a-directory" for f in warned), warned
    assert all(f"{plain} is a file, not a directory." in f["message"] for f in warned)
    assert all("may not write" not in f["message"] for f in warned)


def test_a_filesystem_smaller_than_the_threshold_is_not_told_to_clear_files(tmp_path: Path):
    """An empty 200 MiB tmpfs as TMPDIR: below 1 GiB, but no cleanup can help; the fix is a
    larger filesystem or a lower threshold, and the lower threshold, given, passes it."""
    import subprocess

    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200M", "tmpfs", str(small)], check=True)
    try:

        def verdict(*extra: str) -> dict:
            _, doc = run_json(
                ["check", "--no-probe", "--select", "VKS001", *extra], env={"TMPDIR": str(small)}
            )
            (f,) = [f for f in doc["findings"] if f["evidence"].get("mount") == str(small)]
            return f

        failed = verdict()
        assert failed["severity"] == "fail" and "clear old files" not in failed["remedy"], failed
        assert "export TMPDIR=DIR" in failed["remedy"] and "(--disk-fail SIZE)" in failed["remedy"]
        warned = verdict("--disk-fail", "100M")
        assert warned["severity"] == "warn" and "(--disk-warn SIZE)" in warned["remedy"]
        assert verdict("--disk-fail", "100M", "--disk-warn", "150M")["severity"] == "ok"
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_a_filesystem_with_bytes_but_no_inodes_left_fails(tmp_path: Path):
    """A real tmpfs with 64 inodes as TMPDIR and CARGO_TARGET_DIR, filled with empty files: its
    bytes are nearly all free, yet no file can be made there; VKS001 fails naming the mount, the
    inodes free and in all, and a fix that, run, passes it again."""
    import os
    import subprocess

    small = tmp_path / "few-inodes"
    small.mkdir()
    opts = "size=100M,nr_inodes=64"
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(small)], check=True)
    try:
        target = small / "target"
        target.mkdir()
        made = 0
        with pytest.raises(OSError) as full:
            while True:
                (target / f"o{made}").touch()
                made += 1
        assert "No space left on device" in str(full.value) and made > 50
        st = os.statvfs(small)
        assert st.f_favail == 0 and st.f_bavail * st.f_frsize > 90 * 1024**2

        def verdict() -> dict:
            args = ["--select", "VKS001", "--disk-warn", "2M", "--disk-fail", "1M"]
            _, doc = run_json(
                ["check", "--no-probe", *args],
                env={"TMPDIR": str(small), "CARGO_TARGET_DIR": str(target)},
            )
            (f,) = [f for f in doc["findings"] if f["evidence"].get("mount") == str(small)]
            return f

        failed = verdict()
        assert failed["severity"] == "fail", failed
        assert failed["title"] == f"{small}: only 0 inodes free"
        assert f"The filesystem mounted at {small} (" in failed["message"]
        assert f"0 inodes free of {st.f_files} (100% used)" in failed["message"]
        assert "'No space left on device'" in failed["message"]
        assert failed["evidence"]["free_inodes"] == 0
        assert failed["evidence"]["total_inodes"] == st.f_files
        fix = failed["remedy"]
        assert f"cargo clean (CARGO_TARGET_DIR={target})" in fix
        assert f"du --inodes -x --max-depth=2 {small} | sort -n | tail" in fix
        subprocess.run(["rm", "-rf", str(target)], check=True)
        assert verdict()["severity"] == "ok"
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_a_filesystem_short_of_bytes_and_inodes_names_both(tmp_path: Path):
    """A real 4 MiB tmpfs with 64 inodes, filled with files until neither is left: one VKS001
    finding names both shortages, with the bytes' fix and where the files are."""
    import os
    import subprocess

    small = tmp_path / "full"
    small.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4M,nr_inodes=64", "tmpfs", str(small)], check=True
    )
    try:
        made = 0
        with pytest.raises(OSError, match="No space left on device"):
            while True:
                (small / f"f{made}").write_bytes(b"x" * (60 << 10))
                made += 1
        st = os.statvfs(small)
        assert st.f_favail < 10 and st.f_bavail * st.f_frsize < (1 << 20)
        _, doc = run_json(["check", "--no-probe", "--select", "VKS001"], env={"TMPDIR": str(small)})
        (f,) = [f for f in doc["findings"] if f["evidence"].get("mount") == str(small)]
        assert f["severity"] == "fail", f
        assert f["title"].startswith(f"{small}: only ") and "inodes free" in f["title"], f
        assert "B free, " in f["title"], f["title"]
        assert f"short of inodes too: {st.f_favail} free of {st.f_files}" in f["message"]
        # 4 MiB in all: no cleanup reaches the 1 GiB threshold, and the fix says so
        assert "export TMPDIR=DIR" in f["remedy"] and "clear old files" not in f["remedy"]
        # with the threshold at its size, the fix is a cleanup: of bytes and of files
        _, doc = run_json(
            ["check", "--no-probe", "--select", "VKS001", "--disk-fail", "1M", "--disk-warn", "2M"],
            env={"TMPDIR": str(small)},
        )
        (f,) = [f for f in doc["findings"] if f["evidence"].get("mount") == str(small)]
        assert f["severity"] == "fail" and "clear old files in" in f["remedy"], f
        assert f"du -xh --max-depth=2 {small}" in f["remedy"]
        assert f"du --inodes -x --max-depth=2 {small}" in f["remedy"]
    finally:
        subprocess.run(["umount", str(small)], check=False)
