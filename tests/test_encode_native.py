"""encode() from Python sequences: the C conversion of lists (writer.binary_refs_from_list,
binary_from_list, headers_from_list, int64_from_list) gives the same bytes as the general path,
and everything it does not handle falls through to that path's conversion or error."""
import random

import numpy as np
import pytest

import kafkafmt
from kafkafmt.record import _encoder as encoder
from kafkafmt._native import writer
from kafkafmt.errors import EncodeError

import kpy


def _general(items, what="value"):
    """The general path: a generator is not a list, so the C fast path is skipped."""
    return encoder._binary_from_sequence(iter(items), what)


def _same_binary(a, b):
    assert a.offsets.tolist() == b.offsets.tolist()
    n = len(a.offsets) - 1
    assert bytes(a.data[:a.offsets[-1]]) == bytes(b.data[:b.offsets[-1]])
    va = np.ones(n, bool) if a.validity is None else np.unpackbits(a.validity, bitorder="little")[:n].astype(bool)
    vb = np.ones(n, bool) if b.validity is None else np.unpackbits(b.validity, bitorder="little")[:n].astype(bool)
    assert va.tolist() == vb.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_binary_columns_same_as_general_path(seed):
    rnd = random.Random(seed)
    items = []
    for _ in range(rnd.randrange(0, 300)):
        kind = rnd.random()
        raw = rnd.randbytes(rnd.choice([0, 1, 5, 300, 5000]))
        items.append(None if kind < 0.1 else bytearray(raw) if kind < 0.2 else raw)
    fast = encoder._binary_from_sequence(list(items), "value")
    _same_binary(fast, _general(items))


def test_bytes_are_referenced_not_copied_and_kept_alive():
    values = [b"a" * 100, None, b"bc" * 1000]
    col = encoder._binary_from_sequence(values, "value")
    assert col.pointers is not None                   # no copy made ...
    del values[:]                                     # ... and the caller's list may change
    assert bytes(col.data) == b"a" * 100 + b"bc" * 1000  # gathered on demand


def test_mixed_types_fall_back_or_fail_like_the_general_path():
    # memoryview is accepted by the general path only
    items = [b"x", memoryview(b"yz"), None]
    assert writer.binary_refs_from_list(items) is None and writer.binary_from_list(items) is None
    _same_binary(encoder._binary_from_sequence(items, "value"), _general(items))
    with pytest.raises(EncodeError, match="value 1 is str"):
        kafkafmt.encode(values=[b"ok", "text"])


def test_int64_columns():
    assert writer.int64_from_list([1, -2, (1 << 63) - 1]).tolist() == [1, -2, (1 << 63) - 1]
    assert writer.int64_from_list([1, True]) is None
    assert writer.int64_from_list([1, 1 << 63]) is None
    assert writer.int64_from_list([1, np.int64(3)]) is None
    # the general path takes NumPy integers and names what it rejects
    cols = encoder.to_columns(values=[b"a", b"b"], timestamps=[1, np.int64(3)])
    assert cols.timestamp.tolist() == [1, 3]
    assert encoder.to_columns(values=[b"a", b"b"], timestamps=[1, True]).timestamp.tolist() == [1, 1]  # as NumPy
    with pytest.raises(EncodeError, match="beyond 64 bits"):
        encoder.to_columns(values=[b"a", b"b"], timestamps=[1, 1 << 64])
    with pytest.raises(EncodeError, match="timestamp of record 0 is None"):
        encoder.to_columns(values=[b"a"], timestamps=[None])


def test_headers_same_as_general_path():
    headers = [
        [("trace", b"t1"), ("ct", None)],
        None,
        [],
        (("é-key", b""), (b"raw-key", bytearray(b"ba"))),
        [["list-pair", b"v"]],
        [("k" * 300, b"v" * 5000)],
    ]
    n = len(headers)
    fast = writer.headers_from_list(headers)
    assert fast is not None
    index, key, value = encoder._headers_from_sequence(headers, n)
    gindex, gkey, gvalue = encoder._headers_from_sequence(tuple(headers), n)   # not a list: general path
    assert index.tolist() == gindex.tolist()
    _same_binary(key, gkey)
    _same_binary(value, gvalue)
    buf = kafkafmt.encode(values=[b"v"] * n, timestamps=list(range(n)), headers=headers)
    got = kafkafmt.decode(buf).headers.to_pylist()
    assert got[0] == [("trace", b"t1"), ("ct", None)]
    assert got[3] == [("é-key", b""), ("raw-key", b"ba")]
    assert got[4] == [("list-pair", b"v")]


