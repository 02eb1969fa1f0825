"""``kafkafmt stats``: per topic-partition and segment, what the log holds.

Numbers (all from the decoded log, read in bounded chunks):

* records: data records (control records are counted apart, as ``controlRecords``);
* batches, file bytes (segment files on disk) and batch bytes (sum of batch sizes);
* codecs and magics: batches per codec / message format version;
* compression ratio: payload bytes / batch bytes, where payload bytes are the bytes of the keys,
  values, header keys and header values of the batches' records and batch bytes the size of those
  batches on disk (framing and batch headers included). Per codec over that codec's batches, so
  ``none`` shows the framing overhead (< 1) and compressed codecs what compression saves;
* offsets: first base offset .. last offset of the batches; timestamps: smallest .. largest
  record timestamp of the data records;
* producers (distinct producer ids), transactional batches/records, committed and aborted
  transactions (COMMIT/ABORT markers), aborted records (records of aborted transactions, counted
  in the segment holding them), control records by type, tombstones (null values), records
  with headers, leader epochs.

Corrupt stretches are skipped (and reported; exit code 1) so the rest is still counted.
"""
from __future__ import annotations

import collections
import os

import numpy as np

from kafkafmt.discovery import Partition
from kafkafmt.records import CODEC_NAMES, CONTROL_TYPES, TIMESTAMP_TYPES

from kafkafmt.cli.common import (add_replicas_option, no_data, say_found, add_command, checked_record_files, find_inputs, human_bytes,
                                 input_paths, iso_ms, parse_int_list, parse_name_list, partition_label,
                                 report_problem, segment_base)
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.output import table
from kafkafmt.cli.progress import Progress
from kafkafmt.cli.reading import FileReader, iter_partition


def add_parser(sub, parents):
    p = add_command(sub, parents, "stats", "records, batches, bytes, codecs, offsets, times per partition and segment", __doc__,
                    "log directories, partition folders or segment files")
    p.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    p.add_argument("--partitions-only", action="store_true", help="no per-segment rows in the table")
    p.add_argument("--topics", action="append", metavar="T[,T]", help="only these topics")
    add_replicas_option(p)
    p.add_argument("--partitions", action="append", metavar="N[,N|A-B]", help="only these partition numbers")
    p.set_defaults(run=run)
    return p


class Acc:
    """Statistics of a segment, a partition or everything."""

    def __init__(self):
        self.records = self.control_records = self.batches = 0
        self.file_bytes = self.batch_bytes = self.payload_bytes = 0
        self.codecs = collections.Counter()
        self.codec_stored = collections.Counter()
        self.codec_payload = collections.Counter()
        self.magics = collections.Counter()
        self.timestamp_types = collections.Counter()
        self.controls = collections.Counter()
        self.first_offset = self.last_offset = None
        self.first_ts = self.last_ts = None
        self.producers = set()
        self.txn_batches = self.txn_records = 0
        self.committed = self.aborted = self.aborted_records = 0
        self.tombstones = self.with_headers = 0
        self.no_timestamp = 0          # data records without a timestamp (-1: magic 0, some producers)
        self.epochs = None
        self.skipped_bytes = 0
        self.segments = 0

    def merge(self, o):
        for name in ("records", "control_records", "batches", "file_bytes", "batch_bytes", "payload_bytes",
                     "txn_batches", "txn_records", "committed", "aborted", "aborted_records", "tombstones",
                     "with_headers", "skipped_bytes", "segments", "no_timestamp"):
            setattr(self, name, getattr(self, name) + getattr(o, name))
        for name in ("codecs", "codec_stored", "codec_payload", "magics", "timestamp_types", "controls"):
            getattr(self, name).update(getattr(o, name))
        self.producers |= o.producers
        self.first_offset = _min(self.first_offset, o.first_offset)
        self.last_offset = _max(self.last_offset, o.last_offset)
        self.first_ts = _min(self.first_ts, o.first_ts)
        self.last_ts = _max(self.last_ts, o.last_ts)
        if o.epochs is not None:
            self.epochs = o.epochs if self.epochs is None else (min(self.epochs[0], o.epochs[0]),
                                                                max(self.epochs[1], o.epochs[1]))

    def ratio(self, codec=None):
        stored = self.batch_bytes if codec is None else self.codec_stored[codec]
        payload = self.payload_bytes if codec is None else self.codec_payload[codec]
        return round(payload / stored, 4) if stored else None

    def to_json(self):
        return {
            "records": self.records, "controlRecords": self.control_records, "batches": self.batches,
            "fileBytes": self.file_bytes, "batchBytes": self.batch_bytes, "payloadBytes": self.payload_bytes,
            "compressionRatio": self.ratio(),
            "codecs": {c: {"batches": self.codecs[c], "batchBytes": self.codec_stored[c],
                           "payloadBytes": self.codec_payload[c], "compressionRatio": self.ratio(c)}
                       for c in sorted(self.codecs)},
            "magics": {str(m): n for m, n in sorted(self.magics.items())},
            "timestampTypes": dict(sorted(self.timestamp_types.items())),
            "firstOffset": self.first_offset, "lastOffset": self.last_offset,
            "firstTimestamp": self.first_ts, "lastTimestamp": self.last_ts, "noTimestamp": self.no_timestamp,
            "producers": len(self.producers), "transactionalBatches": self.txn_batches,
            "transactionalRecords": self.txn_records, "committedTransactions": self.committed,
            "abortedTransactions": self.aborted, "abortedRecords": self.aborted_records,
            "controls": dict(sorted(self.controls.items())), "tombstones": self.tombstones,
            "recordsWithHeaders": self.with_headers,
            "leaderEpochs": list(self.epochs) if self.epochs is not None else None,
            "skippedBytes": self.skipped_bytes,
        }


