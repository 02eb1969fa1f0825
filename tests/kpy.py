"""Test helpers built on kafka-python (an independent implementation of the Kafka formats).

* builders: byte buffers for every magic (0, 1, 2) x codec, plus the things kafka-python's builders cannot
  write directly (LogAppendTime, broker-assigned offsets, control batches, empty batches), made by patching
  the header fields and recomputing the CRC the way a broker does;
* ``kp_decode``: the *truth* -- the decoding of a buffer by kafka-python's own readers
  (``MemoryRecords`` -> batches -> records) as plain Python lists, with the batch-table columns of kafkafmt;
* ``assert_records_match``: compare a ``kafkafmt.Records`` with that truth, column by column.

kafka-python quirks worked around here (kafka-python 3.0.12):

* magic-0 LZ4 (KAFKA-3160 broken header checksum) needs the ``xxhash`` module, which is not installed: a
  pure-Python xxh32 is plugged into ``kafka.codec`` below, so kafka-python can write and read such frames;
* legacy records of magic 0 report ``timestamp`` and ``timestamp_type`` as ``None`` (kafkafmt: -1);
* ``LegacyRecordBatch.base_offset`` is the wrapper offset (Kafka's ``lastOffset()``), not the first inner
  offset; the batch row's ``base_offset`` is taken from the first inner record here;
* magic-1 compressed wrappers: kafka-python adds ``wrapper - last_inner`` only when that is >= 0 and takes
  inner offsets as they are otherwise -- exactly Kafka's DeepRecordsIterator (so not only for wrapper 0);
* kafka-python parses the inner messages of a wrapper with the *wrapper's* magic, so it cannot read a v1
  wrapper around v0 messages (or the reverse), which Kafka reads (test_crosscheck checks those directly);
* on corrupt input kafka-python raises all sorts of exceptions (struct.error, EOFError, RuntimeError,
  IndexError, AssertionError), and a truncated zstd frame silently yields partial data;
* the legacy builder writes compressed wrappers with offset 0 and timestamp 0 (a producer's view); brokers
  rewrite them (offset = absolute last offset, timestamp = max inner timestamp, or the append time):
  ``build_legacy`` patches them like a broker;
* the v2 builder always writes base offset 0, partition leader epoch 0, and treats the ``offset`` given to
  ``append`` as the offset *delta*; CreateTime only; no control bit: patched by ``build_v2``;
* both builders silently write a batch uncompressed when compression does not shrink it
  (``build_v2``/``build_legacy`` check the codec actually written unless ``require_codec=False``);
* kafka-python's batch iterators yield control records (``ControlRecord``) like data records
  (only its Fetcher drops them): ``kp_decode`` separates them;
* kafka-python never checks CRCs while iterating (``validate_crc()`` must be called before iterating).
"""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import crc32c as _crc32c_mod
import kafka.codec as _kcodec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords


CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}
# Control record types (org.apache.kafka.common.record.ControlRecordType), spelled as in expected.json.
CONTROL_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LeaderChange", 3: "SnapshotHeader", 4: "SnapshotFooter",
                 5: "KRaftVersion", 6: "KRaftVoters"}

V2_HEADER = struct.Struct(">qiibIhiqqqhii")       # 61 bytes
V2_HEADER_SIZE = V2_HEADER.size
V2_CRC_AT, V2_ATTR_AT, V2_MAXTS_AT, V2_COUNT_AT = 17, 21, 35, 57
V0_HEADER = struct.Struct(">qiIbb")               # offset, size, crc, magic, attributes
V1_HEADER = struct.Struct(">qiIbbq")              # ... + timestamp
BIG = 1 << 30


def crc32c(data) -> int:
    return _crc32c_mod.crc32c(bytes(data))


