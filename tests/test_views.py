"""binary="view": key/value as Arrow binary_view columns pointing into the input and into the
retained decompressed batches; equal to the contiguous layout; buffers outlive the Records."""
import gc
import glob
import pathlib
import random

import numpy as np
import pytest

import kafkafmt
from kafkafmt.record import BinaryColumn, BinaryViewColumn, Records

import pyarrow as pa

CODECS = (None, "gzip", "snappy", "lz4", "zstd")


@pytest.fixture(autouse=True)
def views_into_small_batches(request, monkeypatch):
    """Small test batches: views into the decompressed lz4/zstd batches all the same (by default
    small ones give views over the contiguous output, see test_small_kernel_codec_batches)."""
    if request.node.name != "test_small_kernel_codec_batches":
        from kafkafmt.record import _decoder as decoder
        monkeypatch.setattr(decoder, "VIEW_MIN_KERNEL_CODEC_BATCH", 0)


def _records(n, seed=1):
    rnd = random.Random(seed)
    return dict(keys=[None if rnd.random() < 0.1 else rnd.randbytes(rnd.randint(0, 20)) for _ in range(n)],
                values=[None if rnd.random() < 0.05 else rnd.randbytes(rnd.choice([0, 3, 12, 13, 300]))
                        for _ in range(n)],
                headers=[[("h", b"x")] if rnd.random() < 0.3 else [] for _ in range(n)])


def _buffer(codecs=CODECS, n=300, magic=2):
    parts, off = [], 0
    for i, c in enumerate(codecs):
        r = _records(n, seed=i)
        if magic < 2:
            r.pop("headers")
        parts.append(kafkafmt.encode(**r, compression=c, max_records=23, base_offset=off, magic=magic))
        off += n
    return b"".join(parts)


def _equal(contig, view):
    a, b = contig.to_arrow(), view.to_arrow()
    for name in ("key", "value"):
        if name in a.column_names:
            assert b[name].type == pa.binary_view()
            assert b[name].combine_chunks().cast(pa.binary()).equals(a[name].combine_chunks()), name
    assert a.drop([c for c in ("key", "value") if c in a.column_names]).equals(
        b.drop([c for c in ("key", "value") if c in b.column_names]))


@pytest.mark.parametrize("codec", CODECS)
def test_views_equal_contiguous(codec):
    buf = _buffer((codec, codec))
    contig = kafkafmt.decode(buf)
    view = kafkafmt.decode(buf, binary="view")
    assert isinstance(view.value, BinaryViewColumn) and isinstance(view.key, BinaryViewColumn)
    _equal(contig, view)
    assert view.value.to_pylist() == contig.value.to_pylist()
    assert view.key.to_pylist() == contig.key.to_pylist()
    assert view.value.nbytes == contig.value.nbytes
    np.testing.assert_array_equal(view.value.is_null(), contig.value.is_null())
    np.testing.assert_array_equal(view.value.lengths(), contig.value.lengths())
    for i in (0, 5, len(view) - 1):
        assert view.value[i] == contig.value[i] and view.key[i] == contig.key[i]


@pytest.mark.parametrize("kw", [dict(keys=False), dict(values=False), dict(headers=False), dict(include_control=True),
                                dict(verify_crc=None), dict(threads=4)])
def test_views_options(kw):
    buf = _buffer() + kafkafmt.encode_control("commit", offset=10_000, producer_id=3)
    _equal(kafkafmt.decode(buf, **kw), kafkafmt.decode(buf, binary="view", **kw))


def test_views_point_into_the_input_and_payloads():
    raw = np.frombuffer(_buffer((None, "zstd")), np.uint8)
    view = kafkafmt.decode(raw, binary="view")
    arr = view.value.to_arrow()
    bufs = arr.buffers()[2:]
    assert bufs[0].address == raw.ctypes.data          # the input itself, not a copy
    assert len(bufs) == 1 + int((view.batches.codec == 4).sum())   # + one per decompressed batch
    lengths = view.value.lengths().astype(np.int64)
    uncompressed_rows = view.batches.codec[view.batch_index] == 0
    long_rows = np.flatnonzero(uncompressed_rows & (lengths > 12))
    assert len(long_rows)
    offs = view.value.views[long_rows, 12:16].copy().view("<i4").reshape(-1).astype(np.int64)
    index = view.value.views[long_rows, 8:12].copy().view("<i4").reshape(-1)
    assert (index == 0).all() and (offs >= 0).all() and (offs + lengths[long_rows] <= raw.nbytes).all()
    expected = kafkafmt.decode(raw).value
    for r, o, n in zip(long_rows[:50], offs[:50], lengths[long_rows][:50]):
        assert raw[o:o + n].tobytes() == expected[int(r)]


