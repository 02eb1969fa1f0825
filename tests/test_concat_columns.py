"""Concatenating columns (a read's chunks joined into one Records) equals pyarrow's own concatenation,
whatever the pieces' offsets start at, their nulls, empty pieces and the offsets' width; a read's constant
topic column equals pyarrow's array of it."""
import numpy as np
import pyarrow as pa
import pytest

from kafkafmt.record import BinaryColumn, Headers
from kafkafmt.record._columns import _joined_offsets
from kafkafmt.record._records import Labels


def _pieces(wide):
    rnd = np.random.default_rng(7)
    values = [None if rnd.random() < 0.2 else rnd.bytes(int(rnd.integers(0, 9))) for _ in range(40)]
    whole = BinaryColumn.from_arrow(pa.array(values, pa.binary()))
    if wide:
        whole = BinaryColumn(whole.offsets.astype(np.int64), whole.data, whole.validity, whole.null_count)
    no_nulls = BinaryColumn.from_arrow(pa.array([b"ab", b"", b"cde"], pa.binary()))
    # slices: offsets not starting at 0, an empty piece, a piece without nulls
    return [whole[3:17], whole[17:17], no_nulls, whole[30:], whole[:2]]


@pytest.mark.parametrize("wide", [False, True])
def test_binary_concat_equals_pyarrow(wide):
    pieces = _pieces(wide)
    got = BinaryColumn.concat(pieces)
    want = pa.concat_arrays([p.to_arrow().cast(pa.binary()) for p in pieces])   # (int64 offsets: large_binary)
    assert got.to_pylist() == want.to_pylist()
    assert got.null_count == want.null_count
    assert got.offsets.dtype == np.int32 and got.offsets[0] == 0
    assert BinaryColumn.concat(pieces[2:3]).validity is None         # no nulls: no bitmap


def test_headers_concat_of_slices():
    h = Headers(np.array([0, 0, 2, 3, 3, 5], np.int32),
                BinaryColumn.from_arrow(pa.array([b"a", b"b", b"c", b"d", b"e"], pa.binary())),
                BinaryColumn.from_arrow(pa.array([b"1", None, b"3", b"4", None], pa.binary())))
    both = Headers.concat([h[1:3], h[0:0], h[3:5]])
    assert both.to_pylist() == h[1:3].to_pylist() + h[3:5].to_pylist()


def test_joined_offsets_widen_past_int32():
    big = (1 << 31) - 10
    out, spans = _joined_offsets([np.array([4, 4 + big], np.int64), np.array([5, 15, 25], np.int32)])
    assert out.dtype == np.int64 and out.tolist() == [0, big, big + 10, big + 20] and spans == [big, 20]
    out, _ = _joined_offsets([np.array([0, 7], np.int64)])
    assert out.dtype == np.int32 and out.tolist() == [0, 7]


@pytest.mark.parametrize("name", ["orders", "", "é-topic"])
def test_one_label_equals_pyarrow(name):
    for n in (0, 1, 5):
        got = Labels([name]).to_arrow(n)
        got.validate(full=True)
        assert got.equals(pa.array([name] * n, pa.string()))


@pytest.mark.parametrize("layout", ["runs", "interleaved", "one run", "empty"])
def test_several_labels_equal_pyarrow(layout):
    """A read's topic (or log dir) column of several names -- a None name is null -- equals pyarrow's array of
    each record's name, laid out from runs of records or (records interleaved) by a cast."""
    names = ["orders", None, "é-topic", "", "payments"]
    rnd = np.random.default_rng(3)
    if layout == "runs":
        codes = np.repeat(rnd.integers(0, len(names), 30), rnd.integers(1, 40, 30))
    elif layout == "interleaved":
        codes = rnd.integers(0, len(names), 500)
    else:
        codes = np.full(0 if layout == "empty" else 25, 2)
    codes = codes.astype(np.int32)
    got = Labels(names, codes).to_arrow(len(codes))
    got.validate(full=True)
    assert got.equals(pa.array([names[c] for c in codes], pa.string()))


def test_header_keys_not_utf8_replaced():
    """Header keys are checked as UTF-8 without a cast; bytes that are not are replaced, as Java decodes them."""
    h = Headers(np.array([0, 1, 3], np.int32),
                BinaryColumn.from_arrow(pa.array([b"ok", b"\xff\xfe", "é".encode()], pa.binary())),
                BinaryColumn.from_arrow(pa.array([b"1", None, b"3"], pa.binary())))
    keys = h.to_arrow().flatten().field("key")
    assert keys.to_pylist() == ["ok", "\ufffd\ufffd", "é"]
    good = Headers(np.array([0, 2], np.int32), BinaryColumn.from_arrow(pa.array([b"a", "é".encode()], pa.binary())),
                   BinaryColumn.from_arrow(pa.array([b"1", b"2"], pa.binary())))
    assert good.to_arrow().flatten().field("key").to_pylist() == ["a", "é"]


