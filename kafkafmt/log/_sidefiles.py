"""Kafka's side files: read and write every file a broker keeps beside its ``.log`` segments.

All binary layouts are big-endian. The facts below come from Apache Kafka's sources; the file names
are those of the ``apache/kafka`` repository (Java ``storage`` module, and the older Scala
``core/src/main/scala/kafka/log/`` files where behaviour differs by version). No code was copied.

Offset index ``<base>.index`` (OffsetIndex.java, AbstractIndex.java)
    8-byte entries ``int32 relative_offset, int32 position``: absolute offset = base offset (from the
    file name, the part before the first ``.``) + relative offset; position = byte position of a
    batch start in the ``.log``. Sparse: one entry every ``index.interval.bytes`` (default 4096).
    The active segment's file is preallocated to ``segment.index.bytes`` (default 10 MiB) of zeros
    and trimmed to ``8 * entries`` bytes when the segment is rolled or closed
    (``AbstractIndex.trimToValidSize``). Kafka itself counts entries from the file length (the file
    is trimmed on a clean close); a file copied from a running broker has a zero-filled tail, which
    ``kafka-dump-log`` (DumpLogSegments.scala) stops at: an entry with relative offset 0 after the
    first. ``OffsetIndex.sanityCheck``: length a multiple of 8; last offset >= base offset.
    ``OffsetIndex.append`` requires strictly increasing offsets.

Time index ``<base>.timeindex`` (TimeIndex.java)
    12-byte entries ``int64 timestamp, int32 relative_offset``. An entry (T, O) means: the largest
    timestamp seen up to offset O is T. ``maybeAppend`` writes only when T > last timestamp (the
    initial "last" is -1, so batches without timestamps never produce entries) and requires
    O >= last offset. ``isFull`` keeps the last slot free for the roll entry.
    ``TimeIndex.sanityCheck``: length a multiple of 12; last timestamp >= first; last offset >= base.

When a broker adds index entries (LogSegment.java ``append``/``recover``, LogSegment.scala)
    Per append: ``physicalPosition`` = current log size; the segment's max timestamp so far is
    updated (strictly greater only, so the *first* batch with the maximum wins); then, if
    ``bytesSinceLastIndexEntry > indexIntervalBytes``, an offset index entry (largest offset of the
    append, physicalPosition) and a time index entry ``maybeAppend(maxTimestampSoFar,
    offsetOfMaxTimestampSoFar)`` are added and the counter is reset; finally the counter grows by
    the appended size. ``recover`` (rebuild after an unclean shutdown) does the same per batch with
    ``validBytes - lastIndexEntry`` and takes batch last offsets for the time index. The counter
    starts at 0 whenever a LogSegment object is created, i.e. also after every broker restart.
    The final time index entry ``maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar,
    skipFullCheck=true)`` is written by ``onBecomeInactiveSegment`` (segment rolled, also for the
    cleaner's output segments), by ``close()`` (clean broker shutdown: so a cleanly stopped broker's
    *active* segment has it too) and at the end of ``recover``. It is skipped when the timestamp is
    not greater than the last entry's.
    Version differences, all invisible for one single-batch append per batch whose max timestamp is
    carried by its last record:
      * before KAFKA-16310 (PR #15621, 2024) a leader appending an uncompressed CreateTime batch
        (LogValidator ``assignOffsetsNonCompressed``) used the offset of the *record* with the max
        timestamp, not the batch's last offset; followers, recovery and the cleaner always used the
        batch's last offset ("shallow" offset); since KAFKA-16310 every path uses the shallow one;
      * before KAFKA-806 (PR #18012, 2025) an append of several batches (a follower's fetched chunk,
        the cleaner's copy buffer) added at most one index entry, for the whole append; since then
        the rule is applied per batch inside each append.

Transaction index ``<base>.txnindex`` (TransactionIndex.java, AbortedTxn.java)
    34-byte entries ``int16 version (0), int64 producer_id, int64 first_offset, int64 last_offset,
    int64 last_stable_offset``; one per aborted transaction whose ABORT marker is in the segment.
    Not preallocated; a trailing partial entry is ignored by Kafka's iterator; ``append`` requires
    strictly increasing last offsets. (``AbortedTxn.version()`` reads one byte only, the high byte
    of the int16; Kafka rejects versions > 0.)

Producer state snapshot ``<offset>.snapshot`` (ProducerStateManager.java, ProducerSnapshot.json,
ProducerStateManager.scala / ProducerIdMapping.scala)
    ``int16 version (1, the only version ever released), uint32 crc, int32 count, count * entry``;
    the CRC is crc32c over everything after the crc field (from byte 6 to the end of the file).
    Entry, 46 bytes: ``int64 producer_id, int16 epoch, int32 last_sequence, int64 last_offset,
    int32 offset_delta, int64 timestamp, int32 coordinator_epoch, int64 current_txn_first_offset``
    (-1 when no transaction is open). The file name is the snapshot's offset (the log end offset
    when it was taken). Entries are written in the broker's hash-map iteration order; readers do
    not depend on it. Bytes after the entries are covered by the CRC and otherwise ignored.

Checkpoint files (CheckpointFile.java, LeaderEpochCheckpointFile.java, OffsetCheckpointFile.java)
    UTF-8 text, lines ended by ``\\n`` (``BufferedWriter.newLine`` on Linux): version line (0),
    entry count line, one entry per line, fields separated by whitespace (``\\s+``).
    ``leader-epoch-checkpoint``: ``<epoch int32> <start_offset int64>``.
    ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
    ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``:
    ``<topic> <partition int32> <offset int64>``. An empty file reads as no entries; a version
    other than 0, a malformed line or a count that differs from the number of lines is an error.

``partition.metadata`` (PartitionMetadataFile.java, PartitionMetadata.java,
PartitionMetadataReadBuffer.java, Uuid.java)
    ``version: 0\\ntopic_id: <uuid>`` with no final newline; the topic id is the 16-byte UUID in
    URL-safe base64 without padding (22 characters). Each line splits at the first ``:\\s+``;
    versions below 0 and the all-zero UUID are rejected; later lines are ignored.

Also read here: ``quorum-state`` (KRaft, a JSON object) and ``meta.properties`` (Java properties).
"""
from __future__ import annotations

import base64
import json
import os
import re
import uuid as _uuid

import numpy as np