def test_small_kernel_codec_batches():
    """Small lz4/zstd batches (decompressed by the kernel itself, which keeps no buffer): views over
    the contiguous output; equal values either way."""
    raw = np.frombuffer(_buffer(("zstd", "lz4")), np.uint8)
    view = kafkafmt.decode(raw, binary="view")
    assert isinstance(view.value, BinaryViewColumn)
    assert all(b.address != raw.ctypes.data for b in view.value.to_arrow().buffers()[2:])
    _equal(kafkafmt.decode(raw), view)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_views_point_into_the_input_and_wrappers(magic):
    """v0/v1: a plain message's value is viewed in the input, a compressed wrapper's inner values
    in its decompressed message set (one buffer per wrapper)."""
    raw = np.frombuffer(_buffer((None, "gzip", None), magic=magic), np.uint8)
    contig = kafkafmt.decode(raw)
    view = kafkafmt.decode(raw, binary="view")
    assert isinstance(view.value, BinaryViewColumn)
    _equal(contig, view)
    bufs = view.value.to_arrow().buffers()[2:]
    assert bufs[0].address == raw.ctypes.data
    assert len(bufs) == 1 + int((view.batches.codec != 0).sum())
    lengths = view.value.lengths()
    index = view.value.views[:, 8:12].copy().view("<i4").reshape(-1)
    plain = view.batches.codec[view.batch_index] == 0
    assert ((index[plain & (lengths > 12)]) == 0).all()
    assert (index[~plain & (lengths > 12)] > 0).all()


def test_views_in_parallel_parts_equal_serial(monkeypatch):
    """A buffer split between threads: each part's views name the buffers by the same global
    numbers, so the joined column equals the serial one (values, nulls, buffers)."""
    parts, off = [], 0
    while sum(map(len, parts)) < 6 << 20:
        codec = ("gzip", None, "snappy")[len(parts) % 3]
        r = _records(400, seed=len(parts))
        rnd = random.Random(len(parts))
        r["values"] = [v if v is None else rnd.randbytes(40 * len(v)) for v in r["values"]]   # incompressible
        parts.append(kafkafmt.encode(**r, compression=codec, max_records=50, base_offset=off))
        off += 400
    raw = np.frombuffer(b"".join(parts), np.uint8)
    from kafkafmt.record import _decoder as decoder
    parts_decoded = []
    group = decoder._decode_group

    def spy(buf, table, lo, hi, *args):
        parts_decoded.append((lo, hi))
        return group(buf, table, lo, hi, *args)

    serial = kafkafmt.decode(raw, binary="view", threads=1)
    monkeypatch.setattr(decoder, "_decode_group", spy)
    split = kafkafmt.decode(raw, binary="view", threads=2)
    assert len(parts_decoded) > 1                  # really decoded in parts
    np.testing.assert_array_equal(split.value.views, serial.value.views)
    np.testing.assert_array_equal(split.key.views, serial.key.views)
    assert split.value.null_count == serial.value.null_count > 0
    assert split.value.to_pylist() == serial.value.to_pylist() == kafkafmt.decode(raw).value.to_pylist()
    _equal(kafkafmt.decode(raw, threads=1), split)


@pytest.mark.parametrize("codec", [None, "gzip"])
def test_views_raise_the_errors_of_the_contiguous_layout(codec):
    """A record that does not parse (the CRC left unchecked) fails the same way, at the same byte,
    in both layouts."""
    buf = bytearray(_buffer((codec, None)))
    t = kafkafmt.scan_batches(bytes(buf))[0]
    pos = int(t.position[1]) + 61               # the second batch's first record's length varint
    buf[pos] = 0x02                             # a record of one byte: not a record
    errs = []
    for binary in ("contiguous", "view"):
        with pytest.raises(kafkafmt.KafkafmtError) as exc:
            kafkafmt.decode(bytes(buf), binary=binary, verify_crc=None)
        errs.append((type(exc.value), exc.value.position, str(exc.value)))
    assert errs[0] == errs[1]


def test_slices_take_concat_filter():
    buf = _buffer()
    contig, view = kafkafmt.decode(buf), kafkafmt.decode(buf, binary="view")
    _equal(contig[10:200], view[10:200])
    rows = np.array([5, 3, 900, 0, 17])
    _equal(contig.take(rows), view.take(rows))
    _equal(Records.concat([contig[:50], contig[400:]]), Records.concat([view[:50], view[400:]]))
    mixed = Records.concat([view[:50], contig[400:]])   # a contiguous part: contiguous result
    assert mixed.value.to_pylist() == contig.value[:50].to_pylist() + contig.value[400:].to_pylist()
    mask = np.arange(len(view)) % 3 == 0
    _equal(contig.filter(mask), view.filter(mask))
    back = view.value.to_contiguous()
    assert isinstance(back, BinaryColumn) and back.to_pylist() == contig.value.to_pylist()


