"""``kafkafmt export``: write the records of log directories to Parquet, CSV, JSON lines or Arrow
IPC, with the columns of Spark's Kafka source plus topic and partition.

Schema (Parquet and Arrow): key binary, value binary, topic string, partition int32, offset int64,
timestamp timestamp[ms, UTC], timestampType int32, headers list<struct<key string, value binary>>
(null when a record has none); ``--batch-metadata`` adds producerId, producerEpoch, baseSequence,
leaderEpoch and codec. Typed keys and values are the library's Arrow columns in the types every reader of
the file holds (`kafkafmt.record.portable_table`: a decimal of more than 38 digits as its exact text, an
Avro duration as struct<months, days, nanoseconds>, as Delta and Iceberg data files hold them). CSV and JSON lines carry the same columns with keys, values and header
values encoded as ``--bytes`` says (base64 by default), timestamps as milliseconds since the
epoch and headers (in CSV) as a JSON array.

Records stream partition by partition in chunks of bounded size (Parquet is written one row group
per few chunks), so memory does not grow with the data. The output is written to a temporary
file beside the target and renamed when complete.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import os
import sys
import time

import numpy as np

from kafkafmt._util.durable import crash_point, temp_path
from kafkafmt.internal import INTERNAL_TABLES
from kafkafmt.read import Gathering, decoded_bytes, internal_topic, iter_partitions_with, join_chunks
from kafkafmt.values import decode_values
from kafkafmt.record import BATCH_METADATA_COLUMNS, TYPED_COLUMNS, UNTYPED_COLUMNS, portable_table
from kafkafmt.values import FailedValues, conform

from kafkafmt.cli.usage import UsageError
from kafkafmt.cli.common import (add_replicas_option, command_text, add_typed_options, no_data, say_found, bytes_encoder,
                                 checked_record_files, find_inputs, human_bytes, read_options, typed_options, input_paths, parse_int_list, parse_name_list, parse_offset_range, parse_time_range,
                                 report_problem, topic_ids)
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.output import dumps
from kafkafmt.cli.progress import Progress
from kafkafmt.cli.reading import CHUNK_BYTES, FileReader, scan_typed, topic_of_file
from kafkafmt.cli.arguments import add_filter_options, count, offset_range, time_range
from kafkafmt.cli.table_export import TABLE_FORMATS, run_table
from kafkafmt.cli.table_export import add_arguments as add_table_arguments
from kafkafmt._util.extras import install_command

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
           ".json": "jsonl", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow", ".arrows": "arrow-stream"}
ROW_GROUP_BYTES = 64 << 20
GATHER_ROWS = 1 << 16         # rows of small chunks (many small partitions) laid out as one table
#: the codecs of Parquet files (pyarrow's and Spark's names)
PARQUET_CODECS = ("snappy", "zstd", "gzip", "lz4", "brotli", "none", "uncompressed")


def add_parser(sub, parents, command):
    import argparse

    p = sub.add_parser(
        command.name, parents=parents, help=command.help,
        description=command_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  kafkafmt export /var/lib/kafka --topics orders --to orders.parquet\n"
               "  kafkafmt export orders-0 --offset-range 1000:2000 --to - --format jsonl --bytes utf8 | jq .\n"
               "  kafkafmt export /data/kafka-logs --engine spark --to s3a://bucket/orders/\n"
               "  kafkafmt export /var/lib/kafka --topics orders --value-format avro --to orders.parquet")
    p.add_argument("paths", nargs="*", metavar="PATH", help="log directories, partition folders or segment files")
    p.add_argument("--to", required=True, metavar="OUT",
                   help="output file (.parquet, .csv, .jsonl, .arrow/.feather/.ipc, .arrows), '-' for stdout; "
                        "with --format iceberg the warehouse, with --format delta the table (paths or URLs)")
    p.add_argument("--format", choices=("parquet", "csv", "jsonl", "arrow", "arrow-stream") + TABLE_FORMATS,
                   help="output format (default: from the file extension); iceberg and delta write a table, "
                        "incrementally: each run exports what the last one did not")
    add_filter_options(p)
    add_replicas_option(p, "; --format iceberg/delta always reads one copy: a table holds each offset once")
    p.add_argument("--offset-range", type=offset_range, metavar="A:B", help="only offsets A <= offset < B (A:, :B)")
    p.add_argument("-c", "--max-records", type=count, metavar="N",
                   help="stop once N records are written (kcat's -c; files and stdout, not tables)")
    p.add_argument("--time-range", type=time_range, metavar="T1:T2",
                   help="from the first record with timestamp >= T1 up to the first with timestamp >= T2 "
                        "(ms or ISO-8601; write T1..T2 when the times contain colons)")
    p.add_argument("--isolation", choices=("read_uncommitted", "read_committed"), default="read_uncommitted",
                   help="read_committed leaves out aborted transactions and stops at the last stable offset")
    p.add_argument("--bytes", choices=("base64", "utf8", "hex"), default="base64",
                   help="encoding of keys, values and header values in CSV and JSON lines (default base64)")
    p.add_argument("--batch-metadata", action="store_true",
                   help="add producerId, producerEpoch, baseSequence, leaderEpoch, codec columns")
    p.add_argument("--no-headers", action="store_true", help="leave out the headers column")
    p.add_argument("--compression", default="snappy", metavar="CODEC", choices=PARQUET_CODECS,
                   help=f"Parquet compression ({', '.join(PARQUET_CODECS)}; default snappy)")
    p.add_argument("--fail-on-data-loss", choices=("true", "false"), default="true",
                   help="records the sources should hold and do not -- offsets in neither a partition's tiered "
                        "uploads nor its local segments, copies of a partition that disagree, offsets a table "
                        "expects that retention deleted, a source that is no longer what a table exported (its "
                        "log end went back, other records at exported offsets, a re-created topic): true refuses "
                        "before writing anything (the default, as Spark's failOnDataLoss, exit code 1); false "
                        "warns, exports what is there (exit code 0) and, for tables, records the loss in the "
                        "commit and goes on from where the source now is")
    p.add_argument("--salvage", action="store_true",
                   help="skip corrupt batches (each reported on stderr; exit code 1) instead of stopping at the first")
    p.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="local: this process, streaming; spark: the kafka-segments Spark data source (pyspark)")
    p.add_argument("--internal", choices=tuple(INTERNAL_TABLES),
                   help="write one of kafkafmt.internal's tables of internal topics instead of records: "
                        + "; ".join(f"{t.name} reads {_internal_source(t)}" for t in INTERNAL_TABLES.values()))
    add_typed_options(p, "--key-format", "--value-format", "write them as typed (nested) columns",
                      dead_letters=True)
    add_table_arguments(p)
    return p


def _internal_source(table):
    """What ``--internal`` reads for a table, for --help."""
    if table.names:
        return (f"{table.topic} or the topic named and shaped like it (a Connect cluster names its own; "
                "--topics names it)")
    return table.topic + (" and its .checkpoint snapshots" if table.snapshots else "")


def _pa():
    try:
        import pyarrow as pa
    except ImportError:
        raise UsageError(f"export needs pyarrow: {install_command('arrow')}") from None
    return pa


def spark_kafka_schema(batch_metadata=False, headers=True, typed=None, topics=()):
    """The Arrow schema of an export: Spark's Kafka columns; typed keys/values (``typed``, a
    `kafkafmt.values._typed.TypedOptions`) of every topic in ``topics`` merged into one type each, with
    their schema id and error columns."""
    pa = _pa()
    types = {"key": pa.binary(), "value": pa.binary()}
    sides = typed.sides() if typed is not None else ()
    for side, _, _ in sides:
        types[side] = typed.merged_type(side, topics) if topics else pa.null()
    fields = [("key", types["key"]), ("value", types["value"]), ("topic", pa.string()), ("partition", pa.int32()),
              ("offset", pa.int64()), ("timestamp", pa.timestamp("ms", tz="UTC")), ("timestampType", pa.int32())]
    if headers:
        fields.append(("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
    for side, _, _ in sides:
        fields += typed.extra_fields(side)
    if batch_metadata:
        fields += [("producerId", pa.int64()), ("producerEpoch", pa.int16()), ("baseSequence", pa.int32()),
                   ("leaderEpoch", pa.int32()), ("codec", pa.string())]
    return pa.schema(fields)


def to_table(recs, schema):
    """A chunk as a pyarrow Table with exactly ``schema`` (null topic/partition when unknown)."""
    pa = _pa()
    t = recs.to_arrow(headers="headers" in schema.names, batch_metadata="producerId" in schema.names)
    cols = []
    for f in schema:
        if f.name in t.column_names:
            col = t.column(f.name)
            if col.type != f.type:
                col = conform(col, f.type) if f.name in recs.typed else col.cast(f.type)
            cols.append(col)
        else:
            cols.append(pa.nulls(t.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


# -- writers --------------------------------------------------------------------------------------

class _ArrowWriter:
    """Parquet or Arrow IPC of chunks with ``schema``, written in the types every reader holds (`portable_table`)."""

    def __init__(self, sink, schema, fmt, compression):
        pa = _pa()
        self.schema = schema
        self.pending, self.pending_bytes = [], 0
        self.gathering = Gathering(GATHER_ROWS, CHUNK_BYTES)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            comp = None if compression in ("none", "uncompressed") else compression
            self.w = pq.ParquetWriter(sink, portable_table(schema), compression=comp)
            self.parquet = True
        else:
            self.w = (pa.ipc.new_file if fmt == "arrow" else pa.ipc.new_stream)(sink, portable_table(schema))
            self.parquet = False

    def write(self, recs):
        if not isinstance(recs.topic, str):       # (a file's records: a table each)
            self._gathered()
            self._add(recs)
            return
        # the chunks of many small partitions laid out as one table (a table a chunk made that most of the export);
        # typed ones a topic at a time, as each topic's values are typed
        for chunks in self.gathering.add(recs, len(recs), decoded_bytes(recs), recs.topic if recs.typed else None):
            self._add(join_chunks(chunks))

    def _gathered(self):
        for chunks in self.gathering.rest():
            self._add(join_chunks(chunks))

    def _add(self, recs):
        t = portable_table(to_table(recs, self.schema))
        self.pending.append(t)
        self.pending_bytes += t.nbytes
        if self.pending_bytes >= ROW_GROUP_BYTES:
            self._write_pending()

    def flush(self):
        self._gathered()
        self._write_pending()

    def _write_pending(self):
        if not self.pending:
            return
        pa = _pa()
        t = pa.concat_tables(self.pending) if len(self.pending) > 1 else self.pending[0]
        if self.parquet:
            self.w.write_table(t)
        else:
            self.w.write_table(t)
        self.pending, self.pending_bytes = [], 0

    def close(self):
        try:
            self.flush()
        finally:
            self.w.close()


class _TextWriter:
    """CSV or JSON lines, one record per row/line, a chunk at a time: each column's texts made as an Arrow
    string array (typed values printed by their format's kernel, numbers cast by Arrow) and the rows joined
    by Arrow, not a Python object per field."""

    COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]

    def __init__(self, stream, fmt, enc, headers, batch_metadata, typed_sides=(), untyped_bytes=False, mode=None):
        self.stream = stream
        self.fmt = fmt
        self.enc = enc
        self.mode = mode
        self.headers = headers
        self.batch_metadata = batch_metadata
        self.typed_sides = [s for s in ("key", "value") if s in typed_sides]
        self.untyped_bytes = untyped_bytes
        self.columns = [c for c in self.COLUMNS if headers or c != "headers"]
        if batch_metadata:
            self.columns += list(BATCH_METADATA_COLUMNS)
        for side in self.typed_sides:
            self.columns += list(TYPED_COLUMNS[side]) + ([UNTYPED_COLUMNS[side]] if untyped_bytes else [])
        if fmt == "csv":
            stream.write(",".join(self._csv_texts(_pa().array(self.columns)).to_pylist()) + "\n")

    def write(self, recs):
        import pyarrow.compute as pc

        n = len(recs)
        if not n:
            return
        texts = [self._texts(recs, name, n) for name in self.columns]
        if self.fmt == "csv":
            pieces = [p for i, t in enumerate(texts) for p in ((",", t) if i else (t,))] + ["\n"]
        else:
            pieces = [p for i, (name, t) in enumerate(zip(self.columns, texts))
                      for p in ((("," if i else "{") + dumps(name) + ":"), t)] + ["}\n"]
        rows = pc.binary_join_element_wise(*pieces, "")
        rows = rows.combine_chunks() if hasattr(rows, "combine_chunks") else rows
        _, offsets, data = rows.buffers()[:3]
        offsets = np.frombuffer(offsets, np.int32 if rows.type == _pa().string() else np.int64)
        start, stop = int(offsets[rows.offset]), int(offsets[rows.offset + len(rows)])
        raw = getattr(self.stream, "buffer", None)
        if raw is not None and str(getattr(self.stream, "encoding", "")).lower().replace("-", "") == "utf8":
            # UTF-8 already: to the bytes under the text stream
            self.stream.flush()
            raw.write(memoryview(data)[start:stop])
        else:
            self.stream.write(memoryview(data)[start:stop].tobytes().decode("utf-8"))

    # -- each column's texts: JSON values (JSON lines) or CSV fields, never null ------------------------
    def _texts(self, recs, name, n):
        pa = _pa()
        if name in ("key", "value"):
            dec = recs.typed.get(name)
            if dec is not None:
                return self._json_texts(dec.json_array())
            return self._strings([self.enc(v) for v in recs.decoded(name).to_pylist()])
        if name == "topic":
            topic = recs.topic
            return self._strings(topic.tolist() if isinstance(topic, np.ndarray) else [topic] * n)
        if name == "headers":
            headers = recs.headers
            has = np.flatnonzero(np.diff(headers.offsets) > 0)
            texts = np.full(n, None, dtype=object)
            if len(has):                          # only the records that have headers, value by value
                pairs = headers.take(has).to_pylist()
                texts[has] = [dumps([{"key": k, "value": self.enc(v)} for k, v in h]) for h in pairs]
            return self._strings(texts.tolist(), json_text=True)
        for side in self.typed_sides:
            schema_id, error = TYPED_COLUMNS[side]
            dec = recs.typed[side]
            if name == schema_id:
                return self._numbers(dec.schema_id)
            if name == error:
                return self._strings(dec.error)
            if name == UNTYPED_COLUMNS[side]:
                return self._strings([None if v is None else self.enc(v) for v in dec.untyped.to_pylist()])
        if name == "partition":
            part = recs.partition
            return self._numbers(pa.array(part if isinstance(part, np.ndarray) else
                                          [None if part is None else int(part)] * n, pa.int32()))
        if name == "codec":
            from kafkafmt.record import CODEC_NAMES
            return self._strings([CODEC_NAMES.get(c, str(c)) for c in recs.batch_column("codec").tolist()])
        field = {"offset": "offset", "timestamp": "timestamp", "timestampType": "timestamp_type"}.get(name)
        if field is not None:
            return self._numbers(pa.array(getattr(recs, field)))
        column = {"producerId": "producer_id", "producerEpoch": "producer_epoch", "baseSequence": "base_sequence",
                  "leaderEpoch": "partition_leader_epoch"}[name]
        return self._numbers(pa.array(recs.batch_column(column)))

    def _numbers(self, arr):
        """Integers as text; null as JSON's null or CSV's empty field."""
        import pyarrow.compute as pc
        return pc.fill_null(pc.cast(arr, _pa().string()), "" if self.fmt == "csv" else "null")

    def _json_texts(self, arr):
        """JSON texts (typed values) as they are in JSON lines, as CSV fields in CSV."""
        import pyarrow.compute as pc
        arr = arr.cast(_pa().string())
        if self.fmt == "csv":
            return self._csv_texts(arr)
        return pc.fill_null(arr, "null")

    def _strings(self, values, json_text=False):
        """Strings (a list or an Arrow array, None for null) as JSON strings (JSON lines; ``json_text``:
        already JSON) or CSV fields."""
        import pyarrow.compute as pc
        pa = _pa()
        arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, pa.string())
        if self.fmt == "csv":
            return self._csv_texts(arr)
        if json_text:
            return pc.fill_null(arr, "null")
        # JSON strings as json.dumps(ensure_ascii=False) writes them: Python's, value by value, unless plain
        escaped = pc.fill_null(pc.match_substring_regex(arr, r'[\x00-\x1f"\\]'), False)
        if not pc.any(escaped).as_py():
            return pc.fill_null(pc.binary_join_element_wise('"', arr, '"', ""), "null")
        return pa.array(["null" if v is None else dumps(v) for v in arr.to_pylist()], pa.string())

    def _csv_texts(self, arr):
        """Strings as CSV fields the way the csv module writes them (quoted where they hold a comma, a
        quote or a line end; null as an empty field)."""
        import pyarrow.compute as pc
        arr = pc.fill_null(arr, "")
        special = pc.match_substring_regex(arr, _CSV_SPECIAL)
        quoted = pc.binary_join_element_wise('"', pc.replace_substring(arr, '"', '""'), '"', "")
        return pc.if_else(special, quoted, arr)

    def close(self):
        self.stream.flush()


def _csv_special():
    """The regex of characters the csv module quotes a field for, with export's dialect (line end "\\n";
    whether a lone "\\r" is quoted depends on the Python version)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(["\r", "x"])
    return '[,"\n\r]' if out.getvalue().startswith('"') else '[,"\n]'