from kafkafmt._native.scan import crc32c
from kafkafmt._util.durable import write_atomic
from kafkafmt.errors import CorruptRecordError, CrcError, EncodeError

__all__ = [
    "INDEX_DTYPE", "TIMEINDEX_DTYPE", "TXNINDEX_DTYPE", "PRODUCER_ENTRY_DTYPE", "EPOCH_ENTRY_DTYPE",
    "offset_from_file_name",
    "read_index", "read_timeindex", "read_txnindex", "read_producer_snapshot",
    "read_leader_epoch_checkpoint", "read_offset_checkpoint", "read_partition_metadata",
    "read_quorum_state", "read_meta_properties",
    "check_index", "check_timeindex", "IndexProblem", "build_index_entries", "record_offsets_of_max_timestamp",
    "encode_index", "encode_timeindex", "encode_txnindex", "encode_producer_snapshot",
    "encode_leader_epoch_checkpoint", "encode_offset_checkpoint", "encode_partition_metadata",
    "write_index", "write_timeindex", "write_txnindex", "write_producer_snapshot",
    "write_leader_epoch_checkpoint", "write_offset_checkpoint", "write_partition_metadata",
]

# ----------------------------------------------------------------------------------------------
# dtypes: native-endian results, big-endian on-disk views

INDEX_DTYPE = np.dtype([("offset", np.int64), ("position", np.int32)])
TIMEINDEX_DTYPE = np.dtype([("timestamp", np.int64), ("offset", np.int64)])
TXNINDEX_DTYPE = np.dtype([("version", np.int16), ("producer_id", np.int64), ("first_offset", np.int64),
                           ("last_offset", np.int64), ("last_stable_offset", np.int64)])
PRODUCER_ENTRY_DTYPE = np.dtype([("producer_id", np.int64), ("epoch", np.int16), ("last_sequence", np.int32),
                                 ("last_offset", np.int64), ("offset_delta", np.int32),
                                 ("timestamp", np.int64), ("coordinator_epoch", np.int32),
                                 ("current_txn_first_offset", np.int64)])
EPOCH_ENTRY_DTYPE = np.dtype([("epoch", np.int32), ("start_offset", np.int64)])

_INDEX_DISK = np.dtype([("rel", ">i4"), ("position", ">i4")])                       # 8 bytes
_TIMEINDEX_DISK = np.dtype([("timestamp", ">i8"), ("rel", ">i4")])                  # 12 bytes
_TXNINDEX_DISK = TXNINDEX_DTYPE.newbyteorder(">")                                   # 34 bytes (packed)
_PRODUCER_DISK = PRODUCER_ENTRY_DTYPE.newbyteorder(">")                             # 46 bytes (packed)
assert (_INDEX_DISK.itemsize, _TIMEINDEX_DISK.itemsize, _TXNINDEX_DISK.itemsize,
        _PRODUCER_DISK.itemsize) == (8, 12, 34, 46)

PRODUCER_SNAPSHOT_VERSION = 1
_SNAPSHOT_HEADER = 10          # int16 version, uint32 crc, int32 entry count
_SNAPSHOT_CRC_FROM = 6         # the crc covers the bytes from the entry count to the end
TXN_INDEX_VERSION = 0
CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0

_INT32_MAX = 2**31 - 1
_INT32_MIN = -2**31
_INT64_MAX = 2**63 - 1
_INT64_MIN = -2**63
NO_TIMESTAMP = -1


# ----------------------------------------------------------------------------------------------
# helpers

def _load(src):
    """(buffer, file name or None) for a path or a bytes-like object."""
    if isinstance(src, (str, os.PathLike)):
        with open(src, "rb") as f:
            return f.read(), os.fspath(src)
    if isinstance(src, (bytes, bytearray, memoryview)):
        return memoryview(src).cast("B") if isinstance(src, memoryview) else src, None
    raise TypeError(f"expected a path or a bytes-like object, got {type(src).__name__}")


def offset_from_file_name(path) -> int:
    """Base offset of a segment file: the digits before the first ``.`` of its name (Kafka's
    ``LogFileUtils.offsetFromFileName``), e.g. 42 for ``00000000000000000042.index.deleted``."""
    name = os.path.basename(os.fspath(path))
    head = name.split(".", 1)[0]
    if not re.fullmatch(r"[0-9]{1,40}", head) or int(head) > _INT64_MAX:
        raise ValueError(f"cannot take a base offset from the file name {name!r}; pass base_offset=")
    return int(head)


def _base_offset(base_offset, name):
    if base_offset is not None:
        return int(base_offset)
    if name is None:
        return 0
    return offset_from_file_name(name)


def _used_entries(zero_mask: np.ndarray) -> int:
    """Number of entries before the zero-filled tail of a preallocated index."""
    hits = np.flatnonzero(zero_mask)
    return int(hits[0]) if hits.size else len(zero_mask)


def _column(table, name, required=True):
    try:
        return np.asarray(table[name])
    except (KeyError, IndexError, ValueError, TypeError):
        if required:
            raise ValueError(f"the batch table has no column {name!r}") from None
        return None


def _as_struct(entries, dtype: np.dtype, what: str, defaults=None) -> np.ndarray:
    """Entries given as a structured array (matched by field name), dicts or tuples -> ``dtype``."""
    defaults = defaults or {}
    if isinstance(entries, np.ndarray) and entries.dtype.names:
        out = np.empty(len(entries), dtype)
        for name in dtype.names:
            if name in entries.dtype.names:
                out[name] = entries[name]
            elif name in defaults:
                out[name] = defaults[name]
            else:
                raise EncodeError(f"{what}: field {name!r} missing")
        return out
    rows = []
    for row in entries:
        if isinstance(row, dict):
            try:
                rows.append(tuple(row[n] if n in row else defaults[n] for n in dtype.names))
            except KeyError as e:
                raise EncodeError(f"{what}: field {e.args[0]!r} missing in {row!r}") from None
        else:
            row = tuple(row)
            if len(row) != len(dtype.names):
                raise EncodeError(f"{what}: expected {len(dtype.names)} values "
                                  f"({', '.join(dtype.names)}), got {row!r}")
            rows.append(row)
    try:
        return np.array(rows, dtype=dtype) if rows else np.empty(0, dtype)
    except (OverflowError, ValueError, TypeError) as e:
        raise EncodeError(f"{what}: {e}") from None


