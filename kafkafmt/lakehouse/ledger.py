"""The offset ledger: which source offsets a table holds, per topic-partition, kept inside the table's
own commits so that it changes exactly when the data does.

Every commit of an export records

* ``kafkafmt.offsets`` -- the ledger after the commit: ``{"topic": {"partition": next offset}}``,
  every topic-partition the table has ever received (the next offset is the one after the last
  offset exported; a re-run starts there);
* ``kafkafmt.ranges`` -- the offsets this commit covers: ``{"topic": {"partition": [start, end]}}``
  (end exclusive);
* ``kafkafmt.last-batches`` -- what the source held where the ledger stops: per topic-partition the
  `kafkafmt.log._planner.BatchMark` of the last batch exported (``[base offset, last offset, leader epoch,
  CRC, records, topic id]``), checked against the source before the next run trusts the ledger;
* ``kafkafmt.schemas`` -- typed exports: per topic and side the reader schema the commit's rows were
  typed with, every reader the table's columns came from and the writer schema ids of the commit's
  values (`kafkafmt.lakehouse.typed`);
* ``kafkafmt.mode`` -- ``append`` or ``upsert`` (`kafkafmt.lakehouse.upsert`);
* ``kafkafmt.data-loss`` -- when the export went on (``fail_on_data_loss=False``) although offsets
  were gone from the source (retention deleted them before they were exported) or the source no
  longer is what was exported (it diverged): ``[{"topic", "partition", "start", "end", "kind",
  "reason"}]`` (and ``"resume"``, the offset the export went on from, for a divergence).

Iceberg keeps them in the snapshot summary; Delta in the commit info and, per topic-partition, as
a ``txn`` action (app id ``kafkafmt-<topic>-<partition>``, version the next offset -- as
kafka-delta-ingest does), which Delta keeps in the table state through checkpoints. Both follow
the table's state: an Iceberg rollback or a Delta RESTORE to before a run makes the next run export
that run's offsets again.

Data loss, as Spark's Kafka source defines it: a topic-partition whose ledger offset is below the
first offset its log still has (segments deleted by retention before this export read them); a new
partition of a topic the table already has that does not start at offset 0; a gap between a
partition's tiered uploads and its local segments. And a source that diverged from the table
(`kafkafmt.log._planner.find_divergence`): its log end went back below the ledger (a truncated log, a
restore from an older copy, an unclean leader election), the last batch exported is no longer there
as it was (other bytes at offsets the table holds), or the topic was re-created (a new topic id).
Going on from a divergence exports from where the source now is: the records at offsets the table
already holds arrive as new rows, and the commit records the divergence. A partition the table holds of
a re-created topic that the new topic does not have (created with fewer partitions) is gone
(`find_vanished`): going on records it, and the ledger starts it again at offset 0 (should the topic grow
that partition again).
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

import numpy as np

from kafkafmt.errors import DataLossError, KafkafmtError, KafkafmtWarning
from kafkafmt.log import BatchMark, find_divergence, topic_id_of
from kafkafmt.log import ReportKind

__all__ = ["OFFSETS_KEY", "RANGES_KEY", "LOSS_KEY", "BATCHES_KEY", "SCHEMAS_KEY", "MODE_KEY", "TABLE_PROPERTY_KEYS", "DataLossError", "CommitConflictError", "DataLoss",
           "offsets_json", "parse_offsets", "ranges_json", "marks_json", "parse_marks", "find_data_loss",
           "find_vanished", "report_data_loss", "app_id"]

OFFSETS_KEY = "kafkafmt.offsets"
RANGES_KEY = "kafkafmt.ranges"
LOSS_KEY = "kafkafmt.data-loss"
BATCHES_KEY = "kafkafmt.last-batches"
VERSION_KEY = "kafkafmt.version"
SCHEMAS_KEY = "kafkafmt.schemas"
MODE_KEY = "kafkafmt.mode"
#: the commit properties an Iceberg table also keeps as table properties (standing in for its ledger when the
#: snapshots carrying it were expired)
TABLE_PROPERTY_KEYS = (OFFSETS_KEY, BATCHES_KEY, SCHEMAS_KEY)


class CommitConflictError(KafkafmtError):
    """Another writer committed to the table since this run read its ledger: this run's commit was
    refused (nothing of it is in the table); run the export again."""


@dataclass(frozen=True)
class DataLoss:
    """Offsets of a topic-partition the table will not hold as the source had them: [``start``,
    ``end``) (``end`` None: unknown), what happened (``kind``: "retention", "new-partition", "gap",
    "diverged" or "vanished" -- a partition of a re-created topic that the new topic does not have)
    and why; for a divergence ``end`` is the table's ledger offset and ``resume`` the source's offset
    an export goes on from.

    Examples
    --------
    >>> from kafkafmt.lakehouse import DataLoss
    >>> DataLoss("orders", 0, 2544, 3000, "its log end went back from 3000 to 2544", "diverged", 2544).text()
    "orders-0: the table's ledger is at offset 3000 but the source diverged: its log end went back from 3000 to 2544; ..."
    """
    topic: str
    partition: int
    start: int            # first offset lost
    end: object           # the offset after the last one lost (None: unknown)
    reason: str
    kind: str = "retention"
    resume: object = None  # diverged: the source's offset the export goes on from

    def text(self):
        if self.kind == "diverged":
            return (f"{self.topic}-{self.partition}: the table's ledger is at offset {self.end} but the source "
                    f"diverged: {self.reason}; the table's offsets {self.start}..{self.end - 1} are not what the "
                    f"source holds now, which goes on from offset {self.resume}")
        if self.kind == "vanished":
            return f"{self.topic}-{self.partition}: the table holds its offsets up to {self.end - 1}, {self.reason}"
        span = f"offsets {self.start}..{self.end - 1}" if self.end is not None else f"offsets from {self.start}"
        return f"{self.topic}-{self.partition}: {span} {self.reason}"

    def as_json(self):
        out = {"topic": self.topic, "partition": self.partition, "start": self.start, "end": self.end,
               "kind": self.kind, "reason": self.reason}
        if self.resume is not None:
            out["resume"] = self.resume
        return out


def _nested(mapping, value=lambda v: v):
    out = {}
    for (topic, partition), v in sorted(mapping.items()):
        out.setdefault(topic, {})[str(partition)] = value(v)
    return out


def offsets_json(offsets):
    """{(topic, partition): next offset} as the ``kafkafmt.offsets`` text."""
    return json.dumps(_nested(offsets), separators=(",", ":"))


def ranges_json(ranges):
    """{(topic, partition): (start, end)} as the ``kafkafmt.ranges`` text."""
    return json.dumps(_nested(ranges, lambda r: [int(r[0]), int(r[1])]), separators=(",", ":"))


def parse_offsets(text):
    """The ``kafkafmt.offsets`` text -> {(topic, partition): next offset}."""
    data = json.loads(text)
    return {(topic, int(p)): int(n) for topic, parts in data.items() for p, n in parts.items()}


def marks_json(marks):
    """{(topic, partition): BatchMark} as the ``kafkafmt.last-batches`` text."""
    return json.dumps(_nested(marks, lambda m: m.as_list()), separators=(",", ":"))


def parse_marks(text):
    """The ``kafkafmt.last-batches`` text -> {(topic, partition): BatchMark} ({} for None)."""
    if not text:
        return {}
    data = json.loads(text)
    return {(topic, int(p)): BatchMark.from_list(v) for topic, parts in data.items() for p, v in parts.items()}


def app_id(topic, partition, prefix="kafkafmt"):
    """The Delta ``txn`` app id of a topic-partition."""
    return f"{prefix}-{topic}-{partition}"


def find_data_loss(partitions, ledger, report, marks=None, table_rows=None):
    """The DataLoss of each partition (`kafkafmt.log._discovery.Partition`s about to be exported) given
    the ledger ({(topic, partition): next offset}), the marks of the last batches exported
    ({(topic, partition): BatchMark}) and the report of finding them (gaps between tiered uploads
    and local segments). ``table_rows(tp, lo, hi)``: the table's rows of a topic-partition in an
    offset range (offset, timestamp, key, value), to find where a diverged source parts from the
    table (`first_difference`)."""
    known_topics = {t for t, _ in ledger}
    marks = marks or {}
    out = []
    for p in partitions:
        tp = (p.topic, p.partition)
        nxt = ledger.get(tp)
        segs = p.list_segments([])
        first = segs[0].base_offset if segs else None
        if first is None:
            continue
        gone = find_divergence(p, nxt, marks.get(tp), segs) if nxt is not None else None
        if gone is not None:
            resume = gone.offset
            if table_rows is not None and not gone.exact and gone.offset > p.earliest(segs):
                resume = first_difference(p, segs, resume, lambda lo, hi, tp=tp: table_rows(tp, lo, hi))
            reason = gone.reason if resume == gone.offset else \
                f"{gone.reason}; the source's records differ from the table's from offset {resume}"
            out.append(DataLoss(p.topic, p.partition, min(resume, nxt), nxt, reason, "diverged", resume))
        elif nxt is not None and first > nxt:
            out.append(DataLoss(p.topic, p.partition, nxt, first,
                                "were deleted from the source (retention) before they were exported"))
        elif nxt is None and p.topic in known_topics and first > 0:
            out.append(DataLoss(p.topic, p.partition, 0, first,
                                "are not in the source: a new partition of an exported topic starts at "
                                f"offset {first}, not 0", "new-partition"))
    by_url = {p.url: p for p in partitions}
    for e in report:
        if e.kind is not ReportKind.GAP:
            continue
        p = by_url.get(e.file)
        if p is None:
            continue
        nxt = ledger.get((p.topic, p.partition))
        if e.offset is not None and (nxt is None or e.offset >= nxt):
            out.append(DataLoss(p.topic, p.partition, int(e.offset), None, f"are missing: {e.message}", "gap"))
    return out


def find_vanished(partitions, ledger, marks, wanted=None, topic_ids=None):
    """The partitions the table holds of a topic that was deleted and created again, which the new topic does
    not have (fewer partitions): DataLoss of kind "vanished". A topic is re-created when one of its
    ``partitions`` (about to be exported) has another topic id than the last batch the table took of a
    partition of it (``marks``); a partition of it in the ``ledger`` with a mark of the old id, not among
    ``partitions`` and not left out on purpose (``wanted(partition)`` False), is gone with the old topic.
    ``topic_ids``: the partitions' topic ids by (topic, partition), when already read (`topic_id_of`)."""
    current = {}
    for p in partitions:
        tid = topic_id_of(p) if topic_ids is None else topic_ids[(p.topic, p.partition)]
        if tid is not None:
            current.setdefault(p.topic, tid)
    here = {(p.topic, p.partition) for p in partitions}
    out = []
    for (topic, partition), nxt in sorted(ledger.items()):
        mark = marks.get((topic, partition))
        now = current.get(topic)
        if (topic, partition) in here or mark is None or mark.topic_id is None or now is None or \
                now == mark.topic_id or (wanted is not None and not wanted(partition)):
            continue
        out.append(DataLoss(topic, partition, 0, nxt, f"but the topic was deleted and created again (topic id "
                                                      f"{mark.topic_id}, now {now}) without this partition",
                            "vanished"))
    return out


