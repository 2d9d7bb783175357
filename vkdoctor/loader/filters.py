"""VK_LOADER_DRIVERS_SELECT/_DISABLE and VK_LOADER_LAYERS_ENABLE/_DISABLE, parsed like loader 1.3.239.

The value is lower-cased and split on ','. `abc` is a full name, `abc*` a prefix, `*abc` a
suffix, `*abc*` a substring; a bare `*` or `**` matches everything, as do `~all~` (and for layers
`~implicit~` / `~explicit~` select a class). Names are compared lower-cased.
"""

from __future__ import annotations

from vkdoctor.model.record import record

#: VK_MAX_EXTENSION_NAME_SIZE: the loader copies at most this many characters of a token
_MAX_TOKEN = 256
#: MAX_ADDITIONAL_FILTERS
_MAX_FILTERS = 16

_EVERYTHING = ("~all~", "*", "**")


@record(frozen=True)
class Token:
    kind: str  # "special", "substring", "suffix", "prefix", "full"
    value: str
    length: int


@record(frozen=True)
class Filter:
    """One parsed filter variable. Empty when unset or empty."""

    variable: str
    raw: str | None
    tokens: tuple[Token, ...] = ()
    #: layers only: ~all~ / ~implicit~ / ~explicit~ present
    all: bool = False
    implicit: bool = False
    explicit: bool = False

    @property
    def active(self) -> bool:
        return bool(self.tokens) or self.all or self.implicit or self.explicit


def _token(text: str) -> Token:
    n = len(text)
    if text.startswith("~"):
        return Token("special", text, n)
    star_begin = star_end = False
    if text.startswith("*"):
        if n == 1:
            return Token("special", text, n)
        star_begin = True
    if text.endswith("*"):
        if n == 2:
            return Token("special", text, n)
        star_end = True
    if star_begin and star_end:
        return Token("substring", text[1:-1][:_MAX_TOKEN], n - 2)
    if star_begin:
        return Token("suffix", text[1:][:_MAX_TOKEN], n - 1)
    if star_end:
        return Token("prefix", text[:-1][:_MAX_TOKEN], n - 1)
    return Token("full", text[:_MAX_TOKEN], n)


def _split(value: str) -> list[str]:
    # strtok: empty tokens vanish
    return [t for t in value.lower().split(",") if t]


def parse_filter(variable: str, value: str | None) -> Filter:
    """The generic filter (drivers select/disable, layers enable)."""
    if not value:
        return Filter(variable, value)
    tokens = tuple(_token(t) for t in _split(value))[:_MAX_FILTERS]
    return Filter(variable, value, tokens)


def parse_layer_disable(variable: str, value: str | None) -> Filter:
    """VK_LOADER_LAYERS_DISABLE: specials set class flags and are not name filters."""
    if not value:
        return Filter(variable, value)
    tokens: list[Token] = []
    flags = {"all": False, "implicit": False, "explicit": False}
    for text in _split(value):
        tok = _token(text)
        if tok.kind == "special":
            if text in _EVERYTHING:
                flags["all"] = True
            elif text == "~implicit~":
                flags["implicit"] = True
            elif text == "~explicit~":
                flags["explicit"] = True
            continue
        tokens.append(tok)
        if len(tokens) >= _MAX_FILTERS:
            break
    return Filter(variable, value, tuple(tokens), **flags)


def matches(name: str, flt: Filter) -> bool:
    """check_name_matches_filter_environment_var."""
    lower = name.lower()
    n = len(lower)
    for tok in flt.tokens:
        if tok.length > n:
            continue
        if tok.kind == "special":
            if tok.value in _EVERYTHING:
                return True
        elif tok.kind == "substring":
            if tok.value in lower:
                return True
        elif tok.kind == "suffix":
            if lower.endswith(tok.value):
                return True
        elif tok.kind == "prefix":
            if lower.startswith(tok.value):
                return True
        elif lower == tok.value:
            return True
    return False
