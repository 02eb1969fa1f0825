"""What the commands share: finding Kafka data under the paths given, ranges and times on the
command line, reading one file as a segment, and problems found on the way."""
from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field

from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.usage import UsageError
from kafkafmt.log import Partition
from kafkafmt.log import file_kind, is_leftover_file, partition_of_name, segment_base
from kafkafmt.log import ReportKind, not_kafka_file
from kafkafmt.report.problems import Problem, copies_note, report_problem
from kafkafmt._util.times import iso_millis, to_millis
from kafkafmt._util.units import human_bytes

__all__ = ["file_kind", "segment_base", "is_leftover", "Partition", "Problem", "report_problem", "human_bytes"]

is_leftover = is_leftover_file


# ----------------------------------------------------------------------------------------------
# problems (the library's, `kafkafmt.report.problems`: every command says them alike)

def is_index_fallback(entry):
    """A report entry saying an index was not used (the library also warns about it)."""
    return entry.kind is ReportKind.INDEX_FALLBACK


# ----------------------------------------------------------------------------------------------
# finding the data

@dataclass
class Found:
    partitions: list = field(default_factory=list)   # discovery.Partition, sorted
    files: list = field(default_factory=list)        # files given, and files outside partition folders
    given_files: list = field(default_factory=list)  # the files named on the command line
    leftovers: list = field(default_factory=list)    # Problems of the discovery (leftovers, duplicates, gaps)
    log_dirs: list = field(default_factory=list)     # the distinct log dirs the partitions come from
    empty_log_dirs: list = field(default_factory=list)   # log dirs holding no partitions
    copies_note: str = None       # copies of partitions not read: the copy read holds all of them
    unread: list = field(default_factory=list)      # the copies not read (checked by verify and report)
    copies: list = field(default_factory=list)      # every copy of every partition (`kafkafmt.log.Copy`)
    held: dict = None             # {(topic, partition): copies read} (partition_label's, made when first asked)
    uploads: list = field(default_factory=list)      # the tiered-storage partitions, every upload listed
    log_dirs_paths: list = field(default_factory=list)   # every log dir found below the paths (storage paths)


def input_paths(args, command):
    """The PATH arguments, plus the bundled sample with --sample; a usage error when empty."""
    paths = list(args.paths)
    if getattr(args, "sample", False):
        from kafkafmt.sample import sample_dir

        paths.append(sample_dir())
    if not paths:
        raise UsageError(f"{command}: give log directories, partition folders or segment files (or --sample)")
    return paths


def record_files(found):
    """The files holding records: every segment found (broker leftovers only when named
    explicitly), KRaft snapshot files named explicitly, and any file named on the command line
    whose kind is not known by its name (it is read as Kafka data, or refused as not Kafka data)."""
    given = set(found.given_files)
    return [f for f in found.files if (f in given and file_kind(f) in ("log", "kraft-snapshot", None))
            or (file_kind(f) == "log" and not is_leftover(f))]


def checked_record_files(found, console):
    """record_files(found), after a warning for each file named on the command line that holds no
    records (an index, a checkpoint) and the one check of Kafka data (`kafka_files`)."""
    files = record_files(found)
    for f in found.given_files:
        if f not in files:
            console.warn(f"{f}: not a log segment, skipped")
    return kafka_files(found, files, console)


def kafka_files(found, files, console):
    """Of the record files to read, those holding Kafka data -- one check and one answer in every
    command (`kafkafmt.log.not_kafka_file`): a file named on the command line that does
    not is an error (NotKafkaDataError, exit code 1); one found under a folder (a ``server.log``
    beside the data, a text file named ``*.log``) is skipped with a warning."""
    given = set(found.given_files)
    out = []
    for f in files:
        if f in given:
            check_kafka_file(f)
        elif file_kind(f) in ("log", "kraft-snapshot"):
            why = not_kafka_file(*cli_paths.storage_of(f))
            if why is not None:
                console.warn(f"{f}: {why}: skipped")
                continue
        out.append(f)
    return out


