"""Metadata-only decoding: offsets and timestamps, no key/value/header copies
(``kafkafmt.decode(buf, keys=False, values=False, headers=False)``) -- what an offset or time
index, a lag monitor or a compaction planner needs.

Compressed batches must still be decompressed to reach the records' varints, so the speedup
over a full decode is largest on uncompressed data; aiokafka has no metadata-only path (it
parses every record whatever it keeps), its equivalent below keeps only the two columns.
"""

from __future__ import annotations

from . import common, corpus
from .common import (_CorpusBench, aiokafka_meta, kafkafmt_columns, kafkafmt_meta, peer_available,
                     register_ratio, require_kafkafmt, verify_kafkafmt)


def _meta_speedup(name):
    buf, _ = corpus.load(name)
    return (lambda: kafkafmt_columns(buf)), (lambda: kafkafmt_meta(buf))


def _meta_vs_aiokafka(name):
    peer_available("aiokafka", name)
    buf, _ = corpus.load(name)
    return (lambda: aiokafka_meta(buf)), (lambda: kafkafmt_meta(buf))


register_ratio("meta_speedup", "metadata-only × full decode", corpus.NAMES, _meta_speedup,
               track="bench_meta.MetaRatios.track_ratio_meta_vs_full")
register_ratio("meta_speedup_nocrc", "metadata-only × full decode, CRC off", corpus.NAMES,
               lambda name: (lambda buf: ((lambda: kafkafmt_columns(buf, verify_crc=None)),
                                          (lambda: kafkafmt_meta(buf, verify_crc=None))))(corpus.load(name)[0]),
               track="bench_meta.MetaRatios.track_ratio_meta_vs_full_nocrc")
register_ratio("meta_vs_aiokafka", "metadata-only × aiokafka", corpus.NAMES, _meta_vs_aiokafka,
               track="bench_meta.MetaRatios.track_ratio_meta_vs_aiokafka")


def _check_meta(name):
    common.verified_once("meta", name, lambda: _check_meta_now(name))


def _check_meta_now(name):
    """The metadata-only decode gives the same offsets and timestamps as the full one."""
    import numpy as np

    buf, _ = corpus.load(name)
    full, meta = kafkafmt_columns(buf), kafkafmt_meta(buf)
    np.testing.assert_array_equal(np.asarray(meta.offset), np.asarray(full.offset))
    np.testing.assert_array_equal(np.asarray(meta.timestamp), np.asarray(full.timestamp))


class MetaDecode(_CorpusBench):
    """Times: kafkafmt metadata-only (CRC checked, and not), aiokafka keeping offsets+timestamps."""

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)
        verify_kafkafmt(name)
        _check_meta(name)

    def time_kafkafmt_meta(self, name):
        kafkafmt_meta(self.buf)

    def time_kafkafmt_meta_nocrc(self, name):
        kafkafmt_meta(self.buf, verify_crc=None)

    def time_aiokafka_meta(self, name):
        common.skip_unless_peer("aiokafka", name)
        aiokafka_meta(self.buf)


class MetaRatios(_CorpusBench):
    """* ``track_ratio_meta_vs_full``     = time(full decode) / time(metadata-only decode), both
      with CRCs checked: the speedup of asking for less (target >= 3).
    * ``track_ratio_meta_vs_full_nocrc`` = the same with ``verify_crc=None`` on both sides (the
      CRC pass over every byte is then not the common floor).
    * ``track_ratio_meta_vs_aiokafka`` = time(aiokafka offsets+timestamps) / time(kafkafmt
      metadata-only)."""

    unit = "ratio"

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)
        verify_kafkafmt(name)
        _check_meta(name)

    def track_ratio_meta_vs_full(self, name):
        return common.measure_registered("meta_speedup", name)

    def track_ratio_meta_vs_full_nocrc(self, name):
        return common.measure_registered("meta_speedup_nocrc", name)

    def track_ratio_meta_vs_aiokafka(self, name):
        common.skip_unless_peer("aiokafka", name)
        return common.measure_registered("meta_vs_aiokafka", name)
