"""vkdoctor.model.record against the standard library's dataclasses, the behaviour it promises to
keep: the same fields bound from the same arguments, and a TypeError where a dataclass raises
one (a missing, unknown or repeated argument, too many positional ones)."""

from __future__ import annotations

import dataclasses
import importlib
import itertools
from typing import Any

import pytest

# the module, not the decorator of the same name that vkdoctor.model takes from it
records = importlib.import_module("vkdoctor.model.record")

_SENTINEL = object()

#: (name, kind): kind is "required", "default" (7) or "factory" (a fresh list)
_SHAPES = [
    (),
    (("a", "required"),),
    (("a", "required"), ("b", "required"), ("c", "default")),
    (("a", "required"), ("b", "default"), ("c", "factory")),
    (("a", "default"), ("b", "factory")),
    (("a", "factory"),),
]


def _pair(shape: tuple[tuple[str, str], ...], *, frozen: bool, kw_only: bool) -> tuple[Any, Any]:
    def namespace(field: Any) -> dict[str, Any]:
        ns: dict[str, Any] = {"__annotations__": {name: "int" for name, _ in shape}}
        for name, kind in shape:
            if kind == "default":
                ns[name] = 7
            elif kind == "factory":
                ns[name] = field(default_factory=list)
        return ns

    ours = records.record(frozen=frozen, kw_only=kw_only)(type("R", (), namespace(records.field)))
    theirs = dataclasses.dataclass(frozen=frozen, kw_only=kw_only)(
        type("R", (), namespace(dataclasses.field))
    )
    return ours, theirs


def _calls(names: list[str]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Positional prefixes, keyword subsets, a repeated, an unknown and an extra argument."""
    out: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for n in range(len(names) + 2):
        out.append((tuple(range(10, 10 + n)), {}))
    for k in range(len(names) + 1):
        for chosen in itertools.combinations(names, k):
            out.append(((), {name: 20 + i for i, name in enumerate(chosen)}))
    if names:
        out.append(((1,), {names[0]: 2}))
        out.append(((), {names[0]: _SENTINEL, "nope": 1}))
    out.append(((), {"nope": 1}))
    return out


def _outcome(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], names: list[str]) -> Any:
    try:
        obj = cls(*args, **kwargs)
    except TypeError:
        return TypeError
    return tuple(getattr(obj, name) for name in names)


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("kw_only", [False, True])
def test_a_record_binds_its_arguments_as_a_dataclass_does(
    shape: tuple[tuple[str, str], ...], frozen: bool, kw_only: bool
) -> None:
    ours, theirs = _pair(shape, frozen=frozen, kw_only=kw_only)
    names = [name for name, _ in shape]
    for args, kwargs in _calls(names):
        assert _outcome(ours, args, dict(kwargs), names) == _outcome(
            theirs, args, dict(kwargs), names
        ), (shape, args, kwargs)


def test_a_factory_gives_each_instance_its_own_value_and_a_frozen_record_stays_frozen() -> None:
    ours, _ = _pair((("a", "required"), ("b", "factory")), frozen=True, kw_only=True)
    one, two = ours(a=1), ours(a=1)
    assert one.b == [] and one.b is not two.b and one == two
    with pytest.raises(records.FrozenInstanceError):
        one.a = 2
    given: list[int] = [3]
    assert ours(a=1, b=given).b is given
    assert records.replace(one, a=5).a == 5 and one.a == 1
    with pytest.raises(TypeError, match="missing required argument 'a'"):
        ours()
