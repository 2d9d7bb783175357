"""Records: the part of `dataclasses` that vkdoctor uses, without its start-up cost.

`dataclasses.dataclass` compiles five or six functions per class and calls `inspect.signature`
for a docstring: about 1 ms per class here, 90 ms for vkdoctor's ~90 classes, a large part of
a `check` run that should take about as long as `vulkaninfo` (docs/performance.md). `record`
compiles nothing: `__init__`, equality, hashing and repr are shared functions over the field
names (tests/test_record.py holds them to what dataclasses does). The type checker treats
`record` as a dataclass (PEP 681).

Supported: `frozen`, `kw_only`, `eq`, defaults, `field(default=, default_factory=, repr=)`,
`replace`, `asdict` and `to_json` (a record as its JSON object); not inheritance between records or `__post_init__` (none is used).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from typing import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorator: decorator


T = TypeVar("T")

_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<missing>"})()


class Absent(enum.Enum):
    """The value of a field that `to_json` leaves out: a key the JSON does not have (not null)."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent.ABSENT


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record."""


class _Field:
    __slots__ = ("default", "default_factory", "repr")

    def __init__(self, default: Any, default_factory: Any, repr: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, repr: bool = True) -> Any:
    """A field with a default factory (a fresh list per instance) or left out of repr."""
    return _Field(default, default_factory, repr)


class _Spec:
    """What `record` learned about a class: its fields in order and how to build `__init__`."""

    __slots__ = ("defaults", "factories", "frozen", "kw_only", "names", "repr_names")

    def __init__(self, *, kw_only: bool, frozen: bool) -> None:
        self.names: list[str] = []
        self.defaults: dict[str, Any] = {}
        self.factories: dict[str, Callable[[], Any]] = {}
        self.repr_names: list[str] = []
        self.kw_only = kw_only
        self.frozen = frozen


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _spec_of(cls: type, *, kw_only: bool, frozen: bool) -> _Spec:
    if any("__record_spec__" in base.__dict__ for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__qualname__}: records do not inherit fields from records")
    spec = _Spec(kw_only=kw_only, frozen=frozen)
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (inspect costs ~10 ms to import)
    for name, annotation in own.items():
        if _is_classvar(annotation):
            continue
        spec.names.append(name)
        value = cls.__dict__.get(name, _MISSING)
        if not isinstance(value, _Field):
            value = _Field(value, _MISSING, True)
        if value.default_factory is not _MISSING:
            spec.factories[name] = value.default_factory
        elif value.default is not _MISSING:
            spec.defaults[name] = value.default
        if spec.defaults.get(name, _MISSING) is _MISSING:
            if name in cls.__dict__:
                delattr(cls, name)
        else:
            setattr(cls, name, spec.defaults[name])
        if value.repr:
            spec.repr_names.append(name)
    return spec


def _init(cls: type, spec: _Spec) -> Callable[..., None]:
    """`__init__` for the fields of `spec`, one function for every record: it binds the
    arguments as a compiled `def` would (positional or keyword-only, defaults, factories, and
    a TypeError for a missing, unknown or repeated one) and sets them in one `__dict__` update,
    which a frozen record's `__setattr__` does not see. Compiling an `__init__` per class cost a
    first run ~0.2 ms per record, more than a run spends in every `__init__` together."""
    names = tuple(spec.names)
    known = frozenset(names)
    defaults = dict(spec.defaults)
    factories = tuple(spec.factories.items())
    required = frozenset(n for n in names if n not in defaults and n not in spec.factories)
    positional = 0 if spec.kw_only else len(names)
    where = f"{cls.__qualname__}.__init__()"

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            if len(args) > positional:
                raise TypeError(
                    f"{where} takes {positional + 1} positional arguments "
                    f"but {len(args) + 1} were given"
                )
            for name, value in zip(names, args, strict=False):
                if name in kwargs:
                    raise TypeError(f"{where} got multiple values for argument {name!r}")
                kwargs[name] = value
        keys = kwargs.keys()
        if not keys <= known:
            raise TypeError(f"{where} got an unexpected keyword argument {min(keys - known)!r}")
        if not keys >= required:
            raise TypeError(f"{where} missing required argument {min(required - keys)!r}")
        values = {**defaults, **kwargs}
        for name, make in factories:
            if name not in kwargs:
                values[name] = make()
        self.__dict__.update(values)

    return __init__


def _repr(self: Any) -> str:
    spec: _Spec = type(self).__record_spec__
    fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in spec.repr_names)
    return f"{type(self).__qualname__}({fields})"


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _equality(key: Callable[[Any], Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)

    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __eq__, __hash__


def _values(*names: str) -> Callable[[Any], tuple[Any, ...]]:
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(
    *, frozen: bool = False, kw_only: bool = False, eq: bool = True
) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(field,))
def record(
    cls: type[T] | None = None,
    /,
    *,
    frozen: bool = False,
    kw_only: bool = False,
    eq: bool = True,
) -> type[T] | Callable[[type[T]], type[T]]:
    """Make `cls` a record: `__init__` from its annotated fields, equality and repr."""

    def wrap(cls: type[T]) -> type[T]:
        spec = _spec_of(cls, kw_only=kw_only, frozen=frozen)
        attrs: dict[str, Any] = {
            "__record_spec__": spec,
            "__init__": _init(cls, spec),
            "__match_args__": () if kw_only else tuple(spec.names),
            "__repr__": _repr,
        }
        if eq:
            equal, hashed = _equality(_values(*spec.names))
            attrs["__eq__"] = equal
            attrs["__hash__"] = hashed if frozen else None
        if frozen:
            attrs["__setattr__"] = _frozen_setattr
            attrs["__delattr__"] = _frozen_delattr
        for name, value in attrs.items():
            setattr(cls, name, value)
        return cls

    if cls is None:
        return wrap
    return wrap(cls)


def is_record(obj: object) -> bool:
    """True for an instance of a record class (not for the class itself)."""
    return not isinstance(obj, type) and hasattr(type(obj), "__record_spec__")


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of record `obj` with `changes`, as `dataclasses.replace`."""
    spec: _Spec = type(obj).__record_spec__  # type: ignore[attr-defined]
    unknown = set(changes) - set(spec.names)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    values = {name: getattr(obj, name) for name in spec.names}
    values.update(changes)
    return type(obj)(**values)


def asdict(obj: Any) -> Any:
    """Records, lists, tuples and dicts as plain dicts and lists, recursively (`dataclasses.asdict`)."""
    if is_record(obj):
        spec: _Spec = type(obj).__record_spec__
        return {name: asdict(getattr(obj, name)) for name in spec.names}
    if isinstance(obj, list):
        return [asdict(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return {asdict(k): asdict(v) for k, v in obj.items()}
    return obj


def to_json(obj: Any) -> Any:
    """A record as its JSON object, the one conversion of vkdoctor's records: its fields in order
    (those holding `ABSENT` left out), enums as their values, tuples as lists, recursively."""
    if is_record(obj):
        spec: _Spec = type(obj).__record_spec__
        out = {}
        for name in spec.names:
            value = getattr(obj, name)
            if value is not ABSENT:
                out[name] = to_json(value)
        return out
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, list | tuple):
        return [to_json(v) for v in obj]
    if isinstance(obj, Mapping):
        return {k: to_json(v) for k, v in obj.items()}
    return obj
