"""Batch framing of an open file (a `kafkafmt.storage` Blob): the bytes of a range as decoder input
and the C framing scan over them. Every read of an entry's ``int64 offset, int32 size`` header goes
through here -- nowhere else unpacks framing bytes by hand.
"""
from __future__ import annotations

import numpy as np

from kafkafmt.log._names import segment_base
from kafkafmt.record import entries_end, scan_batches

__all__ = ["window", "entry_size_at", "scan_range", "whole_entries_end", "batch_at", "batch_base_offset", "last_offset_from",
           "not_kafka_reason", "not_kafka_file"]


def window(f, start, stop):
    """(array, base): the bytes [start, stop) of an open blob as NumPy uint8, with the position of
    array[0]. A local file gives its whole map (base 0, no copy); a remote one the range, fetched."""
    v = f.view()
    if v is not None:
        return v, 0
    start = max(0, min(int(start), f.size))
    stop = min(max(int(stop), start), f.size)
    return np.frombuffer(f.read(start, stop), np.uint8), start


def entry_size_at(f, pos):
    """The size field of the entry at pos (-1 when fewer than 12 bytes are left)."""
    if pos + 12 > f.size:
        return -1
    buf, base = window(f, pos, pos + 12)
    return int.from_bytes(buf[pos - base + 8:pos - base + 12].tobytes(), "big", signed=True)


def scan_range(f, start, stop, verify_crc=None):
    """The batch headers of [start, stop) of an open blob, and the scan's info (``valid_bytes``, the
    error's ``position``): positions in the file, whether the bytes came as a map or a fetched range."""
    buf, base = window(f, start, stop)
    t, info = scan_batches(buf, verify_crc=verify_crc, start=start - base, stop=stop - base)
    if base:
        t = t.with_column("position", t["position"] + base)
        info["valid_bytes"] += base
        if info["error"] is not None:
            info["error"] = dict(info["error"], position=info["error"]["position"] + base)
    return t, info


def whole_entries_end(f, start, stop):
    """(count, end): the entries `scan_range` would list in [start, stop) of an open blob and the
    file position after the last of them, without building their table (a chunk's boundary)."""
    buf, base = window(f, start, stop)
    count, end = entries_end(buf, start=start - base, stop=stop - base)
    return count, end + base


def batch_at(f, position):
    """(last offset, max timestamp) of the entry at a byte position, or None if none starts there."""
    size = entry_size_at(f, position)
    if size <= 0 or position + 12 + size > f.size:
        return None
    t, _ = scan_range(f, position, position + 12 + size)
    if not len(t) or int(t["position"][0]) != position:
        return None
    return int(t["last_offset"][0]), int(t["max_timestamp"][0])


def batch_base_offset(f):
    """The base offset of the first entry of an open blob (its first 8 bytes), None when shorter."""
    if f.size < 12:
        return None
    buf, base = window(f, 0, 12)          # base is 0: the window starts at the file's start
    return int.from_bytes(buf[:8].tobytes(), "big", signed=True)


_FRAMING_ERRORS = (1, 2, 18)    # the C scan's codes for a size too small, an unknown magic, a size too large


def not_kafka_reason(buf):
    """Why a buffer does not start with a Kafka log entry (a PNG, a text file...), or None when
    its first entry is plausible (or it is empty or zero-filled). CRCs are not judged: a damaged
    first batch is Kafka data with damage, not something else."""
    n = len(buf)
    if n == 0:
        return None
    if n < 12:
        return None if not np.asarray(buf[:n]).any() else f"{n} bytes, shorter than an entry's 12-byte header"
    size = int.from_bytes(bytes(buf[8:12]), "big", signed=True)
    stop = n if size <= 0 else min(n, 12 + size)
    t, info = scan_batches(buf, verify_crc=None, stop=stop)
    if len(t) or info["tail"] == "zeros" or (info["tail"] == "truncated" and n > 16 and int(buf[16]) <= 2
                                               and size >= 14):
        return None
    err = info["error"]
    if err is not None and err["code"] not in _FRAMING_ERRORS:
        return None     # the framing holds; the entry's contents are damaged
    reason = err["reason"] if err is not None else "no entry fits"
    return f"first entry at position 0: {reason}"


def not_kafka_file(storage, path):
    """Why a file read as Kafka data is not Kafka data (``"not a Kafka log segment: ..."``: it does
    not start with a Kafka log entry, or is empty without a segment's name), or None -- the one
    check every command makes of a file outside partition folders. An empty ``<20 digits>.log`` is a
    segment that holds nothing yet; a damaged first batch whose framing holds is Kafka data with
    damage (`not_kafka_reason`).

    Parameters
    ----------
    storage : kafkafmt.storage.Storage
        Where the file is.
    path : str
        The file, as ``storage`` names it.

    Returns
    -------
    str or None

    Examples
    --------
    >>> import os, tempfile
    >>> from kafkafmt.storage import open_storage
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "notes.log"), "w") as f:
    ...     _ = f.write("2026-01-01 INFO started\\n")
    >>> storage, _ = open_storage(folder)
    >>> not_kafka_file(storage, os.path.join(folder, "notes.log")).startswith("not a Kafka log segment: ")
    True
    >>> open(os.path.join(folder, "00000000000000000000.log"), "wb").close()
    >>> not_kafka_file(storage, os.path.join(folder, "00000000000000000000.log")) is None
    True
    """
    with storage.open(path) as f:
        if f.size == 0:
            return None if segment_base(storage.name(path)) is not None else \
                "not a Kafka log segment: the file is empty"
        why = not_kafka_reason(window(f, 0, f.size)[0])
    return None if why is None else f"not a Kafka log segment: {why}"


def last_offset_from(f, position, base_offset, step=256 << 10):
    """The last offset of the batches from ``position`` to the end of an open blob (scanned window
    by window, headers only; ``base_offset - 1`` when none is there): the end of a segment without
    reading all of it, from its last index entry's position."""
    last = base_offset - 1
    pos = min(max(0, int(position)), f.size)
    while pos < f.size:
        t, _ = scan_range(f, pos, min(f.size, pos + step), verify_crc=None)
        if len(t):
            last = max(last, int(t["last_offset"][-1]))
            pos = int(t["position"][-1] + t["size"][-1])
            continue
        size = entry_size_at(f, pos)
        if size <= 0 or pos + 12 + size > f.size:
            break                # a cut-off or damaged entry ends what can be read
        step = 12 + size         # one batch larger than the window
    return last
