"""kafkafmt against kafka-python on buffers built for every magic x codec x feature (see kpy.matrix)."""
import struct

import numpy as np
import pyarrow as pa
import pytest

import kpy

import kafkafmt
from kafkafmt.errors import CorruptRecordError, CrcError  # noqa: E402

MATRIX = kpy.matrix()


def _id(case):
    return "v%d-%s-%s" % case


@pytest.fixture(scope="module", params=MATRIX, ids=[_id(c) for c in MATRIX])
def case(request):
    magic, codec, feature = request.param
    return request.param, kpy.make_case(magic, codec, feature)


def test_builder_wrote_what_was_asked(case):
    """Guard for the builders themselves: the matrix really covers magic x codec."""
    (magic, codec, feature), buf = case
    truth = kpy.kp_decode(buf, include_control=True)
    data = [b for b in truth["batches"] if not b["is_control"] and b["record_count"]]
    assert {b["magic"] for b in data} == {magic}
    assert {b["codec"] for b in data} == {kpy.CODEC_IDS[codec]}
    assert all(b["crc_valid"] for b in truth["batches"])


def _np_u8(b):
    return np.frombuffer(b, dtype=np.uint8)


@pytest.mark.parametrize("container", [bytes, bytearray, memoryview, _np_u8], ids=["bytes", "bytearray",
                                                                                    "memoryview", "ndarray"])
def test_crosscheck(case, container):
    (magic, codec, feature), buf = case
    recs = kafkafmt.decode(container(buf))
    kpy.assert_records_match(recs, kpy.kp_decode(buf))


def test_crosscheck_include_control(case):
    (magic, codec, feature), buf = case
    recs = kafkafmt.decode(buf, include_control=True)
    truth = kpy.kp_decode(buf, include_control=True)
    kpy.assert_records_match(recs, truth)
    default = kafkafmt.decode(buf)
    assert len(recs) == len(default) + len(default.controls)
    ctl_rows = np.asarray(recs.batches.is_control)[np.asarray(recs.batch_index)]
    assert np.asarray(recs.offset)[~ctl_rows].tolist() == np.asarray(default.offset).tolist()


def test_read_segment(case, tmp_path):
    (magic, codec, feature), buf = case
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(buf)
    kpy.assert_records_match(kafkafmt.read_segment(p), kpy.kp_decode(buf))
    kpy.assert_records_match(kafkafmt.read_segment(str(p)), kpy.kp_decode(buf))


@pytest.mark.parametrize("codec", kpy.codecs_for(2))
def test_mixed_magics(codec):
    buf = kpy.make_mixed(codec)
    recs = kafkafmt.decode(buf)
    truth = kpy.kp_decode(buf)
    kpy.assert_records_match(recs, truth)
    assert set(np.asarray(recs.batches.magic).tolist()) == {0, 1, 2}
    ts = np.asarray(recs.timestamp)
    tt = np.asarray(recs.timestamp_type)
    magic_of_rec = np.asarray(recs.batches.magic)[np.asarray(recs.batch_index)]
    assert (ts[magic_of_rec == 0] == -1).all() and (tt[magic_of_rec == 0] == -1).all()
    assert (ts[magic_of_rec > 0] > 0).all() and (tt[magic_of_rec > 0] == 0).all()


