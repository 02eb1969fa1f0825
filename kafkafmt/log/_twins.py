"""Copies of a partition that hold the very same bytes: what one copy's check found holds for the other's log
(``kafkafmt verify`` reads each such log once, and checks every copy's side files).

Two local partition folders are *twins* when they list the same segments (base offsets and sizes) and each
segment's bytes are equal, compared in full: a batch damaged in one copy only (a flipped payload byte under
an equal CRC field) makes them differ.
"""
from __future__ import annotations

import numpy as np

__all__ = ["same_bytes"]

#: the bytes of segment files read into one buffer and compared at a time
_GROUP_BYTES = 8 << 20


def same_bytes(pairs):
    """For each ``(a, b)`` of ``pairs`` (`Partition` s: a copy read and another copy of it), whether both are local
    folders listing the same segments, of the same sizes, holding the same bytes (each file read whole, in
    groups by one native call: `kafkafmt.storage.LocalStorage.read_many`). A file that cannot be read, or reads
    shorter than listed (it changed), makes its pair differ.

    Parameters
    ----------
    pairs : list of (Partition, Partition)

    Returns
    -------
    list of bool
    """
    out = [False] * len(pairs)
    files = []              # (pair index, path of a's segment, path of b's, size)
    for i, (a, b) in enumerate(pairs):
        if not (a.storage.is_local and b.storage.is_local) or a.segments is not None or b.segments is not None:
            continue
        sa, sb = a.list_segments(), b.list_segments()
        if [(s.base_offset, s.size) for s in sa] != [(s.base_offset, s.size) for s in sb] or \
                any(s.size is None for s in sa):
            continue
        out[i] = True
        files += [(i, x.log, y.log, x.size) for x, y in zip(sa, sb) if x.size]
    groups, k = [], 0
    while k < len(files):
        group, total = [], 0
        while k < len(files) and (not group or total + 2 * files[k][3] <= _GROUP_BYTES):
            group.append(files[k])
            total += 2 * files[k][3]
            k += 1
        groups.append((group, total))
    # (one buffer, made once as large as the largest group: one made anew for each group larger than the one
    # before would leave the memory of those before it to the process)
    buf = np.empty(max((t for _, t in groups), default=0), np.uint8)
    mv = memoryview(buf)
    for group, _ in groups:
        sizes = np.array([f[3] for f in group for _ in (0, 1)], np.int64)
        starts = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=starts[1:])
        storage = pairs[group[0][0]][0].storage
        got = storage.read_many([p for f in group for p in (f[1], f[2])], buf, starts)
        for j, (i, _, _, size) in enumerate(group):
            if not out[i]:
                continue
            lo, mid, hi = int(starts[2 * j]), int(starts[2 * j + 1]), int(starts[2 * j + 2])
            if got[2 * j] != size or got[2 * j + 1] != size or mv[lo:mid] != mv[mid:hi]:
                out[i] = False
    return out
