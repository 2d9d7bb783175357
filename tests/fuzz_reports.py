"""Fuzz targets for reading reports back: `vkdoctor.model.reportfile.load` (what `diff` and `summary`
read), `compare` with the diff renderers, and `summarize` with the summary renderers. Seeds are
the real reports in tests/data. A report that is not one may only raise ReportError; for diff
and summary, an input that is not a report shakes the real one instead (hostile strings, extreme
numbers, lists doubled or emptied), which must compare, sum up and render without raising.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Sequence
from pathlib import Path

from fuzzing import FuzzTarget

from vkdoctor.model.compare import compare, summarize
from vkdoctor.model.reportfile import ReportError, load
from vkdoctor.render import compare as render
from vkdoctor.render.escape import no_commands

DATA = Path(__file__).parent / "data"


def report_seeds() -> Sequence[bytes]:
    return [p.read_bytes() for p in sorted(DATA.glob("report-*.json"))]


def _load(data: bytes, scratch: str) -> dict[str, object]:
    path = Path(scratch) / "report.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return load(str(path))


def run_reportfile(data: bytes, scratch: str) -> object:
    return _load(data, scratch)


#: strings a hostile report carries: controls, escape sequences, workflow commands, Markdown
HOSTILE = (
    "\n::error::owned\n##[error]x",
    "\x1b]52;c;b3duZWQ=\x07\x1b[2J\r",
    "\u202e\u2066\x9b31m\x7f",
    "](http://x/a.png) <img src=x> `|` # h",
    "::stop-commands::vkdoctor-0\n::set-output name=a::b",
    "",
)


#: fields the schema holds to a pattern or a list of values: a report that breaks them is refused
_KEPT = {"code", "severity", "verdict", "status", "outcome", "how", "origin", "schema_version"}


def _shaken(value: object, rng: random.Random) -> object:
    """`value` with some strings made hostile, numbers made extreme and lists duplicated or
    emptied, every type kept (what loads: the renderers must take it)."""
    if isinstance(value, str):  # a word (an enum's value: a verdict, a severity) is kept
        if (value.isidentifier() and value.islower()) or rng.random() >= 0.3:
            return value
        return rng.choice(HOSTILE) + value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return rng.choice((value, 0, -1, 2**63, 10**30)) if isinstance(value, int) else value
    if isinstance(value, list):
        items = [_shaken(v, rng) for v in value]
        return rng.choice((items, items + items, items[:1], []))
    if isinstance(value, dict):
        return {k: v if k in _KEPT else _shaken(v, rng) for k, v in value.items()}
    return value


def _loaded(data: bytes, scratch: str) -> dict[str, object]:
    """The report `data` is, or (when it is not one) the real report shaken by `data`."""
    try:
        return _load(data, scratch)
    except ReportError:
        seed = json.loads(report_seeds()[0])
        for attempt in range(8):
            shaken = _shaken(seed, random.Random(zlib.crc32(data) + attempt))
            try:
                return _load(json.dumps(shaken).encode(), scratch)
            except ReportError:  # a field the schema holds to a form of its own: shake again
                continue
        return _load(report_seeds()[0], scratch)


def _inert(*texts: str) -> None:
    """What reaches a terminal or a CI log (through `vkdoctor.commands.common.out`) carries no
    escape sequence and no command."""
    for text in map(no_commands, texts):
        assert "\x1b" not in text and "\r" not in text and "##[" not in text, text[:300]
        assert not any(line.lstrip().startswith("::") for line in text.splitlines()), text[:300]


def run_diff(data: bytes, scratch: str) -> object:
    doc = _loaded(data, scratch)
    other = load(str(sorted(DATA.glob("report-*.json"))[0]))
    out = []
    for a, b in ((doc, other), (other, doc)):
        result = compare(a, b)
        out.append(render.diff_text(result, "a.json", "b.json", width=80))
        _inert(out[-1])
        out.append(render.diff_json(result, "a.json", "b.json"))
    return out


def run_summary(data: bytes, scratch: str) -> object:
    doc = _loaded(data, scratch)
    fleet = summarize([("one/report.json", doc), ("two/report.json", doc)])
    texts = (render.summary_text(fleet, width=80), render.summary_github(fleet))
    _inert(*texts)
    return (*texts, render.summary_json(fleet))


TARGETS: list[FuzzTarget] = [
    FuzzTarget("reportfile", report_seeds, run_reportfile, expected=(ReportError,)),
    FuzzTarget("diff", report_seeds, run_diff, seconds_floor=2.0),
    FuzzTarget("summary", report_seeds, run_summary, seconds_floor=2.0),
]
