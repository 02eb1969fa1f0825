"""Kafka's internal topics as tables (issue 15): ``kafkafmt.internal.consumer_offsets`` on 1 M
offset-commit records (OffsetCommitKey + OffsetCommitValue v3, what Kafka 2.x-3.x brokers write;
every 10th value a flexible v4 one), against decoding the same keys and values in Python -- with
kafka-python's protocol structs (``kafka.protocol.old.types.Schema``) and with a plain ``struct``
reader -- into the same Arrow table.

The records are written once per process with kafkafmt's own encoder and decoded into a
``Records`` in setup: what is timed is the key/value decoding and the table, which is the part
this issue adds (reading the log itself is timed by bench_decode / bench_logdir).
Target: >= 2 M rows/s on one core (``track_consumer_offsets_rows_per_s``, in M rows/s).
"""

from __future__ import annotations

import io
import struct

import numpy as np

from . import common
from .common import require_kafkafmt

N_RECORDS = 1_000_000
_CACHE = {}


def _records(n=N_RECORDS):
    """Records of n offset-commit records of 40 groups x 8 topics x 12 partitions."""
    if n in _CACHE:
        return _CACHE[n]
    import kafkafmt
    from kafkafmt import internal as ki

    keys = [ki.encode_group_record(1, {"group": f"consumer-group-{g}", "topic": f"orders.events.v{t}",
                                        "partition": p})[0]
            for g in range(40) for t in range(8) for p in range(12)]
    v3 = struct.Struct(">hqih")
    v4 = struct.Struct(">hqi")
    values = []
    for i in range(n):
        if i % 10 == 9:    # flexible: compact metadata string, then an empty tagged-field section
            values.append(v4.pack(4, 1_000_000 + i, 7) + b"\x01" + struct.pack(">q", 1767225600000 + i) + b"\x00")
        else:
            values.append(v3.pack(3, 1_000_000 + i, 7, 0) + struct.pack(">q", 1767225600000 + i))
    keys = [keys[i % len(keys)] for i in range(n)]
    recs = kafkafmt.decode(kafkafmt.encode(keys=keys, values=values, timestamps=np.full(n, 1767225600000, np.int64),
                                           compression="lz4"))
    _CACHE[n] = (recs, keys, values)
    return _CACHE[n]


def kafkafmt_consumer_offsets(recs):
    from kafkafmt import internal as ki
    return ki.consumer_offsets(recs)


def _table(offsets, timestamps, groups, topics, partitions, committed, epochs, metadata, commit_ts):
    import pyarrow as pa
    ts = pa.timestamp("ms", tz="UTC")
    return pa.table({"offset": pa.array(offsets, pa.int64()), "timestamp": pa.array(timestamps, ts),
                     "group": pa.array(groups, pa.string()), "topic": pa.array(topics, pa.string()),
                     "partition": pa.array(partitions, pa.int32()), "committed_offset": pa.array(committed, pa.int64()),
                     "leader_epoch": pa.array(epochs, pa.int32()), "metadata": pa.array(metadata, pa.string()),
                     "commit_timestamp": pa.array(commit_ts, ts)})


def python_struct_reader(recs, keys, values):
    """The same columns with the struct module, one record at a time (v0-v4 offset commits)."""
    unpack_h, unpack_i, unpack_q = struct.Struct(">h").unpack_from, struct.Struct(">i").unpack_from, \
        struct.Struct(">q").unpack_from
    groups, topics, partitions, committed, epochs, metadata, commit_ts = [], [], [], [], [], [], []
    for k, v in zip(keys, values):
        n, = unpack_h(k, 2)
        groups.append(k[4:4 + n].decode())
        p = 4 + n
        m, = unpack_h(k, p)
        topics.append(k[p + 2:p + 2 + m].decode())
        partitions.append(unpack_i(k, p + 2 + m)[0])
        ver, = unpack_h(v, 0)
        committed.append(unpack_q(v, 2)[0])
        p = 10
        if ver >= 3:
            epochs.append(unpack_i(v, 10)[0])
            p = 14
        else:
            epochs.append(None)
        if ver >= 4:
            n = v[p] - 1
            p += 1
        else:
            n, = unpack_h(v, p)
            p += 2
        metadata.append(v[p:p + n].decode())
        commit_ts.append(unpack_q(v, p + n)[0])
    return _table(recs.offset, recs.timestamp, groups, topics, partitions, committed, epochs, metadata, commit_ts)


