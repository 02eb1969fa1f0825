"""Times as Kafka keeps them: milliseconds since the epoch, UTC. One place that reads every form a
user may give one in -- an int of ms, an ISO-8601 string, a ``datetime`` / ``date`` /
``pandas.Timestamp`` / ``numpy.datetime64`` -- for the library's arguments and the command line.
"""
from __future__ import annotations

import datetime as _dt
import numbers
import re

__all__ = ["to_millis", "iso_millis"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_INT = re.compile(r"^[+-]?\d+$")


def to_millis(value, what="time"):
    """Milliseconds since the epoch (UTC) of ``value``: an int (already ms; a NumPy integer too, as a read's
    ``timestamp`` column holds them), a string of digits
    (ms) or ISO-8601 (``2026-01-01T10:00:00Z``, ``2026-01-01 10:30``, ``2026-01-01``), a
    ``datetime`` (naive means UTC, as Kafka's timestamps are), a ``date`` (its midnight, UTC), a
    ``pandas.Timestamp`` or a ``numpy.datetime64``. None stays None. Raises ValueError (naming
    ``what``) for anything else; sub-millisecond parts are cut, as Kafka keeps ms."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{what}: not a time: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if hasattr(value, "dtype") and str(getattr(value, "dtype", "")).startswith("datetime64"):
        import numpy as np

        if np.isnat(value):
            raise ValueError(f"{what}: not a time: NaT")
        return int(np.datetime64(value, "ms").astype("int64"))
    if hasattr(value, "to_pydatetime") and not isinstance(value, _dt.datetime):
        value = value.to_pydatetime()
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return (value - _EPOCH) // _dt.timedelta(milliseconds=1)
    if isinstance(value, _dt.date):
        return to_millis(_dt.datetime(value.year, value.month, value.day), what)
    if isinstance(value, str):
        t = value.strip()
        if _INT.match(t):
            return int(t)
        iso = t[:-1] + "+00:00" if t[-1:] in ("Z", "z") else t
        try:
            return to_millis(_dt.datetime.fromisoformat(iso), what)
        except ValueError:
            pass
    raise ValueError(f"{what}: not a time: {value!r} (give milliseconds since the epoch, an ISO-8601 string "
                     f"such as 2026-01-01T00:00:00Z, or a datetime)")


def iso_millis(ms):
    """ISO-8601 UTC for a timestamp in ms; '-' for none (< 0)."""
    if ms is None or ms < 0:
        return "-"
    d = _EPOCH + _dt.timedelta(milliseconds=int(ms))
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"
