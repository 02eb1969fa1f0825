"""Kafka's internal topics on the command line: which decoder a file gets in ``kafkafmt dump``, the
text and JSON it prints per record, and the topic ``kafkafmt export --internal`` reads.

* ``dump --offsets-decoder`` / ``--transaction-log-decoder`` / ``--share-group-state-decoder`` /
  ``--cluster-metadata-decoder`` / ``--remote-log-metadata-decoder`` (one flag per decoder of `kafkafmt.internal.decoders`) decode every
  record as Kafka's DumpLogSegments does with the same flags (they imply ``--print-data``);
* without them, ``dump`` decodes a segment of a folder named after an internal topic
  (``__consumer_offsets-N``...) and every KRaft ``.checkpoint`` snapshot by its folder's name, unless
  ``--no-decode-internal`` is given.

Every list here comes from `kafkafmt.internal.INTERNAL_TABLES`; the texts from
`kafkafmt.internal.dump_text`, the tables from `kafkafmt.internal`.
"""
from __future__ import annotations

import json
import posixpath
import re
import warnings

from kafkafmt.internal import INTERNAL_TABLES, decoders
from kafkafmt.log import partition_of_name

__all__ = ["decoder_flags", "topic_decoders", "snapshot_decoder", "decoder_for", "record_texts", "record_json",
           "WarningTally"]


def decoder_flags():
    """``{argparse dest: decoder}``: one ``--<decoder>-decoder`` flag per decoder of the internal tables
    (kafka-dump-log's names)."""
    return {f"{name.replace('-', '_')}_decoder": name for name in decoders()}


def topic_decoders():
    """``{internal topic: the decoder its folders get by default}``."""
    return {t.topic: name for name, t in decoders().items()}


def snapshot_decoder():
    """The decoder of KRaft ``.checkpoint`` snapshots (the table whose folders hold them), or None."""
    return next((t.decoder for t in INTERNAL_TABLES.values() if t.snapshots and t.decoder), None)


def decoder_for(path, kind):
    """The decoder a file gets by default: the snapshots' for a KRaft snapshot, the topic's for a
    segment whose folder is named after an internal topic, else None. ``path`` may be a URL."""
    if kind == "kraft-snapshot":
        return snapshot_decoder()
    folder = posixpath.basename(posixpath.dirname(str(path).replace("\\", "/").rstrip("/")))
    tp = partition_of_name(folder) if folder else None
    return topic_decoders().get(tp[0]) if tp else None


class MissingKey(ValueError):
    """A coordinator record without a key: Kafka's decoder stops with this message."""


def record_texts(decoder, key, value, offset):
    """(key text or None, payload text or None) as DumpLogSegments prints them; raises `MissingKey`
    for a coordinator record without a key (Kafka's tool fails there)."""
    from kafkafmt.internal import dump_text

    try:
        return dump_text(decoder, key, value, offset)
    except ValueError as exc:
        if decoders()[decoder].encoding == "coordinator" and key is None:
            raise MissingKey(str(exc)) from None
        raise


def _as_json(text):
    if text is None:
        return None, None
    if text.startswith("{"):
        try:
            return json.loads(text), None
        except ValueError:
            pass
    return None, text


def _remote_log_metadata_json(value, offset):
    """(decoded value, error text): a __remote_log_metadata event as ``{"type", "version", "data"}`` (the
    message's name and version, its fields as Kafka's JSON converters write them), or kafka-dump-log's
    "Error at offset N, skipping." text."""
    from kafkafmt.errors import ValueDecodeError
    from kafkafmt.internal import decode_remote_log_metadata_record
    from kafkafmt.internal.codec import to_json_data

    try:
        _, version, msg, data = decode_remote_log_metadata_record(value)
    except ValueDecodeError as exc:
        return None, f"Error at offset {offset}, skipping. {exc}"
    return {"type": msg.name, "version": version, "data": to_json_data(msg, data)}, None


def record_json(decoder, key, value, offset):
    """The fields a JSON record line gets: ``decoder``, ``decodedKey`` / ``decodedValue`` (the
    objects Kafka prints, ``decodedValue`` null for a tombstone; a __remote_log_metadata event, which
    Kafka prints as its ``toString``, as the message's JSON) and ``decodeError`` when the record cannot
    be decoded (Kafka's "Unknown record type ..." / "Error at offset ..." text)."""
    out = {"decoder": decoder, "decodedKey": None, "decodedValue": None}
    if decoders()[decoder].encoding == "remote-log-metadata":
        out["decodedValue"], err = _remote_log_metadata_json(value, offset)
        if err is not None:
            out["decodeError"] = err
        return out
    try:
        ktext, vtext = record_texts(decoder, key, value, offset)
    except MissingKey as exc:
        out["decodeError"] = str(exc)
        return out
    k, kerr = _as_json(ktext)
    v, verr = _as_json(None if vtext == "<DELETE>" else vtext)
    out["decodedKey"], out["decodedValue"] = k, v
    err = kerr or verr
    if err is not None:
        out["decodeError"] = err
    return out


_COUNTS = re.compile(r"(\d+) ([^,;]+)")


class WarningTally:
    """Collects the `KafkafmtWarning`s `kafkafmt.internal` gives per chunk and sums their counts, so
    a long export says once how many records were of an unknown type (not once per chunk)."""

    def __init__(self):
        self.counts = {}       # (topic, what) -> count
        self.other = []

    def __call__(self, fn, *args):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(*args)
        for w in caught:
            text = str(w.message)
            topic, sep, rest = text.partition(": ")
            found = _COUNTS.findall(rest.split(";", 1)[0]) if sep else []
            if not found:
                if text not in self.other:
                    self.other.append(text)
                continue
            for n, what in found:
                self.counts[(topic, what.strip())] = self.counts.get((topic, what.strip()), 0) + int(n)
        return out

    def messages(self):
        by_topic = {}
        for (topic, what), n in self.counts.items():
            by_topic.setdefault(topic, []).append(f"{n} {what}")
        return [f"{t}: " + ", ".join(parts) + "; their raw bytes are kept in the raw_* columns"
                for t, parts in by_topic.items()] + self.other
