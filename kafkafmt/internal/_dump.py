"""Records as Kafka's DumpLogSegments (``kafka-dump-log.sh``) prints them with its decoders
(``--offsets-decoder``, ``--transaction-log-decoder``, ``--cluster-metadata-decoder``,
``--share-group-state-decoder``, ``--remote-log-metadata-decoder``: every `InternalTable` with a ``decoder``), by how the decoder's topic
frames its records (the table's ``encoding``)."""
from __future__ import annotations

import struct

from kafkafmt.errors import ValueDecodeError
from kafkafmt.internal._coordinator import decode_coordinator_record
from kafkafmt.internal._metadata import decode_metadata_record, metadata_type_enum_name
from kafkafmt.internal._remote_log import remote_log_metadata_text
from kafkafmt.internal._tables import decoders
from kafkafmt.internal.codec import decode_message, json_text, to_json_data
from kafkafmt.internal.schemas import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, in_versions

__all__ = ["dump_text"]


def _consumer_protocol_json(msg, data):
    """Kafka's dump replaces a consumer member's subscription/assignment bytes by their JSON, read at
    the version they carry; anything it cannot read keeps the base64 bytes."""
    if data is None or len(data) < 2:
        raise ValueDecodeError("truncated")
    ver = struct.unpack_from(">h", data)[0]
    if not in_versions(msg.valid, ver):
        raise ValueDecodeError(f"unsupported version {ver}")
    return to_json_data(msg, decode_message(msg, ver, data, 2)[0])


def dump_text(decoder, key, value, offset):
    """(key text or None, payload text or None) as Kafka's DumpLogSegments prints a record with
    ``decoder`` = ``"offsets"`` (--offsets-decoder), ``"transaction-log"`` (--transaction-log-decoder),
    ``"share-group-state"`` (--share-group-state-decoder), ``"cluster-metadata"``
    (--cluster-metadata-decoder) or ``"remote-log-metadata"`` (--remote-log-metadata-decoder: no key, the
    event's ``toString``): ``key: {"type":"1","data":{...}} payload: {"version":"3","data":{...}}``,
    ``<DELETE>`` for a tombstone, ``Unknown record type ...`` / ``Error at offset ...`` texts for what
    cannot be read.

    Parameters
    ----------
    decoder : str
        One of `decoders` (kafka-dump-log's names).
    key, value : bytes or None
        The record's key and value.
    offset : int
        The record's offset (for error texts).

    Returns
    -------
    (str or None, str or None)

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__cluster_metadata-0")
    >>> internal.dump_text("cluster-metadata", recs.key[0], recs.value[0], int(recs.offset[0]))
    (None, '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":19}}')
    """
    table = decoders().get(decoder)
    if table is None:
        raise ValueError(f"unknown decoder {decoder!r}: one of {', '.join(decoders())}")
    if table.encoding == "remote-log-metadata":
        return None, remote_log_metadata_text(value, offset)
    if table.encoding == "metadata":
        try:
            api_key, version, msg, data = decode_metadata_record(value)
        except (ValueDecodeError, LookupError) as e:
            return None, f"Error at {offset}, skipping. {e.args[0] if e.args else e}"
        return None, json_text({"type": metadata_type_enum_name(api_key), "version": version,
                                "data": to_json_data(msg, data)})
    if key is None:
        raise ValueError(f"Failed to decode message at offset {offset} using the specified decoder "
                         "(message had a missing key)")
    try:
        d = decode_coordinator_record(key, value, table.name)
    except LookupError as e:
        if str(e).startswith("unknown record type"):
            return f"Unknown record type {struct.unpack_from('>h', key)[0]} at offset {offset}, skipping.", None
        return f"Error at offset {offset}, skipping. {e}", None
    except ValueDecodeError as e:
        return f"Error at offset {offset}, skipping. {e}", None
    key_text = json_text({"type": str(d["type"]), "data": to_json_data(d["key_message"], d["key"])})
    if d["value"] is None:
        return key_text, "<DELETE>"
    data = to_json_data(d["value_message"], d["value"])
    if d["value_message"].name == "GroupMetadataValue" and data.get("protocolType") == "consumer":
        for m in data.get("members") or []:
            raw = next((x for x in d["value"]["members"] if x["memberId"] == m["memberId"]), None)
            if raw is None:
                continue
            for field, msg in (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
                               ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT)):
                try:
                    m[field] = _consumer_protocol_json(msg, raw[field])
                except ValueDecodeError:
                    pass
    return key_text, json_text({"version": str(d["version"]), "data": data})


