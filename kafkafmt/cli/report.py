"""``kafkafmt report``: one HTML page picturing log dirs, for people who must judge them quickly.

The page (self-contained: it opens without network access) shows:

* per topic: records, bytes, compression ratio, codecs, time span;
* consumer-group lag as of the disk's last write: each group's committed offset, replayed from
  ``__consumer_offsets``, against the partition's log end offset (the next offset, as ``stats``
  reports it: lastOffset + 1);
* records per time bin of every partition (one heatmap per topic), transaction markers
  (committed / aborted) over time;
* the problems ``verify`` finds, each linked to its partition's timeline, where segments (local or
  tiered) and the problems are marked with their byte positions;
* tiered storage, when the paths hold ``__remote_log_metadata`` and the remote storage's uploads: the
  remote bytes per topic and the tiered audit's findings (as ``verify`` says them).

The figures are those of ``stats`` and ``verify`` (the same library code); ``--json`` prints them as
data (the tables of `kafkafmt.report.build`). Exit code 1 when a problem (an error) was found.
"""
from __future__ import annotations

import time

from kafkafmt.cli.common import (add_command, add_replicas_option, add_stale_copy_option, check_kafka_file, input_error, input_paths,
                                 kafka_files, parse_int_list, parse_name_list, human_bytes, topic_ids)
from kafkafmt.cli.usage import UsageError
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.arguments import add_filter_options
from kafkafmt.cli.progress import Progress


def add_parser(sub, parents, command):
    p = add_command(sub, parents, command,
                    __doc__, "log directories, partition folders or tiered uploads (local or URLs)")
    p.add_argument("--to", metavar="FILE.html", help="write the HTML page here ('-': to stdout)")
    p.add_argument("--json", action="store_true", help="print the report's tables as one JSON document")
    p.add_argument("--title", help="the page's title (default: the paths)")
    p.add_argument("--plain-js", action="store_true",
                   help="plotly.js as text (4.6 MB) instead of gzipped (1.9 MB, unpacked by browsers since 2023)")
    p.add_argument("--no-checks", action="store_true",
                   help="skip verify's checks (one read of each partition instead of two)")
    add_filter_options(p, "only these topics (lag still reads __consumer_offsets)")
    add_stale_copy_option(p)
    add_replicas_option(p)
    return p


def run(args, console):
    from kafkafmt.report import Builder, write_html
    from kafkafmt.errors import StorageError

    if not args.to and not args.json:
        raise UsageError("report: give --to FILE.html and/or --json")
    check_before_reading(args)
    paths = input_paths(args, "report")
    started = time.monotonic()
    try:
        builder = Builder(paths, topics=parse_name_list(args.topics),
                          partitions=parse_int_list(args.partitions, "partition"), replicas=args.replicas,
                          storage_options=cli_paths.OPTIONS or None, tiered_keys=cli_paths.TIERED_KEYS or None,
                          checks=not args.no_checks, stale_copy_ms=args.stale_copy_ms, topic_id=topic_ids(args))
    except (StorageError, PermissionError) as exc:
        raise input_error(exc) from None
    for f in builder.found.given_files:
        check_kafka_file(f)             # named as Kafka data: it is, or it is an error (as every command says)
    found = builder.found
    kafka_files(found, [f for f in found.files if f not in found.given_files], console)   # warns of non-Kafka files
    if not builder.partitions:
        raise UsageError("no partition folders or log dirs found under " + ", ".join(map(str, paths)))
    with Progress(builder.total_bytes, enabled=args.progress) as prog:
        console.progress = prog
        report = builder.run(prog)
        console.progress = None
    if args.json:
        console.json(report.to_json())
    if args.to == "-":
        from kafkafmt.report import to_html

        console.out.write(to_html(report, title=args.title, compress_js=not args.plain_js))
    elif args.to:
        size = write_html(report, args.to, title=args.title, compress_js=not args.plain_js)
        if not console.quiet:
            console.message(f"kafkafmt: wrote {args.to} ({human_bytes(size)}, {len(builder.partitions)} partitions) "
                            f"in {time.monotonic() - started:.1f} s")
    return 1 if any(p["severity"] == "error" for p in report.problems) else 0


def check_before_reading(args):
    """What would make the report fail after its reading, found before it (usage errors, exit 2): the
    packages of the ``report`` extra the output needs, and a ``--to`` that cannot be written."""
    import importlib.util

    from kafkafmt._util.durable import check_writable
    from kafkafmt._util.extras import install_command

    if args.to == "-" and args.json:
        raise UsageError("--to - and --json both write to stdout; give --to FILE.html with --json")
    needed = ["pandas", "pyarrow"] + (["plotly"] if args.to else [])
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"report needs {', '.join(missing)} (not installed): {install_command('report')}")
    if args.to and args.to != "-":
        try:
            check_writable(args.to)
        except OSError as exc:
            raise UsageError(f"cannot write {args.to}: {exc.strerror or exc}") from None
