"""The tiered audit: what the brokers say they uploaded (``__remote_log_metadata``, KIP-405's topic-based
RemoteLogMetadataManager) held against what the remote storage holds (its uploads, any layout of
`kafkafmt.log.tiered`), per user partition.

Each remote segment's current state is rebuilt from the events (`kafkafmt.internal.remote_log_segments`);
a user partition is audited when the ``__remote_log_metadata`` partition its events go to (Kafka's
partitioner, `kafkafmt.internal.metadata_partition`) is among the partitions read -- a broker's log dir
usually holds only some of them. Found, each naming topic, partition, offsets and segment id (`FINDINGS`):

* ``missing_upload`` -- a segment the metadata says is ``COPY_SEGMENT_FINISHED`` (and not deleted, nor its
  partition) with no upload: offsets consumers cannot fetch;
* ``orphan_upload`` -- an upload the metadata does not name, or names as deleted (``DELETE_SEGMENT_FINISHED``,
  or its partition's delete finished): storage paid for, never read;
* ``wrong_size`` -- an upload whose ``.log`` (the broker's segment, as uploaded) differs in size from the
  metadata's ``SegmentSizeInBytes``;
* ``stale_copy`` -- a copy started (``COPY_SEGMENT_STARTED``) and never finished, older than
  ``stale_copy_ms`` as of the metadata's last event (a broker stopped mid-copy: its upload, if any, is
  never read and never deleted by retention);
* ``offset_gap`` -- offsets between the end of the last remote segment and the local log's start (its
  first local segment) that neither holds.

`audit_tiered` returns a `TieredAudit`: the findings (`TieredFinding`, each a `kafkafmt.report.Problem` that
``verify`` says and counts), the segments and bytes per topic, and notes on what was not audited.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from kafkafmt.internal import (DEFAULT_METADATA_PARTITIONS, REMOTE_LOG_METADATA, metadata_partition,
                               remote_log_metadata, remote_log_segments)
from kafkafmt.log import discover
from kafkafmt.log.tiered import kafka_segment_file_name
from kafkafmt.read import read_log_dir
from kafkafmt.report.problems import Problem

__all__ = ["FINDINGS", "DEFAULT_STALE_COPY_MS", "TieredFinding", "TieredAudit", "audit_tiered"]

#: what the audit reports, in the order it reports them per partition
FINDINGS = ("missing_upload", "orphan_upload", "wrong_size", "stale_copy", "offset_gap")
#: the key of each finding's count in the rows per topic
_COUNTS = {"missing_upload": "missingUploads", "orphan_upload": "orphanUploads", "wrong_size": "wrongSizes",
           "stale_copy": "staleCopies", "offset_gap": "offsetGaps"}
#: a copy started longer ago than this (as of the metadata's last event) and never finished is stale: an
#: hour, where the brokers' copy task runs every 30 s (remote.log.manager.task.interval.ms) and a segment
#: uploads in minutes
DEFAULT_STALE_COPY_MS = 3_600_000
#: the most partitions of __remote_log_metadata tried when the events do not fit the default count
_MAX_METADATA_PARTITIONS = 1024


@dataclass
class TieredFinding(Problem):
    """One finding of the audit: a `Problem` (``verify`` says it; an error) with its facts as data.

    ``check`` is one of `FINDINGS`; ``expected_bytes`` the metadata's ``SegmentSizeInBytes``,
    ``actual_bytes`` the upload's ``.log`` size (where they apply)."""
    check: str = None
    topic: str = None
    partition: int = None
    topic_id: str = None
    segment_id: str = None
    start_offset: int = None
    end_offset: int = None
    expected_bytes: int = None
    actual_bytes: int = None

    def to_json(self):
        """The problem's JSON object (``verify --json``) with the finding's facts."""
        return {**super().to_json(), "check": self.check, "topic": self.topic, "partition": self.partition,
                "topicId": self.topic_id, "segmentId": self.segment_id, "startOffset": self.start_offset,
                "endOffset": self.end_offset, "expectedBytes": self.expected_bytes, "actualBytes": self.actual_bytes}

    def row(self):
        """The finding as a row of ``report``'s ``tiered`` table."""
        out = self.to_json()
        for k in ("type", "position", "end", "offset"):
            out.pop(k)
        return out


