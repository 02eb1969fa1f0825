"""`build`: the figures of a report as tables -- one pass of `kafkafmt.report.figures` (what `stats`
counts, plus records per minute, transaction markers per minute and where each batch lies in time)
and one of `kafkafmt.report.checks` (what `verify` finds) per partition, and consumer lag from
``__consumer_offsets`` (`kafkafmt.report.lag`)."""
from __future__ import annotations

import math

import numpy as np

from kafkafmt.log import (DEFAULT_REPLICAS, RECOVERY_POINT_CHECKPOINT, REPLICAS, REPLICATION_CHECKPOINT, discover, log_dir_offsets)
from kafkafmt.log import ReportKind, segment_base
from kafkafmt.read import iter_partitions_with
from kafkafmt.report.checks import Checker, Twins, check_partition, topic_id_problems, will_check
from kafkafmt.report.figures import STATS_READ, counting_stats, partition_stats, reads_alike, totals
from kafkafmt.report.lag import committed_offsets, consumer_lag
from kafkafmt.report.problems import report_problem
from kafkafmt.report.tiered_audit import DEFAULT_STALE_COPY_MS, audit_tiered

__all__ = ["Builder", "build", "Report", "MINUTE_MS", "TABLES", "TIERED_TABLES", "LOG_END_SOURCES"]

MINUTE_MS = 60_000
SAMPLES_PER_CHUNK = 256          # batches kept per chunk to place problems in time
TABLES = ("topics", "partitions", "segments", "timeline", "transactions", "problems", "lag", "copies")
#: the tables of the tiered audit, there when it ran (the paths hold __remote_log_metadata and uploads)
TIERED_TABLES = ("tiered", "remote")
#: where a partition's log end offset is read, best first: the records on disk (the last offset + 1),
#: else the log dir's checkpoint files -- the high watermark, then the offset the log was flushed to
LOG_END_SOURCES = ("segments", REPLICATION_CHECKPOINT, RECOVERY_POINT_CHECKPOINT)
#: how a report reads a partition, with its checks: the figures' read from offset 0 -- one read gives both
#: where the figures read every byte (`kafkafmt.report.figures.reads_alike`), the checks' own otherwise
FIGURES_AND_CHECKS_READ = STATS_READ.replace(start_offset=0)


