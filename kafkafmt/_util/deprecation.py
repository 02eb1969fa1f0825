"""A keyword argument renamed: the old name keeps working for one release, with a DeprecationWarning."""
from __future__ import annotations

import functools
import warnings

__all__ = ["renamed_keyword"]


def renamed_keyword(old, new):
    """A decorator: the function also takes its keyword argument ``new`` under its old name ``old``
    (a DeprecationWarning naming both; both given is a TypeError). ``inspect.signature`` shows the
    new name only."""
    def wrap(func):
        @functools.wraps(func)
        def call(*args, **kwargs):
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{func.__qualname__}() got {old}= and {new}= ({old} is the old name of {new})")
                warnings.warn(f"{func.__qualname__}({old}=...) is deprecated: its name is {new}= now ({old}= goes "
                              f"in the next release)", DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)
        return call
    return wrap
