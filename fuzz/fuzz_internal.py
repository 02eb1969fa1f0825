#!/usr/bin/env python3
"""Atheris harness: kafkafmt.internal's schema decoders (issue 15) on hostile keys and values.

Input: ``target byte, then records`` -- each record ``uint16 key length (0xFFFF null), key,
uint16 value length (0xFFFF null), value`` -- wrapped into a record batch with kafkafmt.encode and
decoded with kafkafmt.decode, then given to one of:

  0 consumer_offsets (the C kernel + the generic reader for the other kinds)
  1 group_members    (GroupMetadataValue and the consumer-protocol bytes inside it)
  2 transaction_state
  3 cluster_metadata
  4 the generic reader alone: key bytes = uint16 message index, uint16 version; value = message bytes

What counts as a finding: any exception (the functions must never raise on bytes: bad input is an
``error`` value, unknown types a warning), a table whose row count is not the record count (or
the member count), or a row with neither its values nor an error. ``codec.decode_message`` may
raise only ``SchemaError``.

    python fuzz/fuzz_internal.py --seed fuzz/corpus/internal     # write seeds (kafkafmt's encoder)
    python fuzz/fuzz_internal.py fuzz/corpus/internal -max_total_time=60
"""
from __future__ import annotations

import os
import struct
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

warnings.simplefilter("ignore")


def _messages():
    from kafkafmt.internal import schemas
    out = []
    for reg in (schemas.GROUP_RECORDS, schemas.TRANSACTION_RECORDS, schemas.SHARE_STATE_RECORDS):
        for _, (_, k, v) in sorted(reg.items()):
            out.append(k)
            if v is not None:
                out.append(v)
    out += [m for _, m in sorted(schemas.METADATA_RECORDS.items())]
    out += [schemas.CONSUMER_PROTOCOL_SUBSCRIPTION, schemas.CONSUMER_PROTOCOL_ASSIGNMENT]
    return out


def split(data):
    """(target, [(key, value), ...]) from a fuzz input."""
    if not data:
        return 0, []
    target, pos, recs = data[0] % 5, 1, []
    while pos + 2 <= len(data) and len(recs) < 64:
        parts = []
        for _ in range(2):
            if pos + 2 > len(data):
                break
            n = struct.unpack_from(">H", data, pos)[0]
            pos += 2
            if n == 0xFFFF:
                parts.append(None)
            else:
                parts.append(bytes(data[pos:pos + n]))
                pos += n
        if len(parts) < 2:
            break
        recs.append(tuple(parts))
    return target, recs


def join(target, records):
    out = bytearray([target])
    for rec in records:
        for part in rec:
            if part is None:
                out += b"\xff\xff"
            else:
                out += struct.pack(">H", len(part)) + part
    return bytes(out)


class Finding(AssertionError):
    pass


def check(data):
    import kafkafmt
    from kafkafmt import internal as ki
    from kafkafmt.internal import codec

    target, records = split(data)
    if target == 4:
        msgs = _messages()
        for key, value in records:
            if key is None or len(key) < 4 or value is None:
                continue
            idx, ver = struct.unpack_from(">HH", key)
            msg = msgs[idx % len(msgs)]
            ver = ver % (msg.valid[1] + 2)
            try:
                codec.decode_message(msg, ver, value)
            except codec.SchemaError:
                pass
        return
    if not records:
        return
    recs = kafkafmt.decode(kafkafmt.encode(keys=[k for k, _ in records], values=[v for _, v in records]))
    name = ("consumer_offsets", "group_members", "transaction_state", "cluster_metadata")[target]
    table = getattr(ki, name)(recs)
    table.validate(full=True)
    table.to_pandas()
    # a hostile timestamp can lie outside Python's datetime (years 1-9999): compare as int64
    import pyarrow as pa
    plain = pa.table([c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c for c in table.columns],
                     names=table.column_names)
    rows = plain.to_pylist()
    if name != "group_members" and len(rows) != len(records):
        raise Finding(f"{name}: {len(rows)} rows for {len(records)} records")
    for row in rows:
        if row["error"] is not None:
            continue
        if name == "consumer_offsets" and row["kind"] == "offset_commit" and not row["tombstone"] \
                and row["committed_offset"] is None:
            raise Finding(f"offset commit without values or error: {row}")
        if name == "transaction_state" and not row["tombstone"] and row["status"] is None:
            raise Finding(f"transaction row without values or error: {row}")
        if name == "cluster_metadata" and (row["fields"] is None or row["record_type"] is None):
            raise Finding(f"metadata row without fields or error: {row}")


