"""The writer (kafkafmt.encode / encode_control / encode_empty_batch) against kafka-python's readers.

Every magic (0, 1, 2) x codec x feature: the bytes kafkafmt writes are read back by kafka-python's own
``MemoryRecords`` (the truth, ``kpy.kp_decode``) and by kafkafmt, and both must give exactly the records
that went in. Where kafka-python checks nothing (legacy inner messages, frame headers), the bytes are
parsed here with ``struct`` / ``zlib`` / ``xxhash`` against what Kafka specifies:

* v0/v1 per-message CRC-32 over magic .. end, wrapper and inner messages alike;
* v1 compressed wrappers (MemoryRecordsBuilder / LogValidator): wrapper offset = last absolute offset,
  inner offsets relative to the first record (gaps kept), wrapper timestamp = max inner timestamp
  (CreateTime) or the log append time with the timestamp-type bit (LogAppendTime);
* v0 inner offsets absolute, wrapper offset = last inner offset;
* lz4: v0 frames carry the KAFKA-3160 header checksum, xxh32(magic + descriptor) >> 8; v1/v2 frames the
  correct one; Java's KafkaLZ4BlockOutputStream writes FLG 0x60 (no content size), BD 0x40;
* snappy: xerial framing (``\\x82SNAPPY\\x00``, version 1, compatible 1);
* v2: crc32c (validated by kafka-python), attributes, producer fields, base sequences.
"""
from __future__ import annotations

import functools
import struct
import time
import zlib

import numpy as np
import pytest
import xxhash
from kafka.codec import gzip_decode, lz4_decode, lz4_decode_old_kafka, snappy_decode
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.memory_records import MemoryRecords

import kpy

import kafkafmt
from kafkafmt import EncodeError  # noqa: E402
from kafkafmt.record import encode_empty_batch  # noqa: E402

TS0 = 1_700_000_000_000
T_APPEND = TS0 + 5_555_555
PID = 987_654_321_012
INT32_MAX = 2**31 - 1

CODEC_IDS = kpy.CODEC_IDS
V0_HDR = struct.Struct(">qiIbb")      # offset, size, crc, magic, attributes
V1_HDR = struct.Struct(">qiIbbq")     # ... + timestamp


# ---------------------------------------------------------------------------------------------------------
# independent raw parsing of v0/v1 message sets
def parse_legacy(buf, *, inner_magic_check=True):
    """Shallow messages of a v0/v1 message set (dicts); compressed wrappers get ``inner`` (their
    decompressed messages, parsed the same way). Every message's CRC-32 is checked here."""
    out = []
    pos = 0
    mv = memoryview(buf)
    while pos < len(buf):
        offset, size, crc, magic, attrs = V0_HDR.unpack_from(buf, pos)
        end = pos + 12 + size
        assert end <= len(buf), "message runs past the buffer"
        assert crc == zlib.crc32(mv[pos + 16:end]) & 0xFFFFFFFF, f"CRC-32 of the message at {pos} is wrong"
        ts = None
        kpos = pos + 18
        if magic == 1:
            ts = V1_HDR.unpack_from(buf, pos)[5]
            kpos = pos + 26
        klen = struct.unpack_from(">i", buf, kpos)[0]
        key = None if klen < 0 else bytes(mv[kpos + 4:kpos + 4 + klen])
        vpos = kpos + 4 + max(klen, 0)
        vlen = struct.unpack_from(">i", buf, vpos)[0]
        value = None if vlen < 0 else bytes(mv[vpos + 4:vpos + 4 + vlen])
        assert vpos + 4 + max(vlen, 0) == end, "message size does not match key/value lengths"
        msg = dict(position=pos, offset=offset, size=size + 12, magic=magic, attributes=attrs, timestamp=ts,
                   key=key, value=value, inner=None)
        codec = attrs & 7
        if codec:
            assert key is None, "a compressed wrapper has a null key"
            raw = {1: gzip_decode, 2: snappy_decode,
                   3: lz4_decode_old_kafka if magic == 0 else lz4_decode}[codec](value)
            msg["inner"] = parse_legacy(bytes(raw))
            if inner_magic_check:
                assert {m["magic"] for m in msg["inner"]} == {magic}
            assert all(m["inner"] is None for m in msg["inner"]), "double compression"
        out.append(msg)
        pos = end
    return out


def lz4_frame_checks(frame, magic):
    assert frame[:4] == b"\x04\x22\x4d\x18", "not an LZ4 frame"
    flg, bd, hc = frame[4], frame[5], frame[6]
    assert flg == 0x60, f"FLG {flg:#x}: Java writes 0x60 (v01, independent blocks, no content size/checksums)"
    assert bd == 0x40, f"BD {bd:#x}: Java writes 64 KiB blocks (0x40)"
    broken = (xxhash.xxh32(frame[:6]).intdigest() >> 8) & 0xFF
    correct = (xxhash.xxh32(frame[4:6]).intdigest() >> 8) & 0xFF
    assert broken != correct
    if magic == 0:
        assert hc == broken, f"magic 0 lz4 HC {hc:#x} should be the KAFKA-3160 value {broken:#x}"
    else:
        assert hc == correct, f"magic {magic} lz4 HC {hc:#x} should be the correct value {correct:#x}"


