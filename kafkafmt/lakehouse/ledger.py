"""The offset ledger: which source offsets a table holds, per topic-partition, kept inside the table's
own commits so that it changes exactly when the data does.

Every commit of an export records

* ``kafkafmt.offsets`` -- the ledger after the commit: ``{"topic": {"partition": next offset}}``,
  every topic-partition the table has ever received (the next offset is the one after the last
  offset exported; a re-run starts there);
* ``kafkafmt.log._ranges`` -- the offsets this commit covers: ``{"topic": {"partition": [start, end]}}``
  (end exclusive);
* ``kafkafmt.data-loss`` -- when offsets were gone from the source (retention deleted them before
  they were exported) and the export went on anyway: ``[{"topic", "partition", "start", "end",
  "reason"}]``.

Iceberg keeps them in the snapshot summary; Delta in the commit info and, per topic-partition, as
a ``txn`` action (app id ``kafkafmt-<topic>-<partition>``, version the next offset -- as
kafka-delta-ingest does), which Delta keeps in the table state through checkpoints. Both follow
the table's state: an Iceberg rollback or a Delta RESTORE to before a run makes the next run export
that run's offsets again.

Data loss, as Spark's Kafka source defines it: a topic-partition whose ledger offset is below the
first offset its log still has (segments deleted by retention before this export read them); a new
partition of a topic the table already has that does not start at offset 0; a gap between a
partition's tiered uploads and its local segments.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

from kafkafmt.errors import DataLossError, KafkafmtError, KafkafmtWarning
from kafkafmt.log import ReportKind

__all__ = ["OFFSETS_KEY", "RANGES_KEY", "LOSS_KEY", "DataLossError", "CommitConflictError", "DataLoss", "offsets_json", "parse_offsets",
           "ranges_json", "find_data_loss", "report_data_loss", "app_id"]

OFFSETS_KEY = "kafkafmt.offsets"
RANGES_KEY = "kafkafmt.ranges"
LOSS_KEY = "kafkafmt.data-loss"
VERSION_KEY = "kafkafmt.version"


class CommitConflictError(KafkafmtError):
    """Another writer committed to the table since this run read its ledger: this run's commit was
    refused (nothing of it is in the table); run the export again."""


@dataclass(frozen=True)
class DataLoss:
    topic: str
    partition: int
    start: int            # first offset lost
    end: object           # the offset after the last one lost (None: unknown)
    reason: str

    def text(self):
        span = f"offsets {self.start}..{self.end - 1}" if self.end is not None else f"offsets from {self.start}"
        return f"{self.topic}-{self.partition}: {span} {self.reason}"

    def as_json(self):
        return {"topic": self.topic, "partition": self.partition, "start": self.start, "end": self.end,
                "reason": self.reason}


def _nested(mapping, value=lambda v: v):
    out = {}
    for (topic, partition), v in sorted(mapping.items()):
        out.setdefault(topic, {})[str(partition)] = value(v)
    return out


def offsets_json(offsets):
    """{(topic, partition): next offset} as the ``kafkafmt.offsets`` text."""
    return json.dumps(_nested(offsets), separators=(",", ":"))


def ranges_json(ranges):
    """{(topic, partition): (start, end)} as the ``kafkafmt.log._ranges`` text."""
    return json.dumps(_nested(ranges, lambda r: [int(r[0]), int(r[1])]), separators=(",", ":"))


def parse_offsets(text):
    """The ``kafkafmt.offsets`` text -> {(topic, partition): next offset}."""
    data = json.loads(text)
    return {(topic, int(p)): int(n) for topic, parts in data.items() for p, n in parts.items()}


def app_id(topic, partition, prefix="kafkafmt"):
    """The Delta ``txn`` app id of a topic-partition."""
    return f"{prefix}-{topic}-{partition}"


def find_data_loss(partitions, ledger, report):
    """The DataLoss of each partition (`kafkafmt.log._discovery.Partition`s about to be exported) given
    the ledger ({(topic, partition): next offset}) and the report of finding them (gaps between
    tiered uploads and local segments)."""
    known_topics = {t for t, _ in ledger}
    out = []
    for p in partitions:
        tp = (p.topic, p.partition)
        nxt = ledger.get(tp)
        segs = p.list_segments([])
        first = segs[0].base_offset if segs else None
        if first is None:
            continue
        if nxt is not None and first > nxt:
            out.append(DataLoss(p.topic, p.partition, nxt, first,
                                "were deleted from the source (retention) before they were exported"))
        elif nxt is None and p.topic in known_topics and first > 0:
            out.append(DataLoss(p.topic, p.partition, 0, first,
                                "are not in the source: a new partition of an exported topic starts at "
                                f"offset {first}, not 0"))
    by_url = {p.url: p for p in partitions}
    for e in report:
        if e.kind is not ReportKind.GAP:
            continue
        p = by_url.get(e.file)
        if p is None:
            continue
        nxt = ledger.get((p.topic, p.partition))
        if e.offset is not None and (nxt is None or e.offset >= nxt):
            out.append(DataLoss(p.topic, p.partition, int(e.offset), None, f"are missing: {e.message}"))
    return out


def report_data_loss(losses, fail):
    """Raise DataLossError naming every loss (fail=True), or warn for each."""
    if not losses:
        return
    if fail:
        raise DataLossError("data loss: " + "; ".join(x.text() for x in losses)
                            + ". Nothing was exported. If that is expected (e.g. retention deleted the offsets), "
                              "export with fail_on_data_loss=False (--fail-on-data-loss false); the losses are then "
                              "recorded in the commit")
    for x in losses:
        warnings.warn(f"data loss: {x.text()} (fail_on_data_loss=False: going on)", KafkafmtWarning, stacklevel=3)
