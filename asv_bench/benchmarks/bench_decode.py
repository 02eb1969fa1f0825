"""Decoding benchmarks: kafkafmt against aiokafka, kafka-python and the bare codec libraries.

Every benchmark is parametrized by the corpus (``benchmarks.corpus.NAMES``): ``none``, ``gzip``,
``snappy``, ``lz4``, ``zstd`` (40k records in ~500-record batches) and ``zstd-small`` (20k records
in 1..10-record batches).  See ``asv_bench/README.md`` for what each one measures.

All ``time_*`` benchmarks, and the measurements inside the ``track_*`` ones, run with the cyclic
garbage collector disabled (that is what asv's timeit-based timer does; we do the same in the
track loops so both agree).  That favours the peers, which allocate several Python objects per
record; ``time_aiokafka_columns_gc`` shows aiokafka with the collector on, as a real consumer runs.
"""

from __future__ import annotations

import gc
import os
import statistics
import struct
import time

import numpy as np

from . import corpus

try:  # the decoder may not exist yet (or be half-written): its benchmarks are then skipped
    import kafkafmt

    _kafkafmt_decode = kafkafmt.decode
    _KAFKAFMT_ERROR = None
except Exception as exc:  # noqa: BLE001 - any import problem means "not benchmarkable"
    kafkafmt = None
    _kafkafmt_decode = None
    _KAFKAFMT_ERROR = "%s: %s" % (type(exc).__name__, exc)

from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

PARAMS = corpus.NAMES
PARAM_NAMES = ["corpus"]


def _require_kafkafmt():
    if _kafkafmt_decode is None:
        # NotImplementedError in setup() makes asv mark the benchmark as skipped (n/a)
        raise NotImplementedError("kafkafmt.decode is not importable: %s" % _KAFKAFMT_ERROR)


def aiokafka_is_compiled() -> bool:
    """True when aiokafka uses its Cython ``_crecords`` extension (it silently falls back to
    pure Python when the extension fails to import, or when AIOKAFKA_NO_EXTENSIONS is set)."""
    from aiokafka.record.default_records import DefaultRecordBatch

    return (AioMemoryRecords.__module__.startswith("aiokafka.record._crecords")
            and DefaultRecordBatch.__module__.startswith("aiokafka.record._crecords"))


# ---------------------------------------------------------------------------------------------
# the contenders
# ---------------------------------------------------------------------------------------------

def kafkafmt_columns(buf, verify_crc=True):
    """kafkafmt.decode, touching every column so a lazy implementation cannot cheat."""
    recs = _kafkafmt_decode(buf, verify_crc=verify_crc)
    recs.offset, recs.timestamp, recs.key, recs.value, recs.headers  # noqa: B018
    return recs


def aiokafka_columns(buf, MemoryRecords=AioMemoryRecords, np_array=np.array, int64=np.int64):
    """aiokafka's fastest honest way to the same columns: iterate its (Cython) batches, check
    each batch's CRC-32C like its consumer does with ``check_crcs=True`` (the default), append
    to Python lists and convert offsets/timestamps to NumPy.  Keys/values stay lists of bytes
    (or None); headers stay aiokafka's per-record lists of (str, bytes) tuples.  (Variants with
    per-batch list comprehensions or ``np.fromiter`` measured the same or slower.)"""
    offsets, timestamps, keys, values, headers = [], [], [], [], []
    add_o, add_t, add_k, add_v, add_h = (offsets.append, timestamps.append, keys.append,
                                         values.append, headers.append)
    records = MemoryRecords(buf)
    while records.has_next():
        batch = records.next_batch()
        if not batch.validate_crc():
            raise ValueError("CRC mismatch at offset %d" % batch.base_offset)
        for r in batch:
            add_o(r.offset)
            add_t(r.timestamp)
            add_k(r.key)
            add_v(r.value)
            add_h(r.headers)
    return np_array(offsets, int64), np_array(timestamps, int64), keys, values, headers