def _kafka_python_schemas():
    from kafka.protocol.old.types import Int16, Int32, Int64, Schema, String
    key = Schema(("type", Int16), ("group", String("utf-8")), ("topic", String("utf-8")), ("partition", Int32))
    v3 = Schema(("version", Int16), ("offset", Int64), ("leader_epoch", Int32), ("metadata", String("utf-8")),
                ("commit_timestamp", Int64))
    return key, v3


def kafka_python_structs(recs, keys, values, _schemas=[]):
    """The same columns with kafka-python's protocol structs (its Schema/String/Int types); kafka-python
    has no flexible (compact) types in that API, so the v4 values go through the struct reader."""
    if not _schemas:
        _schemas.extend(_kafka_python_schemas())
    key_schema, v3_schema = _schemas
    groups, topics, partitions, committed, epochs, metadata, commit_ts = [], [], [], [], [], [], []
    for k, v in zip(keys, values):
        _, g, t, p = key_schema.decode(io.BytesIO(k))
        groups.append(g)
        topics.append(t)
        partitions.append(p)
        if v[1] == 3:
            _, off, ep, meta, cts = v3_schema.decode(io.BytesIO(v))
        else:
            off, = struct.unpack_from(">q", v, 2)
            ep, = struct.unpack_from(">i", v, 10)
            n = v[14] - 1
            meta = v[15:15 + n].decode()
            cts, = struct.unpack_from(">q", v, 15 + n)
        committed.append(off)
        epochs.append(ep)
        metadata.append(meta)
        commit_ts.append(cts)
    return _table(recs.offset, recs.timestamp, groups, topics, partitions, committed, epochs, metadata, commit_ts)


def check_same(n=2000):
    """kafkafmt and both Python readers give the same values (run in setup, on the first n)."""
    recs, keys, values = _records()
    sub = recs.slice(0, n) if hasattr(recs, "slice") else recs[:n]
    ours = kafkafmt_consumer_offsets(sub)
    for theirs in (python_struct_reader(sub, keys[:n], values[:n]), kafka_python_structs(sub, keys[:n], values[:n])):
        for col in theirs.column_names:
            assert ours.column(col).to_pylist() == theirs.column(col).to_pylist(), col


class ConsumerOffsets:
    """Times: kafkafmt.internal.consumer_offsets, the struct reader, kafka-python's structs, on 1 M
    offset-commit records (Records decoded in setup)."""

    timeout = 600

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        self.recs, self.keys, self.values = _records()
        check_same()

    def time_kafkafmt(self):
        kafkafmt_consumer_offsets(self.recs)

    def time_python_struct(self):
        python_struct_reader(self.recs, self.keys, self.values)

    def time_kafka_python_structs(self):
        kafka_python_structs(self.recs, self.keys, self.values)


class ConsumerOffsetsRatios:
    """* ``track_consumer_offsets_rows_per_s``: M rows/s of consumer_offsets (target >= 2).
    * ``track_ratio_vs_python_struct`` / ``track_ratio_vs_kafka_python``: time(Python reader) /
      time(kafkafmt), interleaved in-process (common.ratio)."""

    timeout = 600

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        self.recs, self.keys, self.values = _records()

    def track_consumer_offsets_rows_per_s(self):
        t, = common.interleaved_medians([lambda: kafkafmt_consumer_offsets(self.recs)])
        return round(len(self.recs) / t / 1e6, 2)

    track_consumer_offsets_rows_per_s.unit = "M rows/s"

    def track_ratio_vs_python_struct(self):
        return common.ratio(lambda: python_struct_reader(self.recs, self.keys, self.values),
                            lambda: kafkafmt_consumer_offsets(self.recs))

    track_ratio_vs_python_struct.unit = "ratio"

    def track_ratio_vs_kafka_python(self):
        return common.ratio(lambda: kafka_python_structs(self.recs, self.keys, self.values),
                            lambda: kafkafmt_consumer_offsets(self.recs))

    track_ratio_vs_kafka_python.unit = "ratio"