_FIRST_WINDOW = 1024             # offsets compared at first, looking back for where a source parted from the table
_MAX_WINDOW = 1 << 18


def first_difference(part, segments, upper, table_rows):
    """The offset from which a diverged source's records differ from the table's rows, looking back
    from ``upper`` (where the source was seen to differ, or its log end) window by window: the
    first offset above the newest one the source and the table both hold alike (key, value,
    timestamp; any of the table's rows at an offset -- a table that went on from an earlier
    divergence holds two) where they hold different records, ``upper`` when none differs above it;
    the source's first offset when nothing is alike. Offsets only one side holds (transaction
    markers, records a read_committed export left out, compacted ones) tell nothing.
    ``table_rows(lo, hi)``: a pyarrow Table with the table's offset, timestamp, key and value
    columns of offsets [lo, hi)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafkafmt.read import read_log_dir

    start = part.earliest(segments)
    hi, width, differs = upper, _FIRST_WINDOW, upper
    while hi > start:
        lo = max(start, hi - width)
        src = read_log_dir(part, start_offset=lo, end_offset=hi, columns=["offset", "timestamp", "key", "value"],
                           errors="salvage")
        rows = table_rows(lo, hi)
        if len(src) and rows.num_rows:
            offs = np.asarray(src.offset)
            t_off = rows.column("offset").to_numpy()
            at = np.searchsorted(offs, t_off)
            k = np.flatnonzero((at < len(offs)) & (offs[np.minimum(at, len(offs) - 1)] == t_off))
            if len(k):
                s_idx = at[k]
                ts = rows.column("timestamp").cast(pa.int64()).to_numpy()[k] // 1000
                same = np.asarray(src.timestamp)[s_idx] == ts
                for col in ("key", "value"):
                    a = getattr(src, col).to_arrow().take(pa.array(s_idx)).cast(pa.binary())
                    b = rows.column(col).take(pa.array(k)).cast(pa.binary())
                    eq = pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b)))
                    same &= np.asarray(eq.to_numpy(zero_copy_only=False), bool)
                common = t_off[k]
                alike = np.unique(common[same])
                different = np.setdiff1d(common[~same], alike)
                if len(alike):
                    above = different[different > alike[-1]]
                    return int(above[0]) if len(above) else differs
                if len(different):
                    differs = int(different[0])
        hi, width = lo, min(width * 4, _MAX_WINDOW)
    return start


def report_data_loss(losses, fail):
    """Raise DataLossError naming every loss (fail=True), or warn for each."""
    if not losses:
        return
    if fail:
        diverged = any(x.kind == "diverged" for x in losses)
        exc = DataLossError("data loss: " + "; ".join(x.text() for x in losses)
                            + ". Nothing was exported. If that is expected (e.g. retention deleted the offsets"
                            + (", the log was truncated or the topic re-created" if diverged else "")
                            + "), export with fail_on_data_loss=False (--fail-on-data-loss false); the losses are "
                              "then recorded in the commit"
                            + (" and the export goes on from where the source now is (records at offsets the "
                               "table already holds arrive as new rows)" if diverged else ""))
        exc.losses = list(losses)
        raise exc
    for x in losses:
        warnings.warn(f"data loss: {x.text()} (fail_on_data_loss=False: going on)", KafkafmtWarning, stacklevel=3)