# --- semantics kafka-python shares with Kafka, checked explicitly ----------------------------------------------
@pytest.mark.parametrize("codec", kpy.codecs_for(2))
def test_v2_log_append_time(codec):
    recs = kafkafmt.decode(kpy.make_case(2, codec, "log_append_time"))
    assert (np.asarray(recs.timestamp) == kpy.T_APPEND).all()
    assert (np.asarray(recs.timestamp_type) == 1).all()
    assert (np.asarray(recs.batches.timestamp_type) == 1).all()
    assert (np.asarray(recs.batches.max_timestamp) == kpy.T_APPEND).all()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_v1_relative_offsets(codec):
    base = (1 << 40) + 7
    recs = [kpy.Rec(base + i * 2, kpy.TS0 + i, b"k", kpy.compressible(i)) for i in range(5)]
    buf = kpy.build_legacy(recs, 1, codec)
    assert struct.unpack_from(">q", buf, 0)[0] == base + 8       # wrapper offset = absolute last offset
    out = kafkafmt.decode(buf)
    assert np.asarray(out.offset).tolist() == [r.offset for r in recs]
    assert int(out.batches.base_offset[0]) == base and int(out.batches.last_offset[0]) == base + 8
    assert int(out.batches.record_count[0]) == 5
    assert int(out.batches.max_timestamp[0]) == kpy.TS0 + 4


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_v1_wrapper_offset_zero_takes_inner_offsets_as_is(codec):
    recs = [kpy.Rec(10 + i, kpy.TS0 + i, None, kpy.compressible(i)) for i in range(4)]
    buf = kpy.build_legacy(recs, 1, codec, mode="as_is")
    assert struct.unpack_from(">q", buf, 0)[0] == 0
    out = kafkafmt.decode(buf)
    assert np.asarray(out.offset).tolist() == [10, 11, 12, 13]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_v1_log_append_time_wrapper(codec):
    recs = [kpy.Rec(i, kpy.TS0 + i, None, kpy.compressible(i)) for i in range(4)]
    out = kafkafmt.decode(kpy.build_legacy(recs, 1, codec, log_append_time=kpy.T_APPEND))
    assert (np.asarray(out.timestamp) == kpy.T_APPEND).all()
    assert (np.asarray(out.timestamp_type) == 1).all()


def test_v1_create_time_wrapper_keeps_inner_timestamps():
    recs = [kpy.Rec(i, kpy.TS0 + 10 - i, None, kpy.compressible(i)) for i in range(4)]
    out = kafkafmt.decode(kpy.build_legacy(recs, 1, "gzip", wrapper_timestamp=kpy.TS0 + 10))
    assert np.asarray(out.timestamp).tolist() == [r.timestamp for r in recs]
    assert (np.asarray(out.timestamp_type) == 0).all()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_v0_has_no_timestamps(codec):
    out = kafkafmt.decode(kpy.make_case(0, codec, "plain"))
    assert (np.asarray(out.timestamp) == -1).all()
    assert (np.asarray(out.timestamp_type) == -1).all()
    assert (np.asarray(out.batches.timestamp_type) == -1).all()


def test_empty_batches_are_rows_without_records():
    buf = kpy.build_empty_v2(50, 9) + kpy.build_v2(kpy.make_records(60, 2), "none") + kpy.build_empty_v2(62, 0)
    out = kafkafmt.decode(buf)
    assert len(out) == 2 and len(out.batches) == 3
    assert np.asarray(out.batches.record_count).tolist() == [0, 2, 0]
    assert np.asarray(out.batches.base_offset).tolist() == [50, 60, 62]
    assert np.asarray(out.batches.last_offset).tolist() == [59, 61, 62]
    assert np.asarray(out.batch_index).tolist() == [1, 1]
    only_empty = kafkafmt.decode(kpy.build_empty_v2(0, 0))
    assert len(only_empty) == 0 and len(only_empty.batches) == 1


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_empty_batch_with_codec_bits(codec):
    """DefaultRecordBatch.iterator(): count() == 0 returns no records before any decompression."""
    buf = kpy.build_v2(kpy.make_records(0, 2), "none") + kpy.build_empty_v2(2, 3, codec=codec)
    out = kafkafmt.decode(buf)
    assert np.asarray(out.offset).tolist() == [0, 1]
    assert np.asarray(out.batches.codec).tolist() == [0, codec]
    assert np.asarray(out.batches.record_count).tolist() == [2, 0]


def test_empty_buffer():
    for buf in (b"", bytearray(), memoryview(b"")):
        out = kafkafmt.decode(buf)
        assert len(out) == 0 and len(out.batches) == 0 and len(out.controls) == 0
        assert out.valid_bytes == 0 and out.trailing_bytes == 0 and not out.truncated
        assert out.key.to_pylist() == [] and out.headers.to_pylist() == []
        assert out.to_arrow().num_rows == 0


def test_control_types_map():
    assert kafkafmt.CONTROL_TYPES[0].upper() == "ABORT" and kafkafmt.CONTROL_TYPES[1].upper() == "COMMIT"
    assert set(kafkafmt.CONTROL_TYPES) >= set(range(7))


