"""Encoding record batches (magic 2): kafkafmt.encode against the peers' batch builders and the
bare compressors.

Input: the 40 000 records of the ``large`` record set (``corpus.records("large")``: ~257-byte
values, 16-byte keys with 5 % nulls, headers on 20 %), cut into 500-record batches
(``max_records=500, batch_size=2**30``), idempotent-producer fields set.

* ``kafkafmt.encode`` from Python lists (``keys=, values=, timestamps=, headers=``) -- the same
  objects the peers get --, from a pyarrow Table with Spark's Kafka columns (what
  ``to_arrow()`` gives: headers null where a record has none), and from a decoded ``Records``
  (the ``none`` corpus, zero-copy columns: the writer's core speed);
* kafka-python 3.0 ``DefaultRecordBatchBuilder`` (pure Python) and aiokafka 0.14's Cython
  ``DefaultRecordBatchBuilder``: one builder per 500 records, ``append()`` per record, ``build()``;
* compress-only: the codec library alone compressing each batch's uncompressed records section
  (pre-built in setup) with kafkafmt's settings -- the floor an encoder cannot beat.

Codecs (the parameter): ``none``, ``gzip`` (kafkafmt's default: ISA-L level 2; the peers always
use zlib level 9 through GzipFile), ``gzip-9`` (kafkafmt with ``compression_level=9``: zlib level 9,
the peers' setting -- the like-for-like gzip comparison), ``snappy`` (xerial, 32 KiB blocks, all
three), ``lz4`` (frames of independent 64 KiB blocks; kafka-python: lz4.frame's fast level 0
with a content size; aiokafka: cramjam's liblz4 at level 9, i.e. its HC mode -- so "x aiokafka"
for lz4 mostly measures that choice), ``zstd`` (level 3 in all three).
"""

from __future__ import annotations

import struct

from . import common, corpus
from .common import interleaved_medians, register_ratio, register_value, require_kafkafmt

PARAMS = ["none", "gzip", "gzip-9", "snappy", "lz4", "zstd"]
PER_BATCH = 500

