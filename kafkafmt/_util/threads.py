"""Threads for kafkafmt's readers and writers: how many ``threads=None`` means (`set_cpu_count`, as
pyarrow's), and the process-wide pools each kind of work uses (`thread_pool`)."""
from __future__ import annotations

import os
import threading

__all__ = ["resolve_threads", "thread_pool", "set_cpu_count", "cpu_count"]


_pools = {}


_pools_lock = threading.Lock()


def _forget_pools():   # a forked child has none of the parent's worker threads: new pools there
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


_cpu_count = None   # set_cpu_count's setting (None: every core)


def set_cpu_count(count):
    """Set the number of threads ``threads=None`` means in every reader (as pyarrow.set_cpu_count).

    Parameters
    ----------
    count : int or None
        The number of threads; None: every core this process may run on (the default).

    Returns
    -------
    int or None
        The previous setting.

    Examples
    --------
    >>> import kafkafmt
    >>> previous = kafkafmt.set_cpu_count(2)
    >>> kafkafmt.cpu_count()
    2
    >>> kafkafmt.set_cpu_count(previous)
    2
    """
    global _cpu_count
    previous = _cpu_count
    _cpu_count = None if count is None else resolve_threads(count)
    return previous


def cpu_count():
    """The number of threads ``threads=None`` means (see `set_cpu_count`).

    Returns
    -------
    int

    Examples
    --------
    >>> import os
    >>> import kafkafmt
    >>> 1 <= kafkafmt.cpu_count() <= os.cpu_count()
    True
    """
    return resolve_threads(None)


def resolve_threads(threads=None):
    """The number of threads `threads` asks for: None or 0 = `cpu_count()` (every core this process
    may run on unless `set_cpu_count` said otherwise, as pyarrow's use_threads), else the positive
    int given."""
    if threads is None or threads == 0 or threads is True:
        if _cpu_count is not None:
            return _cpu_count
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError):   # pragma: no cover - not Linux
            return max(1, os.cpu_count() or 1)
    if threads is False:
        return 1
    threads = int(threads)
    if threads < 1:
        raise ValueError(f"threads must be a positive number (or None for all cores), not {threads}")
    return threads


def thread_pool(threads, kind="decode"):
    """A process-wide pool of `threads` workers for one kind of work ("decode": parts of one
    buffer; "tasks": segments / partitions, whose decodes may use the "decode" pool, never their own;
    "partitions": the partitions of `read_log_dirs`, read alone or in runs; "compress": runs of batches
    the encoder compresses; "fetch": an object store's reads ahead; "listing": a log dir's folders
    listed side by side; "scan": the copies' segments read and scanned a group ahead)."""
    with _pools_lock:
        pool = _pools.get((kind, threads))
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor      # (imported when a pool is first made)

            pool = _pools[(kind, threads)] = ThreadPoolExecutor(threads, thread_name_prefix=f"kafkafmt-{kind}")
        return pool
