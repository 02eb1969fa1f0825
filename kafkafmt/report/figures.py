"""What a partition holds, per segment: the figures of ``kafkafmt stats`` (and of `kafkafmt.report`).

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
* records below the log start offset (``log-start-offset-checkpoint``: DeleteRecords moved it past
  records still on disk) are not served to consumers, so not counted: as every door reads a
  partition; ``belowLogStart`` says how many are on disk;
* producers (distinct producer ids), transactional batches/records, committed and aborted
  transactions (COMMIT/ABORT markers), aborted records (records of aborted transactions, counted
  in the segment holding them), control records by type, tombstones (null values), records
  with headers, leader epochs.

Corrupt stretches are skipped (and reported as `Problem` s) so the rest is still counted.
"""
from __future__ import annotations

import collections

import numpy as np

from kafkafmt.read import ReadOptions, iter_log_dir, iter_log_dir_with
from kafkafmt.log import UnitChunks, segment_base
from kafkafmt._native.plain import SEVERAL, plain_figures
from kafkafmt.record import CODEC_NAMES, CONTROL_TYPES, TIMESTAMP_TYPES, BinaryColumn, Headers
from kafkafmt.report.problems import report_problem

__all__ = ["Acc", "PartitionStats", "partition_stats", "counting_stats", "bulk_figures", "piece_figures", "reads_alike",
           "totals", "STATS_READ",
           "CHUNK_BYTES", "below_log_start_text"]

CHUNK_BYTES = 16 << 20   # decoded bytes per chunk: keeps memory bounded whatever the segment sizes
#: whether a plain chunk's figures and checks come from the native passes (`kafkafmt._native.plain`; a
#: test turns it off -- ``PLAIN_NATIVE[0] = False`` -- to compare their NumPy twins)
PLAIN_NATIVE = [True]


class Counts(dict):
    """Counts by name: a missing name counts 0 (as `collections.Counter`, without its cost: a cluster's figures
    make six a segment)."""

    __slots__ = ()

    def __missing__(self, key):
        return 0

    def add(self, other):
        """Add ``other`` 's counts to these."""
        for k, v in other.items():
            self[k] = self.get(k, 0) + v


#: the figures an `Acc` sums, and those it counts by name
_SUMS = ("records", "control_records", "batches", "file_bytes", "batch_bytes", "payload_bytes", "txn_batches",
         "txn_records", "committed", "aborted", "aborted_records", "tombstones", "with_headers", "skipped_bytes",
         "segments", "no_timestamp", "below_log_start")
_COUNTS = ("codecs", "codec_stored", "codec_payload", "magics", "timestamp_types", "controls")


class Acc:
    """Statistics of a segment, a partition or everything."""

    def __init__(self):
        # (each name spelt: a cluster makes thousands; `test_an_acc_starts_with_every_figure` keeps them to _SUMS
        # and _COUNTS)
        self.records = self.control_records = self.batches = self.file_bytes = self.batch_bytes = 0
        self.payload_bytes = self.txn_batches = self.txn_records = self.committed = self.aborted = 0
        self.aborted_records = self.tombstones = self.with_headers = self.skipped_bytes = self.segments = 0
        self.no_timestamp = self.below_log_start = 0
        self.codecs, self.codec_stored, self.codec_payload = Counts(), Counts(), Counts()
        self.magics, self.timestamp_types, self.controls = Counts(), Counts(), Counts()
        self.first_offset = self.last_offset = None
        self.first_ts = self.last_ts = None
        self.producers = set()
        self.epochs = None

    def merge(self, o):
        d, od = self.__dict__, o.__dict__
        for name in _SUMS:
            d[name] += od[name]
        for name in _COUNTS:
            if od[name]:
                d[name].add(od[name])
        if o.producers:
            self.producers |= o.producers
        self.first_offset = _min(self.first_offset, o.first_offset)
        self.last_offset = _max(self.last_offset, o.last_offset)
        self.first_ts = _min(self.first_ts, o.first_ts)
        self.last_ts = _max(self.last_ts, o.last_ts)
        if o.epochs is not None:
            self.epochs = o.epochs if self.epochs is None else (min(self.epochs[0], o.epochs[0]),
                                                                max(self.epochs[1], o.epochs[1]))

    def ratio(self, codec=None):
        if codec is None:
            return _ratio(self.payload_bytes, self.batch_bytes)
        return _ratio(self.codec_payload[codec], self.codec_stored[codec])

    def to_json(self):
        # (a cluster's stats and report make one a segment and one a partition: the codecs' rows made in one pass)
        codecs, stored, payload = self.codecs, self.codec_stored, self.codec_payload
        return {
            "records": self.records, "controlRecords": self.control_records, "batches": self.batches,
            "fileBytes": self.file_bytes, "batchBytes": self.batch_bytes, "payloadBytes": self.payload_bytes,
            "compressionRatio": _ratio(self.payload_bytes, self.batch_bytes),
            "codecs": {c: {"batches": codecs[c], "batchBytes": stored[c], "payloadBytes": payload[c],
                           "compressionRatio": _ratio(payload[c], stored[c])}
                       for c in sorted(codecs)},
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
            "skippedBytes": self.skipped_bytes, "belowLogStart": self.below_log_start,
        }


