"""Decoding byte ranges of a segment -- the one place a log dir's bytes reach the decoder -- strictly or
salvaging: each corrupt stretch skipped (resynchronizing on the next entry whose header is plausible
and whose CRC verifies) and reported, batch offsets checked against their neighbours (the base offset
is outside the v2 CRC, so a damaged one is found by the batches around it).
"""
from __future__ import annotations

from kafkafmt.record import DecodeOptions, decode, next_entry
from kafkafmt.errors import CorruptRecordError, KafkafmtError
from kafkafmt.log._framing import window
from kafkafmt.log._names import segment_base
from kafkafmt.record import Records
from kafkafmt.log._notes import ReportEntry, ReportKind

__all__ = ["read_range"]


_PEEK_BYTES = 17      # an entry's framing and magic: enough to judge the batch after a range


def _tail_entry(file, recs, end):
    if recs.tail == "truncated":
        return ReportEntry(ReportKind.TRUNCATED, file, "truncated final batch", recs.valid_bytes, end)
    return ReportEntry(ReportKind.ZEROS, file, "zero-filled tail", recs.valid_bytes, end)


def _checked_decode(f, path, start, stop, options, check, after, following, peek=True):
    """decode() of [start, stop) of a file -- the one place where a log dir's bytes are decoded;
    for a segment (check), with the batch-offset sequence checked against the batch before
    (`after`: its last offset) and the entries after (peeked unless peek is False, else
    `following`). Positions in the result and in errors are the file's, whether the bytes came as
    a map or as a fetched range."""
    buf, base = window(f, start, stop + (_PEEK_BYTES if peek else 0))
    if not peek:
        buf = buf[:stop - base]      # (a local file's window is the whole map)
    try:
        recs = decode(buf, start=start - base, stop=stop - base, file=path, check_offsets=check, after_offset=after,
                      next_offset=following, **options.decode_kwargs())
    except KafkafmtError as exc:
        if not base:
            raise
        moved = type(exc)(exc.reason, file=exc.file, position=None if exc.position is None else exc.position + base,
                          offset=exc.offset)
        moved.batch_position = None if exc.batch_position is None else exc.batch_position + base
        raise moved from exc
    if base:
        recs = recs.replace(batches=recs.batches.with_column("position", recs.batches.position + base),
                            valid_bytes=recs.valid_bytes + base)
    return recs


def read_range(seg, f, start, stop, report, *, options=None, errors="strict", limit=None, after=None,
               following=None):
    """Decode the batches in [start, stop) of a segment's open file. Returns (records, resume):
    where reading should go on (a resync may look past stop up to `limit`, the segment's end).

    errors="strict": the first corrupt batch raises. errors="salvage": each corrupt stretch is
    skipped (resynchronizing on the next entry whose header is plausible and whose CRC verifies)
    and appended to `report` as a ReportEntry. `after`: the last offset before `start` (batch
    offsets must increase); `following`: the first offset after the segment (the next segment's
    base offset). A truncated or zero-filled tail is reported when `report` is a list."""
    options = DecodeOptions() if options is None else options
    path = seg.url if seg is not None else f.url
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    limit = stop if limit is None else limit
    # batch offsets increase in a segment (a record set dumped from a request need not)
    check = seg is not None and segment_base(seg.log) is not None
    if check:
        # a batch below the segment's base offset (its file name) is out of sequence too
        floor = seg.base_offset - 1
        after = floor if after is None else max(after, floor)
    else:
        after = following = None
    if errors == "strict":
        recs = _checked_decode(f, path, start, stop, options, check, after, following)
        resume = stop
    else:
        recs, resume = _salvage(f, path, start, stop, limit, report, options, check, after, following)
    if recs.tail is not None and report is not None:
        report.append(_tail_entry(path, recs, limit))
    return recs, resume


def _salvage(f, path, start, stop, limit, report, options, check, after, following):
    parts = []
    pos = start
    last_offset = after
    resume = stop
    while pos < stop:
        try:
            parts.append(_checked_decode(f, path, pos, stop, options, check, last_offset, following))
            break
        except CorruptRecordError as exc:
            bad = exc.batch_position if exc.batch_position is not None else pos
            while bad > pos:
                # the batches before the bad one, without peeking at it (an entry that follows is
                # never blamed, which could put the blame on them); judged with less context, one
                # of them may still be found at fault: it is then the bad one (bad only moves back)
                try:
                    good = _checked_decode(f, path, pos, bad, options, check, last_offset, None, peek=False)
                except CorruptRecordError as inner:
                    at = inner.batch_position if inner.batch_position is not None else pos
                    exc, bad = inner, at if pos <= at < bad else pos
                    continue
                parts.append(good)
                if len(good.batches):
                    last_offset = int(good.batches.last_offset[-1])
                break
            buf, base = window(f, bad + 1, limit)
            nxt = next_entry(buf[:limit - base], bad + 1 - base, last_offset if check else None)
            nxt = nxt + base if nxt >= 0 else nxt
            end = limit if nxt < 0 else nxt
            if report is not None:
                report.append(ReportEntry(ReportKind.CORRUPT, path, exc.reason, bad, end, exc.offset))
            pos = end
            if end >= stop:
                resume = end
                break
    if not parts:
        return decode(b"", file=path, **options.decode_kwargs()).replace(valid_bytes=resume), resume
    last = parts[-1]
    out = Records.concat(parts) if len(parts) > 1 else last
    tail, trailing = last.tail, last.trailing_bytes
    if tail == "truncated" and stop < limit:
        # cut by the chunk's end (placed by a corrupt size field), not by the segment's: the next
        # chunk starts at that batch
        tail, trailing, resume = None, 0, last.valid_bytes
    return out.replace(valid_bytes=last.valid_bytes, trailing_bytes=trailing, tail=tail), resume
