"""The options of a read, as one frozen object (`ReadOptions`), the way polars packs a scan's options.

Every reader -- `read_log_dir`, `read_log_dirs`, `iter_log_dir`, `iter_log_dirs`, `read_segment` -- names
its options in its signature (keyword-only, so ``help()`` and IDEs show them) and packs them into a
`ReadOptions`; the doors (the command line, Spark) build the same object from their flags and options
and hand it to the readers' ``*_with`` forms, so that every door passes the same thing. Each field says
which readers take it (``READERS``) and every reader's numpydoc Parameters section is filled from one
text per option (`document_options`): a name means one thing in every reader.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Optional

from kafkafmt._util.docs import fill_doc
from kafkafmt.log import DEFAULT_REPLICAS
from kafkafmt.record import DecodeOptions
from kafkafmt.values import DEFAULT_MAX_DEPTH, open_typed

__all__ = ["ReadOptions", "READERS", "reader_options", "document_options"]

#: the readers, by name
READERS = ("read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "read_segment")
_ALL = frozenset(READERS)
_LOGS = _ALL - {"read_segment"}                       # partitions (and their log dirs, tiered uploads)
_ITER = frozenset({"iter_log_dir", "iter_log_dirs"})  # chunked: an Arrow stream
_ROOTS = frozenset({"read_log_dirs", "iter_log_dirs"})  # roots holding several partitions (and copies)
_SEGMENT = frozenset({"read_segment"})                # one file


def _option(default, readers, *, secret=False):
    return dataclasses.field(default=default, repr=not secret, metadata={"readers": readers})


@dataclasses.dataclass(frozen=True)
class ReadOptions:
    """The options of a read (see the module doc); the defaults are the readers'. Fields' meanings:
    `OPTION_DOCS`. Secrets (``storage_options``, ``tiered_keys``) stay out of the repr.

    Examples
    --------
    >>> from kafkafmt.read import ReadOptions
    >>> opts = ReadOptions(isolation="read_committed", columns=["offset"])
    >>> opts.isolation, opts.max_bytes == 64 << 20, opts.replace(errors="salvage").errors
    ('read_committed', True, 'salvage')
    >>> reader_options("read_log_dir")[:3]
    ['start_offset', 'end_offset', 'start_timestamp']
    """
    start_offset: Optional[int] = _option(None, _LOGS)
    end_offset: Optional[int] = _option(None, _LOGS)
    start_timestamp: object = _option(None, _LOGS)
    end_timestamp: object = _option(None, _LOGS)
    isolation: str = _option("read_uncommitted", _LOGS)
    columns: object = _option(None, _LOGS)
    keys: bool = _option(True, _SEGMENT)
    values: bool = _option(True, _SEGMENT)
    headers: bool = _option(True, _SEGMENT)
    errors: str = _option("strict", _ALL)
    verify_crc: object = _option(True, _ALL)
    include_control: bool = _option(False, _ALL)
    max_decompressed: Optional[int] = _option(None, _ALL)
    max_batch_bytes: int = _option(DecodeOptions.max_batch_bytes, _SEGMENT)
    max_bytes: int = _option(64 << 20, _ITER)
    keep_empty: bool = _option(False, _ITER)
    threads: Optional[int] = _option(None, _ALL)
    binary: str = _option("contiguous", _ALL)
    topic: Optional[str] = _option(None, _SEGMENT)
    partition: Optional[int] = _option(None, _SEGMENT)
    storage_options: Optional[dict] = _option(None, _ALL, secret=True)
    filesystem: object = _option(None, _ALL)
    tiered_keys: Optional[dict] = _option(None, _ALL, secret=True)
    replicas: str = _option(DEFAULT_REPLICAS, _ROOTS)
    topic_id: object = _option(None, _ROOTS)
    value_format: Optional[str] = _option(None, _ALL)
    key_format: Optional[str] = _option(None, _ALL)
    schema_registry: object = _option(None, _ALL)
    value_schema: object = _option(None, _ALL)
    key_schema: object = _option(None, _ALL)
    value_errors: str = _option("null", _ALL)
    untyped_topics: str = _option("error", _ALL)
    keep_bytes: bool = _option(False, _ALL)
    recursive_fields_max_depth: int = _option(DEFAULT_MAX_DEPTH, _ALL)
    time_unit: str = _option("us", _ALL)
    additional_properties: str = _option("keep", _ALL)

    @classmethod
    def of(cls, arguments):
        """The options among a reader's arguments (``locals()`` at its start): every field found there."""
        return cls(**{f.name: arguments[f.name] for f in dataclasses.fields(cls) if f.name in arguments})

    def replace(self, **changes):
        """A copy with some options changed (`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)

    def decode_options(self, columns=None, **changes):
        """The `DecodeOptions` of a read of the binary columns `columns` (None: this read's ``columns``;
        for `read_segment`, its ``keys`` / ``values`` / ``headers``), with `changes`."""
        settings = dict(verify_crc=self.verify_crc, include_control=self.include_control,
                        max_decompressed=self.max_decompressed, threads=self.threads, binary=self.binary)
        settings.update(changes)
        if columns is None and self.columns is None:
            return DecodeOptions(keys=self.keys, values=self.values, headers=self.headers,
                                 max_batch_bytes=self.max_batch_bytes, **settings)
        return DecodeOptions.for_columns(self.columns if columns is None else columns, **settings)

    def open_typed(self, roots):
        """The typed-value options of the read (`kafkafmt.values.open_typed`), the registry opened
        once; ``roots``: where a ``_schemas`` topic is looked for."""
        return open_typed(value_format=self.value_format, key_format=self.key_format,
                          schema_registry=self.schema_registry, value_schema=self.value_schema,
                          key_schema=self.key_schema, value_errors=self.value_errors,
                          untyped_topics=self.untyped_topics, keep_bytes=self.keep_bytes, roots=roots,
                          storage_options=self.storage_options,
                          filesystem=self.filesystem, recursive_fields_max_depth=self.recursive_fields_max_depth,
                          time_unit=self.time_unit, additional_properties=self.additional_properties)


def reader_options(reader):
    """The names of the options a reader (a name of `READERS`) takes, in the order of `ReadOptions`."""
    return [f.name for f in dataclasses.fields(ReadOptions) if reader in f.metadata["readers"]]


#: the numpydoc entry of each option, the same in every reader: (names, type, text); a reader's
#: Parameters section gets the entries of the options it takes (`document_options`)
OPTION_DOCS = (
    (("start_offset", "end_offset"), "int, optional", """\
