"""Records: the part of `dataclasses` that vkdoctor uses, without its start-up cost.

`dataclasses.dataclass` compiles five or six functions per class and calls `inspect.signature`
for a docstring: about 1 ms per class here, 90 ms for vkdoctor's ~90 classes, a large part of
a `check` run that should take about as long as `vulkaninfo` (docs/performance.md). `record`
compiles only `__init__`, and only when the class is first instantiated; equality, hashing and
repr are shared functions over the field names. The type checker treats `record` as a dataclass
(PEP 681).

Supported: `frozen`, `kw_only`, `eq`, defaults, `field(default=, default_factory=, repr=)`,
`replace`, `asdict` and `to_json` (a record as its JSON object); not inheritance between records or `__post_init__` (none is used).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from operator import attrgetter
from types import CodeType
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


def _init_source(cls: type, spec: _Spec) -> tuple[str, dict[str, Any]]:
    scope: dict[str, Any] = {"_MISSING": _MISSING, "_setattr": object.__setattr__}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for i, name in enumerate(spec.names):
        if name in spec.factories:
            scope[f"_f{i}"] = spec.factories[name]
            param = f"{name}=_MISSING"
            value = f"_f{i}() if {name} is _MISSING else {name}"
        elif name in spec.defaults:
            scope[f"_d{i}"] = spec.defaults[name]
            param = f"{name}=_d{i}"
            value = name
        else:
            param = name
            value = name
        (keyword if spec.kw_only else positional).append(param)
        if spec.frozen:
            body.append(f"    _setattr(self, {name!r}, {value})")
        else:
            body.append(f"    self.{name} = {value}")
    params = ["self", *positional]
    if keyword:
        params += ["*", *keyword]
    lines = [f"def __init__({', '.join(params)}) -> None:", *(body or ["    pass"])]
    return "\n".join(lines), scope


#: the __init__s an earlier run compiled, by file name and source: a vkdoctor.factcache store
#: (its trust rule, the Python and marshal versions and this module's identity in its stamp),
#: given by the face (`keep_compiled_in`); compiling one costs ~0.3 ms, ~60 per `check`
_compiled: Any = None


def keep_compiled_in(store: Any) -> None:
    """Keep the compiled `__init__`s in `store` (a vkdoctor.factcache.Store) across runs, as
    Python keeps a module's in __pycache__: the code compiled from the same source."""
    global _compiled  # noqa: PLW0603 - set once, by the face, before anything is compiled
    _compiled = store


def _code(source: str, filename: str) -> Any:
    kept = _compiled.get((filename, source)) if _compiled is not None else None
    if isinstance(kept, CodeType) and kept.co_filename == filename:
        return kept
    code = compile(source, filename, "exec")
    if _compiled is not None:
        _compiled.put((filename, source), code)
    return code


def _lazy_init(cls: type, spec: _Spec) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        source, scope = _init_source(cls, spec)
        exec(_code(source, f"<record {cls.__qualname__}>"), scope)
        init = scope["__init__"]
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

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
            "__init__": _lazy_init(cls, spec),
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