def _ratio(payload, stored):
    """A compression ratio: payload bytes ÷ batch bytes, to four places (None without batch bytes)."""
    return round(payload / stored, 4) if stored else None


def _whole(x):
    return x


def _distinct(x):
    """The distinct values of an array, in order, as a list (`numpy.unique`; at once when they are all one)."""
    if not len(x):
        return []
    if (x == x[0]).all():
        return [x[0].item()]
    return np.unique(x).tolist()


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
        if self._add_plain(recs, b, nb, segs, is_ctl):
            return
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
        useg = _distinct(segs)
        for s in useg:
            a = self.seg(s)
            if len(useg) == 1:          # (a chunk of one segment, as reads give them: no selection)
                bsel = rsel = _whole
            else:
                bm = segs == s
                rm = bm[bidx] if len(bidx) else np.zeros(0, bool)
                bsel, rsel = (lambda x, m=bm: x[m]), (lambda x, m=rm: x[m])
            sz, cod, mag, bp = bsel(size), bsel(codec), bsel(magic), bsel(batch_payload)
            ctl_r = rsel(rec_ctl)
            data_r = ~ctl_r
            a.batches += len(sz)
            a.batch_bytes += int(sz.sum())
            a.payload_bytes += int(bp.sum())
            for cd in _distinct(cod):
                cm = cod == cd
                name = CODEC_NAMES.get(cd, str(cd))
                a.codecs[name] += int(cm.sum())
                a.codec_stored[name] += int(sz[cm].sum())
                a.codec_payload[name] += int(bp[cm].sum())
            for m in _distinct(mag):
                a.magics[m] += int((mag == m).sum())
            tst_s = bsel(tst)
            for t in _distinct(tst_s):
                a.timestamp_types[TIMESTAMP_TYPES.get(t, str(t))] += int((tst_s == t).sum())
            a.records += int(data_r.sum())
            a.control_records += int(ctl_r.sum())
            a.first_offset = _min(a.first_offset, int(bsel(offs_first).min()))
            a.last_offset = _max(a.last_offset, int(bsel(offs_last).max()))
            good_ts = rsel(ts)[data_r]
            a.no_timestamp += int((good_ts < 0).sum())
            good_ts = good_ts[good_ts >= 0]
            if len(good_ts):
                a.first_ts = _min(a.first_ts, int(good_ts.min()))
                a.last_ts = _max(a.last_ts, int(good_ts.max()))
            pid_s = bsel(pid)
            a.producers.update(_distinct(pid_s[pid_s >= 0]))
            txn_s = bsel(txn) & ~bsel(is_ctl)
            a.txn_batches += int(txn_s.sum())
            a.txn_records += int(bsel(data_per_batch)[txn_s].sum())
            a.tombstones += int((rsel(value_null) & data_r).sum())
            a.with_headers += int(((rsel(hcount) > 0) & data_r).sum())
            v2 = mag >= 2
            if v2.any():
                ep = bsel(epoch)[v2]
                lo, hi = int(ep.min()), int(ep.max())
                a.epochs = (lo, hi) if a.epochs is None else (min(a.epochs[0], lo), max(a.epochs[1], hi))
        if len(c):
            for t in c["type"].tolist():
                self.seg(int(segs[0]))   # ensure exists
            ctl_seg = segs[np.asarray(c["batch_index"], np.int64)]
            for t, s in zip(c["type"].tolist(), ctl_seg.tolist()):
                self.seg(s).controls[CONTROL_TYPES.get(t, str(t))] += 1
        # transactions, in log order: records of a producer's open transaction, then its marker
        order = np.argsort(np.asarray(b["position"], np.int64) + segs * 0, kind="stable") if txn.any() else []
        for i in order[txn[order]].tolist() if len(order) else ():
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


    def _add_plain(self, recs, b, nb, segs, is_ctl):
        """`add` of the usual chunk at once: one segment, one codec, magic and timestamp type, no control or
        transactional batch -- its figures from one native pass over the batch columns (`plain_figures`;
        `_plain_numpy` for columns of other types). False (nothing added) for any other chunk."""
        if not PLAIN_NATIVE[0]:
            return self._plain_numpy(recs, b, segs, is_ctl)
        try:
            got = plain_figures(segs, b["codec"], b["magic"], b["timestamp_type"], is_ctl.view(np.uint8),
                                np.asarray(b["is_transactional"], bool).view(np.uint8), b["size"],
                                b["base_offset"], b["last_offset"], b["producer_id"], b["partition_leader_epoch"],
                                recs.timestamp)
        except ValueError:          # (columns of other types than the decoder's)
            return self._plain_numpy(recs, b, segs, is_ctl)
        if got is None:
            return False
        stored, first, last, ts_lo, ts_hi, unstamped, pid, e_lo, e_hi = got
        a = self._plain_common(recs, b, nb, segs, stored, first, last)
        if ts_lo is not None:
            a.first_ts, a.last_ts = _min(a.first_ts, ts_lo), _max(a.last_ts, ts_hi)
        a.no_timestamp += unstamped
        if pid == SEVERAL:
            pid_col = np.asarray(b["producer_id"], np.int64)
            a.producers.update(_distinct(pid_col[pid_col >= 0]))
        elif pid >= 0:
            a.producers.add(pid)
        if b["magic"][0] >= 2:
            a.epochs = (e_lo, e_hi) if a.epochs is None else (min(a.epochs[0], e_lo), max(a.epochs[1], e_hi))
        return True

    def _plain_common(self, recs, b, nb, segs, stored, first, last):
        """What `_add_plain` and `_plain_numpy` add alike (counts, bytes, offsets; payload bytes from the
        columns' offsets); the segment's `Acc`."""
        a = self.seg(int(segs[0]))
        payload = recs.key.nbytes + recs.value.nbytes
        h = recs.headers
        if h.count():
            lo, hi = int(h.offsets[0]), int(h.offsets[-1])      # (the header rows of these records)
            payload += int(h.key.offsets[hi] - h.key.offsets[lo]) + int(h.value.offsets[hi] - h.value.offsets[lo])
            a.with_headers += int(np.count_nonzero(h.counts()))
        c0 = int(b["codec"][0])
        name = CODEC_NAMES.get(c0, str(c0))
        a.batches += nb
        a.batch_bytes += stored
        a.payload_bytes += payload
        a.codecs[name] += nb
        a.codec_stored[name] += stored
        a.codec_payload[name] += payload
        a.magics[b["magic"][0].item()] += nb
        t0 = int(b["timestamp_type"][0])
        a.timestamp_types[TIMESTAMP_TYPES.get(t0, str(t0))] += nb
        a.records += len(recs)
        a.first_offset = _min(a.first_offset, first)
        a.last_offset = _max(a.last_offset, last)
        if recs.value.null_count:
            a.tombstones += int(np.count_nonzero(recs.value.is_null()))
        return a

    def _plain_numpy(self, recs, b, segs, is_ctl):
        """`_add_plain` with NumPy (the native pass's twin: columns of any integer type)."""
        codec, magic, tst = np.asarray(b["codec"]), np.asarray(b["magic"]), np.asarray(b["timestamp_type"])
        if segs[0] != segs[-1] or is_ctl.any() or np.asarray(b["is_transactional"], bool).any():
            return False
        if not ((codec == codec[0]).all() and (magic == magic[0]).all() and (tst == tst[0]).all()
                and (segs == segs[0]).all()):
            return False
        a = self._plain_common(recs, b, len(segs), segs, int(np.asarray(b["size"], np.int64).sum()),
                               int(np.asarray(b["base_offset"], np.int64).min()),
                               int(np.asarray(b["last_offset"], np.int64).max()))
        if len(recs):
            ts = np.asarray(recs.timestamp, np.int64)
            lo, hi = int(ts.min()), int(ts.max())
            if lo >= 0:                       # (every record stamped: the usual chunk)
                a.first_ts, a.last_ts = _min(a.first_ts, lo), _max(a.last_ts, hi)
            else:
                a.no_timestamp += int(np.count_nonzero(ts < 0))
                good = ts[ts >= 0]
                if len(good):
                    a.first_ts = _min(a.first_ts, int(good.min()))
                    a.last_ts = _max(a.last_ts, int(good.max()))
        pid = np.asarray(b["producer_id"], np.int64)
        a.producers.update(_distinct(pid[pid >= 0]))
        if magic[0] >= 2:
            ep = np.asarray(b["partition_leader_epoch"], np.int64)
            lo, hi = int(ep.min()), int(ep.max())
            a.epochs = (lo, hi) if a.epochs is None else (min(a.epochs[0], lo), max(a.epochs[1], hi))
        return True

    def note_problems(self, report, seen=0, on_problem=None):
        """The `Problem` s of ``report[seen:]`` (a read's report entries), the bytes of skipped
        stretches counted in their segments; ``on_problem(problem)`` for each. Returns
        ``(len(report), problems)``."""
        out = []
        for e in report[seen:]:
            p = report_problem(e)
            if p is None:
                continue
            if p.severity == "error" and p.position is not None and p.end is not None:
                base = segment_base(e.file) if e.file else None
                if base is not None and base in self.segments:
                    self.segments[base].skipped_bytes += p.end - p.position
            out.append(p)
            if on_problem is not None:
                on_problem(p)
        return len(report), out


