"""Task execution on Spark workers: decode a segment byte range into Arrow record batches with
exactly the Arrow schema Spark expects for the query's schema."""
from __future__ import annotations

import numpy as np
from pyspark.sql.pandas.types import to_arrow_schema

from kafkafmt import decoder
from kafkafmt.errors import KafkafmtError
from kafkafmt.logdir import _Mapped, _committed_mask, _decode_salvaging

METADATA = ("producerId", "producerEpoch", "baseSequence", "leaderEpoch", "codec")


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
                recs.topic_names, recs.topic_index, recs.partition = [t.topic], None, t.partition
                table = recs.to_arrow(headers="headers" in want,
                                      batch_metadata=any(n in want for n in METADATA)).select(names)
                for batch in table.cast(target).to_batches():
                    yield batch
        finally:
            m.close()