def codec_payload_checks(payload, codec, magic):
    if codec == "lz4":
        lz4_frame_checks(payload, magic)
    elif codec == "snappy":
        assert payload[:8] == b"\x82SNAPPY\x00", "snappy must use the xerial framing"
        assert struct.unpack_from(">ii", payload, 8) == (1, 1), "xerial version/compatible must be 1/1"
    elif codec == "gzip":
        assert payload[:2] == b"\x1f\x8b"
    elif codec == "zstd":
        assert payload[:4] == b"\x28\xb5\x2f\xfd"


def v2_batches_raw(buf):
    """(position, header tuple, payload bytes) of every v2 batch, header = kpy.V2_HEADER fields."""
    out = []
    pos = 0
    while pos < len(buf):
        h = kpy.V2_HEADER.unpack_from(buf, pos)
        end = pos + 12 + h[1]
        out.append((pos, h, bytes(buf[pos + 61:end])))
        pos = end
    return out


def kp_batches(buf):
    """kafka-python's batch objects, each validated (v2 crc32c, legacy wrapper crc32)."""
    mr = MemoryRecords(bytes(buf))
    out = []
    for b in mr:
        assert b.validate_crc(), f"kafka-python: CRC of batch {len(out)} invalid"
        out.append(b)
    assert mr.valid_bytes() == len(buf)
    return out


# ---------------------------------------------------------------------------------------------------------
# the matrix
FEATURES_ALL = ("plain", "null_keys", "null_values", "empty_values", "big_offsets", "gaps")
FEATURES_V1 = ("log_append_time",)
FEATURES_V2 = ("log_append_time", "headers", "producer", "transactional")
HEADER_SETS = [(), (("h", b"v"),), (("trace-id", b"\x00\x01" * 9), ("null", None), ("empty", b"")),
               (("ünïcode-ключ-🙂", b"\xff"),), (("dup", b"1"), ("dup", b"2"))]


def codecs_for(magic):
    return ("none", "gzip", "snappy", "lz4", "zstd") if magic == 2 else ("none", "gzip", "snappy", "lz4")


def matrix():
    out = []
    for magic in (0, 1, 2):
        feats = FEATURES_ALL + (FEATURES_V1 if magic == 1 else FEATURES_V2 if magic == 2 else ())
        for codec in codecs_for(magic):
            for f in feats:
                out.append((magic, codec, f))
    return out


def _ts(i):
    return TS0 + ((i * 37) % 11) * 1000 - 3 * i      # not monotonic; max not last; negative deltas


def make_input(magic, feature, n=11):
    """(encode kwargs, records as kpy.Rec with absolute offsets)"""
    start = (1 << 40) + 77 if feature == "big_offsets" else 3
    recs, off = [], start
    for i in range(n):
        key = b"key-%d" % i
        value = kpy.compressible(i, 20)
        headers = ()
        if feature == "null_keys":
            key = None if i % 2 == 0 else key
        elif feature == "null_values":
            value = None if i % 3 == 1 else value
        elif feature == "empty_values":
            value = b"" if i % 2 == 1 else value
            key = b"" if i % 3 == 0 else key
        elif feature == "headers":
            headers = HEADER_SETS[i % len(HEADER_SETS)]
        recs.append(kpy.Rec(off, _ts(i), key, value, headers))
        off += 1 + (((i * 7) % 5) * 1000 if feature == "gaps" else 0)
    kw = dict(keys=[r.key for r in recs], values=[r.value for r in recs], timestamps=[r.timestamp for r in recs],
              offsets=[r.offset for r in recs], max_records=4)
    if feature == "headers":
        kw["headers"] = [list(r.headers) for r in recs]
    if feature == "log_append_time":
        kw.update(timestamp_type="LogAppendTime", log_append_time=T_APPEND)
    if feature == "producer":
        kw.update(producer_id=PID, producer_epoch=7, base_sequence=INT32_MAX - 5)   # wraps in batch 2
    if feature == "transactional":
        kw.update(producer_id=PID, producer_epoch=2, base_sequence=0, transactional=True)
    return kw, recs


def expected_rows(magic, feature, recs):
    rows = []
    for r in recs:
        if magic == 0:
            ts, tt = -1, -1
        elif feature == "log_append_time":
            ts, tt = T_APPEND, 1
        else:
            ts, tt = r.timestamp, 0
        rows.append(dict(offset=r.offset, timestamp=ts, timestamp_type=tt, key=r.key, value=r.value,
                         headers=[tuple(h) for h in r.headers]))
    return rows


def assert_kafkafmt_equals(recs, rows):
    assert len(recs) == len(rows)
    assert np.asarray(recs.offset).tolist() == [r["offset"] for r in rows]
    assert np.asarray(recs.timestamp).tolist() == [r["timestamp"] for r in rows]
    assert np.asarray(recs.timestamp_type).tolist() == [r["timestamp_type"] for r in rows]
    kpy.check_binary_column(recs.key, [r["key"] for r in rows], "key")
    kpy.check_binary_column(recs.value, [r["value"] for r in rows], "value")
    assert [[tuple(h) for h in hs] for hs in recs.headers.to_pylist()] == [r["headers"] for r in rows]


MATRIX = matrix()
MATRIX_V2 = [c for c in MATRIX if c[0] == 2]
MATRIX_LEGACY = [c for c in MATRIX if c[0] < 2]


def _ids(cases):
    return ["v%d-%s-%s" % c for c in cases]


@functools.lru_cache(maxsize=None)
def _case(magic, codec, feature):
    kw, recs = make_input(magic, feature)
    buf = kafkafmt.encode(magic=magic, compression=codec, **kw)
    return magic, codec, feature, kw, recs, buf


@pytest.fixture(params=MATRIX, ids=_ids(MATRIX))
def case(request):
    return _case(*request.param)