def test_transactional_batch_fields():
    out = kafkafmt.decode(kpy.make_case(2, "lz4", "transactional"))
    b = out.batches
    txn = np.asarray(b.is_transactional).astype(bool)
    ctl = np.asarray(b.is_control).astype(bool)
    assert txn.all()
    assert ctl.tolist() == [False, True, False, True, False]
    assert (np.asarray(b.producer_id) == kpy.PRODUCER_ID).all()
    assert (np.asarray(b.producer_epoch) == 3).all()
    assert np.asarray(out.controls.type).tolist() == [1, 0]
    assert np.asarray(out.controls.coordinator_epoch).tolist() == [5, 6]
    assert len(out) == 4 + 5 + 6


# --- verify_crc ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("magic,codec", [(2, "none"), (2, "zstd"), (2, "gzip"), (1, "snappy"), (1, "none"),
                                         (0, "lz4"), (0, "none")])
def test_verify_crc(magic, codec):
    buf = bytearray(kpy.make_case(magic, codec, "plain"))
    truth = kpy.kp_decode(buf)
    bad = 1                                                     # corrupt the stored CRC of the 2nd batch
    pos = truth["batches"][bad]["position"]
    crc_at = pos + (17 if magic == 2 else 12)
    buf[crc_at] ^= 0x55
    with pytest.raises(CrcError) as ei:
        kafkafmt.decode(buf)
    err = ei.value
    assert isinstance(err, CorruptRecordError)
    assert err.position is not None and pos <= err.position < pos + truth["batches"][bad]["size"]
    want_off = truth["batches"][bad]["base_offset"] if magic == 2 else None
    if magic == 2:
        assert err.offset == want_off
    else:   # legacy: the shallow message's offset (Kafka's) or the first inner offset
        assert err.offset in (truth["batches"][bad]["base_offset"], truth["batches"][bad]["last_offset"])
    out = kafkafmt.decode(buf, verify_crc=False)
    truth2 = kpy.kp_decode(buf)
    kpy.assert_records_match(out, truth2)
    valid = np.asarray(out.batches.crc_valid).astype(bool).tolist()
    assert valid == [i != bad for i in range(len(valid))]
    assert np.asarray(out.batches.crc)[bad] == struct.unpack_from(">I", buf, crc_at)[0]


def test_crc_of_v2_excludes_base_offset_length_and_leader_epoch():
    buf = bytearray(kpy.build_v2(kpy.make_records(5, 3), "gzip"))
    struct.pack_into(">q", buf, 0, 1 << 50)
    struct.pack_into(">i", buf, 12, 99)
    out = kafkafmt.decode(buf)                                  # still valid: broker rewrites these fields
    assert int(out.offset[0]) == 1 << 50 and int(out.batches.partition_leader_epoch[0]) == 99


# --- slicing ----------------------------------------------------------------------------------------------------
SLICE_CASES = [(2, "zstd", "headers"), (2, "none", "control"), (1, "gzip", "null_values"), (0, "snappy", "gaps")]


@pytest.mark.parametrize("cell", SLICE_CASES, ids=[_id(c) for c in SLICE_CASES])
def test_slicing(cell):
    buf = kpy.make_case(*cell)
    recs = kafkafmt.decode(buf)
    truth = kpy.kp_decode(buf)["records"]
    n = len(recs)
    assert n == len(truth) and n > 8
    for a, b in [(0, n), (0, 0), (3, 9), (n - 1, n), (-4, None), (None, 2), (5, 3), (2, 10 ** 6)]:
        sub = recs[a:b]
        exp = truth[a:b]
        assert type(sub) is type(recs)
        assert len(sub) == len(exp)
        assert np.asarray(sub.offset).tolist() == [r["offset"] for r in exp]
        assert np.asarray(sub.timestamp).tolist() == [r["timestamp"] for r in exp]
        assert np.asarray(sub.timestamp_type).tolist() == [r["timestamp_type"] for r in exp]
        kpy.check_binary_column(sub.key, [r["key"] for r in exp], "key")
        kpy.check_binary_column(sub.value, [r["value"] for r in exp], "value")
        assert [[tuple(h) for h in hs] for hs in sub.headers.to_pylist()] == [r["headers"] for r in exp]
        assert len(np.asarray(sub.headers.offsets)) == len(exp) + 1
        # batch_index of a slice points at the same batch as before (whatever the slice keeps of the table)
        sbo = np.asarray(sub.batches.base_offset)[np.asarray(sub.batch_index)].tolist()
        obo = np.asarray(recs.batches.base_offset)[np.asarray(recs.batch_index)].tolist()[a:b]
        assert sbo == obo
        t = sub.to_arrow()
        assert t.num_rows == len(exp)
        assert t.column("offset").to_pylist() == [r["offset"] for r in exp]
        assert t.column("value").to_pylist() == [r["value"] for r in exp]
    sub2 = recs[2:9][1:4]
    assert np.asarray(sub2.offset).tolist() == [r["offset"] for r in truth[3:6]]
    assert sub2.value.to_pylist() == [r["value"] for r in truth[3:6]]