def _min(a, b):
    return b if a is None else a if b is None else min(a, b)


def _max(a, b):
    return b if a is None else a if b is None else max(a, b)


class PartitionStats:
    """Accumulates the chunks of one partition (or one file) into per-segment Acc."""

    def __init__(self):
        self.segments = collections.OrderedDict()   # base offset -> Acc
        self.open_txns = {}                          # producer id -> {segment: records}

    def seg(self, base):
        if base not in self.segments:
            self.segments[base] = Acc()
            self.segments[base].segments = 1
        return self.segments[base]

    def add(self, recs):
        b = recs.batches
        nb = len(b)
        if not nb:
            return
        segs = np.asarray(b["segment"], np.int64) if "segment" in b.columns else np.zeros(nb, np.int64)
        is_ctl = np.asarray(b["is_control"], bool)
        bidx = np.asarray(recs.batch_index, np.int64)
        rec_ctl = is_ctl[bidx] if len(bidx) else np.zeros(0, bool)
        # payload bytes per record: key + value + header keys + header values
        payload = recs.key.lengths().astype(np.int64) + recs.value.lengths().astype(np.int64)
        if recs.headers.count():
            ho = np.asarray(recs.headers.offsets, np.int64)
            hl = (recs.headers.key.lengths().astype(np.int64) + recs.headers.value.lengths().astype(np.int64))
            cs = np.concatenate(([0], np.cumsum(hl)))
            payload = payload + (cs[ho[1:]] - cs[ho[:-1]])
        batch_payload = np.bincount(bidx, weights=payload, minlength=nb).astype(np.int64) if len(bidx) \
            else np.zeros(nb, np.int64)
        data_per_batch = np.bincount(bidx[~rec_ctl], minlength=nb) if len(bidx) else np.zeros(nb, np.int64)
        size = np.asarray(b["size"], np.int64)
        codec = np.asarray(b["codec"])
        magic = np.asarray(b["magic"])
        tst = np.asarray(b["timestamp_type"])
        pid = np.asarray(b["producer_id"], np.int64)
        txn = np.asarray(b["is_transactional"], bool)
        epoch = np.asarray(b["partition_leader_epoch"], np.int64)
        ts = np.asarray(recs.timestamp, np.int64)
        offs_first, offs_last = np.asarray(b["base_offset"], np.int64), np.asarray(b["last_offset"], np.int64)
        value_null = recs.value.is_null() if recs.value.null_count else np.zeros(len(recs), bool)
        hcount = recs.headers.counts() if recs.headers.count() else np.zeros(len(recs), np.int64)
        ctl_type_by_batch = {}
        c = recs.controls
        if len(c):
            for bi, t in zip(np.asarray(c["batch_index"], np.int64).tolist(), c["type"].tolist()):
                ctl_type_by_batch.setdefault(bi, t)
        for s in np.unique(segs).tolist():
            a = self.seg(s)
            bm = segs == s
            rm = bm[bidx] if len(bidx) else np.zeros(0, bool)
            dm = rm & ~rec_ctl
            a.batches += int(bm.sum())
            a.batch_bytes += int(size[bm].sum())
            a.payload_bytes += int(batch_payload[bm].sum())
            for cd in np.unique(codec[bm]).tolist():
                cm = bm & (codec == cd)
                name = CODEC_NAMES.get(cd, str(cd))
                a.codecs[name] += int(cm.sum())
                a.codec_stored[name] += int(size[cm].sum())
                a.codec_payload[name] += int(batch_payload[cm].sum())
            for m in np.unique(magic[bm]).tolist():
                a.magics[m] += int((bm & (magic == m)).sum())
            for t in np.unique(tst[bm]).tolist():
                a.timestamp_types[TIMESTAMP_TYPES.get(t, str(t))] += int((bm & (tst == t)).sum())
            a.records += int(dm.sum())
            a.control_records += int((rm & rec_ctl).sum())
            a.first_offset = _min(a.first_offset, int(offs_first[bm].min()))
            a.last_offset = _max(a.last_offset, int(offs_last[bm].max()))
            good_ts = ts[dm]
            a.no_timestamp += int((good_ts < 0).sum())
            good_ts = good_ts[good_ts >= 0]
            if len(good_ts):
                a.first_ts = _min(a.first_ts, int(good_ts.min()))
                a.last_ts = _max(a.last_ts, int(good_ts.max()))
            a.producers.update(np.unique(pid[bm & (pid >= 0)]).tolist())
            a.txn_batches += int((bm & txn & ~is_ctl).sum())
            a.txn_records += int(data_per_batch[bm & txn & ~is_ctl].sum())
            a.tombstones += int((value_null & dm).sum())
            a.with_headers += int(((hcount > 0) & dm).sum())
            v2 = bm & (magic >= 2)
            if v2.any():
                lo, hi = int(epoch[v2].min()), int(epoch[v2].max())
                a.epochs = (lo, hi) if a.epochs is None else (min(a.epochs[0], lo), max(a.epochs[1], hi))
        if len(c):
            for t in c["type"].tolist():
                self.seg(int(segs[0]))   # ensure exists
            ctl_seg = segs[np.asarray(c["batch_index"], np.int64)]
            for t, s in zip(c["type"].tolist(), ctl_seg.tolist()):
                self.seg(s).controls[CONTROL_TYPES.get(t, str(t))] += 1
        # transactions, in log order: records of a producer's open transaction, then its marker
        order = np.argsort(np.asarray(b["position"], np.int64) + segs * 0, kind="stable")
        for i in order[txn[order]].tolist():
            p = int(pid[i])
            s = int(segs[i])
            if not is_ctl[i]:
                counts = self.open_txns.setdefault(p, {})
                counts[s] = counts.get(s, 0) + int(data_per_batch[i])
                continue
            t = ctl_type_by_batch.get(i)
            counts = self.open_txns.pop(p, {})
            if t == 0:
                self.seg(s).aborted += 1
                for s2, n in counts.items():
                    self.seg(s2).aborted_records += n
            elif t == 1:
                self.seg(s).committed += 1