def seeds():
    """Valid inputs of every target from kafkafmt's own encoder."""
    from kafkafmt import internal as ki
    from kafkafmt.internal import codec, schemas

    out = []
    commits = [ki.encode_group_record(t, {"group": "g", "topic": "t", "partition": 1}, v,
                                      {"offset": 5, "leaderEpoch": 1, "metadata": "m", "commitTimestamp": 9,
                                       "expireTimestamp": 10, "topicId": bytes(range(16))})
               for t in (0, 1) for v in range(5)]
    out.append(join(0, commits))
    member = {"memberId": "m", "groupInstanceId": "i", "clientId": "c", "clientHost": "h", "rebalanceTimeout": 1,
              "sessionTimeout": 2, "subscription": ki.encode_subscription(3, ["t"], owned_partitions=[("t", [0])]),
              "assignment": ki.encode_assignment(3, [("t", [0, 1])])}
    groups = [ki.encode_group_record(2, {"group": "g"}, v, {"protocolType": "consumer", "generation": 1,
                                                            "protocol": "range", "leader": "m",
                                                            "members": [member]}) for v in range(5)]
    out.append(join(0, groups))
    out.append(join(1, groups))
    txns = [ki.encode_transaction_record("tx", v, {"ProducerId": 1, "ProducerEpoch": 0, "TransactionTimeoutMs": 5,
                                                   "TransactionStatus": 1, "PreviousProducerId": 3,
                                                   "TransactionPartitions": [{"Topic": "t", "PartitionIds": [0]}],
                                                   "TransactionLastUpdateTimestampMs": 1,
                                                   "TransactionStartTimestampMs": 1}) for v in range(2)]
    out.append(join(2, txns))
    meta = [(None, ki.encode_metadata_record(2, 0, {"Name": "t", "TopicId": bytes(16)})),
            (None, ki.encode_metadata_record(3, 2, {"PartitionId": 0, "TopicId": bytes(16), "Replicas": [1],
                                                    "Isr": [1], "Leader": 1, "EligibleLeaderReplicas": [1]})),
            (None, ki.encode_metadata_record(4, 0, {"ResourceType": 2, "ResourceName": "t", "Name": "a",
                                                    "Value": "b"})),
            (None, ki.encode_metadata_record(5, 2, {"PartitionId": 0, "TopicId": bytes(16), "Isr": [1, 2],
                                                    "Leader": 2}))]
    out.append(join(3, meta))
    msgs = _messages()
    generic = []
    for i, msg in enumerate(msgs):
        v = msg.valid[1]
        try:
            generic.append((struct.pack(">HH", i, v), codec.encode_message(msg, v, {})))
        except Exception:  # noqa: BLE001 - a message whose defaults cannot be written: no seed
            pass
    out.append(join(4, generic))
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--seed":
        os.makedirs(sys.argv[2], exist_ok=True)
        for i, s in enumerate(seeds()):
            with open(os.path.join(sys.argv[2], f"seed-{i}"), "wb") as f:
                f.write(s)
        return
    import atheris
    with atheris.instrument_imports(include=["kafkafmt.internal"]):
        import kafkafmt.internal  # noqa: F401
        import kafkafmt.internal.codec  # noqa: F401

    def test(data):
        check(data)

    atheris.Setup(sys.argv, test)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
