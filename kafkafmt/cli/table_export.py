"""``kafkafmt export --format iceberg|delta``: records into a lakehouse table, incrementally (see
`kafkafmt.lakehouse`). The options of this mode are added to ``export``'s parser here.

Typed keys and values (``--value-format``, ``--key-format``) become typed columns; values that
cannot be typed go to the dead-letter table (``--value-errors dlq``, the default here), counted in
the summary. ``--mode upsert`` keeps the latest value of each key. ``{topic}`` in ``--table``
(Iceberg) or ``--to`` (Delta) writes one table per topic.

Exit codes as every command's: 0 exported or nothing to export -- also when ``--fail-on-data-loss
false`` went on past data loss, which is then printed on stderr (even with ``-q``) and listed in
``--json``, and when values went to the dead-letter table (counted on stderr); 1 data loss stopped
the run (nothing committed), another run changed the table meanwhile, the table cannot take this
run's schema (nothing committed), or problems in the data; 2 bad usage.
"""
from __future__ import annotations

import warnings

from kafkafmt.cli.usage import UsageError
from kafkafmt.cli.arguments import size
from kafkafmt.cli.common import (human_bytes, input_paths, parse_int_list, parse_name_list, parse_offset_range,
                                 parse_time_range, report_problem)
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.progress import Progress
from kafkafmt._util.extras import install_command

TABLE_FORMATS = ("iceberg", "delta")


def add_arguments(p):
    g = p.add_argument_group("tables (--format iceberg or delta): incremental, each run from where the last stopped")
    g.add_argument("--table", metavar="NS.TABLE",
                   help="Iceberg: the table (namespace.name) in the warehouse --to or the catalog --catalog; "
                        "{topic} in it (or in a Delta table's --to) writes one table per topic, e.g. 'sales.{topic}'")
    g.add_argument("--mode", choices=("append", "upsert"), default="append",
                   help="append: every record a row (default); upsert: the latest value of each key, a tombstone "
                        "deleting it (compacted topics; partitioned by topic,partition unless --partition-by)")
    g.add_argument("--catalog", metavar="NAME|URL",
                   help="Iceberg: a catalog of pyiceberg's configuration (~/.pyiceberg.yaml, PYICEBERG_CATALOG__*), "
                        "or a SQL catalog database URL (sqlite:////path/catalog.db); default: SQLite in the "
                        "warehouse folder")
    g.add_argument("--partition-by", metavar="FIELDS",
                   help="partition fields of a new table: topic, partition, timestampType, and year/month/day/hour"
                        "(timestamp), comma-separated, or none (default: topic,day(timestamp))")
    g.add_argument("--target-file-size", type=size, default=128 << 20, metavar="SIZE",
                   help="size of each data file, about (default 128M)")
    g.add_argument("--commit-every", type=size, default=8 << 30, metavar="SIZE",
                   help="commit after this much input, so a long backfill keeps its progress (default 8G)")
    g.add_argument("--json", action="store_true",
                   help="print what the run did as one JSON document on stdout: rows, files, commits, the offset "
                        "ranges exported, the ledger after, the data loss, the dead letters, the schema changes and "
                        "the schema ids of the last commit")


