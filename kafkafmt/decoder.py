"""The decoding facade: framing scan -> per-batch decompression -> one C kernel call per chunk.

1. `_native.scan.scan` reads every batch header (magic-dispatched per entry) and checks CRCs in C.
2. Compressed batches are decompressed here, once per batch, by the codec named in their
   attributes (`kafkafmt.codecs`), on memoryviews of the input; at most ``chunk_bytes`` of
   decompressed data are alive at once.
3. `_native.kernel.Columns.run` decodes the records of a whole chunk of batches into NumPy
   arrays in one call (without the GIL); it asks for larger outputs when the data needs them.
4. The arrays become a `Records` (Arrow layout, so `to_arrow()` shares them).
"""
from __future__ import annotations

import mmap
import os
import re

import numpy as np

from kafkafmt import errors
from kafkafmt._native import kernel as _kernel
from kafkafmt._native import scan as _scan
from kafkafmt.codecs import get_codec
from kafkafmt.codecs import base as _codec_base
from kafkafmt.records import BinaryColumn, Headers, Records, Table

__all__ = ["decode", "read_segment", "scan_batches"]

# what each error code of the C loops means
_ERRORS = {
    1: (errors.CorruptRecordError, "entry size {size} is smaller than the minimum for its magic"),
    2: (errors.CorruptRecordError, "unknown magic byte"),
    3: (errors.CrcError, "CRC mismatch: the stored checksum does not match the batch's bytes"),
    4: (errors.CorruptRecordError, "record count is negative or larger than the batch can hold"),
    5: (errors.CorruptRecordError, "a record runs past the end of its batch"),
    6: (errors.CorruptRecordError, "varint longer than allowed"),
    7: (errors.CorruptRecordError, "negative header key length or header count"),
    8: (errors.CorruptRecordError, "record size field disagrees with the record's contents"),
    9: (errors.CorruptRecordError, "bytes left in the batch after its declared records"),
    10: (errors.CorruptRecordError, "compressed message inside a compressed wrapper"),
    11: (errors.CorruptRecordError, "compressed wrapper holds no messages"),
    12: (errors.CorruptRecordError, "inner message has an invalid magic"),
    13: (errors.CorruptRecordError, "v1 wrapper offset is below its last inner relative offset"),
    14: (errors.CorruptRecordError, "control record key is shorter than version + type"),
    15: (errors.CorruptRecordError, "compressed wrapper has a null value"),
    16: (errors.CrcError, "CRC mismatch in a message inside a compressed wrapper"),
    18: (errors.CorruptRecordError, "entry size {size} exceeds the largest allowed batch size (max_batch_bytes)"),
    19: (errors.CompressionError, "compressed records do not decompress"),
    20: (errors.DecompressionLimitError, "compressed records decompress to more than max_decompressed bytes"),
    21: (errors.CompressionError, "out of memory while decompressing"),
}

def _find_libraries():
    """Paths of libzstd and liblz4 for in-kernel decompression (KAFKAFMT_PY_CODECS=1: none)."""
    if os.environ.get("KAFKAFMT_PY_CODECS"):
        return None, None
    import ctypes.util

    zstd = ctypes.util.find_library("zstd")
    if zstd is None:
        for cand in ("libzstd.so.1", "libzstd.1.dylib"):
            try:
                ctypes.CDLL(cand)
                zstd = cand
                break
            except OSError:
                pass
    lz4 = None
    try:  # python-lz4's extension carries liblz4 and exports its functions
        import lz4.block._block as _lz4block

        lz4 = _lz4block.__file__
    except ImportError:  # pragma: no cover
        lz4 = ctypes.util.find_library("lz4")
    return zstd, lz4


C_CODECS = _kernel.load_codecs(*_find_libraries())   # codec bits the kernel decompresses itself