# --- Arrow and pandas -----------------------------------------------------------------------------------------
ARROW_CASES = [(2, "lz4", "headers"), (2, "none", "control"), (1, "snappy", "log_append_time"),
               (0, "gzip", "null_keys"), (2, "gzip", "empty_values"), (2, "zstd", "null_values")]


def _is_binary(t):
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)


@pytest.mark.parametrize("cell", ARROW_CASES, ids=[_id(c) for c in ARROW_CASES])
def test_to_arrow(cell):
    buf = kpy.make_case(*cell)
    recs = kafkafmt.decode(buf)
    truth = kpy.kp_decode(buf)["records"]
    t = recs.to_arrow()
    assert isinstance(t, pa.Table)
    assert t.num_rows == len(truth)
    names = t.schema.names
    for name in ("key", "value", "offset", "timestamp", "timestampType", "headers"):
        assert name in names, f"missing column {name}: {names}"
    s = t.schema
    assert _is_binary(s.field("key").type) and _is_binary(s.field("value").type)
    assert s.field("offset").type == pa.int64()
    assert s.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert s.field("timestampType").type == pa.int32()
    ht = s.field("headers").type
    assert pa.types.is_list(ht) or pa.types.is_large_list(ht)
    st = ht.value_type
    assert pa.types.is_struct(st) and [st.field(i).name for i in range(st.num_fields)] == ["key", "value"]
    assert pa.types.is_string(st.field("key").type) or pa.types.is_large_string(st.field("key").type)
    assert _is_binary(st.field("value").type)

    assert t.column("key").to_pylist() == [r["key"] for r in truth]
    assert t.column("value").to_pylist() == [r["value"] for r in truth]
    assert t.column("offset").to_pylist() == [r["offset"] for r in truth]
    assert t.column("timestampType").to_pylist() == [r["timestamp_type"] for r in truth]
    ts = t.column("timestamp").cast(pa.int64()).to_pylist()
    for got, r in zip(ts, truth):
        if r["timestamp"] == -1:
            assert got in (None, -1)
        else:
            assert got == r["timestamp"]
    heads = t.column("headers").to_pylist()
    for got, r in zip(heads, truth):
        if not r["headers"]:
            assert got is None, "headers must be null for a record without headers"
        else:
            assert [(h["key"], h["value"]) for h in got] == r["headers"]
    assert t.column("key").null_count == sum(r["key"] is None for r in truth)


@pytest.mark.parametrize("cell", ARROW_CASES[:3], ids=[_id(c) for c in ARROW_CASES[:3]])
def test_to_pandas(cell):
    buf = kpy.make_case(*cell)
    recs = kafkafmt.decode(buf)
    truth = kpy.kp_decode(buf)["records"]
    df = recs.to_pandas()
    assert len(df) == len(truth)
    for name in ("key", "value", "offset", "timestamp", "timestampType", "headers"):
        assert name in df.columns
    assert df["offset"].tolist() == [r["offset"] for r in truth]
    assert str(df["offset"].dtype) == "int64"
    assert str(df["timestamp"].dtype).startswith("datetime64[") and "UTC" in str(df["timestamp"].dtype)
    i = len(truth) // 2
    assert df["timestamp"].iloc[i].value // 10**6 == truth[i]["timestamp"]
    assert df["value"].iloc[i] == truth[i]["value"]
    assert df["key"].iloc[0] == truth[0]["key"]

    bdf = recs.batches.to_pandas()
    assert len(bdf) == len(recs.batches)
    assert bdf["base_offset"].tolist() == np.asarray(recs.batches.base_offset).tolist()
    bt = recs.batches.to_arrow()
    assert bt.num_rows == len(recs.batches) and "crc_valid" in bt.schema.names
    assert len(recs.controls.to_pandas()) == len(recs.controls)


