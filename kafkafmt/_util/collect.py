"""The cyclic garbage collector paused while a read builds many small objects that hold no cycle.

Discovering and planning thousands of partitions makes a few objects per folder (listings, `Partition`,
`Segment`, tasks); each allocation counts toward the collector's thresholds, and its full collections scan
every object alive -- so the time per partition grows with the number of partitions (20 % of a read of 20,000
small partitions went to collections that freed nothing). `paused` holds the collector off for such a phase
(nested and from several threads alike: it runs again when the last phase ends, as it was before the first);
reference counting still frees everything at once, and what cycles there are are collected afterwards.
"""
from __future__ import annotations

import contextlib
import gc
import threading

__all__ = ["paused"]

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