def _check_range(values, lo, hi, what):
    values = np.asarray(values)
    bad = np.flatnonzero((values < lo) | (values > hi))
    if bad.size:
        i = int(bad[0])
        raise EncodeError(f"{what} {int(values[i])} (entry {i}) is outside [{lo}, {hi}]")


# ----------------------------------------------------------------------------------------------
# offset index / time index / transaction index: readers

def read_index(src, base_offset=None, *, trim_zeros=True) -> np.ndarray:
    """Entries of an offset index (``.index``) as a structured array (offset int64 absolute,
    position int32).

    Parameters
    ----------
    src : str, os.PathLike or bytes
        A path or bytes.
    base_offset : int, optional
        Defaults to the number in the file name (0 for bytes).
    trim_zeros : bool
        Cut the zero-filled tail of a preallocated (active-segment) file at the first all-zero
        entry, including a first entry (Kafka never indexes position 0: the first batch of a
        segment can never have crossed the index interval).

    Returns
    -------
    numpy.ndarray
        Structured, fields ``offset`` and ``position``.

    Raises
    ------
    CorruptRecordError
        A length that is not a multiple of 8 (Kafka's ``OffsetIndex.sanityCheck``).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_index(f"{sample_dir()}/orders-0/00000000000000000885.index")[:3]
    array([( 992,  5427), (1079, 10812), (1166, 16115)],
          dtype=[('offset', '<i8'), ('position', '<i4')])
    """
    data, name = _load(src)
    base = _base_offset(base_offset, name)
    n, rem = divmod(len(data), _INDEX_DISK.itemsize)
    if rem:
        raise CorruptRecordError(f"offset index is {len(data)} bytes, not a multiple of 8",
                                 file=name, position=n * _INDEX_DISK.itemsize)
    raw = np.frombuffer(data, _INDEX_DISK, count=n)
    if trim_zeros:
        n = _used_entries((raw["rel"] == 0) & (raw["position"] == 0))
    out = np.empty(n, INDEX_DTYPE)
    out["offset"] = raw["rel"][:n].astype(np.int64) + base
    out["position"] = raw["position"][:n]
    return out


def read_timeindex(src, base_offset=None, *, trim_zeros=True) -> np.ndarray:
    """Entries of a time index (``.timeindex``) as a structured array (timestamp int64, offset int64
    absolute).

    Same conventions as :func:`read_index`; the zero-filled tail starts at the first entry with
    timestamp 0 and relative offset 0 (a real first entry can only look like that if a record at
    the base offset is stamped exactly 1970-01-01T00:00:00.000Z; pass ``trim_zeros=False`` to read
    by file length as Kafka does).

    Parameters
    ----------
    src : str, os.PathLike or bytes
        A path or bytes.
    base_offset : int, optional
        Defaults to the number in the file name (0 for bytes).
    trim_zeros : bool
        Cut the zero-filled tail of a preallocated file.

    Returns
    -------
    numpy.ndarray
        Structured, fields ``timestamp`` and ``offset``.

    Raises
    ------
    CorruptRecordError
        A length that is not a multiple of 12.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_timeindex(f"{sample_dir()}/payments-0/00000000000000000000.timeindex")
    array([(1767225602090, 44)], dtype=[('timestamp', '<i8'), ('offset', '<i8')])
    """
    data, name = _load(src)
    base = _base_offset(base_offset, name)
    n, rem = divmod(len(data), _TIMEINDEX_DISK.itemsize)
    if rem:
        raise CorruptRecordError(f"time index is {len(data)} bytes, not a multiple of 12",
                                 file=name, position=n * _TIMEINDEX_DISK.itemsize)
    raw = np.frombuffer(data, _TIMEINDEX_DISK, count=n)
    if trim_zeros:
        n = _used_entries((raw["timestamp"] == 0) & (raw["rel"] == 0))
    out = np.empty(n, TIMEINDEX_DTYPE)
    out["timestamp"] = raw["timestamp"][:n]
    out["offset"] = raw["rel"][:n].astype(np.int64) + base
    return out


def read_txnindex(src) -> np.ndarray:
    """Entries of a transaction index (``.txnindex``): structured array (version int16, producer_id,
    first_offset, last_offset, last_stable_offset int64). A trailing partial entry (Kafka's reader
    silently ignores it; it can only come from a torn write) or a version other than 0 raises
    ``CorruptRecordError``.

    Parameters
    ----------
    src : str, os.PathLike or bytes
        A path or bytes.

    Returns
    -------
    numpy.ndarray
        Structured, one entry per aborted transaction.

    Raises
    ------
    CorruptRecordError
        A trailing partial entry or an unknown version.

    Examples
    --------
    The transaction the sample's ``payments`` topic aborts:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_txnindex(f"{sample_dir()}/payments-0/00000000000000000045.txnindex")
    array([(0, 1002, 35, 70, 20)],
          dtype=[('version', '<i2'), ('producer_id', '<i8'), ('first_offset', '<i8'), ('last_offset', '<i8'),
                 ('last_stable_offset', '<i8')])
    """
    data, name = _load(src)
    n, rem = divmod(len(data), _TXNINDEX_DISK.itemsize)
    if rem:
        raise CorruptRecordError(f"transaction index is {len(data)} bytes, not a multiple of 34 "
                                 f"(partial entry at the end)", file=name,
                                 position=n * _TXNINDEX_DISK.itemsize)
    raw = np.frombuffer(data, _TXNINDEX_DISK, count=n)
    bad = np.flatnonzero(raw["version"] != TXN_INDEX_VERSION)
    if bad.size:
        i = int(bad[0])
        raise CorruptRecordError(f"aborted transaction entry {i} has version {int(raw['version'][i])}, "
                                 f"only {TXN_INDEX_VERSION} exists", file=name,
                                 position=i * _TXNINDEX_DISK.itemsize)
    return raw.astype(TXNINDEX_DTYPE)


# ----------------------------------------------------------------------------------------------
# producer state snapshot