@dataclass
class TieredAudit:
    """What `audit_tiered` found: ``findings`` (`TieredFinding`, in topic, partition, offset order),
    ``segments`` (the current state of every remote segment: `kafkafmt.internal.remote_log_segments`),
    ``topics`` (per topic: the metadata's segments and bytes, the uploads' count and bytes, the findings by
    kind), ``metadata_partitions`` (the partition count of __remote_log_metadata the audit hashed with,
    None when the events fit none), ``as_of`` (the metadata's last event time, ms), ``notes``."""
    findings: list = field(default_factory=list)
    segments: object = None
    topics: list = field(default_factory=list)
    metadata_partitions: int = None
    as_of: int = None
    notes: list = field(default_factory=list)

    @property
    def problems(self):
        """The findings (they are `Problem`s)."""
        return list(self.findings)

    def to_json(self):
        """The audit as one JSON-ready dict."""
        return {"findings": [f.row() for f in self.findings], "topics": self.topics,
                "metadataPartitions": self.metadata_partitions, "asOf": self.as_of, "notes": self.notes}


def _time_text(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _events(found):
    """The events of every __remote_log_metadata partition found, as one table (None when none is)."""
    import pyarrow as pa

    tables = []
    for part in found.partitions:
        if part.topic == REMOTE_LOG_METADATA:
            recs = read_log_dir(part, errors="salvage")
            if len(recs):
                tables.append(remote_log_metadata(recs))
    held = sorted({p.partition for p in found.partitions if p.topic == REMOTE_LOG_METADATA})
    return (pa.concat_tables(tables) if tables else None), held


def _partition_count(pairs, given):
    """The partition count of __remote_log_metadata that every ((topic id, partition), metadata partition)
    pair fits: ``given``, else Kafka's default, else the smallest that fits; None when none does."""
    if given is not None:
        return given
    if not pairs:
        return DEFAULT_METADATA_PARTITIONS
    low = max(src for _, src in pairs) + 1
    for n in [DEFAULT_METADATA_PARTITIONS] + list(range(low, _MAX_METADATA_PARTITIONS + 1)):
        if n >= low and all(metadata_partition(tid, p, n) == src for (tid, p), src in pairs):
            return n
    return None


def _upload_url(rp, seg):
    return rp.storage.url(seg.log) if rp.storage is not None else seg.log


def _expected_url(rps, row, metadata_url):
    """Where the missing upload of a segment would be: its partition's folder (Kafka's layout), else the
    __remote_log_metadata partition that names it."""
    for rp in rps:
        if rp.layout.name == "kafka" and rp.storage is not None:
            name = kafka_segment_file_name(row["start_offset"] or 0, row["segment_id"], "log")
            return rp.storage.url(rp.storage.join(rp.path, name))
    return metadata_url


def audit_tiered(roots, *, stale_copy_ms=DEFAULT_STALE_COPY_MS, metadata_partitions=None, now=None,
                 storage_options=None, tiered_keys=None):
    """Hold the segments ``__remote_log_metadata`` says were uploaded against the uploads the remote
    storage holds, per user partition (see the module's docstring for what is found).

    Parameters
    ----------
    roots : str, path-like, list of them, or a discovery's ``Found``
        The log dir(s) holding ``__remote_log_metadata`` partitions and the remote storage's root (a path or
        URL: LocalTieredStorage's folder, a bucket's prefix), as every reader takes them.
    stale_copy_ms : int
        A copy started longer ago than this and never finished is reported (``stale_copy``).
    metadata_partitions : int, optional
        ``__remote_log_metadata``'s partition count (``remote.log.metadata.topic.num.partitions``); by
        default Kafka's (50) when the events fit it, else the smallest count they fit.
    now : int, optional
        What "ago" is measured from (ms since the epoch); by default the metadata's last event.
    storage_options : dict, optional
        fsspec options for URLs.
    tiered_keys : dict, optional
        ``{key id: RSA private key}`` of encrypted Aiven uploads (only listed here, not read).

    Returns
    -------
    TieredAudit

    Examples
    --------
    A log dir whose ``__remote_log_metadata`` says one segment of ``orders-3`` was uploaded, beside a
    LocalTieredStorage folder that holds no upload of it:

    >>> import os
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.report import audit_tiered
    >>> topic_id, segment_id = bytes(range(16)), bytes(range(16, 32))
    >>> seg = {"TopicIdPartition": {"Name": "orders", "Id": topic_id, "Partition": 3}, "Id": segment_id}
    >>> started = internal.encode_remote_log_metadata_record(0, {
    ...     "RemoteLogSegmentId": seg, "StartOffset": 0, "EndOffset": 999, "BrokerId": 1, "EventTimestampMs": 5,
    ...     "SegmentLeaderEpochs": [{"LeaderEpoch": 0, "Offset": 0}], "SegmentSizeInBytes": 1048576})
    >>> finished = internal.encode_remote_log_metadata_record(1, {
    ...     "RemoteLogSegmentId": seg, "BrokerId": 1, "EventTimestampMs": 9, "RemoteLogSegmentState": 1})
    >>> folder = f"logs/__remote_log_metadata-{internal.metadata_partition(topic_id, 3)}"
    >>> _ = kafkafmt.write_log_dir(folder, keys=[None, None], values=[started, finished])
    >>> os.makedirs("remote/kafka-tiered-storage/orders-3-AAECAwQFBgcICQoLDA0ODw")
    >>> audit = audit_tiered(["logs", "remote"])
    >>> [(f.check, f.topic, f.partition, f.segment_id, f.start_offset, f.end_offset) for f in audit.findings]
    [('missing_upload', 'orders', 3, 'EBESExQVFhcYGRobHB0eHw', 0, 999)]
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    found = roots if hasattr(roots, "uploads") else discover(roots, storage_options=storage_options,
                                                             tiered_keys=tiered_keys)
    out = TieredAudit()
    events, held = _events(found)
    if events is None:
        if found.uploads:
            out.notes.append(f"no {REMOTE_LOG_METADATA} partition among the paths: the uploads were not audited")
        return out
    segs = remote_log_segments(events)
    out.segments = segs
    last = pc.max(events.column("event_timestamp").cast(pa.int64())).as_py()
    out.as_of = None if last is None else int(last)
    now = out.as_of if now is None else int(now)
    # the partition count: every user partition's events must lie where Kafka's partitioner puts them
    ev = events.select(["topic_id", "partition", "source_partition"]).drop_null() \
        .group_by(["topic_id", "partition", "source_partition"]).aggregate([])
    pairs = set(zip(zip(ev.column("topic_id").to_pylist(), ev.column("partition").to_pylist()),
                    ev.column("source_partition").to_pylist()))
    n = _partition_count(pairs, metadata_partitions)
    out.metadata_partitions = n
    with_events = {k for k, _ in pairs}
    if n is None:
        out.notes.append(f"the events of {REMOTE_LOG_METADATA} fit no partition count up to "
                         f"{_MAX_METADATA_PARTITIONS}: only the user partitions that have events were audited")

    def covered(tid, p):
        return (tid, p) in with_events if n is None else metadata_partition(tid, p, n) in held

    metadata_url = {p.partition: p.url for p in found.partitions if p.topic == REMOTE_LOG_METADATA}
    ups, rps_of, skipped = _uploads(found.uploads, covered)
    if skipped:
        out.notes.append(f"{skipped} uploads of partitions whose {REMOTE_LOG_METADATA} partition is not among "
                         f"the paths were not audited")
    # each segment's state against the uploads of its id: joins, then Python over the findings only
    keys = ["topic_id", "partition", "segment_id"]
    cols = ["topic", "topic_id", "partition", "segment_id", "start_offset", "end_offset", "state", "broker_id",
            "event_timestamp", "copy_started", "segment_size_in_bytes", "partition_delete_state", "source_partition"]
    segs = segs.select(cols)
    for name in ("event_timestamp", "copy_started"):
        segs = segs.set_column(cols.index(name), name, segs.column(name).cast(pa.int64()))
    kept = pc.is_null(segs.column("partition_delete_state"))
    live = segs.filter(pc.and_(kept, pc.equal(segs.column("state"), "COPY_SEGMENT_FINISHED")))
    joined = live.join(ups.select(keys + ["log_bytes", "url"]), keys=keys, join_type="left outer")
    findings = []

    def finding(check, file, message, r, **kw):
        findings.append(TieredFinding(
            "error", file, message, offset=r["start_offset"], check=check, topic=r["topic"], partition=r["partition"],
            topic_id=r["topic_id"], segment_id=r["segment_id"], start_offset=r["start_offset"],
            end_offset=r["end_offset"], **kw))

    def where(r):
        return f"{r['topic']}-{r['partition']} segment {r['segment_id']}" + (
            f" (offsets {r['start_offset']}..{r['end_offset']})" if r["start_offset"] is not None else "")

    for r in _rows(joined.filter(pc.is_null(joined.column("url")))):
        size = r["segment_size_in_bytes"]
        finding("missing_upload", _expected_url(rps_of.get((r["topic_id"], r["partition"]), []), r,
                                                metadata_url.get(r["source_partition"], REMOTE_LOG_METADATA)),
                f"{where(r)}: COPY_SEGMENT_FINISHED in {REMOTE_LOG_METADATA} ({'' if size is None else f'{size} bytes, '}"
                f"finished at {_time_text(r['event_timestamp'])}), but not in the remote storage", r,
                expected_bytes=size)
    wrong = pc.and_(pc.is_valid(joined.column("url")),
                    pc.not_equal(joined.column("log_bytes"), joined.column("segment_size_in_bytes").cast(pa.int64())))
    for r in _rows(joined.filter(wrong.fill_null(False))):
        size = r["segment_size_in_bytes"]
        finding("wrong_size", r["url"], f"{where(r)}: the upload's .log holds {r['log_bytes']} bytes, "
                f"{REMOTE_LOG_METADATA} says {size} (SegmentSizeInBytes)", r, expected_bytes=size,
                actual_bytes=r["log_bytes"])
    if now is not None:
        started = segs.filter(pc.and_(kept, pc.equal(segs.column("state"), "COPY_SEGMENT_STARTED")))
        started = started.filter(pc.less(started.column("copy_started"), now - stale_copy_ms).fill_null(False))
        started = started.join(ups.select(keys + ["url"]), keys=keys, join_type="left outer")
        for r in _rows(started):
            there = f"; its upload is there ({r['url']}), never read" if r["url"] is not None else ""
            finding("stale_copy", r["url"] or metadata_url.get(r["source_partition"], REMOTE_LOG_METADATA),
                    f"{where(r)}: copy started at {_time_text(r['copy_started'])} by broker {r['broker_id']} and "
                    f"never finished ({(now - r['copy_started']) / 3_600_000:.1f} h before {_time_text(now)}){there}",
                    r)
    named = ups.join(segs.select(keys + ["end_offset", "state", "event_timestamp", "partition_delete_state"]),
                     keys=keys, join_type="left outer")
    orphan = pc.or_kleene(pc.or_kleene(pc.is_null(named.column("state")),
                                       pc.equal(named.column("state"), "DELETE_SEGMENT_FINISHED")),
                          pc.equal(named.column("partition_delete_state"), "DELETE_PARTITION_FINISHED"))
    for r in _rows(named.filter(orphan.fill_null(False))):
        if r["state"] is None:
            why = f"not named by {REMOTE_LOG_METADATA}"
        elif r["partition_delete_state"] == "DELETE_PARTITION_FINISHED":
            why = f"its partition's delete finished ({REMOTE_LOG_METADATA})"
        else:
            why = f"deleted at {_time_text(r['event_timestamp'])} ({REMOTE_LOG_METADATA}: DELETE_SEGMENT_FINISHED)"
        finding("orphan_upload", r["url"], f"{r['topic']}-{r['partition']} segment {r['segment_id']} (base offset "
                f"{r['base_offset']}): an upload of {r['bytes']} bytes {why}: never read",
                dict(r, start_offset=r["base_offset"]), actual_bytes=r["log_bytes"])
    # offsets between the last remote segment and the local log's start
    local_start = {}
    for part in found.partitions:
        if part.topic != REMOTE_LOG_METADATA:
            local = [s.base_offset for s in part.list_segments() if s.remote is None]
            if local:
                key = (part.topic, part.partition)
                local_start[key] = (min(local_start.get(key, (local[0],))[0], min(local)), part.url)
    ends = live.group_by(["topic", "partition"]).aggregate([("end_offset", "max")])
    for topic, p, end in zip(*(ends.column(c).to_pylist() for c in ("topic", "partition", "end_offset_max"))):
        first, url = local_start.get((topic, p), (None, None))
        if end is not None and first is not None and end + 1 < first:
            finding("offset_gap", url, f"{topic}-{p}: offsets {end + 1}..{first - 1} are in neither the remote "
                    f"segments {REMOTE_LOG_METADATA} names (they end at {end}) nor the local log (from {first})",
                    {"topic": topic, "partition": p, "topic_id": None, "segment_id": None, "start_offset": end + 1,
                     "end_offset": first - 1})
    findings.sort(key=lambda f: (f.topic or "", f.partition or 0, f.start_offset if f.start_offset is not None else -1,
                                 FINDINGS.index(f.check)))
    out.findings = findings
    out.topics = _topic_rows(live, ups, findings)
    return out


def _uploads(remote_partitions, covered):
    """The uploads of the partitions ``covered(topic id, partition)`` says are audited, as a table (``topic,
    topic_id, partition, segment_id, base_offset, log_bytes``: the ``.log`` as the broker wrote it, ``bytes``:
    every object, ``url``), the remote partitions by (topic id, partition), and how many uploads were left
    out."""
    import pyarrow as pa

    cols = {c: [] for c in ("topic", "topic_id", "partition", "segment_id", "base_offset", "log_bytes", "bytes", "url")}
    rps_of, skipped = {}, 0
    for rp in remote_partitions:
        segments = list(rp.segments) + list(rp.superseded)
        if not covered(rp.topic_id, rp.partition):
            skipped += len(segments)
            continue
        rps_of.setdefault((rp.topic_id, rp.partition), []).append(rp)
        for s in segments:
            for name, v in (("topic", rp.topic), ("topic_id", rp.topic_id), ("partition", rp.partition),
                            ("segment_id", s.segment_id), ("base_offset", s.base_offset),
                            ("log_bytes", s.original_size), ("bytes", sum(v or 0 for v in s.sizes.values())),
                            ("url", _upload_url(rp, s))):
                cols[name].append(v)
    schema = pa.schema([("topic", pa.string()), ("topic_id", pa.string()), ("partition", pa.int32()),
                        ("segment_id", pa.string()), ("base_offset", pa.int64()), ("log_bytes", pa.int64()),
                        ("bytes", pa.int64()), ("url", pa.string())])
    return pa.Table.from_pydict(cols, schema=schema), rps_of, skipped


def _rows(table):
    """The table's rows as dicts (built column by column: a table's own ``to_pylist`` builds every value as
    a row's)."""
    names = table.column_names
    return [dict(zip(names, values)) for values in zip(*(table.column(n).to_pylist() for n in names))]


def _topic_rows(live, ups, findings):
    """Per topic: the metadata's segments still uploaded (``COPY_SEGMENT_FINISHED``, not deleted) and their
    bytes, the uploads listed and their bytes (every object), and the findings by kind."""
    out = {}

    def of(topic):
        if topic not in out:
            out[topic] = {"topic": topic, "remoteSegments": 0, "remoteBytes": 0, "uploads": 0, "uploadBytes": 0,
                          **{c: 0 for c in _COUNTS.values()}}
        return out[topic]

    meta = live.group_by("topic").aggregate([("segment_id", "count"), ("segment_size_in_bytes", "sum")])
    for topic, n, size in zip(*(meta.column(c).to_pylist() for c in ("topic", "segment_id_count",
                                                                      "segment_size_in_bytes_sum"))):
        of(topic).update(remoteSegments=n, remoteBytes=size or 0)
    listed = ups.group_by("topic").aggregate([("segment_id", "count"), ("bytes", "sum")])
    for topic, n, size in zip(*(listed.column(c).to_pylist() for c in ("topic", "segment_id_count", "bytes_sum"))):
        of(topic).update(uploads=n, uploadBytes=size or 0)
    for f in findings:
        of(f.topic)[_COUNTS[f.check]] += 1
    return [out[t] for t in sorted(out)]
