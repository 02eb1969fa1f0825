"""The entries of a buffer, without decoding their records: the framing scan of every entry header (CRCs
checked in C), where whole entries end, several ranges scanned at once, resynchronizing after damage, the
offset sequence a log's batches must keep, and what each error code of the C loops means. The decoder
(`kafkafmt.record._decoder`) starts from `scan_entries`; `kafkafmt.log` reads framing through the public
functions.
"""
from __future__ import annotations

import numpy as np

from kafkafmt import errors
from kafkafmt._native import scan as _scan
from kafkafmt.record._table import Table

__all__ = ["scan_batches", "entries_end", "scan_ranges", "next_entry", "offset_sequence_error", "scan_entries",
           "batch_table", "as_uint8", "window", "raise_scan_error", "check_truncated_tail", "ERRORS", "NULL_WRAPPER"]

# what each error code of the C loops means: the native table (one definition), as exception classes
_KINDS = {"corrupt": errors.CorruptRecordError, "crc": errors.CrcError, "compression": errors.CompressionError,
          "limit": errors.DecompressionLimitError}
ERRORS = {code: (_KINDS[kind], message) for code, (kind, message) in _scan.ERROR_INFO.items()}
NULL_WRAPPER = _scan.ERROR_CODES["NULL_WRAPPER"]

_MAGIC_AT = 16            # position of the magic byte in every entry
_MIN_ENTRY_SIZE = 14      # the smallest size field of any entry (a v0 message)
_INT64_MAX = int(np.iinfo(np.int64).max)
_CRC_MODES = {True: _scan.CRC_STRICT_, False: _scan.CRC_REPORT_, None: _scan.CRC_SKIP_}
_TAILS = {_scan.TAIL_NONE_: None, _scan.TAIL_TRUNCATED_: "truncated", _scan.TAIL_ZEROS_: "zeros"}
_BOOL_BATCH_COLUMNS = ("crc_valid", "is_transactional", "is_control")


def as_uint8(data):
    """Any bytes-like (bytes, memoryview, mmap, a NumPy array) as a flat uint8 array, without a copy."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    if isinstance(data, memoryview) and (data.format not in ("B", "b", "c") or data.ndim != 1):
        data = data.cast("B")
    return np.frombuffer(data, dtype=np.uint8)


def raise_scan_error(err, file):
    """Raise the error of a scan's ``(code, position, offset, size)`` (the C loops' codes, or the offset
    sequence's), located in ``file``."""
    code, position, offset, size = err
    if code == _OUT_OF_SEQUENCE:
        cls, msg = errors.CorruptRecordError, size     # the message itself
    else:
        cls, msg = ERRORS.get(code, (errors.CorruptRecordError, f"malformed entry (code {code})"))
        msg = msg.format(size=size)
    exc = cls(msg, file=file, position=position, offset=offset)
    exc.batch_position = position
    raise exc


def window(buf, start, stop):
    """buf cut at stop, after checking start and stop."""
    if stop is not None:
        if not 0 <= stop <= buf.shape[0]:
            raise ValueError(f"stop={stop} is outside the data (0..{buf.shape[0]})")
        buf = buf[:stop]
    if not 0 <= start <= buf.shape[0]:
        raise ValueError(f"start={start} is outside the data (0..{buf.shape[0]})")
    return buf


# -- the offset sequence ------------------------------------------------------------------------

_OUT_OF_SEQUENCE = -1      # an error code of this module (the C loops' codes are positive)
_PEEK_ENTRIES = 2          # entries after the data looked at to judge the last batches


def _peek_offsets(buf, pos, max_batch_bytes):
    """The offset fields of up to _PEEK_ENTRIES plausible entries starting at pos (v2: the base
    offset; v0/v1: the message's offset), reading only their 12-byte framing and magic."""
    out = []
    n = buf.shape[0]
    while len(out) < _PEEK_ENTRIES and pos + _MAGIC_AT < n:
        size = int.from_bytes(buf[pos + 8:pos + 12].tobytes(), "big", signed=True)
        if size < _MIN_ENTRY_SIZE or size > max_batch_bytes or int(buf[pos + _MAGIC_AT]) > 2:
            break
        out.append(int.from_bytes(buf[pos:pos + 8].tobytes(), "big", signed=True))
        pos += 12 + size
    return out