def read_producer_snapshot(src, *, verify_crc=True) -> dict:
    """A producer state snapshot (``<offset>.snapshot``).

    Parameters
    ----------
    src : str, os.PathLike or bytes
        A path or bytes.
    verify_crc : bool
        Raise ``CrcError`` on a CRC mismatch (else ``crc_valid`` is False).

    Returns
    -------
    dict
        ``dict(version, crc, computed_crc, crc_valid, offset, entries, trailing)``: ``offset``
        from the file name (None for bytes), ``entries`` a structured array with
        ``PRODUCER_ENTRY_DTYPE``, ``trailing`` the number of bytes after the entries.

    Raises
    ------
    CorruptRecordError
        A short file, an unknown version or an impossible entry count.
    CrcError
        A CRC mismatch, when ``verify_crc``.

    Examples
    --------
    The sample has no snapshot; a recovery of a copy of a partition writes one at its log end:

    >>> import shutil
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> folder = shutil.copytree(f"{sample_dir()}/payments-0", "copy/payments-0")
    >>> _ = kafkafmt.recover(folder, apply=True, backup="backup")
    >>> snap = kafkafmt.read_producer_snapshot(f"{folder}/00000000000000000122.snapshot")
    >>> snap["offset"], snap["crc_valid"]
    (122, True)
    >>> snap["entries"][["producer_id", "last_sequence", "last_offset"]].tolist()
    [(1001, 29, 59), (1002, 19, 69)]
    """
    data, name = _load(src)
    size = len(data)
    if size < _SNAPSHOT_HEADER:
        raise CorruptRecordError(f"producer snapshot is {size} bytes, its header alone is "
                                 f"{_SNAPSHOT_HEADER}", file=name, position=0)
    head = np.frombuffer(data, np.dtype([("version", ">i2"), ("crc", ">u4"), ("count", ">i4")]), count=1)[0]
    version, crc, count = int(head["version"]), int(head["crc"]), int(head["count"])
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptRecordError(f"producer snapshot has unknown version {version} "
                                 f"(only {PRODUCER_SNAPSHOT_VERSION} exists)", file=name, position=0)
    if count < 0:
        raise CorruptRecordError(f"producer snapshot has a negative entry count {count}",
                                 file=name, position=6)
    avail = (size - _SNAPSHOT_HEADER) // _PRODUCER_DISK.itemsize
    if count > avail:
        raise CorruptRecordError(f"producer snapshot is truncated: {count} entries announced, "
                                 f"{avail} present", file=name,
                                 position=_SNAPSHOT_HEADER + avail * _PRODUCER_DISK.itemsize)
    computed = int(crc32c(memoryview(data)[_SNAPSHOT_CRC_FROM:]))
    if verify_crc and computed != crc:
        raise CrcError(f"producer snapshot CRC mismatch: stored {crc:#010x}, computed {computed:#010x}",
                       file=name, position=2)
    entries = np.frombuffer(data, _PRODUCER_DISK, count=count, offset=_SNAPSHOT_HEADER)
    offset = None
    if name is not None:
        try:
            offset = offset_from_file_name(name)
        except ValueError:
            offset = None
    return {"version": version, "crc": crc, "computed_crc": computed, "crc_valid": computed == crc,
            "offset": offset, "entries": entries.astype(PRODUCER_ENTRY_DTYPE),
            "trailing": size - _SNAPSHOT_HEADER - count * _PRODUCER_DISK.itemsize}


def encode_producer_snapshot(entries) -> bytes:
    """Bytes of a version-1 producer snapshot holding ``entries`` (structured array, dicts or
    tuples in ``PRODUCER_ENTRY_DTYPE`` field order; ``coordinator_epoch`` and
    ``current_txn_first_offset`` default to -1), in the given order, with its crc32c."""
    arr = _as_struct(entries, PRODUCER_ENTRY_DTYPE, "producer snapshot",
                     defaults={"coordinator_epoch": -1, "current_txn_first_offset": -1})
    body = np.array([len(arr)], ">i4").tobytes() + arr.astype(_PRODUCER_DISK).tobytes()
    crc = int(crc32c(body))
    return (np.array([PRODUCER_SNAPSHOT_VERSION], ">i2").tobytes() + np.array([crc], ">u4").tobytes()
            + body)


def write_producer_snapshot(path, entries) -> None:
    """Write a producer snapshot (name it ``<20-digit offset>.snapshot``)."""
    write_atomic(path, encode_producer_snapshot(entries))


# ----------------------------------------------------------------------------------------------
# text files: checkpoints, partition.metadata, quorum-state, meta.properties

_JAVA_WS = "[ \t\n\x0b\f\r]+"          # java.util.regex \s (ASCII only by default)
_INT_RE = re.compile(r"[+-]?[0-9]+")


def _java_lines(data, name):
    """Lines as ``BufferedReader.readLine`` gives them (ends: \\n, \\r, \\r\\n), with their byte
    positions, decoded as strict UTF-8."""
    data = bytes(data)
    out, pos, n = [], 0, len(data)
    while pos < n:
        j = pos
        while j < n and data[j] not in (10, 13):
            j += 1
        try:
            out.append((data[pos:j].decode("utf-8"), pos))
        except UnicodeDecodeError as e:
            raise CorruptRecordError(f"line {len(out) + 1} is not valid UTF-8", file=name,
                                     position=pos + e.start) from None
        if j + 1 < n and data[j] == 13 and data[j + 1] == 10:
            pos = j + 2
        else:
            pos = j + 1
    return out


def _java_split(line):
    """``Pattern.compile("\\\\s+").split(line)``: leading empty field kept, trailing ones dropped."""
    parts = re.split(_JAVA_WS, line)
    if len(parts) > 1:
        while parts and parts[-1] == "":
            parts.pop()
    return parts


def _java_int(text, lo, hi, what, name, pos):
    # at most 19 significant digits (int64) before int(): longer ones are out of range anyway, and
    # int() refuses strings of more than 4300 digits with a ValueError
    if not _INT_RE.fullmatch(text) or len(text.lstrip("+-").lstrip("0")) > 19:
        raise CorruptRecordError(f"malformed {what} {text[:40]!r}", file=name, position=pos)
    value = int(text.lstrip("+-").lstrip("0") or "0") * (-1 if text.startswith("-") else 1)
    if not lo <= value <= hi:
        raise CorruptRecordError(f"malformed {what} {text!r}", file=name, position=pos)
    return value


