"""Typed keys and values for the readers: the options every door takes (``value_format``,
``key_format``, ``schema_registry``, ``value_schema``, ``key_schema``, ``value_errors``, and how
values are shaped: ``recursive_fields_max_depth``, ``time_unit``, ``additional_properties``,
`kafkafmt.values._options`) and
`decode_values`, which turns the raw ``key``/``value`` columns of decoded `Records` into typed
Arrow columns with `kafkafmt.values._formats.decode_column`, topic by topic.

The typed columns travel with the records (slices, takes, filters and concatenations keep them)
and replace the raw ones in ``to_arrow()``/``to_pandas()``, followed by ``keySchemaId``,
``keyError``, ``valueSchemaId`` and ``valueError`` (`TYPED_COLUMNS`). The readers drop the raw
bytes of a typed side once it is typed (they would double the memory a read holds); with
``keep_bytes=True`` they stay available as ``recs.key``/``recs.value``.

The schema registry is opened once per read (`open_typed`): by default the ``_schemas``
partition among the roots being read, when a format needs one.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import warnings

import numpy as np

from kafkafmt.errors import KafkafmtWarning, SchemaNotFoundError, SchemaRegistryError
from kafkafmt.record import TYPED_COLUMNS, UNTYPED_COLUMNS
from kafkafmt.log import ReportEntry, ReportKind
from kafkafmt.values.registry import SchemaRegistry, open_registry
from kafkafmt.values._formats import (DecodedColumn, column_parts, decode_column, format_names, get_format,
                                      merge_types, named_reader, needs_schema, pinned_reader, reader_schema_for,
                                      scan_names, value_type)
from kafkafmt.values._options import DEFAULT_MAX_DEPTH, ValueShape

__all__ = ["TypedOptions", "open_typed", "decode_values", "empty_typed", "type_values", "reader_schema_of_text",
           "READER_KEYS", "VALUE_ERRORS", "UNTYPED_TOPICS", "FailedValues"]

#: what a bad value does: "null" (null, with the reason in valueError and a report entry) or "strict" (raise)
VALUE_ERRORS = ("null", "strict")
#: what a topic without a schema does: "error" (the read stops, naming it) or "bytes" (its keys / values
#: are not typed: null in key / value, their bytes in keyBytes / valueBytes)
UNTYPED_TOPICS = ("error", "bytes")


@dataclasses.dataclass(frozen=True)
class TypedOptions:
    """How keys and values are typed in one read (the readers' keyword arguments, resolved).

    Attributes
    ----------
    value_format, key_format : str or None
        Names in `kafkafmt.values._formats.FORMATS`; None keeps the bytes.
    registry : SchemaRegistry or None
        Opened once for the read.
    value_schema, key_schema : optional
        Reader schemas (see `kafkafmt.values._formats`).
    value_errors : "null" or "strict"
    pinned : tuple
        ``((side, topic), reader schema)`` pairs that override the side's reader schema for one
        topic (`pin`: the schema ids a query planned with).
    untyped_topics : "error" or "bytes"
        A topic the format finds no reader schema for (`untyped`): the read stops, or its keys /
        values are kept as bytes.
    keep_bytes : bool
        The readers keep the raw bytes of typed sides in ``recs.key`` / ``recs.value`` (else they
        drop them once typed).
    shape : ValueShape
        How values are shaped (`kafkafmt.values._options`).
    """
    value_format: object = None
    key_format: object = None
    registry: object = None
    value_schema: object = None
    key_schema: object = None
    value_errors: str = "null"
    pinned: tuple = ()
    untyped_topics: str = "error"
    keep_bytes: bool = False
    shape: ValueShape = ValueShape()
    _untyped: dict = dataclasses.field(default_factory=dict, init=False, compare=False, hash=False, repr=False)

    @property
    def active(self):
        """True when keys or values are to be typed."""
        return self.value_format not in (None, "bytes") or self.key_format not in (None, "bytes")

    def reader(self, side, topic):
        """The reader schema of ``side`` for ``topic``: pinned, else the side's own."""
        for key, schema in self.pinned:
            if key == (side, topic):
                return dict(schema) if isinstance(schema, tuple) else schema
        return self.key_schema if side == "key" else self.value_schema

    def pin(self, topics):
        """A copy whose reader schemas are the ids they resolve to now, per topic (so that a read
        planned now decodes with the same schemas later, whatever the registry learns meanwhile).

        Raises
        ------
        SchemaNotFoundError
            A topic has no reader schema.
        """
        if self.registry is None:
            return self
        pinned = dict(self.pinned)
        for side, fmt, _ in self.sides():
            if not needs_schema(fmt):
                continue
            for topic in topics:
                if self.untyped(side, topic):
                    continue
                with _topic_hint(topic, side):
                    spec = pinned_reader(fmt, registry=self.registry, topic=topic, is_key=side == "key",
                                         reader_schema=self.reader(side, topic), **self.shape_options())
                if spec is not None:
                    # (hashable: a dict is kept as its sorted items)
                    pinned[(side, topic)] = tuple(sorted(spec.items())) if isinstance(spec, dict) else spec
        return dataclasses.replace(self, pinned=tuple(sorted(pinned.items())))

    def scanned(self, topics):
        """The ``(side, topic)`` pairs of ``topics`` whose column's type depends on what their values
        name (`kafkafmt.values._formats.scan_names`: a Protobuf file of several messages, none named):
        a read scans their values first (`names_in`) and reads with what it found (`named`)."""
        out = []
        for side, fmt, _ in self.sides():
            for topic in topics:
                if topic is None or self.untyped(side, topic):
                    continue
                with _topic_hint(topic, side):
                    if scan_names(fmt, registry=self.registry, topic=topic, is_key=side == "key",
                                  reader_schema=self.reader(side, topic), **self.shape_options()) is not None:
                        out.append((side, topic))
        return out

    def names_in(self, side, topic, column):
        """What the raw keys / values ``column`` of ``topic`` name (a set; see `scanned`)."""
        fmt = self.key_format if side == "key" else self.value_format
        return scan_names(fmt, column, registry=self.registry, topic=topic, is_key=side == "key",
                          reader_schema=self.reader(side, topic), **self.shape_options()) or set()

    def named(self, found):
        """A copy that reads each ``(side, topic)`` of ``found`` (``{(side, topic): names}``, what
        `names_in` found in every value a read reads) with the reader those names call for
        (`kafkafmt.values._formats.named_reader`), pinned."""
        pinned = dict(self.pinned)
        for (side, topic), names in found.items():
            fmt = self.key_format if side == "key" else self.value_format
            spec = named_reader(fmt, names, registry=self.registry, topic=topic, is_key=side == "key",
                                reader_schema=self.reader(side, topic), **self.shape_options())
            if spec is not None:
                pinned[(side, topic)] = tuple(sorted(spec.items())) if isinstance(spec, dict) else spec
        return dataclasses.replace(self, pinned=tuple(sorted(pinned.items())))

    def sides(self):
        """(side, format, reader schema) of each side to type."""
        out = []
        for side, fmt, schema in (("key", self.key_format, self.key_schema),
                                  ("value", self.value_format, self.value_schema)):
            if fmt not in (None, "bytes"):
                out.append((side, fmt, schema))
        return out

    def arrow_type(self, side, topic):
        """The Arrow type of ``side``'s typed column for ``topic``, known before reading (None
        for a topic kept as bytes, see `untyped`)."""
        for s, fmt, schema in self.sides():
            if s == side:
                if self.untyped(side, topic):
                    return None
                with _topic_hint(topic, side):
                    return value_type(fmt, registry=self.registry, topic=topic, is_key=side == "key",
                                      reader_schema=self.reader(side, topic), **self.shape_options())
        return None

    def types_known(self, topic):
        """Whether the Arrow type of each typed side of ``topic`` is known before reading (or the side is kept as
        bytes): then a value's typed row is the same whatever values it is typed with -- not so where a format
        infers the type from the values it is given (plain JSON without a reader schema), or cannot type the topic
        at all."""
        for side, _, _ in self.sides():
            try:
                self.arrow_type(side, topic)
            except Exception:   # noqa: BLE001 - not known before reading, or not at all
                return False
        return True

    def shape_options(self):
        """The shaping options as `decode_column` and `value_type` take them."""
        return dataclasses.asdict(self.shape)

    def merged_type(self, side, topics):
        """The Arrow type of ``side``'s typed column in a read of ``topics``: their types merged
        (`kafkafmt.values._formats.merge_types`; a topic kept as bytes has the null type).

        Raises
        ------
        SchemaError
            Two topics' types cannot be one column (the message names them and the field).
        SchemaNotFoundError
            A topic has no reader schema and ``untyped_topics="error"``.
        """
        import pyarrow as pa

        topics = sorted(set(topics), key=lambda t: (t is not None, t or "")) or [None]
        # a topic kept as bytes: null values, of the null type (as `decode_values` gives them)
        return merge_types([self.arrow_type(side, t) or pa.null() for t in topics], topics)

    def extra_fields(self, side):
        """The Arrow fields a typed ``side`` adds after the Kafka columns: its schema id, its error
        and (``untyped_topics="bytes"``) the bytes of the values kept as bytes."""
        import pyarrow as pa

        schema_id, error = TYPED_COLUMNS[side]
        fields = [pa.field(schema_id, pa.int32()), pa.field(error, pa.string())]
        if self.untyped_topics == "bytes":
            fields.append(pa.field(UNTYPED_COLUMNS[side], pa.binary()))
        return fields

    def untyped(self, side, topic):
        """Why ``side`` of ``topic`` is kept as bytes (``untyped_topics="bytes"``), else None: the
        format needs a schema and finds no reader schema for the topic (no subject
        ``<topic>-value``), or the subject holds a schema of another type than the format reads."""
        if self.untyped_topics != "bytes" or topic is None:
            return None
        key = (side, topic)
        if key not in self._untyped:
            self._untyped[key] = self._why_untyped(side, topic)
        return self._untyped[key]

    def _why_untyped(self, side, topic):
        fmt = self.key_format if side == "key" else self.value_format
        if not needs_schema(fmt):
            return None
        spec = self.reader(side, topic)
        if spec is not None and not isinstance(spec, str):
            return None                      # a schema, an id, a version: every topic's reader
        try:
            rs = reader_schema_for(self.registry, topic, side == "key", spec)
        except SchemaNotFoundError as exc:
            return exc.reason
        want = get_format(fmt).schema_type
        have = rs.schema_type or "AVRO"
        if want is not None and have != want:
            return f"subject {rs.subject!r} holds a {have} schema, not {want}"
        return None


@contextlib.contextmanager
def _topic_hint(topic, side):
    """A reader schema not found for a topic: say that the format applies to every topic read, and
    how to go on."""
    try:
        yield
    except SchemaNotFoundError as exc:
        raise SchemaNotFoundError(f"{exc.reason}; {side}_format applies to every topic read: choose the topics "
                                  f"(topics=, --topics) or keep those without a schema as bytes "
                                  f"(untyped_topics='bytes', --untyped-topics bytes)", file=exc.file) from None


def open_typed(*, value_format=None, key_format=None, schema_registry=None, value_schema=None, key_schema=None,
               value_errors="null", untyped_topics="error", keep_bytes=False, roots=None, storage_options=None,
               filesystem=None, recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us",
               additional_properties="keep"):
    """Check the typed-value options of a read and open its schema registry (once).

    Parameters
    ----------
    value_format, key_format : str or None
        Names in `kafkafmt.values._formats.FORMATS` (``"avro"``, ``"registry"``, ``"protobuf"``,
        ``"json-schema"``, ``"json"``, ``"string"``, ...).
    schema_registry : optional
        Anything `kafkafmt.open_registry` takes, or an opened `SchemaRegistry`. None: the
        ``_schemas`` partition among ``roots`` when a format needs schemas.
    value_schema, key_schema : optional
        Reader schemas (an id, a version, a subject, a schema).
    value_errors : "null" or "strict"
    untyped_topics : "error" or "bytes"
        A topic the format finds no schema for: the read stops naming it, or its keys / values
        are kept as bytes (`TypedOptions.untyped`).
    keep_bytes : bool
        Keep the raw bytes of typed keys / values in ``recs.key`` / ``recs.value`` (the readers
        drop them once typed, by default).
    recursive_fields_max_depth, time_unit, additional_properties : optional
        How values are shaped (`kafkafmt.values._options`).
    roots : str or list, optional
        The roots being read (searched for ``_schemas``).
    storage_options, filesystem : optional
        How to reach the roots and the registry's log dir.

    Returns
    -------
    TypedOptions

    Raises
    ------
    ValueError
        An unknown format, value_errors or untyped_topics, or a shaping option out of its range.
    SchemaRegistryError
        A format needs schemas, none were given, and no ``_schemas`` partition is among the roots.
    """
    if isinstance(value_format, TypedOptions):
        return value_format
    if value_errors not in VALUE_ERRORS:
        raise ValueError(f"value_errors is 'null' or 'strict', not {value_errors!r}")
    if untyped_topics not in UNTYPED_TOPICS:
        raise ValueError(f"untyped_topics is 'error' or 'bytes', not {untyped_topics!r}")
    for side, fmt in (("value", value_format), ("key", key_format)):
        if side not in get_format(fmt).sides:     # (an unknown name is a ValueError naming the known ones)
            raise ValueError(f"format {fmt!r} does not type {side}s: {side}_format is one of "
                             f"{', '.join(format_names(side))}")
    shape = ValueShape(recursive_fields_max_depth, time_unit, additional_properties)
    opts = TypedOptions(value_format, key_format, None, value_schema, key_schema, value_errors,
                        untyped_topics=untyped_topics, keep_bytes=bool(keep_bytes), shape=shape)
    if not opts.active:
        if schema_registry is not None or value_schema is not None or key_schema is not None:
            raise ValueError("schema_registry / value_schema / key_schema need value_format or key_format")
        return opts
    registry = schema_registry
    if registry is not None and not isinstance(registry, SchemaRegistry):
        registry = open_registry(registry, storage_options=storage_options, filesystem=filesystem)
    elif registry is None and any(needs_schema(fmt) for _, fmt, _ in opts.sides()):
        try:
            registry = open_registry(None, roots=roots, storage_options=storage_options, filesystem=filesystem)
        except SchemaRegistryError:
            # a reader schema given as a schema is every id's writer schema: no registry needed
            if not all(not needs_schema(fmt) or schema is not None for _, fmt, schema in opts.sides()):
                raise
    return dataclasses.replace(opts, registry=registry)


def _runs(recs):
    """(start, stop, topic) of each run of records of one topic."""
    n = len(recs)
    topic = recs.topic
    if not isinstance(topic, np.ndarray):
        return [(0, n, topic)] if n else []
    if n == 0:
        return []
    change = np.flatnonzero(topic[1:] != topic[:-1]) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [n]])
    return [(int(a), int(b), topic[a]) for a, b in zip(starts, stops)]


