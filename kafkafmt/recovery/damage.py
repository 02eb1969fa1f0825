"""What damaged bytes held: the offsets a damaged range of a segment removes (counted from the intact
batches around it, else from the damaged batch's own header)."""
from __future__ import annotations

__all__ = ["INT32_MAX", "lost_tuple", "first_at_stake", "lost_range", "header_last_offset"]

INT32_MAX = 2**31 - 1


def lost_tuple(first, last):
    """((first, last),) -- or () when the damaged bytes held no record (zeros: ``last`` is False)."""
    if last is False or (last is not None and last < first):
        return ()
    if last is not None and last - first > INT32_MAX:
        last = None                                 # a damaged header's delta: not believed
    return ((first, last),)


def first_at_stake(scan, path, start, floor):
    """The first offset the damaged bytes from ``start`` of a scanned segment may hold: after the
    last intact batch before them; at the start of the segment, the damaged batch's own base
    offset when its header reads as one in place (not below ``floor``, the end of the partition's
    log before this segment, nor past the next intact batch) -- a loss is counted from the
    batches, not from the file's name, which is the last resort."""
    b = scan.batches
    pos = b["position"]
    before = b["last_offset"][pos < start]
    if len(before):
        return int(before[-1]) + 1
    head = _header_offsets(path, start, start + 61)
    if head:
        after = b["base_offset"][pos > start]
        if head[0] >= (floor or 0) and (not len(after) or head[0] < int(after[0])):
            return head[0]
    return scan.base_offset if floor is None else max(scan.base_offset, floor)


def lost_range(scan, path, start, end, floor=None):
    """The offsets the damaged bytes [start, end) of a scanned segment held: from the last intact
    batch before them + 1 (`first_at_stake`) to the first intact batch after them - 1 (at the
    tail: to the last offset the damaged batch's own header gives)."""
    b = scan.batches
    first = first_at_stake(scan, path, start, floor)
    after = b["base_offset"][b["position"] >= end]
    if len(after):
        return lost_tuple(first, int(after[0]) - 1)
    return lost_tuple(first, header_last_offset(path, start, end))


def _header_offsets(path, start, end):
    """(base offset, last offset) the batch header at ``start`` gives (last None when unreadable),
    None when it is not a header, False when the bytes are zeros (no record)."""
    with open(path, "rb") as f:
        f.seek(start)
        head = f.read(min(end - start, 61))
    if not any(head):
        return False
    base = int.from_bytes(head[0:8], "big", signed=True) if len(head) >= 8 else -1
    if base < 0:
        return None
    if len(head) >= 27 and head[16] == 2:
        delta = int.from_bytes(head[23:27], "big", signed=True)
        return base, base + delta if delta >= 0 else None
    if len(head) >= 17 and head[16] in (0, 1):
        return base, base                                               # a v0/v1 entry's (last) offset
    return None


def header_last_offset(path, start, end):
    """The last offset the batch header at ``start`` gives (None when unreadable; False when the
    bytes are zeros: no record)."""
    head = _header_offsets(path, start, end)
    return head if head is False else None if head is None else head[1]
