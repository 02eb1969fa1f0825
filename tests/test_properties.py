"""Property test: random record sets -> kafka-python builders -> kafkafmt.decode -> the same records."""
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kpy

import kafkafmt

nullable_bytes = st.one_of(st.none(), st.just(b""), st.binary(max_size=40),
                           st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=4), st.integers(1, 60)))
header_lists = st.lists(st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=16))),
                        max_size=3)
timestamps = st.one_of(st.integers(0, 2 ** 45), st.just(0), st.integers(kpy.TS0, kpy.TS0 + 10 ** 6))


@st.composite
def record_sets(draw):
    """Batches of random magic/codec; returns (buffer, expected records, expected batch rows)."""
    off = draw(st.one_of(st.integers(0, 1000), st.integers(0, 2 ** 62), st.just(2 ** 31 - 2)))
    parts, records, rows = [], [], []
    pos = 0
    for _ in range(draw(st.integers(1, 4))):
        magic = draw(st.sampled_from([0, 1, 2]))
        codec = draw(st.sampled_from(kpy.codecs_for(magic)))
        log_append = draw(st.one_of(st.none(), timestamps)) if magic else None
        if magic == 2 and draw(st.integers(0, 7)) == 0:
            delta = draw(st.integers(0, 5))
            b = kpy.build_empty_v2(off, delta)
            rows.append(dict(position=pos, base_offset=off, last_offset=off + delta, magic=2, record_count=0, codec=0))
            parts.append(b)
            pos += len(b)
            off += delta + 1
            continue
        recs = []
        for _ in range(draw(st.integers(1, 6))):
            headers = tuple(draw(header_lists)) if magic == 2 else ()
            recs.append(kpy.Rec(off, draw(timestamps), draw(nullable_bytes), draw(nullable_bytes), headers))
            off += 1 + draw(st.one_of(st.just(0), st.integers(0, 1000)))
        if magic == 2:
            b = kpy.build_v2(recs, codec, log_append_time=log_append, require_codec=False)
            written = struct.unpack_from(">h", b, kpy.V2_ATTR_AT)[0] & 7
        else:
            b = kpy.build_legacy(recs, magic, codec, log_append_time=log_append)
            written = b[17] & 7
        if magic == 2 or written:
            rows.append(dict(position=pos, base_offset=recs[0].offset,
                             last_offset=recs[-1].offset, magic=magic, record_count=len(recs), codec=written))
        else:       # uncompressed legacy: one row per message
            p = pos
            for r in recs:
                size = 12 + struct.unpack_from(">i", b, p - pos + 8)[0]
                rows.append(dict(position=p, base_offset=r.offset, last_offset=r.offset, magic=magic,
                                 record_count=1, codec=0))
                p += size
        for r in recs:
            if magic == 0:
                ts, tt = -1, -1
            elif log_append is not None:
                ts, tt = log_append, 1
            else:
                ts, tt = r.timestamp, 0
            records.append((r.offset, ts, tt, r.key, r.value, [tuple(h) for h in r.headers]))
        parts.append(b)
        pos += len(b)
    return b"".join(parts), records, rows


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_sets())
def test_roundtrip(case):
    buf, expected, rows = case
    recs = kafkafmt.decode(buf)
    assert len(recs) == len(expected)
    assert np.asarray(recs.offset).tolist() == [e[0] for e in expected]
    assert np.asarray(recs.timestamp).tolist() == [e[1] for e in expected]
    assert np.asarray(recs.timestamp_type).tolist() == [e[2] for e in expected]
    kpy.check_binary_column(recs.key, [e[3] for e in expected], "key")
    kpy.check_binary_column(recs.value, [e[4] for e in expected], "value")
    assert [[tuple(h) for h in hs] for hs in recs.headers.to_pylist()] == [e[5] for e in expected]
    b = recs.batches
    assert len(b) == len(rows)
    for name in ("position", "base_offset", "last_offset", "magic", "record_count", "codec"):
        assert np.asarray(getattr(b, name)).tolist() == [r[name] for r in rows], name
    assert np.asarray(b.crc_valid).all()
    assert recs.valid_bytes == len(buf) and recs.trailing_bytes == 0 and not recs.truncated
    # batch_index agrees with the rows' record counts
    counts = np.bincount(np.asarray(recs.batch_index), minlength=len(rows)).tolist()
    assert counts == [r["record_count"] for r in rows]
    # and kafka-python reads the same buffer the same way
    kpy.assert_records_match(recs, kpy.kp_decode(buf))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_sets(), st.data())
def test_slices_and_truncation(case, data):
    buf, expected, rows = case
    recs = kafkafmt.decode(buf)
    n = len(expected)
    a = data.draw(st.integers(-n - 2, n + 2))
    z = data.draw(st.integers(-n - 2, n + 2))
    sub = recs[a:z]
    assert np.asarray(sub.offset).tolist() == [e[0] for e in expected[a:z]]
    assert sub.value.to_pylist() == [e[4] for e in expected[a:z]]
    assert sub.key.to_pylist() == [e[3] for e in expected[a:z]]
    cut = data.draw(st.integers(0, len(buf)))
    part = kafkafmt.decode(buf[:cut])
    ends = [r["position"] for r in rows[1:]] + [len(buf)]
    k = sum(1 for e in ends if e <= cut)
    assert len(part.batches) == k
    assert part.valid_bytes == (ends[k - 1] if k else 0)
    assert bool(part.truncated) == (cut != part.valid_bytes)
    assert len(part) == sum(r["record_count"] for r in rows[:k])
