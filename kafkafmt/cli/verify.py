"""``kafkafmt verify``: check everything a broker's log directory holds and list every problem.

Checked, per partition folder (and for files given one by one):

* every batch: framing, CRC (crc32c for v2, crc32 for v0/v1, inner messages of compressed
  wrappers too), decompression, record structure -- a corrupt stretch is reported with its byte
  range and reading resumes at the next intact batch, so every problem is found, not only the first;
* a final batch cut short (an unclean shutdown) is an error, a zero-filled tail (preallocated
  segment) a warning;
* offsets: each batch's base offset above the previous batch's last offset, across segments too;
  last offset >= base offset; offsets not below the segment's base offset (its file name); record
  offsets increasing and inside their batch;
* ``.index``: Kafka's sanity check (size a multiple of 8, last offset >= base offset), entries
  increasing, each pointing at the start of a batch whose last offset is the entry's offset
  (``kafka-dump-log --verify-index-only``);
* ``.timeindex``: sanity check (size a multiple of 12, last timestamp >= first, last offset >=
  base offset), timestamps increasing, each entry's offset inside a batch whose max timestamp is
  the entry's timestamp;
* ``.txnindex``: whole 34-byte entries of version 0, each aborted transaction's ABORT marker
  present in the segment; ABORT markers without an entry are warnings;
* producer state ``.snapshot`` files: version, size, CRC;
* ``leader-epoch-checkpoint``: readable, epochs increasing, start offsets not decreasing;
* ``partition.metadata``, the offset checkpoint files, ``meta.properties``, ``quorum-state``:
  readable;
* leftovers of the broker's own work (``.deleted``, ``.cleaned``, ``.swap`` files, ``-delete`` /
  ``-future`` folders) and segments without index files are warnings.

Exit code 0 when nothing is wrong (warnings allowed, unless --strict), 1 when a problem was found.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from kafkafmt import sidefiles
from kafkafmt.errors import KafkafmtError
from kafkafmt.records import Table

from kafkafmt.cli.usage import UsageError
from kafkafmt.cli.common import (add_replicas_option, empty_note, no_data, add_command, Problem, check_kafka_file, file_kind, find_inputs,
                                 human_bytes, is_leftover, report_problem, segment_base, segment_in_partition)
from kafkafmt.names import log_name_of
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.progress import Progress
from kafkafmt.cli.reading import FileReader, concat_batches, iter_partition

BATCH_COLUMNS = ("position", "size", "base_offset", "last_offset", "max_timestamp", "producer_id", "is_control",
                 "magic")


def add_parser(sub, parents):
    p = add_command(sub, parents, "verify", "check CRCs, offsets, indexes, snapshots; list every problem", __doc__,
                    "log directories, partition folders or files")
    p.add_argument("--json", action="store_true", help="JSON lines: one per problem, then a summary")
    p.add_argument("--strict", action="store_true", help="warnings make the exit code 1 too")
    add_replicas_option(p)
    p.set_defaults(run=run)
    return p


def run(args, console):
    return Verifier(args, console).run()


class SegmentInfo:
    def __init__(self, base, log):
        self.base = base
        self.log = log
        self.tables = []
        self.controls = []          # (offset, type, producer_id)
        self.skipped = []           # (start, end)

    def batches(self):
        t = concat_batches(self.tables)
        if t is None:
            return {c: np.zeros(0, np.int64) for c in BATCH_COLUMNS}
        return {c: np.asarray(t[c]) for c in BATCH_COLUMNS}


class Verifier:
    def __init__(self, args, console):
        self.args = args
        self.c = console
        self.errors = 0
        self.warnings = 0
        self.n_partitions = self.n_segments = self.n_batches = self.n_records = self.n_files = 0
        self.bytes = 0
        self._seen = set()

    # -- output ------------------------------------------------------------------------------------
    def add(self, p: Problem):
        key = p.text()
        if key in self._seen:
            return
        self._seen.add(key)
        if p.severity == "error":
            self.errors += 1
        else:
            self.warnings += 1
            if self.c.quiet:
                return
        if self.c.progress is not None:
            self.c.progress.clear()
        if self.args.json:
            self.c.json(p.to_json())
        else:
            self.c.write(p.text())

    def error(self, file, message, position=None, offset=None, end=None):
        self.add(Problem("error", file, message, position, end, offset))

    def warning(self, file, message, position=None):
        self.add(Problem("warning", file, message, position))

    # -- driving -----------------------------------------------------------------------------------
    def run(self):
        paths = list(self.args.paths)
        if self.args.sample:
            from kafkafmt.sample import sample_dir

            paths.append(sample_dir())
        if not paths:
            raise UsageError("verify: give log directories, partition folders or files (or --sample)")
        found = find_inputs(paths, replicas=self.args.replicas)
        err = no_data(found, [f for f in found.files if file_kind(f) in ("log", "kraft-snapshot")] or found.given_files,
                      paths)
        if err is not None:
            raise err
        for note in empty_note(found):
            self.c.warn(note)
        for f in found.given_files:
            if file_kind(f) in (None, "log"):
                check_kafka_file(f)       # named as Kafka data: it is, or it is an error
        started = time.monotonic()
        total = 0
        for pd in found.partitions:
            total += sum(s.size for s in pd.list_segments())
        total += sum(cli_paths.getsize(f) for f in found.files if file_kind(f) in ("log", "kraft-snapshot"))
        with Progress(total, enabled=self.args.progress) as prog:
            self.c.progress = self.progress = prog
            for w in found.leftovers:
                self.add(w)
            for pd in found.partitions:
                prog.set_label(pd.name)
                self.partition(pd)
            given = set(found.given_files)
            for f in found.files:
                self.file(f, given=f in given)
            prog.close()
            self.c.progress = None
        self.summary(time.monotonic() - started)
        failed = self.errors or (self.args.strict and self.warnings)
        return 1 if failed else 0

    def summary(self, elapsed):
        status = "OK" if not self.errors else "FAILED"
        if self.args.json:
            self.c.json({"type": "summary", "status": status, "partitions": self.n_partitions,
                         "segments": self.n_segments, "batches": self.n_batches, "records": self.n_records,
                         "bytes": self.bytes, "files": self.n_files, "errors": self.errors,
                         "warnings": self.warnings, "seconds": round(elapsed, 3)})
            return
        self.c.write(f"{status}: {self.n_partitions} partitions, {self.n_segments} segments "
                     f"({human_bytes(self.bytes)}), {self.n_batches} batches, {self.n_records} records, "
                     f"{self.n_files} other files checked in {elapsed:.1f} s: {self.errors} errors, "
                     f"{self.warnings} warnings")

    # -- partitions --------------------------------------------------------------------------------
    def partition(self, pd):
        self.n_partitions += 1
        report = []
        segments = pd.list_segments(report)
        for e in report:
            p = report_problem(e)
            if p is not None:
                self.add(p)
        infos = {s.base_offset: SegmentInfo(s.base_offset, s.url) for s in segments}
        self.n_segments += len(segments)
        self.bytes += sum(s.size for s in segments)
        # every byte of the files, also below a log start offset that DeleteRecords moved (an explicit
        # start below it reads what is still on disk)
        self.read_log(functools.partial(iter_partition, start_offset=0), (pd,), infos)
        for s in segments:
            self.side_files(s, infos[s.base_offset])
        if pd.segments is None:       # a folder (not tiered uploads): its other files
            for name, full in pd.files():
                kind = file_kind(name)
                if kind in ("producer-snapshot", "leader-epoch", "partition-metadata") and not is_leftover(name):
                    self.other_file(full, kind)

    def read_log(self, source, source_args, infos, file_label=None):
        """Stream the records (salvaging) and check batches and offsets; fills infos per segment."""
        report = []
        seen = 0
        prev_last = None      # last offset of the previous batch
        prev_file = None
        for chunk in source(*source_args, report, errors="salvage", verify_crc=True, include_control=True,
                            columns=["offset", "timestamp"]):
            seen = self._report(report, seen, infos, file_label)
            b = chunk.batches
            nb = len(b)
            if not nb:
                continue
            segs = np.asarray(b["segment"], np.int64) if "segment" in b.columns else np.zeros(nb, np.int64)
            base = np.asarray(b["base_offset"], np.int64)
            last = np.asarray(b["last_offset"], np.int64)
            pos = np.asarray(b["position"], np.int64)
            order = np.lexsort((pos, segs))
            for i in order.tolist():
                seg = int(segs[i])
                info = infos.get(seg)
                f = self._file_of(seg, infos, file_label)
                if last[i] < base[i]:
                    self.error(f, f"batch last offset {int(last[i])} is below its base offset {int(base[i])}",
                               int(pos[i]), int(base[i]))
                if info is not None and file_label is None and base[i] < seg:
                    self.error(f, f"batch base offset {int(base[i])} is below the segment's base offset {seg} "
                                  f"(its file name)", int(pos[i]), int(base[i]))
                if prev_last is not None and base[i] <= prev_last:
                    where = "the previous batch" if prev_file == f else f"the last batch of {prev_file}"
                    self.error(f, f"offsets go backwards: batch base offset {int(base[i])} is not above the "
                                  f"last offset {prev_last} of {where}", int(pos[i]), int(base[i]))
                prev_last = max(int(last[i]), prev_last if prev_last is not None else int(last[i]))
                prev_file = f
            # records: increasing and inside their batch
            if len(chunk):
                offs = np.asarray(chunk.offset, np.int64)
                bidx = np.asarray(chunk.batch_index, np.int64)
                outside = np.flatnonzero((offs < base[bidx]) | (offs > last[bidx]))
                for r in outside[:20].tolist():
                    i = int(bidx[r])
                    self.error(self._file_of(int(segs[i]), infos, file_label),
                               f"record offset {int(offs[r])} is outside its batch's offsets "
                               f"{int(base[i])}..{int(last[i])}", int(pos[i]), int(offs[r]))
                same = bidx[1:] == bidx[:-1]
                back = np.flatnonzero(same & (np.diff(offs) <= 0)) + 1
                for r in back[:20].tolist():
                    i = int(bidx[r])
                    self.error(self._file_of(int(segs[i]), infos, file_label),
                               f"record offset {int(offs[r])} does not increase within its batch (after "
                               f"{int(offs[r - 1])})", int(pos[i]), int(offs[r]))
                self.n_records += int((~np.asarray(b["is_control"], bool)[bidx]).sum())
            self.n_batches += nb
            # per segment: batch tables and control records for the index checks
            cols = {c: np.asarray(b[c]) for c in BATCH_COLUMNS}
            ctl = chunk.controls
            for seg in np.unique(segs).tolist():
                info = infos.get(seg)
                if info is None:
                    continue
                m = segs == seg
                info.tables.append(Table({c: v[m] for c, v in cols.items()}))
                if len(ctl):
                    cb = np.asarray(ctl["batch_index"], np.int64)
                    cm = segs[cb] == seg
                    info.controls += list(zip(np.asarray(ctl["offset"])[cm].tolist(), np.asarray(ctl["type"])[cm].tolist(),
                                              np.asarray(b["producer_id"])[cb[cm]].tolist()))
            self.progress.advance(int(np.asarray(b["size"], np.int64).sum()), len(chunk))
        self._report(report, seen, infos, file_label)

    @staticmethod
    def _file_of(seg, infos, file_label):
        if file_label is not None:
            return file_label
        info = infos.get(seg)
        return info.log if info is not None else "?"

    def _report(self, report, seen, infos, file_label):
        for e in report[seen:]:
            p = report_problem(e, file_label)
            if p is None:
                continue
            self.add(p)
            base = segment_base(e.get("file") or "")
            if base in infos and p.position is not None and p.end is not None:
                infos[base].skipped.append((p.position, p.end))
        return len(report)

    # -- side files of a segment -------------------------------------------------------------------
    def side_files(self, seg, info):
        base, log = seg.base_offset, seg.url
        b = info.batches()
        note = " (after corrupt stretches in the log)" if info.skipped else ""
        has_index, has_time = seg.has("index"), seg.has("timeindex")
        if seg.size and (not has_index or not has_time):
            missing = "/".join(n for n, h in ((".index", has_index), (".timeindex", has_time)) if not h)
            self.warning(log, f"no {missing} file beside it (a broker rebuilds missing indexes at start-up)")
        if has_index:
            self.check_index(seg.side_url("index"), base, b, info, note, seg.side_bytes("index"))
        if has_time:
            self.check_timeindex(seg.side_url("timeindex"), base, b, note, seg.side_bytes("timeindex"))
        if seg.has("txnindex"):
            self.check_txnindex(seg.side_url("txnindex"), base, info, seg.side_bytes("txnindex"))
        else:
            aborts = [o for o, t, _ in info.controls if t == 0]
            if aborts:
                self.warning(log, f"{len(aborts)} ABORT markers (first at offset {aborts[0]}) but no .txnindex "
                                  f"file (the broker rebuilds it at start-up)")

    def check_index(self, path, base, b, info, note="", data=None):
        self.n_files += 1
        try:
            data = cli_paths.read_bytes(path) if data is None else data
            n = len(data) // 8
            if len(data) % 8:
                self.error(path, f"index is {len(data)} bytes, not a multiple of 8 (Kafka's sanity check fails; "
                                 f"the broker rebuilds it)", n * 8)
            raw = sidefiles.read_index(data[:n * 8], base, trim_zeros=False)
            if n and int(raw["offset"][-1]) < base:
                self.error(path, f"last entry's offset {int(raw['offset'][-1])} is below the base offset {base} "
                                 f"(Kafka's sanity check fails; the broker rebuilds the index)", (n - 1) * 8)
            entries = sidefiles.read_index(data[:n * 8], base)
        except (KafkafmtError, OSError, ValueError) as exc:
            self.error(path, _reason(exc), getattr(exc, "position", None))
            return
        if info.skipped:
            inside = np.zeros(len(entries), bool)
            for s, e in info.skipped:
                inside |= (entries["position"] >= s) & (entries["position"] < e)
            entries = entries[~inside]
        for problem in sidefiles.check_index(entries, b, base):
            self.error(path, problem + note, problem.entry * 8)

    def check_timeindex(self, path, base, b, note="", data=None):
        self.n_files += 1
        try:
            data = cli_paths.read_bytes(path) if data is None else data
            n = len(data) // 12
            if len(data) % 12:
                self.error(path, f"time index is {len(data)} bytes, not a multiple of 12 (Kafka's sanity check "
                                 f"fails; the broker rebuilds it)", n * 12)
            entries = sidefiles.read_timeindex(data[:n * 12], base)
        except (KafkafmtError, OSError, ValueError) as exc:
            self.error(path, _reason(exc), getattr(exc, "position", None))
            return
        for problem in sidefiles.check_timeindex(entries, b, base):
            self.error(path, problem + note, problem.entry * 12)

    def check_txnindex(self, path, base, info, data=None):
        self.n_files += 1
        try:
            entries = sidefiles.read_txnindex(cli_paths.readable(path) if data is None else data)
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

    # -- other files -------------------------------------------------------------------------------
    def file(self, path, given):
        kind = file_kind(path)
        if kind in ("log", "kraft-snapshot"):
            self.log_file(path)
        elif kind in ("index", "timeindex", "txnindex"):
            if not given:
                return       # an index outside a partition folder: only when named
            self.index_file(path, kind)
        elif kind is not None:
            self.other_file(path, kind)
        elif given:
            self.log_file(path)           # named on the command line: Kafka data by its contents

    def log_file(self, path):
        self.n_segments += 1
        base = segment_base(path) or 0
        info = SegmentInfo(base, path)
        with FileReader(path) as fr:
            self.bytes += fr.segment.size
            infos = {base: info}
            self.read_log(lambda folder, report, **kw: fr.chunks(report, **kw), (None,), infos, file_label=path)
            if segment_in_partition(path) is not None and not is_leftover(path):
                self.side_files(fr.segment, info)

    def index_file(self, path, kind):
        name = log_name_of(path)
        log = None if name is None else cli_paths.sibling(path, name)
        if log is None or not cli_paths.exists(log):
            self.error(path, f"no {name or 'segment .log'} beside it to check it against")
            return
        try:
            base = sidefiles.offset_from_file_name(path)
        except ValueError as exc:
            self.error(path, str(exc))
            return
        info = SegmentInfo(base, log)
        with FileReader(log) as fr:
            self.read_log(lambda folder, report, **kw: fr.chunks(report, **kw), (None,), {base: info}, file_label=log)
        b = info.batches()
        if kind == "index":
            self.check_index(path, base, b, info)
        elif kind == "timeindex":
            self.check_timeindex(path, base, b)
        else:
            self.check_txnindex(path, base, info)

    def other_file(self, path, kind):
        self.n_files += 1
        try:
            src = cli_paths.readable(path)
            if kind == "producer-snapshot":
                snap = sidefiles.read_producer_snapshot(src, verify_crc=False)
                if not snap["crc_valid"]:
                    self.error(path, f"producer snapshot CRC mismatch: stored {snap['crc']:#010x}, computed "
                                     f"{snap['computed_crc']:#010x}", 2)
            elif kind == "leader-epoch":
                cp = sidefiles.read_leader_epoch_checkpoint(src)
                ep, so = cp["entries"]["epoch"], cp["entries"]["start_offset"]
                for i in np.flatnonzero(np.diff(ep) <= 0).tolist():
                    self.error(path, f"epoch {int(ep[i + 1])} (entry {i + 1}) is not above the previous epoch {int(ep[i])}")
                for i in np.flatnonzero(np.diff(so) < 0).tolist():
                    self.error(path, f"start offset {int(so[i + 1])} of epoch {int(ep[i + 1])} is below the previous "
                                     f"start offset {int(so[i])}")
            elif kind == "partition-metadata":
                sidefiles.read_partition_metadata(src)
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