class Report:
    """The figures of a report as tables (lists of JSON-ready dicts; `table` gives a pandas
    DataFrame), times in milliseconds since the epoch:

    * ``topics``: per topic, the `stats` figures summed over its partitions (records, batches,
      fileBytes, payloadBytes, compressionRatio, codecs, firstTimestamp, lastTimestamp, ...);
    * ``partitions``: per partition the `stats` figures, ``logStartOffset``, ``logEndOffset`` (the
      next offset: ``lastOffset + 1``; where no segment holds records, the log dir's checkpoint files'
      offset, None when none has it) and ``logEndSource`` (where it came from: `LOG_END_SOURCES`),
      ``localSegments`` / ``tieredSegments``, ``errors`` / ``warnings``;
    * ``segments``: per segment its partition, ``baseOffset``, file, ``tiered``, and its `stats` figures;
    * ``timeline``: data records per partition and minute (``minute``: its start, ``records``);
    * ``transactions``: COMMIT / ABORT markers per partition and minute (``committed``, ``aborted``);
    * ``problems``: what `verify` finds (``severity, file, position, end, offset, message``), with
      its ``partition`` and ``time`` (where it lies on the partition's timeline, when known);
    * ``lag``: per consumer group and topic-partition its committed offset, the partition's log end
      offset, where that came from (``logEndSource``) and the lag (`kafkafmt.report.lag.consumer_lag`:
      None when the log end is unknown, negative when the group committed beyond it), as of the
      disk's last write;
    * ``copies``: every copy of every partition (``replicas="dedup"``), as ``kafka-log-dirs`` lists
      replicas: ``topic``, ``partition``, ``logDir``, ``folder``, ``state`` (`kafkafmt.log.COPY_STATES`:
      ``read``, ``in sync``, ``behind``, ``diverged``, ``damaged``, ``other incarnation``), ``topicId``,
      ``logStartOffset``, ``logEndOffset``, ``bytes``, ``offsetLag`` (offsets behind the copy read),
      ``highWatermark``, ``offset`` (where it diverges), ``uncommitted`` (a divergence above the high
      watermarks), ``errors`` (problems its checks found: a copy with any is ``damaged``), ``detail``;
      what is wrong with a copy is also in ``problems``;
    * ``tiered`` (there when the audit ran): the tiered audit's findings (`kafkafmt.report.audit_tiered`, when the paths hold
      ``__remote_log_metadata`` and uploads; also in ``problems``) -- ``check, topic, partition, topicId,
      segmentId, startOffset, endOffset, expectedBytes, actualBytes, file, message``;
    * ``remote`` (there when the audit ran): per topic, the remote segments ``__remote_log_metadata`` holds uploaded and their bytes
      (``remoteSegments``, ``remoteBytes``), the uploads listed (``uploads``, ``uploadBytes``: every object)
      and the findings by kind.

    ``last_write``: the largest record timestamp on disk (what "as of" means here)."""

    def __init__(self, paths, tables, last_write):
        self.paths = list(paths)
        self.tables = tables
        self.last_write = last_write

    def __getattr__(self, name):
        if name in TABLES or name in TIERED_TABLES:
            return self.tables.get(name, [])
        raise AttributeError(name)

    def table(self, name):
        """One of `TABLES` as a pandas DataFrame."""
        import pandas as pd

        rows = self.tables.get(name, [])
        return pd.DataFrame(rows) if rows else pd.DataFrame(columns=_COLUMNS[name])

    def to_json(self):
        """The whole report as one JSON-ready dict (what ``kafkafmt report --json`` prints)."""
        return {"paths": [str(p) for p in self.paths], "lastWrite": self.last_write,
                **{name: self.tables[name] for name in TABLES + TIERED_TABLES if name in self.tables}}


_COLUMNS = {
    "topics": ["topic", "partitions", "records", "fileBytes"],
    "partitions": ["name", "topic", "partition", "records", "logEndOffset"],
    "segments": ["partition", "baseOffset", "file", "tiered"],
    "timeline": ["partition", "minute", "records"],
    "transactions": ["partition", "minute", "committed", "aborted"],
    "problems": ["severity", "file", "position", "end", "offset", "message", "partition", "time"],
    "lag": ["group", "topic", "partition", "committedOffset", "commitTimestamp", "logEndOffset", "logEndSource",
            "lag"],
    "copies": ["topic", "partition", "logDir", "folder", "state", "topicId", "logStartOffset", "logEndOffset",
               "bytes", "offsetLag", "highWatermark", "offset", "uncommitted", "errors", "detail"],
    "tiered": ["check", "topic", "partition", "segmentId", "startOffset", "endOffset", "file", "message"],
    "remote": ["topic", "remoteSegments", "remoteBytes", "uploads", "uploadBytes"],
}