_MAX_RATIO_AHEAD = 16     # compression ratio assumed at most when reserving outputs ahead
_CRC_MODES = {True: _scan.CRC_STRICT_, False: _scan.CRC_REPORT_, None: _scan.CRC_SKIP_}
_TAILS = {_scan.TAIL_NONE_: None, _scan.TAIL_TRUNCATED_: "truncated", _scan.TAIL_ZEROS_: "zeros"}
# a partition folder: <topic>-<partition> (topic names may hold dashes and dots)
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_BOOL_BATCH_COLUMNS = ("crc_valid", "is_transactional", "is_control")


def _as_uint8(data):
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    if isinstance(data, memoryview) and (data.format not in ("B", "b", "c") or data.ndim != 1):
        data = data.cast("B")
    return np.frombuffer(data, dtype=np.uint8)


def _raise_scan_error(err, file):
    code, position, offset, size = err
    cls, msg = _ERRORS.get(code, (errors.CorruptRecordError, f"malformed entry (code {code})"))
    exc = cls(msg.format(size=size), file=file, position=position, offset=offset)
    exc.batch_position = position
    raise exc


class _Decompressor:
    """Per-batch decompression with the batch table's columns as Python lists (one conversion,
    not one NumPy scalar per field per batch) and codec objects looked up once."""

    def __init__(self, buf, table, max_decompressed, file):
        self.mv = memoryview(buf)
        self.codec = table["codec"].tolist()
        self.magic = table["magic"].tolist()
        self.start = table["payload_start"].tolist()
        self.length = table["payload_len"].tolist()
        self.table = table
        self.max = max_decompressed
        self.file = file
        self.codecs = {}

    def where(self, b):
        return dict(file=self.file, position=int(self.table["position"][b]),
                    offset=int(self.table["base_offset"][b]))

    def __call__(self, b):
        codec_id, magic, start, length = self.codec[b], self.magic[b], self.start[b], self.length[b]
        try:
            codec = self.codecs.get(codec_id)
            if codec is None:
                codec = self.codecs[codec_id] = get_codec(codec_id)
            if magic < 2:
                if length < 0:
                    raise errors.CorruptRecordError(_ERRORS[15][1])
                if codec_id == 4:
                    raise errors.UnsupportedCodecError("zstd is not allowed in v0/v1 messages")
            return codec.decompress(self.mv[start:start + length], max_size=self.max, magic=magic)
        except errors.KafkafmtError as exc:
            located = exc.located(**self.where(b))
            located.batch_position = int(self.table["position"][b])
            raise located from exc


