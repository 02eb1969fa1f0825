"""Telling object stores what a read is about to read whole (`announce`), so that they fetch it ahead while the
reader decodes (`kafkafmt.storage.Storage.will_read`).
"""
from __future__ import annotations

__all__ = ["announce"]


def announce(parts, skip=None):
    """Tell the object stores holding the segments of ``parts`` (`Partition` s, in the order they will be read
    whole) that they are about to be read (`kafkafmt.storage.Storage.will_read`): small ones are fetched ahead,
    a bounded window at a time, while the ones before are decoded. Local folders, tiered uploads (read
    through their layout) and segments ``skip(segment)`` says are not read are left out; nothing is listed
    here (the partitions' listings say it all)."""
    wanted = {}
    for p in parts:
        if p.storage.is_local or (p.listing is None and p.segments is None):
            continue
        for seg in p.list_segments():
            if seg.remote is None and not seg.storage.is_local and (skip is None or not skip(seg)):
                wanted.setdefault(seg.storage, []).append((seg.log, seg.size, seg.version))
    for storage, items in wanted.items():
        storage.will_read(items)