def _read_checkpoint(src, n_fields, what):
    """(version or None for an empty file, [(fields, byte position)]) of a CheckpointFile."""
    data, name = _load(src)
    lines = _java_lines(data, name)
    if not lines:
        return None, [], name
    text, pos = lines[0]
    version = _java_int(text, _INT32_MIN, _INT32_MAX, f"{what} version line", name, pos)
    if version != CHECKPOINT_VERSION:
        raise CorruptRecordError(f"{what} has unrecognised version {version} "
                                 f"(expected {CHECKPOINT_VERSION})", file=name, position=pos)
    if len(lines) == 1:
        return version, [], name
    text, pos = lines[1]
    count = _java_int(text, 0, _INT32_MAX, f"{what} entry count line", name, pos)
    entries = []
    for text, pos in lines[2:]:
        fields = _java_split(text)
        if len(fields) != n_fields:
            raise CorruptRecordError(f"malformed line in {what}: {text!r}", file=name, position=pos)
        entries.append((fields, pos))
    if len(entries) != count:
        raise CorruptRecordError(f"{what} announces {count} entries but holds {len(entries)}",
                                 file=name, position=lines[1][1])
    return version, entries, name


def read_leader_epoch_checkpoint(src) -> dict:
    """``leader-epoch-checkpoint``: ``dict(version, entries)`` with ``entries`` a structured array
    (epoch int32, start_offset int64). An empty file gives version None and no entries (as Kafka).

    Parameters
    ----------
    src : str, os.PathLike or bytes
        A path or bytes.

    Returns
    -------
    dict

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_leader_epoch_checkpoint(f"{sample_dir()}/orders-0/leader-epoch-checkpoint")
    {'version': 0, 'entries': array([(3, 0)], dtype=[('epoch', '<i4'), ('start_offset', '<i8')])}
    """
    version, rows, name = _read_checkpoint(src, 2, "leader epoch checkpoint")
    out = np.empty(len(rows), EPOCH_ENTRY_DTYPE)
    for i, ((epoch, start), pos) in enumerate(rows):
        out[i] = (_java_int(epoch, _INT32_MIN, _INT32_MAX, "leader epoch", name, pos),
                  _java_int(start, _INT64_MIN, _INT64_MAX, "start offset", name, pos))
    return {"version": version, "entries": out}


def read_offset_checkpoint(src) -> dict:
    """``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
    ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``:
    ``{(topic, partition): offset}`` in file order."""
    _, rows, name = _read_checkpoint(src, 3, "offset checkpoint")
    out = {}
    for (topic, partition, offset), pos in rows:
        out[(topic, _java_int(partition, _INT32_MIN, _INT32_MAX, "partition", name, pos))] = \
            _java_int(offset, _INT64_MIN, _INT64_MAX, "offset", name, pos)
    return out


def encode_leader_epoch_checkpoint(entries) -> bytes:
    arr = _as_struct(entries, EPOCH_ENTRY_DTYPE, "leader epoch checkpoint")
    lines = [str(CHECKPOINT_VERSION), str(len(arr))]
    lines += [f"{int(e)} {int(o)}" for e, o in zip(arr["epoch"], arr["start_offset"])]
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_leader_epoch_checkpoint(path, entries) -> None:
    """Write a ``leader-epoch-checkpoint`` from ``[(epoch, start_offset), ...]``."""
    write_atomic(path, encode_leader_epoch_checkpoint(entries))


def encode_offset_checkpoint(offsets: dict) -> bytes:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    for (topic, partition), offset in offsets.items():
        if not topic or re.search(_JAVA_WS, topic):
            raise EncodeError(f"topic name {topic!r} cannot be written in a checkpoint file")
        _check_range([partition], _INT32_MIN, _INT32_MAX, "partition")
        _check_range([offset], _INT64_MIN, _INT64_MAX, "offset")
        lines.append(f"{topic} {int(partition)} {int(offset)}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_offset_checkpoint(path, offsets: dict) -> None:
    """Write an offset checkpoint file from ``{(topic, partition): offset}``."""
    write_atomic(path, encode_offset_checkpoint(offsets))


def _topic_id_bytes(topic_id) -> bytes:
    if isinstance(topic_id, _uuid.UUID):
        return topic_id.bytes
    if isinstance(topic_id, (bytes, bytearray)) and len(topic_id) == 16:
        return bytes(topic_id)
    if isinstance(topic_id, str):
        raw = _decode_kafka_uuid(topic_id)
        if raw is not None:
            return raw
    raise EncodeError(f"not a Kafka topic id: {topic_id!r} (give uuid.UUID, 16 bytes or base64)")


def _decode_kafka_uuid(text):
    """``Uuid.fromString``: URL-safe base64 (padding optional), 16 bytes; None when invalid."""
    if len(text) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]{22}(==)?", text):
        return None
    return base64.urlsafe_b64decode(text[:22] + "==")


def read_partition_metadata(src) -> dict:
    """``partition.metadata``: ``dict(version, topic_id, topic_uuid)``; ``topic_id`` is the text as
    stored (Kafka's base64 form), ``topic_uuid`` the same id as ``uuid.UUID``.

    Parameters
    ----------
    src : str, os.PathLike or bytes
        A path or bytes.

    Returns
    -------
    dict

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_partition_metadata(f"{sample_dir()}/orders-0/partition.metadata")
    {'version': 0, 'topic_id': 'iIpw9rYEWuCS81FWd553uQ', 'topic_uuid': UUID('888a70f6-b604-5ae0-92f3-5156779e77b9')}
    """
    data, name = _load(src)
    lines = _java_lines(data, name)
    values = []
    for i, key in enumerate(("version", "topic_id")):
        if i >= len(lines):
            raise CorruptRecordError(f"partition metadata has no {key} line", file=name, position=len(data))
        text, pos = lines[i]
        parts = re.split(":" + _JAVA_WS, text, maxsplit=1)
        if len(parts) != 2 or parts[0] != key:
            raise CorruptRecordError(f"malformed line in partition metadata: {text!r}", file=name, position=pos)
        values.append((parts[1], pos))
    version = _java_int(values[0][0], _INT32_MIN, _INT32_MAX, "partition metadata version", name, values[0][1])
    if version < PARTITION_METADATA_VERSION:
        raise CorruptRecordError(f"unrecognised partition metadata version {version}", file=name,
                                 position=values[0][1])
    raw = _decode_kafka_uuid(values[1][0])
    if raw is None:
        raise CorruptRecordError(f"malformed topic id {values[1][0]!r}", file=name, position=values[1][1])
    if raw == bytes(16):
        raise CorruptRecordError("partition metadata holds the all-zero topic id", file=name,
                                 position=values[1][1])
    return {"version": version, "topic_id": values[1][0], "topic_uuid": _uuid.UUID(bytes=raw)}