def run_table(args, console, fmt):
    from kafkafmt.errors import KafkafmtError, KafkafmtWarning
    from kafkafmt.lakehouse import CommitConflictError, DataLossError, SchemaEvolutionError, export_table
    from kafkafmt.values import reader_schema_of_text

    if getattr(args, "internal", None):
        raise UsageError("--internal tables are written as files; leave out --format iceberg/delta")
    if args.engine == "spark":
        raise UsageError(f"--format {fmt} is written by the local engine (leave out --engine spark)")
    if args.to == "-":
        raise UsageError(f"--format {fmt} writes a table: give --to WAREHOUSE (Iceberg) or --to PATH (Delta)")
    if args.max_records is not None:
        raise UsageError(f"--max-records writes the first records to a file or stdout; --format {fmt} exports a "
                         "table incrementally (give --offset-range to bound it)")
    if fmt == "iceberg" and not args.table:
        raise UsageError("--format iceberg needs --table NAMESPACE.TABLE")
    if fmt == "delta" and (args.table or args.catalog):
        raise UsageError("--format delta writes the table at --to: leave out --table and --catalog")
    if args.replicas == "all":
        raise UsageError(f"--format {fmt} reads one copy of each partition (a table holds each offset once): "
                         "leave out --replicas all")
    for mod in ("pyarrow", "pyiceberg" if fmt == "iceberg" else "deltalake"):
        try:
            __import__(mod)
        except ImportError:
            raise UsageError(f"--format {fmt} needs {mod}: {install_command('lakehouse')}") from None
    paths = input_paths(args, "export")
    offsets = parse_offset_range(args.offset_range)
    times = parse_time_range(args.time_range)
    topics = parse_name_list(args.topics)
    partitions = parse_int_list(args.partitions, "partition")
    opts = cli_paths.OPTIONS or None
    with Progress(None, enabled=args.progress) as prog:
        console.progress = prog

        def on_chunk(label, nbytes, nrecords):
            prog.set_label(label)
            prog.advance(nbytes, nrecords)

        try:
            with warnings.catch_warnings():
                # the losses a run goes on past are printed below, each once, also with -q
                warnings.filterwarnings("ignore", message="data loss: ", category=KafkafmtWarning)
                r = export_table(paths, args.to, format=fmt, table=args.table, catalog=args.catalog, topics=topics,
                                 partitions=partitions, partition_by=args.partition_by,
                                 target_file_size=args.target_file_size, commit_every=args.commit_every,
                                 compression=args.compression, isolation=args.isolation, start_offset=offsets[0],
                                 end_offset=offsets[1], start_timestamp=times[0], end_timestamp=times[1],
                                 headers=not args.no_headers, batch_metadata=args.batch_metadata,
                                 errors="salvage" if args.salvage else "strict",
                                 fail_on_data_loss=args.fail_on_data_loss == "true", storage_options=opts,
                                 value_format=args.value_format, key_format=args.key_format,
                                 schema_registry=args.schema_registry,
                                 value_schema=reader_schema_of_text(args.value_schema),
                                 key_schema=reader_schema_of_text(args.key_schema),
                                 value_errors=args.value_errors or "dlq", untyped_topics=args.untyped_topics,
                                 mode=args.mode, tiered_keys=cli_paths.TIERED_KEYS or None,
                                 on_chunk=on_chunk, recursive_fields_max_depth=args.recursive_fields_max_depth,
                                 time_unit=args.time_unit, additional_properties=args.additional_properties)
        except (DataLossError, CommitConflictError, SchemaEvolutionError) as exc:
            if args.json:
                console.json({"error": str(exc), "data_loss": [x.as_json() for x in getattr(exc, "losses", ())]})
            raise
        except KafkafmtError:
            raise
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        finally:
            console.progress = None
    from kafkafmt.log import ReportKind

    errors = 0
    dead_letters = (args.value_errors or "dlq") == "dlq"
    for e in r.report:
        problem = report_problem(e)
        if problem is None or e.kind is ReportKind.GAP:     # a gap the run went past is in r.data_loss
            continue
        if e.kind is ReportKind.GAP and args.fail_on_data_loss == "false":
            continue            # a data loss taken: export_table warned about it
        if dead_letters and e.kind is ReportKind.BAD_VALUE:  # counted below, with the dead-letter table
            continue
        if problem.severity == "error":
            errors += 1
            console.message(f"kafkafmt: {problem.text()}")
        else:
            console.warn(problem.text()[len("warning: "):])
    for x in r.data_loss:
        console.message(f"kafkafmt: data loss (--fail-on-data-loss false: went on, recorded in the table): "
                        f"{x.text()}")
    if r.dead_letters:
        console.warn(f"{r.dead_letters} record{'s' if r.dead_letters != 1 else ''} whose key or value could not "
                     f"be typed went to the dead-letter table {r.dead_letter_table} (their bytes, and the reason in "
                     "keyError / valueError)")
    for c in r.evolved:
        console.info(f"kafkafmt: schema evolved: {c.text()}")
    if args.json:
        console.json(_summary(r))
    if not r.commits:
        console.info(f"kafkafmt: {r.table} is up to date with {r.partitions} partitions: nothing to export")
    else:
        upserted = f" ({r.deleted} rows deleted by tombstones)" if r.mode == "upsert" else ""
        console.info(f"kafkafmt: exported {r.rows} records{upserted} of {r.partitions} partitions to {r.table} in "
                     f"{r.seconds:.1f} s: {r.files} files ({human_bytes(r.bytes)}), {len(r.commits)} "
                     f"commit{'s' if len(r.commits) > 1 else ''} (last {r.commits[-1]})")
    return 1 if errors else 0          # data loss taken (--fail-on-data-loss false): warned about


def _summary(r):
    """The run (`kafkafmt.lakehouse.ExportResult`) as the ``--json`` document."""
    import json

    from kafkafmt.lakehouse.ledger import offsets_json, ranges_json

    return {"table": r.table, "format": r.format, "rows": r.rows, "files": r.files, "bytes": r.bytes,
            "input_bytes": r.input_bytes, "partitions": r.partitions, "commits": list(r.commits),
            "ranges": json.loads(ranges_json(r.ranges)), "offsets": json.loads(offsets_json(r.offsets)),
            "data_loss": [x.as_json() for x in r.data_loss], "mode": r.mode, "dead_letters": r.dead_letters,
            "dead_letter_table": r.dead_letter_table, "deleted": r.deleted,
            "evolved": [c.as_json() for c in r.evolved], "schemas": r.schemas,
            "tables": list(r.tables), "seconds": round(r.seconds, 3)}
