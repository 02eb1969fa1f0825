"""Typed tables: the columns typed keys and values give a table, the schema ids each commit records,
and the check that the table can take the reader schemas of this run before anything is committed.

Layout: a typed value is **one struct column, ``value``** (a typed key: ``key``), followed by
``valueSchemaId`` and ``valueError`` (``keySchemaId``, ``keyError``) after the Kafka columns --
the shape every other door gives (``to_arrow()``, the Parquet export, the Spark source), so a
query written against one runs against all. A struct rather than flattened columns: a value's
fields cannot clash with the Kafka columns (a value with its own ``offset``, ``timestamp`` or
``key`` field), a typed key's fields with the value's, and new fields nest where the schema puts
them -- Iceberg and Delta both add nested fields in place, and Iceberg keeps each field's id.

Every run pins one reader schema per topic and side -- the latest version of ``<topic>-value``
unless ``value_schema`` names another -- so every row of a run has the same type (values written
with older versions are resolved to it, as Avro's deserializers do). Each commit records in
``kafkafmt.schemas``, per topic and side: ``reader`` (the reader schema, as pinned: a schema id),
its ``subject`` and ``version``, ``readers`` (every reader schema the table's columns came from,
oldest first) and ``writers`` (the writer schema ids of the values this commit holds).

Before a run writes anything, `TypedTable.check` compares the new reader schemas with the ones
the table recorded and with the table's own columns (`kafkafmt.lakehouse.types.compare_types`):
added fields and widened types evolve the table; a change no table takes (a narrowed type, a
removed field's name used again with another type) raises `SchemaEvolutionError` naming the
subject, both versions and the field.

A field the reader schema renames -- an Avro field whose ``aliases`` hold the name the table has
(v3's ``full_name`` with ``"aliases": ["name"]``) -- stays one column across the history
(`TypedTable.renames`): Iceberg renames the column (by field id: the rows written before show under
the new name); Delta keeps the table's name (delta-rs cannot rename a column) and writes the renamed
field's values into it.
"""
from __future__ import annotations

import json

import numpy as np

from kafkafmt.errors import SchemaError, SchemaNotFoundError
from kafkafmt.lakehouse.types import TypeChange, compare_types, rename_fields, table_type, type_text
from kafkafmt.values import needs_schema, reader_schema_for, value_type

__all__ = ["SchemaEvolutionError", "TypedTable", "parse_schemas", "table_changes"]


class SchemaEvolutionError(SchemaError):
    """The reader schema of this run changes a field in a way the table cannot take (a narrowed
    type, a removed field's name used again with another type): nothing was committed."""


def parse_schemas(text):
    """The ``kafkafmt.schemas`` text -> ``{topic: {side: record}}`` ({} for None)."""
    return json.loads(text) if text else {}


def _spec_id(spec):
    """The schema id of a pinned reader (an id, or a dict naming one)."""
    if isinstance(spec, (tuple, list)):
        spec = dict(spec)
    if isinstance(spec, dict):
        spec = spec.get("id")
    return spec if isinstance(spec, int) and not isinstance(spec, bool) else None


def _as_json(spec):
    """A pinned reader as its commit records it (JSON: a tuple of Protobuf messages as a list)."""
    if isinstance(spec, tuple):
        spec = dict(spec)
    if isinstance(spec, dict):
        return {k: list(v) if isinstance(v, tuple) else v for k, v in spec.items()}
    return spec