def check_kafka_file(path):
    """Check a file named on the command line as Kafka data: a `UsageError` (bad input, exit code
    2; one line naming the file) when it does not start with a Kafka log entry, or is empty without
    a segment's name (an empty ``<20 digits>.log`` is a segment that holds nothing yet) -- the one
    check every command makes (`kafkafmt.log.not_kafka_file`)."""
    why = not_kafka_file(*cli_paths.storage_of(path))
    if why is not None:
        raise UsageError(f"{path}: {why}")


_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`([^`]+)`")     # :func:`x`, :py:class:`x`
_LINK = re.compile(r"`([^`<]+?)\s*<[^`>]+>`__?")          # `text <url>`_
_LITERAL = re.compile(r"``(.+?)``", re.S)
_REFERENCE = re.compile(r"`([^`]+)`_{0,2}")
_STRONG = re.compile(r"\*\*(.+?)\*\*", re.S)


def command_text(doc):
    """A command module's docstring, from its second paragraph on, as ``--help`` shows it: plain text
    (reStructuredText's inline markup -- ``literals``, `references`, roles, links, bold -- taken off;
    a paragraph's closing ``::`` made one colon)."""
    text = doc.split("\n\n", 1)[1]
    for pattern in (_ROLE, _LINK, _LITERAL, _REFERENCE, _STRONG):
        text = pattern.sub(r"\1", text)
    return re.sub(r"::$", ":", text, flags=re.M)


def add_command(sub, parents, command, doc, paths_help="log directories, partition folders or segment files"):
    """A subcommand parser for ``command`` (its row of `kafkafmt.cli.COMMAND_TABLE`: name and help) with
    the shared PATH arguments and the module docstring as its text (`command_text`)."""
    import argparse

    p = sub.add_parser(command.name, parents=parents, help=command.help, description=command_text(doc),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", help=paths_help)
    return p


def add_stale_copy_option(p):
    """``--stale-copy-ms``: the tiered audit's age of a copy that never finished (verify, report)."""
    from kafkafmt.report import DEFAULT_STALE_COPY_MS

    p.add_argument("--stale-copy-ms", type=int, default=DEFAULT_STALE_COPY_MS, metavar="MS",
                   help="tiered storage: report a segment copy started longer ago than this (as of the last "
                        "__remote_log_metadata event) and never finished (default: %(default)s, an hour)")


def add_replicas_option(p, extra_help=""):
    """``--replicas all|dedup``: what to do with several copies of one partition (`kafkafmt.log.discover`);
    ``--topic-id [TOPIC=]ID``: the incarnation of a topic to read where copies hold several."""
    from kafkafmt.log import DEFAULT_REPLICAS, REPLICAS

    p.add_argument("--replicas", choices=REPLICAS, default=DEFAULT_REPLICAS,
                   help="several copies of one partition (replicas in several brokers' log dirs, a backup beside "
                        "the original): read each offset once, from a copy that holds it intact (dedup, the "
                        "default), saying where copies are behind, damaged or disagree; or read every copy "
                        "(all)" + extra_help)
    p.add_argument("--topic-id", action="append", metavar="[TOPIC=]ID", type=_topic_id,
                   help="where copies of a partition hold different incarnations of its topic (other topic ids in "
                        "partition.metadata: a topic deleted and created again), read this one (Kafka's base64 "
                        "topic id; TOPIC=ID for one topic; repeatable)")


def _topic_id(text):
    from kafkafmt.errors import EncodeError
    from kafkafmt.log.sidefiles import encode_partition_metadata

    topic, sep, tid = text.rpartition("=")
    try:
        encode_partition_metadata(tid)          # Kafka's text of a topic id (base64 of a UUID), as in the file
    except EncodeError:
        tid = ""
    if not tid or (sep and not topic):
        raise argparse.ArgumentTypeError(f"not a topic id: {text!r} (give ID or TOPIC=ID, the ID as "
                                         f"partition.metadata holds it)")
    return (topic or None, tid)


def topic_ids(args):
    """What ``--topic-id`` gave, as the library's ``topic_id`` takes it: None, one id, or {topic: id}."""
    given = getattr(args, "topic_id", None) or []
    if not given:
        return None
    if len(given) == 1 and given[0][0] is None:
        return given[0][1]
    if any(t is None for t, _ in given):
        raise UsageError("--topic-id: give TOPIC=ID for each when there are several")
    return {t: i for t, i in given}


def _depth(text):
    """``--recursive-fields-max-depth``: a positive number (a bad one is argparse's one-line error)."""
    if not str(text).strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
    return int(text)


class _FormatFlag(argparse.Action):
    """A flag naming a value format (``--value-format``, ``--key-decoder``...): its choices and its help, which
    list the formats installed (the ``kafkafmt.value_formats`` entry points among them), are looked up when a
    value is given or the help printed -- not each time the parser is built (scanning the installed packages'
    entry points costs a run tens of milliseconds, more in a large environment)."""

    def __init__(self, option_strings, dest, side, action_words, **kwargs):
        self.side = side
        self.action_words = action_words
        super().__init__(option_strings, dest, **kwargs)

    def _names(self):
        from kafkafmt.values import format_names

        return [n for n in format_names(self.side) if n != "bytes"]

    @property
    def choices(self):
        return self._names()

    @choices.setter
    def choices(self, value):        # (argparse sets None: the names are looked up when asked for)
        pass

    @property
    def help(self):
        from kafkafmt.values import FORMATS

        names = self._names()
        if self.action_words is None:
            return self._help % ", ".join(names)
        said = "; ".join(f"{n}: {FORMATS[n].summary}" if FORMATS[n].summary else n for n in names)
        schemas = "/".join(n for n in names if FORMATS[n].needs_schema)
        return self._help % (self.action_words, said + (f" ({schemas}: schemas from --schema-registry)"
                                                        if schemas else ""))

    @help.setter
    def help(self, value):
        self._help = value

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


def add_typed_options(p, key_flag, value_flag, action, dead_letters=False):
    """The options that type keys and values (`kafkafmt.values._typed`): ``value_flag``/``key_flag`` (a
    format name), ``--schema-registry``, ``--value-schema``/``--key-schema`` and
    ``--value-errors``; ``action`` says what the command does with what it decoded (``decode values as
    FORMAT and <action>``). ``dead_letters``: the
    command also writes tables, whose ``--value-errors`` default is ``dlq`` (None here: the command
    resolves it). The format flags' choices are the formats installed, looked up only when needed
    (`_FormatFlag`)."""
    p.add_argument(value_flag, dest="value_format", action=_FormatFlag, side="value", action_words=action,
                   metavar="FORMAT", help="decode values as FORMAT and %s. Formats: %s")
    p.add_argument(key_flag, dest="key_format", action=_FormatFlag, side="key", action_words=None,
                   metavar="FORMAT", help=f"decode keys as FORMAT, as {value_flag} does values. Formats: %s")
    p.add_argument("--schema-registry", metavar="PATH|URL",
                   help="where schemas come from: a log dir holding _schemas, a folder of schema files, or a "
                        "registry URL (default: the _schemas topic among the paths read)")
    p.add_argument("--value-schema", metavar="SCHEMA",
                   help="reader schema of values: a schema id, a version (v3), a subject, a Protobuf message's "
                        "full name (pkg.Msg), a JSON object of id/subject/version/message, or a schema file "
                        "(default: the latest version of <topic>-value)")
    p.add_argument("--key-schema", metavar="SCHEMA", help="reader schema of keys (as --value-schema)")
    if dead_letters:
        p.add_argument("--value-errors", choices=("dlq", "null", "strict"), default=None,
                       help="a key or value that cannot be read: to the dead-letter table <table>_dlq with its bytes "
                            "and the reason (dlq, the default of --format iceberg/delta), null with the reason in "
                            "valueError (null, the default of files), or stop with an error naming file, position "
                            "and offset (strict)")
    else:
        p.add_argument("--value-errors", choices=("null", "strict"), default="null",
                       help="a value that cannot be read: null with the reason (the default), or stop with an error "
                            "naming file, position and offset")
    p.add_argument("--untyped-topics", choices=("error", "bytes"), default="error",
                   help="a topic without a schema (no subject <topic>-value, e.g. __consumer_offsets): stop with "
                        "an error naming it (the default), or keep its values as bytes (null value, the bytes in "
                        "valueBytes; keys alike in keyBytes) and type the others")
    from kafkafmt.values import ADDITIONAL_PROPERTIES, DEFAULT_MAX_DEPTH, TIME_UNITS

    p.add_argument("--recursive-fields-max-depth", type=_depth, default=DEFAULT_MAX_DEPTH, metavar="N",
                   help="how many times a recursive record or message appears on a path from the top of a value "
                        f"(Spark's recursive.fields.max.depth; default {DEFAULT_MAX_DEPTH}): the field where it "
                        "would appear once more holds that value's JSON text")
    p.add_argument("--time-unit", choices=TIME_UNITS, default=TIME_UNITS[0],
                   help="the unit of Protobuf Timestamp/Duration and JSON Schema date-time columns: us (the "
                        "default: every valid value, years 1 to 9999) or ns (every nanosecond, 1677 to 2262; a "
                        "value beyond is a null field named in valueError)")
    p.add_argument("--additional-properties", choices=ADDITIONAL_PROPERTIES, default=ADDITIONAL_PROPERTIES[0],
                   help="a JSON Schema object's properties outside its schema: keep them as the JSON text of an "
                        "object in its field additionalProperties (the default), or drop them")


def _log_dir_of(path):
    """Where a path given on the command line has its ``_schemas`` topic: the log dir holding a
    partition folder or a segment file, else the path itself."""
    path = os.fspath(path)
    if segment_base(os.path.basename(path)) is not None and not cli_paths.isdir(path):
        path = os.path.dirname(os.path.abspath(path)) if "://" not in path else path.rsplit("/", 1)[0]
    name = os.path.basename(path.rstrip("/"))
    if partition_of_name(name) is not None:
        return os.path.dirname(os.path.abspath(path)) if "://" not in path else path.rstrip("/").rsplit("/", 1)[0]
    return path


def read_options(args, **settings):
    """The `kafkafmt.read.ReadOptions` of a command's reads, as the library's readers take them: from
    its flags (``--isolation``, ``--salvage``, ``--replicas``, the typing flags, ``--storage-option``,
    ``--tiered-key``) where the command has them, then what the command itself sets (``settings``);
    chunks of `kafkafmt.cli.reading.CHUNK_BYTES`. ``threads`` stays None: ``--threads`` is what None
    means (`kafkafmt.set_cpu_count`, set by main)."""
    from kafkafmt.cli.reading import CHUNK_BYTES
    from kafkafmt.read import ReadOptions
    from kafkafmt.values import reader_schema_of_text

    flags = dict(max_bytes=CHUNK_BYTES, isolation=getattr(args, "isolation", None), replicas=getattr(args, "replicas", None),
                 errors="salvage" if getattr(args, "salvage", False) else None,
                 value_format=getattr(args, "value_format", None), key_format=getattr(args, "key_format", None),
                 schema_registry=getattr(args, "schema_registry", None),
                 value_schema=reader_schema_of_text(getattr(args, "value_schema", None)),
                 key_schema=reader_schema_of_text(getattr(args, "key_schema", None)),
                 value_errors=getattr(args, "value_errors", None), untyped_topics=getattr(args, "untyped_topics", None),
                 topic_id=topic_ids(args),
                 recursive_fields_max_depth=getattr(args, "recursive_fields_max_depth", None),
                 time_unit=getattr(args, "time_unit", None),
                 additional_properties=getattr(args, "additional_properties", None),
                 storage_options=cli_paths.OPTIONS or None, tiered_keys=cli_paths.TIERED_KEYS or None)
    return ReadOptions(**{k: v for k, v in flags.items() if v is not None}).replace(**settings)


def typed_options(args, roots):
    """The `kafkafmt.values._typed.TypedOptions` of the typing options on the command line (opened once)."""
    return read_options(args).open_typed([_log_dir_of(r) for r in roots])


def find_inputs(paths, topics=None, partitions=None, replicas=None, topic_id=None, conflicts="refuse"):
    """Partitions and files under ``paths`` -- files, partition folders, log dirs (whatever their
    names, e.g. ``kafka-logs-1``), folders holding log dirs or tiered uploads at any depth, local or
    remote -- found by the library's one discovery (`kafkafmt.log._discovery.discover`). Missing or
    unreadable paths raise UsageError. Copies of a partition from different incarnations of its topic,
    with nothing (``topic_id``) to choose one, raise `kafkafmt.log.IncarnationError` (exit 1) -- unless
    ``conflicts="report"`` (the commands that check: they list it as a problem)."""
    from kafkafmt.log import DEFAULT_REPLICAS, discover
    from kafkafmt.errors import PathNotFoundError, StorageError
    from kafkafmt._util.threads import resolve_threads

    report = []
    try:
        # (the folders listed and the copies' headers scanned by as many threads as --threads says)
        d = discover(paths, topics=topics, partitions=partitions, storage_options=cli_paths.OPTIONS or None,
                     tiered_keys=cli_paths.TIERED_KEYS or None, replicas=replicas or DEFAULT_REPLICAS, report=report,
                     files=True, topic_id=topic_id, threads=resolve_threads(None))
    except PathNotFoundError as exc:
        raise UsageError(f"no such file or directory: {exc.file}") from None
    except (StorageError, PermissionError) as exc:
        raise input_error(exc) from None
    if conflicts == "refuse":
        d.check_incarnations()
    found = Found(partitions=d.partitions, files=d.files, given_files=d.given_files, log_dirs=d.log_dirs,
                  empty_log_dirs=d.empty_log_dirs, copies_note=copies_note(report), unread=d.unread,
                  copies=d.copies, uploads=d.uploads, log_dirs_paths=d.log_dirs_paths)
    for e in report:
        p = report_problem(e)
        if p is not None:
            found.leftovers.append(p)
    return found


def input_error(exc):
    """The `UsageError` (bad input, exit code 2) for a path given on the command line that does not
    exist or cannot be listed or read."""
    from kafkafmt.errors import PathNotFoundError

    if isinstance(exc, PathNotFoundError):
        return UsageError(f"no such file or directory: {exc.file}")
    return UsageError(f"cannot read {getattr(exc, 'file', None) or exc}: {getattr(exc, 'reason', exc)}")


def no_data(found, files, paths, filtered=False):
    """A UsageError when nothing Kafka was found under the paths: no partition and none of ``files``
    (the files the command reads); a log dir holding no partitions is Kafka data, a broker's before
    any topic exists (see `empty_note`), unless a filter left nothing of what it holds."""
    if not found.partitions and not found.unread and not files and (filtered or not found.empty_log_dirs):
        return UsageError("no partition folders, log dirs or segments found under " + ", ".join(map(str, paths))
                          + (" (after --topics/--partitions)" if filtered else ""))
    return None


def say_found(found, console):
    """Print what the discovery reported -- errors (a gap in a partition, copies that disagree: records
    missing from what is read) on stderr as problems, warnings as warnings -- and the notes for
    empty log dirs; returns the errors (they make the exit code 1)."""
    errors = [p for p in found.leftovers if p.severity == "error"]
    for p in found.leftovers:
        if p.severity == "error":
            console.message(f"kafkafmt: {p.text()}")
        else:
            console.warn(p.text()[len("warning: "):])
    say_notes(found, console)
    return errors


def say_notes(found, console):
    """The notes on what was found that are not problems: log dirs that hold no partitions (a
    warning), copies of partitions left unread because another copy holds all they hold."""
    for note in empty_note(found):
        console.warn(note)
    if found.copies_note:
        console.info(f"kafkafmt: {found.copies_note}")


def empty_note(found):
    """The note every command gives for log dirs that hold no partitions (exit code 0: an empty log
    dir is valid, it holds no records)."""
    return [f"the log dir {d} holds no partitions" for d in found.empty_log_dirs]


def segment_in_partition(path):
    """(Partition, base offset) when ``path`` is a segment of a partition folder, else None."""
    base = segment_base(path)
    if base is None:
        return None
    st, p = cli_paths.storage_of(path)
    folder = st.parent(p if not st.is_local else os.path.abspath(p))
    tp = partition_of_name(st.name(folder))
    return None if tp is None else (Partition(tp[0], tp[1], folder, st), base)


def partition_label(p, found):
    """``topic-N``, with the log dir when partitions come from several (two brokers both have
    ``__cluster_metadata-0``); ``topic-N (copy in LOG_DIR)`` for each of several copies of one partition read
    (``--replicas all``)."""
    if found.held is None:
        found.held = {}
        for q in found.partitions:
            found.held[(q.topic, q.partition)] = found.held.get((q.topic, q.partition), 0) + 1
    if found.held.get((p.topic, p.partition), 0) > 1 and p.log_dir_url is not None:
        return f"{p.name} (copy in {p.log_dir_url})"
    if len(found.log_dirs) > 1 and p.log_dir is not None:
        return f"{p.name} ({p.log_dir_url})"
    return p.name


# ----------------------------------------------------------------------------------------------
# ranges and times

_INT = re.compile(r"^[+-]?\d+$")


def parse_time(text):
    """Milliseconds since the epoch from ``1767225600000`` or ISO-8601 (``2026-01-01T00:00:00Z``,
    ``2026-01-01 10:30``, ``2026-01-01``; no zone means UTC): `kafkafmt._util.times.to_millis`."""
    try:
        return to_millis(text)
    except ValueError:
        raise UsageError(f"not a time: {text!r} (give milliseconds since the epoch or ISO-8601, "
                         f"e.g. 2026-01-01T00:00:00Z)") from None


def _split_range(text, parse_one, what):
    for sep in ("..", "/"):
        if sep in text:
            a, b = text.split(sep, 1)
            return a, b
    if ":" not in text:
        parse_one(text)       # raises the reason it is not a value
        raise UsageError(f"cannot read the {what} range {text!r}")
    candidates = []
    for i, c in enumerate(text):
        if c != ":":
            continue
        a, b = text[:i], text[i + 1:]
        ok = True
        for side, other in ((a, b), (b, a)):
            if side == "":
                continue
            if _INT.match(side) and len(side.lstrip("+-")) <= 2 and other and not _INT.match(other):
                ok = False      # "...T10:30" is a time of day, not a range ending at 30 ms
                break
            try:
                parse_one(side)
            except UsageError:
                ok = False
                break
        if ok:
            candidates.append((a, b))
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise UsageError(f"cannot read the {what} range {text!r}: write START:END, START..END, START: or :END")
    raise UsageError(f"the {what} range {text!r} is ambiguous: write START..END")


def _bounds(text, parse_one, what):
    """(low, high) of the range ``text`` of two values ``parse_one`` reads; an empty side is None."""
    a, b = _split_range(text.strip(), parse_one, what)
    lo = parse_one(a) if a.strip() else None
    hi = parse_one(b) if b.strip() else None
    if lo is not None and hi is not None and hi < lo:
        raise UsageError(f"{what} range {text!r} ends before it starts")
    return lo, hi


def parse_offset_range(text):
    """``A:B`` (A <= offset < B), ``A:``, ``:B``, ``A..B``, or one offset ``A`` (just that one)."""
    if text is None:
        return None, None
    t = text.strip()
    if _INT.match(t):
        return int(t), int(t) + 1

    def one(s):
        if not _INT.match(s.strip()):
            raise UsageError(f"not an offset: {s!r}")
        return int(s)

    return _bounds(text, one, "offset")


def parse_time_range(text):
    """``T1:T2``, ``T1..T2``, ``T1/T2``, ``T1:`` or ``T1`` (from T1 on), ``:T2``, with times as
    parse_time reads them."""
    if text is None:
        return None, None
    t = text.strip()
    try:
        return parse_time(t), None          # one time: from then on
    except UsageError:
        pass
    return _bounds(text, parse_time, "time")


def parse_int_list(values, what):
    """``["0,1", "4-6"]`` -> {0, 1, 4, 5, 6}."""
    if not values:
        return None
    out = set()
    for v in values:
        for part in str(v).split(","):
            part = part.strip()
            if not part:
                continue
            m = re.fullmatch(r"(\d+)-(\d+)", part)
            if m:
                out.update(range(int(m.group(1)), int(m.group(2)) + 1))
            elif part.isdigit():
                out.add(int(part))
            else:
                raise UsageError(f"not a {what}: {part!r}")
    return out


def parse_name_list(values):
    if not values:
        return None
    return {p.strip() for v in values for p in str(v).split(",") if p.strip()}


def parse_size(text):
    """``1048576``, ``64K``, ``10M``, ``1G`` (binary units) -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
    if not m:
        raise UsageError(f"not a size: {text!r} (e.g. 1048576, 64K, 10M)")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


# ----------------------------------------------------------------------------------------------
# formatting

iso_ms = iso_millis


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(ch):
    """One character that is not printable, escaped (a lone surrogate U+DC80..U+DCFF, an invalid byte
    decoded with "surrogateescape", as that byte)."""
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def escape_text(b):
    """Bytes as text the way Kafka prints keys and values (UTF-8), with invalid bytes as \\xNN and
    non-printable characters escaped, so one record stays on one line."""
    # (invalid bytes decode to the lone surrogates U+DC80..U+DCFF in C -- "backslashreplace" calls an error
    # handler for each -- and are written as \xNN below; valid UTF-8 never decodes to a surrogate)
    s = b.decode("utf-8", "surrogateescape")
    if s.isprintable():
        return s
    if "'" in s and '"' in s:       # (repr would escape the quote it is written in)
        return "".join(ch if ch.isprintable() else _escaped(ch) for ch in s)
    # repr escapes exactly the characters that are not printable, as _escaped does (\t \n \r, \xNN,
    # \uNNNN, \UNNNNNNNN), in one pass in C. It also doubles each backslash: the pairs, found from the left
    # (where every backslash before one starts an escape, so each pair found is a doubled one), are set
    # aside as NUL (which repr never writes); then every backslash left starts an escape, and \udcNN is an
    # invalid byte NN
    text = repr(s)[1:-1].replace("\\\\", "\0").replace("\\udc", "\\x")
    return text.replace("\0", "\\")


def bytes_encoder(mode):
    """A function bytes|None -> str|None for JSON/CSV output: base64, utf8 (invalid bytes as \\xNN)
    or hex."""
    import base64
    import binascii

    if mode == "base64":
        return lambda b: None if b is None else base64.b64encode(b).decode("ascii")
    if mode == "hex":
        return lambda b: None if b is None else binascii.hexlify(b).decode("ascii")
    if mode == "utf8":
        return lambda b: None if b is None else b.decode("utf-8", "backslashreplace")
    raise UsageError(f"unknown bytes encoding {mode!r} (base64, utf8, hex)")
