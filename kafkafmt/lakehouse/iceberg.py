"""Iceberg tables through pyiceberg: the catalog, the table (created with its partition spec and sort
order, or loaded), data files and the commit that adds them with the offset ledger.

Catalogs: by default an embedded SQL catalog -- SQLite in ``<warehouse>/catalog.db``, no server --
for a warehouse on the local disk. ``catalog`` may instead name a catalog of pyiceberg's own
configuration (``~/.pyiceberg.yaml`` or ``PYICEBERG_CATALOG__<NAME>__*`` variables: REST, Glue, Hive,
SQL ...), or be a SQLAlchemy URL (``sqlite:////var/lib/kafkafmt/catalog.db``,
``postgresql+psycopg2://...``) for a SQL catalog whose warehouse is anywhere, object stores included.

Data files are Parquet with Iceberg field ids, written by `kafkafmt.lakehouse.writer` and described
to Iceberg (partition, column statistics) as pyiceberg describes its own; a run's files become one
fast-append snapshot per commit, whose summary carries the ledger (`kafkafmt.lakehouse.ledger`).
A commit must apply to the snapshot whose ledger the run started from: the table property
``commit.retry.num-retries`` is set to 0 (pyiceberg would otherwise rebase a commit that lost a race
on the winner's snapshot, adding the same offsets twice); a lost race is a `CommitConflictError`.
The ledger of a table is that of the newest snapshot carrying one in the current snapshot's
ancestry (so a rollback rolls it back too); when older snapshots have been expired away, the table
property ``kafkafmt.offsets`` (written with every commit, with the commit's sequence number) stands
in.
"""
from __future__ import annotations

import os
import uuid

from kafkafmt.lakehouse._storage import is_local, library_options
from kafkafmt.lakehouse.layout import COMPARED_COLUMNS
from kafkafmt.lakehouse.ledger import (BATCHES_KEY, MODE_KEY, OFFSETS_KEY, TABLE_PROPERTY_KEYS, CommitConflictError,
                                       parse_marks, parse_offsets)

__all__ = ["IcebergTable", "fileio_properties"]

_S3FS_TO_ICEBERG = {"key": "s3.access-key-id", "secret": "s3.secret-access-key", "token": "s3.session-token",
                    "endpoint_url": "s3.endpoint", "region": "s3.region", "region_name": "s3.region"}


#: pyiceberg retries a commit that lost a race by rebasing it on the winner's snapshot: for an export
#: that would add the offsets the winner already added a second time, so the table forbids it
_NO_RETRIES = "commit.retry.num-retries"



#: the sequence number of the snapshot whose ledger the table property ``kafkafmt.offsets`` holds
_SEQUENCE = "kafkafmt.offsets-sequence-number"


def fileio_properties(storage_options):
    """fsspec-style storage options (what ``--storage-option`` takes: ``key``, ``secret``,
    ``endpoint_url``, ``client_kwargs={"region_name": ...}``) as pyiceberg FileIO properties; keys
    already in pyiceberg's form (``s3.endpoint`` ...) pass as they are."""
    out = library_options(storage_options, _S3FS_TO_ICEBERG, "s3.anonymous", lambda k: "." in k)
    if out.get("s3.endpoint", "").startswith("http://") and "s3.region" not in out:
        out["s3.region"] = "us-east-1"
    return out


def _local_path(uri):
    uri = str(uri)
    return uri[len("file://"):] if uri.startswith("file://") else uri


def open_catalog(warehouse=None, catalog=None, storage_options=None):
    """The pyiceberg catalog for a warehouse and/or a catalog name or URL (see the module doc)."""
    props = fileio_properties(storage_options)
    if catalog is not None and "://" not in catalog:
        from pyiceberg.catalog import load_catalog

        if warehouse is not None:
            props["warehouse"] = warehouse if not is_local(warehouse) else \
                "file://" + os.path.abspath(_local_path(warehouse))
        return load_catalog(catalog, **props)
    from pyiceberg.catalog.sql import SqlCatalog

    if warehouse is None:
        raise ValueError("an Iceberg export needs a warehouse (--to) unless --catalog names a configured catalog")
    if is_local(warehouse):
        path = os.path.abspath(_local_path(warehouse))
        os.makedirs(path, exist_ok=True)
        wh = "file://" + path
        uri = catalog or "sqlite:///" + os.path.join(path, "catalog.db")
    else:
        if catalog is None:
            raise ValueError(f"the warehouse {warehouse} is on object storage, where no SQLite catalog can live: give "
                             "--catalog NAME (a catalog of pyiceberg's configuration) or --catalog URL (a SQL catalog "
                             "database, e.g. sqlite:////var/lib/kafkafmt/catalog.db)")
        wh, uri = warehouse.rstrip("/"), catalog
    try:
        return SqlCatalog("kafkafmt", uri=uri, warehouse=wh, **props)
    except Exception as exc:  # noqa: BLE001 - another run created the catalog's tables at the same moment
        if not _is_race(exc):
            raise
        return SqlCatalog("kafkafmt", uri=uri, warehouse=wh, **props)