#: how the figures read a partition: every batch (salvaging, CRCs checked, control records included)
STATS_READ = ReadOptions(max_bytes=CHUNK_BYTES, keep_empty=True, errors="salvage", verify_crc=True,
                         include_control=True)


def partition_stats(part, *, on_chunk=None, on_problem=None, on_counted=None, max_bytes=CHUNK_BYTES, read=None):
    """Per-segment figures of a partition (`kafkafmt.log._discovery.Partition`), from its log start offset.

    Every batch is read (salvaging, CRCs checked, control records included); ``on_chunk(records)``
    sees each chunk as it is read (progress, timelines), ``on_counted(nbytes, nrecords)`` the batch bytes and
    records (control ones included) counted as they are, ``on_problem(problem)`` each problem found.
    ``read``: ``(chunks, report)`` of the partition's read with `STATS_READ` when under way already
    (``kafkafmt.read.iter_partitions_with(partitions, STATS_READ)`` reads many small ones in one pass: their
    figures are then taken from the whole pass at once, and their chunks are not made unless ``on_chunk``
    asks for them). Returns ``(segments, problems)``: ``{base offset: Acc}`` in offset order (every segment
    listed, empty ones too) and the `Problem` s of the read."""
    if read is None:
        report = []
        chunks = iter_log_dir_with(part, STATS_READ.replace(max_bytes=max_bytes), report=report)
    else:
        chunks, report = read
    counted, finish = counting_stats(part, chunks, report, on_chunk=on_chunk, on_problem=on_problem,
                                     on_counted=on_counted, max_bytes=max_bytes)
    if on_chunk is not None or bulk_figures(chunks) is None:
        for _ in counted:
            pass
    return finish()


