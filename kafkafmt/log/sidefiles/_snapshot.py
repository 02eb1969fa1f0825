"""The producer state snapshot: ``<offset>.snapshot`` read and written.

Producer state snapshot ``<offset>.snapshot`` (ProducerStateManager.java, ProducerSnapshot.json,
ProducerStateManager.scala / ProducerIdMapping.scala)
    ``int16 version (1, the only version ever released), uint32 crc, int32 count, count * entry``;
    the CRC is crc32c over everything after the crc field (from byte 6 to the end of the file).
    Entry, 46 bytes: ``int64 producer_id, int16 epoch, int32 last_sequence, int64 last_offset,
    int32 offset_delta, int64 timestamp, int32 coordinator_epoch, int64 current_txn_first_offset``
    (-1 when no transaction is open). The file name is the snapshot's offset (the log end offset
    when it was taken). Entries are written in the broker's hash-map iteration order; readers do
    not depend on it. Bytes after the entries are covered by the CRC and otherwise ignored.
"""
from __future__ import annotations

import numpy as np

from kafkafmt._native.scan import crc32c
from kafkafmt._util.durable import write_atomic
from kafkafmt.errors import CorruptRecordError, CrcError
from kafkafmt.log.sidefiles._common import (PRODUCER_DISK, PRODUCER_ENTRY_DTYPE, PRODUCER_SNAPSHOT_VERSION,
                                            SNAPSHOT_CRC_FROM, SNAPSHOT_HEADER, as_struct, load_source, source_doc,
                                            offset_from_file_name)

__all__ = ["read_producer_snapshot", "encode_producer_snapshot", "write_producer_snapshot"]

@source_doc
def read_producer_snapshot(src, *, verify_crc=True) -> dict:
    """A producer state snapshot (``<offset>.snapshot``).

    Parameters
    ----------
    %(src)s
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
    data, name = load_source(src)
    size = len(data)
    if size < SNAPSHOT_HEADER:
        raise CorruptRecordError(f"producer snapshot is {size} bytes, its header alone is "
                                 f"{SNAPSHOT_HEADER}", file=name, position=0)
    head = np.frombuffer(data, np.dtype([("version", ">i2"), ("crc", ">u4"), ("count", ">i4")]), count=1)[0]
    version, crc, count = int(head["version"]), int(head["crc"]), int(head["count"])
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptRecordError(f"producer snapshot has unknown version {version} "
                                 f"(only {PRODUCER_SNAPSHOT_VERSION} exists)", file=name, position=0)
    if count < 0:
        raise CorruptRecordError(f"producer snapshot has a negative entry count {count}",
                                 file=name, position=6)
    avail = (size - SNAPSHOT_HEADER) // PRODUCER_DISK.itemsize
    if count > avail:
        raise CorruptRecordError(f"producer snapshot is truncated: {count} entries announced, "
                                 f"{avail} present", file=name,
                                 position=SNAPSHOT_HEADER + avail * PRODUCER_DISK.itemsize)
    computed = int(crc32c(memoryview(data)[SNAPSHOT_CRC_FROM:]))
    if verify_crc and computed != crc:
        raise CrcError(f"producer snapshot CRC mismatch: stored {crc:#010x}, computed {computed:#010x}",
                       file=name, position=2)
    entries = np.frombuffer(data, PRODUCER_DISK, count=count, offset=SNAPSHOT_HEADER)
    offset = None
    if name is not None:
        try:
            offset = offset_from_file_name(name)
        except ValueError:
            offset = None
    return {"version": version, "crc": crc, "computed_crc": computed, "crc_valid": computed == crc,
            "offset": offset, "entries": entries.astype(PRODUCER_ENTRY_DTYPE),
            "trailing": size - SNAPSHOT_HEADER - count * PRODUCER_DISK.itemsize}


def encode_producer_snapshot(entries) -> bytes:
    """Bytes of a version-1 producer snapshot holding ``entries`` (structured array, dicts or
    tuples in ``PRODUCER_ENTRY_DTYPE`` field order; ``coordinator_epoch`` and
    ``current_txn_first_offset`` default to -1), in the given order, with its crc32c."""
    arr = as_struct(entries, PRODUCER_ENTRY_DTYPE, "producer snapshot",
                     defaults={"coordinator_epoch": -1, "current_txn_first_offset": -1})
    body = np.array([len(arr)], ">i4").tobytes() + arr.astype(PRODUCER_DISK).tobytes()
    crc = int(crc32c(body))
    return (np.array([PRODUCER_SNAPSHOT_VERSION], ">i2").tobytes() + np.array([crc], ">u4").tobytes()
            + body)


def write_producer_snapshot(path, entries) -> None:
    """Write a producer snapshot (name it ``<20-digit offset>.snapshot``)."""
    write_atomic(path, encode_producer_snapshot(entries))
