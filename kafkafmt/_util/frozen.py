"""Frozen dataclasses made by the thousand (a cluster's discovery makes a partition and a copy per folder): every
field set at once, not one ``object.__setattr__`` call per field as a frozen dataclass's constructor sets them."""
from __future__ import annotations

from dataclasses import MISSING, fields

__all__ = ["field_defaults", "made"]


def field_defaults(cls):
    """``{name: default}`` of a dataclass's fields (``dataclasses.MISSING`` for those without one): what `made`
    starts from. A field with a ``default_factory`` is refused (`made` would share one value between instances)."""
    out = {}
    for f in fields(cls):
        if f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} has a default_factory")
        out[f.name] = f.default
    return out


def made(cls, defaults, given):
    """An instance of the frozen dataclass ``cls`` (one without ``__post_init__`` or slots) holding the fields of
    ``given`` (a dict: every field without a default, and any other) and ``defaults`` (`field_defaults`) for the
    rest -- what ``cls(**given)`` makes.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Point:
    ...     x: int
    ...     y: int = 0
    >>> made(Point, field_defaults(Point), {"x": 3}) == Point(3)
    True
    """
    obj = object.__new__(cls)
    d = obj.__dict__
    d.update(defaults)
    d.update(given)
    return obj
