"""Corrupt input: flipped bytes, truncation at every position, absurd length fields.

Rules (Kafka's, from FileLogInputStream / ByteBufferLogInputStream / DefaultRecordBatch):
* a remaining fragment shorter than the 12-byte log overhead, or shorter than its batch's declared size, is
  the end of the data, not an error: the batches before it are returned, truncated=True;
* a declared size below the minimum record overhead is corrupt; so are bad varints, sizes that overrun
  their batch, record counts that do not match the records, unknown magics and codecs;
* every failure is a KafkafmtError subclass carrying a position; never another exception type.
"""
import os
import random
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kpy

import kafkafmt
from kafkafmt.errors import (  # noqa: E402
    CompressionError, CorruptRecordError, CrcError, KafkafmtError, UnsupportedCodecError)

MAX_POSITIONS = 4000          # byte positions tried per buffer (a stride when the buffer is longer)


def _v2_buffer():
    parts, off = [], 0
    for codec, feature in (("none", "headers"), ("gzip", "null_values"), ("snappy", "headers"),
                           ("lz4", "null_keys"), ("zstd", "empty_values")):
        recs = kpy.make_records(off, 3, feature, salt=off)
        recs = [r._replace(value=None if r.value is None else r.value[:40]) for r in recs]
        parts.append(kpy.build_v2(recs, codec))
        off = recs[-1].offset + 1
    parts.append(kpy.build_control_v2(off, 1, producer_id=7, producer_epoch=0))
    parts.append(kpy.build_empty_v2(off + 1, 2))
    return b"".join(parts)


def _legacy_buffer():
    parts, off = [], 0
    for magic, codec in ((0, "none"), (0, "gzip"), (1, "snappy"), (1, "none"), (1, "lz4"), (0, "lz4"),
                         (1, "gzip")):
        recs = kpy.make_records(off, 2, "null_keys" if off % 2 else "plain", salt=off)
        recs = [r._replace(value=r.value[:40]) for r in recs]
        parts.append(kpy.build_legacy(recs, magic, codec))
        off = recs[-1].offset + 1
    return b"".join(parts)


BUFFERS = {"v2": _v2_buffer(), "legacy": _legacy_buffer()}
BUFFERS["mixed"] = BUFFERS["legacy"] + BUFFERS["v2"]


def _decode_or_kafkafmt_error(buf, **kw):
    """Decode; a KafkafmtError (with a position) is fine; any other exception fails the test."""
    try:
        recs = kafkafmt.decode(buf, **kw)
    except KafkafmtError as e:
        assert isinstance(e, CorruptRecordError), f"{type(e).__name__} is not a CorruptRecordError"
        assert e.position is not None, f"{type(e).__name__} without position: {e}"
        assert 0 <= e.position <= len(buf), f"position {e.position} outside the buffer ({len(buf)} bytes)"
        return e
    n = len(recs)
    assert len(np.asarray(recs.offset)) == n and len(np.asarray(recs.timestamp)) == n
    assert len(recs.key) == n and len(recs.value) == n and len(recs.headers.offsets) == n + 1
    assert recs.valid_bytes + recs.trailing_bytes == len(buf)
    return recs


