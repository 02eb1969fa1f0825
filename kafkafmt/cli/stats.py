"""``kafkafmt stats``: per topic-partition and segment, what the log holds.

The figures are the library's (`kafkafmt.report.figures`, also behind ``kafkafmt report``):

* records: data records (control records are counted apart, as ``controlRecords``);
* batches, file bytes (segment files on disk) and batch bytes (sum of batch sizes);
* codecs and magics: batches per codec / message format version;
* compression ratio: payload bytes / batch bytes, where payload bytes are the bytes of the keys,
  values, header keys and header values of the batches' records and batch bytes the size of those
  batches on disk (framing and batch headers included). Per codec over that codec's batches, so
  ``none`` shows the framing overhead (< 1) and compressed codecs what compression saves;
* offsets: first base offset .. last offset of the batches; timestamps: smallest .. largest
  record timestamp of the data records;
* records below a partition's log start offset (DeleteRecords; ``log-start-offset-checkpoint``) are
  not served to consumers, so not counted -- a note says how many are on disk (``belowLogStart``);
* producers (distinct producer ids), transactional batches/records, committed and aborted
  transactions (COMMIT/ABORT markers), aborted records (records of aborted transactions, counted
  in the segment holding them), control records by type, tombstones (null values), records
  with headers, leader epochs.

Corrupt stretches are skipped (and reported; exit code 1) so the rest is still counted.
"""
from __future__ import annotations

import functools
import os

from kafkafmt.log import Partition, segment_file_name
from kafkafmt.read import iter_partitions_with
from kafkafmt.report.figures import (STATS_READ, Acc, PartitionStats, below_log_start_text, partition_stats,
                                     totals as _totals)

from kafkafmt.cli.common import (add_replicas_option, no_data, say_found, add_command, checked_record_files, find_inputs, human_bytes, read_options,
                                 input_paths, iso_ms, parse_int_list, parse_name_list, partition_label, topic_ids)
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.arguments import add_filter_options
from kafkafmt.cli.output import table
from kafkafmt.cli.progress import Progress
from kafkafmt.cli.reading import FileReader


def add_parser(sub, parents, command):
    p = add_command(sub, parents, command, __doc__,
                    "log directories, partition folders or segment files")
    p.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    p.add_argument("--partitions-only", action="store_true", help="no per-segment rows in the table")
    add_filter_options(p)
    add_replicas_option(p)
    return p


def run(args, console):
    paths = input_paths(args, "stats")
    topics = parse_name_list(args.topics)
    partitions = parse_int_list(args.partitions, "partition")
    found = find_inputs(paths, topics, partitions, args.replicas, topic_ids(args), conflicts="report")
    files = checked_record_files(found, console)
    err = no_data(found, files, paths, topics or partitions)
    if err is not None:
        raise err
    problems = say_found(found, console)
    listed = {id(pd): pd.list_segments() for pd in found.partitions}     # (listed once: the JSON names their files)
    total_bytes = sum(s.size for segs in listed.values() for s in segs)
    total_bytes += sum(cli_paths.getsize(f) for f in files)
    results = []   # (label, topic, partition, folder or file, {base: Acc})
    with Progress(total_bytes, enabled=args.progress) as prog:
        console.progress = prog
        say = functools.partial(_say, console)
        # many small partitions read in one pass, each one's figures as its own read gives them
        for pd, chunks, report in iter_partitions_with(found.partitions, STATS_READ):
            prog.set_label(pd.name)
            segments, found_problems = partition_stats(pd, on_counted=prog.advance, on_problem=say,
                                                       read=(chunks, report))
            problems += found_problems
            results.append((partition_label(pd, found), pd.topic, pd.partition, pd, segments))
        for f in files:
            prog.set_label(os.path.basename(f))
            report = []
            ps = PartitionStats()
            with FileReader(f) as fr:
                for chunk in fr.chunks(report, read_options(args, errors="salvage", verify_crc=True,
                                                           include_control=True)):
                    ps.add(chunk)
                    prog.advance(chunk.stored_bytes, len(chunk))
                topic, part = fr.topic, fr.partition
            problems += ps.note_problems(report, 0, say)[1]
            if not ps.segments:
                ps.seg(0)
            for a in ps.segments.values():
                a.file_bytes = cli_paths.getsize(f)
            results.append((f, topic, part, f, ps.segments))
        console.progress = None
    if args.json:
        console.json(_json(results, problems, listed))
    else:
        for line in _table(results, args.partitions_only):
            console.write(line)
        for label, _topic, _part, where, segs in results:
            below = sum(a.below_log_start for a in segs.values())     # (as their totals count them)
            if below:
                console.info(f"kafkafmt: {label}: {below_log_start_text(below)} (its log start offset is "
                             f"{where.earliest()})")
    return 1 if any(p.severity == "error" for p in problems) else 0


