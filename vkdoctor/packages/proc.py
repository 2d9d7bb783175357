"""Running a package tool: LC_ALL=C, a timeout, no shell, and a result that says what happened."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True, kw_only=True)
class ToolRun:
    """One finished (or failed to start, or timed-out) tool run."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    #: why it did not produce a return code: "not found", "timeout after 30s", an OSError text
    problem: str | None = None

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def as_evidence(self) -> dict[str, object]:
        return {
            "command": self.command,
            "returncode": self.returncode,
            "stdout": self.stdout[-4000:],
            "stderr": self.stderr[-2000:],
            "problem": self.problem,
        }


def which(tool: str, env: Mapping[str, str]) -> str | None:
    """The tool's path on this machine, looked up in the inspected environment's PATH."""
    return shutil.which(tool, path=env.get("PATH") or DEFAULT_PATH)


def run_tool(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
) -> ToolRun:
    """Run `argv` with LC_ALL=C and a timeout; never raises for the tool's own failures."""
    exe = which(argv[0], env)
    if exe is None:
        return ToolRun(argv=tuple(argv), returncode=None, problem=f"{argv[0]} is not installed")
    child_env = {"LC_ALL": "C", "LANG": "C", "PATH": env.get("PATH") or DEFAULT_PATH}
    try:
        if stdin is None:
            proc = subprocess.run(
                [exe, *argv[1:]],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                env=child_env,
                timeout=timeout,
                check=False,
            )
        else:
            proc = subprocess.run(
                [exe, *argv[1:]],
                input=stdin,
                capture_output=True,
                text=True,
                errors="replace",
                env=child_env,
                timeout=timeout,
                check=False,
            )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return ToolRun(
            argv=tuple(argv), returncode=None, stdout=out, problem=f"timed out after {timeout:g}s"
        )
    except OSError as exc:
        return ToolRun(argv=tuple(argv), returncode=None, problem=str(exc))
    return ToolRun(
        argv=tuple(argv), returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr
    )
