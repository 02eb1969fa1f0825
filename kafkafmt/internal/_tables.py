"""The table of internal-topic tables: one `InternalTable` entry per table (its name, the topic it reads
and the other names that topic goes by, its Arrow schema, its builder, kafka-dump-log's decoder for
its records) in `INTERNAL_TABLES`, filled by `register_table` where each table is built.

Every door reads this table and nothing else: `kafkafmt.internal` (the builders, `schema_of`,
`dump_text`, `find_topic`), ``kafkafmt export --internal NAME`` (its choices), ``kafkafmt dump``
(its ``--<decoder>-decoder`` flags and the decoder a folder gets by its name) and Spark's ``decode``
option. A table registered here reaches all of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from kafkafmt.errors import TopicNotFoundError
from kafkafmt.internal._columns import source_schemas

__all__ = ["InternalTable", "INTERNAL_TABLES", "register_table", "internal_table", "schema_of", "decoders",
           "find_topic", "SAMPLE_RECORDS", "table_doc", "looks_doc"]

#: how many of a topic's first records `find_topic` judges its shape by
SAMPLE_RECORDS = 20

#: how a topic's keys and values are framed, as Kafka's serdes write them: ``coordinator`` (an int16
#: record type then the key message; an int16 version then the value message: CoordinatorRecordSerde)
#: or ``metadata`` (a null key; uvarint frame version, api key and version, then the message:
#: MetadataRecordSerde), or ``remote-log-metadata`` (framed as ``metadata``, frame version 1 only, other
#: messages; kafka-dump-log prints each event's ``toString``: RemoteLogMetadataSerde)
ENCODINGS = ("coordinator", "metadata", "remote-log-metadata")


_TABLE_SECTIONS = """
    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=[...])``, ``read_segment(path)``, ...).

    Returns
    -------
    pyarrow.Table{returns}
"""

_LOOKS_SECTIONS = """
    Parameters
    ----------
    recs : Records or None
        A topic's first records (the first `SAMPLE_RECORDS` are judged).

    Returns
    -------
    bool or None
        None when there are no records to judge.
"""


def _before_examples(f, sections):
    doc = f.__doc__ or ""
    at = doc.find("\n    Examples\n")
    f.__doc__ = doc + sections if at < 0 else doc[:at] + sections.rstrip("\n") + "\n" + doc[at:]
    return f


def table_doc(returns=""):
    """A decorator for the builder of an internal topic's table: its docstring gets the Parameters (the
    records) and Returns (a pyarrow.Table; ``returns``: a line about it) every such builder has, before its
    Examples.

    Examples
    --------
    >>> @table_doc()
    ... def builder(recs):
    ...     \"\"\"One row per record.\"\"\"
    >>> "recs : Records" in builder.__doc__
    True
    """
    text = _TABLE_SECTIONS.format(returns=f"\n        {returns}" if returns else "")
    return lambda f: _before_examples(f, text)


def looks_doc(f):
    """A decorator for a judge of a topic's shape (``looks_like_*``): its docstring gets the Parameters and
    Returns every judge has, before its Examples.

    Examples
    --------
    >>> @looks_doc
    ... def looks_like_x(recs):
    ...     \"\"\"Whether records look like x's.\"\"\"
    >>> "bool or None" in looks_like_x.__doc__
    True
    """
    return _before_examples(f, _LOOKS_SECTIONS)


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
    encoding : {"coordinator", "metadata", "remote-log-metadata"}, optional
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
        cluster names it itself (``config.storage.topic``...): `find_topic` looks there.
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
        return source_schemas(self.schemas)[self.name]

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


def find_topic(table, topics, sample=None):
    """The topic ``table`` reads among ``topics``: its default name when present; else, for a topic a
    cluster names itself (Kafka Connect's), the one whose name and first records fit.

    A topic fits by name when it matches the table's `InternalTable.names` (``docker-connect-status``,
    ``_kafka-connect-status``, ``mm2-status.dc1.internal``...) and by shape when its first records (given
    by ``sample``) look like the table's. Named topics that fit by shape come first; when none does, any
    topic whose records fit.

    Parameters
    ----------
    table : str
        One of `TABLES`.
    topics : iterable of str
        The topics there are.
    sample : callable, optional
        ``sample(topic)`` -> the topic's first records (a `Records`, or None when it holds none); without
        it, names alone decide.

    Returns
    -------
    str

    Raises
    ------
    TopicNotFoundError
        No topic fits, or several do (the message names the candidates).

    Examples
    --------
    >>> from kafkafmt import internal
    >>> internal.find_topic("connect_status", ["orders", "docker-connect-status", "docker-connect-offsets"])
    'docker-connect-status'
    >>> internal.find_topic("consumer_offsets", ["orders", "__consumer_offsets"])
    '__consumer_offsets'
    """
    t = internal_table(table)
    topics = sorted(set(topics))
    if t.topic in topics:
        return t.topic
    what = t.topic + (" (or a topic named like it)" if t.names else "")
    if not t.names:
        raise TopicNotFoundError(f"no {what} among the topics")
    named = [n for n in topics if t.named(n)]
    judged = {}

    def shaped(name):
        if name not in judged:
            judged[name] = None if sample is None or t.looks is None else t.looks(sample(name))
        return judged[name]

    fit = [n for n in named if shaped(n) is not False]
    if not fit and sample is not None and t.looks is not None:
        others = {o.topic for o in INTERNAL_TABLES.values()}
        fit = [n for n in topics if n not in named and n not in others and shaped(n)]
    if len(fit) == 1:
        return fit[0]
    if fit:
        raise TopicNotFoundError(f"several topics could hold {t.name}: {', '.join(fit)}; name one")
    near = [n for n in named if judged.get(n) is False]
    raise TopicNotFoundError(f"no {what} among the topics" + (
        f" ({', '.join(near)} named like it hold other records)" if near else "") + "; name it")