def encode_partition_metadata(topic_id, version=PARTITION_METADATA_VERSION) -> bytes:
    raw = _topic_id_bytes(topic_id)
    if raw == bytes(16):
        raise EncodeError("the all-zero topic id is reserved (Uuid.ZERO_UUID)")
    text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    return f"version: {int(version)}\ntopic_id: {text}".encode("ascii")


def write_partition_metadata(path, topic_id) -> None:
    """Write ``partition.metadata`` for ``topic_id`` (uuid.UUID, 16 bytes or Kafka's base64 text)."""
    write_atomic(path, encode_partition_metadata(topic_id))


def read_quorum_state(src) -> dict:
    """KRaft ``quorum-state`` (QuorumStateData as JSON): the parsed object."""
    data, name = _load(src)
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise CorruptRecordError(f"quorum-state is not valid JSON: {e}", file=name, position=0) from None
    if not isinstance(obj, dict):
        raise CorruptRecordError("quorum-state is not a JSON object", file=name, position=0)
    return obj


_PROP_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _prop_unescape(text, name):
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            c = text[i + 1]
            if c == "u":
                code = text[i + 2:i + 6]
                if not re.fullmatch(r"[0-9A-Fa-f]{4}", code):
                    raise CorruptRecordError(f"malformed \\uxxxx escape in {text!r}", file=name)
                out.append(chr(int(code, 16)))
                i += 6
                continue
            out.append(_PROP_ESCAPES.get(c, c))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _prop_put(props, logical, name):
    m = re.match(r"((?:[^\\=: \t\f]|\\.)*)[ \t\f]*[=:]?[ \t\f]*(.*)", logical, re.S)
    props[_prop_unescape(m.group(1), name)] = _prop_unescape(m.group(2), name)


def read_meta_properties(src) -> dict:
    """``meta.properties`` (``java.util.Properties`` text, ISO-8859-1): ``{key: value}``."""
    data, name = _load(src)
    text = bytes(data).decode("latin-1")
    props, pending = {}, ""
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        if (len(line) - len(line.rstrip("\\"))) % 2:          # odd backslashes: continued
            pending += line[:-1]
            continue
        _prop_put(props, pending + line, name)
        pending = ""
    if pending:
        _prop_put(props, pending, name)
    return props


# ----------------------------------------------------------------------------------------------
# index writers

def encode_index(entries, base_offset: int) -> bytes:
    """Bytes of an offset index holding ``entries`` (absolute offsets), trimmed as after a roll."""
    arr = _as_struct(entries, INDEX_DTYPE, "offset index")
    rel = arr["offset"].astype(np.int64) - int(base_offset)
    _check_range(rel, 0, _INT32_MAX, f"offset index: offset - base offset {base_offset} =")
    _check_range(arr["position"], 0, _INT32_MAX, "offset index: position")
    if len(arr) > 1 and np.any(np.diff(arr["offset"]) <= 0):
        i = int(np.flatnonzero(np.diff(arr["offset"]) <= 0)[0]) + 1
        raise EncodeError(f"offset index: offset {int(arr['offset'][i])} (entry {i}) is not greater "
                          f"than the previous one (OffsetIndex.append requires increasing offsets)")
    out = np.empty(len(arr), _INDEX_DISK)
    out["rel"] = rel
    out["position"] = arr["position"]
    return out.tobytes()


def encode_timeindex(entries, base_offset: int) -> bytes:
    """Bytes of a time index holding ``entries`` (timestamp, absolute offset)."""
    arr = _as_struct(entries, TIMEINDEX_DTYPE, "time index")
    rel = arr["offset"].astype(np.int64) - int(base_offset)
    _check_range(rel, 0, _INT32_MAX, f"time index: offset - base offset {base_offset} =")
    _check_range(arr["timestamp"], 0, _INT64_MAX, "time index: timestamp")
    if len(arr) > 1:
        if np.any(np.diff(arr["timestamp"]) <= 0):
            i = int(np.flatnonzero(np.diff(arr["timestamp"]) <= 0)[0]) + 1
            raise EncodeError(f"time index: timestamp {int(arr['timestamp'][i])} (entry {i}) is not greater "
                              f"than the previous one (TimeIndex.maybeAppend only appends larger ones)")
        if np.any(np.diff(arr["offset"]) < 0):
            i = int(np.flatnonzero(np.diff(arr["offset"]) < 0)[0]) + 1
            raise EncodeError(f"time index: offset {int(arr['offset'][i])} (entry {i}) is below the previous one")
    out = np.empty(len(arr), _TIMEINDEX_DISK)
    out["timestamp"] = arr["timestamp"]
    out["rel"] = rel
    return out.tobytes()


def encode_txnindex(aborted) -> bytes:
    """Bytes of a transaction index: ``aborted`` holds (producer_id, first_offset, last_offset,
    last_stable_offset) per aborted transaction, as tuples, dicts or a structured array."""
    fields = [f for f in TXNINDEX_DTYPE.descr if f[0] != "version"]
    arr = _as_struct(aborted, np.dtype(fields), "transaction index")
    if len(arr) > 1 and np.any(np.diff(arr["last_offset"]) <= 0):
        i = int(np.flatnonzero(np.diff(arr["last_offset"]) <= 0)[0]) + 1
        raise EncodeError(f"transaction index: last offset {int(arr['last_offset'][i])} (entry {i}) is not "
                          f"greater than the previous one (TransactionIndex.append)")
    out = np.zeros(len(arr), _TXNINDEX_DISK)
    for f, _ in fields:
        out[f] = arr[f]
    out["version"] = TXN_INDEX_VERSION
    return out.tobytes()