def reads_alike(part, segments=None):
    """Whether a partition's `STATS_READ` reads what a read of it from offset 0 reads (the checks'): no log
    start offset past its first segment's base offset. Such a read gives the figures and the checks at once
    (`counting_stats`)."""
    segments = part.list_segments() if segments is None else segments
    return part.log_start_offset is None or not segments or part.log_start_offset <= segments[0].base_offset


def counting_stats(part, chunks, report, *, on_chunk=None, on_problem=None, on_counted=None, max_bytes=CHUNK_BYTES):
    """`partition_stats` of a read that another consumer drives (the checks of `kafkafmt.report.checks`, on
    the same chunks when `reads_alike`): returns ``(counted, finish)`` -- ``counted`` yields the chunks of
    ``chunks`` as it counts them (with ``report``, the read's report entries), ``finish()``, once they are
    all through, gives what `partition_stats` returns. A partition read in one pass with others
    (`kafkafmt.log.UnitChunks`) is counted from the whole pass at once (`bulk_figures`)."""
    ps = PartitionStats()
    sizes = {}
    segments = part.list_segments()
    at_once = bulk_figures(chunks)
    counted_at_once = {} if at_once is None else dict(at_once)
    for seg in segments:
        a = counted_at_once.pop(seg.base_offset, None)
        if a is None:
            ps.seg(seg.base_offset)
        else:
            ps.segments[seg.base_offset] = a
        sizes[seg.base_offset] = seg.size
    ps.segments.update(counted_at_once)      # (none: its read's segments are the listed ones)
    for _, a in at_once or ():
        if on_counted is not None:
            on_counted(a.batch_bytes, a.records + a.control_records)
    state = {"seen": 0, "problems": []}

    def counted():
        for chunk in chunks:
            if at_once is None:
                ps.add(chunk)
                if on_counted is not None:
                    on_counted(chunk.stored_bytes, len(chunk))
            if on_chunk is not None:
                on_chunk(chunk)
            state["seen"], found = ps.note_problems(report, state["seen"], on_problem)
            state["problems"] += found
            yield chunk

    def finish():
        problems = state["problems"] + ps.note_problems(report, state["seen"], on_problem)[1]
        start = part.earliest(segments) if part.log_start_offset is not None else None
        for base, a in ps.segments.items():
            a.file_bytes = sizes.get(base, 0)
            if start is not None and a.first_offset is not None and a.first_offset < start:
                a.first_offset = start      # the log start lies inside a batch (DeleteRecords)
        if start is not None and segments and start > segments[0].base_offset:
            _count_below(part, start, ps, max_bytes)
        return ps.segments, problems
    return counted(), finish