def decode(data, *, verify_crc=True, include_control=False, file=None, topic=None, partition=None,
           keys=True, values=True, headers=True, max_decompressed=None, max_batch_bytes=256 << 20,
           chunk_bytes=1 << 20, start=0, stop=None) -> Records:
    """Decode a buffer of Kafka record batches / message sets into columns.

    data: any bytes-like (bytes, bytearray, memoryview, mmap, NumPy uint8 array) holding
    concatenated entries: a segment's contents, a Fetch response's record set...
    verify_crc: True checks every CRC and raises CrcError on a mismatch; False computes them into
    ``batches.crc_valid`` without raising; None skips them.
    include_control: keep control records (transaction markers, KRaft records) as data rows too
    (they are always in ``controls``).
    keys / values / headers: False skips copying that column (faster metadata-only decoding).
    max_decompressed: cap on the decompressed size of one batch (default: the codec's default).
    max_batch_bytes: a size field above this is corruption (Kafka: maxMessageSize), not a
    truncated tail.
    chunk_bytes: decompressed bytes handed to the C kernel per call (cache-sized by default).
    start / stop: decode only the entries in that byte range of data (positions in the batch table
    and in errors stay those of data).
    file: a name used in error messages.
    """
    buf = _as_uint8(data)
    if stop is not None:
        if not 0 <= stop <= buf.shape[0]:
            raise ValueError(f"stop={stop} is outside the data (0..{buf.shape[0]})")
        buf = buf[:stop]
    if not 0 <= start <= buf.shape[0]:
        raise ValueError(f"start={start} is outside the data (0..{buf.shape[0]})")
    table = _scan.scan(buf, _CRC_MODES[verify_crc], start, max_batch_bytes)
    err = table.pop("error")
    count = table.pop("count")
    valid_end = table.pop("valid_end")
    tail = _TAILS[table.pop("tail")]
    # a malformed entry is raised only after the good entries before it are decoded: a record-level
    # fault in one of them comes first in the data, so it is the one to report

    codec = table["codec"]
    counts = table["record_count"]
    # the cleaner leaves v2 batches without records and without payload, whatever their codec bits
    needs = (codec != 0) & ((table["magic"] < 2) | (counts > 0) | (table["payload_len"] > 0))
    # lz4 / zstd v2 batches are decompressed by the kernel itself when their libraries loaded
    in_kernel = needs & (table["magic"] == 2) & (((C_CODECS >> codec.astype(np.int64)) & 1) == 1)
    compressed = np.flatnonzero(needs & ~in_kernel)
    plain = codec == 0
    plain_bytes = int(table["payload_len"][plain].clip(0).sum())
    # record counts of uncompressed batches were checked against their size by the scan; those of
    # compressed batches are checked against the decompressed size, chunk by chunk, before use
    n_est = int(counts[plain].sum()) + 1
    ctrl_est = int(counts[plain & table["is_control"]].sum())
    cols = _kernel.Columns(
        n_est, plain_bytes // 4 + 1024, plain_bytes + 1024, headers=max(16, n_est // 8),
        controls=ctrl_est, want_keys=keys, want_values=values, want_headers=headers,
        include_control=include_control, verify_crc=bool(verify_crc), c_codecs=C_CODECS,
        max_decompressed=_codec_base.DEFAULT_MAX_DECOMPRESSED if max_decompressed is None else max_decompressed)
    if in_kernel.any():
        # their decompressed sizes show only in the kernel: reserve for a 6x ratio (address space
        # only: untouched pages cost nothing and the arrays shrink to fit at the end), grow beyond
        stored = int(table["payload_len"][in_kernel].sum())
        records = int(np.minimum(counts[in_kernel], 6 * table["payload_len"][in_kernel] // 7).sum())
        cols.reserve(min(stored, 1 << 30), min(6 * stored, 4 << 30), records)
        cols.reserve_headers(records // 4, records, 4 * records)

    decompress = _Decompressor(buf, table, max_decompressed, file)
    comp_len = table["payload_len"].clip(0)
    comp_left = int(comp_len[compressed].sum())   # compressed bytes not yet decompressed
    counts_l = counts.tolist()
    compressed_l = compressed.tolist()
    b = 0
    ci = 0  # index into `compressed`
    while b < count:
        # a chunk: batches [b, stop) whose decompressed payloads stay under chunk_bytes
        payloads = []
        stop = b
        decompressed = comp_used = claimed = 0
        pending = None
        while stop < count and (decompressed + 64 * (stop - b) < chunk_bytes or stop == b):
            if ci < len(compressed_l) and compressed_l[ci] == stop:
                try:
                    p = decompress(stop)
                except errors.KafkafmtError as exc:
                    pending = exc        # raised once the batches before it are decoded
                    break
                decompressed += len(p)
                comp_used += int(comp_len[stop])
                claimed += min(counts_l[stop], len(p) // 7)  # a record takes >= 7 bytes
                payloads.append(p)
                ci += 1
            else:
                payloads.append(None)
            stop += 1
        if decompressed:
            # size the outputs once for everything still compressed, from the ratio seen so far
            # (values fit in their decompressed records; keys are typically a small share)
            # (the ratio is capped: one very compressible batch must not reserve that ratio times
            # the rest of the input; data that really expands more grows the outputs geometrically)
            rest = comp_left - comp_used
            ratio = min(decompressed / max(comp_used, 1), _MAX_RATIO_AHEAD)
            ahead = decompressed + int(rest * ratio)
            cols.reserve(ahead // 8, ahead, claimed + min(int(claimed * rest / max(comp_used, 1)),
                                                          int(rest * ratio) // 7))
            comp_left -= comp_used
        start = b
        while True:
            status, at, err_at, grow = cols.run(buf, table, start, stop, payloads[start - b:])
            if status == _kernel.NEED_GROW_:
                cols.grow(grow, 1 << 16)
                start = at
                continue
            if status != 0:
                _raise_kernel_error(status, at, err_at, table, payloads[at - b] is not None or bool(in_kernel[at]),
                                    file)
            break
        if pending is not None:
            raise pending
        b = stop
    if err is not None:
        _raise_scan_error(err, file)

    if tail == "truncated":
        # a size field running past the end is a cut-off tail -- unless a valid entry follows,
        # in which case the size field itself is corrupt and the rest would be lost unseen
        nxt = _scan.find_next_entry(buf, valid_end + 1, -1, max_batch_bytes)
        if nxt >= 0:
            exc = errors.CorruptRecordError(
                f"entry size field runs past the end of the data, yet a valid entry starts at {nxt}",
                file=file, position=valid_end)
            exc.batch_position = valid_end
            raise exc
    return _finish(cols, table, buf.shape[0], valid_end, tail, file, topic, partition)


def _raise_kernel_error(status, b, err_at, table, compressed, file):
    cls, msg = _ERRORS.get(status, (errors.CorruptRecordError, f"malformed records (code {status})"))
    if compressed:
        msg += f" (at byte {err_at} of the decompressed records)"
        position = int(table["position"][b])
    else:
        position = int(table["payload_start"][b]) + err_at
    exc = cls(msg.format(size=""), file=file, position=position, offset=int(table["base_offset"][b]))
    exc.batch_position = int(table["position"][b])
    raise exc


def _binary(offsets, data, validity, nulls, n):
    offsets = offsets[:n + 1]
    used = int(offsets[-1])
    if used < (1 << 31) - 1:
        offsets = offsets.astype(np.int32)
    return BinaryColumn(offsets, data[:used], validity[:(n + 7) // 8] if nulls else None, nulls)


def _controls_table(a, nc):
    return Table({
        "offset": a["control_offset"][:nc], "batch_index": a["control_batch_index"][:nc],
        "type": a["control_type"][:nc], "version": a["control_version"][:nc],
        "coordinator_epoch": a["control_coordinator_epoch"][:nc], "timestamp": a["control_timestamp"][:nc],
    })


def _finish(cols, table, nbytes, valid_end, tail, file, topic, partition):
    a = cols.arrays()
    c = cols.counts
    n, nh, nc = c["records"], c["headers"], c["controls"]
    for name in _BOOL_BATCH_COLUMNS:
        table[name] = table[name].view(bool)
    table.pop("payload_start")
    table.pop("payload_len")
    hdr_offsets = a["header_index"][:n + 1]
    if cols.skip_payload:
        # keys, values and headers were not asked for: all-null columns, made in bulk
        nulls = BinaryColumn(np.zeros(n + 1, np.int32), np.zeros(0, np.uint8), np.zeros((n + 7) // 8, np.uint8), n)
        none = BinaryColumn(np.zeros(1, np.int32), np.zeros(0, np.uint8))
        return Records(
            offset=a["offset"][:n], timestamp=a["timestamp"][:n], timestamp_type=a["timestamp_type"][:n],
            batch_index=a["batch_index"][:n], key=nulls, value=nulls,
            headers=Headers(np.zeros(n + 1, np.int32), none, none), batches=Table(table),
            controls=_controls_table(a, nc), topic=topic, partition=partition, file=file,
            valid_bytes=valid_end, trailing_bytes=nbytes - valid_end, tail=tail if nbytes > valid_end else None)
    return Records(
        offset=a["offset"][:n], timestamp=a["timestamp"][:n], timestamp_type=a["timestamp_type"][:n],
        batch_index=a["batch_index"][:n],
        key=_binary(a["key_offsets"], a["key_data"], a["key_validity"], c["key_nulls"], n),
        value=_binary(a["value_offsets"], a["value_data"], a["value_validity"], c["value_nulls"], n),
        headers=Headers(
            hdr_offsets.astype(np.int32) if nh < (1 << 31) - 1 else hdr_offsets,
            _binary(a["header_key_offsets"], a["header_key_data"], a["header_key_validity"], 0, nh),
            _binary(a["header_value_offsets"], a["header_value_data"], a["header_value_validity"],
                    c["header_value_nulls"], nh)),
        batches=Table(table),
        controls=_controls_table(a, nc),
        topic=topic, partition=partition, file=file,
        valid_bytes=valid_end, trailing_bytes=nbytes - valid_end, tail=tail if nbytes > valid_end else None,
    )


def topic_partition_of(path):
    """(topic, partition) from a segment's folder name ``<topic>-<partition>``, else (None, None)."""
    m = PARTITION_DIR.match(os.path.basename(os.path.dirname(os.path.abspath(path))))
    return (m.group("topic"), int(m.group("partition"))) if m else (None, None)


def read_segment(path, *, errors="strict", **kwargs) -> Records:
    """Decode a whole segment file (memory-mapped). Accepts decode()'s keyword arguments; topic
    and partition default to those named by the file's ``<topic>-<partition>`` folder.
    errors="salvage" skips corrupt stretches (resynchronizing on the next entry whose CRC
    verifies) and lists them in the result's ``report`` instead of raising."""
    path = os.fspath(path)
    topic, partition = topic_partition_of(path)
    kwargs.setdefault("topic", topic)
    kwargs.setdefault("partition", partition)
    kwargs.setdefault("file", path)
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    if errors == "salvage":
        from kafkafmt.logdir import salvage_file

        recs = salvage_file(path, **{k: v for k, v in kwargs.items() if k not in ("file", "topic", "partition")})
        recs.topic_names, recs.topic_index, recs.partition = ([topic] if topic else []), None, partition
        return recs
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return decode(b"", **kwargs)
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return decode(m, **kwargs)
    finally:
        try:
            m.close()
        except BufferError:  # still referenced (e.g. by a traceback): closed when collected
            pass


def scan_batches(data, *, verify_crc=True, start=0, stop=None, max_batch_bytes=256 << 20):
    """The batch table alone -- every batch header, CRCs checked, nothing decompressed or decoded
    (a "shallow" iteration, as Kafka's DumpLogSegments without --deep-iteration). Returns
    (Table, info) where info has valid_bytes, tail and error (code, position, offset) or None:
    scanning stops at the first malformed entry instead of raising."""
    buf = _as_uint8(data)
    if stop is not None:
        if not 0 <= stop <= buf.shape[0]:
            raise ValueError(f"stop={stop} is outside the data (0..{buf.shape[0]})")
        buf = buf[:stop]
    if not 0 <= start <= buf.shape[0]:
        raise ValueError(f"start={start} is outside the data (0..{buf.shape[0]})")
    t = _scan.scan(buf, _CRC_MODES[verify_crc] if verify_crc is not True else _scan.CRC_REPORT_, start,
                   max_batch_bytes)
    info = dict(count=t.pop("count"), valid_bytes=t.pop("valid_end"), tail=_TAILS[t.pop("tail")])
    err = t.pop("error")
    info["error"] = None if err is None else dict(
        code=err[0], position=err[1], offset=err[2],
        reason=_ERRORS.get(err[0], (None, "malformed entry"))[1].format(size=err[3]))
    for name in _BOOL_BATCH_COLUMNS:
        t[name] = t[name].view(bool)
    t.pop("payload_start")
    t.pop("payload_len")
    return Table(t), info
