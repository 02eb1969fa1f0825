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

import os

from kafkafmt.errors import KafkafmtError, StorageError

from kafkafmt.cli.usage import UsageError
from kafkafmt.cli.common import (add_replicas_option, add_typed_options, no_data, say_notes, Problem, bytes_encoder,
                                 check_kafka_file, kafka_files, file_kind, find_inputs, input_error,
                                 typed_options, is_leftover, parse_int_list, parse_name_list, parse_offset_range,
                                 parse_time_range, read_options, segment_base, topic_ids)
from kafkafmt.log import log_name_of
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli import internal_topics
from kafkafmt.internal import decoders as internal_decoders
from kafkafmt.cli.progress import Progress
from kafkafmt.cli.arguments import add_filter_options, count, offset_range, size, time_range, value_type
from kafkafmt.cli import kcat_format
from kafkafmt.cli.dump_records import RecordDump
from kafkafmt.cli.reading import scan_typed
from kafkafmt.cli.dump_sidefiles import SideFileDump
from kafkafmt.values import FailedValues

KIND_ORDER = {"log": 0, "index": 1, "timeindex": 2, "txnindex": 3, "producer-snapshot": 4}


def add_parser(sub, parents, command):
    p = sub.add_parser(
        command.name, parents=parents, help=command.help,
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
    add_filter_options(p, "only these topics (in directories)", "only these partition numbers (in directories)")
    add_replicas_option(p)
    add_typed_options(p, "--key-decoder", "--value-decoder",
                      "print them as JSON text (Avro as kafka-avro-console-consumer prints it; Protobuf, JSON Schema "
                      "and JSON as the JSON of their decoded fields, bytes in base64; strings as JSON strings); "
                      "implies --print-data")
    p.add_argument("--records", "--deep-iteration", dest="records", action="store_true",
                   help="print every record, not only batches (Kafka: --deep-iteration)")
    p.add_argument("--print-data", "--print-data-log", dest="print_data", action="store_true",
                   help="print keys and values (UTF-8; invalid bytes as \\xNN); implies --records")
    p.add_argument("--skip-record-metadata", action="store_true",
                   help="print only keys and values of records (and no control records); implies --print-data")
    p.add_argument("--json", action="store_true", help="JSON lines with every field instead of text")
    p.add_argument("--bytes", choices=("base64", "utf8", "hex"), default="base64",
                   help="encoding of keys, values and header values in JSON (default base64)")
    p.add_argument("--offset-range", type=offset_range, metavar="A:B",
                   help="only offsets A <= offset < B (A:, :B, or one offset)")
    p.add_argument("--time-range", type=time_range, metavar="T1:T2",
                   help="only records from the first with timestamp >= T1 up to the first with timestamp >= T2 "
                        "(ms or ISO-8601, UTC by default; write T1..T2 when the times contain colons)")
    p.add_argument("--max-bytes", type=size, metavar="N",
                   help="read at most N bytes of batches per log file (K/M/G suffixes)")
    p.add_argument("-c", "--max-records", type=count, metavar="N",
                   help="stop once N records are dumped (kcat's -c): N record lines with --records or --format, "
                        "else the batches holding the first N records")
    p.add_argument("-f", "--format", type=value_type(kcat_format.parse), metavar="FORMAT", dest="format",
                   help="one line per record as kcat -f prints it, FORMAT holding kcat's tokens: "
                        + kcat_format.TOKENS_HELP.replace("%", "%%") + " (no batch lines or file headers; control "
                        "records left out, as a consumer never sees them)")
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
    return p


def _formatter():
    import argparse

    return argparse.RawDescriptionHelpFormatter


def run(args, console):
    return Dumper(args, console).run()


class Dumper(RecordDump, SideFileDump):
    def __init__(self, args, console):
        self.args = args
        self.c = console
        self.json = args.json
        # Kafka's decoder flags imply --print-data-log (and so deep iteration)
        self.decoder = next((name for flag, name in internal_topics.decoder_flags().items()
                             if getattr(args, flag, False)), None)
        self.decode_internal = not getattr(args, "no_decode_internal", False)
        self.cur_decoder = None
        self.fmt = getattr(args, "format", None)          # kcat's -f: one line per record
        if self.fmt is not None and args.json:
            raise UsageError("--format prints a line of text per record: leave out --json")
        self.print_data = (args.print_data or args.skip_record_metadata or self.decoder is not None
                           or getattr(args, "value_format", None) is not None
                           or getattr(args, "key_format", None) is not None or self.fmt is not None)
        self.deep = args.records or self.print_data
        self.remaining = getattr(args, "max_records", None)     # records still to dump (-c), None: all
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
        self.typed = scan_typed(self.typed, [p for kind, p, _ in targets if kind == "partition"],
                                [p for kind, p, _ in targets if kind == "log"],
                                read_options(self.args, errors="salvage", start_offset=self.offsets[0],
                                             end_offset=self.offsets[1], start_timestamp=self.times[0],
                                             end_timestamp=self.times[1]))
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
                if self.stopped:
                    break
                self.dump_file(kind, path, from_dir)
            prog.close()
            self.c.progress = None
        self.kafka_summaries()
        self.unreadable.warn()
        return 1 if self.failed else 0

    @property
    def stopped(self):
        """Whether dumping stops here: ``-c`` records dumped, or stdout's reader went away (``| head``) --
        what was read so far decides the exit code."""
        return self.remaining == 0 or self.c.gone

    def counted(self, n):
        """Count ``n`` records dumped against ``-c``."""
        if self.remaining is not None:
            self.remaining = max(0, self.remaining - n)

    def expand_file(self, path):
        find_inputs([path])      # missing / unreadable -> UsageError
        kind = file_kind(path)
        if kind in (None, "log"):
            check_kafka_file(path)    # named as Kafka data: it is, or it is an error
            kind = "log"
        return [(kind, path, False)]

    def expand(self, folders):
        found = find_inputs(folders, self.topics, self.partitions, self.replicas, topic_ids(self.args))
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
        filtered = bool(self.topics or self.partitions)
        # with --topics/--partitions, what is found must be records of those (a log dir's own files are not)
        shown = [f for f in found.files if (file_kind(f) in ("log", "kraft-snapshot") if filtered else file_kind(f))
                 and (f not in loose or f in kept)]
        err = no_data(found, shown, folders, filtered)
        if err is not None:
            raise err
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
        if self.fmt is not None:
            return                  # kcat's lines: records only
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
        # kafka-dump-log.sh's wording, each table's file line then one line per pair
        for table, head, line in (
                (self.time_mismatch, "Found timestamp mismatch in :{f}", "  Index timestamp: {a}, log timestamp: {b}"),
                (self.time_order, "Found out of order timestamp in :{f}",
                 "  Index timestamp: {a}, Previously indexed timestamp: {b}"),
                (self.time_not_found, "The following indexed offsets are not found in the log.",
                 "Indexed offset: {a}, found log offset: {b}"),
                (self.nonconsecutive, "Non-consecutive offsets in {f}", "  {a} is followed by {b}")):
            for f, rows in table.items():
                self.c.message(head.format(f=f))
                for a, b in rows:
                    self.c.message(line.format(a=a, b=b))
