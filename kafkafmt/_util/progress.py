"""Progress bars on long work, drawn by tqdm (small, no dependencies of its own, writes to any
stream): the command line's bar and the library's ``progress=True``.

A bar is shown only when its stream (stderr) is a terminal, unless ``KAFKAFMT_PROGRESS`` says
otherwise (1 forces it on, 0 off) or the caller forces it (True / False).
"""
from __future__ import annotations

import os
import sys

from kafkafmt._util.units import human_bytes

__all__ = ["progress_enabled", "progress_bar", "records_text"]


def progress_enabled(enabled=None, stream=None):
    """Whether to draw: `enabled` when True or False; else ``KAFKAFMT_PROGRESS`` when set; else
    whether `stream` (stderr by default) is a terminal."""
    if enabled is not None:
        return bool(enabled)
    env = os.environ.get("KAFKAFMT_PROGRESS")
    if env is not None and env.strip() != "":
        return env.strip() not in ("0", "false", "no")
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_bar(total_bytes=None, *, label="", enabled=None, stream=None, interval=0.1):
    """A tqdm bar counting bytes (``update(n)``) towards `total_bytes` (None: no total), on
    `stream` (stderr), erased when closed; disabled (every call a no-op) unless `progress_enabled`."""
    stream = sys.stderr if stream is None else stream
    total = total_bytes or None
    if not progress_enabled(enabled, stream):
        return _NoBar()
    return _bytes_bar()(total=total, desc=label or None, unit="B", file=stream,
                        disable=False, mininterval=interval, leave=False,
                        dynamic_ncols=True, smoothing=0.1,
                        bar_format=_BAR if total is not None else _BAR_NO_TOTAL)


# tqdm's own size fields say "kB" for 1,024 bytes (and its rates divide by 1,000): the bar shows
# sizes as every other figure does (`kafkafmt._util.units.human_bytes`)
_BAR = "{desc}: {percentage:3.0f}%|{bar}| {done}/{whole} [{elapsed}<{remaining}, {speed}{postfix}]"
_BAR_NO_TOTAL = "{desc}: {done} [{elapsed}, {speed}{postfix}]"


def _bytes_bar():
    from tqdm import tqdm

    global _BytesBar
    if _BytesBar is None:
        class _BytesBar(tqdm):   # noqa: N801 -- the class is made once, on first use (tqdm imported lazily)
            @property
            def format_dict(self):
                d = super().format_dict
                rate = d.get("rate")
                if rate is None and d.get("elapsed"):
                    rate = d["n"] / d["elapsed"]
                d.update(done=human_bytes(d["n"]), whole=human_bytes(d["total"]),
                         speed="? B/s" if rate is None else f"{human_bytes(rate)}/s")
                return d
    return _BytesBar


_BytesBar = None


class _NoBar:
    """A bar not drawn, as tqdm's ``disable=True`` bar behaves (its count stays 0), without importing tqdm
    (tens of milliseconds of every command run without a terminal)."""

    disable = True
    n = 0

    def update(self, n=1):
        pass

    def close(self):
        pass

    def clear(self, *args, **kwargs):
        pass

    def refresh(self, *args, **kwargs):
        pass

    def set_description_str(self, *args, **kwargs):
        pass

    def set_postfix_str(self, *args, **kwargs):
        pass


def _count(n):
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.1f}{unit}"
    return f"{int(n)}"


def records_text(records, elapsed):
    """``12.3k records (4.1k/s)``: a bar's postfix."""
    return f"{_count(records)} records ({_count(records / max(elapsed, 1e-6))}/s)"