@pytest.fixture(params=MATRIX_V2, ids=_ids(MATRIX_V2))
def case_v2(request):
    return _case(*request.param)


@pytest.fixture(params=MATRIX_LEGACY, ids=_ids(MATRIX_LEGACY))
def case_legacy(request):
    return _case(*request.param)


def test_kafka_python_reads_what_went_in(case):
    magic, codec, feature, kw, recs, buf = case
    truth = kpy.kp_decode(buf)
    assert all(b["crc_valid"] for b in truth["batches"])
    assert truth["trailing_bytes"] == 0
    rows = expected_rows(magic, feature, recs)
    got = [{k: r[k] for k in ("offset", "timestamp", "timestamp_type", "key", "value", "headers")}
           for r in truth["records"]]
    assert got == rows
    # and kafkafmt's reader agrees with kafka-python column by column, batch table included
    kpy.assert_records_match(kafkafmt.decode(buf), truth)


def test_decode_of_encode_is_identity(case):
    magic, codec, feature, kw, recs, buf = case
    assert_kafkafmt_equals(kafkafmt.decode(buf), expected_rows(magic, feature, recs))


def test_batches_codec_and_attributes(case):
    magic, codec, feature, kw, recs, buf = case
    cid = CODEC_IDS[codec]
    batches = kp_batches(buf)
    n = len(recs)
    if magic < 2 and codec == "none":
        assert len(batches) == n, "uncompressed v0/v1: one shallow message per record"
    else:
        counts = [len(list(b)) for b in batches]
        assert counts == [4, 4, 3], f"max_records=4 over 11 records: {counts}"
    for b in batches:
        assert b.compression_type == cid
        if magic == 2:
            assert isinstance(b, DefaultRecordBatch)
            want = cid | (0x08 if feature == "log_append_time" else 0) | (0x10 if feature == "transactional" else 0)
            assert b.attributes == want
            assert b.timestamp_type == (1 if feature == "log_append_time" else 0)
            assert b.is_transactional == (feature == "transactional")
            assert not b.is_control_batch
            assert b.leader_epoch == 0
        else:
            assert isinstance(b, LegacyRecordBatch)
            assert b.magic == magic
            if magic == 1:
                assert b.timestamp_type == (1 if feature == "log_append_time" else 0)


def test_v2_header_fields(case_v2):
    magic, codec, feature, kw, recs, buf = case_v2
    batches = kp_batches(buf)
    raw = v2_batches_raw(buf)
    assert len(raw) == len(batches)
    i = 0
    seq = kw.get("base_sequence", -1)
    for b, (pos, h, payload) in zip(batches, raw):
        mine = recs[i:i + b.records_count]
        i += b.records_count
        assert b.base_offset == mine[0].offset
        assert b.last_offset_delta == mine[-1].offset - mine[0].offset
        assert b.first_timestamp == mine[0].timestamp
        if feature == "log_append_time":
            assert b.max_timestamp == T_APPEND
        else:
            assert b.max_timestamp == max(r.timestamp for r in mine)
        assert [r.offset for r in b] == [r.offset for r in mine]
        if feature in ("producer", "transactional"):
            assert b.producer_id == PID
            assert b.producer_epoch == kw["producer_epoch"]
            assert b.base_sequence == seq
            # Kafka's DefaultRecordBatch.incrementSequence: wraps at Integer.MAX_VALUE to 0
            seq = (seq + b.records_count) % (1 << 31)
            assert b.last_sequence == (b.base_sequence + b.last_offset_delta) % (1 << 31)
        else:
            assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
        # raw header agrees: magic, record count, crc32c over attributes..end
        assert h[3] == 2 and h[12] == b.records_count
        assert h[4] == kpy.crc32c(buf[pos + 21:pos + 12 + h[1]])
        if codec != "none":
            codec_payload_checks(payload, codec, 2)
    assert i == len(recs)
    if feature == "producer":
        assert [b.base_sequence for b in batches] == [INT32_MAX - 5, INT32_MAX - 1, 2]


def test_legacy_raw_layout(case_legacy):
    magic, codec, feature, kw, recs, buf = case_legacy
    msgs = parse_legacy(buf)
    lat = feature == "log_append_time"
    if codec == "none":
        assert [m["offset"] for m in msgs] == [r.offset for r in recs]
        for m, r in zip(msgs, recs):
            assert m["magic"] == magic and m["inner"] is None
            assert (m["key"], m["value"]) == (r.key, r.value)
            if magic == 1:
                assert m["attributes"] == (0x08 if lat else 0)
                assert m["timestamp"] == (T_APPEND if lat else r.timestamp)
            else:
                assert m["attributes"] == 0
        return
    i = 0
    for m in msgs:
        inner = m["inner"]
        mine = recs[i:i + len(inner)]
        i += len(inner)
        assert m["magic"] == magic
        assert m["attributes"] & 7 == CODEC_IDS[codec]
        # the wrapper offset is the last absolute offset, for v0 and v1
        assert m["offset"] == mine[-1].offset
        if magic == 1:
            # inner offsets relative to the first record, gaps preserved
            assert [x["offset"] for x in inner] == [r.offset - mine[0].offset for r in mine]
            assert inner[0]["offset"] == 0
            if lat:
                assert m["attributes"] & 0x08
                assert m["timestamp"] == T_APPEND
            else:
                assert not m["attributes"] & 0x08
                assert m["timestamp"] == max(r.timestamp for r in mine)
                assert [x["timestamp"] for x in inner] == [r.timestamp for r in mine]
        else:
            assert [x["offset"] for x in inner] == [r.offset for r in mine]   # v0: absolute
        assert [(x["key"], x["value"]) for x in inner] == [(r.key, r.value) for r in mine]
        assert all(x["attributes"] & 7 == 0 for x in inner)
        # the compressed bytes are framed as Kafka's Java client frames them
        codec_payload_checks(m["value"], codec, magic)
    assert i == len(recs)