# --- pure-Python xxh32 so kafka-python can read and write magic-0 LZ4 (it wants the xxhash module) -------
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    data = bytes(data)
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i + 16 <= n:
            a, b, c, d = struct.unpack_from("<IIII", data, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (k,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


class _XXH32:
    def __init__(self, data):
        self._h = xxh32(data)

    def digest(self):
        return struct.pack(">I", self._h)

    def intdigest(self):
        return self._h


class _XXHashShim:
    xxh32 = _XXH32


if getattr(_kcodec, "xxhash", None) is None:
    _kcodec.xxhash = _XXHashShim()


# --- records -----------------------------------------------------------------------------------------------
class Rec(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()


def compressible(i: int, n: int = 40) -> bytes:
    """A value that compresses well with every codec (so builders do not fall back to 'none')."""
    return (b"value-%d-" % i) + b"abcdefgh" * n


# --- v2 ------------------------------------------------------------------------------------------------------
def fix_crc_v2(buf: bytearray, pos: int = 0) -> None:
    """Recompute the CRC-32C of the v2 batch at ``pos`` (attributes .. end of the batch)."""
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    end = pos + 12 + length
    struct.pack_into(">I", buf, pos + V2_CRC_AT, crc32c(buf[pos + V2_ATTR_AT:end]))


def build_v2(records, codec=0, *, base_offset=None, log_append_time=None, transactional=False,
             control=False, producer_id=-1, producer_epoch=-1, base_sequence=-1,
             partition_leader_epoch=0, require_codec=True) -> bytes:
    """One magic-2 batch holding ``records`` (a list of Rec with absolute offsets)."""
    if isinstance(codec, str):
        codec = CODEC_IDS[codec]
    records = list(records)
    if not records:
        raise ValueError("use build_empty_v2 for an empty batch")
    base = records[0].offset if base_offset is None else base_offset
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=BIG)
    for r in records:
        md = b.append(int(r.offset - base), timestamp=int(r.timestamp), key=r.key, value=r.value,
                      headers=list(r.headers))
        assert md is not None
    buf = bytearray(b.build())
    attrs = struct.unpack_from(">h", buf, V2_ATTR_AT)[0]
    if require_codec and (attrs & 7) != codec:
        raise AssertionError(f"builder wrote codec {attrs & 7}, not {codec}: use compressible data")
    struct.pack_into(">q", buf, 0, base)
    struct.pack_into(">i", buf, 12, partition_leader_epoch)
    if log_append_time is not None:
        attrs |= 0x08
        struct.pack_into(">q", buf, V2_MAXTS_AT, log_append_time)
    if control:
        attrs |= 0x20
    struct.pack_into(">h", buf, V2_ATTR_AT, attrs)
    fix_crc_v2(buf)
    return bytes(buf)


def build_empty_v2(base_offset, last_offset_delta=0, *, producer_id=-1, producer_epoch=-1,
                   base_sequence=-1, transactional=False, control=False, first_timestamp=-1,
                   max_timestamp=-1, partition_leader_epoch=0, codec=0) -> bytes:
    """A v2 batch with record_count 0, as the log cleaner leaves (it keeps producer state and offsets)."""
    attrs = codec | (0x10 if transactional else 0) | (0x20 if control else 0)
    buf = bytearray(V2_HEADER.pack(base_offset, V2_HEADER_SIZE - 12, partition_leader_epoch, 2, 0, attrs,
                                   last_offset_delta, first_timestamp, max_timestamp, producer_id,
                                   producer_epoch, base_sequence, 0))
    fix_crc_v2(buf)
    return bytes(buf)


def control_key(ctype, version=0) -> bytes:
    return struct.pack(">hh", version, ctype)


def txn_marker_value(coordinator_epoch, version=0) -> bytes:
    return struct.pack(">hi", version, coordinator_epoch)


def build_control_v2(offset, ctype, *, timestamp=1_600_000_000_000, version=0, coordinator_epoch=0,
                     value=None, producer_id=-1, producer_epoch=-1, transactional=None,
                     partition_leader_epoch=0) -> bytes:
    """A control batch with one control record (type 0 ABORT / 1 COMMIT get a txn-marker value)."""
    if value is None:
        value = txn_marker_value(coordinator_epoch) if ctype in (0, 1) else b"\x00\x00\x00\x00"
    if transactional is None:
        transactional = ctype in (0, 1)
    return build_v2([Rec(offset, timestamp, control_key(ctype, version), value)], 0, control=True,
                    transactional=transactional, producer_id=producer_id, producer_epoch=producer_epoch,
                    partition_leader_epoch=partition_leader_epoch)


# --- v0 / v1 -------------------------------------------------------------------------------------------------
def fix_crc_legacy(buf: bytearray, pos: int = 0) -> None:
    """Recompute the CRC-32 of the legacy message at ``pos`` (magic .. end of the message)."""
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    end = pos + 12 + length
    struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:end])) & 0xFFFFFFFF)