def _positions(n):
    stride = max(1, -(-n // MAX_POSITIONS))
    return range(0, n, stride)


@pytest.mark.parametrize("name", list(BUFFERS))
def test_byte_flips(name):
    buf = BUFFERS[name]
    truth = kpy.kp_decode(buf)
    assert len(buf) < 6000
    t0 = time.monotonic()
    for pos in _positions(len(buf)):
        for mask in (0xFF, 0x80, 0x01):
            bad = bytearray(buf)
            bad[pos] ^= mask
            for verify in (True, False):
                try:
                    _decode_or_kafkafmt_error(bad, verify_crc=verify)
                except AssertionError as e:
                    raise AssertionError(f"byte {pos} ^ {mask:#x}, verify_crc={verify}: {e}") from e
                except Exception as e:
                    raise AssertionError(f"byte {pos} ^ {mask:#x}, verify_crc={verify}: "
                                         f"{type(e).__name__}: {e}") from e
        assert time.monotonic() - t0 < 25, "too slow: raise the stride"
    # flips inside the CRC-covered record payload of a batch must be caught by the CRC
    for b in truth["batches"]:
        start = b["position"] + (61 if b["magic"] == 2 else 12 + 14 + (8 if b["magic"] == 1 else 0))
        for pos in range(start, b["position"] + b["size"], 7):
            bad = bytearray(buf)
            bad[pos] ^= 0x10
            with pytest.raises(CrcError) as ei:
                kafkafmt.decode(bad)
            assert b["position"] <= ei.value.position < b["position"] + b["size"]


@pytest.mark.parametrize("name", list(BUFFERS))
def test_random_multibyte_corruption(name):
    buf = BUFFERS[name]
    rng = random.Random(1234)
    for _ in range(400):
        bad = bytearray(buf)
        for _ in range(rng.randint(1, 6)):
            pos = rng.randrange(len(bad))
            bad[pos] = rng.randrange(256)
        try:
            _decode_or_kafkafmt_error(bad, verify_crc=False)
        except Exception as e:
            raise AssertionError(f"corrupt buffer {bytes(bad).hex()}: {type(e).__name__}: {e}") from e


@pytest.mark.parametrize("name", list(BUFFERS))
def test_truncation_at_every_position(name):
    buf = BUFFERS[name]
    truth = kpy.kp_decode(buf, include_control=True)
    ends = [b["position"] + b["size"] for b in truth["batches"]]
    for cut in range(len(buf) + 1):
        piece = buf[:cut]
        k = sum(1 for e in ends if e <= cut)            # batches wholly before the cut
        valid = ends[k - 1] if k else 0
        try:
            recs = kafkafmt.decode(piece, include_control=True)
        except Exception as e:
            raise AssertionError(f"cut at {cut}: {type(e).__name__}: {e}") from e
        where = f"cut at {cut} (batch {k} starts at {valid})"
        assert len(recs.batches) == k, where
        assert recs.valid_bytes == valid, where
        assert recs.trailing_bytes == cut - valid, where
        assert bool(recs.truncated) == (cut != valid), where
        want = [r["offset"] for r in truth["records"] if r["batch_index"] < k]
        assert np.asarray(recs.offset).tolist() == want, where
        if cut % 37 == 0 or cut == len(buf):
            kpy.assert_records_match(recs, kpy.kp_decode(piece, include_control=True))


def test_truncated_segment_file(tmp_path):
    buf = BUFFERS["v2"]
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(buf[:-5])
    recs = kafkafmt.read_segment(p)
    truth = kpy.kp_decode(buf)
    assert recs.truncated and recs.valid_bytes == truth["batches"][-1]["position"]
    assert recs.trailing_bytes == truth["batches"][-1]["size"] - 5


# --- absurd fields ----------------------------------------------------------------------------------------------
def _three_v2():
    a = kpy.build_v2(kpy.make_records(0, 3), "none")
    b = kpy.build_v2(kpy.make_records(3, 3, "headers"), "none")
    c = kpy.build_v2(kpy.make_records(6, 3), "gzip")
    return a, b, c


def _expect_corrupt(buf, lo=0, hi=None, *, not_crc=True):
    hi = len(buf) if hi is None else hi
    for verify in (True, False):
        with pytest.raises(CorruptRecordError) as ei:
            kafkafmt.decode(buf, verify_crc=verify)
        err = ei.value
        if not_crc:
            assert not isinstance(err, CrcError), f"CRC is valid, got {err!r}"
        assert err.position is not None and lo <= err.position <= hi, f"{err!r}: position not in [{lo}, {hi}]"
    return err


@pytest.mark.parametrize("length", [-1, -(2 ** 31), 0, 5, 13])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_batch_length_too_small(length, where):
    a, b, c = _three_v2()
    pos = {"first": 0, "middle": len(a), "last": len(a) + len(b)}[where]
    buf = bytearray(a + b + c)
    struct.pack_into(">i", buf, pos + 8, length)
    _expect_corrupt(bytes(buf), pos, pos + 17)


def test_v2_batch_length_below_header_size():
    a, b, c = _three_v2()
    buf = bytearray(a + b + c)
    struct.pack_into(">i", buf, len(a) + 8, 30)        # >= 14 (v0 minimum) but < the v2 header
    _expect_corrupt(bytes(buf), len(a), len(a) + len(b))


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_batch_length_max_int(where):
    """A declared size of 2^31-1 can never fit a segment (Kafka's are < 2 GiB): corrupt, not truncation."""
    a, b, c = _three_v2()
    pos = {"first": 0, "middle": len(a), "last": len(a) + len(b)}[where]
    buf = bytearray(a + b + c)
    struct.pack_into(">i", buf, pos + 8, 2 ** 31 - 1)
    _expect_corrupt(bytes(buf), pos, pos + 17)


def test_batch_length_overrunning_is_end_of_data():
    """A size that only overruns the buffer a little is a truncated batch (Kafka: end of data)."""
    a, b, c = _three_v2()
    buf = bytearray(a + b + c)
    struct.pack_into(">i", buf, len(a) + len(b) + 8, len(c) - 12 + 100)
    recs = kafkafmt.decode(bytes(buf))
    assert recs.truncated and recs.valid_bytes == len(a) + len(b) and len(recs.batches) == 2


def _set_v2_field(batch, fmt, at, value):
    buf = bytearray(batch)
    struct.pack_into(fmt, buf, at, value)
    kpy.fix_crc_v2(buf)
    return bytes(buf)


@pytest.mark.parametrize("count", [2 ** 31 - 1, -1, -(2 ** 31), 4, 2, 0, 1000])
@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_record_count_mismatch(count, codec):
    a = kpy.build_v2(kpy.make_records(0, 2), "none")
    b = kpy.build_v2(kpy.make_records(2, 3), codec)
    b = _set_v2_field(b, ">i", kpy.V2_COUNT_AT, count)
    _expect_corrupt(a + b + a, len(a), len(a) + len(b))


def _zz(v):
    """Kafka varint (zigzag) of v, any size."""
    from kafka.record.util import encode_varint
    out = bytearray()
    encode_varint(v, out.append)
    return bytes(out)


def raw_v2(record_bytes, count, base_offset=0, codec=0):
    """A v2 batch around already-encoded record bytes (count given separately)."""
    body = struct.pack(">hiqqqhii", codec, max(count - 1, 0), kpy.TS0, kpy.TS0, -1, -1, -1, count) + record_bytes
    crc = kpy.crc32c(body)
    return struct.pack(">qiibI", base_offset, 4 + 1 + 4 + len(body), 0, 2, crc) + body


def raw_record(*, attrs=b"\x00", ts_delta=b"\x00", off_delta=b"\x00", key=_zz(-1), value=_zz(1) + b"v",
               headers=b"\x00", length=None):
    body = attrs + ts_delta + off_delta + key + value + headers
    return (_zz(len(body)) if length is None else length) + body


def test_raw_v2_helper_is_valid():
    buf = raw_v2(raw_record() + raw_record(off_delta=_zz(1), key=_zz(1) + b"k"), 2)
    truth = kpy.kp_decode(buf)
    assert [(r["key"], r["value"]) for r in truth["records"]] == [(None, b"v"), (b"k", b"v")]
    recs = kafkafmt.decode(buf)
    assert recs.key.to_pylist() == [None, b"k"] and recs.value.to_pylist() == [b"v", b"v"]


HUGE = [2 ** 31 - 1, 2 ** 30, 1000, 2 ** 62]
BAD_RECORDS = {
    **{f"key_len_{n}": raw_record(key=_zz(n) + b"kk") for n in HUGE},
    **{f"value_len_{n}": raw_record(value=_zz(n) + b"vv") for n in HUGE},
    **{f"header_count_{n}": raw_record(headers=_zz(n) + _zz(1) + b"h" + _zz(-1)) for n in HUGE},
    "header_count_negative": raw_record(headers=_zz(-2)),
    **{f"header_key_len_{n}": raw_record(headers=_zz(1) + _zz(n) + b"h" + _zz(-1)) for n in HUGE},
    "header_key_null": raw_record(headers=_zz(1) + _zz(-1) + _zz(-1)),
    **{f"header_value_len_{n}": raw_record(headers=_zz(1) + _zz(1) + b"h" + _zz(n) + b"x") for n in HUGE},
    "record_length_huge": raw_record(length=_zz(2 ** 31 - 1)),
    "record_length_negative": raw_record(length=_zz(-5)),
    "record_length_too_long": raw_record(length=_zz(11)),
    "record_length_too_short": raw_record(length=_zz(4)),
    "varint_11_bytes_length": b"\xff" * 10 + b"\x01" + raw_record()[1:],
    "varint_11_bytes_key": raw_record(key=b"\x81" * 10 + b"\x00"),
    "varint_10_bytes_offset_delta": raw_record(off_delta=b"\x80" * 9 + b"\x01"),
    "varint_unterminated": raw_record()[:-1] + b"\x80",
    "offset_delta_beyond_int32": raw_record(off_delta=_zz(2 ** 40)),
}


@pytest.mark.parametrize("name", list(BAD_RECORDS))
def test_absurd_record_fields(name):
    good = raw_record()
    bad = BAD_RECORDS[name]
    batch = raw_v2(good + bad + good, 3, base_offset=100)
    pre = kpy.build_v2(kpy.make_records(0, 2), "none")
    buf = pre + batch + pre
    try:
        kpy.kp_decode(buf)
        kp_ok = True
    except Exception:
        kp_ok = False
    assert not kp_ok or name.startswith(("header_count_negative", "varint_10", "offset_delta")), \
        "kafka-python accepts this: not a corrupt record"
    err = _expect_corrupt(buf, len(pre), len(pre) + len(batch))
    assert err.offset in (None, 100), err


def test_absurd_record_fields_in_compressed_batch():
    import gzip
    good = raw_record()
    for bad in (BAD_RECORDS["key_len_2147483647"], BAD_RECORDS["varint_11_bytes_length"],
                BAD_RECORDS["header_count_2147483647"]):
        payload = gzip.compress(good + bad)
        batch = raw_v2(payload, 2, base_offset=5, codec=1)
        _expect_corrupt(batch, 0, len(batch))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("field", ["key", "value"])
@pytest.mark.parametrize("n", [2 ** 31 - 1, 1000, 50])
def test_legacy_absurd_lengths(magic, field, n):
    recs = [kpy.Rec(i, kpy.TS0 + i, b"key", b"value") for i in range(3)]
    buf = bytearray(kpy.build_legacy(recs, magic, "none"))
    msg = len(buf) // 3
    key_at = msg + 12 + 4 + 2 + (8 if magic == 1 else 0)
    at = key_at if field == "key" else key_at + 4 + 3
    struct.pack_into(">i", buf, at, n)
    kpy.fix_crc_legacy(buf, msg)
    _expect_corrupt(bytes(buf), msg, 2 * msg)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_size_too_small(magic):
    recs = [kpy.Rec(i, kpy.TS0 + i, b"key", b"value") for i in range(3)]
    buf = bytearray(kpy.build_legacy(recs, magic, "none"))
    msg = len(buf) // 3
    struct.pack_into(">i", buf, msg + 8, 10)          # < 14, the minimum v0 overhead
    _expect_corrupt(bytes(buf), msg, 2 * msg)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_compressed_wrapper_with_null_value(magic):
    recs = [kpy.Rec(i, kpy.TS0 + i, b"key", kpy.compressible(i)) for i in range(3)]
    buf = bytearray(kpy.build_legacy(recs, magic, "gzip"))
    hdr = 12 + 4 + 2 + (8 if magic == 1 else 0)
    # key -1, value -1: shrink the message to the bare overhead
    buf = buf[:hdr] + struct.pack(">ii", -1, -1)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    kpy.fix_crc_legacy(buf)
    _expect_corrupt(bytes(buf))


@pytest.mark.parametrize("magic", [-1, 3, 4, 99])
def test_unknown_magic(magic):
    a, b, c = _three_v2()
    buf = bytearray(a + b + c)
    buf[len(a) + 16] = magic & 0xFF
    _expect_corrupt(bytes(buf), len(a), len(a) + len(b), not_crc=False)


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unsupported_codec_v2(codec):
    a, b, c = _three_v2()
    attrs = struct.unpack_from(">h", b, kpy.V2_ATTR_AT)[0]
    b = _set_v2_field(b, ">h", kpy.V2_ATTR_AT, (attrs & ~7) | codec)
    with pytest.raises(UnsupportedCodecError) as ei:
        kafkafmt.decode(a + b + c)
    assert len(a) <= ei.value.position < len(a) + len(b)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [4, 5, 7])
def test_unsupported_codec_legacy(magic, codec):
    """zstd (4) does not exist before magic 2."""
    recs = [kpy.Rec(i, kpy.TS0 + i, b"key", kpy.compressible(i)) for i in range(3)]
    buf = bytearray(kpy.build_legacy(recs, magic, "gzip"))
    buf[17] = (buf[17] & ~7) | codec
    kpy.fix_crc_legacy(buf)
    _expect_corrupt(bytes(buf))


def test_garbage_compressed_payload_gzip():
    recs = kpy.make_records(0, 4)
    batch = bytearray(kpy.build_v2(recs, "gzip"))
    mid = (61 + len(batch)) // 2
    batch[mid:mid + 8] = b"\xde\xad\xbe\xef" * 2
    kpy.fix_crc_v2(batch)
    with pytest.raises(CompressionError) as ei:
        kafkafmt.decode(bytes(batch))
    assert ei.value.position is not None and ei.value.offset == 0


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("keep", [0, 1, 5, 0.5, -3])
def test_truncated_compressed_payload(codec, keep):
    """The batch is whole (its size says so), its compressed payload is cut: corrupt, not end of data."""
    recs = kpy.make_records(10, 4)
    batch = bytearray(kpy.build_v2(recs, codec))
    payload = len(batch) - 61
    n = int(payload * keep) if isinstance(keep, float) else (keep if keep >= 0 else payload + keep)
    batch = batch[:61 + n]
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    kpy.fix_crc_v2(batch)
    _expect_corrupt(bytes(batch))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_legacy_garbage_inner_message_set(magic, codec):
    """A wrapper whose decompressed inner message set is itself corrupt (inner size too large)."""
    from kafka import codec as kc
    inner = bytearray(kpy.build_legacy([kpy.Rec(i, kpy.TS0, None, b"x" * 30) for i in range(3)], magic, "none"))
    struct.pack_into(">i", inner, 8, 2 ** 31 - 1)
    comp = {"gzip": kc.gzip_encode, "snappy": kc.snappy_encode,
            "lz4": kc.lz4_encode_old_kafka if magic == 0 else kc.lz4_encode}[codec](bytes(inner))
    hdr = struct.pack(">qiIbb", 2, 0, 0, magic, kpy.CODEC_IDS[codec]) + (struct.pack(">q", kpy.TS0) if magic else b"")
    buf = bytearray(hdr + struct.pack(">i", -1) + struct.pack(">i", len(comp)) + comp)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    kpy.fix_crc_legacy(buf)
    _expect_corrupt(bytes(buf))


# --- malformed, yet accepted by Kafka's readers -------------------------------------------------------------------
ACCEPTED = {
    # DefaultRecord.readFrom: any negative key/value/header-value size is null (only header *keys* must be >= 0)
    "key_len_-2": (raw_record(key=_zz(-2)), dict(key=None, value=b"v", headers=[])),
    "value_len_-7": (raw_record(value=_zz(-7)), dict(key=None, value=None, headers=[])),
    "header_value_len_-3": (raw_record(headers=_zz(1) + _zz(1) + b"h" + _zz(-3)),
                            dict(key=None, value=b"v", headers=[("h", None)])),
    # record attributes are unused: ignored
    "record_attributes_5": (raw_record(attrs=b"\x05"), dict(key=None, value=b"v", headers=[])),
    # timestamp deltas are varlongs
    "ts_delta_2^40": (raw_record(ts_delta=_zz(2 ** 40)), dict(timestamp=kpy.TS0 + 2 ** 40)),
    "ts_delta_negative": (raw_record(ts_delta=_zz(-5000)), dict(timestamp=kpy.TS0 - 5000)),
}


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_accepted_by_kafka(name):
    rec, want = ACCEPTED[name]
    out = kafkafmt.decode(raw_v2(rec, 1))
    assert len(out) == 1
    got = dict(key=out.key[0], value=out.value[0], headers=[tuple(h) for h in out.headers.to_pylist()[0]],
               timestamp=int(out.timestamp[0]))
    for k, v in want.items():
        assert got[k] == v, f"{k}: {got[k]!r} != {v!r}"


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("field", ["key", "value"])
def test_legacy_negative_length_is_null(magic, field):
    """LegacyRecord: a negative key/value size means null (valueSizeOffset uses max(0, keySize))."""
    recs = [kpy.Rec(i, kpy.TS0 + i, b"", b"") for i in range(2)]
    buf = bytearray(kpy.build_legacy(recs, magic, "none"))
    key_at = 12 + 4 + 2 + (8 if magic == 1 else 0)
    struct.pack_into(">i", buf, key_at if field == "key" else key_at + 4, -2)
    kpy.fix_crc_legacy(buf)
    out = kafkafmt.decode(bytes(buf))
    assert getattr(out, field).to_pylist() == [None, b""]


def test_invalid_utf8_header_key():
    """Kafka decodes header keys as UTF-8 with replacement; the Arrow table must still be valid."""
    buf = raw_v2(raw_record(headers=_zz(1) + _zz(2) + b"\xff\xfe" + _zz(1) + b"x"), 1)
    out = kafkafmt.decode(buf)
    [[(k, v)]] = out.headers.to_pylist()
    assert k == b"\xff\xfe".decode("utf-8", "replace") and v == b"x"
    t = out.to_arrow()
    t.validate(full=True)
    assert t.column("headers").to_pylist() == [[{"key": k, "value": b"x"}]]
    out.to_pandas()


def test_legacy_wrapper_edge_cases_are_corrupt():
    from test_crosscheck import _inner, _wrapper
    nested = kpy.build_legacy([kpy.Rec(i, kpy.TS0 + i, None, kpy.compressible(i)) for i in range(3)], 1, "gzip")
    for name, buf in {"empty wrapper": _wrapper(b"", 1, "gzip", 5),
                      "nested compression": _wrapper(nested, 1, "snappy", 10),
                      "partial inner message": _wrapper(_inner(1, 3) + _inner(1, 1)[:20], 1, "gzip", 5)}.items():
        try:
            _expect_corrupt(buf)
        except BaseException as e:
            raise AssertionError(f"{name}: {e}") from e


def _peak_rss_script(call):
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent (pytest) across exec
    return textwrap.dedent("""
        import re, sys, kafkafmt
        def hwm():
            return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) // 1024
        data = sys.stdin.buffer.read()
        before = hwm()
        try:
            %s
            print("decoded")
        except kafkafmt.KafkafmtError as e:
            print(type(e).__name__)
        print(hwm() - before)
    """ % call)


def _peak_rss_growth_mib(data, call="kafkafmt.decode(data)"):
    """Decode in a fresh interpreter; returns (outcome, growth of its peak RSS in MiB)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    res = subprocess.run([sys.executable, "-c", _peak_rss_script(call)], input=data, capture_output=True,
                         env=env, timeout=120)
    assert res.returncode == 0, res.stderr.decode()
    lines = res.stdout.decode().split()
    return lines[0], int(lines[-1])


@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_absurd_record_count_does_not_allocate(codec):
    """A 1 KB file must not make the decoder reserve memory for 2^31-1 records before rejecting it
    (a v2 record takes at least 7 bytes: the count is bounded by the (decompressed) payload size)."""
    a = kpy.build_v2(kpy.make_records(0, 2), "none")
    b = _set_v2_field(kpy.build_v2(kpy.make_records(2, 3), codec), ">i", kpy.V2_COUNT_AT, 2 ** 31 - 1)
    outcome, grew_mib = _peak_rss_growth_mib(a + b + a)
    assert outcome == "CorruptRecordError"
    assert grew_mib < 100, f"peak memory grew by {grew_mib} MiB for a {len(a + b + a)}-byte input"
