"""Task execution on Spark workers: decode a segment byte range into Arrow record batches with
exactly the Arrow schema Spark expects for the query's schema."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from kafkafmt import decoder
from kafkafmt.errors import KafkafmtError
from kafkafmt.logdir import _Mapped, _committed_mask, _decode_salvaging
from kafkafmt.records import CODEC_NAMES

_CODEC_DICT = [CODEC_NAMES.get(i, str(i)) for i in range(8)]


def _columns(recs, names, topic, partition):
    """Arrow arrays for the requested Spark columns of one decoded chunk."""
    n = len(recs)
    out = {}
    for name in names:
        if name == "key":
            out[name] = recs.key.to_arrow(pa.binary()) if recs.key.offsets.dtype == np.int32 else \
                recs.key.to_arrow().cast(pa.binary())
        elif name == "value":
            out[name] = recs.value.to_arrow(pa.binary()) if recs.value.offsets.dtype == np.int32 else \
                recs.value.to_arrow().cast(pa.binary())
        elif name == "topic":
            out[name] = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                                       pa.array([topic], pa.string())).cast(pa.string())
        elif name == "partition":
            out[name] = pa.array(np.full(n, partition, np.int32))
        elif name == "offset":
            out[name] = pa.array(recs.offset)
        elif name == "timestamp":
            out[name] = pa.array(recs.timestamp * 1000, pa.int64()).view(pa.timestamp("us", tz="UTC"))
        elif name == "timestampType":
            out[name] = pa.array(recs.timestamp_type.astype(np.int32))
        elif name == "headers":
            out[name] = recs.headers.to_arrow()
        elif name == "producerId":
            out[name] = pa.array(recs.batch_column("producer_id"))
        elif name == "producerEpoch":
            out[name] = pa.array(recs.batch_column("producer_epoch"))
        elif name == "baseSequence":
            out[name] = pa.array(recs.batch_column("base_sequence"))
        elif name == "leaderEpoch":
            out[name] = pa.array(recs.batch_column("partition_leader_epoch"))
        elif name == "codec":
            out[name] = pa.DictionaryArray.from_arrays(pa.array(recs.batch_column("codec").astype(np.int32)),
                                                       pa.array(_CODEC_DICT)).cast(pa.string())
        else:
            raise ValueError(f"kafka-segments has no column {name!r}")
    return out


def read_tasks(tasks, schema, opts):
    """Yield pyarrow.RecordBatch objects for the tasks of one input partition."""
    target = to_arrow_schema(schema, timezone="UTC")
    names = [f.name for f in schema.fields]
    want = set(names)
    decode_kw = dict(keys="key" in want, values="value" in want, headers="headers" in want,
                     verify_crc=True, include_control=False)
    salvage = not opts.fail_on_data_loss
    for t in tasks:
        m = _Mapped(t.log)
        try:
            pos = t.start_pos
            while pos < t.stop_pos:
                # whole batches up to about max_bytes_per_batch of input per Arrow batch
                table = decoder._scan.scan(m.buf[:t.stop_pos], decoder._scan.CRC_SKIP_, pos)
                ends = table["position"][:table["count"]] + table["size"][:table["count"]]
                j = int(np.searchsorted(ends, pos + opts.max_bytes_per_batch, side="right")) - 1
                stop = int(ends[max(j, 0)]) if len(ends) and j < len(ends) - 1 else t.stop_pos
                if salvage:
                    recs = _decode_salvaging(m, t.log, pos, stop, [], **decode_kw)
                else:
                    try:
                        recs = decoder.decode(m.buf, start=pos, stop=stop, file=t.log, **decode_kw)
                    except KafkafmtError as exc:
                        raise KafkafmtError(f"{exc} -- set failOnDataLoss=false to skip corrupt batches "
                                            "and keep reading") from exc
                pos = stop if recs.tail is None else t.stop_pos
                lo = 0 if t.start_offset is None else int(np.searchsorted(recs.offset, t.start_offset, "left"))
                hi = len(recs) if t.end_offset is None else int(np.searchsorted(recs.offset, t.end_offset, "left"))
                recs = recs[lo:hi]
                if t.aborted is not None or t.lso is not None:
                    recs = recs.filter(_committed_mask(recs, t.aborted or {}, t.lso))
                if not len(recs):
                    continue
                cols = _columns(recs, names, t.topic, t.partition)
                batch = pa.RecordBatch.from_arrays([cols[n] for n in names], names=names)
                if batch.schema != target:
                    batch = batch.cast(target)
                yield batch
        finally:
            m.close()