def test_batches_table_column_dtypes():
    out = kafkafmt.decode(kpy.make_case(2, "gzip", "transactional"))
    b = out.batches
    for name in kpy.BATCH_COLUMNS:
        arr = np.asarray(getattr(b, name))
        assert len(arr) == len(b), name
    assert np.asarray(b.crc).dtype == np.uint32
    assert np.asarray(b.crc_valid).dtype == np.bool_
    assert np.asarray(b.base_offset).dtype == np.int64 and np.asarray(b.producer_id).dtype == np.int64
    c = out.controls
    assert np.asarray(c.type).dtype == np.int16 and np.asarray(c.version).dtype == np.int16
    assert np.asarray(c.coordinator_epoch).dtype == np.int32 and np.asarray(c.offset).dtype == np.int64


# --- legacy wrappers: Kafka's AbstractLegacyRecordBatch.DeepRecordsIterator ---------------------------------------
def _wrapper(inner: bytes, magic: int, codec: str, wrapper_offset: int, ts=kpy.TS0 + 100, attrs_extra=0):
    """A compressed legacy wrapper around an arbitrary inner message set."""
    from kafka import codec as kc
    comp = {"gzip": kc.gzip_encode, "snappy": kc.snappy_encode,
            "lz4": kc.lz4_encode_old_kafka if magic == 0 else kc.lz4_encode}[codec](bytes(inner))
    hdr = struct.pack(">qiIbb", wrapper_offset, 0, 0, magic, kpy.CODEC_IDS[codec] | attrs_extra)
    hdr += struct.pack(">q", ts) if magic else b""
    buf = bytearray(hdr + struct.pack(">ii", -1, len(comp)) + comp)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    kpy.fix_crc_legacy(buf)
    return bytes(buf)


def _inner(magic, n=6, first=0):
    return kpy.build_legacy([kpy.Rec(first + i, kpy.TS0 + i, None, b"v%d" % i) for i in range(n)], magic, "none")


@pytest.mark.parametrize("wrapper_offset", [2, -1, 4])
def test_v1_wrapper_offset_below_last_inner_is_rejected(wrapper_offset):
    """Current Kafka (AbstractLegacyRecordBatch.DeepRecordsIterator): a non-zero v1 wrapper offset
    below the last inner relative offset is an InvalidRecordException ("Found invalid wrapper offset
    in compressed v1 message set"). Older Kafka and kafka-python took the inner offsets as they were."""
    buf = _wrapper(_inner(1, 6), 1, "gzip", wrapper_offset)
    with pytest.raises(CorruptRecordError, match="wrapper offset") as ei:
        kafkafmt.decode(buf)
    assert ei.value.position == 0


def test_v1_wrapper_with_v0_inner_messages():
    """Inner magic 0 under a v1 wrapper: offsets converted (wrapper magic > 0), no timestamps (inner magic 0)."""
    out = kafkafmt.decode(_wrapper(_inner(0, 3), 1, "snappy", 12))
    assert np.asarray(out.offset).tolist() == [10, 11, 12]
    assert np.asarray(out.timestamp).tolist() == [-1, -1, -1]
    assert np.asarray(out.timestamp_type).tolist() == [-1, -1, -1]


def test_v0_wrapper_with_v1_inner_messages():
    """Inner magic 1 under a v0 wrapper: offsets as they are; inner timestamps; the wrapper's (no) type."""
    out = kafkafmt.decode(_wrapper(_inner(1, 3, first=7), 0, "gzip", 9))
    assert np.asarray(out.offset).tolist() == [7, 8, 9]
    assert np.asarray(out.timestamp).tolist() == [kpy.TS0, kpy.TS0 + 1, kpy.TS0 + 2]
    assert np.asarray(out.timestamp_type).tolist() == [-1, -1, -1]


