"""The table of internal-topic tables: one `InternalTable` entry per table (its name, the topic it reads
and the other names that topic goes by, its Arrow schema, its builder, kafka-dump-log's decoder for
its records) in `INTERNAL_TABLES`, filled by `register_table` where each table is built.

Every door reads this table and nothing else: `kafkafmt.internal` (the builders, `schema_of`,
`dump_text`), ``kafkafmt export --internal NAME`` (its choices), ``kafkafmt dump``
(its ``--<decoder>-decoder`` flags and the decoder a folder gets by its name) and Spark's ``decode``
option. A table registered here reaches all of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from kafkafmt.internal._columns import arrow, with_source_columns

__all__ = ["InternalTable", "INTERNAL_TABLES", "register_table", "internal_table", "schema_of", "decoders",
           "SAMPLE_RECORDS"]

#: how many of a topic's first records `InternalTable.looks` judges its shape by
SAMPLE_RECORDS = 20

#: how a topic's keys and values are framed, as Kafka's serdes write them: ``coordinator`` (an int16
#: record type then the key message; an int16 version then the value message: CoordinatorRecordSerde)
#: or ``metadata`` (a null key; uvarint frame version, api key and version, then the message:
#: MetadataRecordSerde)
ENCODINGS = ("coordinator", "metadata")


@dataclass(frozen=True)
class InternalTable:
    """One table of an internal topic, as every door reads it.

    Parameters
    ----------
    name : str
        The table's name: ``kafkafmt.internal.<name>``, ``export --internal <name>``, Spark's
        ``decode=<name>``.
    topic : str
        The topic it reads (its default name, when a cluster names it itself).
    schemas : callable
        ``schemas(pyarrow, timestamp_type)`` -> ``{table name: pyarrow.Schema}`` of the module that builds
        it (without the source columns every table ends with).
    build : callable
        ``build(records)`` -> ``pyarrow.Table``: the table of a `Records` of the topic.
    about : str
        What a row is (for ``--help``).
    encoding : {"coordinator", "metadata"}, optional
        How the topic's keys and values are framed (see `ENCODINGS`); None for topics whose records
        kafka-dump-log prints as they are.
    records : dict, optional
        For the ``coordinator`` encoding: ``{record type: (kind, key message, value message)}``
        (`kafkafmt.internal.schemas`).
    decoder : str, optional
        kafka-dump-log's decoder for the topic's records: ``dump --<decoder>-decoder``.
    snapshots : bool
        The topic's folders also hold KRaft ``.checkpoint`` snapshots of the same records.
    names : tuple of str
        Regular expressions (searched, case-insensitive) of the other names the topic goes by, when a
        cluster names it itself (``config.storage.topic``...).
    looks : callable, optional
        ``looks(records)`` -> True, False, or None when nothing can be told (no records): whether a
        topic's first records have the shape of this topic's.

    Examples
    --------
    >>> from kafkafmt import internal
    >>> t = internal.internal_table("transaction_state")
    >>> t.topic, t.decoder
    ('__transaction_state', 'transaction-log')
    >>> t.schema().names[:3]
    ['offset', 'timestamp', 'transactional_id']
    """

    name: str
    topic: str
    schemas: Callable
    build: Callable
    about: str
    encoding: Optional[str] = None
    records: Optional[dict] = None
    decoder: Optional[str] = None
    snapshots: bool = False
    names: tuple = ()
    looks: Optional[Callable] = None

    def schema(self):
        """The table's pyarrow schema, source columns included.

        Returns
        -------
        pyarrow.Schema

        Examples
        --------
        >>> from kafkafmt import internal
        >>> internal.internal_table("connect_status").schema().names[-2:]
        ['source_partition', 'log_dir']
        """
        pa = arrow()
        return with_source_columns(self.schemas(pa, pa.timestamp("ms", tz="UTC"))[self.name])

    def named(self, topic):
        """Whether ``topic`` is this table's topic by name: its default name or one of `names`.

        Parameters
        ----------
        topic : str

        Returns
        -------
        bool

        Examples
        --------
        >>> from kafkafmt import internal
        >>> t = internal.internal_table("connect_status")
        >>> t.named("connect-status"), t.named("docker-connect-status"), t.named("orders")
        (True, True, False)
        """
        return topic == self.topic or any(re.search(p, topic, re.IGNORECASE) for p in self.names)


#: every table of an internal topic by name, in the order they were registered
INTERNAL_TABLES = {}


def register_table(table):
    """Add an `InternalTable` to `INTERNAL_TABLES`; returns it.

    Parameters
    ----------
    table : InternalTable

    Returns
    -------
    InternalTable

    Raises
    ------
    ValueError
        Another table has that name, or a decoder name already reads another topic.

    Examples
    --------
    >>> from kafkafmt import internal
    >>> internal.register_table(internal.internal_table("cluster_metadata")).name
    'cluster_metadata'
    """
    old = INTERNAL_TABLES.get(table.name)
    if old is not None and old != table:
        raise ValueError(f"an internal table named {table.name!r} is registered already")
    if table.encoding is not None and table.encoding not in ENCODINGS:
        raise ValueError(f"{table.name}: encoding must be one of {', '.join(ENCODINGS)}")
    if table.decoder is not None and table.encoding is None:
        raise ValueError(f"{table.name}: a decoder needs the topic's encoding")
    if (table.encoding == "coordinator") != (table.records is not None):
        raise ValueError(f"{table.name}: the records of a coordinator's topic go with its encoding")
    for other in INTERNAL_TABLES.values():
        if table.decoder and other.decoder == table.decoder and other.topic != table.topic:
            raise ValueError(f"{table.name}: the decoder {table.decoder!r} reads {other.topic} already")
    INTERNAL_TABLES[table.name] = table
    return table


def internal_table(name):
    """The `InternalTable` named ``name``.

    Parameters
    ----------
    name : str
        One of `TABLES`.

    Returns
    -------
    InternalTable

    Raises
    ------
    KeyError
        No such table (the message names them).

    Examples
    --------
    >>> from kafkafmt import internal
    >>> internal.internal_table("consumer_offsets").topic
    '__consumer_offsets'
    """
    try:
        return INTERNAL_TABLES[name]
    except KeyError:
        raise KeyError(f"no internal table {name!r}: one of {', '.join(INTERNAL_TABLES)}") from None


def schema_of(table):
    """The pyarrow schema of one of `TABLES` (for Spark and writers that need it before any data).

    Parameters
    ----------
    table : str
        One of `TABLES`.

    Returns
    -------
    pyarrow.Schema

    Examples
    --------
    >>> from kafkafmt import internal
    >>> internal.schema_of("consumer_offsets").names[:7]
    ['offset', 'timestamp', 'kind', 'group', 'topic', 'partition', 'committed_offset']
    """
    return internal_table(table).schema()


def decoders():
    """kafka-dump-log's decoders these tables know: ``{decoder name: the InternalTable whose topic it
    reads}`` (the first table registered for that topic).

    Returns
    -------
    dict

    Examples
    --------
    >>> from kafkafmt import internal
    >>> {name: t.topic for name, t in internal.decoders().items()}["offsets"]
    '__consumer_offsets'
    """
    out = {}
    for t in INTERNAL_TABLES.values():
        if t.decoder is not None:
            out.setdefault(t.decoder, t)
    return out