def offset_sequence_error(base, last, after=None, following=(), trusted_following=False):
    """(index, message) of the first batch whose offsets are out of sequence -- not above the
    previous batch's last offset, or not below the next batch's base offset -- else None.

    When batches k and k+1 are out of order, the damaged one is the one whose removal restores
    the order with the batches around it (a flipped byte in k's base offset breaks k against
    k+1, but k-1 and k+1 still agree); when removing either would, the one that is not
    contiguous with its neighbours. `after`: the last offset before the first batch (already
    judged: trusted); `following`: base offsets of entries after the last batch (judged where they
    are read, never blamed here; trusted_following: they come from the next segment's file name,
    so a batch that disagrees with them is the one at fault)."""
    n = len(base)
    if n == 0:
        return None
    # one array each, built by NumPy (no Python int per batch: one-record batches make this a hot path)
    before = np.asarray([] if after is None else [after], np.int64)
    rest = np.asarray(list(following), np.int64)
    f = np.concatenate((before, np.asarray(base, np.int64), rest))
    la = np.concatenate((before, np.asarray(last, np.int64), rest))
    shift = len(before)
    bad = np.flatnonzero(f[1:] <= la[:-1])
    total = len(f)
    for i in bad.tolist():
        def restores(c):
            return c - 1 < 0 or c + 1 >= total or la[c - 1] < f[c + 1]

        def contiguous(c):
            return (c > 0 and f[c] == la[c - 1] + 1) or (c + 1 < total and f[c + 1] == la[c] + 1)

        def trusted(c):
            return (after is not None and c == 0) or (trusted_following and c - shift >= n)

        a, b = i, i + 1
        ra, rb = restores(a), restores(b)
        if ra and not rb:
            culprit = a
        elif rb and not ra:
            culprit = b
        elif ra and rb and (trusted(a) or trusted(b)):
            culprit = b if trusted(a) else a
        elif ra and rb and contiguous(b) and not contiguous(a):
            culprit = a
        else:
            culprit = b
        k = culprit - shift
        if k < 0 or k >= n:
            continue     # the batch before the data or an entry after it: judged where it is read
        prev = "" if culprit == 0 else f"previous batch ends at offset {int(la[culprit - 1])}"
        nxt = "" if culprit + 1 >= total else f"next starts at offset {int(f[culprit + 1])}"
        around = "; ".join(x for x in (prev, nxt) if x)
        return k, (f"base offset {int(f[culprit])} is out of sequence with the batches around it ({around}): "
                   f"the batch's offset field is damaged")
    return None


def next_entry(buf, start, after_offset=None, max_batch_bytes=256 << 20):
    """Resynchronize: the position of the first plausible entry at or after `start` whose CRC
    verifies (and whose offset is above `after_offset`), -1 when there is none."""
    floor = -1 if after_offset is None else min(int(after_offset) + 1, _INT64_MAX)
    return _scan.find_next_entry(as_uint8(buf), start, floor, max_batch_bytes)


def scan_entries(whole, buf, start, verify_crc, max_batch_bytes, check_offsets=False, after_offset=None,
                 next_offset=None):
    """The framing scan of ``buf`` (``whole`` cut at its stop; positions from ``start``), as `decode` begins:
    (batch table as the C scan gives it, count, valid end, tail, error or None). With ``check_offsets``
    the batches' offsets must keep a log's sequence (after ``after_offset``, before the entries that follow
    in ``whole`` or ``next_offset``): the table stops before the first batch out of sequence, which is the
    error."""
    table = _scan.scan(buf, _CRC_MODES[verify_crc], start, max_batch_bytes)
    err = table.pop("error")
    count = table.pop("count")
    valid_end = table.pop("valid_end")
    tail = _TAILS[table.pop("tail")]
    if check_offsets:
        peeked = _peek_offsets(whole, valid_end, max_batch_bytes)
        bad = offset_sequence_error(table["base_offset"], table["last_offset"], after_offset,
                                    peeked or ([] if next_offset is None else [next_offset]),
                                    trusted_following=not peeked)
        if bad is not None:
            # a batch out of sequence: what precedes it is read, then it is raised as a scan error would be
            i, msg = bad
            err = (_OUT_OF_SEQUENCE, int(table["position"][i]), None, msg)
            for name in list(table):
                table[name] = table[name][:i]
            count, tail = i, None
            valid_end = err[1]
    return table, count, valid_end, tail, err


def batch_table(t):
    """A scan's batch columns as `Records.batches` holds them: the flags as bool, the payload columns
    (the decoder's) dropped."""
    for name in _BOOL_BATCH_COLUMNS:
        t[name] = t[name].view(bool)
    t.pop("payload_start", None)
    t.pop("payload_len", None)
    return t