def run(args, console):
    paths = input_paths(args, "stats")
    topics = parse_name_list(args.topics)
    partitions = parse_int_list(args.partitions, "partition")
    found = find_inputs(paths, topics, partitions, args.replicas)
    files = checked_record_files(found, console)
    err = no_data(found, files, paths, topics or partitions)
    if err is not None:
        raise err
    problems = say_found(found, console)
    total_bytes = sum(s.size for pd in found.partitions for s in pd.list_segments())
    total_bytes += sum(cli_paths.getsize(f) for f in files)
    results = []   # (label, topic, partition, folder or file, {base: Acc})
    with Progress(total_bytes, enabled=args.progress) as prog:
        console.progress = prog
        for pd in found.partitions:
            prog.set_label(pd.name)
            report = []
            ps = PartitionStats()
            sizes = {}
            for seg in pd.list_segments():
                ps.seg(seg.base_offset)
                sizes[seg.base_offset] = seg.size
            seen = 0
            for chunk in iter_partition(pd, report, errors="salvage", verify_crc=True, include_control=True):
                ps.add(chunk)
                prog.advance(int(np.asarray(chunk.batches["size"], np.int64).sum()), len(chunk))
                seen = _problems(report, seen, problems, console, ps, pd.folder)
            _problems(report, seen, problems, console, ps, pd.folder)
            start = pd.earliest() if pd.log_start_offset is not None else None
            for base, a in ps.segments.items():
                a.file_bytes = sizes.get(base, 0)
                if start is not None and a.first_offset is not None and a.first_offset < start:
                    a.first_offset = start      # the log start lies inside a batch (DeleteRecords)
            results.append((partition_label(pd, found), pd.topic, pd.partition, pd, ps.segments))
        for f in files:
            prog.set_label(os.path.basename(f))
            report = []
            ps = PartitionStats()
            with FileReader(f) as fr:
                for chunk in fr.chunks(report, errors="salvage", verify_crc=True, include_control=True):
                    ps.add(chunk)
                    prog.advance(int(np.asarray(chunk.batches["size"], np.int64).sum()), len(chunk))
                topic, part = fr.topic, fr.partition
            _problems(report, 0, problems, console, ps, None)
            if not ps.segments:
                ps.seg(0)
            for a in ps.segments.values():
                a.file_bytes = cli_paths.getsize(f)
            results.append((f, topic, part, f, ps.segments))
        console.progress = None
    if args.json:
        console.json(_json(results, problems))
    else:
        for line in _table(results, args.partitions_only):
            console.write(line)
    return 1 if any(p.severity == "error" for p in problems) else 0


