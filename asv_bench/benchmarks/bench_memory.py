"""Peak memory of decoding: kafkafmt (columns, to_arrow) against aiokafka's lists.

* ``peakmem_*``: asv's measure, the benchmark process's peak RSS (``ru_maxrss``) after one call --
  imports (numpy, pyarrow, pandas, both peers) and the loaded corpus included, so compare the
  benchmarks with each other, not with zero.  setup() only loads the corpus (no verification
  decode, which would raise the peak before the benchmark runs).
* ``track_peak_bytes_*``: what the call itself adds to the resident set at its peak, measured in a
  fresh interpreter with the peak reset after loading the corpus (``common.peak_delta_bytes``;
  median of 3), and
  ``track_ratio_peak_aiokafka_vs_kafkafmt`` = aiokafka's / kafkafmt's.

The streaming vs full-read comparison of a log dir is in ``bench_logdir.Streaming``.
"""

from __future__ import annotations

from . import common, corpus
from .common import aiokafka_columns, kafkafmt_columns, register_value, require_kafkafmt

PARAMS = ["none", "zstd", "zstd-small", "v1-gzip"]


def _to_arrow(buf):
    return common.kafkafmt.decode(buf).to_arrow()


def _to_pandas(buf):
    return common.kafkafmt.decode(buf).to_pandas()


# factories for common.peak_delta_bytes ("bench_memory:<name>"): setup, then the measured callable
def kafkafmt_decode_call(name):
    buf, _ = corpus.load(name)
    return lambda: kafkafmt_columns(buf)


def kafkafmt_to_arrow_call(name):
    buf, _ = corpus.load(name)
    return lambda: _to_arrow(buf)


def aiokafka_columns_call(name):
    buf, _ = corpus.load(name)
    return lambda: aiokafka_columns(buf)


def _peak_ratio(name):
    mine = common.median_peak_delta("bench_memory:kafkafmt_decode_call", name)
    theirs = common.median_peak_delta("bench_memory:aiokafka_columns_call", name)
    return round(theirs / mine, 2)


register_value("decode_peak_vs_aiokafka", "peak memory: aiokafka ÷ kafkafmt", PARAMS, _peak_ratio, "ratio",
               track="bench_memory.PeakMemory.track_ratio_peak_aiokafka_vs_kafkafmt")


class PeakMemory:
    params = PARAMS
    param_names = ["corpus"]
    timeout = 300

    def setup(self, name):
        require_kafkafmt()
        common.note_quick()
        self.buf, self.meta = corpus.load(name)

    def peakmem_kafkafmt_decode(self, name):
        kafkafmt_columns(self.buf)

    def peakmem_kafkafmt_to_arrow(self, name):
        _to_arrow(self.buf)

    def peakmem_kafkafmt_to_pandas(self, name):
        _to_pandas(self.buf)

    def peakmem_aiokafka_columns(self, name):
        aiokafka_columns(self.buf)

    def track_peak_bytes_kafkafmt_decode(self, name):
        return common.median_peak_delta("bench_memory:kafkafmt_decode_call", name)

    track_peak_bytes_kafkafmt_decode.unit = "bytes"

    def track_peak_bytes_kafkafmt_to_arrow(self, name):
        return common.median_peak_delta("bench_memory:kafkafmt_to_arrow_call", name)

    track_peak_bytes_kafkafmt_to_arrow.unit = "bytes"

    def track_peak_bytes_aiokafka_columns(self, name):
        return common.median_peak_delta("bench_memory:aiokafka_columns_call", name)

    track_peak_bytes_aiokafka_columns.unit = "bytes"

    def track_ratio_peak_aiokafka_vs_kafkafmt(self, name):
        return common.measure_registered("decode_peak_vs_aiokafka", name)

    track_ratio_peak_aiokafka_vs_kafkafmt.unit = "ratio"
