"""``kafkafmt dump``: print segments and side files as Kafka's DumpLogSegments (kafka-dump-log.sh)
prints them, or as JSON lines with every field.

The text lines follow DumpLogSegments' wording (from apache/kafka's sources; no code copied) so that
people and scripts that know ``kafka-dump-log.sh`` recognise them:

* ``Dumping <file>``, then ``Log starting offset: <base>`` for a ``.log`` segment;
* per batch (magic 2) ``baseOffset: .. lastOffset: .. count: .. baseSequence: .. lastSequence: ..
  producerId: .. producerEpoch: .. partitionLeaderEpoch: .. isTransactional: .. isControl: ..
  deleteHorizonMs: .. position: .. CreateTime: .. size: .. magic: .. compresscodec: .. crc: ..
  isvalid: ..``; for magic 0/1 shallow messages ``offset: <last offset> position: ..``;
* per record (``--records``) ``| offset: .. CreateTime: .. keySize: .. valueSize: .. sequence: ..
  headerKeys: [..]``, with ``--print-data`` `` key: .. payload: ..``; control records add
  ``endTxnMarker: COMMIT coordinatorEpoch: N`` (KRaft control records their type);
* ``offset: X position: Y`` per ``.index`` entry, ``timestamp: X offset: Y`` per ``.timeindex``
  entry, the transaction index and producer snapshot fields as Kafka names them;
* after all files, on stderr, index mismatches, time index errors and (with ``--records``)
  non-consecutive offsets, worded as Kafka does;
* with ``--offsets-decoder`` / ``--transaction-log-decoder`` / ``--share-group-state-decoder`` /
  ``--cluster-metadata-decoder`` (and by default for ``__consumer_offsets-N``, ``__transaction_state-N``,
  ``__share_group_state-N``, ``__cluster_metadata-N`` folders and KRaft snapshots, unless
  ``--no-decode-internal``) keys and payloads as Kafka's decoders print them
  (`kafkafmt.cli.internal_topics`).

Differences: ranges (``--offset-range``, ``--time-range``) seek with the indexes instead of reading
from the start; a corrupt stretch is reported (``Skipped ... bytes``) and dumping resumes at the
next intact batch; the exit code is 1 when anything was wrong (invalid CRC, corrupt or truncated
data, index mismatches).
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

from kafkafmt.log import sidefiles
from kafkafmt.errors import KafkafmtError, StorageError
from kafkafmt.record import CODEC_NAMES, TIMESTAMP_TYPES

from kafkafmt.cli.usage import UsageError
from kafkafmt.cli.common import (add_replicas_option, add_typed_options, say_notes, Problem, bytes_encoder,
                                 check_kafka_file, kafka_files, escape_text, file_kind, find_inputs, input_error,
                                 typed_options, is_leftover, parse_int_list, parse_name_list, parse_offset_range,
                                 parse_time_range, segment_base, segment_in_partition)
from kafkafmt.log import log_name_of
from kafkafmt.log import ReportKind
from kafkafmt.cli.controls import control_text, control_json
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli import internal_topics
from kafkafmt.internal import decoders as internal_decoders
from kafkafmt.cli.progress import Progress
from kafkafmt.cli.reading import (CHUNK_BYTES, FileReader, iter_partition, log_metadata, resolve_range,
                                  topic_of_file)
from kafkafmt.record import DecodeOptions
from kafkafmt.log import read_tasks
from kafkafmt.log import plan
from kafkafmt.log import warn_fallbacks
from kafkafmt.values import FailedValues, decode_values

DELETE_HORIZON_FLAG = 0x40
INT32_MAX = (1 << 31) - 1
KIND_ORDER = {"log": 0, "index": 1, "timeindex": 2, "txnindex": 3, "producer-snapshot": 4}
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def add_parser(sub, parents):
    p = sub.add_parser(
        "dump", parents=parents, help="print batches, records and side files (like kafka-dump-log.sh)",
        description="Print segment files (.log), record sets and broker side files as Kafka's "
                    "DumpLogSegments does, or as JSON lines. Directories (partition folders, log dirs) "
                    "give their .log segments (with --all-files every file Kafka keeps).",
        epilog="Examples:\n  kafkafmt dump /var/lib/kafka/orders-0/00000000000000000000.log --records\n"
               "  kafkafmt dump orders-0 --offset-range 1000:1010 --print-data\n"
               "  kafkafmt dump orders-0 --time-range 2026-01-01T00:00Z..2026-01-01T01:00Z --json\n"
               "  kafkafmt dump orders-0/00000000000000000000.index --verify-index-only\n"
               "  kafkafmt dump kafka-logs/__consumer_offsets-12 --offsets-decoder\n"
               "  kafkafmt dump kafka-logs --topics orders --print-data --value-decoder avro",
        formatter_class=_formatter())
    p.add_argument("paths", nargs="*", metavar="PATH", help="files, partition folders or log directories")
    p.add_argument("--files", action="append", metavar="F[,F]",
                   help="files or folders to dump, comma-separated (kafka-dump-log's flag; same as PATH)")
    p.add_argument("--topics", action="append", metavar="T[,T]", help="only these topics (in directories)")
    add_replicas_option(p)
    add_typed_options(p, "--key-decoder", "--value-decoder",
                      "print (as JSON, as kafka-avro-console-consumer prints them; implies --print-data)")
    p.add_argument("--partitions", action="append", metavar="N[,N|A-B]",
                   help="only these partition numbers (in directories)")
    p.add_argument("--records", "--deep-iteration", dest="records", action="store_true",
                   help="print every record, not only batches (Kafka: --deep-iteration)")
    p.add_argument("--print-data", "--print-data-log", dest="print_data", action="store_true",
                   help="print keys and values (UTF-8; invalid bytes as \\xNN); implies --records")
    p.add_argument("--skip-record-metadata", action="store_true",
                   help="print only keys and values of records (and no control records); implies --print-data")
    p.add_argument("--json", action="store_true", help="JSON lines with every field instead of text")
    p.add_argument("--bytes", choices=("base64", "utf8", "hex"), default="base64",
                   help="encoding of keys, values and header values in JSON (default base64)")
    p.add_argument("--offset-range", metavar="A:B", help="only offsets A <= offset < B (A:, :B, or one offset)")
    p.add_argument("--time-range", metavar="T1:T2",
                   help="only records from the first with timestamp >= T1 up to the first with timestamp >= T2 "
                        "(ms or ISO-8601, UTC by default; write T1..T2 when the times contain colons)")
    p.add_argument("--max-bytes", type=_size, metavar="N",
                   help="read at most N bytes of batches per log file (K/M/G suffixes)")
    p.add_argument("--index-sanity-check", action="store_true",
                   help="for .index/.timeindex files: only run the sanity check a broker runs at start-up")
    p.add_argument("--verify-index-only", action="store_true",
                   help="for .index/.timeindex files: check entries against the log, print only problems")
    p.add_argument("--all-files", action="store_true",
                   help="for directories: also dump index, snapshot and checkpoint files, not only .log segments")
    dec = p.add_mutually_exclusive_group()
    for flag, decoder in internal_topics.decoder_flags().items():      # kafka-dump-log's decoders
        dec.add_argument(f"--{decoder}-decoder", dest=flag, action="store_true",
                         help=f"decode records as {internal_decoders()[decoder].topic} records (Kafka's flag; "
                              "implies --print-data)")
    p.add_argument("--no-decode-internal", action="store_true",
                   help=f"print the keys and values of {', '.join(internal_topics.topic_decoders())} and KRaft "
                        "snapshots as bytes (by default they are decoded by the folder's name)")
    p.set_defaults(run=run)
    return p


def _formatter():
    import argparse

    return argparse.RawDescriptionHelpFormatter


def _size(text):
    from kafkafmt.cli.common import parse_size

    try:
        return parse_size(text)
    except UsageError as exc:
        import argparse

        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args, console):
    return Dumper(args, console).run()


def _java_bool(v):
    return "true" if v else "false"


def last_sequence(base_sequence, delta):
    """DefaultRecordBatch.lastSequence: NO_SEQUENCE stays -1; sequences wrap after 2^31-1 to 0."""
    if base_sequence < 0:
        return -1
    if base_sequence > INT32_MAX - delta:
        return delta - (INT32_MAX - base_sequence) - 1
    return base_sequence + delta


def first_sequence(last_seq, delta):
    """DefaultRecordBatch.decrementSequence."""
    if last_seq < delta:
        return INT32_MAX - (delta - last_seq) + 1
    return last_seq - delta


class Dumper:
    def __init__(self, args, console):
        self.args = args
        self.c = console
        self.json = args.json
        # Kafka's decoder flags imply --print-data-log (and so deep iteration)
        self.decoder = next((name for flag, name in internal_topics.decoder_flags().items()
                             if getattr(args, flag, False)), None)
        self.decode_internal = not getattr(args, "no_decode_internal", False)
        self.cur_decoder = None
        self.print_data = (args.print_data or args.skip_record_metadata or self.decoder is not None
                           or getattr(args, "value_format", None) is not None
                           or getattr(args, "key_format", None) is not None)
        self.deep = args.records or self.print_data
        self.enc = bytes_encoder(args.bytes)
        self.offsets = parse_offset_range(args.offset_range)
        self.times = parse_time_range(args.time_range)
        self.filtered = any(v is not None for v in self.offsets + self.times)
        self.max_bytes = args.max_bytes
        self.index_mode = args.index_sanity_check or args.verify_index_only
        self.topics = parse_name_list(args.topics)
        self.partitions = parse_int_list(args.partitions, "partition")
        self.replicas = getattr(args, "replicas", None)
        self.failed = False
        self.index_mismatches = {}
        self.time_mismatch, self.time_order, self.time_not_found = {}, {}, {}
        self.nonconsecutive = {}
        self._ranges = {}
        self._meta = (None, None)
        self.typed = None            # TypedOptions once the paths are known (run)
        self.unreadable = FailedValues()     # topics none of whose typed values could be read (said at the end)

    # -- driving ------------------------------------------------------------------------------
    def run(self):
        paths = list(self.args.paths) + [f for v in (self.args.files or []) for f in v.split(",") if f]
        if self.args.sample:
            from kafkafmt.sample import sample_dir

            paths.append(sample_dir())
        if not paths:
            raise UsageError("dump: give files or directories (or --sample)")
        targets = []
        folders = []
        try:
            self.typed = typed_options(self.args, paths)
            dirs = [cli_paths.isdir(p) for p in paths]
        except (StorageError, PermissionError) as exc:          # a path given that cannot be looked up
            raise input_error(exc) from None
        for p, is_dir in zip(paths, dirs):
            if is_dir:
                folders.append(p)       # found together: one discovery over every folder given
            else:
                targets += self.expand_file(p)
        if folders:
            targets = self.expand(folders) + targets
        total = 0
        for kind, path, _ in targets:
            try:
                if kind == "partition":
                    total += sum(s.size for s in path.list_segments())
                elif kind in ("log", "kraft-snapshot"):
                    total += cli_paths.getsize(path)
            except (OSError, KafkafmtError):
                pass
        with Progress(total, enabled=self.args.progress) as prog:
            self.c.progress = prog
            self.progress = prog
            for kind, path, from_dir in targets:
                self.dump_file(kind, path, from_dir)
            prog.close()
            self.c.progress = None
        self.kafka_summaries()
        self.unreadable.warn()
        return 1 if self.failed else 0

    def expand_file(self, path):
        find_inputs([path])      # missing / unreadable -> UsageError
        kind = file_kind(path)
        if kind in (None, "log"):
            check_kafka_file(path)    # named as Kafka data: it is, or it is an error
            kind = "log"
        return [(kind, path, False)]

    def expand(self, folders):
        found = find_inputs(folders, self.topics, self.partitions, self.replicas)
        for w in found.leftovers:
            if w.severity == "error":
                self.problem(w)
            else:
                self.c.warn(w.text()[len("warning: "):])
        say_notes(found, self.c)
        out = []
        for pd in found.partitions:
            if self.index_mode or self.args.all_files:
                out += self.partition_files(pd)
            else:       # its records, planned and read as every door reads a partition
                out.append(("partition", pd, True))
        loose = [f for f in found.files if file_kind(f) in ("log", "kraft-snapshot")]
        kept = set(kafka_files(found, loose, self.c))        # not Kafka data: skipped, with a warning
        for f in found.files:
            kind = file_kind(f)
            if kind is None or (f in loose and f not in kept):
                continue
            if self.args.all_files or (not self.index_mode and kind in ("log", "kraft-snapshot")
                                       and not is_leftover(f)):
                out.append((kind, f, True))
        if not found.partitions and not found.empty_log_dirs and not any(
                file_kind(f) and (f not in loose or f in kept) for f in found.files):
            raise UsageError(f"no partition folders, log dirs or segments found under {', '.join(folders)}"
                             + (" (after --topics/--partitions)" if self.topics or self.partitions else ""))
        return out

    def partition_files(self, pd):
        rows = []
        listing = pd.files() if pd.segments is None else \
            [(os.path.basename(s.url), s.url) for s in pd.segments]     # tiered uploads: their logs
        for name, full in listing:
            kind = file_kind(name)
            if kind is None:
                continue
            if self.index_mode:
                if kind not in ("index", "timeindex") or is_leftover(full):
                    continue
            elif not self.args.all_files and (kind != "log" or is_leftover(full)):
                continue
            log = log_name_of(name)
            base = segment_base(log) if log is not None else float("inf")
            rows.append((base, KIND_ORDER.get(kind, 9), name, kind, full))
        rows.sort()
        return [(kind, full, True) for *_, kind, full in rows]

    def problem(self, p: Problem):
        if p.severity == "error":
            self.failed = True
        if self.json:
            self.c.json(p.to_json())
        else:
            self.c.message(f"kafkafmt: {p.text()}")

    def header(self, path, kind, **extra):
        if self.json:
            self.c.json({"type": "file", "file": path, "kind": kind, **extra})
        else:
            self.c.write(f"Dumping {path}")

    def dump_file(self, kind, path, from_dir=False):
        try:
            if kind == "partition":
                self.dump_partition(path)
            elif kind in ("log", "kraft-snapshot"):
                self.dump_log(path, kind, from_dir)
            elif kind is None:
                self.header(path, "unknown")
                self.c.message(f"Ignoring unknown file {path}")
            else:
                getattr(self, "dump_" + kind.replace("-", "_"))(path)
        except KafkafmtError as exc:
            self.problem(Problem("error", exc.file or getattr(path, "url", path), exc.reason, exc.position,
                                 offset=exc.offset))
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            self.problem(Problem("error", getattr(path, "url", path), getattr(exc, "strerror", None) or str(exc)))

    # -- logs ---------------------------------------------------------------------------------
    def range_for(self, pd):
        if pd.url not in self._ranges:
            try:
                self._ranges[pd.url] = resolve_range(pd, self.offsets, self.times)
            except KafkafmtError as exc:     # the time seek met corrupt data: say so once per folder
                self._ranges[pd.url] = None
                self.problem(Problem("error", exc.file or pd.url, f"cannot seek by time: {exc.reason}",
                                     exc.position, offset=exc.offset))
        return self._ranges[pd.url]

    def dump_log(self, path, kind, from_dir=False):
        report = []
        self.cur_decoder = self.decoder or (internal_topics.decoder_for(path, kind) if self.decode_internal
                                            else None)
        opts = dict(errors="salvage", verify_crc=False, include_control=True)
        if not self.deep:
            opts["columns"] = ["offset", "timestamp"]     # batch lines only: no key/value copies
        sp = segment_in_partition(path)
        if self.filtered and sp is not None and not is_leftover(path):
            # a segment of a partition folder: seek with the partition's indexes
            pd, base = sp
            rng = self.range_for(pd)
            following = [s.base_offset for s in pd.list_segments() if s.base_offset > base]
            lo = hi = None
            if rng is not None:
                lo = base if rng[0] is None else max(rng[0], base)
                hi = following[0] if following else None
                if rng[1] is not None:
                    hi = rng[1] if hi is None else min(hi, rng[1])
            if rng is None or (hi is not None and hi <= lo):
                if not from_dir:
                    self.log_header(path, kind)
                return
            self.log_header(path, kind)
            self.print_chunks(path, iter_partition(pd, report, start_offset=lo, end_offset=hi, **opts),
                              report, (lo, hi))
            return
        with FileReader(path) as fr:
            rng = (None, None)
            if self.filtered:
                rng = fr.resolve_range(self.offsets, self.times)
                if rng is None:
                    if not from_dir:
                        self.log_header(path, kind)
                    return
            self.log_header(path, kind)
            chunks = fr.chunks(report, start_offset=rng[0], end_offset=rng[1], **opts)
            self.print_chunks(path, chunks, report, rng)

    def dump_partition(self, pd):
        """A partition's records segment by segment -- local, tiered uploads, or both merged -- from
        its log start (records below it were deleted; name a segment file to see every byte), the
        tasks planned as every door plans them."""
        report = []
        self.cur_decoder = self.decoder or (internal_topics.topic_decoders().get(pd.topic) if self.decode_internal
                                            else None)
        rng = self.range_for(pd) if self.filtered else (None, None)
        segments = pd.list_segments(report)
        tasks = plan(pd, start_offset=rng[0], end_offset=rng[1], report=report) if rng is not None else []
        warn_fallbacks(report, 0, pd.name)
        options = DecodeOptions.for_columns(None if self.deep else ["offset", "timestamp"], verify_crc=False,
                                            include_control=True)
        by_segment = {}
        for t in tasks:
            by_segment.setdefault(t.segment.base_offset, []).append(t)
        after = [None]

        def chunks(seg_tasks):
            for recs, after[0] in read_tasks(seg_tasks, report, options, "salvage", CHUNK_BYTES, after[0]):
                yield recs

        for seg in segments:
            mine = by_segment.get(seg.base_offset)
            if mine is None and (self.filtered or seg.size):
                continue        # outside the range asked for, or below the log start
            self.log_header(seg.url, "log", base=seg.base_offset)
            if mine:
                self.print_chunks(seg.url, chunks(mine), report, rng or (None, None))

    def log_header(self, path, kind, base=None):
        extra = {}
        base = segment_base(path) if base is None else base
        lines = []
        if kind == "kraft-snapshot":
            name = os.path.basename(path)
            m = _KRAFT_SNAPSHOT.match(name)
            if m:
                extra = {"snapshotEndOffset": int(m.group(1)), "snapshotEpoch": int(m.group(2))}
                lines.append(f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}")
            elif name == "bootstrap.checkpoint":
                lines.append("KRaft bootstrap snapshot")
        elif base is not None:
            extra = {"logStartOffset": base}
            lines.append(f"Log starting offset: {base}")
        self.header(path, kind, **extra)
        if not self.json:
            for line in lines:
                self.c.write(line)

    def print_chunks(self, path, chunks, report, rng):
        lo, hi = rng
        seen = 0
        first_pos = None
        prev_offset = [None]
        stop = False
        try:
            for chunk in chunks:
                b = chunk.batches
                pos = np.asarray(b["position"], np.int64)
                size = np.asarray(b["size"], np.int64)
                order = np.argsort(pos, kind="stable")
                keep = np.ones(len(b), bool)
                if lo is not None:
                    keep &= np.asarray(b["last_offset"]) >= lo
                if hi is not None:
                    keep &= np.asarray(b["base_offset"]) < hi
                sel = [int(i) for i in order if keep[i]]
                if self.max_bytes is not None and sel:
                    if first_pos is None:
                        first_pos = int(pos[sel[0]])
                    fits = [i for i in sel if pos[i] + size[i] <= first_pos + self.max_bytes]
                    stop = len(fits) < len(sel)
                    sel = fits
                new = report[seen:]
                seen = len(report)
                self.print_batches(path, chunk, sel, sorted(new, key=_start), prev_offset)
                self.progress.advance(int(size.sum()), len(chunk))
                if stop:
                    break
        finally:
            close = getattr(chunks, "close", None)
            if close:
                close()
        for e in sorted(report[seen:], key=_start):
            self.print_report_entry(path, e)

    def print_report_entry(self, path, e):
        reason = e.message
        if e.kind in (ReportKind.TRUNCATED, ReportKind.ZEROS):
            if self.max_bytes is not None:
                return
            n = e["end"] - e["start"]
            if self.json:
                self.c.json({"type": "trailing", "file": path, "position": e["start"], "bytes": n, "reason": reason})
            else:
                self.c.write(f"Found {n} invalid bytes at the end of {os.path.basename(path)}")
            if e.kind is ReportKind.TRUNCATED:
                self.failed = True
            return
        if e.start is None:
            if e.kind is not ReportKind.INDEX_FALLBACK:      # those the library warns about itself
                self.c.warn(f"{e.file}: {reason}")
            return
        self.failed = True
        n = e["end"] - e["start"]
        if self.json:
            self.c.json({"type": "skipped", "file": path, "position": e["start"], "end": e["end"], "bytes": n,
                         "offset": e.get("offset"), "reason": reason})
        else:
            at = f" (batch offset {e['offset']})" if e.get("offset") is not None else ""
            self.c.write(f"Skipped {n} corrupt bytes at position {e['start']}{at}: {reason}")
        self.c.message(f"kafkafmt: {path}: position {e['start']}: {reason}; {n} bytes skipped")

    def print_batches(self, path, recs, sel, pending, prev_offset):
        if not sel and not pending:
            return
        b = recs.batches
        L = {k: b[k].tolist() for k in ("position", "size", "base_offset", "last_offset", "last_offset_delta",
                                        "partition_leader_epoch", "magic", "crc", "crc_valid", "attributes",
                                        "codec", "timestamp_type", "is_transactional", "is_control", "producer_id",
                                        "producer_epoch", "base_sequence", "first_timestamp", "max_timestamp",
                                        "record_count")}
        segs = b["segment"].tolist() if "segment" in b.columns else None
        rec_ranges = None
        if self.deep and len(recs):
            bidx = np.asarray(recs.batch_index, np.int64)
            sel_arr = np.asarray(sel, np.int64)
            rec_ranges = (np.searchsorted(bidx, sel_arr, "left").tolist(), np.searchsorted(bidx, sel_arr, "right").tolist())
            rv = _RecordView(recs, self, path)
        pending = list(pending)
        topic = recs.topic if isinstance(recs.topic, str) else None
        part = recs.partition if isinstance(recs.partition, (int, np.integer)) else None
        for k, i in enumerate(sel):
            p = L["position"][i]
            while pending and (pending[0].get("start") is None or pending[0]["start"] < p):
                self.print_report_entry(path, pending.pop(0))
            if not L["crc_valid"][i]:
                self.failed = True
                self.c.message(f"kafkafmt: error: {path} position {p} (offset {L['base_offset'][i]}): CRC mismatch: "
                               f"the stored checksum {L['crc'][i]} does not match the batch's bytes")
            if self.json:
                self.c.json(self.batch_json(path, L, i, topic, part, segs))
            else:
                self.c.write(self.batch_text(L, i))
            if rec_ranges is not None:
                lo, hi = rec_ranges[0][k], rec_ranges[1][k]
                if hi > lo:
                    rv.emit(path, L, i, lo, hi, topic, part, prev_offset)
        for e in pending:
            self.print_report_entry(path, e)

    @staticmethod
    def batch_text(L, i):
        magic = L["magic"][i]
        ts_name = TIMESTAMP_TYPES.get(L["timestamp_type"][i], "NoTimestampType")
        if magic >= 2:
            dh = f"OptionalLong[{L['first_timestamp'][i]}]" if L["attributes"][i] & DELETE_HORIZON_FLAG \
                else "OptionalLong.empty"
            head = (f"baseOffset: {L['base_offset'][i]} lastOffset: {L['last_offset'][i]} "
                    f"count: {L['record_count'][i]} baseSequence: {L['base_sequence'][i]} "
                    f"lastSequence: {last_sequence(L['base_sequence'][i], L['last_offset_delta'][i])} "
                    f"producerId: {L['producer_id'][i]} producerEpoch: {L['producer_epoch'][i]} "
                    f"partitionLeaderEpoch: {L['partition_leader_epoch'][i]} "
                    f"isTransactional: {_java_bool(L['is_transactional'][i])} "
                    f"isControl: {_java_bool(L['is_control'][i])} deleteHorizonMs: {dh}")
        else:
            head = f"offset: {L['last_offset'][i]}"
        return (f"{head} position: {L['position'][i]} {ts_name}: {L['max_timestamp'][i]} size: {L['size'][i]} "
                f"magic: {magic} compresscodec: {CODEC_NAMES.get(L['codec'][i], L['codec'][i])} "
                f"crc: {L['crc'][i]} isvalid: {_java_bool(L['crc_valid'][i])}")

    @staticmethod
    def batch_json(path, L, i, topic, part, segs):
        magic = L["magic"][i]
        return {
            "type": "batch", "file": path, "topic": topic, "partition": part,
            "segment": segs[i] if segs is not None else None,
            "baseOffset": L["base_offset"][i], "lastOffset": L["last_offset"][i], "count": L["record_count"][i],
            "baseSequence": L["base_sequence"][i],
            "lastSequence": last_sequence(L["base_sequence"][i], L["last_offset_delta"][i]) if magic >= 2 else -1,
            "producerId": L["producer_id"][i], "producerEpoch": L["producer_epoch"][i],
            "partitionLeaderEpoch": L["partition_leader_epoch"][i],
            "isTransactional": bool(L["is_transactional"][i]), "isControl": bool(L["is_control"][i]),
            "deleteHorizonMs": L["first_timestamp"][i] if magic >= 2 and L["attributes"][i] & DELETE_HORIZON_FLAG
            else None,
            "position": L["position"][i], "size": L["size"][i],
            "timestampType": TIMESTAMP_TYPES.get(L["timestamp_type"][i], "NoTimestampType"),
            "firstTimestamp": L["first_timestamp"][i], "maxTimestamp": L["max_timestamp"][i],
            "magic": magic, "compresscodec": CODEC_NAMES.get(L["codec"][i], str(L["codec"][i])),
            "crc": L["crc"][i], "isvalid": bool(L["crc_valid"][i]), "attributes": L["attributes"][i],
        }

    # -- index files --------------------------------------------------------------------------
    def log_meta(self, log):
        """(batches, record offsets, timestamps, batch rows) of a segment, cached for its index files."""
        if self._meta[0] != log:
            report = []
            meta = log_metadata(log, report)
            for e in report:
                if e.is_damage:
                    self.c.warn(f"{log}: position {e['start']}: {e['reason']} (the index is checked against the "
                                f"intact batches)")
            self._meta = (log, meta)
        return self._meta[1]

    def _sibling_log(self, path):
        name = log_name_of(path)
        log = None if name is None else cli_paths.sibling(path, name)
        return log if log is not None and cli_paths.exists(log) else None

    def dump_index(self, path):
        self.header(path, "index")
        base = sidefiles.offset_from_file_name(path)
        data = cli_paths.read_bytes(path)
        n = len(data) // 8
        entries = sidefiles.read_index(data[:n * 8], base, trim_zeros=False)
        if self.args.index_sanity_check:
            problem = None
            if n and int(entries["offset"][n - 1]) < base:
                problem = (f"Corrupt index found, index file ({path}) has non-zero size but the last offset is "
                           f"{int(entries['offset'][n - 1])} which is less than the base offset {base}")
            elif len(data) % 8:
                problem = f"Index file {path} is corrupt, found {len(data)} bytes which is neither positive nor a multiple of 8"
            self.sanity_result(path, problem, (n - 1) * 8 if problem and n else len(data))
            return
        if n == 0:
            if self.json:
                self.c.json({"type": "empty", "file": path})
            else:
                self.c.write(f"{path} is empty.")
            return
        log = self._sibling_log(path)
        last_at = None
        if log is None:
            self.c.warn(f"{path}: no {stem_log(path)} beside it: entries are printed unchecked")
        else:
            batches = self.log_meta(log)[0]
            if batches is not None and len(batches):
                last_at = dict(zip(batches["position"].tolist(), batches["last_offset"].tolist()))
            else:
                last_at = {}
        offs, poss = entries["offset"].tolist(), entries["position"].tolist()
        for i in range(n):
            off, pos = offs[i], poss[i]
            if off == base and i > 0:
                break     # the zero-filled tail of a preallocated index (as kafka-dump-log stops)
            if last_at is not None:
                got = last_at.get(pos, -1)
                if got != off:
                    self.index_mismatches.setdefault(os.path.abspath(path), []).append((off, got, pos))
            if not self.args.verify_index_only:
                if self.json:
                    self.c.json({"type": "index_entry", "file": path, "offset": off, "position": pos})
                else:
                    self.c.write(f"offset: {off} position: {pos}")

    def dump_timeindex(self, path):
        self.header(path, "timeindex")
        base = sidefiles.offset_from_file_name(path)
        data = cli_paths.read_bytes(path)
        n = len(data) // 12
        entries = sidefiles.read_timeindex(data[:n * 12], base, trim_zeros=False)
        ts, offs = entries["timestamp"].tolist(), entries["offset"].tolist()
        if self.args.index_sanity_check:
            problem = None
            if n and ts[n - 1] < ts[0]:
                problem = (f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
                           f"timestamp is {ts[n - 1]} which is less than the first timestamp {ts[0]}")
            elif n and offs[n - 1] < base:
                problem = (f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
                           f"offset is {offs[n - 1]} which is less than the first offset {base}")
            elif len(data) % 12:
                problem = (f"Time index file {path} is corrupt, found {len(data)} bytes which is neither positive "
                           f"nor a multiple of 12")
            self.sanity_result(path, problem, (n - 1) * 12 if problem and n else len(data))
            return
        log = self._sibling_log(path)
        meta = None
        if log is None:
            self.c.warn(f"{path}: no {stem_log(path)} beside it: entries are printed unchecked")
        else:
            batches, _, rts, rb = self.log_meta(log)
            if batches is not None and len(batches):
                maxts = np.full(len(batches), -1, np.int64)
                if len(rb):
                    np.maximum.at(maxts, rb, rts)
                last = np.asarray(batches["last_offset"], np.int64)
                meta = (np.asarray(batches["base_offset"], np.int64), last, maxts)
            else:
                meta = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
        key = os.path.abspath(path)
        prev = -1
        for i in range(n):
            t, off = ts[i], offs[i]
            if off == base and i > 0:
                break
            if meta is not None:
                # an entry's offset may be any offset of the batch holding the max timestamp: Kafka
                # before KAFKA-16310 (3.8) wrote the record's offset, later ones the batch's last
                # offset, and the broker's time lookups accept both (kafka-dump-log flags the
                # former; kafkafmt, like `verify`, does not)
                first, last, maxts = meta
                j = int(np.searchsorted(last, off, "left"))
                if j >= len(last):
                    self.time_not_found.setdefault(key, []).append((off, -1))
                elif first[j] > off:
                    self.time_not_found.setdefault(key, []).append((off, int(last[j])))
                else:
                    if int(maxts[j]) != t:
                        self.time_mismatch.setdefault(key, []).append((t, int(maxts[j])))
                    if prev >= t:
                        self.time_order.setdefault(key, []).append((t, prev))
            if not self.args.verify_index_only:
                if self.json:
                    self.c.json({"type": "timeindex_entry", "file": path, "timestamp": t, "offset": off})
                else:
                    self.c.write(f"timestamp: {t} offset: {off}")
            prev = t

    def sanity_result(self, path, problem, position):
        if problem is None:
            if self.json:
                self.c.json({"type": "sanity_check", "file": path, "passed": True})
            else:
                self.c.write(f"{path} passed sanity check.")
            return
        self.failed = True
        if self.json:
            self.c.json({"type": "sanity_check", "file": path, "passed": False, "position": position,
                         "message": problem})
        else:
            self.c.message(problem)

    # -- other side files ---------------------------------------------------------------------
    def dump_txnindex(self, path):
        self.header(path, "txnindex")
        data = cli_paths.read_bytes(path)
        n = len(data) // 34
        if len(data) % 34:
            self.problem(Problem("error", path, f"partial entry of {len(data) % 34} bytes at the end "
                                                f"(Kafka ignores it)", n * 34))
        for e in sidefiles.read_txnindex(data[:n * 34]):
            if self.json:
                self.c.json({"type": "aborted_txn", "file": path, "version": int(e["version"]),
                             "producerId": int(e["producer_id"]), "firstOffset": int(e["first_offset"]),
                             "lastOffset": int(e["last_offset"]), "lastStableOffset": int(e["last_stable_offset"])})
            else:
                self.c.write(f"version: {int(e['version'])} producerId: {int(e['producer_id'])} "
                             f"firstOffset: {int(e['first_offset'])} lastOffset: {int(e['last_offset'])} "
                             f"lastStableOffset: {int(e['last_stable_offset'])}")

    def dump_producer_snapshot(self, path):
        self.header(path, "producer-snapshot")
        snap = sidefiles.read_producer_snapshot(cli_paths.readable(path), verify_crc=False)
        if not snap["crc_valid"]:
            self.problem(Problem("error", path, f"Snapshot is corrupt (CRC is no longer valid). Stored crc: "
                                                f"{snap['crc']}. Computed crc: {snap['computed_crc']}", 2))
        for e in snap["entries"]:
            pid, epoch, cepoch = int(e["producer_id"]), int(e["epoch"]), int(e["coordinator_epoch"])
            txn = int(e["current_txn_first_offset"])
            last_off, seq, delta, ts = int(e["last_offset"]), int(e["last_sequence"]), int(e["offset_delta"]), int(e["timestamp"])
            if self.json:
                obj = {"type": "producer_state", "file": path, "producerId": pid, "producerEpoch": epoch,
                       "coordinatorEpoch": cepoch, "currentTxnFirstOffset": txn if txn >= 0 else None,
                       "lastTimestamp": ts}
                if last_off >= 0:
                    obj.update(firstSequence=first_sequence(seq, delta), lastSequence=seq, lastOffset=last_off,
                               offsetDelta=delta, timestamp=ts)
                self.c.json(obj)
                continue
            line = (f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {cepoch} currentTxnFirstOffset: "
                    f"{f'OptionalLong[{txn}]' if txn >= 0 else 'OptionalLong.empty'} lastTimestamp: {ts}")
            if last_off >= 0:
                line += (f" firstSequence: {first_sequence(seq, delta)} lastSequence: {seq} lastOffset: {last_off} "
                         f"offsetDelta: {delta} timestamp: {ts}")
            self.c.write(line)

    def dump_leader_epoch(self, path):
        self.header(path, "leader-epoch")
        cp = sidefiles.read_leader_epoch_checkpoint(cli_paths.readable(path))
        if self.json:
            self.c.json({"type": "leader_epoch_checkpoint", "file": path, "version": cp["version"],
                         "entries": [{"epoch": int(e), "startOffset": int(o)} for e, o in cp["entries"].tolist()]})
            return
        self.c.write(f"version: {cp['version']}")
        for e, o in cp["entries"].tolist():
            self.c.write(f"epoch: {e} startOffset: {o}")

    def dump_partition_metadata(self, path):
        self.header(path, "partition-metadata")
        md = sidefiles.read_partition_metadata(cli_paths.readable(path))
        if self.json:
            self.c.json({"type": "partition_metadata", "file": path, "version": md["version"],
                         "topicId": md["topic_id"], "topicUuid": str(md["topic_uuid"])})
        else:
            self.c.write(f"version: {md['version']} topicId: {md['topic_id']} ({md['topic_uuid']})")

    def dump_offset_checkpoint(self, path):
        self.header(path, "offset-checkpoint")
        cp = sidefiles.read_offset_checkpoint(cli_paths.readable(path))
        for (topic, part), off in cp.items():
            if self.json:
                self.c.json({"type": "checkpoint_entry", "file": path, "topic": topic, "partition": part, "offset": off})
            else:
                self.c.write(f"topic: {topic} partition: {part} offset: {off}")

    def dump_quorum_state(self, path):
        self.header(path, "quorum-state")
        obj = sidefiles.read_quorum_state(cli_paths.readable(path))
        if self.json:
            self.c.json({"type": "quorum_state", "file": path, "state": obj})
        else:
            from kafkafmt.cli.output import dumps

            self.c.write(dumps(obj))

    def dump_meta_properties(self, path):
        self.header(path, "meta-properties")
        props = sidefiles.read_meta_properties(cli_paths.readable(path))
        if self.json:
            self.c.json({"type": "meta_properties", "file": path, "properties": props})
        else:
            for k, v in props.items():
                self.c.write(f"{k}={v}")

    # -- the summaries Kafka prints on stderr -------------------------------------------------
    def kafka_summaries(self):
        if self.index_mismatches or self.time_mismatch or self.time_order or self.time_not_found:
            self.failed = True
        if self.json:
            for f, rows in self.index_mismatches.items():
                for off, got, pos in rows:
                    self.c.json({"type": "index_mismatch", "file": f, "indexOffset": off, "logOffset": got,
                                 "position": pos})
            for kind, table in (("timeindex_mismatch", self.time_mismatch), ("timeindex_out_of_order", self.time_order),
                                ("timeindex_offset_not_found", self.time_not_found)):
                for f, rows in table.items():
                    for a, b in rows:
                        self.c.json({"type": kind, "file": f, "first": a, "second": b})
            for f, rows in self.nonconsecutive.items():
                for a, b in rows:
                    self.c.json({"type": "non_consecutive", "file": f, "offset": a, "next": b})
            return
        for f, rows in self.index_mismatches.items():
            self.c.message(f"Mismatches in :{f}")
            for off, got, _pos in sorted(rows, reverse=True):
                self.c.message(f"  Index offset: {off}, log offset: {got}")
        for f, rows in self.time_mismatch.items():
            self.c.message(f"Found timestamp mismatch in :{f}")
            for a, b in rows:
                self.c.message(f"  Index timestamp: {a}, log timestamp: {b}")
        for f, rows in self.time_order.items():
            self.c.message(f"Found out of order timestamp in :{f}")
            for a, b in rows:
                self.c.message(f"  Index timestamp: {a}, Previously indexed timestamp: {b}")
        for f, rows in self.time_not_found.items():
            self.c.message("The following indexed offsets are not found in the log.")
            for a, b in rows:
                self.c.message(f"Indexed offset: {a}, found log offset: {b}")
        for f, rows in self.nonconsecutive.items():
            self.c.message(f"Non-consecutive offsets in {f}")
            for a, b in rows:
                self.c.message(f"  {a} is followed by {b}")


def stem_log(path):
    return log_name_of(path) or os.path.basename(path) + ".log"


def _start(e):
    s = e.get("start")
    return -1 if s is None else s


class _RecordView:
    """The per-record columns of one chunk as Python lists, for printing."""

    def __init__(self, recs, d: Dumper, path):
        self.d = d
        self.off = recs.offset.tolist()
        self.ts = recs.timestamp.tolist()
        klen = recs.key.lengths().astype(np.int64)
        vlen = recs.value.lengths().astype(np.int64)
        if recs.key.null_count:
            klen[recs.key.is_null()] = -1
        if recs.value.null_count:
            vlen[recs.value.is_null()] = -1
        self.klen, self.vlen = klen.tolist(), vlen.tolist()
        self.seq = recs.sequence.tolist() if len(recs) else []
        ho = np.asarray(recs.headers.offsets, np.int64)
        self.hoff = ho.tolist()
        self.hkeys = None
        if recs.headers.count():
            lo, hi = int(ho[0]), int(ho[-1])
            self.hbase = lo
            self.hkeys = [k.decode("utf-8", "replace") for k in recs.headers.key[lo:hi].to_pylist()]
            self.hvals = recs.headers.value[lo:hi].to_pylist() if (d.json or d.print_data) else None
        self.keys = recs.key.to_pylist() if (d.json or d.print_data) else None
        self.vals = recs.value.to_pylist() if (d.json or d.print_data) else None
        self.typed = {}             # side -> (JSON texts, schema ids, errors, kept as bytes) of typed keys / values
        if d.typed is not None and d.typed.active and (d.json or d.print_data) and len(recs):
            if recs.topic is None:
                recs = recs.replace(topic=topic_of_file(path))
            recs = decode_values(recs, d.typed)
            d.unreadable.add(recs)
            for side, dec in recs.typed.items():
                kept = [False] * len(dec) if dec.untyped is None else dec.untyped.is_valid().to_pylist()
                self.typed[side] = (dec.json(), dec.schema_id.to_pylist(), dec.error.to_pylist(), kept)
        self.value_col = recs.value
        c = recs.controls
        self.controls = {}
        if len(c):
            for o, t, v, e in zip(c["offset"].tolist(), c["type"].tolist(), c["version"].tolist(),
                                  c["coordinator_epoch"].tolist()):
                self.controls[o] = (t, v, e)

    def headers(self, r):
        lo, hi = self.hoff[r], self.hoff[r + 1]
        if hi <= lo or self.hkeys is None:
            return [], []
        a, b = lo - self.hbase, hi - self.hbase
        return self.hkeys[a:b], (self.hvals[a:b] if self.hvals is not None else None)

    def typed_text(self, side, r, raw):
        """A typed key or value as JSON text; one that could not be read: its bytes and why; one of
        a topic kept as bytes (--untyped-topics bytes): its bytes."""
        if side not in self.typed or self.typed[side][3][r]:
            return None if raw is None else escape_text(raw)
        texts, _, errors, _ = self.typed[side]
        if errors[r] is not None:
            return f"{escape_text(raw)} ({side}Error: {errors[r]})"
        return texts[r]

    def typed_json(self, obj, r):
        """Typed keys and values in a JSON line: the value as JSON, its schema id, its error (a
        key or value of a topic kept as bytes stays its bytes, as --bytes says)."""
        for side, (texts, ids, errors, kept) in self.typed.items():
            if kept[r]:
                continue
            obj[side] = None if texts[r] is None else json.loads(texts[r])
            obj[side + "SchemaId"] = ids[r]
            obj[side + "Error"] = errors[r]

    def emit(self, path, L, i, lo, hi, topic, part, prev_offset):
        d = self.d
        magic = L["magic"][i]
        is_control = bool(L["is_control"][i])
        ts_name = TIMESTAMP_TYPES.get(L["timestamp_type"][i], "NoTimestampType")
        shallow = magic < 2 and L["codec"][i] == 0
        skip_meta = d.args.skip_record_metadata
        # non-consecutive offsets, as kafka-dump-log reports them with --deep-iteration
        offs = self.off[lo:hi]
        prev = prev_offset[0]
        for o in offs:
            if prev is not None and o != prev + 1:
                d.nonconsecutive.setdefault(os.path.abspath(path), []).append((prev, o))
            prev = o
        prev_offset[0] = prev
        write = d.c.write
        for r in range(lo, hi):
            o = self.off[r]
            if d.json:
                hk, hv = self.headers(r)
                obj = {"type": "record", "file": path, "topic": topic, "partition": part, "offset": o,
                       "timestampType": ts_name, "timestamp": self.ts[r], "keySize": self.klen[r],
                       "valueSize": self.vlen[r], "sequence": self.seq[r], "batchBaseOffset": L["base_offset"][i],
                       "isControl": is_control, "headerKeys": hk,
                       "headers": [{"key": k, "value": d.enc(v)} for k, v in zip(hk, hv or [None] * len(hk))],
                       "key": d.enc(self.keys[r]), "value": d.enc(self.vals[r])}
                if shallow:
                    obj["isValid"], obj["crc"] = bool(L["crc_valid"][i]), L["crc"][i]
                if is_control and o in self.controls:
                    obj["control"] = control_json(*self.controls[o], self.value_col[r])
                elif d.cur_decoder is not None and not is_control:
                    obj.update(internal_topics.record_json(d.cur_decoder, self.keys[r], self.vals[r], o))
                elif self.typed and not is_control:
                    self.typed_json(obj, r)
                d.c.json(obj)
                continue
            if skip_meta:
                if is_control:
                    continue
                line = ""
                prefix = "| "
            else:
                line = (f"| offset: {o} {ts_name}: {self.ts[r]} keySize: {self.klen[r]} "
                        f"valueSize: {self.vlen[r]}")
                if magic >= 2:
                    hk, _ = self.headers(r)
                    line += f" sequence: {self.seq[r]} headerKeys: [{','.join(escape_text(k.encode()) for k in hk)}]"
                elif shallow:
                    line += f" isValid: {_java_bool(L['crc_valid'][i])} crc: {L['crc'][i]}"
                if is_control and o in self.controls:
                    t, v, e = self.controls[o]
                    line += control_text(t, v, e, self.value_col[r])
                prefix = " "
            if d.print_data and not is_control:
                k, v = self.keys[r], self.vals[r]
                if d.cur_decoder is not None:
                    try:
                        k, v = internal_topics.record_texts(d.cur_decoder, k, v, o)
                    except internal_topics.MissingKey as exc:     # Kafka's tool stops here
                        d.problem(Problem("error", path, str(exc), offset=o))
                        k = v = None
                elif self.typed:
                    k, v = self.typed_text("key", r, k), self.typed_text("value", r, v)
                else:
                    k = None if k is None else escape_text(k)
                    v = None if v is None else escape_text(v)
                if k is not None:
                    line += prefix + "key: " + k
                    prefix = " "
                if v is not None:
                    line += prefix + "payload: " + v
            write(line)