def test_headers_unusual_shapes_fall_back():
    assert writer.headers_from_list([[("k", memoryview(b"v"))]]) is None
    assert writer.headers_from_list([[("k", b"v", b"extra")]]) is None
    assert writer.headers_from_list([iter([("k", b"v")])]) is None
    assert writer.headers_from_list([[("\ud800", b"v")]]) is None           # not UTF-8 encodable
    with pytest.raises(EncodeError, match="must be a \\(key, value\\) pair"):
        kafkafmt.encode(values=[b"v"], headers=[[("k", b"v", b"extra")]])
    with pytest.raises(EncodeError, match="header key of record 0 is int"):
        kafkafmt.encode(values=[b"v"], headers=[[(5, b"v")]])
    with pytest.raises(UnicodeEncodeError):
        kafkafmt.encode(values=[b"v"], headers=[[("\ud800", b"v")]])
    buf = kafkafmt.encode(values=[b"v"], timestamps=[1], headers=[[("k", memoryview(b"mv"))]])
    assert kafkafmt.decode(buf).headers.to_pylist() == [[("k", b"mv")]]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_lists_round_trip_and_kafka_python_reads_them(codec, magic):
    if codec == "zstd" and magic < 2:
        pytest.skip("zstd needs magic 2")
    rnd = random.Random(7)
    n = 700
    keys = [None if i % 17 == 0 else rnd.randbytes(rnd.randrange(0, 30)) for i in range(n)]
    values = [None if i % 23 == 0 else rnd.randbytes(rnd.randrange(0, 400)) for i in range(n)]
    headers = [[("h%d" % j, rnd.randbytes(5)) for j in range(i % 3)] for i in range(n)] if magic == 2 else None
    ts = [1_700_000_000_000 + i for i in range(n)]
    buf = kafkafmt.encode(keys=keys, values=values, timestamps=ts, headers=headers, compression=codec, magic=magic)
    # the same records through the general path (generators) give the same bytes
    again = kafkafmt.encode(keys=iter(keys), values=iter(values), timestamps=np.array(ts),
                            headers=None if headers is None else iter(headers), compression=codec, magic=magic)
    if codec in ("none", "snappy", "lz4", "zstd"):  # deterministic compressors
        assert buf == again
    recs = kafkafmt.decode(buf)
    assert recs.key.to_pylist() == keys and recs.value.to_pylist() == values
    kp = kpy.kp_decode(buf)
    assert [r["value"] for r in kp["records"]] == values
    assert [r["key"] for r in kp["records"]] == keys
    assert all(b["crc_valid"] for b in kp["batches"])


def test_arrow_headers_null_lists():
    # a null list is "no headers", whether or not its child range is empty (the fast path checks)
    import pyarrow as pa
    hdr_type = pa.struct([("key", pa.string()), ("value", pa.binary())])
    values = pa.array([{"key": "a", "value": b"1"}, {"key": "b", "value": b"2"}, {"key": "c", "value": b"3"}],
                      type=hdr_type)
    for offsets, mask in (([0, 1, 1, 3], [False, True, False]),      # null slot with an empty range
                          ([0, 1, 3, 3], [False, True, False])):     # null slot over two entries
        headers = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, mask=pa.array(mask))
        table = pa.table({"value": pa.array([b"x", b"y", b"z"]), "timestamp": pa.array([1, 2, 3], pa.int64()),
                          "headers": headers})
        got = kafkafmt.decode(kafkafmt.encode(table)).headers.to_pylist()
        want = [[("a", b"1")], [], [("b", b"2"), ("c", b"3")] if offsets[2] == 1 else []]
        assert got == want