def decode_values(recs, typed):
    """``recs`` with typed keys and values (see the module docstring).

    Parameters
    ----------
    recs : Records
        Decoded records with their raw key/value columns and topic names.
    typed : TypedOptions
        From `open_typed`.

    Returns
    -------
    Records
        The same records, ``recs.typed`` holding a `kafkafmt.values._formats.DecodedColumn` per typed side;
        bad values are counted in the report (``ReportKind.BAD_VALUE``, one entry per side and
        file).

    Raises
    ------
    ValueDecodeError
        ``value_errors="strict"`` and a value is bad (the error names file, position and offset).
    """
    if not typed.active:
        return recs
    strict = typed.value_errors == "strict"
    positions = recs.batch_column("position") if "position" in recs.batches.columns else None
    out = {}
    report = list(recs.report)
    for side, fmt, schema in typed.sides():
        raw = recs.decoded(side)
        if raw is None:
            raise ValueError(f"{side}_format={fmt!r} needs the {side} column: read it (columns=[..., {side!r}])")
        parts = []
        runs = _runs(recs) or [(0, 0, recs.topic if not isinstance(recs.topic, np.ndarray) else None)]
        for start, stop, topic in runs:
            if typed.untyped(side, topic):
                parts.append(_kept_as_bytes(raw[start:stop], fmt))
                continue
            with _topic_hint(topic, side):
                dec = decode_column(raw[start:stop], format=fmt, registry=typed.registry, topic=topic,
                                    is_key=side == "key", reader_schema=typed.reader(side, topic), strict=strict,
                                    file=recs.file,
                                    offsets=recs.offset[start:stop],
                                    positions=None if positions is None else positions[start:stop],
                                    **typed.shape_options())
            if typed.untyped_topics == "bytes":      # typed: no bytes kept
                dec = dataclasses.replace(dec, untyped=_no_bytes(len(dec)))
            parts.append(dec)
        dec = parts[0] if len(parts) == 1 else DecodedColumn.concat(parts, [t for _, _, t in runs])
        if dec.error_count:
            row = _first_error_row(dec, read=False)
            report.append(ReportEntry(ReportKind.BAD_VALUE, recs.file or "",
                                      f"{dec.error_count} {side}{'s' if dec.error_count != 1 else ''} could not be "
                                      f"read as {fmt} (null, with the reason in {TYPED_COLUMNS[side][1]}); first: "
                                      f"{dec.error[row].as_py()}", offset=int(recs.offset[row])))
        if dec.field_error_count:
            row = _first_error_row(dec, read=True)
            n = dec.field_error_count
            report.append(ReportEntry(ReportKind.BAD_VALUE, recs.file or "",
                                      f"{n} {side}{'s' if n != 1 else ''} read as {fmt} with fields their columns "
                                      f"cannot hold (those fields null, named in {TYPED_COLUMNS[side][1]}); first: "
                                      f"{dec.error[row].as_py()}", offset=int(recs.offset[row])))
        out[side] = dec
    return recs.replace(typed=out, report=report)


