"""The checks of ``kafkafmt verify`` (and of `kafkafmt.report`), on partitions of a log dir.

Checked, per partition:

* every batch: framing, CRC (crc32c for v2, crc32 for v0/v1, inner messages of compressed
  wrappers too), decompression, record structure -- a corrupt stretch is reported with its byte
  range and reading resumes at the next intact batch, so every problem is found, not only the first;
* a final batch cut short (an unclean shutdown) is an error, a zero-filled tail (preallocated
  segment) a warning;
* offsets: each batch's base offset above the previous batch's last offset, across segments too;
  last offset >= base offset; offsets not below the segment's base offset (its file name); record
  offsets increasing and inside their batch;
* ``.index``, ``.timeindex``, ``.txnindex``: as ``kafka-dump-log --verify-index-only`` and Kafka's
  sanity checks (`kafkafmt.log.sidefiles`);
* producer state ``.snapshot`` files, ``leader-epoch-checkpoint``, ``partition.metadata``: readable,
  CRCs, epochs increasing.

A `Checker` says each `Problem` once, to its ``on_problem`` callback, and counts what it read.
"""
from __future__ import annotations

import functools

import numpy as np

from kafkafmt.log import INDEX_SUFFIX, LOG_SUFFIX, TIMEINDEX_SUFFIX, sidefiles
from kafkafmt.errors import KafkafmtError
from kafkafmt.read import ReadOptions, iter_log_dir_with
from kafkafmt.log import SIDE_FILE_KINDS, ReportKind, file_kind, is_leftover_file, same_bytes, segment_base
from kafkafmt.record import Table
from kafkafmt.storage import will_read_listed
from kafkafmt._native.plain import plain_checks
from kafkafmt.report.figures import CHUNK_BYTES, PLAIN_NATIVE
from kafkafmt.report.problems import Problem, report_problem

__all__ = ["Checker", "SegmentInfo", "Twins", "twin_info", "concat_batches", "check_partition", "will_check", "CHECK_READ",
           "PARTITION_CHECK_READ", "topic_id_problems"]

BATCH_COLUMNS = ("position", "size", "base_offset", "last_offset", "max_timestamp", "producer_id", "is_control",
                 "magic", "crc")


def concat_batches(tables):
    """Batch tables of several chunks as one (the columns they all have), or None."""
    tables = [t for t in tables if t.columns]
    if not tables:
        return None
    names = [c for c in tables[0].columns if all(c in t.columns for t in tables[1:])]
    return Table.concat([Table({c: t[c] for c in names}) for t in tables])


#: how the checks read a log: every batch's offsets and timestamps, salvaging, CRCs checked, control records too
CHECK_READ = ReadOptions(errors="salvage", verify_crc=True, include_control=True, columns=["offset", "timestamp"],
                         max_bytes=CHUNK_BYTES)
#: how they read a partition: every byte of its files, also below a log start offset that DeleteRecords moved
PARTITION_CHECK_READ = CHECK_READ.replace(start_offset=0, keep_empty=True)


def _read_from_zero(part, report, options):
    """Every byte of a partition's files (`PARTITION_CHECK_READ`)."""
    return iter_log_dir_with(part, options.replace(start_offset=0, keep_empty=True), report=report)


#: the lowest base offset a batch may have when nothing bounds it (`plain_checks`)
_INT64_MIN = int(np.iinfo(np.int64).min)
#: the files of a partition folder beside its segments that the checks read
_OTHER_FILES = ("producer-snapshot", "leader-epoch", "partition-metadata")


@functools.lru_cache(maxsize=4096)
def _other_kind(name):
    """The kind of a file of a partition folder that the checks read beside its segments (`_OTHER_FILES`),
    else None (names repeat from folder to folder: kept)."""
    kind = file_kind(name)
    return kind if kind in _OTHER_FILES and not is_leftover_file(name) else None


def _side_file(part, name, full):
    """A file of a partition folder for the side-file readers: its path (local) or its bytes (as listed)."""
    if part.storage.is_local:
        return full
    path = part.storage.join(part.folder, name)
    return _listed_bytes(part.storage, _listed(part).get(path), path)


def _listed(part):
    """{path: Entry} of the files of a partition folder's listing ({} without one)."""
    return {e.path: e for e in part.listing or () if not e.is_dir}


def _listed_bytes(storage, entry, path):
    """A whole file: by its listing's size and version when listed (an object store may hold it already)."""
    return storage.read_listed(path, entry.size, entry.version) if entry is not None else storage.read_bytes(path)


def will_check(parts):
    """Tell the storages holding ``parts`` (in the order they are checked) which side files the checks will read
    -- the segments' indexes, producer snapshots, leader-epoch checkpoints, ``partition.metadata``
    (`kafkafmt.storage.Storage.will_read`: object stores fetch them ahead, a few at a time; a local disk is told
    to read them into its page cache)."""
    wanted, local = {}, {}
    for pd in parts:
        if pd.listing is None:
            continue
        if pd.storage.is_local:
            local.setdefault(pd.storage, []).append(pd.listing)     # (their files named by the storage's thread)
            continue
        listed = _listed(pd)
        items = wanted.setdefault(pd.storage, [])
        for seg in pd.list_segments():
            for kind in SIDE_FILE_KINDS:
                e = listed.get(getattr(seg, kind)) if seg.remote is None and seg.has(kind) else None
                if e is not None:
                    items.append((e.path, e.size, e.version))
        for e in listed.values():
            if file_kind(e.name) in _OTHER_FILES and not is_leftover_file(e.name):
                items.append((e.path, e.size, e.version))
    for storage, items in wanted.items():
        storage.will_read(items)
    for storage, listings in local.items():
        will_read_listed(storage, listings, _is_side_file)


