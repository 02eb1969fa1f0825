"""A one-line progress bar on stderr: bytes and records per second, shown only on a terminal."""
from __future__ import annotations

import os
import sys
import time

from kafkafmt.cli.common import human_bytes


def _count(n):
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.1f}{unit}"
    return f"{int(n)}"


class Progress:
    """``advance(nbytes, nrecords)`` as work is done; ``close()`` erases the line.

    enabled: None decides from the stream (a terminal) and ``KAFKAFMT_PROGRESS`` (1 forces it on,
    0 off); True / False force it."""

    def __init__(self, total_bytes=None, *, enabled=None, stream=None, label="", interval=0.1):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            env = os.environ.get("KAFKAFMT_PROGRESS")
            if env is not None and env.strip() != "":
                enabled = env.strip() not in ("0", "false", "no")
            else:
                try:
                    enabled = self.stream.isatty()
                except (AttributeError, ValueError):
                    enabled = False
        self.enabled = bool(enabled)
        self.total = total_bytes
        self.label = label
        self.interval = interval
        self.bytes = 0
        self.records = 0
        self.start = time.monotonic()
        self._last = 0.0
        self._width = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def set_label(self, label):
        self.label = label
        self._draw(force=False)

    def advance(self, nbytes=0, nrecords=0):
        self.bytes += int(nbytes)
        self.records += int(nrecords)
        self._draw(force=False)

    def line(self):
        elapsed = max(time.monotonic() - self.start, 1e-6)
        parts = []
        if self.label:
            parts.append(self.label)
        if self.total:
            frac = min(self.bytes / self.total, 1.0)
            filled = int(frac * 20)
            parts.append(f"[{'#' * filled}{'.' * (20 - filled)}] {frac * 100:3.0f}%")
            parts.append(f"{human_bytes(self.bytes)}/{human_bytes(self.total)}")
        else:
            parts.append(human_bytes(self.bytes))
        parts.append(f"{human_bytes(self.bytes / elapsed)}/s")
        parts.append(f"{_count(self.records)} records ({_count(self.records / elapsed)}/s)")
        if self.total and self.bytes and self.bytes < self.total:
            eta = elapsed * (self.total - self.bytes) / self.bytes
            parts.append(f"eta {eta:.0f}s")
        return "  ".join(parts)

    def _draw(self, force):
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        text = self.line()
        try:
            cols = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, AttributeError, ValueError):
            cols = 120
        text = text[:max(cols - 1, 20)]
        pad = max(self._width - len(text), 0)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def clear(self):
        """Erase the bar (before writing a message to the same terminal)."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
            self._last = 0.0

    def close(self):
        self.clear()