class TypedTable:
    """The typed sides of one table's export: their types (merged over the table's topics), the
    readers pinned for the run, and the schema record of each commit.

    Parameters
    ----------
    typed : TypedOptions
        Opened and pinned (`kafkafmt.values.TypedOptions.pin`) for the table's topics.
    topics : list of str
        The topics exported into the table.
    fmt : {"iceberg", "delta"}

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> from kafkafmt.values import open_typed
    >>> from kafkafmt.lakehouse.typed import TypedTable
    >>> typed = open_typed(value_format="avro", roots=sample_dir()).pin(["shipments"])
    >>> plan = TypedTable(typed, ["shipments"], "delta")
    >>> plan.fields()[0]
    pyarrow.Field<value: struct<order_id: string, carrier: string, weight_kg: double, shipped_at: timestamp[us, tz=UTC], tracking: string, items: list<element: string>>>
    >>> plan.record({}, {})["shipments"]["value"]["subject"]
    'shipments-value'
    """

    def __init__(self, typed, topics, fmt):
        self.typed, self.fmt = typed, fmt
        self.topics = sorted(set(topics))
        self.sides = [(side, name) for side, name, _ in typed.sides()]
        self.types = {side: typed.merged_type(side, self.topics) for side, _ in self.sides}
        self.kept = {}          # side -> {path of a renamed field in this run's type: the table's name}

    def reader(self, side, topic):
        """The pinned reader of ``side`` for ``topic`` (an id, a dict naming one, or the schema as
        given), None for a topic kept as bytes or a format without schemas."""
        name = dict(self.sides)[side]
        if not needs_schema(name) or self.typed.untyped(side, topic):
            return None
        return self.typed.reader(side, topic)

    def fields(self):
        """The Arrow fields of the typed columns in a table of this format: ``key`` / ``value``
        (their table types), then each side's schema id, error (and bytes) columns."""
        import pyarrow as pa

        out = [pa.field(side, rename_fields(table_type(self.types[side], self.fmt), self.kept.get(side, {})), True)
               for side, _ in self.sides]
        for side, _ in self.sides:
            out += [pa.field(f.name, f.type, True) for f in self.typed.extra_fields(side)]
        return out

    def table_schema(self, base):
        """``base`` (`kafkafmt.lakehouse.layout.kafka_schema`) with the typed columns: ``key`` /
        ``value`` retyped in place, the others after the Kafka columns and before the batch
        metadata (the order of ``Records.to_arrow``)."""
        import pyarrow as pa

        from kafkafmt.record import BATCH_METADATA_COLUMNS

        fields = {f.name: f for f in self.fields()}
        out = [fields.get(f.name, f) for f in base if f.name not in BATCH_METADATA_COLUMNS]
        out += [f for f in fields.values() if f.name not in base.names]
        out += [f for f in base if f.name in BATCH_METADATA_COLUMNS]
        return pa.schema(out)

    # -- renamed fields ---------------------------------------------------------------------------
    def _avro_reader(self, side, topic):
        """The Avro reader schema (an `AvroType`) of ``side`` for ``topic``, None for other types."""
        from kafkafmt.values.avro import parse_registered

        spec = self.reader(side, topic)
        if spec is None or dict(self.sides)[side] not in ("avro", "registry"):
            return None
        rs = reader_schema_for(self.typed.registry, topic, side == "key", _as_json(spec))
        if (rs.schema_type or "AVRO") != "AVRO":
            return None
        return parse_registered(self.typed.registry, rs)

    def renames(self, stored):
        """The `TypeChange` ("renamed") of each field of the table (``stored``, its Arrow schema) that
        this run's reader schemas name anew: a field whose Avro ``aliases`` hold the table's name,
        where the table lacks the new name."""
        from kafkafmt.values.avro import field_aliases

        out = {}
        depth = self.typed.shape.recursive_fields_max_depth
        for side, _ in self.sides:
            if side not in stored.names:
                continue
            have = stored.field(side).type
            for topic in self.topics:
                t = self._avro_reader(side, topic)
                for path, name, aliases in field_aliases(t, depth) if t is not None else ():
                    struct = _at(have, path)
                    names = {f.name for f in struct} if struct is not None and _is_struct(struct) else set()
                    old = [a for a in aliases if a in names]
                    if name not in names and len(old) == 1:
                        out[(side,) + path + (old[0],)] = TypeChange("renamed", (side,) + path + (old[0],),
                                                                      old[0], name)
        return list(out.values())

    def keep_names(self, renames):
        """Write the fields of ``renames`` under the table's names (a table that cannot rename)."""
        for c in renames:
            self.kept.setdefault(c.path[0], {})[c.path[1:-1] + (c.new,)] = c.old

    def named(self, table):
        """``table`` (a chunk's) with its typed columns' renamed fields under the table's names
        (`keep_names`)."""
        for side, names in self.kept.items():
            if side in table.column_names:
                i = table.column_names.index(side)
                col = rename_fields(table.column(i), names)
                table = table.set_column(i, table.field(i).with_type(col.type), col)
        return table

    # -- the schema record ------------------------------------------------------------------------
    def _subject_version(self, spec, side, topic):
        sid = _spec_id(spec)
        if sid is None or self.typed.registry is None:
            return None, None
        try:
            rs = self.typed.registry.schema(sid)
        except SchemaNotFoundError:
            return None, None
        want = f"{topic}-{side}"
        for subject, version in rs.versions:
            if subject == want:
                return subject, version
        return rs.subject, rs.version

    def record(self, history, writers):
        """The ``kafkafmt.schemas`` record of a commit: for every topic and side, the reader, its
        subject and version, every reader the table has had (``history``: the record of the
        table's last commit) and ``writers`` ({(side, topic): set of writer schema ids})."""
        out = {topic: dict(sides) for topic, sides in history.items()}
        for topic in self.topics:
            for side, _ in self.sides:
                spec = self.reader(side, topic)
                old = history.get(topic, {}).get(side, {})
                readers = list(old.get("readers", ()))
                js = _as_json(spec)
                if js is not None and js not in readers:
                    readers.append(js)
                seen = sorted(int(i) for i in writers.get((side, topic), ()))
                if js is None and not readers and not seen:
                    continue                # kept as bytes
                subject, version = self._subject_version(spec, side, topic)
                out.setdefault(topic, {})[side] = {
                    "reader": js, "subject": subject, "version": version, "readers": readers,
                    "writers": seen}
        return out

    # -- the check ----------------------------------------------------------------------------------
    def _type_of(self, side, topic, spec):
        name = dict(self.sides)[side]
        return value_type(name, registry=self.typed.registry, topic=topic, is_key=side == "key", reader_schema=spec)

    def _describe(self, spec, side, topic):
        subject, version = self._subject_version(spec, side, topic)
        sid = _spec_id(spec)
        if subject is None:
            return f"schema id {sid}" if sid is not None else "the reader schema given"
        return f"version {version} of subject {subject!r} (schema id {sid})"

    def check_history(self, history, describe):
        """Check this run's reader schemas against every reader schema the table was built from
        (``history``: the ``kafkafmt.schemas`` record of its last commit).

        Raises
        ------
        SchemaEvolutionError
            A field's type changes in a way no table takes, named by subject, both versions and
            the field.
        """
        problems, seen = [], set()
        for side, _ in self.sides:
            for topic in self.topics:
                spec = self.reader(side, topic)
                if spec is None:
                    continue
                new = table_type(self._type_of(side, topic, spec), "iceberg")
                for old_spec in reversed(history.get(topic, {}).get(side, {}).get("readers", ())):
                    if old_spec == _as_json(spec):
                        continue
                    try:
                        old = table_type(self._type_of(side, topic, old_spec), "iceberg")
                    except (SchemaNotFoundError, SchemaError):
                        continue            # a reader the registry no longer holds: the table's own check stands
                    for c in compare_types(old, new, self.fmt, (side,)):
                        if c.kind == "conflict" and (topic, c.path) not in seen:    # each field once: the newest
                            seen.add((topic, c.path))
                            problems.append(
                                f"field {c.name} is {type_text(c.old)} in {self._describe(old_spec, side, topic)} "
                                f"but {type_text(c.new)} in {self._describe(spec, side, topic)}")
        if problems:
            raise SchemaEvolutionError(evolution_message(describe, self.fmt, problems))

    def explain(self, c, history):
        """A conflict with the table's own column, naming the reader schema the column came from
        when one of the recorded readers has the field with the table's type (else None)."""
        side = c.path[0]
        if side not in dict(self.sides):
            return None
        for topic in self.topics:
            spec = self.reader(side, topic)
            for old_spec in reversed(history.get(topic, {}).get(side, {}).get("readers", ())):
                try:
                    old = table_type(self._type_of(side, topic, old_spec), self.fmt)
                except (SchemaNotFoundError, SchemaError):
                    continue
                if _at(old, c.path[1:]) == c.old:
                    return (f"field {c.name} is {type_text(c.old)} in the table (from "
                            f"{self._describe(old_spec, side, topic)}) but {type_text(c.new)} in "
                            f"{self._describe(spec, side, topic)}")
        return None

    def writers(self, recs):
        """{(side, topic): set of writer schema ids} of a chunk's typed values."""
        import pyarrow as pa
        import pyarrow.compute as pc

        out = {}
        topic = recs.topic
        for side, dec in recs.typed.items():
            ids = dec.schema_id
            if ids.null_count == len(ids):
                continue
            if not isinstance(topic, np.ndarray):
                out.setdefault((side, topic), set()).update(pc.unique(ids.drop_null()).to_pylist())
                continue
            for t in np.unique(topic):
                sel = ids.filter(pa.array(topic == t)).drop_null()
                out.setdefault((side, str(t)), set()).update(pc.unique(sel).to_pylist())
        return out


