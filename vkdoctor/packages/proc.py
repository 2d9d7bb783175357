"""Running a package tool: LC_ALL=C, a timeout, no shell, and a result that says what happened."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from vkdoctor import children
from vkdoctor.model.record import record

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@record(frozen=True, kw_only=True)
class ToolRun:
    """One finished (or failed to start, or timed-out) tool run."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    #: why it did not produce a return code: "not found", "timeout after 30s", an OSError text
    problem: str | None = None
    #: the answer an earlier run got from the tool for inputs of the same identity
    #: (the fact store, `Context.store`): the tool did not run this time
    kept: bool = False

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def result(self) -> ToolRun:
        """Itself: a finished run answers as a running one does once it is done."""
        return self

    def as_evidence(self) -> dict[str, object]:
        return {
            "command": self.command,
            "returncode": self.returncode,
            "stdout": self.stdout[-4000:],
            "stderr": self.stderr[-2000:],
            "problem": self.problem,
            **({"kept": True} if self.kept else {}),
        }


def which(tool: str, env: Mapping[str, str]) -> str | None:
    """The tool's path on this machine, looked up in the inspected environment's PATH, as
    `shutil.which` looks (shutil itself, with bz2 and lzma, costs ~5 ms to import)."""
    if "/" in tool:
        return tool if _runnable(tool) else None
    seen: set[str] = set()
    for directory in tool_path(env).split(os.pathsep):
        if directory not in seen:
            seen.add(directory)
            joined = directory if not directory or directory.endswith("/") else directory + "/"
            if _runnable(joined + tool):
                return joined + tool
    return None


def tool_path(env: Mapping[str, str]) -> str:
    """The PATH tools are looked up in and run with: the environment's, less every folder that
    another user could put a program of the same name into (vkdoctor.trust)."""
    from vkdoctor.trust import trusted_search_path

    return trusted_search_path(env.get("PATH") or DEFAULT_PATH)


def _runnable(path: str) -> bool:
    try:
        st = Path(path).stat()
    except (OSError, ValueError):
        return False
    return not stat.S_ISDIR(st.st_mode) and os.access(path, os.X_OK)


def run_tool(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
) -> ToolRun:
    """Run `argv` with LC_ALL=C and a timeout; never raises for the tool's own failures."""
    return start_tool(argv, env=env, timeout=timeout, stdin=stdin).result()


class RunningTool:
    """A tool started now and waited for later (`result()`), so that it runs while vkdoctor does
    other work. `result()` waits at most `timeout` seconds, then kills it."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout: float,
        stdin: str | None = None,
    ) -> None:
        self.argv = tuple(argv)
        self.timeout = timeout
        self._stdin = stdin
        self._proc: subprocess.Popen[str] | None = None
        self._done: ToolRun | None = None
        exe = which(argv[0], env)
        if exe is None:
            self._done = ToolRun(
                argv=self.argv, returncode=None, problem=f"{argv[0]} is not installed"
            )
            return
        child_env = {"LC_ALL": "C", "LANG": "C", "PATH": tool_path(env)}
        if "APT_CONFIG" in env:
            # which apt configuration: for a --root tree, the tree's (vkdoctor.packages.aptroot)
            child_env["APT_CONFIG"] = env["APT_CONFIG"]
        if "VKDOCTOR_HOME" in env:
            # a private HOME for one tool (rpm's ~/.rpmmacros for dnf: vkdoctor.packages.dnfsim)
            child_env["HOME"] = env["VKDOCTOR_HOME"]
        try:
            self._proc = children.start_text(
                [exe, *argv[1:]],
                env=child_env,
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                own_session=False,
            )
        except OSError as exc:
            self._done = ToolRun(argv=self.argv, returncode=None, problem=str(exc))

    def result(self) -> ToolRun:
        if self._done is not None:
            return self._done
        assert self._proc is not None
        proc = self._proc
        try:
            out, err = proc.communicate(input=self._stdin, timeout=self.timeout)
        except subprocess.TimeoutExpired as exc:
            # as subprocess.run does: kill and reap, keep what it had written
            children.kill_and_reap(proc)
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
            self._done = ToolRun(
                argv=self.argv,
                returncode=None,
                stdout=out,
                problem=f"timed out after {self.timeout:g}s",
            )
        else:
            self._done = ToolRun(argv=self.argv, returncode=proc.returncode, stdout=out, stderr=err)
        return self._done


def start_tool(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
) -> RunningTool:
    """Start `argv` as `run_tool` would, without waiting for it."""
    return RunningTool(argv, env=env, timeout=timeout, stdin=stdin)
