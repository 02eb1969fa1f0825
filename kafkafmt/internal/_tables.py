"""Which tables there are, the topic each reads and their schemas."""
from __future__ import annotations

from kafkafmt.internal import _coordinator, _metadata, connect
from kafkafmt.internal._columns import arrow, with_source_columns

__all__ = ["CONNECT_TABLES", "TABLES", "TOPIC_OF", "schema_of"]


def _schemas():
    pa = arrow()
    ts = pa.timestamp("ms", tz="UTC")
    return {name: with_source_columns(schema)
            for module in (_coordinator, _metadata, connect)
            for name, schema in module.record_schemas(pa, ts).items()}


#: Kafka Connect's internal topics as tables (their topics' default names in TOPIC_OF; any name
#: works, as they are configured per Connect cluster)
CONNECT_TABLES = ("connect_configs", "connect_offsets", "connect_status")
#: every table of an internal topic: Kafka's own, then Kafka Connect's
TABLES = ("consumer_offsets", "group_members", "transaction_state", "cluster_metadata") + CONNECT_TABLES
#: the internal topic each table is read from
TOPIC_OF = {"consumer_offsets": "__consumer_offsets", "group_members": "__consumer_offsets",
            "transaction_state": "__transaction_state", "cluster_metadata": "__cluster_metadata",
            "connect_configs": "connect-configs", "connect_offsets": "connect-offsets",
            "connect_status": "connect-status"}


def schema_of(table):
    """The pyarrow schema of one of `TABLES` (for Spark and writers that need it before any data).

    Parameters
    ----------
    table : str
        One of `TABLES` or `CONNECT_TABLES`.

    Returns
    -------
    pyarrow.Schema

    Examples
    --------
    >>> from kafkafmt import internal
    >>> internal.schema_of("consumer_offsets").names[:7]
    ['offset', 'timestamp', 'kind', 'group', 'topic', 'partition', 'committed_offset']
    """
    return _schemas()[table]

