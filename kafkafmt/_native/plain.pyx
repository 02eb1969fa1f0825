# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The plain cases, each told in one pass over a few columns: a chunk's figures (``kafkafmt stats``, the
report), a chunk's checks (``verify``, the report), a checked segment's batches taken as `recover`'s scan of it.

A cluster has thousands of chunks and segments of a few batches each, where a NumPy call per figure or per
condition costs more than the figure. Each function here tells whether its case is plain and then gives what
the Python side needs at once; the Python side keeps the general way for everything else, and a NumPy twin
of each function for columns of other types (a ValueError from the typed views):

* `plain_figures`: the usual chunk of `kafkafmt.report.figures.PartitionStats` -- one segment's batches, all
  of one codec, message format and timestamp type, none transactional or control -- and its sums, minima and
  maxima;
* `plain_checks`: a chunk plainly sound for `kafkafmt.report.checks.Checker`, counted at once;
* `plain_scan`: a segment's batch table that is the whole file, intact and in sequence
  (`kafkafmt.recovery.scan_of_batches`).
"""
from libc.stdint cimport uint8_t, int8_t, int32_t, int64_t

cdef enum:
    SEVERAL_ = -2

#: what `plain_figures` gives for ``producer`` when the batches have several producer ids (NumPy finds them)
SEVERAL = SEVERAL_


cdef _same_length(Py_ssize_t n, lengths, what):
    """ValueError unless every one of ``lengths`` is ``n`` (``what``: the columns, as the message names them)."""
    for length in lengths:
        if length != n:
            raise ValueError(f"the {what} columns differ in length")


def plain_figures(const int64_t[:] segment, const int8_t[:] codec, const int8_t[:] magic,
                  const int8_t[:] timestamp_type, const uint8_t[:] is_control, const uint8_t[:] is_transactional,
                  const int32_t[:] size, const int64_t[:] base_offset, const int64_t[:] last_offset,
                  const int64_t[:] producer_id, const int32_t[:] epoch, const int64_t[:] timestamp):
    """The figures of a plain chunk, or None when it is not plain (or has no batch).

    Parameters
    ----------
    segment, codec, magic, timestamp_type, is_control, is_transactional, size, base_offset, last_offset, producer_id, epoch
        The chunk's batch columns (the bool ones viewed as uint8), one value a batch.
    timestamp
        Its records' timestamps (-1: none).

    Returns
    -------
    tuple or None
        ``(stored bytes, first base offset, last offset, smallest and largest record timestamp of the stamped
        records or None, unstamped records, producer id -- -1 none, `SEVERAL` several --, smallest and largest
        leader epoch)``.
    """
    cdef Py_ssize_t nb = segment.shape[0], n = timestamp.shape[0], i
    cdef int64_t stored = 0, first, last, ts_lo = 0, ts_hi = 0, unstamped = 0, pid = -1, t
    cdef int64_t e_lo, e_hi
    cdef bint stamped = False, plain = True
    _same_length(nb, (codec.shape[0], magic.shape[0], timestamp_type.shape[0], is_control.shape[0],
                      is_transactional.shape[0], size.shape[0], base_offset.shape[0], last_offset.shape[0],
                      producer_id.shape[0], epoch.shape[0]), "batch")
    if nb == 0:
        return None
    first, last = base_offset[0], last_offset[0]
    e_lo = e_hi = epoch[0]
    with nogil:
        for i in range(nb):
            if (segment[i] != segment[0] or codec[i] != codec[0] or magic[i] != magic[0]
                    or timestamp_type[i] != timestamp_type[0] or is_control[i] or is_transactional[i]):
                plain = False
                break
            stored += size[i]
            if base_offset[i] < first:
                first = base_offset[i]
            if last_offset[i] > last:
                last = last_offset[i]
            if epoch[i] < e_lo:
                e_lo = epoch[i]
            if epoch[i] > e_hi:
                e_hi = epoch[i]
            if producer_id[i] >= 0 and pid != SEVERAL_:
                if pid == -1:
                    pid = producer_id[i]
                elif producer_id[i] != pid:
                    pid = SEVERAL_
        if plain:
            for i in range(n):
                t = timestamp[i]
                if t < 0:
                    unstamped += 1
                elif not stamped:
                    ts_lo = ts_hi = t
                    stamped = True
                elif t < ts_lo:
                    ts_lo = t
                elif t > ts_hi:
                    ts_hi = t
    if not plain:
        return None
    return (stored, first, last, ts_lo if stamped else None, ts_hi if stamped else None, unstamped, pid,
            e_lo, e_hi)


def plain_checks(const int64_t[:] segment, const int64_t[:] position, const int64_t[:] base_offset,
                 const int64_t[:] last_offset, const uint8_t[:] is_control, const int64_t[:] offset,
                 const int32_t[:] batch_index, log_start, prev_last, int64_t lowest_base):
    """Whether a chunk is plainly sound for the checks, and then what they count of it, in one pass.

    Plainly sound: one segment's batches at increasing positions, each holding offsets ``base..last`` with
    ``last >= base`` and ``base`` above every offset before it (``prev_last`` -- the previous chunk's, or None
    -- included) and not below ``lowest_base``; each record's offset inside its batch's and above the record's
    before it.

    Parameters
    ----------
    segment, position, base_offset, last_offset, is_control
        The chunk's batch columns (``is_control`` viewed as uint8).
    offset, batch_index
        Its records' offsets and batch rows.
    log_start : int or None
        The partition's log start offset: data records below it are counted apart.
    prev_last : int or None
    lowest_base : int
        The smallest base offset a batch may have (its segment's, when the chunk is a segment's).

    Returns
    -------
    tuple or None
        ``(highest last offset so far, data records served, data records below the log start)``; None when
        the chunk has no batch or is not plainly sound (the checks then go batch by batch and say why).
    """
    cdef Py_ssize_t nb = base_offset.shape[0], n = offset.shape[0], i, r
    cdef int64_t top, start = 0, served = 0, below = 0, prev = 0
    cdef int32_t j
    cdef bint has_start = log_start is not None, has_prev = prev_last is not None, sound = True
    _same_length(nb, (segment.shape[0], position.shape[0], last_offset.shape[0], is_control.shape[0]), "batch")
    _same_length(n, (batch_index.shape[0],), "record")
    if nb == 0:
        return None
    if has_start:
        start = log_start
    if has_prev:
        prev = prev_last
    with nogil:
        top = last_offset[0]
        for i in range(nb):
            if (segment[i] != segment[0] or last_offset[i] < base_offset[i] or base_offset[i] < lowest_base
                    or (i and (position[i] <= position[i - 1] or base_offset[i] <= top))
                    or (i == 0 and has_prev and base_offset[0] <= prev)):
                sound = False
                break
            if last_offset[i] > top:
                top = last_offset[i]
        if sound:
            for r in range(n):
                j = batch_index[r]
                if (j < 0 or j >= nb or offset[r] < base_offset[j] or offset[r] > last_offset[j]
                        or (r and offset[r] <= offset[r - 1])):
                    sound = False
                    break
                if not is_control[j]:
                    if has_start and offset[r] < start:
                        below += 1
                    else:
                        served += 1
    if not sound:
        return None
    if has_prev and prev > top:
        top = prev
    return top, served, below


def plain_scan(const int64_t[:] position, const int32_t[:] size, const uint8_t[:] crc_valid,
               const int8_t[:] magic, const int64_t[:] base_offset, const int64_t[:] last_offset,
               int64_t file_size, int64_t max_batch_bytes, int64_t floor):
    """Whether a segment's batch table (a read's, every CRC checked) is plainly its whole file, intact and in
    sequence: batches of message format 2 one after the other from byte 0 to ``file_size``, none over
    ``max_batch_bytes``, every CRC valid, each batch's offsets ``base..last`` with ``last >= base`` and ``base``
    above the previous batch's last, the first not below ``floor`` and the last within 2^31-1 of it.

    Returns
    -------
    bool
        False also for a table without batches (the caller says what an empty file is).
    """
    cdef Py_ssize_t n = position.shape[0], i
    cdef bint ok = True
    _same_length(n, (size.shape[0], crc_valid.shape[0], magic.shape[0], base_offset.shape[0], last_offset.shape[0]),
                 "batch")
    if n == 0:
        return False
    with nogil:
        for i in range(n):
            if (position[i] != (0 if i == 0 else position[i - 1] + size[i - 1]) or size[i] > max_batch_bytes
                    or not crc_valid[i] or magic[i] != 2 or last_offset[i] < base_offset[i]
                    or (i and base_offset[i] <= last_offset[i - 1])):
                ok = False
                break
        if ok:
            ok = (position[n - 1] + size[n - 1] == file_size and base_offset[0] >= floor
                  and last_offset[n - 1] - floor <= 2147483647)
    return ok