def build_legacy(records, magic, codec=0, *, mode="relative", log_append_time=None, wrapper_timestamp=None,
                 require_codec=True) -> bytes:
    """Magic 0/1 message set holding ``records`` (Rec with absolute offsets; timestamps ignored for magic 0).

    codec 0: one shallow message per record.  Compressed: one wrapper message, patched like a broker writes
    it: magic 1 ``mode="relative"``: inner offsets relative (abs - first), wrapper offset = last absolute;
    magic 1 ``mode="as_is"``: inner offsets absolute, wrapper offset 0 (what a producer sends);
    magic 0: inner offsets absolute, wrapper offset = last absolute.
    Wrapper timestamp (magic 1): ``wrapper_timestamp`` or the max inner timestamp; with ``log_append_time``
    the timestamp-type bit is set and the wrapper (or every shallow message) gets that time.
    """
    if isinstance(codec, str):
        codec = CODEC_IDS[codec]
    records = list(records)
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=BIG)
    if codec == 0:
        for r in records:
            ts = r.timestamp if log_append_time is None else log_append_time
            assert b.append(int(r.offset), timestamp=int(ts), key=r.key, value=r.value) is not None
        buf = bytearray(b.build())
        if log_append_time is not None and magic == 1:
            pos = 0
            while pos < len(buf):
                buf[pos + 17] |= 0x08
                fix_crc_legacy(buf, pos)
                pos += 12 + struct.unpack_from(">i", buf, pos + 8)[0]
        return bytes(buf)
    first = records[0].offset
    for r in records:
        if magic == 1 and mode == "relative":
            inner = r.offset - first
        else:
            inner = r.offset
        assert b.append(int(inner), timestamp=int(r.timestamp), key=r.key, value=r.value) is not None
    buf = bytearray(b.build())
    assert (buf[17] & 7) == codec or not require_codec
    wrapper_offset = 0 if (magic == 1 and mode == "as_is") else records[-1].offset
    struct.pack_into(">q", buf, 0, wrapper_offset)
    if magic == 1:
        if log_append_time is not None:
            buf[17] |= 0x08
            ts = log_append_time
        else:
            ts = wrapper_timestamp if wrapper_timestamp is not None else max(r.timestamp for r in records)
        struct.pack_into(">q", buf, 18, ts)
    fix_crc_legacy(buf)
    return bytes(buf)


# --- the truth: kafka-python's decoding ----------------------------------------------------------------------
def _none_to(v, default=-1):
    return default if v is None else v