_CSV_SPECIAL = _csv_special()


# -- running --------------------------------------------------------------------------------------

def _format_of(args):
    if args.format:
        return args.format
    if args.to == "-":
        raise UsageError("--to - (stdout) needs --format (jsonl or csv)")
    ext = os.path.splitext(args.to.rstrip("/"))[1].lower()
    if ext not in FORMATS:
        raise UsageError(f"cannot tell the format from {args.to!r}: give --format or a name ending in "
                         f"{', '.join(sorted(FORMATS))}")
    return FORMATS[ext]


def run(args, console):
    fmt = _format_of(args)
    if fmt in TABLE_FORMATS:
        return run_table(args, console, fmt)
    if args.value_errors == "dlq":
        raise UsageError("--value-errors dlq writes a dead-letter table: it goes with --format iceberg or delta")
    if args.value_errors is None:
        args.value_errors = "null"
    if args.mode != "append":
        raise UsageError(f"--mode {args.mode} writes a table: it goes with --format iceberg or delta")
    if args.json:
        raise UsageError("--json describes a table export (--format iceberg or delta); a file export writes its "
                         "records to --to")
    if getattr(args, "internal", None):
        return run_internal(args, console, fmt)
    paths = input_paths(args, "export")
    offsets = parse_offset_range(args.offset_range)
    times = parse_time_range(args.time_range)
    topics = parse_name_list(args.topics)
    partitions = parse_int_list(args.partitions, "partition")
    if args.engine == "spark":
        return run_spark(args, console, fmt, paths, offsets, times, topics, partitions)
    if fmt in ("parquet", "arrow", "arrow-stream"):
        _pa()
    if args.to == "-" and fmt not in ("jsonl", "csv"):
        raise UsageError(f"{fmt} cannot be written to stdout; give a file name")
    found = find_inputs(paths, topics, partitions, args.replicas, topic_ids(args))
    files = checked_record_files(found, console)
    err = no_data(found, files, paths, topics or partitions)
    if err is not None:
        raise err
    _say_data_loss(args, found, console)

    total = sum(s.size for pd in found.partitions for s in pd.list_segments()) + sum(
        cli_paths.getsize(f) for f in files)
    opts = read_options(args, start_offset=offsets[0], end_offset=offsets[1], start_timestamp=times[0],
                        end_timestamp=times[1])
    typed = scan_typed(typed_options(args, paths), found.partitions, files, opts)
    schema = spark_kafka_schema(args.batch_metadata, not args.no_headers, typed,
                                [p.topic for p in found.partitions] + [topic_of_file(f) for f in files])
    unreadable = FailedValues()       # topics none of whose typed values could be read (said at the end)

    def write(writer, chunk, state):
        if topics is not None and chunk.topic not in topics:
            return 0
        writer.write(chunk)
        unreadable.add(chunk)
        state["rows"] += len(chunk)
        return len(chunk)

    state, elapsed = _stream_export(args, console, total, _sources(found.partitions, files, opts, typed),
                                    lambda tmp: _open_writer(fmt, tmp, schema, args),
                                    write)
    unreadable.warn()
    what = f"{len(found.partitions)} partitions" + (f" and {len(files)} files" if files else "")
    console.info(_exported(args, state, f"{state['rows']} records of {what}", elapsed))
    return 1 if state["errors"] else 0