def empty_typed(typed, topics):
    """``{side: DecodedColumn}`` of no values for each typed side of ``typed``, of the type a read of
    ``topics`` has (their types merged): what a read that found no partition types its empty
    result with."""
    import pyarrow as pa


    out = {}
    for side, fmt, _ in typed.sides():
        t = merge_types([typed.arrow_type(side, topic) for topic in sorted(set(topics))])
        out[side] = DecodedColumn(pa.array([], t), pa.array([], pa.int32()), pa.array([], pa.string()), 0,
                                  get_format(fmt))
    return out


def _no_bytes(n):
    import pyarrow as pa
    return pa.nulls(n, pa.binary())


def _kept_as_bytes(raw, fmt):
    """The DecodedColumn of the keys / values of a topic kept as bytes: null, their bytes in ``untyped``."""
    import pyarrow as pa

    column = column_parts(raw)[0]
    n = len(column)
    return DecodedColumn(pa.nulls(n, pa.null()), pa.nulls(n, pa.int32()), pa.nulls(n, pa.string()), 0,
                         get_format(fmt), untyped=column.cast(pa.binary()))


def _first_error_row(dec, read):
    """The first row with an error whose value is null (``read`` False) or was read (True)."""
    import pyarrow.compute as pc

    values = dec.values
    mask = pc.and_(pc.is_valid(dec.error), pc.is_valid(values) if read else pc.is_null(values))
    return int(pc.index(mask, True).as_py())