def kafka_python_columns(buf, MemoryRecords=KpMemoryRecords, np_array=np.array, int64=np.int64):
    """The same with kafka-python (pure Python); CRC checked per batch like its fetcher does
    (its per-record ``validate_crc()`` is a no-op for v2, so it is not called)."""
    offsets, timestamps, keys, values, headers = [], [], [], [], []
    add_o, add_t, add_k, add_v, add_h = (offsets.append, timestamps.append, keys.append,
                                         values.append, headers.append)
    records = MemoryRecords(buf)
    batch = records.next_batch()
    while batch is not None:
        if not batch.validate_crc():
            raise ValueError("CRC mismatch at offset %d" % batch.base_offset)
        for r in batch:
            add_o(r.offset)
            add_t(r.timestamp)
            add_k(r.key)
            add_v(r.value)
            add_h(r.headers)
        batch = records.next_batch()
    return np_array(offsets, int64), np_array(timestamps, int64), keys, values, headers


# --- decompression floor ---------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _gzip_decompressor():
    try:
        from isal import isal_zlib

        return lambda data, _d=isal_zlib.decompress: _d(data, 31)   # wbits 31: gzip container
    except ImportError:  # pragma: no cover
        import zlib

        return lambda data, _d=zlib.decompress: _d(data, 31)


def _snappy_decompressor():
    """xerial snappy (snappy-java's stream: 16-byte header, then big-endian int32 length + raw
    snappy block, repeated) into one preallocated contiguous output, like lz4/zstd produce;
    raw snappy when the xerial magic is absent."""
    import cramjam

    raw, raw_into, raw_len = (cramjam.snappy.decompress_raw, cramjam.snappy.decompress_raw_into,
                              cramjam.snappy.decompress_raw_len)
    unpack = struct.Struct(">i").unpack_from

    def decompress(data):
        if data[:8] != _XERIAL_MAGIC:
            return raw(data)
        view = memoryview(data)
        pos, end, total, blocks = 16, len(data), 0, []
        while pos < end:
            (n,) = unpack(data, pos)
            block = view[pos + 4:pos + 4 + n]
            size = raw_len(block)
            blocks.append((block, total, size))
            total += size
            pos += 4 + n
        out = bytearray(total)
        out_view = memoryview(out)
        for block, at, size in blocks:
            raw_into(block, out_view[at:at + size])
        return out

    return decompress


def _lz4_decompressor():
    import lz4.frame

    return lz4.frame.decompress


def _zstd_decompressor():
    import zstandard

    dctx = zstandard.ZstdDecompressor()        # one reused context (5-6x faster on small frames)

    def decompress(data, _one_shot=dctx.decompress):
        try:
            return _one_shot(data)
        except zstandard.ZstdError:             # frame without a content size (Java's streaming
            return dctx.decompressobj().decompress(data)   # compressor): not in our corpora
    return decompress


_DECOMPRESSOR_FACTORIES = {1: _gzip_decompressor, 2: _snappy_decompressor,
                           3: _lz4_decompressor, 4: _zstd_decompressor}


def decompress_only(payloads, decompressors):
    """Decompress every compressed batch's records payload; returns the decompressed byte count."""
    total = 0
    for codec, data in payloads:
        if codec:
            total += len(decompressors[codec](data))
    return total


def make_decompress_only(name):
    """A zero-argument callable decompressing all of corpus ``name`` (payloads pre-split)."""
    buf, _ = corpus.load(name)
    payloads = corpus.compressed_payloads(buf)
    codecs = {c for c, _ in payloads if c}
    if not codecs:
        raise NotImplementedError("corpus %r has no compressed batch" % name)
    decompressors = {c: _DECOMPRESSOR_FACTORIES[c]() for c in codecs}
    return lambda: decompress_only(payloads, decompressors)


# ---------------------------------------------------------------------------------------------
# correctness guard: a fast decoder that decodes wrongly is not worth timing
# ---------------------------------------------------------------------------------------------

_verified: dict[str, bool] = {}