def _exported(args, state, what, elapsed):
    """The line an export ends with: what it wrote, where, in how long -- or, when stdout's reader closed
    the pipe, after how many records the export stopped."""
    if state["gone"]:
        return (f"kafkafmt: the reader of stdout closed the pipe: the export stopped after {state['rows']} "
                f"records ({elapsed:.1f} s)")
    where = "stdout" if args.to == "-" else f"{args.to} ({human_bytes(os.path.getsize(args.to))})"
    return f"kafkafmt: exported {what} to {where} in {elapsed:.1f} s"


def _say_data_loss(args, found, console):
    """What discovery found (`say_found`), before anything is written. Its errors are records the
    export would lose (offsets in neither the tiered uploads nor the local segments, copies that
    disagree): with --fail-on-data-loss true (the default, as Spark's Kafka source and the table
    exports) a DataLossError, nothing written (exit code 1); with false, warnings naming them and
    an export of what is there (exit code 0)."""
    from kafkafmt.errors import DataLossError

    # a damaged copy whose records another copy holds intact loses nothing: said, not an error of the export
    found.leftovers = [p if p.loses_records or p.severity != "error" else dataclasses.replace(p, severity="warning")
                       for p in found.leftovers]
    lost = [p for p in found.leftovers if p.loses_records]
    if lost and args.fail_on_data_loss == "false":
        found.leftovers = [p for p in found.leftovers if p.severity != "error"] + [
            dataclasses.replace(p, severity="warning", message=f"{p.message} (exported without them: "
                                                                  f"--fail-on-data-loss false)") for p in lost]
    errors = say_found(found, console)
    if errors:
        raise DataLossError(f"{len(errors)} data loss problem{'s' if len(errors) > 1 else ''} (above): nothing "
                            f"was written. To export what is there, give --fail-on-data-loss false")