def _is_race(exc):
    """Whether an error of the catalog is another writer's doing at the same moment: a row or table it
    inserted first (SQLAlchemy's IntegrityError, "already exists"), a database it holds locked."""
    try:
        from sqlalchemy.exc import IntegrityError, OperationalError
    except ImportError:
        return False
    text = str(exc).lower()
    return isinstance(exc, IntegrityError) or (isinstance(exc, OperationalError) and
                                               ("already exists" in text or "locked" in text))


def _conflict(describe, exc):
    return CommitConflictError(f"{describe} changed while this export ran (another export?): its commit was "
                               f"refused, nothing of it is in the table; run it again ({exc})")


def _with_field_ids(arrow_type, ice_type):
    """``arrow_type`` with the Iceberg field ids of ``ice_type`` (matched by name) in its fields'
    metadata, as Parquet writers store them."""
    import pyarrow as pa
    from pyiceberg.types import ListType, MapType, StructType

    if pa.types.is_struct(arrow_type) and isinstance(ice_type, StructType):
        return pa.struct([_field_with_id(f, ice_type.field_by_name(f.name)) for f in arrow_type])
    if pa.types.is_list(arrow_type) and isinstance(ice_type, ListType):
        item = pa.field("element", _with_field_ids(arrow_type.value_type, ice_type.element_type), True,
                        metadata={b"PARQUET:field_id": str(ice_type.element_id).encode()})
        return pa.list_(item)
    if pa.types.is_map(arrow_type) and isinstance(ice_type, MapType):
        key = pa.field("key", _with_field_ids(arrow_type.key_type, ice_type.key_type), False,
                       metadata={b"PARQUET:field_id": str(ice_type.key_id).encode()})
        item = pa.field("value", _with_field_ids(arrow_type.item_type, ice_type.value_type), True,
                        metadata={b"PARQUET:field_id": str(ice_type.value_id).encode()})
        return pa.map_(key, item)
    return arrow_type


def _field_with_id(f, nested):
    import pyarrow as pa

    return pa.field(f.name, _with_field_ids(f.type, nested.field_type), True,
                    metadata={b"PARQUET:field_id": str(nested.field_id).encode()})


