"""vkdoctor's entry point exits without interpreter teardown, but as sys.exit would: the same
status, atexit handlers run, output flushed, running threads waited for."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO, clean_env


def _py(code: str) -> subprocess.CompletedProcess[str]:
    env = clean_env({"PYTHONPATH": str(REPO)})
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        cwd=REPO,
    )


def test_status_output_and_atexit_handlers() -> None:
    proc = _py(
        "import atexit, sys\n"
        "atexit.register(lambda: print('atexit ran', flush=True))\n"
        "sys.argv = ['vkdoctor', 'check', '--no-probe', '--select', 'VKH001']\n"
        "from vkdoctor.launch import main\n"
        "main()\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("  · Host  ") and "\nvkdoctor: OK\n" in proc.stdout
    assert proc.stdout.rstrip().endswith("atexit ran")


def test_usage_errors_keep_their_status() -> None:
    proc = _py(
        "import sys\n"
        "sys.argv = ['vkdoctor', 'check', '--no-such-option']\n"
        "from vkdoctor.launch import main\n"
        "main()\n"
    )
    assert proc.returncode == 2
    assert "Usage: vkdoctor check" in proc.stderr and "--no-such-option" in proc.stderr


def test_exit_codes_as_sys_exit_gives_them() -> None:
    for code, status, err in [("None", 0, ""), ("3", 3, ""), ("'broken'", 1, "broken")]:
        proc = _py(
            "import sys\nprint('out', end='')\n"
            f"from vkdoctor.launch import exit_now\nexit_now({code})\n"
        )
        assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (status, "out", err)


def test_a_running_thread_is_waited_for() -> None:
    proc = _py(
        "import threading, time\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('thread finished', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "from vkdoctor.launch import exit_now\n"
        "exit_now(4)\n"
    )
    assert (proc.returncode, proc.stdout.strip()) == (4, "thread finished")


def test_a_profiler_still_gets_its_results(tmp_path) -> None:
    """`python -m cProfile -o FILE -m vkdoctor ...` writes FILE after vkdoctor returns."""
    out = tmp_path / "prof.out"
    env = clean_env({"PYTHONPATH": str(REPO)})
    proc = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "vkdoctor", "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("vkdoctor:      ")
    import pstats

    assert pstats.Stats(str(out)).total_calls > 0


def _closed_reader(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """vkdoctor ARGS with its stdout a pipe whose reader has gone (`| head` after one line)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "vkdoctor", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env({"PYTHONPATH": str(REPO), **(env or {})}),
            timeout=120,
            check=False,
            cwd=REPO,
        )
    finally:
        os.close(write)
    return proc.returncode, proc.stderr


def test_a_reader_that_stops_reading_does_not_change_the_status() -> None:
    assert _closed_reader("explain") == (0, "")
    assert _closed_reader("explain", "VKL002") == (0, "")
    # a failing check stays a failure, a passing one a pass, and nothing is said about the pipe
    missing = {"VK_DRIVER_FILES": "/nonexistent.json"}
    assert _closed_reader("check", "--no-probe", "--select", "VKD001", env=missing) == (1, "")
    assert _closed_reader("check", "--no-probe", "--select", "VKH001", "--format", "json") == (
        0,
        "",
    )


def _to_dev_full(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`vkdoctor ARGS` with stdout on /dev/full: every write fails with ENOSPC."""
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "vkdoctor", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
            check=False,
            cwd=REPO,
        )


def test_a_stdout_that_cannot_be_written_is_an_output_failure_not_a_bug() -> None:
    """> /dev/full: ENOSPC on every write. Exit 2 with the reason, not "internal error" (3)."""
    env = clean_env({"PYTHONPATH": str(REPO)})
    for args in (
        ["check", "--no-probe", "--select", "VKH001"],
        ["explain", "VKH001"],
        ["--version"],
        ["--help"],
    ):
        proc = _to_dev_full(args, env)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == (
            "vkdoctor: cannot write to standard output: No space left on device"
        )


def test_a_lost_stdout_keeps_the_verdict_and_the_report_files(tmp_path) -> None:
    """A failing run with --json FILE and stdout on /dev/full: the file is written and the exit
    status is the verdict's (1), not an internal error (3)."""
    env = clean_env({"PYTHONPATH": str(REPO), "VK_DRIVER_FILES": "/nonexistent.json"})
    report = tmp_path / "r.json"
    proc = _to_dev_full(["check", "--no-probe", "--json", str(report)], env)
    assert proc.returncode == 1, proc.stderr
    assert '"status": "fail"' in report.read_text()


def test_github_format_on_a_stdout_that_is_not_utf8(tmp_path) -> None:
    """PYTHONIOENCODING=latin-1: the marks it cannot encode become "?", the verdict and the
    files stay (it was an internal error, exit 3, and no file)."""
    env = clean_env({"PYTHONPATH": str(REPO), "PYTHONIOENCODING": "latin-1"})
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vkdoctor",
            "check",
            "--no-probe",
            "--format",
            "github",
            "--json",
            str(report),
        ],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert b"internal error" not in proc.stderr
    assert b"::group::vkdoctor report" in proc.stdout and b"? VKH002" in proc.stdout
    assert report.exists()


def test_started_again_without_ld_so_s_variables_the_user_s_pythonpath_is_what_children_get(
    tmp_path,
) -> None:
    """With a shared object on LD_LIBRARY_PATH vkdoctor starts again without it, and without
    `site` (its .pth hooks cost up to 55 ms), its own sys.path given as PYTHONPATH: what it
    runs still gets the user's LD_LIBRARY_PATH and PYTHONPATH, or none, as the user set them."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libnothing.so").write_bytes(b"")
    show = (
        "import os, sys; print(repr(os.environ.get('PYTHONPATH')), "
        "os.environ.get('LD_LIBRARY_PATH'), sys.flags.no_site)"
    )
    for pythonpath in (None, f"{tmp_path}/a:{tmp_path}/b"):
        env = clean_env({"LD_LIBRARY_PATH": str(lib)})
        env.pop("PYTHONPATH", None)
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        proc = subprocess.run(
            [sys.executable, "-m", "vkdoctor", "exec", "-q", "--", sys.executable, "-c", show],
            capture_output=True, text=True, env=env, timeout=120, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [repr(pythonpath), str(lib), "0"]