def test_kafka_python_inner_record_crcs(case):
    """kafka-python's LegacyRecord.validate_crc on every (inner) record too."""
    magic, codec, feature, kw, recs, buf = case
    n = 0
    for b in kp_batches(buf):
        for r in b:
            if magic < 2:
                assert r.validate_crc()
            n += 1
    assert n == len(recs)


# ---------------------------------------------------------------------------------------------------------
# lz4 frame details, explicitly (the checks above run them per case as well)
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_lz4_header_checksum(magic):
    buf = kafkafmt.encode(values=[kpy.compressible(i) for i in range(5)], timestamps=[TS0] * 5, magic=magic,
                          compression="lz4")
    if magic == 2:
        frame = v2_batches_raw(buf)[0][2]
    else:
        frame = parse_legacy(buf)[0]["value"]
    lz4_frame_checks(frame, magic)
    hc = frame[6]
    if magic == 0:
        assert hc == (xxhash.xxh32(b"\x04\x22\x4d\x18" + frame[4:6]).intdigest() >> 8) & 0xFF
    else:
        assert hc == (xxhash.xxh32(frame[4:6]).intdigest() >> 8) & 0xFF
    assert not frame[4] & 0x08, "content-size flag must be clear"


# ---------------------------------------------------------------------------------------------------------
# control and empty batches
@pytest.mark.parametrize("kind,ctype", [("commit", 1), ("abort", 0), ("COMMIT", 1), (0, 0), (1, 1)])
def test_encode_control(kind, ctype):
    buf = kafkafmt.encode_control(kind, offset=(1 << 35) + 3, producer_id=PID, producer_epoch=4,
                                  coordinator_epoch=12, timestamp=TS0 + 1, partition_leader_epoch=9)
    (b,) = kp_batches(buf)
    assert b.is_control_batch and b.is_transactional
    assert b.attributes == 0x30
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (PID, 4, -1)
    assert b.base_offset == (1 << 35) + 3 and b.last_offset_delta == 0 and b.records_count == 1
    assert b.leader_epoch == 9
    assert b.first_timestamp == b.max_timestamp == TS0 + 1
    (rec,) = list(b)
    assert rec.type == ctype and rec.version == 0
    assert rec.key == struct.pack(">hh", 0, ctype)
    assert rec.value == struct.pack(">hi", 0, 12)     # EndTransactionMarker v0: version, coordinator epoch
    truth = kpy.kp_decode(buf)
    assert truth["records"] == [] and truth["controls"][0]["coordinator_epoch"] == 12
    recs = kafkafmt.decode(buf)
    assert len(recs) == 0
    kpy.assert_records_match(recs, truth)
    c = recs.controls
    assert np.asarray(c.type).tolist() == [ctype]
    assert np.asarray(c.coordinator_epoch).tolist() == [12]
    assert np.asarray(c.offset).tolist() == [(1 << 35) + 3]
    assert np.asarray(c.version).tolist() == [0]
    assert np.asarray(c.timestamp).tolist() == [TS0 + 1]
    assert kafkafmt.CONTROL_TYPES[ctype] == ("COMMIT" if ctype == 1 else "ABORT")
    assert len(kafkafmt.decode(buf, include_control=True)) == 1


@pytest.mark.parametrize("kw", [dict(kind="prepare"), dict(kind=2), dict(kind="commit", producer_id=-1)])
def test_encode_control_rejects(kw):
    args = dict(offset=0, producer_id=1)
    kind = kw.pop("kind")
    args.update(kw)
    with pytest.raises(EncodeError):
        kafkafmt.encode_control(kind, **args)


def test_control_between_data_batches():
    data = kafkafmt.encode(values=[b"a", b"b"], timestamps=[TS0, TS0], producer_id=5, producer_epoch=0,
                           base_sequence=0, transactional=True)
    marker = kafkafmt.encode_control("abort", offset=2, producer_id=5, timestamp=TS0 + 1)
    more = kafkafmt.encode(values=[b"c"], timestamps=[TS0 + 2], base_offset=3)
    buf = data + marker + more
    truth = kpy.kp_decode(buf)
    recs = kafkafmt.decode(buf)
    kpy.assert_records_match(recs, truth)
    assert recs.value.to_pylist() == [b"a", b"b", b"c"]
    assert np.asarray(recs.controls.offset).tolist() == [2]


@pytest.mark.parametrize("delta", [0, 4, INT32_MAX])
@pytest.mark.parametrize("txn", [False, True])
def test_encode_empty_batch(delta, txn):
    base = (1 << 40) + 1
    buf = encode_empty_batch(base_offset=base, last_offset=base + delta, timestamp=TS0 + 9, producer_id=PID,
                             producer_epoch=3, base_sequence=41, transactional=txn, partition_leader_epoch=6)
    assert len(buf) == 61
    (b,) = kp_batches(buf)
    assert b.records_count == 0 and list(b) == []
    assert b.base_offset == base and b.last_offset == base + delta
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (PID, 3, 41)
    assert b.is_transactional == txn and not b.is_control_batch
    assert b.compression_type == 0 and b.leader_epoch == 6
    assert b.max_timestamp == TS0 + 9
    recs = kafkafmt.decode(buf)
    assert len(recs) == 0 and len(recs.batches) == 1
    assert np.asarray(recs.batches.record_count).tolist() == [0]
    assert np.asarray(recs.batches.last_offset).tolist() == [base + delta]
    assert bool(np.asarray(recs.batches.crc_valid)[0])
    kpy.assert_records_match(recs, kpy.kp_decode(buf))


