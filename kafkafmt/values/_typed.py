"""Typed keys and values for the readers: the options every door takes (``value_format``,
``key_format``, ``schema_registry``, ``value_schema``, ``key_schema``, ``value_errors``) and
`decode_values`, which turns the raw ``key``/``value`` columns of decoded `Records` into typed
Arrow columns with `kafkafmt.values._formats.decode_column`, topic by topic.

The typed columns travel with the records (slices, takes, filters and concatenations keep them)
and replace the raw ones in ``to_arrow()``/``to_pandas()``, followed by ``keySchemaId``,
``keyError``, ``valueSchemaId`` and ``valueError`` (`TYPED_COLUMNS`). The raw bytes stay
available as ``recs.key``/``recs.value``.

The schema registry is opened once per read (`open_typed`): by default the ``_schemas``
partition among the roots being read, when a format needs one.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import re

import numpy as np

from kafkafmt.errors import SchemaNotFoundError, SchemaRegistryError
from kafkafmt.record import TYPED_COLUMNS
from kafkafmt.log import ReportEntry, ReportKind
from kafkafmt.values.registry import SchemaRegistry, open_registry
from kafkafmt.values._formats import DecodedColumn, decode_column, get_format, pinned_reader, value_type

__all__ = ["TypedOptions", "open_typed", "decode_values", "empty_typed", "type_values", "reader_schema_of_text",
           "READER_KEYS", "VALUE_ERRORS", "NO_SCHEMA_FORMATS"]

#: what a bad value does: "null" (null, with the reason in valueError and a report entry) or "strict" (raise)
VALUE_ERRORS = ("null", "strict")
#: formats that never look a schema up (no registry is opened for them)
NO_SCHEMA_FORMATS = (None, "bytes", "string", "json")


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
    """
    value_format: object = None
    key_format: object = None
    registry: object = None
    value_schema: object = None
    key_schema: object = None
    value_errors: str = "null"
    pinned: tuple = ()

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
            if fmt in NO_SCHEMA_FORMATS:
                continue
            for topic in topics:
                with _topic_hint(topic, side):
                    spec = pinned_reader(fmt, registry=self.registry, topic=topic, is_key=side == "key",
                                         reader_schema=self.reader(side, topic))
                if spec is not None:
                    # (hashable: a dict is kept as its sorted items)
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
        """The Arrow type of ``side``'s typed column for ``topic``, known before reading."""
        for s, fmt, schema in self.sides():
            if s == side:
                with _topic_hint(topic, side):
                    return value_type(fmt, registry=self.registry, topic=topic, is_key=side == "key",
                                      reader_schema=self.reader(side, topic))
        return None


@contextlib.contextmanager
def _topic_hint(topic, side):
    """A reader schema not found for a topic: say that the format applies to every topic read."""
    try:
        yield
    except SchemaNotFoundError as exc:
        raise SchemaNotFoundError(f"{exc.reason} ({side}_format applies to every topic read: choose the topics "
                                  f"whose {side}s have this format, e.g. topics=[...] or --topics)",
                                  file=exc.file) from None


def open_typed(*, value_format=None, key_format=None, schema_registry=None, value_schema=None, key_schema=None,
               value_errors="null", roots=None, storage_options=None, filesystem=None):
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
        An unknown format or value_errors.
    SchemaRegistryError
        A format needs schemas, none were given, and no ``_schemas`` partition is among the roots.
    """
    if isinstance(value_format, TypedOptions):
        return value_format
    if value_errors not in VALUE_ERRORS:
        raise ValueError(f"value_errors is 'null' or 'strict', not {value_errors!r}")
    for fmt in (value_format, key_format):
        get_format(fmt)                      # an unknown name is a ValueError naming the known ones
    opts = TypedOptions(value_format, key_format, None, value_schema, key_schema, value_errors)
    if not opts.active:
        if schema_registry is not None or value_schema is not None or key_schema is not None:
            raise ValueError("schema_registry / value_schema / key_schema need value_format or key_format")
        return opts
    registry = schema_registry
    if registry is not None and not isinstance(registry, SchemaRegistry):
        registry = open_registry(registry, storage_options=storage_options, filesystem=filesystem)
    elif registry is None and any(fmt not in NO_SCHEMA_FORMATS for _, fmt, _ in opts.sides()):
        try:
            registry = open_registry(None, roots=roots, storage_options=storage_options, filesystem=filesystem)
        except SchemaRegistryError:
            # a reader schema given as a schema is every id's writer schema: no registry needed
            if not all(fmt in NO_SCHEMA_FORMATS or schema is not None for _, fmt, schema in opts.sides()):
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
            with _topic_hint(topic, side):
                dec = decode_column(raw[start:stop], format=fmt, registry=typed.registry, topic=topic,
                                    is_key=side == "key", reader_schema=typed.reader(side, topic), strict=strict,
                                    file=recs.file,
                                    offsets=recs.offset[start:stop],
                                    positions=None if positions is None else positions[start:stop])
            parts.append(dec)
        dec = parts[0] if len(parts) == 1 else DecodedColumn.concat(parts)
        if dec.error_count:
            row = _first_error_row(dec)
            report.append(ReportEntry(ReportKind.BAD_VALUE, recs.file or "",
                                      f"{dec.error_count} {side}{'s' if dec.error_count != 1 else ''} could not be "
                                      f"read as {fmt} (null, with the reason in {TYPED_COLUMNS[side][1]}); first: "
                                      f"{dec.error[row].as_py()}", offset=int(recs.offset[row])))
        out[side] = dec
    return recs.replace(typed=out, report=report)


def empty_typed(typed, topics):
    """``{side: DecodedColumn}`` of no values for each typed side of ``typed``, of the type a read of
    ``topics`` has (their types merged): what a read that found no partition types its empty
    result with."""
    import pyarrow as pa

    from kafkafmt.values._formats import merge_types

    out = {}
    for side, fmt, _ in typed.sides():
        t = merge_types([typed.arrow_type(side, topic) for topic in sorted(set(topics))])
        out[side] = DecodedColumn(pa.array([], t), pa.array([], pa.int32()), pa.array([], pa.string()), 0,
                                  get_format(fmt))
    return out


def _first_error_row(dec):
    import pyarrow.compute as pc
    return int(pc.index(pc.is_valid(dec.error), True).as_py())


#: the keys of a reader schema given as a JSON object naming it (not a schema)
READER_KEYS = ("id", "subject", "version", "message")


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
                key_schema=None, value_errors="null", storage_options=None, filesystem=None):
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
    storage_options, filesystem : optional
        How to reach the registry's log dir.

    Returns
    -------
    Records
        The same records with ``typed`` columns: ``to_arrow()`` gives typed ``key``/``value`` and
        ``keySchemaId``, ``keyError``, ``valueSchemaId``, ``valueError``.

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
                       value_schema=value_schema, key_schema=key_schema, value_errors=value_errors, roots=roots,
                       storage_options=storage_options, filesystem=filesystem)
    return decode_values(recs, typed)
