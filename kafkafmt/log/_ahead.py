"""Telling storages what a read is about to read whole (`announce`), so that they fetch it ahead while the
reader decodes (`kafkafmt.storage.Storage.will_read`): object stores fetch it, local disks read it into the page
cache.
"""
from __future__ import annotations

from kafkafmt.log._names import LOG_SUFFIX
from kafkafmt.storage import will_read_listed

__all__ = ["announce"]


def announce(parts, skip=None):
    """Tell the storages holding the segments of ``parts`` (`Partition` s, in the order they will be read whole)
    that they are about to be read (`kafkafmt.storage.Storage.will_read`): an object store fetches small ones
    ahead, a bounded window at a time, while the ones before are decoded; a local disk is told to read them
    into its page cache. Tiered uploads (read through their layout) and segments ``skip(segment)`` says are not
    read are left out; nothing is listed here (the partitions' listings say it all)."""
    wanted, local = {}, {}
    for p in parts:
        if p.listing is None and p.segments is None:
            continue
        if p.storage.is_local and p.listing is not None:
            local.setdefault(p.storage, []).append(p.listing)      # (their files named by the storage's thread)
            continue
        for seg in p.list_segments():
            if seg.remote is None and (skip is None or not skip(seg)):
                wanted.setdefault(seg.storage, []).append((seg.log, seg.size, seg.version))
    for storage, items in wanted.items():
        storage.will_read(items)
    for storage, listings in local.items():
        will_read_listed(storage, listings, _is_log)


def _is_log(name):
    return name.endswith(LOG_SUFFIX)
