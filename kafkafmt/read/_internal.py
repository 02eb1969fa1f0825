"""The topic an internal topic's table reads, among the partitions a read found: Kafka's own by their
names, Kafka Connect's (whose names each Connect cluster chooses) by their names and the shape of their
first records (`kafkafmt.internal.find_topic`). One rule for every door: the library
(`find_internal_topic`), ``kafkafmt export --internal`` and Spark's ``decode`` option.
"""
from __future__ import annotations

from kafkafmt.errors import KafkafmtError
from kafkafmt.internal import find_topic
from kafkafmt.log import discover
from kafkafmt.read._readers import iter_log_dir

__all__ = ["internal_topic", "find_internal_topic", "SAMPLE_BYTES"]

#: about how much of a topic's first records is read to judge its shape
SAMPLE_BYTES = 64 << 10


def _first_records(parts):
    """The first records of the first of ``parts`` (one topic's partitions) that has any, or None."""
    for part in sorted(parts, key=lambda p: p.partition):
        try:
            for chunk in iter_log_dir(part, errors="salvage", max_bytes=SAMPLE_BYTES, threads=1):
                if len(chunk):
                    return chunk
                break
        except (KafkafmtError, OSError):
            continue
    return None


def internal_topic(table, partitions):
    """The topic ``table`` reads among ``partitions`` (`Partition` objects a discovery found): see
    `kafkafmt.internal.find_topic`, whose ``sample`` reads a topic's first records here.

    Raises `TopicNotFoundError` when no topic fits, or several do."""
    by_topic = {}
    for part in partitions:
        by_topic.setdefault(part.topic, []).append(part)
    return find_topic(table, by_topic, lambda topic: _first_records(by_topic[topic]))


def find_internal_topic(root, table, *, storage_options=None, filesystem=None):
    """The topic one of `kafkafmt.internal.TABLES` reads under ``root``: Kafka's internal topics by
    their names; Kafka Connect's (``connect_configs``, ``connect_offsets``, ``connect_status``), whose
    names each Connect cluster chooses (``docker-connect-status``, ``_kafka-connect-status``...), by
    their names and the shape of their first records.

    Parameters
    ----------
    root : str, os.PathLike or list
        Log dirs, folders holding them, partition folders (paths or URLs), as `read_log_dirs` takes.
    table : str
        One of `kafkafmt.internal.TABLES`.
    storage_options : dict, optional
        For URLs: options of their fsspec filesystem.
    filesystem : optional
        An fsspec filesystem or a ``pyarrow.fs.FileSystem`` to read URLs with instead.

    Returns
    -------
    str
        The topic's name.

    Raises
    ------
    TopicNotFoundError
        No topic fits, or several do (the message names the candidates): name it yourself.

    Examples
    --------
    A Connect cluster whose status topic is ``docker-connect-status``, as Confluent's images name it:

    >>> import json
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> status = {"state": "RUNNING", "trace": None, "worker_id": "connect:8083", "generation": 2}
    >>> _ = kafkafmt.write_log_dir("cluster/docker-connect-status-0", keys=[b"status-connector-datagen"],
    ...                            values=[json.dumps(status).encode()], timestamps=[1767225600000])
    >>> topic = kafkafmt.find_internal_topic("cluster", "connect_status")
    >>> topic
    'docker-connect-status'
    >>> internal.connect_status(kafkafmt.read_log_dirs("cluster", topics=[topic]))["state"].to_pylist()
    ['RUNNING']
    """
    found = discover(root, storage_options=storage_options, filesystem=filesystem)
    return internal_topic(table, found.partitions)
