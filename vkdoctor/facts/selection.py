"""Which checks this run runs (the runner records them): a check that leaves a failure to
another one asks `all_selected` first."""

from __future__ import annotations

from vkdoctor.model.context import Context


def selected_codes(ctx: Context) -> frozenset[str] | None:
    """The codes of the checks this run runs (the runner records them); None when unknown."""
    return None


def all_selected(ctx: Context, *codes: str) -> bool:
    """Whether every one of `codes` runs in this run (unknown counts as yes). A check that
    leaves a failure to another one ("as the library findings predicted") must know that the
    other one is there to report it: under --select it may not be."""
    selected = ctx.fact(selected_codes)
    return selected is None or all(c in selected for c in codes)
