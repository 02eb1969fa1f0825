"""Decoding to columns: kafkafmt against aiokafka, kafka-python and the bare codec libraries.

Every benchmark is parametrized by the corpus (``benchmarks.corpus.NAMES``): magic 2 ``none``,
``gzip``, ``snappy``, ``lz4``, ``zstd`` (40k records in ~500-record batches), ``zstd-small``,
``lz4-small``, ``snappy-small`` and ``gzip-small`` (20k records in 1..10-record batches), and magic 1 /
magic 0 ``v1-*`` / ``v0-*``
with none, gzip, snappy, lz4.  See ``asv_bench/README.md`` for what each one measures.

All ``time_*`` benchmarks, and the measurements inside the ``track_*`` ones, run with the cyclic
garbage collector disabled (that is what asv's timeit-based timer does; we do the same in the
track loops so both agree).  That favours the peers, which allocate several Python objects per
record; ``time_aiokafka_columns_gc`` shows aiokafka with the collector on, as a real consumer runs.

``python -m benchmarks.bench_decode [corpus ...]`` prints a table of times and ratios without asv.
"""

from __future__ import annotations

import gc

from . import common, corpus
from .common import (_CorpusBench, aiokafka_columns, interleaved_medians, kafka_python_columns,
                     kafkafmt_columns, make_decompress_only, peer_available, register_ratio,
                     register_value, require_kafkafmt, verify_kafkafmt)
from .common import skip_unless_peer as _skip_unless


# --- the ratios (shared with `python -m benchmarks.report`) ----------------------------------

def _vs_aiokafka(name):
    peer_available("aiokafka", name)
    buf, _ = corpus.load(name)
    return (lambda: aiokafka_columns(buf)), (lambda: kafkafmt_columns(buf))


def _vs_kafka_python(name):
    buf, _ = corpus.load(name)
    return (lambda: kafka_python_columns(buf)), (lambda: kafkafmt_columns(buf))


def _vs_floor(name):
    buf, _ = corpus.load(name)
    floor = make_decompress_only(name)     # NotImplementedError for uncompressed corpora
    return (lambda: kafkafmt_columns(buf)), floor


def _crc_cost(name):
    buf, _ = corpus.load(name)
    return (lambda: kafkafmt_columns(buf, verify_crc=True)), (lambda: kafkafmt_columns(buf, verify_crc=None))


register_ratio("vs_aiokafka", "× aiokafka", corpus.NAMES, _vs_aiokafka,
               track="bench_decode.Ratios.track_ratio_vs_aiokafka")
register_ratio("vs_kafka_python", "× kafka-python", corpus.NAMES, _vs_kafka_python,
               track="bench_decode.Ratios.track_ratio_vs_kafka_python")
register_ratio("decode_vs_floor", "decode ÷ decompress-only", corpus.NAMES, _vs_floor, better="lower",
               track="bench_decode.DecodeVsDecompress.track_ratio_decode_vs_decompress")
register_ratio("crc_cost", "CRC on ÷ off", corpus.NAMES, _crc_cost, better="lower",
               track="bench_decode.CrcCost.track_ratio_crc_on_vs_off")


def records_per_second(name, budget_s=None) -> int:
    buf, meta = corpus.load(name)
    (t,) = interleaved_medians([lambda: kafkafmt_columns(buf)], budget_s)
    return int(meta["records"] / t)


register_value("decode_rate", "kafkafmt records/s", corpus.NAMES, records_per_second, "records/s",
               track="bench_decode.Throughput.track_records_per_second")


# --- asv benchmarks ----------------------------------------------------------------------------

class KafkafmtDecode(_CorpusBench):
    """kafkafmt, end to end from the concatenated batches to columns."""

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)
        verify_kafkafmt(name)

    def time_kafkafmt_decode(self, name):
        """verify_crc=True (the default): every CRC checked, a mismatch raises."""
        kafkafmt_columns(self.buf)

    def time_kafkafmt_decode_crc_report(self, name):
        """verify_crc=False: CRCs computed into batches.crc_valid, no error."""
        kafkafmt_columns(self.buf, verify_crc=False)

    def time_kafkafmt_decode_nocrc(self, name):
        """verify_crc=None: CRCs not computed."""
        kafkafmt_columns(self.buf, verify_crc=None)


class Peers(_CorpusBench):
    """The existing Python clients building the same columns."""

    def setup(self, name):
        super().setup(name)
        if not common.aiokafka_is_compiled():
            # make it visible: pure-Python aiokafka would be a strawman
            print("WARNING: aiokafka runs without its C extension")

    def time_aiokafka_columns(self, name):
        _skip_unless("aiokafka", name)
        aiokafka_columns(self.buf)

    def time_aiokafka_columns_gc(self, name):
        # asv times with the GC disabled; a real consumer runs with it on
        _skip_unless("aiokafka", name)
        gc.enable()
        try:
            aiokafka_columns(self.buf)
        finally:
            gc.disable()

    def time_kafka_python_columns(self, name):
        kafka_python_columns(self.buf)