#: whether the figures of partitions read in one pass are taken from the whole pass at once (`bulk_figures`; a
#: test turns it off -- ``BULK_FIGURES[0] = False`` -- to compare them with the chunks' own)
BULK_FIGURES = [True]


def bulk_figures(chunks):
    """The figures of a partition read in one pass with others (``chunks`` a `kafkafmt.log.UnitChunks` not yet
    started), taken with NumPy from the whole pass at once (`piece_figures`) -- what `PartitionStats.add` of its
    chunks gives -- as ``[(segment base offset, Acc)]`` in log order; None for any other read, and for a
    partition with control or transactional batches (its transactions are followed chunk by chunk)."""
    if not BULK_FIGURES[0] or not isinstance(chunks, UnitChunks) or chunks.started:
        return None
    memo = chunks.piece.memo
    if "figures" not in memo:
        memo["figures"] = piece_figures(chunks.piece)
    return memo["figures"][chunks.index]


def _signed_byte(values):
    return [v - 256 if v >= 128 else v for v in values]


def _per_task(task_of_batch, col, *weights):
    """The distinct (task, value) pairs of a batch column (small integers) in order: tasks, values, the batches of
    each pair and the sums of ``weights`` over them (lists)."""
    pair = task_of_batch * 256 + (np.asarray(col, np.int64) & 0xFF)
    uniq, inv = np.unique(pair, return_inverse=True)
    sums = [np.bincount(inv, weights=w, minlength=len(uniq)).astype(np.int64).tolist() for w in weights]
    return ((uniq >> 8).tolist(), _signed_byte((uniq & 0xFF).tolist()),
            np.bincount(inv, minlength=len(uniq)).tolist(), *sums)