def test_concat_of_one_partitions_chunks_keeps_its_number():
    """Chunks of one partition concatenate with that partition's number (not an array of it per record),
    their batch indexes pointing into the concatenated batch table; chunks of two partitions, per record."""
    recs = kafkafmt.decode(_buffer())
    cuts = [recs[:50].replace(partition=3), recs[50:400].replace(partition=3), recs[400:].replace(partition=3)]
    whole = Records.concat(cuts)
    assert whole.partition == 3 and not isinstance(whole.partition, np.ndarray)
    assert whole.to_arrow()["partition"].to_pylist() == [3] * len(recs)
    assert whole.batch_index.dtype == np.int32
    assert (whole.batch_column("base_offset") == recs.batch_column("base_offset")).all()
    assert whole.sequence.tolist() == recs.sequence.tolist()
    two = Records.concat([recs[:50].replace(partition=3), recs[50:].replace(partition=4)])
    assert two.partition.tolist() == [3] * 50 + [4] * (len(recs) - 50)
    assert Records.concat([recs[:50], recs[50:]]).partition is None


def test_lifetime_outlives_records_and_map(tmp_path):
    """Arrays made from view columns keep the memory map and the decompressed batches alive after
    the Records, the file's map (closed by read_segment) and the file itself are gone."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    seg = folder / "00000000000000000000.log"
    seg.write_bytes(_buffer((None, "lz4", None, "zstd")))
    expected = kafkafmt.read_segment(seg).value.to_pylist()
    recs = kafkafmt.read_segment(seg, binary="view")
    arr = recs.to_arrow()["value"]
    pl_col = recs.value
    del recs
    seg.unlink()
    gc.collect()
    garbage = [bytes(1 << 20) for _ in range(32)]   # reuse of freed memory would show
    assert arr.to_pylist() == expected
    assert pl_col.to_pylist() == expected
    del garbage


def test_read_log_dir_views(tmp_path):
    from kafkafmt.log import LogWriter

    folder = tmp_path / "t-0"
    with LogWriter(folder, segment_bytes=30_000) as w:
        for k in range(12):
            w.append(**_records(50, seed=k), compression=[None, "zstd", "lz4"][k % 3])
    contig = kafkafmt.read_log_dir(folder)
    for threads in (1, 4):
        view = kafkafmt.read_log_dir(folder, binary="view", threads=threads)
        assert isinstance(view.value, BinaryViewColumn)
        _equal(contig, view)
    chunks = list(kafkafmt.iter_log_dir(folder, binary="view", max_bytes=10_000))
    assert all(isinstance(c.value, BinaryViewColumn) for c in chunks if len(c))
    assert sum(len(c) for c in chunks) == len(contig)


def test_polars_takes_views_without_copy():
    import polars as pl
    buf = _buffer()
    view = kafkafmt.decode(buf, binary="view")
    df = pl.from_arrow(view.to_arrow(headers=False))
    assert df["value"].to_list() == kafkafmt.decode(buf).value.to_pylist()
    assert df.schema["value"] == pl.Binary


def test_duckdb_reads_views():
    import duckdb
    buf = _buffer()
    t = kafkafmt.decode(buf, binary="view").to_arrow(headers=False)
    contig = kafkafmt.decode(buf)
    got = duckdb.sql("select count(*), sum(octet_length(value)), count(key) from t").fetchall()[0]
    assert got == (len(contig), contig.value.nbytes, len(contig) - contig.key.null_count)


def test_pandas_arrow_backend_keeps_views():
    import pandas as pd
    view = kafkafmt.decode(_buffer(), binary="view")
    df = view.to_pandas(dtype_backend="pyarrow")
    assert isinstance(df["value"].dtype, pd.ArrowDtype) and df["value"].dtype.pyarrow_dtype == pa.binary_view()


def test_real_corpus_views(real_corpus):
    files = sorted(glob.glob(str(real_corpus / "broker-dirs" / "**" / "*.log"), recursive=True))
    files += sorted(glob.glob(str(real_corpus / "record-sets" / "**" / "*.log.bin"), recursive=True))
    checked = 0
    for f in files:
        data = pathlib.Path(f).read_bytes()
        try:
            contig = kafkafmt.decode(data)
        except kafkafmt.KafkafmtError as exc:
            with pytest.raises(type(exc)):
                kafkafmt.decode(data, binary="view")
            continue
        _equal(contig, kafkafmt.decode(data, binary="view"))
        checked += 1
    assert checked > 5


def test_view_lengths_of_slices_and_takes():
    """Lengths and byte counts are read from the views in place: slices, takes and the empty column agree with
    the contiguous column's, and `lengths()` is the caller's own copy."""
    buf = _buffer(("none", "lz4"))
    contig = kafkafmt.decode(buf).value
    view = kafkafmt.decode(buf, binary="view").value
    rows = np.arange(len(view))[::-3]
    for v, c in ((view[3:17], contig[3:17]), (view[5:5], contig[5:5]), (view.take(rows), contig.take(rows))):
        np.testing.assert_array_equal(v.lengths(), c.lengths())
        assert v.nbytes == c.nbytes
    got = view.lengths()
    got[:] = -1
    np.testing.assert_array_equal(view.lengths(), contig.lengths())
