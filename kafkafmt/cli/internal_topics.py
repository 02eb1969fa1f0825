"""Kafka's internal topics on the command line: which decoder a file gets in ``kafkafmt dump``, the
text and JSON it prints per record, and the table ``kafkafmt export --internal`` writes.

* ``dump --offsets-decoder`` / ``--transaction-log-decoder`` / ``--cluster-metadata-decoder`` decode
  every record as Kafka's DumpLogSegments does with the same flags (they imply ``--print-data``);
* without them, ``dump`` decodes a segment of ``__consumer_offsets-N``, ``__transaction_state-N``
  or ``__cluster_metadata-N`` (and every KRaft ``.checkpoint`` snapshot) by its folder's name,
  unless ``--no-decode-internal`` is given.

The texts themselves come from `kafkafmt.internal.dump_text`; the tables from `kafkafmt.internal`.
"""
from __future__ import annotations

import json
import posixpath
import re
import warnings

from kafkafmt.internal import TOPIC_OF
from kafkafmt.log import partition_of_name

__all__ = ["DECODER_FLAGS", "TOPIC_DECODERS", "INTERNAL_TABLES", "decoder_for", "record_texts", "record_json",
           "WarningTally"]

#: dump flag -> decoder name of `kafkafmt.internal.dump_text`
DECODER_FLAGS = {"offsets_decoder": "offsets", "transaction_log_decoder": "transaction-log",
                 "cluster_metadata_decoder": "cluster-metadata"}

#: internal topic -> the decoder its folder gets by default
TOPIC_DECODERS = {"__consumer_offsets": "offsets", "__transaction_state": "transaction-log",
                  "__cluster_metadata": "cluster-metadata"}

#: ``export --internal`` table -> the topic it reads (kafkafmt.internal's own map)
INTERNAL_TABLES = dict(TOPIC_OF)


def decoder_for(path, kind):
    """The decoder a file gets by default: ``cluster-metadata`` for a KRaft snapshot, the topic's
    for a segment whose folder is named after an internal topic, else None. ``path`` may be a URL."""
    if kind == "kraft-snapshot":
        return "cluster-metadata"
    folder = posixpath.basename(posixpath.dirname(str(path).replace("\\", "/").rstrip("/")))
    tp = partition_of_name(folder) if folder else None
    return TOPIC_DECODERS.get(tp[0]) if tp else None


class MissingKey(ValueError):
    """A coordinator record without a key: Kafka's decoder stops with this message."""


def record_texts(decoder, key, value, offset):
    """(key text or None, payload text or None) as DumpLogSegments prints them; raises `MissingKey`
    for a coordinator record without a key (Kafka's tool fails there)."""
    from kafkafmt.internal import dump_text

    try:
        return dump_text(decoder, key, value, offset)
    except ValueError as exc:
        if decoder != "cluster-metadata" and key is None:
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


def record_json(decoder, key, value, offset):
    """The fields a JSON record line gets: ``decoder``, ``decodedKey`` / ``decodedValue`` (the
    objects Kafka prints, ``decodedValue`` null for a tombstone) and ``decodeError`` when the
    record cannot be decoded (Kafka's "Unknown record type ..." / "Error at offset ..." text)."""
    out = {"decoder": decoder, "decodedKey": None, "decodedValue": None}
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