_INT64 = np.iinfo(np.int64)


def piece_figures(piece):
    """The figures of each task (segment) of a `kafkafmt.log.BulkPiece`, with NumPy over the whole piece: per
    unit, ``[(segment base offset, Acc)]`` (None for a unit with control or transactional batches, or when its
    key, value or header columns are not contiguous binary)."""
    recs = piece.records
    n_units = len(piece.units)
    key, value, headers = (recs.decoded(n) for n in ("key", "value", "headers"))
    if not (isinstance(key, BinaryColumn) and isinstance(value, BinaryColumn) and isinstance(headers, Headers)
            and isinstance(headers.key, BinaryColumn) and isinstance(headers.value, BinaryColumn)):
        return [None] * n_units
    b = recs.batches
    E, RE = piece.task_edges, piece.record_edges
    n_tasks = len(E) - 1
    out = [[] for _ in range(n_units)]
    if not n_tasks:
        return out
    nb = int(E[-1])
    task_of_batch = np.repeat(np.arange(n_tasks, dtype=np.int64), np.diff(E))
    special = np.asarray(b["is_control"], bool) | np.asarray(b["is_transactional"], bool)
    unit_special = np.zeros(n_units, bool)
    unit_special[piece.task_unit[task_of_batch[special]]] = True

    def per_task_sum(cum, edges):
        return (cum[edges[1:]] - cum[edges[:-1]]).tolist()

    def cum(x):
        c = np.zeros(len(x) + 1, np.int64)
        np.cumsum(x, out=c[1:])
        return c

    size = np.asarray(b["size"], np.int64)
    # payload bytes to each record (key, value, header keys and values), from the columns' offsets
    ko, vo = np.asarray(key.offsets, np.int64), np.asarray(value.offsets, np.int64)
    ho = np.asarray(headers.offsets, np.int64)
    hko, hvo = np.asarray(headers.key.offsets, np.int64), np.asarray(headers.value.offsets, np.int64)
    payload_at = (ko - ko[0]) + (vo - vo[0]) + (hko[ho] - hko[ho[0]]) + (hvo[ho] - hvo[ho[0]])
    bidx = np.asarray(recs.batch_index, np.int64)
    batch_rec = cum(np.bincount(bidx, minlength=nb)) if len(bidx) else np.zeros(nb + 1, np.int64)
    batch_payload = payload_at[batch_rec[1:]] - payload_at[batch_rec[:-1]]
    lo = E[:-1]
    first = np.minimum.reduceat(np.asarray(b["base_offset"], np.int64), lo).tolist()
    last = np.maximum.reduceat(np.asarray(b["last_offset"], np.int64), lo).tolist()
    batch_bytes = per_task_sum(cum(size), E)
    payload = per_task_sum(payload_at, RE)
    records = np.diff(RE).tolist()
    ts = np.asarray(recs.timestamp, np.int64)
    stamped = ts >= 0
    unstamped = per_task_sum(cum(~stamped), RE)
    ts_lo, ts_hi = [None] * n_tasks, [None] * n_tasks
    filled = np.flatnonzero(RE[1:] > RE[:-1])
    if len(filled):
        least = np.minimum.reduceat(np.where(stamped, ts, _INT64.max), RE[:-1][filled]).tolist()
        most = np.maximum.reduceat(np.where(stamped, ts, -1), RE[:-1][filled]).tolist()
        for t, l, m in zip(filled.tolist(), least, most):
            if m >= 0:
                ts_lo[t], ts_hi[t] = l, m
    tombstones = per_task_sum(cum(value.is_null()), RE) if value.null_count else None
    with_headers = per_task_sum(cum(np.diff(ho) > 0), RE)
    magic = np.asarray(b["magic"], np.int64)
    v2 = magic >= 2
    epoch = np.asarray(b["partition_leader_epoch"], np.int64)
    has_v2 = per_task_sum(cum(v2), E)
    e_lo = np.minimum.reduceat(np.where(v2, epoch, _INT64.max), lo).tolist()
    e_hi = np.maximum.reduceat(np.where(v2, epoch, _INT64.min), lo).tolist()
    accs = []
    for t in range(n_tasks):
        a = Acc()
        a.segments = 1
        a.batches = int(E[t + 1] - E[t])
        a.batch_bytes, a.payload_bytes, a.records = batch_bytes[t], payload[t], records[t]
        a.first_offset, a.last_offset = first[t], last[t]
        a.first_ts, a.last_ts, a.no_timestamp = ts_lo[t], ts_hi[t], unstamped[t]
        a.with_headers = with_headers[t]
        if tombstones is not None:
            a.tombstones = tombstones[t]
        if has_v2[t]:
            a.epochs = (e_lo[t], e_hi[t])
        accs.append(a)
    for t, c, n, stored, pay in zip(*_per_task(task_of_batch, b["codec"], size, batch_payload)):
        name = CODEC_NAMES.get(c, str(c))
        a = accs[t]
        a.codecs[name] += n
        a.codec_stored[name] += stored
        a.codec_payload[name] += pay
    for t, m, n in zip(*_per_task(task_of_batch, magic)):
        accs[t].magics[m] += n
    for t, v, n in zip(*_per_task(task_of_batch, b["timestamp_type"])):
        accs[t].timestamp_types[TIMESTAMP_TYPES.get(v, str(v))] += n
    pid = np.asarray(b["producer_id"], np.int64)
    some = pid >= 0
    if some.any():
        pt, pp = task_of_batch[some], pid[some]
        order = np.lexsort((pp, pt))
        pt, pp = pt[order], pp[order]
        new = np.ones(len(pt), bool)
        new[1:] = (pt[1:] != pt[:-1]) | (pp[1:] != pp[:-1])
        for t, p in zip(pt[new].tolist(), pp[new].tolist()):
            accs[t].producers.add(p)
    segment = piece.segment[lo].tolist()
    for t, (u, base) in enumerate(zip(piece.task_unit.tolist(), segment)):
        out[u].append((base, accs[t]))
    return [None if unit_special[u] else out[u] for u in range(n_units)]


def _count_below(part, start, ps, max_bytes):
    """Count the data records on disk below the log start offset ``start`` (not served), per segment."""
    for chunk in iter_log_dir(part, start_offset=0, end_offset=start, max_bytes=max_bytes, errors="salvage",
                              verify_crc=False, columns=["offset"]):
        if not len(chunk):
            continue
        b = chunk.batches
        segs = np.asarray(b["segment"], np.int64) if "segment" in b.columns else np.zeros(len(b), np.int64)
        rec_segs = segs[np.asarray(chunk.batch_index, np.int64)][np.asarray(chunk.offset, np.int64) < start]
        for s, n in zip(*np.unique(rec_segs, return_counts=True)):
            ps.seg(int(s)).below_log_start += int(n)


def below_log_start_text(n):
    """How every command says that records sit below log start offsets."""
    return (f"{n:,} record{'s' if n != 1 else ''} below the log start offset: deleted (DeleteRecords) but still on "
            f"disk, not served, not counted")


def totals(segments):
    """One `Acc` of several (the segments of a partition, the partitions of a topic)."""
    t = Acc()
    for a in segments.values() if isinstance(segments, dict) else segments:
        t.merge(a)
    return t
