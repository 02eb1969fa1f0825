"""Progress bars on long work, drawn by tqdm (small, no dependencies of its own, writes to any
stream): the command line's bar and the library's ``progress=True``.

A bar is shown only when its stream (stderr) is a terminal, unless ``KAFKAFMT_PROGRESS`` says
otherwise (1 forces it on, 0 off) or the caller forces it (True / False).
"""
from __future__ import annotations

import os
import sys

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
    from tqdm import tqdm

    stream = sys.stderr if stream is None else stream
    return tqdm(total=total_bytes or None, desc=label or None, unit="B", unit_scale=True, unit_divisor=1024,
                file=stream, disable=not progress_enabled(enabled, stream), mininterval=interval, leave=False,
                dynamic_ncols=True, smoothing=0.1)


def _count(n):
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.1f}{unit}"
    return f"{int(n)}"


def records_text(records, elapsed):
    """``12.3k records (4.1k/s)``: a bar's postfix."""
    return f"{_count(records)} records ({_count(records / max(elapsed, 1e-6))}/s)"
