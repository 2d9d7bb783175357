"""Why a passing `check --no-probe` on this machine is not kept for replay (docs/performance.md):
runs it in this process, as `python3 -m vkdoctor check --no-probe` would, and prints to stderr
each reason vkdoctor.speed.replay.save finds not to keep it. For a machine where the benchmark
shows the replay saving nothing (scripts/gpu/pieces.sh). Run it twice: the second run says
whether the first one's report was replayed."""

from __future__ import annotations

import sys
from typing import Any

from vkdoctor.speed import inputs, replay

_save = replay.save


def _why(code: Any) -> list[str]:
    rec = inputs.recorder()
    if rec is None:
        return ["no recorder (the run was not eligible, or was replayed)"]
    why = []
    if code not in (0, None):
        why.append(f"exit status {code}")
    if rec.unfit is not None:
        why.append(f"refused: {rec.unfit}")
    if "context" not in rec.notes:
        why.append("no context noted")
    volatile = sorted(c for c in rec.volatile if isinstance(c, str) and c not in replay.LIVE)
    if volatile:
        why.append(f"checks that read changing things: {volatile}")
    looks = rec.kept_looks()
    changed = [
        (how, path)
        for how, path in looks
        if inputs.observe((how, path)) != rec.first.get((how, path))
    ]
    if changed:
        why.append(f"{len(changed)} of {len(looks)} looks changed while it ran: {changed[:20]}")
    return why


def save(code: Any) -> None:
    print("why not kept:", _why(code) or ["nothing: kept"], file=sys.stderr)
    _save(code)


replay.save = save
sys.argv = ["vkdoctor", "check", "--no-probe"]
from vkdoctor.launch import main  # noqa: E402

main()