_CODEC_ID = {"none": 0, "gzip": 1, "gzip-9": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _kw(codec):
    kw = dict(compression=codec.split("-")[0], max_records=PER_BATCH, batch_size=1 << 30,
              base_offset=corpus.BASE_OFFSET, producer_id=corpus.PRODUCER_ID,
              producer_epoch=corpus.PRODUCER_EPOCH, base_sequence=0, partition_leader_epoch=corpus.LEADER_EPOCH)
    if codec == "gzip-9":
        kw["compression_level"] = 9
    return kw


def records():
    return corpus.records("large")


_tables = {}


def arrow_table():
    """The records as a pyarrow Table with Spark's Kafka column names (built once per process)."""
    if "t" not in _tables:
        import numpy as np

        recs = records()
        ts = np.array(recs["timestamps"], np.int64)
        _tables["t"] = common.arrow_from_columns((np.zeros(len(ts), np.int64), ts, recs["keys"], recs["values"],
                                                  recs["headers"], np.zeros(len(ts), np.int32))
                                                 ).drop_columns(["offset", "timestampType"])
    return _tables["t"]


def kafkafmt_encode_lists(codec, threads=None):
    recs, kw = records(), _kw(codec)
    if threads is not None:      # (otherwise the suite's pinned default: one thread)
        kw["threads"] = threads
    encode = common.kafkafmt.encode
    keys, values, timestamps, headers = recs["keys"], recs["values"], recs["timestamps"], recs["headers"]
    return lambda: encode(keys=keys, values=values, timestamps=timestamps, headers=headers, **kw)


def kafkafmt_encode_arrow(codec):
    table, kw = arrow_table(), _kw(codec)
    encode = common.kafkafmt.encode
    return lambda: encode(table, **kw)


_decoded = {}


def kafkafmt_encode_records(codec):
    """Re-encoding a decoded ``Records`` (the ``none`` corpus; zero-copy columns): the writer's core."""
    if "r" not in _decoded:
        buf, _ = corpus.load("none")
        _decoded["r"] = common.kafkafmt.decode(buf)
    recs, kw = _decoded["r"], _kw(codec)
    encode = common.kafkafmt.encode
    return lambda: encode(recs, **kw)


def _builder_encode(builder_cls, codec):
    recs = records()
    codec_id = _CODEC_ID[codec]
    rows = list(zip(recs["timestamps"], recs["keys"], recs["values"], recs["headers"]))
    chunks = [rows[i:i + PER_BATCH] for i in range(0, len(rows), PER_BATCH)]
    pid, epoch = corpus.PRODUCER_ID, corpus.PRODUCER_EPOCH

    def run():
        out = []
        seq = 0
        for chunk in chunks:
            b = builder_cls(2, codec_id, False, pid, epoch, seq, 1 << 30)
            append = b.append
            for delta, (ts, key, value, headers) in enumerate(chunk):
                append(delta, ts, key, value, headers)
            out.append(b.build())
            seq += len(chunk)
        return b"".join(out)
    return run


def kafka_python_encode(codec):
    from kafka.record.default_records import DefaultRecordBatchBuilder

    return _builder_encode(DefaultRecordBatchBuilder, codec)


def aiokafka_encode(codec):
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    return _builder_encode(DefaultRecordBatchBuilder, codec)


def _compressor(codec):
    if codec == "gzip":
        from isal import isal_zlib

        def gzip2(data):
            c = isal_zlib.compressobj(2, isal_zlib.DEFLATED, 31)
            return c.compress(data) + c.flush()
        return gzip2
    if codec == "gzip-9":
        import zlib

        def gzip9(data):
            c = zlib.compressobj(9, zlib.DEFLATED, 31)
            return c.compress(data) + c.flush()
        return gzip9
    if codec == "snappy":
        import cramjam

        raw = cramjam.snappy.compress_raw
        header = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
        pack = struct.Struct(">i").pack

        def xerial(data):
            mv = memoryview(data)
            parts = [header]
            for i in range(0, len(mv), 32 * 1024):
                block = bytes(raw(mv[i:i + 32 * 1024]))
                parts.append(pack(len(block)))
                parts.append(block)
            return b"".join(parts)
        return xerial
    if codec == "lz4":
        import lz4.frame as f

        return lambda data: f.compress(data, block_size=f.BLOCKSIZE_MAX64KB, block_linked=False,
                                       store_size=False)
    if codec == "zstd":
        import zstandard

        cctx = zstandard.ZstdCompressor(level=3, write_content_size=True)
        return cctx.compress
    raise NotImplementedError("no compression for %r" % codec)


_payloads = {}


def uncompressed_payloads():
    """Each 500-record batch's uncompressed records section (bytes 61..end of the batch)."""
    if "p" not in _payloads:
        buf = kafkafmt_encode_lists("none")()
        _payloads["p"] = [bytes(buf[s + corpus.HEADER_SIZE:e]) for s, e in corpus.split_batches(buf)]
    return _payloads["p"]


def compress_only(codec):
    compress = _compressor(codec)       # NotImplementedError for "none"
    payloads = uncompressed_payloads()
    return lambda: [compress(p) for p in payloads]


_sizes = {}


def input_megabytes() -> float:
    """MB (10^6 bytes) of the records encoded uncompressed (the throughput denominator)."""
    if "mb" not in _sizes:
        _sizes["mb"] = len(kafkafmt_encode_lists("none")()) / 1e6
    return _sizes["mb"]


def check_outputs(codec):
    """kafkafmt's batches read back (aiokafka) and the peers' read back (kafkafmt) to the records."""
    common.verified_once("encode", codec, lambda: _check_outputs(codec))


def _check_outputs(codec):
    n = len(records()["values"])
    mine = kafkafmt_encode_lists(codec)()
    assert mine == kafkafmt_encode_arrow(codec)(), "encode from lists and from Arrow differ"
    again = common.kafkafmt.decode(kafkafmt_encode_records(codec)())
    assert len(again) == len(common.kafkafmt.decode(corpus.load("none")[0]))
    offsets, _, _, values, _ = common.aiokafka_columns(mine)
    assert len(offsets) == n and values == records()["values"]
    for peer in (kafka_python_encode, aiokafka_encode):
        recs = common.kafkafmt.decode(peer(codec)())
        assert len(recs) == n and common.binary_to_list(recs.value) == records()["values"]


def _ratio_maker(peer):
    def make(codec):
        return peer(codec), kafkafmt_encode_lists(codec)
    return make


def _vs_floor(codec):
    floor = compress_only(codec)
    return kafkafmt_encode_lists(codec), floor


register_ratio("encode_vs_kafka_python", "encode × kafka-python", PARAMS, _ratio_maker(kafka_python_encode),
               family="encode", track="bench_encode.EncodeRatios.track_ratio_encode_vs_kafka_python")
register_ratio("encode_vs_aiokafka", "encode × aiokafka", PARAMS, _ratio_maker(aiokafka_encode),
               family="encode", track="bench_encode.EncodeRatios.track_ratio_encode_vs_aiokafka")
register_ratio("encode_2_threads_vs_aiokafka", "encode, 2 threads × aiokafka", PARAMS,
               lambda codec: (aiokafka_encode(codec), kafkafmt_encode_lists(codec, threads=2)),
               family="encode", track="bench_encode.EncodeRatios.track_ratio_encode_2_threads_vs_aiokafka")
register_ratio("encode_vs_floor", "encode ÷ compress-only", PARAMS, _vs_floor, better="lower",
               family="encode", track="bench_encode.EncodeRatios.track_ratio_encode_vs_compress")


_SOURCES = {"lists": kafkafmt_encode_lists, "arrow": kafkafmt_encode_arrow, "records": kafkafmt_encode_records}


def encode_mb_per_s(codec, source="lists", budget_s=None) -> float:
    run = _SOURCES[source](codec)
    (t,) = interleaved_medians([run], budget_s)
    return round(input_megabytes() / t, 1)


register_value("encode_mb_s", "encode MB/s (lists)", PARAMS, lambda c: encode_mb_per_s(c, "lists"), "MB/s",
               family="encode", track="bench_encode.EncodeThroughput.track_encode_mb_per_s_lists")
register_value("encode_mb_s_arrow", "encode MB/s (Arrow)", PARAMS, lambda c: encode_mb_per_s(c, "arrow"), "MB/s",
               family="encode", track="bench_encode.EncodeThroughput.track_encode_mb_per_s_arrow")
register_value("encode_mb_s_records", "encode MB/s (Records)", PARAMS, lambda c: encode_mb_per_s(c, "records"),
               "MB/s", family="encode", track="bench_encode.EncodeThroughput.track_encode_mb_per_s_records")


class _EncodeBench:
    params = PARAMS
    param_names = ["codec"]
    timeout = 300

    def setup(self, codec):
        require_kafkafmt()
        common.note_quick()
        check_outputs(codec)


class Encode(_EncodeBench):
    """Times of each contender encoding the 40 000 records."""

    def setup(self, codec):
        super().setup(codec)
        self.lists = kafkafmt_encode_lists(codec)
        self.arrow = kafkafmt_encode_arrow(codec)
        self.records = kafkafmt_encode_records(codec)
        self.kp = kafka_python_encode(codec)
        self.aio = aiokafka_encode(codec)

    def time_kafkafmt_encode_lists(self, codec):
        self.lists()

    def time_kafkafmt_encode_arrow(self, codec):
        self.arrow()

    def time_kafkafmt_encode_records(self, codec):
        self.records()

    def time_kafka_python_builders(self, codec):
        self.kp()

    def time_aiokafka_builders(self, codec):
        self.aio()


class CompressOnly(_EncodeBench):
    """The floor: the compressor alone on the pre-built uncompressed batch payloads."""

    def setup(self, codec):
        super().setup(codec)
        self.run = compress_only(codec)     # NotImplementedError for "none": skipped

    def time_compress_only(self, codec):
        self.run()


class EncodeThroughput(_EncodeBench):
    """kafkafmt.encode throughput in MB/s of uncompressed record batches (median, one core)."""

    unit = "MB/s"

    def track_encode_mb_per_s_lists(self, codec):
        return common.measure_registered("encode_mb_s", codec)

    def track_encode_mb_per_s_arrow(self, codec):
        return common.measure_registered("encode_mb_s_arrow", codec)

    def track_encode_mb_per_s_records(self, codec):
        return common.measure_registered("encode_mb_s_records", codec)


class EncodeRatios(_EncodeBench):
    """* ``track_ratio_encode_vs_kafka_python`` = time(kafka-python builders) / time(kafkafmt.encode)
    * ``track_ratio_encode_vs_aiokafka``     = time(aiokafka builders) / time(kafkafmt.encode)
    * ``track_ratio_encode_2_threads_vs_aiokafka``: the same with ``threads=2`` (batches compressed
      by two threads at once; aiokafka has no such option)
    * ``track_ratio_encode_vs_compress``     = time(kafkafmt.encode) / time(compress only), lower is
      better (1.0 = the compressor's floor); skipped for ``none``.
    kafkafmt encodes from the same Python lists as the peers."""

    unit = "ratio"

    def track_ratio_encode_vs_kafka_python(self, codec):
        return common.measure_registered("encode_vs_kafka_python", codec)

    def track_ratio_encode_vs_aiokafka(self, codec):
        return common.measure_registered("encode_vs_aiokafka", codec)

    def track_ratio_encode_2_threads_vs_aiokafka(self, codec):
        return common.measure_registered("encode_2_threads_vs_aiokafka", codec)

    def track_ratio_encode_vs_compress(self, codec):
        if codec == "none":
            raise common.SkipNotImplemented("no compressor for 'none'")
        return common.measure_registered("encode_vs_floor", codec)
