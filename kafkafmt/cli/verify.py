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
  ``-future`` folders) and segments without index files are warnings;
* tiered storage, when the paths hold ``__remote_log_metadata`` and the remote storage's uploads (its path or
  URL given beside the log dir): the segments the metadata says were uploaded held against the uploads --
  missing and orphan uploads, ``.log`` sizes other than the metadata's, copies started and never finished
  (older than ``--stale-copy-ms``), offsets between the remote segments and the local log held by neither
  (`kafkafmt.report.audit_tiered`).

Every copy of a partition is checked. A copy whose segments hold the very same bytes as the copy read's (compared
in full: `kafkafmt.log.same_bytes`) has its log checked by that read when it found nothing wrong; its side files
and other files are checked as its own.

The checks are the library's (`kafkafmt.report.checks`, also behind ``kafkafmt report``). On dirs
found sound, the summary counts the fixes a dry run of ``kafkafmt recover`` would still make
(`kafkafmt.recovery.pending_fixes`: what a broker fixes itself at start-up after an unclean shutdown).

Exit code 0 when nothing is wrong (warnings allowed, unless --strict), 1 when a problem was found.
"""
from __future__ import annotations

import functools
import time

from kafkafmt.read import iter_partitions_with
from kafkafmt.report.checks import PARTITION_CHECK_READ, Checker, SegmentInfo, Twins, topic_id_problems, will_check
from kafkafmt.report.problems import Problem
from kafkafmt.recovery import pending_fixes, scan_of_batches

from kafkafmt.cli.usage import UsageError
from kafkafmt.cli.common import (add_replicas_option, say_notes, no_data, add_command, check_kafka_file, file_kind,
                                 find_inputs, is_leftover, kafka_files, parse_int_list, parse_name_list, segment_base,
                                 segment_in_partition, human_bytes, add_stale_copy_option, topic_ids)
from kafkafmt.log import ReportKind, log_name_of
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.arguments import add_filter_options
from kafkafmt.cli.progress import Progress
from kafkafmt.cli.reading import FileReader
from kafkafmt.log import sidefiles


def add_parser(sub, parents, command):
    p = add_command(sub, parents, command, __doc__,
                    "log directories, partition folders or files")
    p.add_argument("--json", action="store_true", help="JSON lines: one per problem, then a summary")
    p.add_argument("--strict", action="store_true", help="warnings make the exit code 1 too")
    add_filter_options(p)
    add_stale_copy_option(p)
    add_replicas_option(p)
    return p



def run(args, console):
    return Verifier(args, console).run()


class Verifier(Checker):
    def __init__(self, args, console):
        super().__init__(on_problem=self.say, on_chunk=self.advance, on_segment=self.scanned)
        self.args = args
        self.c = console
        self.progress = None
        self.scans = []             # the segments read whole and intact, as `recover` scans them
        self.epochs = {}            # the leader-epoch-checkpoints read and found sound
        self.topic_ids = {}         # the topic ids of the partition.metadata files read (`topic_id_problems`)

    def scanned(self, info):
        """Keep a segment's read for `pending_fixes` (so `recover`'s planner does not scan it again)."""
        if not info.skipped and not info.reported and info.size is not None and not self.errors:
            t = info.table()
            scan = scan_of_batches(info.log, info.base, info.size, t if t is not None else {"position": ()},
                                   info.markers, info.sound)
            if scan is not None:
                self.scans.append(scan)

    # -- output ------------------------------------------------------------------------------------
    def say(self, p: Problem):
        if p.severity != "error" and self.c.quiet:
            return
        if self.c.progress is not None:
            self.c.progress.clear()
        if self.args.json:
            self.c.json(p.to_json())
        else:
            self.c.write(p.text())

    def advance(self, chunk):
        self.progress.advance(chunk.stored_bytes, len(chunk))

    # -- driving -----------------------------------------------------------------------------------
    def run(self):
        paths = list(self.args.paths)
        if self.args.sample:
            from kafkafmt.sample import sample_dir

            paths.append(sample_dir())
        if not paths:
            raise UsageError("verify: give log directories, partition folders or files (or --sample)")
        filtered = parse_name_list(self.args.topics), parse_int_list(self.args.partitions, "partition")
        found = find_inputs(paths, *filtered, replicas=self.args.replicas, topic_id=topic_ids(self.args),
                            conflicts="report")
        given = set(found.given_files)
        for f in found.given_files:
            if file_kind(f) in (None, "log"):
                check_kafka_file(f)       # named as Kafka data: it is, or it is an error
        loose = [f for f in found.files if f not in given and file_kind(f) in ("log", "kraft-snapshot")]
        kept = set(kafka_files(found, loose, self.c))        # not Kafka data: skipped, with a warning
        found.files = [f for f in found.files if f in given or f not in loose or f in kept]
        err = no_data(found, [f for f in found.files if file_kind(f) in ("log", "kraft-snapshot")] or found.given_files,
                      paths, any(filtered))
        if err is not None:
            raise err
        say_notes(found, self.c)
        started = time.monotonic()
        total = 0
        copies = found.partitions + found.unread        # (every copy of every partition: each is checked)
        for pd in copies:
            total += sum(s.size for s in pd.list_segments())
        total += sum(cli_paths.getsize(f) for f in found.files if file_kind(f) in ("log", "kraft-snapshot"))
        with Progress(total, enabled=self.args.progress) as prog:
            self.c.progress = self.progress = prog
            for w in found.leftovers:
                if w.kind is not ReportKind.DAMAGED_COPY:     # (each copy's own check says where and why, once)
                    self.add(w)
            will_check(copies)      # (object stores: the side files fetched ahead)
            self.partitions_and_copies(found, prog)
            for _, p in topic_id_problems(found, self.topic_ids):
                self.add(p)
            for f in found.files:
                self.file(f, given=f in given)
            self.tiered(found)
            prog.close()
            self.c.progress = None
        # what `recover` would still do on dirs found sound (a broker's own start-up fixes): counted, not failed
        pending = {} if self.errors else pending_fixes(
            paths, log_dirs=found.log_dirs_paths, scans=self.scans, epochs=self.epochs,
            listings={pd.folder: pd.listing for pd in copies if pd.listing is not None and pd.storage.is_local})
        self.summary(time.monotonic() - started, pending)
        failed = self.errors or (self.args.strict and self.warnings)
        return 1 if failed else 0

    def partitions_and_copies(self, found, prog):
        """Every partition read, then every other copy (a damaged copy is a problem whichever copy is read):
        many small partitions read in one pass, each checked as its own read shows it; a copy holding the very
        same bytes as the copy read checked from that read (`kafkafmt.report.checks.Twins`)."""
        twins = Twins(found)
        for pd, chunks, report in iter_partitions_with(found.partitions, PARTITION_CHECK_READ):
            prog.set_label(pd.name)
            self.partition(pd, read=(chunks, report))
            twins.found(pd, self.logged)
        for pd, read, logged in twins.copies(found.unread, iter_partitions_with):
            prog.set_label(f"{pd.name} ({pd.log_dir_url})")
            self.copy(pd, read=read, logged=logged)
            if logged is not None:
                prog.advance(sum(s.size for s in pd.list_segments()))

    def tiered(self, found):
        """The tiered audit, when the paths hold __remote_log_metadata and uploads."""
        from kafkafmt.report import audit_tiered

        if not found.uploads or not any(p.topic == "__remote_log_metadata" for p in found.partitions):
            return
        audit = audit_tiered(found, stale_copy_ms=self.args.stale_copy_ms)
        for note in audit.notes:
            self.c.info(f"kafkafmt: {note}")
        for f in audit.findings:
            self.add(f)

    def summary(self, elapsed, pending=None):
        status = "OK" if not self.errors else "FAILED"
        if self.args.json:
            self.c.json({"type": "summary", "status": status, "partitions": self.n_partitions,
                         "copies": self.n_copies, "segments": self.n_segments, "batches": self.n_batches, "records": self.n_records,
                         "belowLogStart": self.n_below_log_start, "bytes": self.bytes, "files": self.n_files, "errors": self.errors,
                         "warnings": self.warnings, "pendingFixes": pending or {}, "seconds": round(elapsed, 3)})
            return
        below = f" (and {self.n_below_log_start} below log start offsets, not served)" if self.n_below_log_start \
            else ""
        copies = f" (and {self.n_copies} other copies of them)" if self.n_copies else ""
        self.c.write(f"{status}: {self.n_partitions} partitions{copies}, {self.n_segments} segments "
                     f"({human_bytes(self.bytes)}), {self.n_batches} batches, {self.n_records} records{below}, "
                     f"{self.n_files} other files checked in {elapsed:.1f} s: {self.errors} errors, "
                     f"{self.warnings} warnings" + (f"; {sum(pending.values())} routine fixes pending, as a broker "
                                                    f"makes at start-up (`kafkafmt recover`: " +
                                                    ", ".join(f"{k} {n}" for k, n in pending.items()) + ")"
                                                    if pending else ""))

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
            self.other_file(path, kind, functools.partial(cli_paths.readable, path))
        elif given:
            self.log_file(path)           # named on the command line: Kafka data by its contents

    def log_file(self, path):
        self.n_segments += 1
        base = segment_base(path) or 0
        info = SegmentInfo(base, path)
        with FileReader(path) as fr:
            self.bytes += fr.segment.size
            infos = {base: info}
            self.read_log(lambda folder, report, options: fr.chunks(report, options), (None,), infos, file_label=path)
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
            self.read_log(lambda folder, report, options: fr.chunks(report, options), (None,), {base: info}, file_label=log)
        b = info.batches()
        if kind == "index":
            self.check_index(path, base, b, info, data=functools.partial(cli_paths.read_bytes, path))
        elif kind == "timeindex":
            self.check_timeindex(path, base, b, data=functools.partial(cli_paths.read_bytes, path))
        else:
            self.check_txnindex(path, base, info, data=functools.partial(cli_paths.readable, path))