def _problems(report, seen, problems, console, ps, folder):
    for e in report[seen:]:
        p = report_problem(e)
        if p is None:
            continue
        if p.severity == "error" and p.position is not None and p.end is not None:
            base = _base_of(e.get("file"))
            if base is not None and base in ps.segments:
                ps.segments[base].skipped_bytes += p.end - p.position
        problems.append(p)
        if p.severity == "error":
            console.message(f"kafkafmt: {p.text()}")
        else:
            console.warn(p.text()[len("warning: "):])
    return len(report)


def _base_of(path):
    return segment_base(path) if path else None


def _totals(segments):
    t = Acc()
    for a in segments.values():
        t.merge(a)
    return t


def _json(results, problems):
    out = {"partitions": [], "totals": None, "problems": [p.to_json() for p in problems]}
    grand = Acc()
    for label, topic, part, where, segs in results:
        t = _totals(segs)
        grand.merge(t)
        out["partitions"].append({
            "name": label, "topic": topic, "partition": part, "path": _where(where), **t.to_json(),
            "segments": [{"baseOffset": base, "file": _seg_file(where, base), **a.to_json()}
                         for base, a in segs.items()],
        })
    totals = grand.to_json()
    totals["firstOffset"] = totals["lastOffset"] = None     # offsets are per partition
    out["totals"] = {"partitions": len(results), "segments": grand.segments, **totals}
    return out


def _where(where):
    return where.url if isinstance(where, Partition) else where


def _seg_file(where, base):
    if isinstance(where, Partition):
        segs = {s.base_offset: s for s in where.list_segments()}
        return segs[base].url if base in segs else None
    return where


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
    aborted = f"{a.aborted_records} ({a.aborted} txn)" if a.aborted else "0"
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
                rows.append(_row(f"  {base:020d}", a))
    if len(results) > 1:
        rows.append(_row(f"TOTAL ({len(results)} partitions)", grand, offsets=False))
    return table(HEADERS, rows, right={1, 2, 3, 4, 9, 10, 11, 12})