def test_encode_empty_batch_default_last_offset_and_errors():
    (b,) = kp_batches(encode_empty_batch(base_offset=10, timestamp=TS0))
    assert b.last_offset == 10
    with pytest.raises(EncodeError):
        encode_empty_batch(base_offset=10, last_offset=9, timestamp=TS0)


def test_encode_empty_batch_first_timestamp_is_no_timestamp():
    (b,) = kp_batches(encode_empty_batch(base_offset=10, last_offset=12, timestamp=TS0))
    assert b.first_timestamp == -1
    assert b.max_timestamp == TS0


# ---------------------------------------------------------------------------------------------------------
# inputs: Records, Arrow, pandas, dict, sequences
def _v2_recs(n=9, feature="headers", start=50):
    return kpy.make_records(start, n, feature)


@pytest.mark.parametrize("feature", ["plain", "headers", "null_keys", "null_values", "empty_values", "gaps"])
def test_records_roundtrip_identical_bytes(feature):
    """A kafka-python-built uncompressed v2 batch -> kafkafmt.decode -> kafkafmt.encode: same bytes."""
    recs = _v2_recs(9, feature)
    buf = kpy.build_v2(recs, 0)
    assert kafkafmt.encode(kafkafmt.decode(buf)) == buf
    # several batches: same boundaries via max_records
    parts = [kpy.build_v2(recs[i:i + 3], 0) for i in range(0, 9, 3)]
    buf = b"".join(parts)
    assert kafkafmt.encode(kafkafmt.decode(buf), max_records=3) == buf


@pytest.mark.parametrize("codec", codecs_for(2))
def test_reencode_own_output_identical(codec):
    recs = _v2_recs(20, "headers")
    kw = dict(keys=[r.key for r in recs], values=[r.value for r in recs], timestamps=[r.timestamp for r in recs],
              headers=[list(r.headers) for r in recs], offsets=[r.offset for r in recs])
    buf = kafkafmt.encode(compression=codec, max_records=6, **kw)
    again = kafkafmt.encode(kafkafmt.decode(buf), compression=codec, max_records=6)
    assert again == buf


def test_records_slice_input():
    recs = _v2_recs(12, "headers")
    full = kafkafmt.decode(kpy.build_v2(recs, 0))
    sub = full[3:8]
    out = kafkafmt.decode(kafkafmt.encode(sub))
    assert_kafkafmt_equals(out, expected_rows(2, "plain", recs[3:8]))


def _arrow_table(recs, ts_type="timestamp", with_headers=True, null_header_lists=True):
    import pyarrow as pa
    hdr_t = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    cols = {
        "key": pa.array([r.key for r in recs], pa.binary()),
        "value": pa.array([r.value for r in recs], pa.binary()),
        "offset": pa.array([r.offset for r in recs], pa.int64()),
    }
    ts = [r.timestamp for r in recs]
    if ts_type == "timestamp":
        cols["timestamp"] = pa.array(ts, pa.timestamp("ms", tz="UTC"))
    elif ts_type == "timestamp_us":
        cols["timestamp"] = pa.array([t * 1000 for t in ts], pa.timestamp("us"))
    else:
        cols["timestamp"] = pa.array(ts, pa.int64())
    if with_headers:
        hl = []
        for r in recs:
            if not r.headers and null_header_lists:
                hl.append(None)
            else:
                hl.append([{"key": k, "value": v} for k, v in r.headers])
        cols["headers"] = pa.array(hl, hdr_t)
    return pa.table(cols)


@pytest.mark.parametrize("ts_type", ["timestamp", "timestamp_us", "int64"])
@pytest.mark.parametrize("null_lists", [True, False])
def test_arrow_table_input(ts_type, null_lists):
    recs = _v2_recs(10, "headers") + [kpy.Rec(1000, TS0, None, None, ())]
    t = _arrow_table(recs, ts_type, null_header_lists=null_lists)
    buf = kafkafmt.encode(t)
    rows = expected_rows(2, "headers", recs)
    assert_kafkafmt_equals(kafkafmt.decode(buf), rows)
    truth = kpy.kp_decode(buf)
    assert [r["headers"] for r in truth["records"]] == [r["headers"] for r in rows]
    assert [r["offset"] for r in truth["records"]] == [r.offset for r in recs]
    # sliced and chunked tables
    import pyarrow as pa
    assert_kafkafmt_equals(kafkafmt.decode(kafkafmt.encode(t.slice(3, 5))), rows[3:8])
    chunked = pa.concat_tables([t.slice(0, 4), t.slice(4)])
    assert kafkafmt.encode(chunked) == buf
    # a RecordBatch too
    assert kafkafmt.encode(t.to_batches()[0]) == kafkafmt.encode(pa.Table.from_batches(t.to_batches()[:1]))


def test_arrow_roundtrip_via_to_arrow():
    recs = _v2_recs(10, "headers")
    buf = kpy.build_v2(recs, 0)
    assert kafkafmt.encode(kafkafmt.decode(buf).to_arrow()) == buf