def _is_side_file(name):
    """A local folder's file but its segments' logs and the broker's leftovers: the side files the checks read (and
    any other file, told about for nothing)."""
    return not name.endswith(LOG_SUFFIX) and not is_leftover_file(name)


def _load(data):
    return data() if callable(data) else data


class SegmentInfo:
    """What the checks of a segment's read keep of it: its batch tables (``tables``: every column the read
    gives), its control records (``controls``: (offset, type, producer id)), the first record of each control
    batch (``markers``: {position: (type, coordinator epoch, timestamp)}), the byte ranges skipped as
    damaged, ``reported`` -- the read reported something about its file -- and, once its side files are
    checked, ``sound``: {".index" / ".timeindex": entries} of its index files found sound."""

    def __init__(self, base, log, size=None):
        self.base = base
        self.log = log
        self.size = size
        self.tables = []
        self.controls = []          # (offset, type, producer_id)
        self.markers = {}           # {position: (type, coordinator_epoch, timestamp)}
        self.sound = {}             # {".index" / ".timeindex": entries} of the index files found sound
        self.skipped = []           # (start, end)
        self.reported = False

    def table(self):
        """Its batches as one `Table` (None when it has none)."""
        if len(self.tables) == 1:
            return self.tables[0]
        return concat_batches(self.tables)

    def batches(self):
        t = self.table()
        if t is None:
            return {c: np.zeros(0, np.int64) for c in BATCH_COLUMNS}
        return {c: np.asarray(t[c]) for c in BATCH_COLUMNS}


def twin_info(info, segment):
    """The `SegmentInfo` of ``segment`` (a `Segment`) whose bytes are those of the segment ``info`` was read
    from: the same batches, control records and markers, under its own name (its side files are its own)."""
    out = SegmentInfo(segment.base_offset, segment.url, segment.size)
    out.tables, out.controls, out.markers = list(info.tables), list(info.controls), dict(info.markers)
    out.skipped, out.reported = list(info.skipped), info.reported
    return out