#: the keys of a reader schema given as a JSON object naming it (not a schema)
READER_KEYS = ("id", "subject", "version", "message")


class FailedValues:
    """Counts, per side and topic of one read, the keys / values typed, those that could not be,
    and those read with fields their columns cannot hold; `warn` says (one `KafkafmtWarning` per
    read) when none of a topic's could be read -- a wrong format or schema, which would otherwise
    give a table of nulls without a word -- and when some were read with fields null.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0", value_format="string")
    >>> FailedValues().add(recs).warn()        # some values were read: nothing to say
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     recs = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0", value_format="avro",
    ...                                  value_schema="shipments-value")
    >>> print(caught[0].message)
    none of the 120 values of topic 'payments' could be read as avro: all null, valueError says why (first: ...)
    """

    def __init__(self):
        # (side, topic) -> [values typed, values failed, first reason, format name, values read with fields
        # null, the first of those]
        self.counts = {}

    def add(self, recs):
        """Count the typed keys / values of ``recs`` (a chunk, or a whole read); returns self. (A
        null without an error -- a tombstone -- is not counted; nor is a key / value kept as bytes.)"""
        import pyarrow.compute as pc

        for side, dec in recs.typed.items():
            nulls = _nulls_without_error(dec)          # (values kept as bytes are null too)
            for start, stop, topic in _runs(recs):
                errors = dec.error[start:stop]
                c = self.counts.setdefault((side, topic), [0, 0, None, getattr(dec.format, "name", None), 0, None])
                c[0] += int(stop - start - nulls[start:stop].sum())
                if errors.null_count == len(errors):
                    continue
                read = pc.is_valid(dec.values[start:stop])
                for k, mask in ((1, pc.and_(pc.is_valid(errors), pc.invert(read))),
                                (4, pc.and_(pc.is_valid(errors), read))):
                    hit = errors.filter(mask)
                    c[k] += len(hit)
                    if len(hit) and c[k + 1] is None:
                        c[k + 1] = hit[0].as_py()
        return self

    def warn(self, stacklevel=2):
        """One `KafkafmtWarning` naming each topic none of whose keys / values could be read (its
        count and the first reason), and each topic with keys / values read with fields null, if any."""
        lines = [f"none of the {n} {side}s of topic {topic!r} could be read as {fmt}: all null, "
                 f"{TYPED_COLUMNS[side][1]} says why (first: {first})"
                 for (side, topic), (n, failed, first, fmt, _, _) in self.counts.items() if failed and failed == n]
        lines += [f"{partial} of the {n} {side}s of topic {topic!r} were read as {fmt} with fields their columns "
                  f"cannot hold: those fields are null, {TYPED_COLUMNS[side][1]} names them (first: {first})"
                  for (side, topic), (n, _, _, fmt, partial, first) in self.counts.items() if partial]
        if lines:
            warnings.warn("; ".join(lines), KafkafmtWarning, stacklevel=stacklevel + 1)