def evolution_message(describe, fmt, problems):
    return (f"{describe} cannot take this run's schema: " + "; ".join(problems) +
            f". {'Iceberg' if fmt == 'iceberg' else 'Delta'} tables add fields and widen int to long and float to "
            "double, nothing else; nothing was committed. Export to a new table, or read with the version the "
            "table was built from (value_schema / --value-schema)")


def table_changes(stored, new_schema, fmt, describe, plan=None, history=None):
    """The `TypeChange` list taking the table's columns (``stored``) to this run's
    (``new_schema``): added columns and fields, widened types -- after checking that the table
    can take them. Columns only the table has stay (null from now on).

    Raises
    ------
    SchemaEvolutionError
        A column or field changes in a way no table takes (named by the subject and versions it
        came from when ``plan``, the run's `TypedTable`, knows them).
    """
    changes, problems = [], []
    for f in new_schema:
        if f.name not in stored.names:
            changes.append(TypeChange("added", (f.name,), None, f.type))
            continue
        for c in compare_types(stored.field(f.name).type, f.type, fmt, (f.name,)):
            if c.kind != "conflict":
                changes.append(c)
                continue
            text = plan.explain(c, history or {}) if plan is not None else None
            if text is None and len(c.path) == 1 and c.name in ("key", "value"):
                if _nested(c.new) and not _nested(c.old):
                    text = (f"column {c.name} is {type_text(c.old)} in the table (exported without "
                            f"{c.name}_format) but this run types it ({type_text(c.new)})")
                elif _nested(c.old) and not _nested(c.new):
                    text = (f"column {c.name} is typed in the table ({type_text(c.old)}) but this run writes it "
                            f"as {type_text(c.new)} (give the {c.name}_format the table was exported with)")
            problems.append(text or f"column {c.name} is {type_text(c.old)} in the table but {type_text(c.new)} "
                                    f"in this run")
    if problems:
        raise SchemaEvolutionError(evolution_message(describe, fmt, problems))
    return changes


def _nested(t):
    import pyarrow as pa

    return pa.types.is_nested(t)


def _is_struct(t):
    import pyarrow as pa

    return pa.types.is_struct(t)


def _at(t, path):
    """The type at ``path`` inside ``t`` (struct fields, ``element`` of lists, ``key``/``value`` of
    maps), None when absent."""
    import pyarrow as pa

    for name in path:
        if pa.types.is_struct(t):
            idx = t.get_field_index(name)
            if idx < 0:
                return None
            t = t.field(idx).type
        elif pa.types.is_list(t) and name == "element":
            t = t.value_type
        elif pa.types.is_map(t) and name in ("key", "value"):
            t = t.key_type if name == "key" else t.item_type
        else:
            return None
    return t