class DecompressOnly(_CorpusBench):
    """The decompression floor: the codec library alone, on pre-split payloads."""

    def setup(self, name):
        super().setup(name)
        self.run = make_decompress_only(name)   # NotImplementedError for uncompressed: skipped

    def time_decompress_only(self, name):
        self.run()


class Ratios(_CorpusBench):
    """Speedups over the peers, measured inside one process (interleaved, medians), so machine
    noise largely cancels:

    * ``track_ratio_vs_aiokafka``      = time(aiokafka columns)     / time(kafkafmt.decode)
    * ``track_ratio_vs_kafka_python``  = time(kafka-python columns) / time(kafkafmt.decode)

    Higher is better; targets: none >= 6 (aim 10), gzip >= 3, zstd-small >= 4 (x aiokafka).
    """

    unit = "ratio"

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)
        verify_kafkafmt(name)

    def track_ratio_vs_aiokafka(self, name):
        _skip_unless("aiokafka", name)
        return common.measure_registered("vs_aiokafka", name)

    def track_ratio_vs_kafka_python(self, name):
        return common.measure_registered("vs_kafka_python", name)


class DecodeVsDecompress(_CorpusBench):
    """``track_ratio_decode_vs_decompress`` = time(kafkafmt.decode) / time(decompress only):
    kafkafmt's total over the decompression floor.  Lower is better, 1.0 would be the floor;
    target <= 1.5 for snappy, lz4, zstd.  Skipped for uncompressed corpora."""

    unit = "ratio"

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)
        make_decompress_only(name)   # NotImplementedError for uncompressed: skipped
        verify_kafkafmt(name)

    def track_ratio_decode_vs_decompress(self, name):
        return common.measure_registered("decode_vs_floor", name)


class CrcCost(_CorpusBench):
    """``track_ratio_crc_on_vs_off`` = time(decode, verify_crc=True) / time(decode, verify_crc=None):
    what checking every CRC costs (1.0 = nothing)."""

    unit = "ratio"

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)

    def track_ratio_crc_on_vs_off(self, name):
        return common.measure_registered("crc_cost", name)


class Throughput(_CorpusBench):
    """kafkafmt.decode records per second (median of in-process repeats, one core)."""

    unit = "records/s"

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)

    def track_records_per_second(self, name):
        return common.measure_registered("decode_rate", name)


# ---------------------------------------------------------------------------------------------
# python -m benchmarks.bench_decode [corpus ...]: times and ratios without asv (same code paths)
# ---------------------------------------------------------------------------------------------

def _table(names, budget_s=None):
    print("aiokafka C extension in use:", common.aiokafka_is_compiled())
    if common.KAFKAFMT_ERROR:
        print("kafkafmt not importable:", common.KAFKAFMT_ERROR)
    impls = ("kafkafmt", "kafkafmt-nocrc", "aiokafka", "kafka-python", "decompress")
    hdr = (("corpus",) + tuple("%s ms" % k for k in impls)
           + ("kafkafmt Mrec/s", "x aiokafka", "x kafka-python", "decode / decompress", "CRC on / off"))
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for name in names:
        buf, meta = corpus.load(name)
        funcs = {"kafka-python": lambda: kafka_python_columns(buf)}
        try:
            peer_available("aiokafka", name)
            funcs["aiokafka"] = lambda: aiokafka_columns(buf)
        except NotImplementedError:
            pass
        if not common.KAFKAFMT_ERROR:
            verify_kafkafmt(name)
            funcs["kafkafmt"] = lambda: kafkafmt_columns(buf)
            funcs["kafkafmt-nocrc"] = lambda: kafkafmt_columns(buf, verify_crc=None)
        try:
            funcs["decompress"] = make_decompress_only(name)
        except NotImplementedError:
            pass
        keys = list(funcs)
        t = dict(zip(keys, interleaved_medians([funcs[k] for k in keys], budget_s)))
        ms = lambda k: "%.2f" % (1e3 * t[k]) if k in t else "–"                      # noqa: E731
        ratio = lambda a, b: "%.2f" % (t[a] / t[b]) if a in t and b in t else "–"     # noqa: E731
        row = ((name,) + tuple(ms(k) for k in impls)
               + ("%.2f" % (meta["records"] / t["kafkafmt"] / 1e6) if "kafkafmt" in t else "–",
                  ratio("aiokafka", "kafkafmt"), ratio("kafka-python", "kafkafmt"),
                  ratio("kafkafmt", "decompress"), ratio("kafkafmt", "kafkafmt-nocrc")))
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    import sys

    _table(sys.argv[1:] or corpus.NAMES)
