"""Property tests of the writer: random record sets -> kafkafmt.encode -> kafkafmt.decode (and, for a
subset, kafka-python's readers) -> exactly the records that went in, in batches that respect the limits."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kpy

import kafkafmt

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

payload = st.one_of(st.none(), st.just(b""), st.binary(max_size=300),
                    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=3), st.integers(1, 100)))
header_key = st.one_of(st.text(max_size=10), st.sampled_from(["trace-id", "ünïcode", "ключ", "🙂", ""]))
header_lists = st.lists(st.tuples(header_key, st.one_of(st.none(), st.just(b""), st.binary(max_size=30))),
                        max_size=4)


@st.composite
def record_sets(draw):
    magic = draw(st.sampled_from([0, 1, 2]))
    codecs = ["none", "gzip", "snappy", "lz4"] + (["zstd"] if magic == 2 else [])
    codec = draw(st.sampled_from(codecs))
    n = draw(st.integers(0, 40))
    base = draw(st.one_of(st.integers(0, 1000), st.integers(0, 2**62), st.just(INT32_MAX - 1)))
    offsets = []
    off = base
    for _ in range(n):
        offsets.append(off)
        off += 1 + draw(st.one_of(st.just(0), st.just(0), st.integers(0, 1000), st.integers(0, 2**40)))
    ts0 = draw(st.one_of(st.integers(0, 2**45), st.just(kpy.TS0)))
    timestamps = []
    for _ in range(n):
        ts0 = max(0, ts0 + draw(st.one_of(st.integers(-5000, 5000), st.integers(-2**40, 2**40))))
        timestamps.append(ts0)
    keys = [draw(payload) for _ in range(n)]
    values = [draw(payload) for _ in range(n)]
    kw = dict(keys=keys, values=values, timestamps=timestamps, offsets=offsets, magic=magic, compression=codec,
              batch_size=draw(st.sampled_from([1, 64, 512, 4096, 16384, 1 << 20])),
              max_records=draw(st.one_of(st.none(), st.integers(1, 12))))
    if magic == 2 and draw(st.booleans()):
        kw["headers"] = [draw(header_lists) for _ in range(n)]
    lat = None
    if magic >= 1 and draw(st.integers(0, 4)) == 0:
        lat = draw(st.integers(0, 2**45))
        kw.update(timestamp_type="LogAppendTime", log_append_time=lat)
    if magic == 2 and draw(st.booleans()):
        kw.update(producer_id=draw(st.integers(0, 2**63 - 1)), producer_epoch=draw(st.integers(0, 32767)),
                  base_sequence=draw(st.integers(0, INT32_MAX)), transactional=draw(st.booleans()))
    return kw


def expected(kw):
    n = len(kw["values"])
    magic = kw["magic"]
    lat = kw.get("log_append_time")
    if magic == 0:
        ts, tt = [-1] * n, [-1] * n
    elif lat is not None:
        ts, tt = [lat] * n, [1] * n
    else:
        ts, tt = list(kw["timestamps"]), [0] * n
    headers = [[tuple(h) for h in hs] for hs in kw.get("headers", [[]] * n)]
    return dict(offset=list(kw["offsets"]), timestamp=ts, timestamp_type=tt, key=list(kw["keys"]),
                value=list(kw["values"]), headers=headers)


def check_batches(recs, kw, buf):
    b = recs.batches
    n = len(kw["values"])
    magic, codec = kw["magic"], kpy.CODEC_IDS[kw["compression"]]
    assert np.asarray(b.crc_valid).all()
    assert (np.asarray(b.magic) == magic).all()
    assert (np.asarray(b.codec) == codec).all()
    count = np.asarray(b.record_count)
    assert int(count.sum()) == n
    span = np.asarray(b.last_offset) - np.asarray(b.base_offset)
    assert (span >= 0).all() and (span <= INT32_MAX).all()
    if magic == 2 or codec:
        if kw["max_records"]:
            assert (count <= kw["max_records"]).all()
        assert (count >= 1).all()
    else:
        assert (count == 1).all()
    if magic == 2:
        tt = 1 if kw.get("log_append_time") is not None else 0
        assert (np.asarray(b.timestamp_type) == tt).all()
        pid = kw.get("producer_id", -1)
        assert (np.asarray(b.producer_id) == pid).all()
        assert (np.asarray(b.is_transactional) == bool(kw.get("transactional"))).all()
        assert not np.asarray(b.is_control).any()
        seq = np.asarray(b.base_sequence).tolist()
        if "base_sequence" in kw:
            want = []
            s = kw["base_sequence"]
            for c in count.tolist():
                want.append(s)
                s = (s + c) % (1 << 31)
            assert seq == want
        else:
            assert set(seq) <= {-1}
    # the batches tile the buffer
    pos = np.asarray(b.position)
    size = np.asarray(b.size)
    assert (pos[1:] == pos[:-1] + size[:-1]).all()
    if len(pos):
        assert pos[0] == 0 and pos[-1] + size[-1] == len(buf)
    assert recs.valid_bytes == len(buf) and recs.trailing_bytes == 0 and not recs.truncated


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(record_sets(), st.booleans())
def test_encode_decode_roundtrip(kw, with_kafka_python):
    buf = kafkafmt.encode(**kw)
    recs = kafkafmt.decode(buf)
    exp = expected(kw)
    assert len(recs) == len(exp["offset"])
    for name in ("offset", "timestamp", "timestamp_type"):
        assert np.asarray(getattr(recs, name)).tolist() == exp[name], name
    kpy.check_binary_column(recs.key, exp["key"], "key")
    kpy.check_binary_column(recs.value, exp["value"], "value")
    assert [[tuple(h) for h in hs] for hs in recs.headers.to_pylist()] == exp["headers"]
    check_batches(recs, kw, buf)
    if with_kafka_python:
        truth = kpy.kp_decode(buf)
        assert all(b["crc_valid"] for b in truth["batches"])
        got = truth["records"]
        assert [r["offset"] for r in got] == exp["offset"]
        assert [r["timestamp"] for r in got] == exp["timestamp"]
        assert [r["timestamp_type"] for r in got] == exp["timestamp_type"]
        assert [r["key"] for r in got] == exp["key"]
        assert [r["value"] for r in got] == exp["value"]
        assert [r["headers"] for r in got] == exp["headers"]
        kpy.assert_records_match(recs, truth)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(record_sets())
def test_reencode_is_stable(kw):
    """encode(decode(encode(x))) == encode(x) for v2 CreateTime (same limits, same producer fields)."""
    if kw["magic"] != 2 or kw.get("log_append_time") is not None:
        kw = dict(kw, magic=2, timestamp_type="CreateTime", log_append_time=None)
        kw.pop("log_append_time")
    first = kafkafmt.encode(**kw)
    rest = {k: v for k, v in kw.items() if k not in ("keys", "values", "timestamps", "offsets", "headers")}
    again = kafkafmt.encode(kafkafmt.decode(first), **rest)
    assert again == first
