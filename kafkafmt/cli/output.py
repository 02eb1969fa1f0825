"""Writing results: stdout lines and JSON lines, aligned tables, messages on stderr that do not
tear the progress bar."""
from __future__ import annotations

import contextlib
import json
import os
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


#: one encoder for every line (json.dumps with options builds a new one per call: a fifth of a dump --json)
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_json_default)


def dumps(obj):
    return _ENCODER.encode(obj)


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

    def text(self, text):
        """Text on stdout as it is (no line end added)."""
        self.out.write(text)

    def json(self, obj):
        self.out.write(dumps(obj) + "\n")

    @property
    def gone(self):
        """Whether stdout's reader went away (``| head``): a command that streams its output stops there
        (`reader_may_go_away`)."""
        return bool(getattr(self.out, "gone", False))

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


class _ReaderMayGoAway:
    """A text stream (stdout, stderr) whose reader may go away (``kafkafmt dump ... | head -1``): from
    the first write that finds the pipe closed (EPIPE), the stream's file descriptor is os.devnull,
    writes are dropped and ``gone`` is true -- no traceback, no "Broken pipe" message. A command that
    streams what it prints (``dump``, ``export --to -``) sees it (`Console.gone`) and stops reading, as
    kcat and kafka-dump-log stop; its exit code is that of what it read (1 if that held a problem); a
    command that prints only at its end runs to its end. Its ``buffer`` (bytes written beneath the
    text, as export's rows are) is guarded alike and shares its fate."""

    def __init__(self, stream, state=None):
        self._stream = stream
        self._state = {"gone": False} if state is None else state

    @property
    def gone(self):
        return self._state["gone"]

    @property
    def buffer(self):
        return _ReaderMayGoAway(self._stream.buffer, self._state)

    def _went_away(self):
        self._state["gone"] = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())   # what the stream still buffers goes there at exit
            finally:
                os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text):
        if not self.gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._went_away()
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._went_away()

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def reader_may_go_away():
    """Within: ``sys.stdout`` and ``sys.stderr`` keep working after their reader went away (see
    `_ReaderMayGoAway`); restored after."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ReaderMayGoAway(sys.stdout), _ReaderMayGoAway(sys.stderr)
    try:
        yield
    finally:
        for guarded in (sys.stdout, sys.stderr):
            if isinstance(guarded, _ReaderMayGoAway):
                guarded.flush()
        sys.stdout, sys.stderr = saved


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
