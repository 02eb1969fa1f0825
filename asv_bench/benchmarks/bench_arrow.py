"""Decoding all the way to a pyarrow Table / pandas DataFrame.

kafkafmt: ``decode(buf).to_arrow()`` (zero-copy for the binary columns and timestamps) and
``decode(buf).to_pandas()`` (= ``to_arrow().to_pandas()``).  The peers' equivalent, built the
usual way from the lists their record iteration gives (``common.aiokafka_frame_columns``):
``pd.DataFrame`` with object columns of bytes, int64 offsets, tz-aware millisecond timestamps
(``pd.to_datetime(..., unit="ms", utc=True)``), an int32 timestamp type and the peer's header
lists; ``pa.table`` with pyarrow's converters and kafkafmt's schema (binary key/value,
timestamp[ms, UTC], list<struct<key: string, value: binary>> headers, null where none).

Parametrized by a subset of the corpora (decoding differences are covered by bench_decode;
here the conversion cost is what matters).
"""

from __future__ import annotations

import numpy as np

from . import common, corpus
from .common import (_CorpusBench, aiokafka_frame_columns, arrow_from_columns, frame_from_columns,
                     kafka_python_frame_columns, register_ratio, require_kafkafmt, verify_kafkafmt)

PARAMS = ["none", "zstd", "zstd-small", "v1-gzip"]


def kafkafmt_to_arrow(buf):
    return common.kafkafmt.decode(buf).to_arrow()


def kafkafmt_to_pandas(buf):
    return common.kafkafmt.decode(buf).to_pandas()


def aiokafka_to_arrow(buf):
    return arrow_from_columns(aiokafka_frame_columns(buf))


def aiokafka_to_pandas(buf):
    return frame_from_columns(aiokafka_frame_columns(buf))


def kafka_python_to_pandas(buf):
    return frame_from_columns(kafka_python_frame_columns(buf))


def _pair(peer, mine):
    def make(name):
        common.peer_available("aiokafka" if peer is not kafka_python_to_pandas else "kafka-python", name)
        buf, _ = corpus.load(name)
        return (lambda: peer(buf)), (lambda: mine(buf))
    return make


register_ratio("arrow_vs_aiokafka", "to_arrow × aiokafka", PARAMS, _pair(aiokafka_to_arrow, kafkafmt_to_arrow),
               track="bench_arrow.ArrowRatios.track_ratio_arrow_vs_aiokafka")
register_ratio("pandas_vs_aiokafka", "to_pandas × aiokafka", PARAMS,
               _pair(aiokafka_to_pandas, kafkafmt_to_pandas),
               track="bench_arrow.ArrowRatios.track_ratio_pandas_vs_aiokafka")
register_ratio("pandas_vs_kafka_python", "to_pandas × kafka-python", PARAMS,
               _pair(kafka_python_to_pandas, kafkafmt_to_pandas),
               track="bench_arrow.ArrowRatios.track_ratio_pandas_vs_kafka_python")

def check_same_frames(name):
    common.verified_once("frames", name, lambda: _check_same_frames(name))


def _check_same_frames(name):
    """aiokafka's Table equals kafkafmt's to_arrow() (schema and values); its DataFrame has the same
    columns and dtypes (headers stay the peer's lists of tuples) (once per process)."""
    buf, _ = corpus.load(name)
    mine_t, mine_df = kafkafmt_to_arrow(buf), kafkafmt_to_pandas(buf)
    peer_t, peer_df = aiokafka_to_arrow(buf), aiokafka_to_pandas(buf)
    assert peer_t.equals(mine_t), "the peer's Table differs from kafkafmt's"
    assert list(peer_df.columns) == list(mine_df.columns), (list(peer_df.columns), list(mine_df.columns))
    assert dict(peer_df.dtypes.astype(str)) == dict(mine_df.dtypes.astype(str)), (peer_df.dtypes, mine_df.dtypes)
    np.testing.assert_array_equal(peer_df["offset"].to_numpy(), mine_df["offset"].to_numpy())
    np.testing.assert_array_equal(peer_df["timestamp"].to_numpy(), mine_df["timestamp"].to_numpy())


class ToArrowPandas(_CorpusBench):
    """Times of each contender from the concatenated batches to a Table / DataFrame."""

    params = PARAMS

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)
        verify_kafkafmt(name)
        check_same_frames(name)

    def time_kafkafmt_to_arrow(self, name):
        kafkafmt_to_arrow(self.buf)

    def time_kafkafmt_to_pandas(self, name):
        kafkafmt_to_pandas(self.buf)

    def time_aiokafka_to_arrow(self, name):
        aiokafka_to_arrow(self.buf)

    def time_aiokafka_to_pandas(self, name):
        aiokafka_to_pandas(self.buf)

    def time_kafka_python_to_pandas(self, name):
        kafka_python_to_pandas(self.buf)


class ArrowRatios(_CorpusBench):
    """time(peer to Table/DataFrame) / time(kafkafmt to_arrow()/to_pandas()), in-process medians."""

    params = PARAMS
    unit = "ratio"

    def setup(self, name):
        require_kafkafmt()
        super().setup(name)
        verify_kafkafmt(name)
        check_same_frames(name)

    def track_ratio_arrow_vs_aiokafka(self, name):
        return common.measure_registered("arrow_vs_aiokafka", name)

    def track_ratio_pandas_vs_aiokafka(self, name):
        return common.measure_registered("pandas_vs_aiokafka", name)

    def track_ratio_pandas_vs_kafka_python(self, name):
        return common.measure_registered("pandas_vs_kafka_python", name)