def _stream_export(args, console, total, sources, open_writer, write):
    """Stream the chunks of every (label, read()) source (``read() -> (chunks, report)``) through
    ``write(writer, chunk, state) -> records taken`` into a writer over a temporary file beside --to,
    renamed when complete (stdout for '-'); problems are reported as they come. Reading stops once
    ``--max-records`` records are taken, or when stdout's reader went away (``state["gone"]``).
    Returns (state, seconds)."""
    state = {"rows": 0, "errors": 0, "records": 0, "taken": 0, "gone": False}
    limit = getattr(args, "max_records", None)
    started = time.monotonic()
    target = args.to
    tmp = None if target == "-" else _temp_name(target)
    try:
        with Progress(total, enabled=args.progress) as prog:
            console.progress = prog
            writer = open_writer(tmp)
            try:
                for label, read in sources:
                    if limit is not None and state["taken"] >= limit or state["gone"]:
                        break
                    prog.set_label(label)
                    chunks, report = read()
                    seen = 0
                    try:
                        for chunk in chunks:
                            seen = _report(report, seen, console, state)
                            if len(chunk):
                                if limit is not None and len(chunk) > limit - state["taken"]:
                                    chunk = chunk[:limit - state["taken"]]
                                state["taken"] += write(writer, chunk, state)
                            prog.advance(chunk.stored_bytes, len(chunk))
                            crash_point()
                            state["gone"] = console.gone
                            if limit is not None and state["taken"] >= limit or state["gone"]:
                                break
                        else:
                            _report(report, seen, console, state)
                    finally:
                        close = getattr(chunks, "close", None)
                        if close is not None:
                            close()
            finally:
                writer.close()
            console.progress = None
        if tmp is not None:
            os.replace(tmp, target)
            tmp = None
            crash_point()
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return state, time.monotonic() - started


