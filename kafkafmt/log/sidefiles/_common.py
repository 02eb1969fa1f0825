"""What every side-file module shares: the entry dtypes (native-endian results, big-endian on-disk views),
the format versions, the integer ranges, and the helpers that load a source and shape entries.
"""
from __future__ import annotations

import os
import re

import numpy as np

from kafkafmt._util.docs import doc_filler
from kafkafmt._util.files import read_whole
from kafkafmt.errors import EncodeError

__all__ = ["INDEX_DTYPE", "TIMEINDEX_DTYPE", "TXNINDEX_DTYPE", "PRODUCER_ENTRY_DTYPE", "EPOCH_ENTRY_DTYPE",
           "INDEX_DISK", "TIMEINDEX_DISK", "TXNINDEX_DISK", "PRODUCER_DISK", "PRODUCER_SNAPSHOT_VERSION",
           "SNAPSHOT_HEADER", "SNAPSHOT_CRC_FROM", "TXN_INDEX_VERSION", "CHECKPOINT_VERSION",
           "PARTITION_METADATA_VERSION", "INT32_MAX", "INT32_MIN", "INT64_MAX", "INT64_MIN", "NO_TIMESTAMP",
           "load_source", "source_doc", "offset_from_file_name", "base_offset_of", "used_entries", "table_column",
           "as_struct", "check_range"]

INDEX_DTYPE = np.dtype([("offset", np.int64), ("position", np.int32)])
TIMEINDEX_DTYPE = np.dtype([("timestamp", np.int64), ("offset", np.int64)])
TXNINDEX_DTYPE = np.dtype([("version", np.int16), ("producer_id", np.int64), ("first_offset", np.int64),
                           ("last_offset", np.int64), ("last_stable_offset", np.int64)])
PRODUCER_ENTRY_DTYPE = np.dtype([("producer_id", np.int64), ("epoch", np.int16), ("last_sequence", np.int32),
                                 ("last_offset", np.int64), ("offset_delta", np.int32),
                                 ("timestamp", np.int64), ("coordinator_epoch", np.int32),
                                 ("current_txn_first_offset", np.int64)])
EPOCH_ENTRY_DTYPE = np.dtype([("epoch", np.int32), ("start_offset", np.int64)])

INDEX_DISK = np.dtype([("rel", ">i4"), ("position", ">i4")])                       # 8 bytes
TIMEINDEX_DISK = np.dtype([("timestamp", ">i8"), ("rel", ">i4")])                  # 12 bytes
TXNINDEX_DISK = TXNINDEX_DTYPE.newbyteorder(">")                                   # 34 bytes (packed)
PRODUCER_DISK = PRODUCER_ENTRY_DTYPE.newbyteorder(">")                             # 46 bytes (packed)

PRODUCER_SNAPSHOT_VERSION = 1
SNAPSHOT_HEADER = 10          # int16 version, uint32 crc, int32 entry count
SNAPSHOT_CRC_FROM = 6         # the crc covers the bytes from the entry count to the end
TXN_INDEX_VERSION = 0
CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0

INT32_MAX = 2**31 - 1
INT32_MIN = -2**31
INT64_MAX = 2**63 - 1
INT64_MIN = -2**63
NO_TIMESTAMP = -1


#: every side-file reader's docstring: its ``%(src)s`` line is the entry of its ``src`` (`load_source`'s
#: argument), and ``%(base_offset)s`` that of an index's ``base_offset`` (`base_offset_of`'s)
source_doc = doc_filler(src="""\
src : str, os.PathLike or bytes
    A path or bytes.""", base_offset="""\
base_offset : int, optional
    Defaults to the number in the file name (0 for bytes).""")


def load_source(src):
    """(buffer, file name or None) for a path or a bytes-like object."""
    if isinstance(src, (str, os.PathLike)):
        return read_whole(src), os.fspath(src)
    if isinstance(src, (bytes, bytearray, memoryview)):
        return memoryview(src).cast("B") if isinstance(src, memoryview) else src, None
    raise TypeError(f"expected a path or a bytes-like object, got {type(src).__name__}")


def offset_from_file_name(path) -> int:
    """Base offset of a segment file: the digits before the first ``.`` of its name (Kafka's
    ``LogFileUtils.offsetFromFileName``), e.g. 42 for ``00000000000000000042.index.deleted``."""
    name = os.path.basename(os.fspath(path))
    head = name.split(".", 1)[0]
    if not re.fullmatch(r"[0-9]{1,40}", head) or int(head) > INT64_MAX:
        raise ValueError(f"cannot take a base offset from the file name {name!r}; pass base_offset=")
    return int(head)


def base_offset_of(base_offset, name):
    if base_offset is not None:
        return int(base_offset)
    if name is None:
        return 0
    return offset_from_file_name(name)


def used_entries(zero_mask: np.ndarray) -> int:
    """Number of entries before the zero-filled tail of a preallocated index."""
    hits = np.flatnonzero(zero_mask)
    return int(hits[0]) if hits.size else len(zero_mask)


def table_column(table, name, required=True):
    try:
        return np.asarray(table[name])
    except (KeyError, IndexError, ValueError, TypeError):
        if required:
            raise ValueError(f"the batch table has no column {name!r}") from None
        return None


def as_struct(entries, dtype: np.dtype, what: str, defaults=None) -> np.ndarray:
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


def check_range(values, lo, hi, what):
    values = np.asarray(values)
    bad = np.flatnonzero((values < lo) | (values > hi))
    if bad.size:
        i = int(bad[0])
        raise EncodeError(f"{what} {int(values[i])} (entry {i}) is outside [{lo}, {hi}]")