class Checker:
    """Runs the checks and collects the problems; ``on_problem(problem)`` hears each new one (a
    problem said twice is said once), ``on_chunk(records)`` each chunk read (progress).

    ``problems`` lists them in the order found; ``errors`` / ``warnings`` count them; ``n_partitions``,
    ``n_segments``, ``n_batches``, ``n_records``, ``n_files``, ``bytes`` what was checked -- every byte,
    but ``n_records`` counts the records a consumer is served (from the log start offset, as every
    command counts them) and ``n_below_log_start`` those below it (DeleteRecords: still on disk).
    ``on_segment(info)`` hears each segment of a partition checked (its `SegmentInfo`: what its read gave)."""

    def __init__(self, on_problem=None, on_chunk=None, on_segment=None):
        self.on_problem = on_problem
        self.on_chunk = on_chunk
        self.on_segment = on_segment
        self.problems = []
        self.errors = 0
        self.warnings = 0
        self.n_partitions = self.n_segments = self.n_batches = self.n_records = self.n_files = 0
        self.n_below_log_start = 0      # records checked below a log start offset (not served, not in n_records)
        self.n_copies = 0               # copies of partitions checked beside the copy read (not counted again)
        self.epochs = None              # {path: entries} of the leader-epoch-checkpoints found sound, when kept
        self.topic_ids = None           # {key of a partition folder: (path, topic id)} of the partition.metadata
        #                                 files found sound, when kept (`topic_id_problems`)
        self.bytes = 0
        self._seen = set()
        self._listed = {}               # {path: Entry} of the partition folder being checked
        self.n_said = 0                 # problems said, each time (`add`: a problem said twice is counted twice)
        self.logged = None              # {base offset: SegmentInfo} of the last partition whose log read found
        #                                 nothing wrong, else None (`partition`)

    def add(self, p: Problem):
        """Say a problem (once)."""
        self.n_said += 1
        key = p.text()
        if key in self._seen:
            return
        self._seen.add(key)
        if p.severity == "error":
            self.errors += 1
        else:
            self.warnings += 1
        self.problems.append(p)
        if self.on_problem is not None:
            self.on_problem(p)

    def error(self, file, message, position=None, offset=None, end=None):
        self.add(Problem("error", file, message, position, end, offset))

    def warning(self, file, message, position=None):
        self.add(Problem("warning", file, message, position))

    # -- partitions --------------------------------------------------------------------------------
    def partition(self, pd, read=None, logged=None):
        """Check a partition (`Partition`): its log, its segments' side files, its other files. ``read``:
        ``(chunks, report)`` of its read with `PARTITION_CHECK_READ` when under way already
        (``kafkafmt.read.iter_partitions_with`` reads many small partitions in one pass). ``logged``: what
        the read of another copy whose segments hold the very same bytes found, nothing wrong in it
        (`Checker.logged` of that copy): its log is not read again, its side files are checked against
        those batches (`twin_info`)."""
        self.n_partitions += 1
        report = []
        self._listed = {} if pd.storage.is_local else _listed(pd)
        segments = pd.list_segments(report)
        for e in report:
            p = report_problem(e)
            if p is not None:
                self.add(p)
        infos = {s.base_offset: SegmentInfo(s.base_offset, s.url, s.size) for s in segments}
        self.n_segments += len(segments)
        self.bytes += sum(s.size for s in segments)
        # every byte of the files, also below a log start offset that DeleteRecords moved (an explicit
        # start below it reads what is still on disk)
        if logged is not None:
            infos = {s.base_offset: twin_info(logged[s.base_offset], s) for s in segments}
        else:
            said = self.n_said
            self.read_log(_read_from_zero, (pd,), infos,
                          log_start=pd.earliest(segments) if pd.log_start_offset is not None else None, read=read)
            self.logged = infos if self.n_said == said and not any(i.reported or i.skipped
                                                                    for i in infos.values()) else None
        for s in segments:
            self.side_files(s, infos[s.base_offset])
            if self.on_segment is not None:
                self.on_segment(infos[s.base_offset])
        if pd.segments is None:       # a folder (not tiered uploads): its other files
            for name, full in pd.files():
                kind = _other_kind(name)
                if kind is not None:
                    got = self.other_file(full, kind, functools.partial(_side_file, pd, name, full))
                    if got is not None and self.topic_ids is not None:
                        self.topic_ids[pd.key] = (full, got)

    def copy(self, pd, read=None, logged=None):
        """Check a copy of a partition that is not read (another copy is): every byte and side file of it,
        its problems said as any partition's; its records are not counted (the copy read counts them), its
        bytes and files are.

        Parameters
        ----------
        pd : Partition
            The copy (`kafkafmt.log.Found.unread`).
        read : tuple, optional
            ``(chunks, report)`` of its read with `PARTITION_CHECK_READ` when under way already (as
            `partition`'s).
        logged : dict, optional
            As `partition`'s: what the read of a copy holding the same bytes found.
        """
        sub = Checker(on_problem=self.add, on_segment=self.on_segment)
        sub.epochs = self.epochs
        sub.topic_ids = self.topic_ids
        sub.partition(pd, read=read, logged=logged)
        self.n_copies += 1
        self.n_segments += sub.n_segments
        self.bytes += sub.bytes
        self.n_files += sub.n_files

    def read_log(self, source, source_args, infos, file_label=None, log_start=None, read=None):
        """Stream the records (salvaging) and check batches and offsets; fills infos per segment.
        ``source(*source_args, report, options)`` gives the chunks, read with ``options`` (`CHECK_READ`),
        unless ``read`` gives them: ``(chunks, report)``. Records below ``log_start`` are checked and
        counted apart (`n_below_log_start`)."""
        if read is None:
            report = []
            chunks = source(*source_args, report, CHECK_READ)
        else:
            chunks, report = read
        seen = 0
        prev_last = None      # last offset of the previous batch
        prev_file = None
        prev_seg = None       # the segment of the batch holding prev_last
        overlaps = set()      # (earlier segment, later segment) whose offsets overlap
        for chunk in chunks:
            seen = self._report(report, seen, infos, file_label)
            b = chunk.batches
            nb = len(b)
            if not nb:
                continue
            done = self._plain_chunk(chunk, b, infos, file_label, log_start, prev_last)
            if done is not None:              # (the usual chunk, checked at once: nothing wrong in it)
                prev_last, prev_file, prev_seg = done
                if self.on_chunk is not None:
                    self.on_chunk(chunk)
                continue
            segs = np.asarray(b["segment"], np.int64) if "segment" in b.columns else np.zeros(nb, np.int64)
            base = np.asarray(b["base_offset"], np.int64)
            last = np.asarray(b["last_offset"], np.int64)
            pos = np.asarray(b["position"], np.int64)
            # batches read from another copy (a stretch this one holds damaged: said as a problem) are counted
            # but not checked against this copy's files (their own copy's check does that); batches the next
            # segment holds again (said) are this file's, for its indexes, but not in the offset sequence
            own = ~np.asarray(b["from_copy"], bool) if "from_copy" in b.columns else np.ones(nb, bool)
            again = np.asarray(b["duplicate"], bool) if "duplicate" in b.columns else np.zeros(nb, bool)
            if again.any() and file_label is None:      # the read took them from the next segment: blamed below
                bases = sorted(infos)
                for seg in np.unique(segs[again]).tolist():
                    later = [x for x in bases if x > seg]
                    if seg in infos and later:
                        overlaps.add((seg, later[0]))
            order = np.lexsort((pos, segs))
            order = order[own[order] & ~again[order]]
            # (each batch's checks at once; the loop below says the problems, in order, when there are any)
            lo_o, la_o, seg_o = base[order], last[order], segs[order]
            before = np.maximum.accumulate(la_o) if len(order) else la_o
            if prev_last is not None:
                before = np.maximum(before, prev_last)
            clean = not len(order) or not (
                (la_o < lo_o).any() or (lo_o[1:] <= before[:-1]).any()
                or (prev_last is not None and lo_o[0] <= prev_last)
                or (file_label is None and any(s in infos for s in np.unique(seg_o[lo_o < seg_o]).tolist())))
            if clean and len(order):
                prev_last = int(before[-1])
                prev_file = self._file_of(int(seg_o[-1]), infos, file_label)
                prev_seg = int(seg_o[-1])
            for i in ([] if clean else order.tolist()):
                seg = int(segs[i])
                info = infos.get(seg)
                f = self._file_of(seg, infos, file_label)
                if last[i] < base[i]:
                    self.error(f, f"batch last offset {int(last[i])} is below its base offset {int(base[i])}",
                               int(pos[i]), int(base[i]))
                if info is not None and file_label is None and base[i] < seg:
                    self.error(f, f"batch base offset {int(base[i])} is below the segment's base offset {seg} "
                                  f"(its file name)", int(pos[i]), int(base[i]))
                if prev_last is not None and base[i] <= prev_last and file_label is None and \
                        prev_seg != seg and prev_seg in infos and info is not None:
                    overlaps.add((prev_seg, seg))          # said once per pair, the right file blamed, below
                elif prev_last is not None and base[i] <= prev_last:
                    where = "the previous batch" if prev_file == f else f"the last batch of {prev_file}"
                    self.error(f, f"offsets go backwards: batch base offset {int(base[i])} is not above the "
                                  f"last offset {prev_last} of {where}", int(pos[i]), int(base[i]))
                if prev_last is None or int(last[i]) > prev_last:
                    prev_last, prev_seg = int(last[i]), seg
                prev_file = f
            # records: increasing and inside their batch
            if len(chunk):
                offs = np.asarray(chunk.offset, np.int64)
                bidx = np.asarray(chunk.batch_index, np.int64)
                outside = np.flatnonzero(((offs < base[bidx]) | (offs > last[bidx])) & own[bidx])
                for r in outside[:20].tolist():
                    i = int(bidx[r])
                    self.error(self._file_of(int(segs[i]), infos, file_label),
                               f"record offset {int(offs[r])} is outside its batch's offsets "
                               f"{int(base[i])}..{int(last[i])}", int(pos[i]), int(offs[r]))
                same = bidx[1:] == bidx[:-1]
                back = np.flatnonzero(same & (np.diff(offs) <= 0) & own[bidx[1:]]) + 1
                for r in back[:20].tolist():
                    i = int(bidx[r])
                    self.error(self._file_of(int(segs[i]), infos, file_label),
                               f"record offset {int(offs[r])} does not increase within its batch (after "
                               f"{int(offs[r - 1])})", int(pos[i]), int(offs[r]))
                self._count_records(chunk, b, log_start)
            self.n_batches += nb - int(again.sum())
            # per segment: batch tables and control records for the index checks
            ctl = chunk.controls
            whole = bool(own.all() and (segs == segs[0]).all())     # (the usual chunk: one segment's batches)
            for seg in [int(segs[0])] if whole else np.unique(segs[own]).tolist():
                info = infos.get(seg)
                if info is None:
                    continue
                info.tables.append(b if whole else b[(segs == seg) & own])
                if len(ctl):
                    cb = np.asarray(ctl["batch_index"], np.int64)
                    cm = segs[cb] == seg
                    info.controls += list(zip(np.asarray(ctl["offset"])[cm].tolist(), np.asarray(ctl["type"])[cm].tolist(),
                                              np.asarray(b["producer_id"])[cb[cm]].tolist()))
                    first = np.flatnonzero(cm & np.concatenate(([True], cb[1:] != cb[:-1])))
                    for r in first.tolist():
                        info.markers.setdefault(int(pos[cb[r]]), (int(ctl["type"][r]), int(ctl["coordinator_epoch"][r]),
                                                                   int(ctl["timestamp"][r])))
            if self.on_chunk is not None:
                self.on_chunk(chunk)
        self._report(report, seen, infos, file_label)
        for earlier, later in sorted(overlaps):
            self.overlap(infos[earlier], infos[later])

    def _plain_chunk(self, chunk, b, infos, file_label, log_start, prev_last):
        """`read_log`'s checks of the usual chunk at once: one segment's batches in file order, none read from
        another copy or held again by the next segment, and nothing wrong -- then counted, kept for the side
        files' checks, and ``(prev_last, prev_file, prev_seg)`` returned; else None (`read_log` checks it
        batch by batch and says what is wrong). Told in one native pass (`plain_checks`), or with NumPy
        (`_sound_numpy`) where the columns are of other types."""
        cols = b.columns
        if ("from_copy" in cols and b["from_copy"].any()) or ("duplicate" in cols and b["duplicate"].any()):
            return None
        seg = int(b["segment"][0]) if "segment" in cols else 0
        lowest = seg if file_label is None and seg in infos else _INT64_MIN
        try:
            got = plain_checks(b["segment"], b["position"], b["base_offset"], b["last_offset"],
                               np.asarray(b["is_control"], bool).view(np.uint8), chunk.offset, chunk.batch_index,
                               log_start, prev_last, lowest) if PLAIN_NATIVE[0] and "segment" in cols \
                else self._sound_numpy(chunk, b, log_start, prev_last, lowest)
        except ValueError:              # (columns of other types than the decoder's)
            got = self._sound_numpy(chunk, b, log_start, prev_last, lowest)
        if got is None:
            return None
        last_top, served, below = got
        self.n_records += served
        self.n_below_log_start += below
        self.n_batches += len(b)
        info = infos.get(seg)
        if info is not None:
            info.tables.append(b)
            ctl = chunk.controls
            if len(ctl):
                pos = b["position"]
                cb = np.asarray(ctl["batch_index"], np.int64)
                info.controls += list(zip(np.asarray(ctl["offset"]).tolist(), np.asarray(ctl["type"]).tolist(),
                                          np.asarray(b["producer_id"])[cb].tolist()))
                first = np.flatnonzero(np.concatenate(([True], cb[1:] != cb[:-1])))
                for r in first.tolist():
                    info.markers.setdefault(int(pos[cb[r]]), (int(ctl["type"][r]), int(ctl["coordinator_epoch"][r]),
                                                               int(ctl["timestamp"][r])))
        return last_top, self._file_of(seg, infos, file_label), seg

    @staticmethod
    def _sound_numpy(chunk, b, log_start, prev_last, lowest):
        """`plain_checks` with NumPy (its twin: columns of any integer type)."""
        cols = b.columns
        segs = b["segment"] if "segment" in cols else None
        if segs is not None and not (segs == segs[0]).all():
            return None
        base, last, pos = b["base_offset"], b["last_offset"], b["position"]
        top = np.maximum.accumulate(last)
        if (len(pos) > 1 and not (pos[1:] > pos[:-1]).all()) or (last < base).any() \
                or (len(base) > 1 and (base[1:] <= top[:-1]).any()) \
                or (prev_last is not None and int(base[0]) <= prev_last) or int(base.min()) < lowest:
            return None
        served = below = 0
        n = len(chunk)
        if n:
            offs = np.asarray(chunk.offset, np.int64)
            bidx = np.asarray(chunk.batch_index, np.int64)
            if (n > 1 and not (offs[1:] > offs[:-1]).all()) or (offs < base[bidx]).any() or (offs > last[bidx]).any():
                return None
            ctl = np.asarray(b["is_control"], bool)
            data = ~ctl[bidx] if ctl.any() else None
            if log_start is not None and int(offs[0]) < log_start:
                low = offs < log_start
                below = int((low & data).sum()) if data is not None else int(low.sum())
            served = (int(data.sum()) if data is not None else n) - below
        last_top = int(top[-1]) if prev_last is None else max(int(top[-1]), prev_last)
        return last_top, served, below

    def overlap(self, a, b):
        """Segments ``a`` and ``b`` (`SegmentInfo`, ``b`` read after ``a``) whose offsets overlap: a
        stray copy of part of a segment saved as its own ``<base>.log``. The one whose batches the
        other holds batch for batch (offsets, sizes, CRCs) is the copy and is blamed; segments that
        overlap with other batches are both named."""
        ba, bb = a.batches(), b.batches()
        lo = max(int(ba["base_offset"].min()), int(bb["base_offset"].min()))
        hi = min(int(ba["last_offset"].max()), int(bb["last_offset"].max()))
        rows = [np.flatnonzero((t["last_offset"] >= lo) & (t["base_offset"] <= hi)) for t in (ba, bb)]
        cols = ("base_offset", "last_offset", "size", "crc")
        same = len(rows[0]) == len(rows[1]) and all(np.array_equal(ba[c][rows[0]], bb[c][rows[1]]) for c in cols)
        fix = "; `kafkafmt recover` "
        if not same:
            k = next((j for j in range(min(len(rows[0]), len(rows[1])))
                      if any(ba[c][rows[0][j]] != bb[c][rows[1][j]] for c in cols)), 0)
            at = int(bb["base_offset"][rows[1][k]]) if len(rows[1]) else lo
            self.error(b.log, f"overlaps {a.log}: both hold offsets {lo}..{hi}, in other batches (from offset {at}): "
                              f"compare them{fix}refuses until one is moved aside", 0, at)
        elif len(rows[1]) == len(bb["base_offset"]):
            self.error(b.log, f"overlapping segment: every batch of it (offsets {lo}..{hi}) is also in {a.log}, with "
                              f"the same offsets, sizes and CRCs: a stray copy{fix}removes it", 0, lo)
        elif len(rows[0]) == len(ba["base_offset"]):
            self.error(a.log, f"overlapping segment: every batch of it (offsets {lo}..{hi}) is also in {b.log}, with "
                              f"the same offsets, sizes and CRCs: a stray copy{fix}removes it", 0, lo)
        else:
            at = int(ba["position"][rows[0][0]])
            self.error(a.log, f"overlapping segments: offsets {lo}..{hi} are also at the start of {b.log}, with the "
                              f"same offsets, sizes and CRCs{fix}truncates this one where they begin", at, lo)

    def _count_records(self, chunk, b, log_start):
        """Count a chunk's data records: those a consumer is served, and those below the log start offset."""
        if not len(chunk):
            return
        offs = np.asarray(chunk.offset, np.int64)
        data = ~np.asarray(b["is_control"], bool)[np.asarray(chunk.batch_index, np.int64)]
        below = data & (offs < log_start) if log_start is not None else np.zeros(len(offs), bool)
        self.n_records += int((data & ~below).sum())
        self.n_below_log_start += int(below.sum())

    @staticmethod
    def _file_of(seg, infos, file_label):
        if file_label is not None:
            return file_label
        info = infos.get(seg)
        return info.log if info is not None else "?"

    def _report(self, report, seen, infos, file_label):
        for e in report[seen:]:
            if e.kind in (ReportKind.DUPLICATE, ReportKind.MISMATCH) and segment_base(e.get("file") or "") in infos:
                continue            # a segment the next one holds again: `overlap` says it, on the right file
            p = report_problem(e, file_label)
            if p is None:
                continue
            self.add(p)
            base = segment_base(e.get("file") or "")
            if base in infos and p.position is not None and p.end is not None:
                infos[base].skipped.append((p.position, p.end))
        for e in report[seen:]:
            base = segment_base(e.get("file") or "")
            if base in infos:
                infos[base].reported = True
        return len(report)

    # -- side files of a segment -------------------------------------------------------------------
    def side_bytes(self, seg, kind):
        """A segment's side file (as `Segment.side_bytes`), by its listing's size and version when listed."""
        entry = self._listed.get(getattr(seg, kind)) if seg.remote is None and seg.has(kind) else None
        return seg.side_bytes(kind) if entry is None else _listed_bytes(seg.storage, entry, entry.path)

    def side_files(self, seg, info):
        base, log = seg.base_offset, seg.url
        b = info.batches()
        note = " (after corrupt stretches in the log)" if info.skipped else ""
        has_index, has_time = seg.has("index"), seg.has("timeindex")
        if seg.size and (not has_index or not has_time):
            missing = "/".join(n for n, h in ((INDEX_SUFFIX, has_index), (TIMEINDEX_SUFFIX, has_time)) if not h)
            self.warning(log, f"no {missing} file beside it (a broker rebuilds missing indexes at start-up)")
        if not seg.size and self.emptied_log(seg, log):
            return
        if has_index:
            self.check_index(seg.side_url("index"), base, b, info, note, self.side_bytes(seg, "index"))
        if has_time:
            self.check_timeindex(seg.side_url("timeindex"), base, b, note, self.side_bytes(seg, "timeindex"), info)
        if seg.has("txnindex"):
            self.check_txnindex(seg.side_url("txnindex"), base, info, self.side_bytes(seg, "txnindex"))
        else:
            aborts = [o for o, t, _ in info.controls if t == 0]
            if aborts:
                self.warning(log, f"{len(aborts)} ABORT markers (first at offset {aborts[0]}) but no .txnindex "
                                  f"file (the broker rebuilds it at start-up)")

    def _insane(self, path, data, suffix, why):
        """Say what Kafka's own sanity check of an index file finds (``why``: as the broker reads it, by its
        length)."""
        size = 8 if suffix == INDEX_SUFFIX else 12
        self.error(path, f"{why}; the broker rebuilds the segment's indexes at start-up",
                   len(data) // size * size - size if len(data) % size == 0 else len(data) // size * size)

    def emptied_log(self, seg, log):
        """An empty ``.log`` beside indexes that hold entries: one error (its records are gone; every
        index entry points at nothing), and True -- the indexes' entries are not listed one by one."""
        held, last = [], None
        for kind, read, what in (("index", sidefiles.read_index, "index"),
                                 ("timeindex", sidefiles.read_timeindex, "time index")):
            if not seg.has(kind):
                continue
            try:
                offsets = read(self.side_bytes(seg, kind), seg.base_offset)["offset"]
            except (KafkafmtError, OSError, ValueError):
                return False            # an unreadable index: the usual checks say why
            if len(offsets):
                held.append(f"{len(offsets)} {what} entries")
                last = max(int(offsets[-1]), last if last is not None else int(offsets[-1]))
        if not held:
            return False
        self.n_files += len(held)
        self.error(log, f"the .log is empty (0 bytes) while its indexes hold {' and '.join(held)} (up to offset "
                        f"{last}): the records they point at are gone", 0)
        return True

    def _index_entries(self, path, base, data, kind):
        """(entries, sanity problem or None) of an ``.index`` or ``.timeindex`` file (``kind``: its suffix),
        or None when it cannot be read (the error is said)."""
        self.n_files += 1
        try:
            data = _load(data)
            entries, insane = sidefiles.read_index_file(data, kind, base)
        except (KafkafmtError, OSError, ValueError) as exc:
            self.error(path, _reason(exc), getattr(exc, "position", None))
            return None
        if insane is not None:
            self._insane(path, data, kind, insane)
        return entries, insane

    def _plainly_sound(self, suffix, base, b, info, data):
        """Whether an index file is plainly sound (`sidefiles.sound_index_entries`: one native pass): then
        counted, and its entries kept in ``info.sound``, with nothing to say."""
        if info is None or info.skipped:
            return False
        entries = sidefiles.sound_index_entries(data, suffix, base, b)
        if entries is None:
            return False
        self.n_files += 1
        info.sound[suffix] = entries
        return True

    def check_index(self, path, base, b, info, note="", data=None):
        if self._plainly_sound(INDEX_SUFFIX, base, b, info, data):
            return
        read = self._index_entries(path, base, data, INDEX_SUFFIX)
        if read is None:
            return
        entries, insane = read
        if info.skipped:
            inside = np.zeros(len(entries), bool)
            for s, e in info.skipped:
                inside |= (entries["position"] >= s) & (entries["position"] < e)
            entries = entries[~inside]
        problems = sidefiles.check_index(entries, b, base)
        self.index_problems(path, problems, 8, note, "index")
        if not problems and insane is None and not info.skipped:
            info.sound[INDEX_SUFFIX] = entries

    def check_timeindex(self, path, base, b, note="", data=None, info=None):
        if self._plainly_sound(TIMEINDEX_SUFFIX, base, b, info, data):
            return
        read = self._index_entries(path, base, data, TIMEINDEX_SUFFIX)
        if read is None:
            return
        entries, insane = read
        problems = sidefiles.check_timeindex(entries, b, base)
        self.index_problems(path, problems, 12, note, "time index")
        if info is not None and not problems and insane is None and not info.skipped:
            info.sound[TIMEINDEX_SUFFIX] = entries

    def index_problems(self, path, problems, entry_size, note, what):
        """The problems of an index file (`sidefiles.IndexProblem` s), one error per cause: many
        entries wrong for one reason (an emptied ``.log`` beside a full index) are said once, with
        how many, which, and the first of them."""
        by_cause = {}
        for problem in problems:
            by_cause.setdefault(problem.cause, []).append(problem)
        for cause, same in by_cause.items():
            first = same[0]
            if len(same) == 1:
                self.error(path, first + note, first.entry * entry_size)
            else:
                self.error(path, f"{len(same)} {what} entries ({first.entry}..{same[-1].entry}) wrong for one cause: "
                                 f"{cause}{note}; the first: {first}", first.entry * entry_size)

    def check_txnindex(self, path, base, info, data=None):
        self.n_files += 1
        try:
            entries = sidefiles.read_txnindex(_load(data))
        except (KafkafmtError, OSError) as exc:
            self.error(path, _reason(exc), getattr(exc, "position", None))
            return
        aborts = {(o, p) for o, t, p in info.controls if t == 0}
        listed = set()
        last_prev = None
        for i, e in enumerate(entries):
            pid, first, last = int(e["producer_id"]), int(e["first_offset"]), int(e["last_offset"])
            pos = i * 34
            listed.add((last, pid))
            if first > last:
                self.error(path, f"aborted transaction entry {i}: first offset {first} is above its last offset {last}",
                           pos)
            if last_prev is not None and last <= last_prev:
                self.error(path, f"aborted transaction entry {i}: last offset {last} is not above the previous "
                                 f"entry's {last_prev}", pos)
            last_prev = last
            if (last, pid) not in aborts:
                self.error(path, f"aborted transaction entry {i} (producer {pid}, offsets {first}..{last}): no ABORT "
                                 f"marker of that producer at offset {last} in the segment", pos)
        for o, p in sorted(aborts - listed):
            self.warning(path, f"ABORT marker at offset {o} (producer {p}) has no entry in the transaction index")

    def other_file(self, path, kind, load):
        """Check a partition folder's or log dir's file of ``kind`` (`kafkafmt.log.file_kind`); ``load()`` gives
        its path or bytes. Returns the topic id a sound ``partition.metadata`` names, else None."""
        self.n_files += 1
        try:
            src = _load(load)
            if kind == "producer-snapshot":
                snap = sidefiles.read_producer_snapshot(src, verify_crc=False)
                if not snap["crc_valid"]:
                    self.error(path, f"producer snapshot CRC mismatch: stored {snap['crc']:#010x}, computed "
                                     f"{snap['computed_crc']:#010x}", 2)
            elif kind == "leader-epoch":
                cp = sidefiles.read_leader_epoch_checkpoint(src)
                problems = sidefiles.leader_epoch_problems(cp["entries"])
                for _, why in problems:
                    self.error(path, why)
                if self.epochs is not None and not problems and isinstance(path, str) and "://" not in path:
                    self.epochs[path] = cp["entries"]
            elif kind == "partition-metadata":
                return sidefiles.read_partition_metadata(src)["topic_id"]
            elif kind == "offset-checkpoint":
                sidefiles.read_offset_checkpoint(src)
            elif kind == "quorum-state":
                sidefiles.read_quorum_state(src)
            elif kind == "meta-properties":
                sidefiles.read_meta_properties(src)
            else:
                self.n_files -= 1
        except (KafkafmtError, OSError) as exc:
            self.error(path, _reason(exc), getattr(exc, "position", None))


def _reason(exc):
    if isinstance(exc, KafkafmtError):
        return exc.reason
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def check_partition(part, on_problem=None, on_chunk=None, read=None, logged=None, topic_ids=None):
    """The `Problem` s of one partition (`kafkafmt.log._discovery.Partition`), as ``kafkafmt verify`` lists them
    (``read``: as `Checker.partition`'s). ``logged``: a `Twins` -- what the read found is kept for the copies
    holding the same bytes. ``topic_ids``: a dict the topic ids of its ``partition.metadata`` are added to
    (`topic_id_problems`)."""
    c = Checker(on_problem, on_chunk)
    c.topic_ids = topic_ids
    c.partition(part, read=read)
    if logged is not None:
        logged.found(part, c.logged)
    return c.problems


class Twins:
    """The copies not read that hold the very same bytes as the copy read (`kafkafmt.log.same_bytes`), and what
    the read of each such copy read found in its log when it found nothing wrong: those copies' logs are not read
    again (`copies`). ``enabled`` False: none (a test compares)."""

    enabled = [True]
    #: the batches whose tables are kept at most, all copies read together (a batch's row: about 100 bytes);
    #: the twins of copies read past it are read as any copy
    max_batches = 1 << 18

    def __init__(self, found):
        self.of = {}                # {key of a copy not read: the copy read}
        if Twins.enabled[0]:
            read = {(p.topic, p.partition): p for p in found.partitions}
            pairs = [(read[(p.topic, p.partition)], p) for p in found.unread if (p.topic, p.partition) in read]
            pairs = [(a, b) for a, b in pairs if not a.gaps]   # (a read filling gaps from other copies: not its bytes)
            self.of = {b.key: a for (a, b), same in zip(pairs, same_bytes(pairs)) if same}
        self.left = {}              # {key of a copy read: its twins still to check}
        for a in self.of.values():
            self.left[a.key] = self.left.get(a.key, 0) + 1
        self.logged = {}            # {key of a copy read: (what its read found, its batches)}, kept until its
        #                             twins are checked
        self.kept = 0               # the batches of what is kept

    def found(self, part, logged):
        """What the read of ``part`` (a copy read) found, None when something was wrong (`Checker.logged`)."""
        if logged is None or part.key not in self.left:
            return
        n = sum(len(t) for info in logged.values() for t in info.tables)
        if self.kept + n <= self.max_batches:
            self.logged[part.key] = (logged, n)
            self.kept += n

    def copies(self, unread, read):
        """``(copy, read, logged)`` of each copy of ``unread`` in order, to check (`Checker.copy`): its read
        (``(chunks, report)``; ``read(parts, PARTITION_CHECK_READ)`` reads many in one pass, as
        `kafkafmt.read.iter_partitions_with`) and None, or None and what the read of its twin found."""
        chunks_of = iter(read([p for p in unread if p.key not in self.of], PARTITION_CHECK_READ))
        for pd in unread:
            a = self.of.get(pd.key)
            if a is None:
                q, chunks, report = next(chunks_of)
                yield q, (chunks, report), None
                continue
            self.left[a.key] -= 1
            known = self.logged.get(a.key) if self.left[a.key] else self.logged.pop(a.key, None)
            if known is not None:
                if not self.left[a.key]:
                    self.kept -= known[1]           # (its last twin: let go)
                yield pd, None, known[0]
                continue
            for q, chunks, report in read([pd], PARTITION_CHECK_READ):
                yield q, (chunks, report), None


def topic_id_problems(found, topic_ids):
    """``(copy, warning)`` for each copy of a partition whose ``partition.metadata`` names another topic id than
    the copy read's, where discovery read them as one history -- their batches the same where they overlap, so
    their topic ids were not compared (`kafkafmt.log.resolve_copies`). A broker refuses such a copy (Kafka's
    ``InconsistentTopicIdException``: "Tried to assign topic ID ... but log already contained topic ID ...").
    ``topic_ids``: {key of a partition folder: (path, topic id)} of its partition.metadata, as the checks read
    them (`Checker.topic_ids`);
    ``found``: the discovery (`kafkafmt.log.Found`). Copies discovery found to be of other incarnations are
    said by discovery already."""
    apart = {(c.topic, c.partition) for c in found.copies if c.state == "other incarnation"}
    read = {(p.topic, p.partition): p for p in found.partitions}
    out = []
    for copy in found.unread:
        key = (copy.topic, copy.partition)
        p = read.get(key)
        if p is None or key in apart:
            continue
        (path, mine), (_, theirs) = topic_ids.get(copy.key, (None, None)), topic_ids.get(p.key, (None, None))
        if mine is None or theirs is None or mine == theirs:
            continue
        out.append((copy, Problem("warning", path, f"{copy.name}: this copy's topic id {mine} is not {theirs}, the "
                                  f"one of the copy read ({p.url}), though both hold the same batches: a broker "
                                  f"refuses a log whose partition.metadata names another topic id "
                                  f"(InconsistentTopicIdException); read as one history (--topic-id reads one "
                                  f"incarnation alone)")))
    return out
