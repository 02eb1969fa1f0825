"""Kafka history into lakehouse tables -- Iceberg (pyiceberg) and Delta (delta-rs) -- incrementally
and idempotently: `export_table`.

One job per module: `layout` (the table's columns and partitioning, chunks as rows), `ledger` (the
source offsets each commit records, data loss), `writer` (rolling Parquet data files), `iceberg`
and `delta` (the two table formats), `_storage` (their storage options), `export` (the run); for
typed keys and values `types` (each Arrow type as a table holds it), `typed` (the typed columns,
the schema ids each commit records, schema evolution) and `deadletter` (values that cannot be
typed); `upsert` (the latest value of each key). pyiceberg and deltalake are imported only
when a table of theirs is written (``pip install 'kafkafmt[lakehouse]'``).
"""
from kafkafmt.lakehouse.export import ExportResult, export_table
from kafkafmt.lakehouse.ledger import CommitConflictError, DataLoss, DataLossError
from kafkafmt.lakehouse.typed import SchemaEvolutionError

__all__ = ["export_table", "ExportResult", "DataLoss", "DataLossError", "CommitConflictError", "SchemaEvolutionError"]
