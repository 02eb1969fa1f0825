"""The cyclic garbage collector paused while a read builds many small objects that hold no cycle.

Discovering and planning thousands of partitions makes a few objects per folder (listings, `Partition`,
`Segment`, tasks); each allocation counts toward the collector's thresholds, and its full collections scan
every object alive -- so the time per partition grows with the number of partitions (20 % of a read of 20,000
small partitions went to collections that freed nothing). `paused` holds the collector off for such a phase
(nested and from several threads alike: it runs again when the last phase ends, as it was before the first);
reference counting still frees everything at once, and what cycles there are are collected afterwards.

The ``kafkafmt`` command's own process (`command_process`) also collects less often throughout: the young
generation every `COMMAND_THRESHOLDS` allocations, and the objects of its start-up (modules, the parser) left out
of every collection once the command begins (`start_up_done`). A library's caller keeps its own settings.
"""
from __future__ import annotations

import contextlib
import gc
import threading

__all__ = ["paused", "command_process", "start_up_done", "COMMAND_THRESHOLDS"]

#: the collector's thresholds in the ``kafkafmt`` command's process (CPython's defaults: 700, 10, 10): a young
#: collection every 10,000 allocations, not 700 -- a command makes tens of thousands of short-lived objects a
#: partition, few of them in cycles (the exceptions of the damage it says, with their tracebacks), so most
#: collections freed nothing; cycles are still collected, from the young generation on
COMMAND_THRESHOLDS = (10_000, 20, 10)

_lock = threading.Lock()
_depth = [0, False]        # phases under way, whether the collector was on before the first


@contextlib.contextmanager
def paused():
    """The collector off for the phase within (see the module docstring).

    Examples
    --------
    >>> import gc
    >>> from kafkafmt._util.collect import paused
    >>> with paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    with _lock:
        if _depth[0] == 0:
            _depth[1] = gc.isenabled()
            gc.disable()
        _depth[0] += 1
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0 and _depth[1]:
                gc.enable()


_command = [False]


@contextlib.contextmanager
def command_process():
    """The collector set for the ``kafkafmt`` command's own process within (`COMMAND_THRESHOLDS`; see the
    module docstring), and as it was after: a caller that runs the command's entry point in its own process
    keeps its settings."""
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    _command[0] = frozen == 0           # (a process that froze objects itself is left to its own freezing)
    gc.set_threshold(*COMMAND_THRESHOLDS)
    try:
        yield
    finally:
        if _command[0] and gc.get_freeze_count():
            gc.unfreeze()
        _command[0] = False
        gc.set_threshold(*before)


def start_up_done():
    """Within `command_process`, the objects made so far -- modules, classes, the parser -- left out of the
    collections to come (``gc.freeze``): a full collection then visits only what the command itself made.
    Nothing elsewhere."""
    if _command[0]:
        gc.freeze()
