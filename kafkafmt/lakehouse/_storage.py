"""Where a table lives: fsspec-style storage options (what ``--storage-option`` takes) as a table
library's own, and whether a table URI is a local path."""
from __future__ import annotations

__all__ = ["library_options", "is_local"]


def library_options(storage_options, names, anonymous, passes):
    """``storage_options`` (``key``, ``secret``, ``token``, ``endpoint_url``, ``region``, ``anon``,
    ``client_kwargs={"region_name": ...}``) in a table library's names: ``names`` maps fsspec's
    names (top-level or in ``client_kwargs``) to the library's, ``anon`` becomes ``anonymous``
    ("true" or "false"), any other key is kept, as text, where ``passes(key)`` (the library's own
    form)."""
    out = {}
    for k, v in (storage_options or {}).items():
        if k == "client_kwargs" and isinstance(v, dict):
            for kk, vv in v.items():
                if kk in names:
                    out[names[kk]] = str(vv)
        elif k in names:
            out[names[k]] = str(v)
        elif k == "anon":
            out[anonymous] = "true" if v in (True, "true", "1") else "false"
        elif passes(k):
            out[k] = str(v)
    return out


def is_local(uri):
    """Whether a table URI is a local path (no scheme, or ``file://``)."""
    return "://" not in str(uri) or str(uri).startswith("file://")
