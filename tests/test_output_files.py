"""Report files that are not plain files: a FIFO, /dev/null, /dev/stdout, a directory. None of
them may block the run or replace the device node; each one that cannot be written is said."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import REPO, clean_env, run_vkdoctor

FAST = ["check", "--no-probe", "--select", "VKH001"]


def test_a_fifo_nothing_reads_is_refused_at_once_for_each_output(tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    for args, env in (
        ([*FAST, "--json", str(fifo)], {}),
        ([*FAST, "--junit", str(fifo)], {}),
        ([*FAST, "--format", "github"], {"GITHUB_STEP_SUMMARY": str(fifo)}),
    ):
        started = time.monotonic()
        proc = run_vkdoctor(args, env=env, timeout=60)
        assert time.monotonic() - started < 30
        assert "nothing reads it (a FIFO needs its reader started first)" in proc.stderr, args
        assert str(fifo) in proc.stderr
        assert "Traceback" not in proc.stderr
        # a lost report file is no pass; the job summary is a courtesy and keeps the verdict
        assert proc.returncode == (0 if env else 2), proc.stderr
    assert fifo.is_fifo()


def test_a_fifo_with_its_reader_gets_the_whole_report(tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    # O_RDWR: the reader is there before vkdoctor opens the FIFO (a plain open would wait)
    fd = os.open(fifo, os.O_RDWR)

    def read() -> None:
        with os.fdopen(fd, "rb") as f:
            data = b""
            while not data.rstrip().endswith(b"}"):
                chunk = f.read1(1 << 16)
                if not chunk:
                    break
                data += chunk
            got.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    proc = run_vkdoctor([*FAST, "--json", str(fifo)], timeout=60)
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(got[0])["status"] == "ok"
    assert fifo.is_fifo()


def test_dev_null_and_dev_stdout_keep_working() -> None:
    proc = run_vkdoctor([*FAST, "--json", "/dev/null", "--junit", "/dev/null"], timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert Path("/dev/null").is_char_device()
    # stdout is a pipe here: /dev/stdout opens that pipe
    proc = run_vkdoctor([*FAST, "--format", "github", "--json", "/dev/stdout"], timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert '"status": "ok"' in proc.stdout and "::group::vkdoctor report" in proc.stdout
    # stdout a regular file: /dev/stdout is that file, written in place (not renamed over)
    env = clean_env({"PYTHONPATH": str(REPO)})
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"vkdoctor-stdout-{os.getpid()}.txt"
    try:
        with open(out, "w") as f:
            rc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "vkdoctor",
                    *FAST,
                    "--format",
                    "json",
                    "--junit",
                    "/dev/stdout",
                ],
                stdout=f,
                env=env,
                cwd=REPO,
                timeout=60,
                check=False,
            ).returncode
        assert rc == 0
        assert "<testsuites" in out.read_text()
    finally:
        out.unlink()


def test_a_directory_or_a_block_device_is_refused(tmp_path: Path) -> None:
    proc = run_vkdoctor([*FAST, "--json", str(tmp_path)], timeout=60)
    assert proc.returncode == 2
    assert "Invalid value for '--json'" in proc.stderr and "is a directory" in proc.stderr
    for where, what in ((tmp_path, "Is a directory"), (_block_device(), "a block device")):
        proc = run_vkdoctor(
            [*FAST, "--format", "github"], env={"GITHUB_STEP_SUMMARY": str(where)}, timeout=60
        )
        assert proc.returncode == 0
        assert f"cannot append the job summary to {where}: {what}" in proc.stderr


def _block_device() -> Path:
    for dev in sorted(Path("/sys/class/block").iterdir()):
        path = Path("/dev") / dev.name
        if path.is_block_device():
            return path
    raise AssertionError("no block device in /dev to refuse")


def test_a_link_to_a_report_file_has_its_target_replaced(tmp_path: Path) -> None:
    real = tmp_path / "reports" / "vkdoctor.json"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    proc = run_vkdoctor([*FAST, "--json", str(link)], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_text())["status"] == "ok"
    assert sorted(p.name for p in real.parent.iterdir()) == ["vkdoctor.json"]  # no temp file left