def _sources(partitions, files, options, typed=None, snapshots=None):
    """(name, read() -> (chunks, report)) per input, in export order, read with ``options`` (a
    `ReadOptions`, its ranges those of --offset-range / --time-range) and the typed-value options
    ``typed``: each partition (after the KRaft snapshot files of `snapshots`, url -> paths: the state a
    snapshot holds, then the log after it; many small partitions read in one pass, each one's chunks as
    its own read gives them), then the files named on the command line."""
    for pd, chunks, report in iter_partitions_with(partitions, options, typed=typed):
        for snap in (snapshots or {}).get(pd.url, ()):
            yield os.path.basename(snap), functools.partial(_file_read, snap, options, typed)
        yield pd.name, lambda chunks=chunks, report=report: (chunks, report)
    for f in files:
        yield os.path.basename(f), functools.partial(_file_read, f, options, typed)


def _file_read(path, options, typed):
    report = []
    return _file_chunks(path, report, options, typed), report


def _file_chunks(path, report, options, typed):
    with FileReader(path) as fr:
        rng = (None, None)
        if any(v is not None for v in (options.start_offset, options.end_offset, options.start_timestamp,
                                       options.end_timestamp)):
            rng = fr.resolve_range((options.start_offset, options.end_offset),
                                   (options.start_timestamp, options.end_timestamp))
        if rng is None:
            return
        for chunk in fr.chunks(report, options.replace(start_offset=rng[0], end_offset=rng[1])):
            if typed is not None and typed.active:
                chunk = decode_values(chunk.replace(topic=topic_of_file(path)), typed)
                report += chunk.report
            yield chunk