def _binary_to_list(column):
    """A kafkafmt BinaryColumn (Arrow layout: offsets, data, validity) as a list of bytes/None."""
    offsets = np.asarray(column.offsets)
    data = bytes(memoryview(column.data).cast("B")) if not isinstance(column.data, bytes) else column.data
    n = len(offsets) - 1
    validity = column.validity
    if validity is None:
        valid = np.ones(n, dtype=bool)
    else:
        validity = np.asarray(validity)
        if validity.dtype == np.bool_ and len(validity) == n:
            valid = validity
        else:  # Arrow validity bitmap, LSB first
            valid = np.unpackbits(validity.view(np.uint8), bitorder="little")[:n].astype(bool)
    return [data[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(n)]


def verify_kafkafmt(name):
    """Check kafkafmt.decode against aiokafka on corpus ``name`` (once per process)."""
    if _verified.get(name):
        return
    buf, meta = corpus.load(name)
    recs = kafkafmt_columns(buf)
    offsets, timestamps, keys, values, headers = aiokafka_columns(buf)
    assert len(recs.offset) == meta["records"], (len(recs.offset), meta["records"])
    np.testing.assert_array_equal(np.asarray(recs.offset), offsets)
    np.testing.assert_array_equal(np.asarray(recs.timestamp), timestamps)
    assert _binary_to_list(recs.key) == keys, "keys differ"
    assert _binary_to_list(recs.value) == values, "values differ"
    _verified[name] = True


# ---------------------------------------------------------------------------------------------
# in-process measurement for the track_* benchmarks
# ---------------------------------------------------------------------------------------------

def _budget():
    """Seconds of measurement per contender in one track_* call (env KAFKAFMT_BENCH_BUDGET)."""
    return float(os.environ.get("KAFKAFMT_BENCH_BUDGET", "2.0"))


def interleaved_medians(funcs, budget=None, min_repeats=5, max_repeats=101, min_sample=0.01):
    """Median seconds per call of each of ``funcs``, measured interleaved in this process.

    Each function is warmed up once, then timed in rounds, each round running every function
    once (in alternating order, so neither always follows the other), so machine noise hits all
    of them alike.  A sample is the mean of ``number`` back-to-back calls, ``number`` chosen so a
    sample lasts >= ``min_sample`` s (like asv's sample_time).  Rounds continue until each
    function has used ``budget`` seconds, within [min_repeats, max_repeats].  GC is off while
    timing, as in timeit/asv.
    """
    budget = _budget() if budget is None else budget
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        first = []
        for f in funcs:
            t0 = time.perf_counter()
            f()
            first.append(max(time.perf_counter() - t0, 1e-7))
        numbers = [max(1, int(min_sample / t)) for t in first]
        slowest = max(n * t for n, t in zip(numbers, first))
        repeats = int(min(max_repeats, max(min_repeats, budget / slowest)))
        samples = [[] for _ in funcs]
        order = list(range(len(funcs)))
        perf = time.perf_counter
        for r in range(repeats):
            for i in (order if r % 2 == 0 else order[::-1]):
                f, number = funcs[i], numbers[i]
                t0 = perf()
                for _ in range(number):
                    f()
                samples[i].append((perf() - t0) / number)
        return [statistics.median(s) for s in samples]
    finally:
        if gc_was_enabled:
            gc.enable()


# ---------------------------------------------------------------------------------------------
# asv benchmarks
# ---------------------------------------------------------------------------------------------

class _Corpus:
    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 300

    def setup(self, name):
        self.buf, self.meta = corpus.load(name)


class KafkafmtDecode(_Corpus):
    """kafkafmt, end to end from the concatenated batches to columns."""

    def setup(self, name):
        _require_kafkafmt()
        super().setup(name)
        verify_kafkafmt(name)

    def time_kafkafmt_decode(self, name):
        kafkafmt_columns(self.buf)

    def time_kafkafmt_decode_nocrc(self, name):
        kafkafmt_columns(self.buf, verify_crc=False)

    def time_kafkafmt_to_arrow(self, name):
        _kafkafmt_decode(self.buf).to_arrow()

    def time_kafkafmt_to_pandas(self, name):
        _kafkafmt_decode(self.buf).to_pandas()


class Peers(_Corpus):
    """The existing Python clients building the same columns."""

    def setup(self, name):
        super().setup(name)
        if not aiokafka_is_compiled():
            # make it visible: pure-Python aiokafka would be a strawman
            print("WARNING: aiokafka runs without its C extension")

    def time_aiokafka_columns(self, name):
        aiokafka_columns(self.buf)

    def time_aiokafka_columns_gc(self, name):
        # asv times with the GC disabled; a real consumer runs with it on
        gc.enable()
        try:
            aiokafka_columns(self.buf)
        finally:
            gc.disable()

    def time_kafka_python_columns(self, name):
        kafka_python_columns(self.buf)


class DecompressOnly(_Corpus):
    """The decompression floor: the codec library alone, on pre-split payloads."""

    def setup(self, name):
        super().setup(name)
        self.run = make_decompress_only(name)   # NotImplementedError for "none": skipped

    def time_decompress_only(self, name):
        self.run()


class Ratios(_Corpus):
    """Speedups over the peers, measured inside one process (interleaved, medians), so machine
    noise largely cancels:

    * ``track_ratio_vs_aiokafka``      = time(aiokafka columns)     / time(kafkafmt.decode)
    * ``track_ratio_vs_kafka_python``  = time(kafka-python columns) / time(kafkafmt.decode)

    Higher is better; targets: none >= 6 (aim 10), gzip >= 3.
    """

    unit = "ratio"

    def setup(self, name):
        _require_kafkafmt()
        super().setup(name)
        verify_kafkafmt(name)
        buf = self.buf
        self.decode = lambda: kafkafmt_columns(buf)

    def track_ratio_vs_aiokafka(self, name):
        buf = self.buf
        t_kf, t_peer = interleaved_medians([self.decode, lambda: aiokafka_columns(buf)])
        return round(t_peer / t_kf, 3)

    def track_ratio_vs_kafka_python(self, name):
        buf = self.buf
        t_kf, t_peer = interleaved_medians([self.decode, lambda: kafka_python_columns(buf)])
        return round(t_peer / t_kf, 3)


class DecodeVsDecompress(Ratios):
    """``track_ratio_decode_vs_decompress`` = time(kafkafmt.decode) / time(decompress only):
    kafkafmt's total over the decompression floor.  Lower is better, 1.0 would be the floor;
    target <= 1.5 for snappy, lz4, zstd.  Skipped for the uncompressed corpus."""

    track_ratio_vs_aiokafka = track_ratio_vs_kafka_python = None

    def setup(self, name):
        super().setup(name)
        self.floor = make_decompress_only(name)   # NotImplementedError for "none": skipped

    def track_ratio_decode_vs_decompress(self, name):
        t_kf, t_floor = interleaved_medians([self.decode, self.floor])
        return round(t_kf / t_floor, 3)


class Throughput(_Corpus):
    """kafkafmt.decode records per second (median of in-process repeats, one core)."""

    unit = "records/s"

    def setup(self, name):
        _require_kafkafmt()
        super().setup(name)

    def track_records_per_second(self, name):
        buf = self.buf
        (t,) = interleaved_medians([lambda: kafkafmt_columns(buf)])
        return int(self.meta["records"] / t)


# ---------------------------------------------------------------------------------------------
# python -m benchmarks.bench_decode [corpus ...]: quick table without asv (same code paths)
# ---------------------------------------------------------------------------------------------

def _table(names, budget=None):
    print("aiokafka C extension in use:", aiokafka_is_compiled())
    if _kafkafmt_decode is None:
        print("kafkafmt not importable:", _KAFKAFMT_ERROR)
    impls = ("kafkafmt", "aiokafka", "kafka-python", "decompress")
    hdr = (("corpus",) + tuple("%s ms" % k for k in impls)
           + tuple("%s Mrec/s" % k for k in impls)
           + ("x aiokafka", "x kafka-python", "decode / decompress"))
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for name in names:
        buf, meta = corpus.load(name)
        funcs = {"aiokafka": lambda: aiokafka_columns(buf),
                 "kafka-python": lambda: kafka_python_columns(buf)}
        if _kafkafmt_decode is not None:
            verify_kafkafmt(name)
            funcs["kafkafmt"] = lambda: kafkafmt_columns(buf)
        try:
            funcs["decompress"] = make_decompress_only(name)
        except NotImplementedError:
            pass
        keys = list(funcs)
        t = dict(zip(keys, interleaved_medians([funcs[k] for k in keys], budget=budget)))
        ms = lambda k: "%.2f" % (1e3 * t[k]) if k in t else "-"                    # noqa: E731
        mrps = lambda k: "%.2f" % (meta["records"] / t[k] / 1e6) if k in t else "-"  # noqa: E731
        ratio = lambda a, b: "%.2f" % (t[a] / t[b]) if a in t and b in t else "-"    # noqa: E731
        row = ((name,) + tuple(ms(k) for k in impls) + tuple(mrps(k) for k in impls)
               + (ratio("aiokafka", "kafkafmt"), ratio("kafka-python", "kafkafmt"),
                  ratio("kafkafmt", "decompress")))
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    import sys

    _table(sys.argv[1:] or PARAMS)