Offsets in [start, end) (end exclusive, as Spark's endingOffsets)."""),
    (("start_timestamp", "end_timestamp"), "int, str or datetime, optional", """\
From the first record with timestamp >= start up to (not including) the first record
with timestamp >= end -- Kafka's offsets-for-times. Milliseconds, or any form
`kafkafmt._util.times.to_millis` reads (ISO-8601 text, a datetime...)."""),
    (("isolation",), '{"read_uncommitted", "read_committed"}', """\
"read_uncommitted" (Kafka's default) or "read_committed" (no records of aborted
transactions, none past the last stable offset)."""),
    (("columns",), "list of str, optional", """\
E.g. ``["offset", "timestamp"]``: key/value/headers not listed are absent from the
result (not decoded at all), never null."""),
    (("keys", "values", "headers"), "bool", """\
False leaves that column out (not decoded at all: metadata-only decoding), as `decode`."""),
    (("errors",), '{"strict", "salvage"}', """\
"strict" (the default: the first corrupt batch raises) or "salvage" (skip each corrupt
stretch, resynchronizing on the next intact batch, and list it in the result's ``report``)."""),
    (("verify_crc",), "bool or None", """\
True checks every CRC (a mismatch is corrupt); False computes them into
``batches.crc_valid``; None skips them."""),
    (("include_control",), "bool", """\
Keep control records (transaction markers, KRaft records) as data rows too (not with
``isolation="read_committed"``); they are always in ``controls``."""),
    (("max_decompressed",), "int, optional", """\
Cap on the decompressed size of one batch (default: the codec's default)."""),
    (("max_batch_bytes",), "int", """\
A size field above this is corruption (Kafka: maxMessageSize), not a truncated tail."""),
    (("max_bytes",), "int", """\
About how much decoded data a chunk holds (default 64 MiB), whatever the segment sizes."""),
    (("keep_empty",), "bool", """\
True also yields chunks without records (batches the cleaner emptied), so every batch is
seen."""),
    (("threads",), "int, optional", """\
How many threads the read decodes with: None (the default) every core this process may
use (`kafkafmt.cpu_count`, as pyarrow's use_threads), 1 serial. Partitions, segments and
the parts of a large buffer are decoded that many at a time (a chunked read decodes each
chunk so, one chunk at a time), and `read_log_dirs` lists a log dir's partition folders and
scans the copies' batch headers with as many; the result, the report and the error raised
are a serial read's."""),
    (("binary",), '{"contiguous", "view"}', """\
"contiguous" (key/value as Arrow binary) or "view" (Arrow binary_view pointing into the
segments' memory maps and decompressed batches, kept alive by the result; see `decode`)."""),
    (("topic", "partition"), "optional", """\
The topic and partition the result is labelled with (default: those the file's
``<topic>-<partition>`` folder names)."""),
    (("storage_options",), "dict, optional", """\
For URLs: options of their fsspec filesystem, as pandas takes them (``key``, ``secret``,
``endpoint_url``, ``anon``...; ignored for local paths)."""),
    (("filesystem",), "optional", """\
An fsspec filesystem or a ``pyarrow.fs.FileSystem`` to read the URLs with instead."""),
    (("tiered_keys",), "dict, optional", """\
``{key id: RSA private key}`` (PEM text or bytes, or a ``cryptography`` private key) for
encrypted Aiven tiered-storage uploads; a segment whose key is missing raises
UnsupportedLayoutError naming the key id."""),
    (("replicas",), '{"dedup", "all"}', """\
Several copies of one partition under the roots (replicas in several brokers' log dirs, a
backup beside the original): "dedup" (the default) reads each offset once, from a copy that
holds it intact -- the copy of the newest leader epoch, then the most complete, and a stretch
it holds damaged from another copy (`ReportKind.FROM_COPY`) -- and reports the others in
``report`` (`ReportKind.REPLICA`, `DIVERGED`, `DAMAGED_COPY`; `ReportKind.MISMATCH` naming both
paths and the first offset where the copies' records differ below the high watermark); "all"
reads every copy, each record's copy named by its log dir (``to_arrow(log_dir=True)``)."""),
    (("topic_id",), "str or dict, optional", """\
Where copies of a partition belong to different incarnations of its topic (other topic ids
in ``partition.metadata``: a topic deleted and created again), the one to read: a topic id
(Kafka's base64 text) or ``{topic: id}``. Without it, the id a ``__cluster_metadata``
partition among the roots names is read; with neither, such a partition raises
`IncarnationError` naming the ids and folders. Copies of another incarnation are never read
(`ReportKind.STRAY`)."""),
    (("value_format", "key_format"), "str, optional", """\
Type values / keys: "avro", "registry" (each schema id's registered type), "protobuf",
"json-schema", "json", "connect-json", "string": a name in the table of formats,
`kafkafmt.values.FORMATS`); None (the default) keeps bytes. ``to_arrow()`` then has typed
``value`` / ``key`` columns (an Avro record is a struct) and valueSchemaId / valueError
(keySchemaId / keyError); ``recs.typed`` holds them as `DecodedColumn` objects."""),
    (("schema_registry",), "optional", """\
Where schemas come from: a log dir, a folder of schema files, a registry URL, a
`SchemaRegistry` (anything `open_registry` takes); None: the ``_schemas`` partition among the
log dirs being read."""),
    (("value_schema", "key_schema"), "optional", """\
The reader schema (default: the latest version of subject ``<topic>-value`` /
``<topic>-key``; or an id, ``{"version": n}``, a subject, a schema)."""),
    (("value_errors",), '{"null", "strict"}', """\
"null" (the default: a bad value is null, its reason in valueError, counted in the report as
BAD_VALUE) or "strict" (raise ValueDecodeError naming file, position and offset)."""),
    (("untyped_topics",), '{"error", "bytes"}', """\
A topic the format finds no schema for (no subject ``<topic>-value``, e.g.
``__consumer_offsets``): "error" (the default: raise SchemaNotFoundError naming it) or
"bytes" (type the topics that have one; the others' values are null in ``value`` and their
bytes in ``valueBytes``, keys alike in ``keyBytes``)."""),
    (("keep_bytes",), "bool", """\
Keep the raw bytes of typed keys / values in ``recs.key`` / ``recs.value`` (False, the
default: they are dropped once typed, which halves what a typed read holds in memory)."""),
    (("recursive_fields_max_depth",), "int", """\
How many times a recursive Avro record, Protobuf message or JSON Schema ``$ref`` appears on a
path from the top of a value (Spark's ``recursive.fields.max.depth``; 5, the default): the
field where it would appear once more is a string holding that value's JSON text, as the
text doors print it -- nothing nested deeper is lost."""),
    (("time_unit",), '{"us", "ns"}', """\
The unit of Protobuf Timestamp / Duration and JSON Schema date-time columns: "us" (the
default) holds every valid value, years 1 to 9999 (digits below the microsecond dropped, as
Spark, Delta and Iceberg hold them); "ns" keeps every nanosecond, for values within
1677-09-21 .. 2262-04-11 (a value beyond is a null field, named in valueError)."""),
    (("additional_properties",), '{"keep", "drop"}', """\
A JSON Schema object's properties outside its schema (unless ``additionalProperties:
false``): "keep" (the default: the JSON text of an object holding them, in one more string
field of the object, ``additionalProperties``) or "drop"."""),
)