def kp_decode(buf, include_control=False):
    """Decode ``buf`` with kafka-python's readers into plain lists.

    Returns dict(records=[dict], controls=[dict], batches=[dict], valid_bytes, trailing_bytes).
    Batch dict values of ``None`` mean "not defined for this format: do not compare".
    """
    data = bytes(buf)
    mr = MemoryRecords(data)
    batches, records, controls = [], [], []
    pos = 0
    for bi, batch in enumerate(mr):
        size = batch.size_in_bytes
        crc_valid = batch.validate_crc()
        if isinstance(batch, DefaultRecordBatch):
            recs = list(batch)
            row = dict(
                position=pos, size=size, base_offset=batch.base_offset, last_offset=batch.last_offset,
                last_offset_delta=batch.last_offset_delta, partition_leader_epoch=batch.leader_epoch,
                magic=2, crc=batch.crc, crc_valid=crc_valid, attributes=batch.attributes,
                codec=batch.compression_type, timestamp_type=batch.timestamp_type,
                is_transactional=batch.is_transactional, is_control=batch.is_control_batch,
                producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence, first_timestamp=batch.first_timestamp,
                max_timestamp=batch.max_timestamp, record_count=batch.records_count)
            assert len(recs) == batch.records_count
        else:
            assert isinstance(batch, LegacyRecordBatch)
            magic = batch.magic
            hdr = (V0_HEADER if magic == 0 else V1_HEADER).unpack_from(data, pos)
            wrapper_offset, _length, crc, _magic, attrs = hdr[:5]
            wrapper_ts = hdr[5] if magic == 1 else -1
            recs = list(batch)
            row = dict(
                position=pos, size=size,
                base_offset=recs[0].offset if recs else wrapper_offset, last_offset=wrapper_offset,
                last_offset_delta=None, partition_leader_epoch=-1, magic=magic, crc=crc, crc_valid=crc_valid,
                attributes=attrs, codec=attrs & 7,
                timestamp_type=-1 if magic == 0 else (attrs >> 3) & 1,
                is_transactional=False, is_control=False, producer_id=-1, producer_epoch=-1,
                base_sequence=-1, first_timestamp=None, max_timestamp=wrapper_ts, record_count=len(recs))
        batches.append(row)
        for r in recs:
            is_ctl = row["is_control"]
            rec = dict(offset=r.offset, timestamp=_none_to(r.timestamp), timestamp_type=_none_to(r.timestamp_type),
                       key=r.key, value=r.value, headers=[(k, v) for k, v in r.headers], batch_index=bi,
                       is_control=is_ctl)
            if is_ctl:
                ctype = r.type
                val = r.value
                epoch = -1
                if ctype in (0, 1) and val is not None and len(val) >= 6:
                    epoch = struct.unpack_from(">i", val, 2)[0]
                controls.append(dict(offset=r.offset, batch_index=bi, type=ctype, version=r.version,
                                     coordinator_epoch=epoch, timestamp=rec["timestamp"]))
            if include_control or not is_ctl:
                records.append(rec)
        pos += size
    valid = mr.valid_bytes()
    assert valid == pos
    return dict(records=records, controls=controls, batches=batches, valid_bytes=valid,
                trailing_bytes=len(data) - valid)


# --- comparison -----------------------------------------------------------------------------------------------
def _unpack_validity(validity, n):
    import numpy as np
    bits = np.unpackbits(np.asarray(validity, dtype=np.uint8), bitorder="little")
    return bits[:n].astype(bool)


def check_binary_column(col, expected, name="column"):
    """Check a kafkafmt BinaryColumn against a list of bytes|None, through every accessor and the raw layout."""
    import numpy as np
    n = len(expected)
    assert len(col) == n, f"{name}: len {len(col)} != {n}"
    got = col.to_pylist()
    assert got == expected, f"{name}: to_pylist differs: first mismatch at " + str(
        next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), None))
    nulls = [v is None for v in expected]
    assert col.null_count == sum(nulls), f"{name}: null_count {col.null_count} != {sum(nulls)}"
    isn = np.asarray(col.is_null())
    assert isn.dtype == np.bool_ and isn.tolist() == nulls, f"{name}: is_null differs"
    offsets = np.asarray(col.offsets)
    assert offsets.dtype in (np.int32, np.int64), f"{name}: offsets dtype {offsets.dtype}"
    assert len(offsets) == n + 1, f"{name}: len(offsets) {len(offsets)} != n+1"
    assert (np.diff(offsets) >= 0).all(), f"{name}: offsets not monotonic"
    data = np.asarray(col.data)
    assert data.dtype == np.uint8
    assert int(offsets[-1]) <= len(data)
    if col.validity is None:
        assert col.null_count == 0, f"{name}: validity None with nulls"
    else:
        valid = _unpack_validity(col.validity, n)
        assert valid.tolist() == [not x for x in nulls], f"{name}: validity bitmap differs"
    raw = data.tobytes()
    for i, v in enumerate(expected):
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        if v is None:
            assert col[i] is None
            assert lo == hi, f"{name}[{i}]: null entry spans bytes"
        else:
            assert raw[lo:hi] == v, f"{name}[{i}]: raw bytes differ"
            assert bytes(col[i]) == v
    if n:
        assert (None if expected[-1] is None else bytes(col[-1])) == expected[-1], f"{name}[-1] differs"


BATCH_COLUMNS = ("position", "size", "base_offset", "last_offset", "last_offset_delta", "partition_leader_epoch",
                 "magic", "crc", "crc_valid", "attributes", "codec", "timestamp_type", "is_transactional",
                 "is_control", "producer_id", "producer_epoch", "base_sequence", "first_timestamp",
                 "max_timestamp", "record_count")