def _pad(data: bytes, preallocate, entry_size) -> bytes:
    if preallocate is None:
        return data
    size = (int(preallocate) // entry_size) * entry_size          # AbstractIndex.roundDownToExactMultiple
    if size < len(data):
        raise EncodeError(f"preallocate={preallocate} is smaller than the {len(data)} bytes of entries")
    return data + bytes(size - len(data))


def write_index(path, entries, base_offset=None, *, preallocate=None) -> None:
    """Write an offset index. ``base_offset`` defaults to the number in the file name.
    ``preallocate`` (bytes, e.g. 10485760) zero-fills the file as for an active segment."""
    base = offset_from_file_name(path) if base_offset is None else base_offset
    write_atomic(path, _pad(encode_index(entries, base), preallocate, _INDEX_DISK.itemsize))


def write_timeindex(path, entries, base_offset=None, *, preallocate=None) -> None:
    """Write a time index; see :func:`write_index`."""
    base = offset_from_file_name(path) if base_offset is None else base_offset
    write_atomic(path, _pad(encode_timeindex(entries, base), preallocate, _TIMEINDEX_DISK.itemsize))


def write_txnindex(path, aborted) -> None:
    """Write a transaction index (Kafka creates the file only when there is an entry)."""
    write_atomic(path, encode_txnindex(aborted))


# ----------------------------------------------------------------------------------------------
# what a broker writes: index entries for a segment

def build_index_entries(batches, index_interval_bytes=4096, rolled=True, *, time_offsets=None,
                        append_ids=None):
    """The offset index and time index entries a broker writes for a segment holding ``batches``.

    ``batches`` is ``Records.batches`` of the segment (or any table with ``size``,
    ``last_offset``, ``max_timestamp`` and optionally ``position`` columns; without ``position``
    the batches are taken to be contiguous from 0). Returns ``(index_entries, timeindex_entries)``
    with ``INDEX_DTYPE`` / ``TIMEINDEX_DTYPE``.

    Assumption: the segment was written by one broker process, one batch per append (a leader
    appending produce requests: a v2 produce request carries exactly one batch per partition, as a
    producer with linger sends it), or rebuilt by ``LogSegment.recover``; both give the same
    entries. ``append_ids`` (one id per batch, equal for consecutive batches appended together)
    models multi-batch appends of brokers before KAFKA-806 (followers, the cleaner). An index
    entry is (last offset, start position) of the first batch that starts more than
    ``index_interval_bytes`` after the previous entry's batch (after position 0 for the first); a
    time index entry (max timestamp so far, last offset of the first batch that has it) is tried
    with each and kept when its timestamp grew. ``rolled`` adds the final time index entry that
    Kafka writes when the segment is rolled, when the broker closes it on a clean shutdown, and at
    the end of a recovery; only a segment that is still open (a running broker, or a crash not yet
    recovered) lacks it.

    ``time_offsets`` (one per batch) replaces the batch's last offset as "the offset of its max
    timestamp": a leader before KAFKA-16310 used, for uncompressed CreateTime batches, the offset
    of the record carrying the max timestamp (see :func:`record_offsets_of_max_timestamp`).

    Not modelled: a broker restart in the middle of the segment resets the byte counter to 0 at
    the restart position (entries shift), and the index is cut short if it ever fills up.
    """
    if index_interval_bytes < 0:
        raise ValueError("index_interval_bytes must be >= 0")
    size = _column(batches, "size").astype(np.int64)
    n = len(size)
    last = _column(batches, "last_offset").astype(np.int64)
    ts = _column(batches, "max_timestamp").astype(np.int64)
    pos = _column(batches, "position", required=False)
    starts = np.concatenate(([0], np.cumsum(size)[:-1])) if n else np.zeros(0, np.int64)
    pos = starts if pos is None else pos.astype(np.int64)
    toff = last if time_offsets is None else np.asarray(time_offsets, np.int64)
    if len(pos) != n or len(last) != n or len(ts) != n or len(toff) != n:
        raise ValueError("batch columns differ in length")
    if n == 0:
        return np.empty(0, INDEX_DTYPE), np.empty(0, TIMEINDEX_DTYPE)

    # collapse into appends
    if append_ids is None:
        a_pos, a_bytes_before, a_last, a_ts, a_toff = pos, starts, last, ts, toff
    else:
        ids = np.asarray(append_ids)
        if len(ids) != n:
            raise ValueError("append_ids must have one id per batch")
        first = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        ends = np.concatenate((first[1:], [n])) - 1
        a_pos, a_bytes_before, a_last = pos[first], starts[first], last[ends]
        a_ts = np.maximum.reduceat(ts, first)
        group = np.repeat(np.arange(len(first)), np.diff(np.concatenate((first, [n]))))
        hit = np.flatnonzero(ts == a_ts[group])                    # first batch holding the max
        _, where = np.unique(group[hit], return_index=True)
        a_toff = toff[hit[where]]

    # offset index: bytes since the last entry's append start > interval
    chosen = []
    mark = 0
    i = int(np.searchsorted(a_bytes_before, mark + index_interval_bytes, side="right"))
    while i < len(a_pos):
        chosen.append(i)
        mark = int(a_bytes_before[i])
        i = int(np.searchsorted(a_bytes_before, mark + index_interval_bytes, side="right"))
    chosen = np.asarray(chosen, np.int64)
    index = np.empty(len(chosen), INDEX_DTYPE)
    index["offset"] = a_last[chosen]
    index["position"] = a_pos[chosen]

    # max timestamp so far (initially NO_TIMESTAMP) and the offset that first reached it
    so_far = np.maximum(np.maximum.accumulate(a_ts), NO_TIMESTAMP)
    before = np.concatenate(([NO_TIMESTAMP], so_far[:-1]))
    holder = np.maximum.accumulate(np.where(a_ts > before, np.arange(len(a_ts)), -1))
    cand = list(chosen) + ([len(a_ts) - 1] if rolled else [])
    cand = np.asarray(cand, np.int64)
    c_ts = so_far[cand]
    keep = c_ts > np.concatenate(([NO_TIMESTAMP], c_ts[:-1]))      # maybeAppend: timestamp must grow
    cand = cand[keep]
    tindex = np.empty(len(cand), TIMEINDEX_DTYPE)
    tindex["timestamp"] = so_far[cand]
    tindex["offset"] = a_toff[holder[cand]]
    return index, tindex


def record_offsets_of_max_timestamp(records) -> np.ndarray:
    """Per batch of ``records`` (a ``Records``), the offset of the first record whose timestamp is
    the batch's largest: the time index offset a pre-KAFKA-16310 leader wrote for uncompressed
    CreateTime batches. Batches without records (emptied by compaction) give their last offset."""
    nb = len(records.batches)
    out = np.asarray(records.batches.last_offset, np.int64).copy()
    if len(records) == 0 or nb == 0:
        return out
    bi = np.asarray(records.batch_index, np.int64)
    t = np.asarray(records.timestamp, np.int64)
    off = np.asarray(records.offset, np.int64)
    bmax = np.full(nb, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(bmax, bi, t)
    hit = np.flatnonzero(t == bmax[bi])
    first_b, where = np.unique(bi[hit], return_index=True)
    out[first_b] = off[hit[where]]
    return out


# ----------------------------------------------------------------------------------------------
# consistency checks against the log (used by `verify`)

class IndexProblem(str):
    """A problem found in an index file: the message, ``entry``, the index of the entry at fault
    (its byte position is entry * entry size), and ``cause``, what is wrong in words shared by every
    entry wrong the same way (so many entries wrong for one reason can be said once)."""

    def __new__(cls, entry, message, cause=None):
        self = super().__new__(cls, message)
        self.entry = int(entry)
        self.cause = cause or message
        return self


def _base_problems(offsets, base_offset, what):
    problems = []
    if base_offset is None:
        return problems
    for i in np.flatnonzero(offsets < base_offset):
        problems.append(IndexProblem(i, f"{what} entry {i}: offset {int(offsets[i])} is below the segment base offset {base_offset}",
                                     "offset below the segment's base offset"))
    for i in np.flatnonzero(offsets - base_offset > _INT32_MAX):
        problems.append(IndexProblem(i, f"{what} entry {i}: offset {int(offsets[i])} is more than 2^31-1 past the base offset "
                        f"{base_offset}", "offset more than 2^31-1 past the segment's base offset"))
    return problems


def check_index(entries, batches, base_offset=None) -> list:
    """Problems of offset index ``entries`` against the segment's ``batches`` (``Records.batches``):
    every entry must point at a batch start whose last offset is the entry's offset (as
    ``kafka-dump-log --verify-index-only`` checks), offsets and positions must strictly increase,
    offsets must lie in ``[base_offset, base_offset + 2^31-1]``. Returns a list of strings."""
    problems = []
    off = np.asarray(entries["offset"], np.int64)
    p = np.asarray(entries["position"], np.int64)
    problems += _base_problems(off, base_offset, "index")
    for i in np.flatnonzero(np.diff(off) <= 0) + 1:
        problems.append(IndexProblem(i, f"index entry {i}: offset {int(off[i])} is not greater than entry {i - 1}'s "
                        f"offset {int(off[i - 1])}", "offsets not increasing"))
    for i in np.flatnonzero(np.diff(p) <= 0) + 1:
        problems.append(IndexProblem(i, f"index entry {i}: position {int(p[i])} is not greater than entry {i - 1}'s "
                        f"position {int(p[i - 1])}", "positions not increasing"))
    bpos = _column(batches, "position").astype(np.int64)
    blast = _column(batches, "last_offset").astype(np.int64)
    order = np.argsort(bpos, kind="stable")
    bpos, blast = bpos[order], blast[order]
    if len(bpos) == 0:
        return problems + [IndexProblem(i, f"index entry {i} (offset {int(off[i])}, position {int(p[i])}): the "
                                           f"segment has no batches", "the segment has no batches")
                           for i in range(len(off))]
    at = np.searchsorted(bpos, p)
    for i in range(len(off)):
        j = int(at[i])
        if j >= len(bpos) or bpos[j] != p[i]:
            problems.append(IndexProblem(i, f"index entry {i} (offset {int(off[i])}, position {int(p[i])}): no batch starts "
                            f"at position {int(p[i])}", "no batch starts at the entry's position"))
        elif blast[j] != off[i]:
            problems.append(IndexProblem(i, f"index entry {i} (offset {int(off[i])}, position {int(p[i])}): the batch at that "
                            f"position has last offset {int(blast[j])}", "the batch at the entry's position ends at "
                            "another offset"))
    return problems


def check_timeindex(entries, batches, base_offset=None) -> list:
    """Problems of time index ``entries`` against the segment's ``batches``: timestamps strictly
    increasing (``TimeIndex.maybeAppend``), offsets not decreasing, every offset inside the segment
    and inside a batch, the entry's timestamp equal to that batch's max timestamp and not below the
    max timestamp of any earlier batch. (The offset need not be the batch's *last* offset: leaders
    before KAFKA-16310 wrote record offsets.) Returns a list of strings."""
    problems = []
    t = np.asarray(entries["timestamp"], np.int64)
    off = np.asarray(entries["offset"], np.int64)
    problems += _base_problems(off, base_offset, "time index")
    for i in np.flatnonzero(np.diff(t) <= 0) + 1:
        problems.append(IndexProblem(i, f"time index entry {i}: timestamp {int(t[i])} is not greater than entry {i - 1}'s "
                        f"timestamp {int(t[i - 1])}", "timestamps not increasing"))
    for i in np.flatnonzero(np.diff(off) < 0) + 1:
        problems.append(IndexProblem(i, f"time index entry {i}: offset {int(off[i])} is below entry {i - 1}'s offset {int(off[i - 1])}",
                                    "offsets decreasing"))
    bbase = _column(batches, "base_offset").astype(np.int64)
    blast = _column(batches, "last_offset").astype(np.int64)
    bts = _column(batches, "max_timestamp").astype(np.int64)
    if len(blast) == 0:
        return problems + [IndexProblem(i, f"time index entry {i} (timestamp {int(t[i])}, offset {int(off[i])}): "
                                           f"the segment has no batches", "the segment has no batches")
                           for i in range(len(t))]
    seg_last = int(blast.max())
    before_max = np.concatenate(([NO_TIMESTAMP], np.maximum.accumulate(bts)[:-1]))
    at = np.searchsorted(blast, off, side="left")
    for i in range(len(t)):
        label = f"time index entry {i} (timestamp {int(t[i])}, offset {int(off[i])})"
        j = int(at[i])
        if off[i] > seg_last:
            problems.append(IndexProblem(i, f"{label}: offset is past the segment's last offset {seg_last}",
                                            f"offset past the segment's last offset {seg_last}"))
        elif j >= len(blast) or bbase[j] > off[i]:
            problems.append(IndexProblem(i, f"{label}: offset is in no batch of the segment",
                                            "offset in no batch of the segment"))
        elif bts[j] != t[i]:
            problems.append(IndexProblem(i, f"{label}: the batch holding the offset has max timestamp {int(bts[j])}",
                                            "the batch holding the offset has another max timestamp"))
        elif before_max[j] > t[i]:
            problems.append(IndexProblem(i, f"{label}: an earlier batch already has the larger timestamp {int(before_max[j])}",
                                            "an earlier batch has a larger timestamp"))
    return problems