_PARTITION_RAISES = """\
PathNotFoundError
    No such partition folder.
NotALogDirError
    `folder` is not a partition folder.
CorruptRecordError
    ``errors="strict"`` and a batch is corrupt (`CrcError` for a CRC mismatch).
ValueError
    An unknown `errors`, `isolation` or column name; an unknown format or `value_errors`, or
    a schema option without a format.
"""

_TYPED_RAISES = """\
ValueDecodeError
    ``value_errors="strict"`` and a value or key cannot be decoded.
SchemaRegistryError
    A format needs schemas and there are none (no ``schema_registry``, no ``_schemas``
    partition among the log dirs read); `SchemaNotFoundError` (a subclass): no reader schema
    for a topic read (``untyped_topics="error"``).
SchemaError
    Two topics' types cannot be one column (the message names them and the first field that
    differs).
"""


def _options_text(taken):
    """The numpydoc entries of the options in `taken`, in the order of `OPTION_DOCS`."""
    lines = []
    for names, kind, text in OPTION_DOCS:
        mine = [n for n in names if n in taken]
        if mine:
            lines.append(f"{', '.join(mine)} : {kind}")
            lines += ["    " + t for t in text.split("\n")]
    return "\n".join(lines) + "\n"


def document_options(func):
    """`func` (a reader) with its options' entries in its docstring: the line ``%(options)s`` of its
    Parameters section becomes the entries of the keyword-only options it takes (`OPTION_DOCS`), and
    ``%(typed_raises)s`` in its Raises section the errors of typed values (``%(partition_raises)s``
    those of reading one partition folder), each indented as the line it replaces (a decorator;
    docstrings stripped by ``python -OO`` stay None)."""
    if func.__doc__ is None:
        return func
    taken = {p.name for p in inspect.signature(func).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    return fill_doc(func, {"options": _options_text(taken), "partition_raises": _PARTITION_RAISES,
                           "typed_raises": _TYPED_RAISES})