@pytest.mark.parametrize("read", [
    # a read laid out as one Arrow table (topics of several names, headers)
    "t = kafkafmt.read_log_dirs(sample_dir()).to_arrow()\n"
    "assert t.num_rows and len(set(t.column('topic').to_pylist())) > 1 and t.column('headers').null_count < t.num_rows",
    # a stream's record batches (what a Spark task and the Arrow hand-off give, cast to the schema planned)
    "assert sum(b.num_rows for b in kafkafmt.iter_log_dirs(sample_dir()).record_batches()) > 0"])
def test_arrow_loads_no_compute_functions(read):
    """Reads laid out in Arrow load none of pyarrow's compute functions (their first use costs about 0.2 s and
    60 MB in a process): a script reading a log dir once, or a Spark worker's first task, pays only for its
    read."""
    import subprocess
    import sys

    code = f"import sys, kafkafmt\nfrom kafkafmt.sample import sample_dir\n{read}\nprint('pyarrow.compute' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"], out.stderr


@pytest.mark.parametrize("dtype", ["<i8", ">i8", "<i2", "<u4", "<f8", "?"])
def test_numeric_array_is_pa_array(dtype):
    from kafkafmt.record._columns import numeric_array

    values = np.arange(-3, 7).astype(dtype)[::2]          # (a strided view: laid out contiguously)
    got = numeric_array(values)
    assert got.equals(pa.array(values.astype(values.dtype.newbyteorder("=")))) and got.to_pylist() == values.tolist()


def test_cast_table_is_table_cast():
    """`cast_table` gives what ``Table.cast`` gives, casting only the columns whose type differs, and refuses
    what it refuses."""
    from kafkafmt.record import cast_table

    t = pa.table({"a": pa.array([1, None, 3], pa.int32()), "b": pa.array([b"x", b"y", None], pa.binary())})
    for schema in (t.schema, pa.schema([("a", pa.int64()), ("b", pa.large_binary())]),
                   pa.schema([("a", pa.int32()), ("b", pa.binary())], metadata={b"k": b"v"})):
        got = cast_table(t, schema)
        assert got.equals(t.cast(schema)) and got.schema.equals(schema, check_metadata=True)
    assert cast_table(t, t.schema).column("b").chunk(0).buffers()[2].address == t.column("b").chunk(0).buffers()[2].address
    for bad in (pa.schema([("b", pa.binary()), ("a", pa.int32())]),
                pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.binary())])):
        with pytest.raises(ValueError):
            t.cast(bad)
        with pytest.raises(ValueError):
            cast_table(t, bad)


def test_concat_consumes_its_parts():
    """``consume=True`` empties the list and lets each part's columns go: the result equals a plain concat."""
    import gc
    import weakref

    import kafkafmt

    def part(seed):
        rnd = np.random.default_rng(seed)
        return kafkafmt.decode(kafkafmt.encode(values=[rnd.bytes(int(rnd.integers(0, 30))) for _ in range(50)],
                                               keys=[None] * 50, timestamps=list(range(50)), base_offset=seed * 100))

    want = kafkafmt.Records.concat([part(1), part(2), part(3)])
    parts = [part(1), part(2), part(3)]
    gone = [weakref.ref(p.offset) for p in parts] + [weakref.ref(p.value.data) for p in parts]
    got = kafkafmt.Records.concat(parts, consume=True)
    gc.collect()
    assert parts == [] and all(ref() is None for ref in gone)
    assert got.to_arrow().equals(want.to_arrow())


def test_slices_equal_pyarrow_slices():
    """A slice's values and validity (only the bytes under it unpacked) equal pyarrow's slice of the same array,
    at every start and stop, across the bitmap's byte edges (the view layout slices with the same helper)."""
    rnd = np.random.default_rng(11)
    values = [None if rnd.random() < 0.3 else rnd.bytes(int(rnd.integers(0, 4))) for _ in range(29)]
    arr = pa.array(values, pa.binary())
    whole = BinaryColumn.from_arrow(arr)
    for start in range(-2, 31):
        for stop in range(start - 1, 32):
            want = arr[slice(start, stop)]
            got = whole[start:stop]
            assert got.to_pylist() == want.to_pylist()
            assert got.null_count == want.null_count
            assert (got.validity is None) == (want.null_count == 0)