class _Tracker:
    """What a report keeps of a partition's chunks besides the `stats` figures: records and
    transaction markers per minute, and sampled batches (segment, position, offsets, time)."""

    def __init__(self):
        self.minutes = {}
        self.commits = {}
        self.aborts = {}
        self.samples = []

    def add(self, chunk):
        b = chunk.batches
        nb = len(b)
        if not nb:
            return
        bidx = np.asarray(chunk.batch_index, np.int64)
        is_ctl = np.asarray(b["is_control"], bool)
        if len(bidx):
            ts = np.asarray(chunk.timestamp, np.int64)[~is_ctl[bidx]]
            minutes = ts[ts >= 0] // MINUTE_MS
            if len(minutes) and minutes[0] == minutes[-1] and (minutes == minutes[0]).all():
                counted = ([minutes[0]], [len(minutes)])        # (all in one minute: at once)
            else:
                counted = np.unique(minutes, return_counts=True)
            for m, n in zip(*counted):
                self.minutes[int(m)] = self.minutes.get(int(m), 0) + int(n)
        c = chunk.controls
        if len(c):
            cb = np.asarray(c["batch_index"], np.int64)
            cts = np.asarray(b["max_timestamp"], np.int64)[cb] // MINUTE_MS
            for t, m in zip(np.asarray(c["type"]).tolist(), cts.tolist()):
                d = self.commits if t == 1 else self.aborts if t == 0 else None
                if d is not None:
                    d[m] = d.get(m, 0) + 1
        segs = np.asarray(b["segment"], np.int64) if "segment" in b.columns else np.zeros(nb, np.int64)
        keep = np.arange(nb) if nb <= SAMPLES_PER_CHUNK else \
            np.unique(np.linspace(0, nb - 1, SAMPLES_PER_CHUNK).astype(np.int64))
        self.samples.append(np.stack([segs[keep], np.asarray(b["position"], np.int64)[keep],
                                      np.asarray(b["base_offset"], np.int64)[keep],
                                      np.asarray(b["last_offset"], np.int64)[keep],
                                      np.asarray(b["max_timestamp"], np.int64)[keep]], axis=1))

    def sample_table(self):
        return np.concatenate(self.samples) if self.samples else np.zeros((0, 5), np.int64)