def test_inner_message_crc():
    inner = bytearray(_inner(1, 3))
    inner[12] ^= 1                                          # the first inner message's CRC
    buf = _wrapper(inner, 1, "lz4", 2)
    with pytest.raises(CrcError):
        kafkafmt.decode(buf)
    out = kafkafmt.decode(buf, verify_crc=False)
    assert np.asarray(out.offset).tolist() == [0, 1, 2]


def test_v2_log_append_time_control_batch():
    buf = bytearray(kpy.build_control_v2(5, 1, timestamp=kpy.TS0, producer_id=3, producer_epoch=0))
    attrs = struct.unpack_from(">h", buf, kpy.V2_ATTR_AT)[0] | 0x08
    struct.pack_into(">h", buf, kpy.V2_ATTR_AT, attrs)
    struct.pack_into(">q", buf, kpy.V2_MAXTS_AT, kpy.T_APPEND)
    kpy.fix_crc_v2(buf)
    out = kafkafmt.decode(buf, include_control=True)
    assert np.asarray(out.controls.timestamp).tolist() == [kpy.T_APPEND]
    assert np.asarray(out.timestamp).tolist() == [kpy.T_APPEND]
    kpy.assert_records_match(out, kpy.kp_decode(buf, include_control=True))


def test_error_names_the_file_given():
    buf = bytearray(kpy.make_case(2, "none", "plain"))
    buf[40] ^= 1
    with pytest.raises(CrcError) as ei:
        kafkafmt.decode(buf, file="topic-0/00000000000000000000.log")
    assert ei.value.file == "topic-0/00000000000000000000.log"
    assert "topic-0/00000000000000000000.log" in str(ei.value)


def test_zero_padding_after_the_data_is_not_an_error():
    """Preallocated segments (log.preallocate) end in zeros after the last batch."""
    buf = kpy.make_case(2, "gzip", "plain")
    out = kafkafmt.decode(buf + bytes(4096))
    kpy.assert_records_match(out, kpy.kp_decode(buf), check_batches=False)
    assert out.valid_bytes == len(buf) and out.trailing_bytes == 4096


def test_many_batches_across_decode_chunks():
    """Several MiB of decompressed records in odd-sized batches of every codec, nulls everywhere: the
    decoder works in chunks, so validity bitmaps and offsets must join up across chunk boundaries."""
    import random
    rng = random.Random(5)
    parts, off = [], 0
    for bi in range(150):
        recs = []
        for _ in range(rng.choice([1, 3, 5, 7, 13])):
            key = None if rng.random() < 0.4 else b"k%d" % off
            val = None if rng.random() < 0.3 else kpy.compressible(off, rng.randint(1, 5000))
            hdr = tuple(("a%d" % j, None if rng.random() < 0.3 else b"x" * rng.randint(0, 5))
                        for j in range(rng.randint(0, 3)))
            recs.append(kpy.Rec(off, kpy.TS0 + off, key, val, hdr))
            off += 1
        parts.append(kpy.build_v2(recs, kpy.codecs_for(2)[bi % 5], require_codec=False))
    buf = b"".join(parts)
    out = kafkafmt.decode(buf)
    assert int(np.asarray(out.value.offsets)[-1]) > 3 << 20
    kpy.assert_records_match(out, kpy.kp_decode(buf))


@pytest.mark.parametrize("magic,codec", [(2, "none"), (2, "lz4"), (2, "zstd"), (2, "snappy"), (1, "none"),
                                         (0, "none")])
def test_builders_agree_with_memory_records_builder(magic, codec):
    """kpy's builders write what kafka-python's own MemoryRecordsBuilder writes (where both apply)."""
    from kafka.record.memory_records import MemoryRecordsBuilder
    recs = kpy.make_records(0, 5, "headers" if magic == 2 else "null_keys")
    mrb = MemoryRecordsBuilder(magic, kpy.CODEC_IDS[codec], batch_size=1 << 20)
    for r in recs:
        assert mrb.append(r.timestamp, r.key, r.value, list(r.headers)) is not None
    mrb.close()
    ours = kpy.build_v2(recs, codec) if magic == 2 else kpy.build_legacy(recs, magic, codec)
    assert bytes(mrb.buffer()) == ours
    kpy.assert_records_match(kafkafmt.decode(ours), kpy.kp_decode(bytes(mrb.buffer())))