CONTROL_COLUMNS = ("offset", "batch_index", "type", "version", "coordinator_epoch", "timestamp")


def _col(table, name):
    import numpy as np
    return np.asarray(getattr(table, name))


def assert_batches_match(recs, truth, batch_index_base=0):
    batches = recs.batches
    exp = truth["batches"]
    assert len(batches) == len(exp), f"batches: {len(batches)} rows != {len(exp)}"
    for name in BATCH_COLUMNS:
        got = _col(batches, name).tolist()
        for i, row in enumerate(exp):
            want = row[name]
            if want is None:
                continue
            g = got[i]
            if isinstance(want, bool):
                g = bool(g)
            assert g == want, f"batches.{name}[{i}] = {g!r}, kafka-python: {want!r} (batch magic {row['magic']})"


def assert_records_match(recs, truth, *, check_batches=True):
    """Compare kafkafmt Records with kp_decode's truth (same include_control setting)."""
    import numpy as np
    exp = truth["records"]
    n = len(exp)
    assert len(recs) == n, f"{len(recs)} records, kafka-python: {n}"
    for name, dtype in (("offset", np.int64), ("timestamp", np.int64), ("timestamp_type", np.int8),
                        ("batch_index", np.int32)):
        arr = np.asarray(getattr(recs, name))
        assert arr.dtype == dtype, f"{name} dtype {arr.dtype} != {np.dtype(dtype)}"
        got = arr.tolist()
        want = [r[name] for r in exp]
        if got != want:
            i = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
            raise AssertionError(f"{name}[{i}] = {got[i]}, kafka-python: {want[i]} (record {exp[i]!r:.300})")
    check_binary_column(recs.key, [r["key"] for r in exp], "key")
    check_binary_column(recs.value, [r["value"] for r in exp], "value")
    got_h = [[(k, v) for k, v in hs] for hs in recs.headers.to_pylist()]
    assert got_h == [r["headers"] for r in exp], "headers differ"
    assert len(np.asarray(recs.headers.offsets)) == n + 1
    if check_batches:
        assert_batches_match(recs, truth)
        ctl = recs.controls
        assert len(ctl) == len(truth["controls"]), f"{len(ctl)} controls, kafka-python: {len(truth['controls'])}"
        for name in CONTROL_COLUMNS:
            got = _col(ctl, name).tolist()
            want = [c[name] for c in truth["controls"]]
            assert got == want, f"controls.{name} = {got}, kafka-python: {want}"
        assert recs.valid_bytes == truth["valid_bytes"]
        assert recs.trailing_bytes == truth["trailing_bytes"]
        assert bool(recs.truncated) == (truth["trailing_bytes"] > 0)


# --- the crosscheck matrix ------------------------------------------------------------------------------------
TS0 = 1_600_000_000_000
T_APPEND = TS0 + 9_999_999
PRODUCER_ID = 1_234_567_890_123
FEATURES_ALL = ("plain", "null_keys", "null_values", "empty_values", "gaps", "big_offsets")
FEATURES_V1 = ("log_append_time", "as_is")
FEATURES_V2 = ("log_append_time", "headers", "idempotent", "transactional", "control", "empty_batch",
               "leader_epoch")


def codecs_for(magic):
    return ("none", "gzip", "snappy", "lz4", "zstd") if magic == 2 else ("none", "gzip", "snappy", "lz4")


def matrix():
    """(magic, codec, feature) triples covered by the crosscheck."""
    out = []
    for magic in (0, 1, 2):
        feats = FEATURES_ALL + (FEATURES_V1 if magic == 1 else FEATURES_V2 if magic == 2 else ())
        for codec in codecs_for(magic):
            for f in feats:
                if f == "as_is" and codec == "none":
                    continue
                out.append((magic, codec, f))
    return out


def _ts(i):
    return TS0 + ((i * 37) % 11) * 1000 + i          # not monotonic: max != last