def test_pandas_input():
    import pandas as pd
    recs = _v2_recs(10, "headers") + [kpy.Rec(2000, TS0 - 5, b"k", None, ())]
    df = pd.DataFrame({
        "key": [r.key for r in recs],
        "value": [r.value for r in recs],
        "offset": [r.offset for r in recs],
        "timestamp": pd.to_datetime([r.timestamp for r in recs], unit="ms", utc=True),
        "headers": [[{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in recs],
    })
    rows = expected_rows(2, "headers", recs)
    assert_kafkafmt_equals(kafkafmt.decode(kafkafmt.encode(df)), rows)
    # int64 ms timestamps, naive datetime64[ns]
    df2 = df.assign(timestamp=[r.timestamp for r in recs])
    assert_kafkafmt_equals(kafkafmt.decode(kafkafmt.encode(df2)), rows)
    df3 = df.assign(timestamp=df["timestamp"].dt.tz_localize(None))
    assert_kafkafmt_equals(kafkafmt.decode(kafkafmt.encode(df3)), rows)
    # what kafkafmt's own to_pandas gives goes back unchanged
    buf = kpy.build_v2(recs[:10], 0)
    assert kafkafmt.encode(kafkafmt.decode(buf).to_pandas()) == buf


def test_pandas_without_optional_columns():
    import pandas as pd
    df = pd.DataFrame({"value": [b"a", b"bb", None]})
    out = kafkafmt.decode(kafkafmt.encode(df, base_offset=7))
    assert out.key.to_pylist() == [None, None, None]
    assert out.value.to_pylist() == [b"a", b"bb", None]
    assert np.asarray(out.offset).tolist() == [7, 8, 9]


def test_dict_and_sequence_inputs():
    recs = _v2_recs(6, "headers")
    d = dict(key=[r.key for r in recs], value=[r.value for r in recs], timestamp=[r.timestamp for r in recs],
             offset=[r.offset for r in recs], headers=[list(r.headers) for r in recs])
    rows = expected_rows(2, "headers", recs)
    a = kafkafmt.encode(d)
    assert_kafkafmt_equals(kafkafmt.decode(a), rows)
    b = kafkafmt.encode(keys=tuple(d["key"]), values=iter(d["value"]), timestamps=np.array(d["timestamp"]),
                        offsets=np.array(d["offset"], dtype=np.uint64), headers=d["headers"])
    assert a == b
    # bytearray / memoryview values are bytes too
    c = kafkafmt.encode(values=[bytearray(b"x"), memoryview(b"yz")], keys=[memoryview(b"k"), None],
                        timestamps=[1, 2])
    assert kafkafmt.decode(c).value.to_pylist() == [b"x", b"yz"]


def test_defaults_offsets_and_current_time():
    before = int(time.time() * 1000)
    out = kafkafmt.decode(kafkafmt.encode(values=[b"a", b"b", b"c"], base_offset=40))
    after = int(time.time() * 1000)
    assert np.asarray(out.offset).tolist() == [40, 41, 42]
    ts = np.asarray(out.timestamp)
    assert ((ts >= before) & (ts <= after)).all()
    assert out.key.to_pylist() == [None] * 3


def test_empty_input():
    assert kafkafmt.encode(values=[]) == b""
    for magic in (0, 1):
        assert kafkafmt.encode(values=[], magic=magic, compression="gzip") == b""


def test_partition_leader_epoch():
    buf = kafkafmt.encode(values=[b"a"] * 5, timestamps=[TS0] * 5, max_records=2, partition_leader_epoch=42)
    assert [b.leader_epoch for b in kp_batches(buf)] == [42, 42, 42]


# ---------------------------------------------------------------------------------------------------------
# bad input
BAD = {
    "offsets_backwards": dict(values=[b"a", b"b"], offsets=[5, 4]),
    "offsets_duplicated": dict(values=[b"a", b"b", b"c"], offsets=[5, 6, 6]),
    "offset_negative": dict(values=[b"a"], offsets=[-1]),
    "key_str": dict(values=[b"a"], keys=["k"]),
    "key_int": dict(values=[b"a"], keys=[3]),
    "value_str": dict(values=["a"]),
    "codec_unknown": dict(values=[b"a"], compression="brotli"),
    "codec_unknown_id": dict(values=[b"a"], compression=9),
    "zstd_magic0": dict(values=[b"a"], compression="zstd", magic=0),
    "zstd_magic1": dict(values=[b"a"], compression="zstd", magic=1),
    "headers_magic0": dict(values=[b"a"], headers=[[("h", b"v")]], magic=0),
    "headers_magic1": dict(values=[b"a"], headers=[[("h", b"v")]], magic=1),
    "lat_without_time": dict(values=[b"a"], timestamp_type="LogAppendTime"),
    "lat_without_time_v1": dict(values=[b"a"], timestamp_type="LogAppendTime", magic=1),
    "keys_short": dict(values=[b"a", b"b"], keys=[b"k"]),
    "timestamps_short": dict(values=[b"a", b"b"], timestamps=[1]),
    "offsets_long": dict(values=[b"a", b"b"], offsets=[1, 2, 3]),
    "headers_short": dict(values=[b"a", b"b"], headers=[[]]),
    "header_value_str": dict(values=[b"a"], headers=[[("h", "v")]]),
    "header_not_pair": dict(values=[b"a"], headers=[[("h",)]]),
    "magic_3": dict(values=[b"a"], magic=3),
    "timestamp_type_unknown": dict(values=[b"a"], timestamp_type="SomeTime"),
    "producer_id_v1": dict(values=[b"a"], magic=1, producer_id=4),
    "transactional_v0": dict(values=[b"a"], magic=0, transactional=True),
    "timestamps_text": dict(values=[b"a"], timestamps=["yesterday"]),
    "nothing": dict(),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_encode_error(name):
    with pytest.raises(EncodeError) as ei:
        kafkafmt.encode(**BAD[name])
    assert len(str(ei.value)) > 10
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, kafkafmt.KafkafmtError)


@pytest.mark.parametrize("name,words", [
    ("offsets_backwards", ["offset", "increase"]), ("offsets_duplicated", ["offset", "increase"]),
    ("key_str", ["key", "str"]), ("key_int", ["key", "int"]), ("codec_unknown", ["brotli"]),
    ("zstd_magic0", ["zstd", "magic"]), ("zstd_magic1", ["zstd", "magic"]), ("headers_magic1", ["header", "magic"]),
    ("lat_without_time", ["log_append_time"]), ("keys_short", ["1", "2"]), ("timestamps_short", ["timestamp"]),
])
def test_error_messages_are_clear(name, words):
    with pytest.raises(EncodeError) as ei:
        kafkafmt.encode(**BAD[name])
    msg = str(ei.value).lower()
    for w in words:
        assert w.lower() in msg, f"{w!r} not in {msg!r}"


def test_bad_table_inputs():
    import pandas as pd
    import pyarrow as pa
    with pytest.raises(EncodeError, match="value"):
        kafkafmt.encode(pa.table({"key": [b"a"]}))
    with pytest.raises(EncodeError):
        kafkafmt.encode(pa.table({"value": pa.array([1, 2])}))
    with pytest.raises(EncodeError):
        kafkafmt.encode(pd.DataFrame({"value": [1.5]}))
    with pytest.raises(EncodeError):
        kafkafmt.encode([b"a", b"b"])
    with pytest.raises(EncodeError):
        kafkafmt.encode(pd.DataFrame({"value": [b"a", b"b"], "offset": [3, 3]}))
    with pytest.raises(EncodeError):
        kafkafmt.encode(pa.table({"value": pa.array([b"a"]),
                                  "headers": pa.array([[{"key": None, "value": b"x"}]],
                                                      pa.list_(pa.struct([("key", pa.string()),
                                                                          ("value", pa.binary())])))}))


def test_fractional_timestamps_rejected():
    with pytest.raises(EncodeError):
        kafkafmt.encode(values=[b"a"], timestamps=[1.5])


def test_offset_too_large_message():
    with pytest.raises(EncodeError, match="2\\^63|too large|int64|9223372036854775808"):
        kafkafmt.encode(values=[b"a"], offsets=[2**63])


def test_transactional_needs_producer_id():
    with pytest.raises(EncodeError):
        kafkafmt.encode(values=[b"a"], transactional=True)


_PARAM_BUG = "BUG: out-of-range writer parameter raises {} instead of EncodeError"
_LAT_BUG = ("BUG: a negative log_append_time is silently replaced by the max record timestamp (the kernel "
            "treats < 0 as 'no override') while the LogAppendTime bit is set")


def _bad(kw, id, reason):
    return pytest.param(kw, id=id)


BAD_PARAMS = [
    _bad(dict(max_records=-1), "max_records_negative", _PARAM_BUG.format("IndexError")),
    _bad(dict(compression="gzip", compression_level=99), "gzip_level_99", _PARAM_BUG.format("a bare zlib ValueError")),
    _bad(dict(compression="zstd", compression_level=99), "zstd_level_99", _PARAM_BUG.format("a bare zstd ValueError")),
    _bad(dict(producer_id=1, producer_epoch=70000), "producer_epoch_70000", _PARAM_BUG.format("OverflowError")),
    _bad(dict(partition_leader_epoch=2**40), "leader_epoch_2_40", _PARAM_BUG.format("OverflowError")),
    _bad(dict(producer_id=2**64), "producer_id_2_64", _PARAM_BUG.format("OverflowError")),
    _bad(dict(timestamp_type="LogAppendTime", log_append_time=-1), "log_append_time_negative", _LAT_BUG),
]


@pytest.mark.parametrize("kind", ["arrow_int64", "arrow_timestamp", "pandas_nat"])
def test_null_timestamps_are_not_garbage(kind):
    import pandas as pd
    import pyarrow as pa
    if kind == "arrow_int64":
        t = pa.table({"value": [b"a", b"b"], "timestamp": pa.array([TS0, None], pa.int64())})
    elif kind == "arrow_timestamp":
        t = pa.table({"value": [b"a", b"b"], "timestamp": pa.array([TS0, None], pa.timestamp("ms"))})
    else:
        t = pd.DataFrame({"value": [b"a", b"b"], "timestamp": pd.to_datetime([TS0, None], unit="ms")})
    try:
        buf = kafkafmt.encode(t)
    except EncodeError:
        return
    assert np.asarray(kafkafmt.decode(buf).timestamp).tolist() == [TS0, -1]


def test_pandas_all_empty_header_lists():
    import pandas as pd
    df = pd.DataFrame({"value": [b"a", b"b"], "headers": [[], []]})
    out = kafkafmt.decode(kafkafmt.encode(df))
    assert out.headers.to_pylist() == [[], []]


@pytest.mark.parametrize("kw", BAD_PARAMS)
def test_bad_parameters_raise_encode_error(kw):
    with pytest.raises(EncodeError):
        kafkafmt.encode(values=[b"a"] * 5, timestamps=[TS0] * 5, **kw)


# ---------------------------------------------------------------------------------------------------------
# batch splitting
def _sizes(buf):
    recs = kafkafmt.decode(buf)
    return np.asarray(recs.batches.size), np.asarray(recs.batches.record_count)


@pytest.mark.parametrize("max_records", [1, 3, 7, 100])
@pytest.mark.parametrize("magic,codec", [(2, "none"), (2, "zstd"), (1, "gzip"), (0, "snappy")])
def test_max_records(max_records, magic, codec):
    n = 23
    buf = kafkafmt.encode(values=[kpy.compressible(i) for i in range(n)], timestamps=[TS0 + i for i in range(n)],
                          magic=magic, compression=codec, max_records=max_records)
    counts = [b.records_count if isinstance(b, DefaultRecordBatch) else len(list(b)) for b in kp_batches(buf)]
    assert sum(counts) == n
    assert max(counts) <= max_records
    assert len(counts) == -(-n // max_records)


def _typical(n, value_size, seed=1):
    rnd = np.random.default_rng(seed)
    values = [rnd.integers(0, 256, value_size, dtype=np.uint8).tobytes() for _ in range(n)]
    keys = [b"customer-%04d" % (i % 97) for i in range(n)]
    return keys, values, [TS0 + 10 * i for i in range(n)]


@pytest.mark.parametrize("batch_size", [512, 4096, 16384, 100_000])
@pytest.mark.parametrize("value_size", [10, 100, 1000])
def test_batch_size_roughly_honoured(batch_size, value_size):
    keys, values, ts = _typical(1500, value_size)
    buf = kafkafmt.encode(keys=keys, values=values, timestamps=ts, batch_size=batch_size)
    sizes, counts = _sizes(buf)
    total = int(sizes.sum())
    multi = counts > 1
    # a batch is never much bigger than batch_size (unless it holds one record)...
    assert (sizes[multi] <= batch_size * 1.10).all(), f"batch sizes {sizes.max()} > {batch_size} * 1.1"
    # ... and batches are not needlessly small: all but the last are filled to more than half
    if len(sizes) > 1:
        one_record = 12 + 61 + value_size + 30
        assert (sizes[:-1] >= min(batch_size, one_record) * 0.5).all()
        assert len(sizes) <= 2 * total / batch_size + 2
    # a record bigger than batch_size gets a batch of its own
    if value_size + 100 > batch_size:
        assert (counts == 1).all()


@pytest.mark.parametrize("spread_ts", [False, True])
def test_batch_size_is_a_cap_like_java(spread_ts):
    keys, values, ts = _typical(3000, 10)
    if spread_ts:
        rnd = np.random.default_rng(3)
        ts = (TS0 + rnd.integers(-2**40, 2**40, len(ts))).tolist()
    buf = kafkafmt.encode(keys=keys, values=values, timestamps=ts, batch_size=16384)
    sizes, counts = _sizes(buf)
    assert (sizes[counts > 1] <= 16384).all(), f"largest batch {sizes.max()} bytes > batch_size 16384"


@pytest.mark.parametrize("magic,codec", [(2, "none"), (2, "lz4"), (1, "gzip"), (1, "none"), (0, "gzip")])
def test_offset_span_splits_batches(magic, codec):
    offsets = [0, 1, INT32_MAX, INT32_MAX + 1, 2 * INT32_MAX + 5, 2 * INT32_MAX + 6, (1 << 62), (1 << 62) + INT32_MAX]
    n = len(offsets)
    buf = kafkafmt.encode(values=[b"v%d" % i for i in range(n)], timestamps=[TS0] * n, offsets=offsets,
                          magic=magic, compression=codec)
    truth = kpy.kp_decode(buf)
    assert [r["offset"] for r in truth["records"]] == offsets
    recs = kafkafmt.decode(buf)
    assert np.asarray(recs.offset).tolist() == offsets
    b = recs.batches
    span = np.asarray(b.last_offset) - np.asarray(b.base_offset)
    assert (span <= INT32_MAX).all()
    if magic == 2 or codec != "none":
        # greedy: [0, 1, MAX] (a delta of exactly 2^31-1 fits), [MAX+1] (2MAX+5 is MAX+4 past it),
        # [2MAX+5, 2MAX+6], [2^62, 2^62+MAX]
        assert np.asarray(b.record_count).tolist() == [3, 1, 2, 2]


def test_offset_delta_exactly_int32_max_in_one_batch():
    buf = kafkafmt.encode(values=[b"a", b"b"], offsets=[10, 10 + INT32_MAX], timestamps=[TS0, TS0])
    (b,) = kp_batches(buf)
    assert b.last_offset_delta == INT32_MAX
    buf = kafkafmt.encode(values=[b"a", b"b"], offsets=[10, 11 + INT32_MAX], timestamps=[TS0, TS0])
    assert len(kp_batches(buf)) == 2


def test_headers_count_in_batch_size():
    """Records with big headers and tiny values: the headers must count towards batch_size."""
    n = 200
    headers = [[("trace", b"x" * 200), ("span", b"y" * 200)] for _ in range(n)]
    buf = kafkafmt.encode(values=[b"v"] * n, headers=headers, timestamps=[TS0] * n, batch_size=4096)
    sizes, counts = _sizes(buf)
    assert len(sizes) >= n * 400 // 4096
    assert (sizes[counts > 1] <= 4096 * 1.1).all()