def _report(report, seen, console, state):
    for e in report[seen:]:
        p = report_problem(e)
        if p is None:
            continue
        if p.loses_records:
            state["errors"] += 1
            console.message(f"kafkafmt: {p.text()}")
        else:        # (a damaged copy whose records were read from an intact one: said, the export is whole)
            console.warn(p.text().split(": ", 1)[1])
    return len(report)


def _temp_name(target):
    d = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(d):
        raise UsageError(f"cannot write {target}: folder {d} does not exist")
    return temp_path(target)


def _open_writer(fmt, tmp, schema, args):
    if fmt in ("parquet", "arrow", "arrow-stream"):
        return _ArrowWriter(tmp, schema, fmt, args.compression)
    enc = bytes_encoder(args.bytes)
    typed = [side for side in ("key", "value") if getattr(args, side + "_format", None) not in (None, "bytes")]
    untyped_bytes = getattr(args, "untyped_topics", "error") == "bytes"
    return _text_sink(tmp, lambda stream: _TextWriter(stream, fmt, enc, not args.no_headers, args.batch_metadata,
                                                      typed, untyped_bytes))


def _text_sink(tmp, make_writer):
    """A text writer (``make_writer(stream)``) over stdout (tmp None) or a new file at tmp, the
    file closed with the writer."""
    if tmp is None:
        return make_writer(sys.stdout)
    stream = io.open(tmp, "w", encoding="utf-8", newline="")
    try:
        w = make_writer(stream)
    except BaseException:            # Ctrl-C too: nothing left open
        stream.close()
        raise
    close = w.close

    def close_file():
        try:
            close()
        finally:
            stream.close()

    w.close = close_file
    return w


# -- Spark ----------------------------------------------------------------------------------------