def _time_of(samples, problem, base):
    """Where a problem lies in time: the max timestamp of the sampled batch at or before its byte
    position in its segment, else at or before its offset; None when nothing places it."""
    s = samples[samples[:, 4] >= 0]
    if not len(s):
        return None
    if base is not None and problem.position is not None:
        mine = s[s[:, 0] == base]
        if len(mine):
            before = mine[mine[:, 1] <= problem.position]
            row = before[np.argmax(before[:, 1])] if len(before) else mine[np.argmin(mine[:, 1])]
            return int(row[4])
    if problem.offset is not None:
        before = s[s[:, 3] < problem.offset]
        row = before[np.argmax(before[:, 3])] if len(before) else s[np.argmin(s[:, 2])]
        return int(row[4])
    if base is not None:
        mine = s[s[:, 0] == base]
        if len(mine):
            return int(mine[:, 4].min())
    return None


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class Builder:
    """A report in two steps, for callers that show progress: ``Builder(paths, ...)`` finds the
    partitions (``partitions``; ``total_bytes``: the bytes the run reads -- each partition once, for its
    figures and its checks, twice where the figures start past its first segment's base offset), ``run(progress)``
    reads them. ``progress``: an object with ``set_label(text)`` and ``advance(nbytes, nrecords)`` (the CLI's
    progress bar), or None."""

    def __init__(self, paths, *, topics=None, partitions=None, replicas=DEFAULT_REPLICAS, storage_options=None, checks=True,
                 lag=True, tiered_keys=None, stale_copy_ms=DEFAULT_STALE_COPY_MS, topic_id=None):
        if replicas not in REPLICAS:
            raise ValueError(f"replicas must be one of {REPLICAS}")
        self.paths = [paths] if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__") else list(paths)
        self.checks = checks
        self.lag = lag
        self.stale_copy_ms = stale_copy_ms
        self.discovery_report = []
        found = discover(self.paths, topics=topics, partitions=partitions, storage_options=storage_options,
                         tiered_keys=tiered_keys, replicas=replicas, report=self.discovery_report, files=True,
                         topic_id=topic_id)
        self.found = found
        self._several_log_dirs = None
        self.partitions = found.partitions
        # __consumer_offsets is read for lag even when --topics leaves it out
        self.offsets_partitions = [p for p in found.partitions if p.topic == "__consumer_offsets"]
        if lag and topics and not self.offsets_partitions:
            self.offsets_partitions = discover(self.paths, topics=["__consumer_offsets"], storage_options=storage_options,
                                               tiered_keys=tiered_keys, replicas=replicas).partitions
        self._segments = {id(p): p.list_segments() for p in self.partitions}
        self.total_bytes = sum(s.size or 0 for segs in self._segments.values() for s in segs)
        if checks:          # partitions read twice, and every other copy checked too
            self.total_bytes += sum(s.size or 0 for p in self.partitions if not reads_alike(p, self._segments[id(p)])
                                    for s in self._segments[id(p)])
            self.total_bytes += sum(s.size or 0 for p in found.unread for s in p.list_segments())

    def label(self, part):
        """``topic-N``, with the log dir when partitions come from several (as `stats` names them)."""
        if self._several_log_dirs is None:      # (computed once: found.log_dirs walks every partition)
            self._several_log_dirs = len(self.found.log_dirs) > 1
        if self._several_log_dirs and part.log_dir is not None:
            return f"{part.name} ({part.log_dir_url})"
        return part.name

    def run(self, progress=None):
        tables = {name: [] for name in TABLES}
        last_write = None
        leo = {}
        for p in self.discovery_report:
            if self.checks and p.kind is ReportKind.DAMAGED_COPY:
                continue        # (each copy's own check below says where and why, once)
            prob = report_problem(p)
            if prob is not None:
                tables["problems"].append({**_problem_row(prob), "partition": None, "time": None})
        checkpoints = _checkpoint_ends(self.partitions + self.offsets_partitions)
        by_topic = {}

        def advance(chunk):
            if progress is not None:
                progress.advance(chunk.stored_bytes, len(chunk))

        if self.checks:
            will_check(list(self.partitions) + list(self.found.unread))   # (object stores: fetched ahead)
        twins = Twins(self.found) if self.checks else None
        topic_ids = {}          # the topic ids of the partition.metadata files checked (`topic_id_problems`)
        # many small partitions read in one pass, each one's figures and problems as its own read gives them
        # (one read for both, unless its figures start past its first segment: `FIGURES_AND_CHECKS_READ`)
        for part, chunks, report in iter_partitions_with(self.partitions,
                                                         FIGURES_AND_CHECKS_READ if self.checks else STATS_READ):
            name = self.label(part)
            if progress is not None:
                progress.set_label(name)
            tracker = _Tracker()

            def on_chunk(chunk, tracker=tracker):
                tracker.add(chunk)
                advance(chunk)

            segs_listed = self._segments[id(part)]
            if not self.checks:
                segments, problems = partition_stats(part, on_chunk=on_chunk, read=(chunks, report))
            elif reads_alike(part, segs_listed):
                counted, finish = counting_stats(part, chunks, report, on_chunk=on_chunk)
                problems = check_partition(part, read=(counted, report), logged=twins, topic_ids=topic_ids)
                segments, _ = finish()
            else:               # the figures from the log start offset on, the checks of every byte
                segments, _ = partition_stats(part, on_chunk=on_chunk)
                problems = check_partition(part, on_chunk=advance, read=(chunks, report), logged=twins,
                                           topic_ids=topic_ids)
            t = totals(segments)
            by_topic.setdefault(part.topic, []).append(t)
            if t.last_ts is not None:
                last_write = t.last_ts if last_write is None else max(last_write, t.last_ts)
            key = (part.topic, part.partition)
            if t.last_offset is not None:
                end, source = t.last_offset + 1, LOG_END_SOURCES[0]
            else:             # no record on disk: what the broker checkpointed, else unknown
                end, source = checkpoints.get(key, (None, None))
            if end is not None and (key not in leo or end > leo[key][0]):
                leo[key] = (end, source)
            tiered = {s.base_offset: s.remote is not None for s in segs_listed}
            urls = {s.base_offset: s.url for s in segs_listed}
            stats = t.to_json()
            tables["partitions"].append({
                "name": name, "topic": part.topic, "partition": part.partition, "path": part.url,
                "logStartOffset": part.earliest(segs_listed), "logEndOffset": end, "logEndSource": source,
                "localSegments": sum(1 for v in tiered.values() if not v),
                "tieredSegments": sum(1 for v in tiered.values() if v),
                "errors": sum(1 for p in problems if p.severity == "error"),
                "warnings": sum(1 for p in problems if p.severity != "error"), **stats})
            for base, a in segments.items():
                tables["segments"].append({"partition": name, "baseOffset": base, "file": urls.get(base),
                                           "tiered": tiered.get(base, False), **a.to_json()})
            for m, n in sorted(tracker.minutes.items()):
                tables["timeline"].append({"partition": name, "minute": m * MINUTE_MS, "records": n})
            for m in sorted(set(tracker.commits) | set(tracker.aborts)):
                tables["transactions"].append({"partition": name, "minute": m * MINUTE_MS,
                                               "committed": tracker.commits.get(m, 0),
                                               "aborted": tracker.aborts.get(m, 0)})
            samples = tracker.sample_table()
            for p in problems:
                base = segment_base(p.file) if p.file else None
                tables["problems"].append({**_problem_row(p), "partition": name,
                                           "time": _time_of(samples, p, base)})
        if self.checks:         # every other copy, read as the partitions are (many in one pass), or as its twin
            for part, read, logged in twins.copies(self.found.unread, iter_partitions_with):
                if progress is not None:
                    progress.set_label(f"{self.label(part)} ({part.log_dir_url})")
                    if logged is not None:
                        progress.advance(sum(s.size for s in part.list_segments()))
                checker = Checker(on_chunk=advance)
                checker.topic_ids = topic_ids
                checker.copy(part, read=read, logged=logged)
                for p in checker.problems:
                    tables["problems"].append({**_problem_row(p), "partition": self.label(part), "time": None})
            for part, p in topic_id_problems(self.found, topic_ids):
                tables["problems"].append({**_problem_row(p), "partition": self.label(part), "time": None})
        tables["copies"] = _copy_rows(self.found.copies, tables["partitions"], tables["problems"])
        if self.found.uploads and any(p.topic == "__remote_log_metadata" for p in self.found.partitions):
            audit = audit_tiered(self.found, stale_copy_ms=self.stale_copy_ms)
            tables["tiered"] = [f.row() for f in audit.findings]
            tables["remote"] = audit.topics
            tables["problems"] += [{**_problem_row(f), "partition": f"{f.topic}-{f.partition}", "time": None}
                                   for f in audit.findings]
        for topic, accs in by_topic.items():
            t = totals(accs)
            tables["topics"].append({"topic": topic, "partitions": len(accs), **t.to_json(),
                                     "firstOffset": None, "lastOffset": None})
        if self.lag and self.offsets_partitions:         # (no __consumer_offsets: no lag, nothing to read)
            committed = committed_offsets(self.offsets_partitions)
            for key, (end, source) in checkpoints.items():       # partitions with no folder here
                leo.setdefault(key, (end, source))
            lag = consumer_lag(committed, {k: v[0] for k, v in leo.items()})
            for row in lag.to_dict("records"):
                ts = row["commit_timestamp"]
                tables["lag"].append({
                    "group": row["group"], "topic": row["topic"], "partition": int(row["partition"]),
                    "committedOffset": int(row["committed_offset"]),
                    "commitTimestamp": None if ts is None or ts != ts else int(ts.value // 1_000_000),
                    "coordinator": int(row["coordinator"]),
                    "logEndOffset": None if row["log_end_offset"] is None or row["log_end_offset"] != row["log_end_offset"]
                    else int(row["log_end_offset"]),
                    "logEndSource": leo.get((row["topic"], int(row["partition"])), (None, None))[1],
                    "lag": None if row["lag"] is None or row["lag"] != row["lag"] else int(row["lag"])})
        for rows in tables.values():
            for r in rows:
                for k, v in r.items():
                    r[k] = _clean(v)
        return Report(self.paths, tables, last_write)


def _copy_rows(copies, partitions, problems):
    """The ``copies`` table: each copy (`kafkafmt.log.Copy`) with the problems found in its folder; a copy held
    once takes its offsets from its read (``partitions``); a copy not read with errors is ``damaged``."""
    read = {r["path"]: r for r in partitions}
    errors = {}
    for p in problems:
        if p["severity"] == "error" and p["file"]:
            folder = p["file"].rsplit("/", 1)[0]
            errors[folder] = errors.get(folder, 0) + 1
    rows = []
    for c in copies:
        row = c.to_json()
        if row["logEndOffset"] is None and c.folder in read:
            row["logStartOffset"] = read[c.folder]["logStartOffset"]
            row["logEndOffset"] = read[c.folder]["logEndOffset"]
        row["errors"] = errors.get(c.folder, 0)
        if row["errors"] and c.state in ("in sync", "behind"):
            row["state"] = "damaged"
        rows.append(row)
    return rows


def _checkpoint_ends(partitions):
    """{(topic, partition): (offset, checkpoint file)}: the log ends the checkpoint files of the
    partitions' log dirs give (`LOG_END_SOURCES` after "segments", the first that has the partition;
    the largest over several log dirs)."""
    out = {}
    dirs = {}
    for part in partitions:
        if part.home is not None:
            dirs.setdefault(part.storage.url(part.home), (part.home, part.storage))
    for log_dir, storage in dirs.values():
        for name in LOG_END_SOURCES[1:]:
            for key, offset in log_dir_offsets(log_dir, name, storage).items():
                have = out.get(key)
                rank = LOG_END_SOURCES.index(name)
                if have is None or (rank, -offset) < (LOG_END_SOURCES.index(have[1]), -have[0]):
                    out[key] = (offset, name)
    return out


def _problem_row(p):
    return {"severity": p.severity, "file": p.file, "position": p.position, "end": p.end, "offset": p.offset,
            "message": p.message}


def build(paths, *, topics=None, partitions=None, replicas=DEFAULT_REPLICAS, storage_options=None, checks=True, lag=True,
          progress=None, tiered_keys=None, stale_copy_ms=DEFAULT_STALE_COPY_MS, topic_id=None):
    """The figures of a report on log dirs, partition folders or tiered uploads (paths or URLs).

    Parameters
    ----------
    paths : str, path-like or list of them
        Roots as `kafkafmt.log._discovery.discover` takes them (local or object storage).
    topics, partitions : list, optional
        Only these topics / partition numbers (``__consumer_offsets`` is still read for the lag).
    replicas : {"dedup", "all"}
        Several copies of one partition: each offset once, from a copy that holds it intact (the
        default; every copy is checked and listed in the ``copies`` table), or every copy.
    storage_options : dict, optional
        fsspec options for URLs.
    checks : bool
        Run `verify`'s checks (on the figures' read of each partition, and a read of every other copy);
        False lists only the problems the figures' read finds (corrupt stretches).
    lag : bool
        Compute consumer lag from ``__consumer_offsets``.
    progress : object, optional
        ``set_label(text)`` / ``advance(nbytes, nrecords)`` as the reads go.
    tiered_keys : dict, optional
        ``{key id: RSA private key}`` for encrypted Aiven tiered uploads (as the readers take them).
    stale_copy_ms : int
        The tiered audit's age of a copy started and never finished (`kafkafmt.report.audit_tiered`).
    topic_id : str or dict, optional
        Where copies of a partition hold different incarnations of its topic: the one to read (as the
        readers take it).

    Returns
    -------
    Report
        The tables (``report.table("lag")`` is a pandas DataFrame).
    """
    return Builder(paths, topics=topics, partitions=partitions, replicas=replicas, storage_options=storage_options,
                   checks=checks, lag=lag, tiered_keys=tiered_keys, stale_copy_ms=stale_copy_ms,
                   topic_id=topic_id).run(progress)
