"""Whole small objects of a remote store, kept and fetched ahead of a reader: `ObjectCache`.

* An object read whole (a segment or a side file no larger than the read-ahead) is kept, up to ``budget`` bytes,
  the least recently used going first. It is kept under its content when the version it was listed with names
  the content (S3's ETag: the copies of a partition holding the same segment are fetched once), else under its
  path and version; an object listed without a version is never kept (nothing would tell a later version
  apart).
* `ObjectCache.prefetch`: the objects a reader is about to read, in the order it reads them, fetched by a bounded
  pool of threads (`FETCH_THREADS`) at most ``window`` bytes ahead of the last one it took -- so a reader
  decoding on one thread waits for the first request only, and memory stays bounded whatever the number of
  objects. Errors of a fetch done ahead are raised to the reader that takes the object, as its own fetch would.
"""
from __future__ import annotations

import collections
import threading

from kafkafmt._util.threads import thread_pool

__all__ = ["ObjectCache", "DEFAULT_OBJECT_CACHE", "DEFAULT_FETCH_AHEAD", "FETCH_THREADS", "PLANS"]

DEFAULT_OBJECT_CACHE = 128 << 20     # bytes of whole objects kept per storage
DEFAULT_FETCH_AHEAD = 32 << 20       # bytes fetched ahead of a reader
FETCH_THREADS = 8                    # requests in flight at once (about what one HTTP client keeps open)
PLANS = 8                            # readers' plans followed at once (`ObjectCache.prefetch`)


class _Plan:
    """The objects announced by one `ObjectCache.prefetch`, in reading order: ``sizes`` count each content
    once (an object whose content comes earlier costs nothing), ``first`` maps a key to its first place."""

    def __init__(self, items):
        self.items = items
        self.first = {}
        self.ends = [0]                  # bytes of the items before each place (and in all)
        for i, (key, _path, size, _version) in enumerate(items):
            fresh = key not in self.first
            if fresh:
                self.first[key] = i
            self.ends.append(self.ends[-1] + (size if fresh else 0))
        self.next = 0                    # the first item not scheduled yet
        self.taken = 0                   # one past the furthest item the reader took


class ObjectCache:
    """Whole objects of one storage (see the module doc). ``fetch(path, size, version)`` gets an object's bytes
    (one request, retried as the storage retries); ``key(path, version)`` what names its content (None: not
    kept)."""

    def __init__(self, fetch, key, budget=DEFAULT_OBJECT_CACHE, window=DEFAULT_FETCH_AHEAD):
        self._fetch = fetch
        self.key = key
        self.budget = int(budget)
        self.window = int(window)
        self._items = collections.OrderedDict()      # key -> Future of the bytes (done or in flight)
        self._sizes = {}
        self._bytes = 0
        self._plans = []                             # the readers' plans, the newest last
        self._lock = threading.Lock()

    def get(self, path, size, version):
        """(the object's bytes, whether this call fetched them): kept, being fetched ahead, or fetched now (and
        kept); a failed fetch raises."""
        key = self.key(path, version) if self.budget else None
        if key is None:
            return self._fetch(path, size, version), True
        with self._lock:
            fut = self._items.get(key)
            mine = fut is None
            if mine:
                fut = self._add(key, size)
            else:
                self._items.move_to_end(key)
            self._took(key)
        if mine:
            self._run(key, fut, path, size, version)
        return fut.result(), mine

    def prefetch(self, items):
        """Fetch ``(path, size, version)`` objects ahead of a reader that reads them in this order (each reader
        -- a thread reading its share -- with a plan of its own; at most `PLANS` are followed, the oldest
        dropped)."""
        if not self.budget:
            return
        plan = []
        for path, size, version in items:
            key = self.key(path, version)
            if key is not None and size:
                plan.append((key, path, int(size), version))
        if not plan:
            return
        with self._lock:
            self._plans = self._plans[-(PLANS - 1):] + [_Plan(plan)]
            self._pump(self._plans[-1])

    @property
    def nbytes(self):
        """Bytes of the objects kept or in flight."""
        return self._bytes

    # -- with the lock held ---------------------------------------------------------------------
    def _add(self, key, size):
        from concurrent.futures import Future     # (when objects are read: a local read does not import it)

        fut = Future()
        self._items[key] = fut
        self._sizes[key] = size
        self._bytes += size
        excess, victims = self._bytes - self.budget, []
        for old, f in self._items.items():          # the least recently used first, none in flight
            if excess <= 0:
                break
            if f.done() and old != key:
                victims.append(old)
                excess -= self._sizes[old]
        for old in victims:
            self._drop(old)
        return fut

    def _drop(self, key):
        self._items.pop(key, None)
        self._bytes -= self._sizes.pop(key, 0)

    def _took(self, key):
        for plan in list(self._plans):
            i = plan.first.get(key)
            if i is not None and i >= plan.taken:
                plan.taken = i + 1
                self._pump(plan)

    def _pump(self, plan):
        plan.next = max(plan.next, plan.taken)
        pool = None
        while plan.next < len(plan.items) and (plan.next == plan.taken
                                               or plan.ends[plan.next + 1] - plan.ends[plan.taken] <= self.window):
            key, path, size, version = plan.items[plan.next]
            plan.next += 1
            if key in self._items:
                self._items.move_to_end(key)
                continue
            fut = self._add(key, size)
            pool = pool or thread_pool(FETCH_THREADS, "fetch")
            pool.submit(self._run, key, fut, path, size, version)
        if plan.next >= len(plan.items) and plan in self._plans:
            self._plans.remove(plan)

    # -- without it -------------------------------------------------------------------------------
    def _run(self, key, fut, path, size, version):
        try:
            data = self._fetch(path, size, version)
        except BaseException as exc:       # noqa: BLE001 - the reader taking it raises it
            with self._lock:
                if self._items.get(key) is fut:
                    self._drop(key)
            fut.set_exception(exc)
            return
        fut.set_result(data)