def make_records(start, n, feature="plain", salt=0):
    """n records from offset ``start`` shaped by ``feature`` (values compress well with every codec)."""
    out = []
    off = start
    for i in range(n):
        j = i + salt
        key = b"key-%d" % j
        value = compressible(j)
        headers = ()
        if feature == "null_keys":
            key = None if i % 2 == 0 else key
        elif feature == "null_values":
            value = None if i % 2 == 1 else value
        elif feature == "empty_values":
            value = b"" if i % 2 == 1 else value
            key = b"" if i % 3 == 0 else key
        elif feature == "headers":
            headers = [(), (("h", b"v"),), (("trace-id", compressible(j, 3)), ("null", None), ("empty", b"")),
                       (("ünïcode-ключ", b"\x00\xff"),)][i % 4]
        out.append(Rec(off, _ts(j), key, value, tuple(headers)))
        off += 1 + ((i * 5) % 3 if feature == "gaps" else 0)
    return out


def make_batch(magic, codec, records, feature="plain", **kw):
    if magic == 2:
        if feature == "log_append_time":
            kw.setdefault("log_append_time", T_APPEND)
        if feature == "leader_epoch":
            kw.setdefault("partition_leader_epoch", 17)
        return build_v2(records, codec, **kw)
    if feature == "log_append_time":
        kw.setdefault("log_append_time", T_APPEND)
    if feature == "as_is":
        kw.setdefault("mode", "as_is")
    return build_legacy(records, magic, codec, **kw)


def make_case(magic, codec, feature):
    """A buffer of several batches for one cell of the matrix."""
    start = (1 << 33) + 12345 if feature == "big_offsets" else 100
    if feature == "as_is":     # a produce-request-like single wrapper: wrapper offset 0, inner 0..n-1
        return make_batch(magic, codec, make_records(0, 6), feature)
    parts = []
    off = start
    nbatch = 3
    for bi in range(nbatch):
        recs = make_records(off, 4 + bi, feature, salt=bi * 10)
        kw = {}
        if magic == 2 and feature == "idempotent":
            kw = dict(producer_id=PRODUCER_ID, producer_epoch=3, base_sequence=17 + off - start)
        if magic == 2 and feature == "transactional":
            kw = dict(producer_id=PRODUCER_ID, producer_epoch=3, base_sequence=off - start, transactional=True)
        parts.append(make_batch(magic, codec, recs, feature, **kw))
        off = recs[-1].offset + 1
        if magic == 2 and feature == "transactional":
            # batch 0 committed, batch 1 aborted, batch 2 left open
            if bi < 2:
                parts.append(build_control_v2(off, 1 if bi == 0 else 0, coordinator_epoch=5 + bi,
                                              timestamp=_ts(off), producer_id=PRODUCER_ID, producer_epoch=3))
                off += 1
        if magic == 2 and feature == "control" and bi < 2:
            for ctype in ((0, 1, 2) if bi == 0 else (3, 4, 5, 6)):
                val = None if ctype in (0, 1) else bytes([0, 0, ctype, 1, 2, 3])
                txn = ctype < 2
                parts.append(build_control_v2(off, ctype, version=ctype % 2, coordinator_epoch=ctype * 3,
                                              value=val, timestamp=_ts(off),
                                              producer_id=PRODUCER_ID if txn else -1,
                                              producer_epoch=1 if txn else -1))
                off += 1
        if magic == 2 and feature == "empty_batch":
            parts.append(build_empty_v2(off, 3, first_timestamp=-1, max_timestamp=-1))
            off += 4
            if bi == 0:
                parts.append(build_empty_v2(off, 0, producer_id=PRODUCER_ID, producer_epoch=2, base_sequence=9,
                                            transactional=True, max_timestamp=_ts(off), first_timestamp=_ts(off)))
                off += 1
    return b"".join(parts)


def make_mixed(codec):
    """v0, v1 and v2 batches (and uncompressed legacy messages) in one buffer, offsets increasing."""
    legacy_codec = "none" if codec == "zstd" else codec
    parts, off = [], 0
    for magic, c in ((0, legacy_codec), (0, "none"), (1, legacy_codec), (1, "none"), (2, codec), (1, legacy_codec),
                     (2, "none"), (0, legacy_codec)):
        recs = make_records(off, 3, "null_keys" if off % 2 else "plain", salt=off)
        parts.append(make_batch(magic, c, recs))
        off = recs[-1].offset + 1
    return b"".join(parts)
