"""Writing results: stdout lines and JSON lines, aligned tables, messages on stderr that do not
tear the progress bar."""
from __future__ import annotations

import json
import sys

import numpy as np


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    if isinstance(o, bytes):
        return o.decode("utf-8", "backslashreplace")
    raise TypeError(f"cannot write {type(o).__name__} as JSON")


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=_json_default)


class Console:
    """stdout for results, stderr for messages; the progress bar (if any) is cleared before a
    message is written."""

    def __init__(self, *, quiet=False, stdout=None, stderr=None):
        self.out = stdout if stdout is not None else sys.stdout
        self.err = stderr if stderr is not None else sys.stderr
        self.quiet = quiet
        self.progress = None
        self._warned = set()

    def write(self, line):
        self.out.write(line + "\n")

    def json(self, obj):
        self.out.write(dumps(obj) + "\n")

    def message(self, text):
        """An error or result line on stderr (shown even with --quiet)."""
        if self.progress is not None:
            self.progress.clear()
        self.out.flush()
        self.err.write(text + "\n")
        self.err.flush()

    def warn(self, text, once=True):
        """A warning on stderr (not with --quiet; each text once)."""
        if self.quiet or (once and text in self._warned):
            return
        self._warned.add(text)
        self.message(f"kafkafmt: warning: {text}")

    def info(self, text):
        """A note on stderr (not with --quiet)."""
        if not self.quiet:
            self.message(text)


def table(headers, rows, right=None):
    """Aligned text columns. ``right``: set of column indices aligned right (numbers)."""
    right = set() if right is None else set(right)
    cells = [[str(c) for c in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for r in cells:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(parts).rstrip())
    return lines