def check_truncated_tail(buf, valid_end, max_batch_bytes, file):
    """A size field running past the end is a cut-off tail -- unless it is a corrupt size field:
    a valid entry follows and the entry verifies (CRC) when its size is taken to end right there.
    (The size field is outside every CRC; entries found inside a cut-off entry may be its own
    payload -- a v0/v1 wrapper's inner messages, stored raw by a codec -- which do not make the
    cut entry verify.)"""
    nxt = _scan.find_next_entry(buf, valid_end + 1, -1, max_batch_bytes)
    if nxt < 0 or nxt - valid_end < _MIN_ENTRY_SIZE + 12:
        return
    entry = bytearray(buf[valid_end:nxt].tobytes())
    entry[8:12] = (nxt - valid_end - 12).to_bytes(4, "big", signed=True)
    t = _scan.scan(np.frombuffer(bytes(entry), np.uint8), _scan.CRC_REPORT_, 0, max_batch_bytes)
    if t["count"] == 1 and bool(t["crc_valid"][0]):
        exc = errors.CorruptRecordError(
            f"entry size field runs past the end of the data, yet a valid entry starts at {nxt}",
            file=file, position=valid_end)
        exc.batch_position = valid_end
        raise exc


def scan_batches(data, *, verify_crc=True, start=0, stop=None, max_batch_bytes=256 << 20):
    """The batch table alone -- every batch header, CRCs checked, nothing decompressed or decoded
    (a "shallow" iteration, as Kafka's DumpLogSegments without --deep-iteration).

    Parameters
    ----------
    data : bytes-like
        Concatenated entries, as `decode` takes them.
    verify_crc : bool or None
        True or False: CRCs computed into ``crc_valid``; None: skipped.
    start, stop : int, optional
        Scan only the entries in that byte range of data.
    max_batch_bytes : int
        A size field above this is corruption, not a truncated tail.

    Returns
    -------
    (Table, dict)
        The batch table and info, which has valid_bytes, tail and error (code, position, offset)
        or None: scanning stops at the first malformed entry instead of raising.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> with open(f"{sample_dir()}/payments-0/00000000000000000000.log", "rb") as f:
    ...     table, info = kafkafmt.scan_batches(f.read())
    >>> info
    {'count': 3, 'valid_bytes': 974, 'tail': None, 'error': None}
    >>> table["base_offset"], table["record_count"]
    (array([ 0, 20, 35]), array([20, 15, 10]...))
    """
    buf = window(as_uint8(data), start, stop)
    t = _scan.scan(buf, _CRC_MODES[verify_crc] if verify_crc is not True else _scan.CRC_REPORT_, start,
                   max_batch_bytes)
    info = dict(count=t.pop("count"), valid_bytes=t.pop("valid_end"), tail=_TAILS[t.pop("tail")])
    err = t.pop("error")
    info["error"] = None if err is None else dict(
        code=err[0], position=err[1], offset=err[2],
        reason=ERRORS.get(err[0], (None, "malformed entry"))[1].format(size=err[3]))
    return Table(batch_table(t)), info


def entries_end(data, *, start=0, stop=None, max_batch_bytes=256 << 20):
    """Where the whole entries from `start` end: the entries `scan_batches` would list (CRCs not
    judged), counted without building their table -- a reader's chunk boundary.

    Parameters
    ----------
    data : bytes-like
        Concatenated entries, as `decode` takes them.
    start, stop : int, optional
        Count only the entries in that byte range of data.
    max_batch_bytes : int
        A size field above this is corruption, not a truncated tail.

    Returns
    -------
    (int, int)
        The number of entries and the position after the last of them (`start` when none).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.record import entries_end
    >>> from kafkafmt.sample import sample_dir
    >>> with open(f"{sample_dir()}/payments-0/00000000000000000000.log", "rb") as f:
    ...     data = f.read()
    >>> entries_end(data)
    (3, 974)
    >>> entries_end(data, stop=900)
    (2, 669)
    """
    return _scan.entries_end(window(as_uint8(data), start, stop), start, max_batch_bytes)


def scan_ranges(data, starts, stops, *, verify_crc=True, max_batch_bytes=256 << 20):
    """The batch tables of several byte ranges of one buffer in one native call, each range its
    own sequence of entries -- range i scanned as `decode` scans ``data[starts[i]:stops[i]]``.

    Returns (table, ranges): the batch table of every range's entries up to its first malformed one
    (a dict of NumPy columns, the payload columns included, positions in data), and per range
    NumPy arrays "first" and "count" (its rows; each range's rows follow the range before's),
    "valid_end", "tail" (0 none, 1 truncated, 2 zeros) and "error" (0 for none; else
    "error_position", "error_offset"). Nothing is raised for
    damaged data: the caller decides (`kafkafmt.log._bulk` reads such ranges the usual way).
    """
    return _scan.scan_ranges(as_uint8(data), np.asarray(starts, np.int64), np.asarray(stops, np.int64),
                             _CRC_MODES[verify_crc], max_batch_bytes)