class IcebergTable:
    """One Iceberg table as an export target (the interface `kafkafmt.lakehouse.export` drives)."""

    format = "iceberg"

    def __init__(self, identifier, warehouse=None, catalog=None, storage_options=None):
        if not identifier or "." not in identifier:
            raise ValueError(f"an Iceberg table is named NAMESPACE.TABLE, not {identifier!r}")
        self.identifier = identifier
        self._where = (warehouse, catalog, storage_options)
        self._catalog = None
        self.table = None
        self.last_props = {}            # the properties of the commit the ledger was read from

    @property
    def catalog(self):
        """The catalog, opened on first use (opening the default SQLite catalog creates it)."""
        if self._catalog is None:
            self._catalog = open_catalog(*self._where)
        return self._catalog

    # -- the table ------------------------------------------------------------------------------
    def exists(self):
        """Whether the table is in the catalog (`open` creates it when not); a local warehouse without
        its SQLite catalog holds none, and is left as it is."""
        warehouse, catalog, _ = self._where
        if self._catalog is None and catalog is None and warehouse is not None and is_local(warehouse):
            if not os.path.exists(os.path.join(os.path.abspath(_local_path(warehouse)), "catalog.db")):
                return False
        return self.catalog.table_exists(self.identifier)

    def open(self, schema, fields, *, target_file_size, compression, mode="append"):
        """Load the table, or create it with ``schema`` (Arrow), partitioned by ``fields`` and
        (``mode`` "append") sorted by partition and offset. Returns the partition fields in force
        (an existing table's own). Another run creating the table at the same moment: its table is
        used; a change that loses a race to another run is a `CommitConflictError`."""
        from pyiceberg.exceptions import CommitFailedException, NoSuchTableError

        try:
            try:
                self.table = self.catalog.load_table(self.identifier)
            except NoSuchTableError:
                self._create(schema, fields, target_file_size, compression, mode)
            if self.table.properties.get(_NO_RETRIES) != "0":
                with self.table.transaction() as tx:
                    tx.set_properties({_NO_RETRIES: "0"})
                self.table = self.catalog.load_table(self.identifier)
        except CommitFailedException as exc:
            raise _conflict(f"Iceberg table {self.identifier}", exc) from exc
        except Exception as exc:  # noqa: BLE001 - the catalog's database refusing a racing change
            if not _is_race(exc):
                raise
            raise _conflict(f"Iceberg table {self.identifier}", exc) from exc
        return self.partition_fields()

    def _create(self, schema, fields, target_file_size, compression, mode):
        from pyiceberg.exceptions import CommitFailedException, NamespaceAlreadyExistsError, TableAlreadyExistsError
        from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform, MonthTransform, YearTransform

        transforms = {"identity": IdentityTransform, "day": DayTransform, "hour": HourTransform,
                      "month": MonthTransform, "year": YearTransform}
        ns = tuple(self.identifier.split(".")[:-1])
        try:
            self.catalog.create_namespace_if_not_exists(ns)
        except Exception as exc:  # noqa: BLE001 - created meanwhile by another run: there it is
            if not (isinstance(exc, NamespaceAlreadyExistsError) or _is_race(exc)) or \
                    not self.catalog.namespace_exists(ns):
                raise
        props = {"write.target-file-size-bytes": str(int(target_file_size)), _NO_RETRIES: "0",
                 "write.parquet.compression-codec": compression or "uncompressed",
                 "kafkafmt.table": "kafka-records", MODE_KEY: mode}
        try:
            with self.catalog.create_table_transaction(self.identifier, schema=schema, properties=props) as tx:
                if fields:
                    with tx.update_spec() as spec:
                        for f in fields:
                            if f.transform == "identity":
                                spec.add_identity(f.source)
                            else:
                                spec.add_field(f.source, transforms[f.transform](), f.name)
                if "partition" in schema.names and "offset" in schema.names and mode == "append":
                    with tx.update_sort_order() as order:
                        order.asc("partition", IdentityTransform())
                        order.asc("offset", IdentityTransform())
        except (TableAlreadyExistsError, CommitFailedException) as exc:
            if isinstance(exc, CommitFailedException) and not self.catalog.table_exists(self.identifier):
                raise
            # created meanwhile by another run: use it
        self.table = self.catalog.load_table(self.identifier)

    def mode(self):
        """"append" or "upsert": how the table was created (tables of before upsert: append)."""
        return self.table.properties.get(MODE_KEY, "append")

    def partition_fields(self):
        from kafkafmt.lakehouse.layout import PartitionField

        schema = self.table.schema()
        out = []
        for pf in self.table.spec().fields:
            source = schema.find_column_name(pf.source_id)
            name = str(pf.transform)
            transform = "identity" if name == "identity" else name
            out.append(PartitionField(source, transform))
        return tuple(out)

    def arrow_schema(self):
        """The table's schema as Arrow (stored types: binary, string, timestamp[us, UTC])."""
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        from kafkafmt.lakehouse.layout import plain_schema

        return plain_schema(schema_to_pyarrow(self.table.schema(), include_field_ids=False))

    def file_schema(self, schema):
        """The Arrow schema data files are written with: ``schema`` with field ids."""
        import pyarrow as pa

        ice = self.table.schema()
        return pa.schema([_field_with_id(f, ice.find_field(f.name)) for f in schema])

    def file_columns(self, schema):
        return list(schema.names)

    #: a column renames in place (by field id: the rows written before follow it)
    renames_fields = True

    def rename(self, changes):
        """Rename the fields of ``changes`` (`TypeChange` "renamed": the path of the table's field, its
        new name) in a commit of their own."""
        with self.table.update_schema() as update:
            for c in changes:
                update.rename_column(c.path, c.new)
        self.table = self.catalog.load_table(self.identifier)

    def evolve(self, new_schema):
        """Add the new fields of ``new_schema`` (Arrow) to the table (a commit of its own)."""
        with self.table.update_schema() as update:
            update.union_by_name(new_schema)
        self.table = self.catalog.load_table(self.identifier)

    # -- the ledger -----------------------------------------------------------------------------
    def ledger(self, tps=()):
        """(offsets, marks of the last batches) of the newest snapshot carrying them in the current
        snapshot's ancestry (so a rollback rolls them back too). When none does -- the snapshots
        were expired under a newer one of another writer -- the table properties written with the
        last commit stand in, if that commit is not newer than the current snapshot (else the table
        was rolled back to before it)."""
        t = self.table
        snap = t.current_snapshot()
        head = snap
        self.last_props = {}
        while snap is not None:
            props = (snap.summary.additional_properties or {}) if snap.summary else {}
            if props.get(OFFSETS_KEY) is not None:
                self.last_props = dict(props)
                return parse_offsets(props[OFFSETS_KEY]), parse_marks(props.get(BATCHES_KEY))
            snap = None if snap.parent_snapshot_id is None else t.snapshot_by_id(snap.parent_snapshot_id)
        seq = t.properties.get(_SEQUENCE)
        if head is not None and OFFSETS_KEY in t.properties and seq is not None and \
                (head.sequence_number or 0) >= int(seq):
            self.last_props = {k: v for k, v in t.properties.items() if k in TABLE_PROPERTY_KEYS}
            return parse_offsets(t.properties[OFFSETS_KEY]), parse_marks(t.properties.get(BATCHES_KEY))
        return {}, {}

    def rows(self, tp, lo, hi):
        """The table's rows of a topic-partition with offsets in [lo, hi): offset, timestamp, key,
        value (a pyarrow Table; what a diverged source is compared with)."""
        from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan

        flt = And(EqualTo("topic", tp[0]), EqualTo("partition", int(tp[1])), GreaterThanOrEqual("offset", int(lo)),
                  LessThan("offset", int(hi)))
        return self.table.scan(row_filter=flt, selected_fields=COMPARED_COLUMNS).to_arrow()

    # -- data files -----------------------------------------------------------------------------
    def open_file(self, key, fields):
        from pyiceberg.typedef import Record

        t = self.table
        name = f"00000-0-{uuid.uuid4()}.parquet"
        data = t.properties.get("write.data.path", f"{t.location().rstrip('/')}/data").rstrip("/")
        path = f"{data}/{t.spec().partition_to_path(Record(*key), t.schema())}/{name}" if fields else f"{data}/{name}"
        out = t.io.new_output(path)
        return (path, out), out.create(overwrite=False)

    def close_file(self, handle, key, size, metadata, rows):
        from pyiceberg.io.pyarrow import (compute_statistics_plan, data_file_statistics_from_parquet_metadata,
                                          parquet_path_to_id_mapping)
        from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
        from pyiceberg.typedef import Record

        path, _out = handle
        t = self.table
        schema = t.schema()
        stats = data_file_statistics_from_parquet_metadata(
            parquet_metadata=metadata, stats_columns=compute_statistics_plan(schema, t.properties),
            parquet_column_mapping=parquet_path_to_id_mapping(schema))
        return DataFile.from_args(content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET,
                                  partition=Record(*key), file_size_in_bytes=size,
                                  sort_order_id=t.sort_order().order_id or None, spec_id=t.spec().spec_id,
                                  equality_ids=None, key_metadata=None, **stats.to_serialized_dict())

    # -- commits --------------------------------------------------------------------------------
    def commit(self, files, properties, offsets_text, ledger):
        """One snapshot adding ``files`` with ``properties`` in its summary; the table property
        ``kafkafmt.offsets`` follows in the same commit. Returns the snapshot id."""
        tx = self._ledger_transaction(properties, offsets_text)
        with tx.update_snapshot(snapshot_properties=properties).fast_append() as append:
            for f in files:
                append.append_data_file(f)
        return self._commit(tx)

    def _ledger_transaction(self, properties, offsets_text):
        """A transaction setting the table properties that stand in for the ledger (see the module doc)."""
        tx = self.table.transaction()
        props = {k: v for k, v in properties.items() if k in TABLE_PROPERTY_KEYS}
        props.update({OFFSETS_KEY: offsets_text, BATCHES_KEY: properties.get(BATCHES_KEY, "{}"),
                      _SEQUENCE: str(self.table.metadata.last_sequence_number + 1)})
        tx.set_properties(props)
        return tx

    def _commit(self, tx):
        from pyiceberg.exceptions import CommitFailedException

        try:
            tx.commit_transaction()
        except CommitFailedException as exc:
            raise _conflict(self.describe(), exc) from exc
        except Exception as exc:  # noqa: BLE001 - the catalog's database refusing a racing change
            if not _is_race(exc):
                raise
            raise _conflict(self.describe(), exc) from exc
        self.table = self.catalog.load_table(self.identifier)
        return self.table.current_snapshot().snapshot_id

    def upsert(self, rows, identity, fields, writer, properties, offsets_text, ledger, clear=()):
        """Apply the newest record of each key (``rows``: the table's columns and
        `kafkafmt.lakehouse.upsert.TOMBSTONE`) by copy-on-write: the data files of the touched
        (topic, partition)s holding a touched key are rewritten without it (through ``writer``,
        a `RollingWriter`), the new rows added, and one ``overwrite`` snapshot with ``properties``
        replaces the old files. Every row of the (topic, partition)s in ``clear`` goes (an old
        incarnation's; those ``rows`` replace come back). Returns (snapshot id, files added, rows
        deleted)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        from pyiceberg.expressions import And, EqualTo, Or

        from kafkafmt.lakehouse.layout import conform, partition_groups
        from kafkafmt.lakehouse.upsert import TOMBSTONE, TableColumns

        touched, gone = {}, {}          # (topic, partition) -> the keys of its rows / of its tombstones
        tcol, pcol, icol = rows.column("topic"), rows.column("partition"), rows.column(identity)
        for topic in pc.unique(tcol).to_pylist():
            in_topic = pc.equal(tcol, topic)
            for part in pc.unique(pcol.filter(in_topic)).to_pylist():
                sel = pc.and_(in_topic, pc.equal(pcol, part))
                touched[(topic, part)] = pc.unique(icol.filter(sel))
                gone[(topic, part)] = pc.unique(icol.filter(pc.and_(sel, rows.column(TOMBSTONE))))
        for tp in clear:
            touched.setdefault(tp, pa.array([], icol.type))
            gone.setdefault(tp, pa.array([], icol.type))
        schema = writer.schema
        plain = pa.schema([pa.field(f.name, f.type, True) for f in schema])     # without the field ids
        deleted, removed = [], 0
        if touched and self.table.current_snapshot() is not None:
            flt = [And(EqualTo("topic", t), EqualTo("partition", int(p))) for t, p in touched]
            for task in self.table.scan(row_filter=flt[0] if len(flt) == 1 else Or(*flt)).plan_files():
                df = task.file
                with self.table.io.new_input(df.file_path).open() as f:
                    ids = pq.read_table(f, columns=["topic", "partition", identity])
                mask, deletes = None, None
                for (t, p), keys in touched.items():
                    here = pc.and_(pc.equal(ids.column("topic"), t), pc.equal(ids.column("partition"), p))
                    hit = pc.and_(here, pc.is_in(ids.column(identity), value_set=keys))
                    dead = pc.and_(here, pc.is_in(ids.column(identity), value_set=gone[(t, p)]))
                    if (t, p) in clear:                 # every row goes; those not replaced are deleted
                        dead = pc.or_(dead, pc.and_(here, pc.invert(hit)))
                        hit = here
                    mask = hit if mask is None else pc.or_(mask, hit)
                    deletes = dead if deletes is None else pc.or_(deletes, dead)
                if mask is None or not pc.any(mask).as_py():
                    continue
                with self.table.io.new_input(df.file_path).open() as f:
                    old = pq.read_table(f)
                keep = old.filter(pc.invert(pc.fill_null(mask, False)))
                if keep.num_rows:
                    writer.write(tuple(df.partition[i] for i in range(len(fields))), conform(keep, plain).cast(schema))
                deleted.append(df)
                removed += int(pc.sum(pc.cast(deletes, pa.int64())).as_py() or 0)
        new = rows.filter(pc.invert(rows.column(TOMBSTONE))).drop_columns([TOMBSTONE])
        if new.num_rows:
            new = conform(new, plain).cast(schema)
            for key, idx in partition_groups(TableColumns(new), fields):
                part = new.slice(idx.start, idx.stop - idx.start) if isinstance(idx, slice) else new.take(idx)
                writer.write(key, part)
        files = writer.close()
        tx = self._ledger_transaction(properties, offsets_text)
        with tx.update_snapshot(snapshot_properties=properties).overwrite() as ow:
            for df in deleted:
                ow.delete_data_file(df)
            for f in files:
                ow.append_data_file(f)
        return self._commit(tx), files, removed

    def describe(self):
        return f"Iceberg table {self.identifier} at {self.table.location()}"

