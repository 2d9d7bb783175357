"""How the GitHub Actions runner reads $GITHUB_ENV after a step (actions/runner,
src/Runner.Worker/FileCommandManager.cs, SetEnvFileCommand): the file's text split into lines at
"\\n" (a "\\r" before it dropped); an empty line skipped; `NAME=value` where '=' comes before any
'<<'; else `NAME<<DELIMITER`, whose value is every line up to the one that is exactly DELIMITER
(joined with the line breaks as written); anything else, or a heredoc never closed, fails the step."""

from __future__ import annotations


class RunnerError(Exception):
    """What the runner would fail the step with."""


def _read_line(text: str, index: int) -> tuple[str | None, int, int]:
    """(line without its break, index after the break, index where the line's text ends)."""
    if index >= len(text):
        return None, index, index
    nl = text.find("\n", index)
    end = len(text) if nl < 0 else nl
    after = len(text) if nl < 0 else nl + 1
    if end > index and text[end - 1] == "\r":
        end -= 1
    return text[index:end], after, end


def parse_env_file(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    index = 0
    line, index, _ = _read_line(text, index)
    while line is not None:
        if line:
            eq, here = line.find("="), line.find("<<")
            if eq >= 0 and (here < 0 or eq < here):
                key, value = line.split("=", 1)
            elif here >= 0:
                key, delimiter = line.split("<<", 1)
                start = index
                stop = index
                temp, index, end = _read_line(text, index)
                while temp != delimiter:
                    if temp is None:
                        raise RunnerError(f"Matching delimiter not found '{delimiter}'")
                    stop = end
                    temp, index, end = _read_line(text, index)
                value = text[start:stop]
            else:
                raise RunnerError(f"Invalid format '{line}'")
            if not key:
                raise RunnerError(f"Invalid format '{line}': empty name")
            out[key] = value
        line, index, _ = _read_line(text, index)
    return out