def _say(console, p):
    if p.severity == "error":
        console.message(f"kafkafmt: {p.text()}")
    else:
        console.warn(p.text()[len("warning: "):])


def _json(results, problems, listed):
    """The JSON document of ``results`` (see `run`); ``listed``: the segments of each partition read, by its id."""
    out = {"partitions": [], "totals": None, "problems": [p.to_json() for p in problems]}
    grand = Acc()
    for label, topic, part, where, segs in results:
        # a partition of one segment (most of a cluster's) has that segment's figures: made once
        t = next(iter(segs.values())) if len(segs) == 1 else _totals(segs)
        grand.merge(t)
        figures = t.to_json()
        files = _seg_files(where, listed)
        out["partitions"].append({
            "name": label, "topic": topic, "partition": part, "path": _where(where), **figures,
            "segments": [{"baseOffset": base, "file": files(base), **(figures if a is t else a.to_json())}
                         for base, a in segs.items()],
        })
    totals = grand.to_json()
    totals["firstOffset"] = totals["lastOffset"] = None     # offsets are per partition
    out["totals"] = {"partitions": len(results), "segments": grand.segments, **totals}
    return out


def _where(where):
    return where.url if isinstance(where, Partition) else where


def _seg_files(where, listed):
    """``file(base offset)``: the file of a partition's segment (None when it has none there), or the file read."""
    if isinstance(where, Partition):
        urls = {s.base_offset: s.url for s in listed[id(where)]}
        return urls.get
    return lambda base: where


HEADERS = ["PARTITION / SEGMENT", "RECORDS", "BATCHES", "SIZE", "RATIO", "CODECS", "MAGIC", "OFFSETS",
           "TIMESTAMPS (UTC)", "NO-TS", "PRODUCERS", "TXN", "ABORTED", "CONTROL"]
_SHORT_CONTROL = {"ABORT": "abort", "COMMIT": "commit", "LEADER_CHANGE": "leader", "SNAPSHOT_HEADER": "snaphdr",
                  "SNAPSHOT_FOOTER": "snapftr", "KRAFT_VERSION": "kraftver", "KRAFT_VOTERS": "voters"}


def _row(label, a: Acc, offsets=True):
    ratio = a.ratio()
    codecs = ",".join(f"{c}:{n}" for c, n in sorted(a.codecs.items())) or "-"
    magics = ",".join(f"v{m}" if len(a.magics) == 1 else f"v{m}:{n}" for m, n in sorted(a.magics.items())) or "-"
    # offsets are per partition: a range across partitions means nothing
    offsets = "-" if a.first_offset is None or not offsets else f"{a.first_offset}..{a.last_offset}"
    times = "-"
    if a.first_ts is not None:
        t1, t2 = iso_ms(a.first_ts)[:19], iso_ms(a.last_ts)[:19]
        times = f"{t1}..{t2[11:] if t2[:10] == t1[:10] else t2}"
    ctl = ",".join(f"{_SHORT_CONTROL.get(k, k)}:{v}" for k, v in sorted(a.controls.items())) or "-"
    # records of aborted transactions are counted in the segment holding them, the ABORT markers in
    # theirs: a transaction across a segment roll puts its records and its marker in two rows
    aborted = f"{a.aborted_records} ({a.aborted} txn)" if a.aborted else f"{a.aborted_records}"
    txn = f"{a.txn_records}" if a.txn_batches else "0"
    skipped = f" !{human_bytes(a.skipped_bytes)} skipped" if a.skipped_bytes else ""
    return [label, a.records, a.batches, human_bytes(a.file_bytes), "-" if ratio is None else f"{ratio:.2f}",
            codecs, magics, offsets, times, a.no_timestamp, len(a.producers), txn, aborted, ctl + skipped]


def _table(results, partitions_only):
    rows = []
    grand = Acc()
    for label, topic, part, where, segs in results:
        t = _totals(segs)
        grand.merge(t)
        rows.append(_row(label, t))
        if not partitions_only and (len(segs) > 1 or isinstance(where, Partition)):
            for base, a in segs.items():
                rows.append(_row("  " + segment_file_name(base, ""), a))
    if len(results) > 1:
        rows.append(_row(f"TOTAL ({len(results)} partitions)", grand, offsets=False))
    return table(HEADERS, rows, right={1, 2, 3, 4, 9, 10, 11, 12})