def _nulls_without_error(dec):
    """Rows whose typed value is null with no error (tombstones, values kept as bytes) as a bool array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = dec.values
    if not values.null_count:
        return np.zeros(len(dec), bool)
    null = pc.is_null(values)
    if dec.error.null_count != len(dec.error):
        null = pc.and_(null, pc.is_null(dec.error))
    null = null.combine_chunks() if isinstance(null, pa.ChunkedArray) else null
    return np.asarray(null.to_numpy(zero_copy_only=False), bool)


def reader_schema_of_text(text):
    """A reader schema given as text (the command line's ``--value-schema``, Spark's
    ``valueSchema``) as the Python API takes it: digits are a schema id, ``v<n>`` a version of the
    topic's subject, a JSON object of only ``id`` / ``subject`` / ``version`` / ``message`` (e.g.
    ``{"subject": "clicks-value", "message": "shop.clicks.Click"}``) that dict, anything else a
    subject name, a Protobuf message's full name (``shop.clicks.Click``: a message of the topic's
    subject) or a schema (JSON text or a file); None stays None.

    Parameters
    ----------
    text : str, int or None

    Returns
    -------
    int, dict, str or None

    Examples
    --------
    >>> from kafkafmt.values import reader_schema_of_text
    >>> reader_schema_of_text("7"), reader_schema_of_text("v2"), reader_schema_of_text("shop.clicks.Click")
    (7, {'version': 2}, 'shop.clicks.Click')
    >>> reader_schema_of_text('{"message": "shop.clicks.Click", "version": 3}')
    {'message': 'shop.clicks.Click', 'version': 3}
    """
    if text is None:
        return None
    if isinstance(text, dict):
        return text
    v = str(text).strip()
    if re.fullmatch(r"\d+", v):
        return int(v)
    m = re.fullmatch(r"v(\d+)", v)
    if m:
        return {"version": int(m.group(1))}
    if v.startswith("{"):
        try:
            parsed = json.loads(v)
        except ValueError:
            return v
        if isinstance(parsed, dict) and parsed and set(parsed) <= set(READER_KEYS):
            return parsed
    return v


def type_values(recs, *, value_format=None, key_format=None, schema_registry=None, value_schema=None,
                key_schema=None, value_errors="null", untyped_topics="error", storage_options=None, filesystem=None,
                recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us", additional_properties="keep"):
    """Type the keys and values of `Records` already decoded (what the readers' ``value_format=``
    does while reading).

    Parameters
    ----------
    recs : Records
        Decoded records with their raw ``key``/``value`` columns and topic names (from any reader,
        or `kafkafmt.decode` with ``topic=``).
    value_format, key_format : str, optional
        Names in `kafkafmt.values._formats.FORMATS` (``"avro"``, ``"registry"``, ``"protobuf"``,
        ``"json-schema"``, ``"json"``, ``"connect-json"``, ``"string"``); None keeps bytes.
    schema_registry : optional
        Anything `kafkafmt.open_registry` takes; None: the ``_schemas`` partition among the log
        dirs the records were read from (``recs.log_dir``).
    value_schema, key_schema : optional
        Reader schemas: an id, ``{"version": n}``, a subject or a schema (default: the latest
        version of ``<topic>-value`` / ``<topic>-key``).
    value_errors : "null" or "strict"
        A bad value is null with its reason in ``valueError`` (and a ``BAD_VALUE`` report entry),
        or raises.
    untyped_topics : "error" or "bytes"
        A topic without a schema raises `SchemaNotFoundError`, or its values are kept as bytes:
        null in ``value``, their bytes in ``valueBytes``.
    storage_options, filesystem : optional
        How to reach the registry's log dir.
    recursive_fields_max_depth, time_unit, additional_properties : optional
        How values are shaped, as the readers take them (`kafkafmt.values._options`).

    Returns
    -------
    Records
        The same records with ``typed`` columns: ``to_arrow()`` gives typed ``key``/``value`` and
        ``keySchemaId``, ``keyError``, ``valueSchemaId``, ``valueError``. A topic none of whose
        values could be read warns (`KafkafmtWarning`).

    Raises
    ------
    ValueDecodeError
        ``value_errors="strict"`` and a value is bad.
    SchemaRegistryError, SchemaNotFoundError
        No registry to open, or a topic without a reader schema.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/shipments-0", start_offset=1998, end_offset=2000)
    >>> typed = kafkafmt.type_values(recs, value_format="avro", key_format="string")
    >>> typed.to_arrow().column("key").to_pylist()
    ['o-0000701', 'o-0003035']
    >>> typed.to_arrow().column("value")[1]["carrier"].as_py(), typed.typed["value"].error_count
    ('DHL', 0)
    """
    roots = None
    if schema_registry is None:
        log_dir = recs.log_dir
        roots = sorted({d for d in np.atleast_1d(log_dir).tolist() if d is not None}) if log_dir is not None else None
    typed = open_typed(value_format=value_format, key_format=key_format, schema_registry=schema_registry,
                       value_schema=value_schema, key_schema=key_schema, value_errors=value_errors,
                       untyped_topics=untyped_topics, roots=roots, storage_options=storage_options,
                       filesystem=filesystem, recursive_fields_max_depth=recursive_fields_max_depth,
                       time_unit=time_unit, additional_properties=additional_properties)
    out = decode_values(recs, typed)
    FailedValues().add(out).warn()
    return out