def run_spark(args, console, fmt, paths, offsets, times, topics, partitions):
    """Hand the export to Spark: the kafka-segments data source reads, Spark writes (a folder of part
    files, as Spark writes every format)."""
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F
    except ImportError:
        raise UsageError(f"--engine spark needs pyspark ({install_command('spark')}); "
                         "without it, leave out --engine to export in this process") from None
    try:
        import kafkafmt.spark as kspark
    except ImportError as exc:
        raise UsageError(f"--engine spark needs the kafkafmt.spark data source: {exc}") from None
    if fmt not in ("parquet", "csv", "jsonl"):
        raise UsageError(f"--engine spark writes parquet, csv or jsonl, not {fmt}")
    if args.to == "-":
        raise UsageError("--engine spark writes a folder: give --to PATH")
    if args.max_records is not None:
        raise UsageError("--max-records writes the first records in log order, which Spark's writers do not keep: "
                         "leave out --engine spark")
    if fmt != "parquet" and (args.value_format or args.key_format):
        # typed values as text follow each format's own printer (Avro as kafka-avro-console-consumer prints it);
        # Spark's JSON writer has its own conventions, so the two engines would write different texts
        raise UsageError(f"--engine spark writes typed keys and values to parquet only, not {fmt}: give "
                         "--format parquet, or leave out --engine to write them here")
    if args.fail_on_data_loss == "true":
        # refused here, as the local engine refuses, before Spark's writer prepares (or, overwriting, clears) --to
        _say_data_loss(args, find_inputs(paths, topics, partitions, args.replicas, topic_ids(args)), console)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.appName("kafkafmt export").getOrCreate()
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")   # as the local engine writes
    kspark.register(spark)
    reader = spark.read.format("kafka-segments").option("includeHeaders", str(not args.no_headers).lower())
    if topics:
        reader = reader.option("subscribe", ",".join(sorted(topics)))
    if times[0] is not None:
        reader = reader.option("startingTimestamp", str(times[0]))
    if times[1] is not None:
        reader = reader.option("endingTimestamp", str(times[1]))
    if args.isolation == "read_committed":
        reader = reader.option("kafka.isolation.level", "read_committed")
    if args.batch_metadata:
        reader = reader.option("includeBatchMetadata", "true")
    reader = reader.option("failOnDataLoss", args.fail_on_data_loss)
    # one read of every path, as the local engine's: a partition's tiered uploads and local segments
    # (in two paths) are one partition, their gap seen; copies of a partition read once (--replicas)
    reader = reader.option("replicas", args.replicas)
    reader = _spark_typed_options(reader, args)
    df = reader.option("paths", json.dumps([p if "://" in str(p) else os.path.abspath(p) for p in paths])).load()
    if offsets[0] is not None:
        df = df.where(F.col("offset") >= offsets[0])
    if offsets[1] is not None:
        df = df.where(F.col("offset") < offsets[1])
    if partitions:
        df = df.where(F.col("partition").isin(sorted(partitions)))
    writer_df = df
    if fmt in ("csv", "jsonl"):
        enc = {"base64": F.base64, "hex": F.hex, "utf8": lambda c: c.cast("string")}[args.bytes]
        writer_df = df.withColumn("key", enc(F.col("key"))).withColumn("value", enc(F.col("value")))
        if not args.no_headers:
            writer_df = writer_df.withColumn("headers", F.expr(
                "transform(headers, h -> named_struct('key', h.key, 'value', "
                + {"base64": "base64(h.value)", "hex": "hex(h.value)", "utf8": "cast(h.value as string)"}[args.bytes]
                + "))"))
            if fmt == "csv":
                writer_df = writer_df.withColumn("headers", F.to_json(F.col("headers")))
        writer_df = writer_df.withColumn("timestamp", (F.unix_millis(F.col("timestamp"))))
    w = writer_df.write.mode("overwrite")
    started = time.monotonic()
    if fmt == "parquet":
        w.option("compression", args.compression).parquet(args.to)
    elif fmt == "csv":
        w.option("header", "true").csv(args.to)
    else:
        w.json(args.to)
    console.info(f"kafkafmt: Spark wrote {args.to} in {time.monotonic() - started:.1f} s")
    spark.stop()
    return 0


def _spark_typed_options(reader, args):
    """The typing flags as the kafka-segments source's options (the same names the source documents), so the
    Spark engine types keys and values as this process would."""
    for flag, option in (("value_format", "valueFormat"), ("key_format", "keyFormat"),
                         ("schema_registry", "schemaRegistry"), ("value_schema", "valueSchema"),
                         ("key_schema", "keySchema")):
        value = getattr(args, flag, None)
        if value is not None:
            reader = reader.option(option, os.path.abspath(value) if flag == "schema_registry" and
                                   "://" not in value and os.path.exists(value) else value)
    if getattr(args, "value_format", None) or getattr(args, "key_format", None):
        reader = reader.option("mode", "FAILFAST" if args.value_errors == "strict" else "PERMISSIVE")
        reader = reader.option("untypedTopics", args.untyped_topics)
        reader = reader.option("recursive.fields.max.depth", str(args.recursive_fields_max_depth))
        reader = reader.option("timeUnit", args.time_unit).option("additionalProperties", args.additional_properties)
    return reader


# -- Kafka's internal topics as tables (--internal) -----------------------------------------------

class _InternalArrowWriter(_ArrowWriter):
    """Parquet / Arrow of pyarrow Tables with the internal table's schema."""

    def write(self, table):
        self.pending.append(table)
        self.pending_bytes += table.nbytes
        if self.pending_bytes >= ROW_GROUP_BYTES:
            self.flush()


class _InternalTextWriter:
    """CSV or JSON lines of an internal table: timestamps as ms since the epoch, binary columns
    (raw_key/raw_value) encoded as --bytes says, lists and structs as JSON (in CSV) or nested."""

    def __init__(self, stream, fmt, enc, schema):
        import pyarrow as pa

        self.stream, self.fmt, self.enc = stream, fmt, enc
        self.columns = schema.names
        self.kinds = {f.name: ("ts" if pa.types.is_timestamp(f.type) else "bin" if pa.types.is_binary(f.type)
                               else "nested" if pa.types.is_nested(f.type) else "plain") for f in schema}
        if fmt == "csv":
            self.csv = csv.writer(stream, lineterminator="\n")
            self.csv.writerow(self.columns)

    def write(self, table):
        import pyarrow as pa

        cols = []
        for name in self.columns:
            col, kind = table.column(name), self.kinds[name]
            if kind == "ts":
                vals = col.cast(pa.int64()).to_pylist()
            elif kind == "bin":
                vals = [self.enc(v) for v in col.to_pylist()]
            else:
                vals = col.to_pylist()
            if kind == "nested" and self.fmt == "csv":
                vals = [None if v is None else dumps(v) for v in vals]
            cols.append(vals)
        out = self.stream
        for row in zip(*cols):
            if self.fmt == "csv":
                self.csv.writerow(["" if v is None else ("true" if v else "false") if isinstance(v, bool) else v
                                   for v in row])
            else:
                out.write(dumps(dict(zip(self.columns, row))) + "\n")

    def close(self):
        self.stream.flush()


def _open_internal_writer(fmt, tmp, schema, args):
    if fmt in ("parquet", "arrow", "arrow-stream"):
        return _InternalArrowWriter(tmp, schema, fmt, args.compression)
    enc = bytes_encoder(args.bytes)
    return _text_sink(tmp, lambda stream: _InternalTextWriter(stream, fmt, enc, schema))


def _snapshot_files(pd):
    """The KRaft snapshots (``<offset>-<epoch>.checkpoint``) in a __cluster_metadata folder, oldest first."""
    from kafkafmt.log import file_kind

    return sorted((full for name, full in pd.files() if file_kind(name) == "kraft-snapshot"),
                  key=lambda f: os.path.basename(f))


def run_internal(args, console, fmt):
    """``export --internal NAME``: the chosen internal topic's partitions under the paths, chunk by
    chunk through `kafkafmt.internal`, written with `kafkafmt.internal.schema_of(NAME)`. A Connect
    table's topic (named by its Connect cluster) is `kafkafmt.read.internal_topic`'s choice unless
    --topics names it."""
    from kafkafmt import internal
    from kafkafmt.cli.internal_topics import WarningTally
    from kafkafmt.errors import TopicNotFoundError

    name = args.internal
    table = internal.internal_table(name)
    topic = table.topic
    given_topics = parse_name_list(args.topics)
    if table.names and given_topics is not None:
        if len(given_topics) != 1:
            raise UsageError(f"--internal {name} reads one topic: give one name with --topics")
        topic, = given_topics           # a Connect cluster names its topics itself
    elif given_topics is not None and given_topics != {topic}:
        raise UsageError(f"--internal {name} reads the topic {topic}; leave out --topics")
    if args.engine == "spark":
        raise UsageError("--internal is written by the local engine only (leave out --engine spark)")
    if args.batch_metadata or args.no_headers:
        raise UsageError("--batch-metadata and --no-headers do not apply to --internal tables")
    if args.to == "-" and fmt not in ("jsonl", "csv"):
        raise UsageError(f"{fmt} cannot be written to stdout; give a file name")
    if fmt in ("parquet", "arrow", "arrow-stream"):
        _pa()
    paths = input_paths(args, "export")
    offsets = parse_offset_range(args.offset_range)
    times = parse_time_range(args.time_range)
    partitions = parse_int_list(args.partitions, "partition")
    if table.names and given_topics is None:
        everything = find_inputs(paths, None, partitions)
        if everything.partitions:
            try:
                topic = internal_topic(name, everything.partitions)
            except TopicNotFoundError as exc:
                raise UsageError(f"--internal {name}: {exc.reason}; give its name with --topics") from None
            if topic != table.topic:
                console.info(f"kafkafmt: --internal {name} reads the topic {topic} (give another with --topics)")
    found = find_inputs(paths, {topic}, partitions, args.replicas, topic_ids(args))
    # the topic's partitions, and files only when named on the command line: a loose segment found
    # under a root belongs to no topic that could be told
    files = [f for f in checked_record_files(found, console) if f in found.given_files]
    snapshots = {}
    if table.snapshots:
        for pd in found.partitions:
            snapshots[pd.url] = _snapshot_files(pd)
    if not found.partitions and not files:
        raise UsageError(f"no {topic} partition folders or segments found under " + ", ".join(paths)
                         + (" (after --partitions)" if partitions else ""))
    _say_data_loss(args, found, console)

    total = sum(s.size for pd in found.partitions for s in pd.list_segments()) + sum(
        cli_paths.getsize(f) for f in files) + sum(cli_paths.getsize(f) for v in snapshots.values() for f in v)
    opts = read_options(args, start_offset=offsets[0], end_offset=offsets[1], start_timestamp=times[0],
                        end_timestamp=times[1])
    schema = table.schema()
    decode = table.build
    tally = WarningTally()

    def write(writer, chunk, state):
        table = tally(decode, chunk)
        if table.schema != schema:
            table = table.cast(schema)
        writer.write(table)
        state["rows"] += table.num_rows
        state["records"] += len(chunk)
        return len(chunk)

    state, elapsed = _stream_export(args, console, total,
                                    _sources(found.partitions, files, opts, snapshots=snapshots),
                                    lambda tmp: _open_internal_writer(fmt, tmp, schema, args), write)
    for text in tally.messages():
        console.warn(text)
    what = f"{len(found.partitions)} partitions" + (f" and {len(files)} files" if files else "")
    nsnap = sum(len(v) for v in snapshots.values())
    if nsnap:
        what += f" and {nsnap} snapshots"
    console.info(_exported(args, state, f"{state['rows']} {name} rows ({state['records']} records of {what})",
                           elapsed))
    return 1 if state["errors"] else 0
