"""kafkafmt.internal: Kafka's internal topics as tables (issue 15).

Records are written with kafkafmt.internal's encoder (from the same schemas), through the public
kafkafmt.encode / write_log_dir, and read back; offset commits are cross-checked with a pure-Python
struct reader written here, consumer-protocol bytes with kafka-python's own ConsumerProtocol
classes, and everything against real broker files in the real corpus.
"""
import base64
import itertools
import json
import random
import struct
import warnings

import pytest

import pyarrow as pa

import kafkafmt  # noqa: E402
from kafkafmt import internal as ki  # noqa: E402
from kafkafmt.internal import _coordinator as coordinator, codec, schemas  # noqa: E402
from kafkafmt.errors import KafkafmtWarning

UUID1 = bytes(range(16))
UUID2 = bytes(range(100, 116))


# ------------------------------------------------------------------------------------------------
# values from a schema, every version

def _sample(f, type, version, rnd, depth=0):
    if type == "bool":
        return rnd.random() < 0.5
    if type == "int8":
        return rnd.randint(-128, 127)
    if type == "int16":
        return rnd.randint(-32768, 32767)
    if type == "uint16":
        return rnd.randint(0, 65535)
    if type == "int32":
        return rnd.randint(-2 ** 31, 2 ** 31 - 1)
    if type == "int64":
        return rnd.randint(-2 ** 63, 2 ** 63 - 1)
    if type == "float64":
        return rnd.choice([0.5, -1.25, 1e10])
    if type == "string":
        return rnd.choice(["", "a", "grüße", "x" * 200, "orders-7"])
    if type == "bytes":
        return bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 3, 40])))
    if type == "uuid":
        return bytes(rnd.randrange(256) for _ in range(16))
    if type == "{}":
        return _sample_struct(f.fields, version, rnd, depth + 1)
    n = rnd.choice([0, 1, 3])
    if f.elem:
        return [_sample(f, f.elem, version, rnd, depth) for _ in range(n)]
    return [_sample_struct(f.fields, version, rnd, depth + 1) for _ in range(n)]


def _sample_struct(fields, version, rnd, depth=0):
    out = {}
    for f in fields:
        if not schemas.in_versions(f.versions, version):
            continue
        nullable = schemas.in_versions(f.nullable, version)
        if nullable and rnd.random() < 0.25:
            out[f.name] = None
        else:
            out[f.name] = _sample(f, f.type, version, rnd, depth)
    return out


def _all_messages():
    for reg in (schemas.GROUP_RECORDS, schemas.SHARE_STATE_RECORDS, schemas.TRANSACTION_RECORDS):
        for _, (_, k, v) in reg.items():
            yield k, 0
            if v is not None:
                for ver in range(v.valid[0], v.valid[1] + 1):
                    yield v, ver
    for msg in list(schemas.METADATA_RECORDS.values()) + [schemas.CONSUMER_PROTOCOL_SUBSCRIPTION,
                                                          schemas.CONSUMER_PROTOCOL_ASSIGNMENT]:
        for ver in range(msg.valid[0], msg.valid[1] + 1):
            yield msg, ver


def _expected(fields, values, version, flexible):
    """What decode gives back: tagged fields equal to their default are not written."""
    out = {}
    for f in fields:
        if f.name not in values:
            continue
        v = values[f.name]
        if flexible and schemas.in_versions(f.tagged, version) and v == f.default:
            continue
        if f.type == "{}" and v is not None:
            v = _expected(f.fields, v, version, flexible)
        elif f.type == "[]" and v is not None:
            v = [_expected(f.fields, x, version, flexible) for x in v]
        out[f.name] = v
    return out


MESSAGES = sorted({(m.name, v): (m, v) for m, v in _all_messages()}.values(), key=lambda mv: (mv[0].name, mv[1]))


@pytest.mark.parametrize("msg,version", MESSAGES, ids=[f"{m.name}-v{v}" for m, v in MESSAGES])
def test_every_schema_version_round_trips(msg, version):
    rnd = random.Random(f"{msg.name}{version}")
    flexible = schemas.in_versions(msg.flexible, version)
    for _ in range(20):
        values = _sample_struct(msg.fields, version, rnd)
        data = codec.encode_message(msg, version, values)
        got, end = codec.decode_message(msg, version, data)
        assert end == len(data)
        assert got == _expected(msg.fields, values, version, flexible)
        # every strict prefix fails cleanly, never with anything but ValueDecodeError
        for cut in sorted({0, len(data) // 2, len(data) - 1}):
            if cut < len(data):
                try:
                    codec.decode_message(msg, version, data[:cut])
                except kafkafmt.ValueDecodeError:
                    pass


def test_one_error_name_for_bytes_that_do_not_decode():
    """A key or value that does not decode as its Kafka message is a kafkafmt.ValueDecodeError (a
    KafkafmtError), as a value that does not decode in a format; kafkafmt.SchemaError is about a schema
    itself. The former name still answers, with a DeprecationWarning."""
    with pytest.raises(kafkafmt.ValueDecodeError, match="key: truncated before the record type") as e:
        ki.decode_coordinator_record(b"\x00", None)
    assert isinstance(e.value, kafkafmt.KafkafmtError) and not isinstance(e.value, kafkafmt.SchemaError)
    with pytest.raises(kafkafmt.ValueDecodeError, match="OffsetCommitValue v3 field"):
        ki.decode_coordinator_record(*ki.encode_group_record(1, {"group": "g", "topic": "t", "partition": 0}, 3, {
            "offset": 1, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 0})[:1], b"\x00\x03\x00")
    with pytest.warns(DeprecationWarning, match="ValueDecodeError"):
        assert ki.SchemaError is kafkafmt.ValueDecodeError
    with pytest.warns(DeprecationWarning):
        assert codec.SchemaError is kafkafmt.ValueDecodeError
    assert "SchemaError" not in ki.__all__ and "SchemaError" not in codec.__all__


def test_schema_facts():
    # spot checks of facts read from Kafka's JSON definitions
    ocv = schemas.GROUP_RECORDS[1][2]
    assert ocv.valid == (0, 4) and ocv.flexible[0] == 4
    names = {f.name: f for f in ocv.fields}
    assert names["leaderEpoch"].versions == (3, 0x7FFF)
    assert names["expireTimestamp"].versions == (1, 1)
    gmv = schemas.GROUP_RECORDS[2][2]
    members = {f.name: f for f in gmv.fields}["members"]
    assert {f.name: f.versions[0] for f in members.fields}["groupInstanceId"] == 3
    tlv = schemas.TRANSACTION_RECORDS[0][2]
    assert {f.name: f.tag for f in tlv.fields if f.tag is not None} == {
        "PreviousProducerId": 0, "NextProducerId": 1, "ClientTransactionVersion": 2, "NextProducerEpoch": 3}
    assert schemas.METADATA_RECORDS[3].name == "PartitionRecord" and schemas.METADATA_RECORDS[3].valid == (0, 2)
    assert {k: m.name for k, m in schemas.METADATA_RECORDS.items()}[17] == "BrokerRegistrationChangeRecord"
    assert ki.GROUP_KINDS[16] == "consumer_group_regular_expression"
    assert ki.GROUP_KINDS[23] == "streams_group_topology"


def test_encodings_by_hand():
    # classic v3: int64, int32, int16-length string, int64
    ocv = schemas.GROUP_RECORDS[1][2]
    data = codec.encode_message(ocv, 3, {"offset": 7, "leaderEpoch": 2, "metadata": "m", "commitTimestamp": 9})
    assert data == struct.pack(">qih", 7, 2, 1) + b"m" + struct.pack(">q", 9)
    # flexible v4: compact string (len+1), then an empty tagged-field section
    data = codec.encode_message(ocv, 4, {"offset": 7, "leaderEpoch": 2, "metadata": "m", "commitTimestamp": 9})
    assert data == struct.pack(">qi", 7, 2) + b"\x02m" + struct.pack(">q", 9) + b"\x00"
    # a tagged field: count, tag, size, data
    data = codec.encode_message(ocv, 4, {"offset": 7, "leaderEpoch": 2, "metadata": "", "commitTimestamp": 9,
                                         "topicId": UUID1})
    assert data.endswith(b"\x01\x00\x10" + UUID1)
    # unknown tags are skipped
    data = codec.encode_message(ocv, 4, {"offset": 1, "metadata": "", "commitTimestamp": 2}, extra_tags={9: b"zz"})
    assert codec.decode_message(ocv, 4, data)[0] == {"offset": 1, "leaderEpoch": -1, "metadata": "",
                                                      "commitTimestamp": 2}


# ------------------------------------------------------------------------------------------------
# __consumer_offsets

def _recs(pairs, tmp_path=None, topic="__consumer_offsets"):
    """Records of (key, value) pairs, through kafkafmt.encode (and write_log_dir when tmp_path)."""
    keys = [k for k, _ in pairs]
    values = [v for _, v in pairs]
    ts = [1767225600000 + i for i in range(len(pairs))]
    if tmp_path is None:
        return kafkafmt.decode(kafkafmt.encode(keys=keys, values=values, timestamps=ts))
    kafkafmt.write_log_dir(tmp_path / f"{topic}-0", keys=keys, values=values, timestamps=ts)
    return kafkafmt.read_log_dirs(tmp_path, topics=[topic])


def _py_offset_commit(value):
    """An independent reader of OffsetCommitValue (struct only), for cross-checks."""
    ver, = struct.unpack_from(">h", value)
    p = 2
    off, = struct.unpack_from(">q", value, p)
    p += 8
    epoch = None
    if ver >= 3:
        epoch, = struct.unpack_from(">i", value, p)
        p += 4
    if ver >= 4:
        n = value[p] - 1
        p += 1
    else:
        n, = struct.unpack_from(">h", value, p)
        p += 2
    meta = value[p:p + n].decode()
    p += n
    cts, = struct.unpack_from(">q", value, p)
    p += 8
    ets = None
    if ver == 1:
        ets, = struct.unpack_from(">q", value, p)
    return off, epoch, meta, cts, ets


def _commit(rtype, version, i, group="g1", topic="orders", meta="", expire=-1):
    value = {"offset": 1000 + i, "leaderEpoch": i % 5, "metadata": meta, "commitTimestamp": 1767225600000 + i,
             "expireTimestamp": expire}
    return ki.encode_group_record(rtype, {"group": group, "topic": topic, "partition": i % 3}, version, value)


def test_offset_commits_every_version_through_a_log_dir(tmp_path):
    pairs = []
    for rtype, version in [(0, 0), (1, 0), (1, 1), (1, 2), (1, 3), (1, 4)]:
        for i in range(5):
            pairs.append(_commit(rtype, version, i, group=f"g-{version}", meta="é" * i,
                                 expire=1767225700000 if version == 1 else -1))
    pairs.append((ki.encode_group_record(1, {"group": "g-x", "topic": "t", "partition": 9})[0], None))
    recs = _recs(pairs, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", KafkafmtWarning)
        t = ki.consumer_offsets(recs)
    assert t.schema == ki.schema_of("consumer_offsets")
    assert t.num_rows == len(pairs)
    rows = t.to_pylist()
    for row, (k, v) in zip(rows, pairs):
        assert row["kind"] == "offset_commit" and row["error"] is None
        assert row["raw_key"] is None and row["raw_value"] is None
        if v is None:
            assert row["tombstone"] and row["group"] == "g-x" and row["topic"] == "t" and row["partition"] == 9
            assert row["committed_offset"] is None and row["metadata"] is None and row["commit_timestamp"] is None
            continue
        ver = struct.unpack_from(">h", v)[0]
        off, epoch, meta, cts, ets = _py_offset_commit(v)
        assert row["group"] == f"g-{ver}"
        assert row["committed_offset"] == off and row["leader_epoch"] == epoch and row["metadata"] == meta
        assert int(row["commit_timestamp"].timestamp() * 1000) == cts
        assert (row["expire_timestamp"] is None) == (ets is None)
        if ets is not None:
            assert int(row["expire_timestamp"].timestamp() * 1000) == ets
        assert not row["tombstone"]
    assert t.column("offset").to_pylist() == list(range(len(pairs)))


def test_fast_path_matches_generic_reader():
    rnd = random.Random(5)
    pairs = []
    for i in range(400):
        ver = rnd.randint(0, 4)
        vals = {"offset": rnd.randint(-1, 2 ** 62), "leaderEpoch": rnd.randint(-1, 99),
                "metadata": rnd.choice(["", "meta", "ünï", "x" * 300]), "commitTimestamp": rnd.randint(0, 2 ** 41),
                "expireTimestamp": rnd.randint(0, 2 ** 41)}
        if ver == 4 and rnd.random() < 0.5:
            vals["topicId"] = UUID2
        key = {"group": rnd.choice(["a", "grp", "ü" * 40]), "topic": rnd.choice(["t", "orders"]),
               "partition": rnd.randint(0, 2 ** 31 - 1)}
        pairs.append(ki.encode_group_record(rnd.choice([0, 1]), key, ver, vals))
    t = ki.consumer_offsets(_recs(pairs)).to_pylist()
    for row, (k, v) in zip(t, pairs):
        d = ki.decode_coordinator_record(k, v)
        assert (row["group"], row["topic"], row["partition"]) == (d["key"]["group"], d["key"]["topic"],
                                                                  d["key"]["partition"])
        val = d["value"]
        assert row["committed_offset"] == val["offset"] and row["metadata"] == val["metadata"]
        assert row["leader_epoch"] == val.get("leaderEpoch")
        exp = val.get("expireTimestamp")
        assert (row["expire_timestamp"] is None) == (exp is None or exp == -1)


def _group_metadata(version, members, protocol_type="consumer", generation=3):
    return ki.encode_group_record(2, {"group": "shop"}, version, {
        "protocolType": protocol_type, "generation": generation, "protocol": "range" if members else None,
        "leader": members[0]["memberId"] if members else None, "currentStateTimestamp": 1767225600000,
        "members": members})


def _member(i, sub_version=1, assign_version=1, topics=("orders",)):
    return {"memberId": f"m-{i}", "groupInstanceId": f"inst-{i}" if i % 2 else None, "clientId": f"c-{i}",
            "clientHost": "/10.0.0.1", "rebalanceTimeout": 60000, "sessionTimeout": 45000,
            "subscription": ki.encode_subscription(sub_version, topics, owned_partitions=[("orders", [i])]),
            "assignment": ki.encode_assignment(assign_version, [("orders", [i, i + 3])])}


def test_group_metadata_every_version_and_members(tmp_path):
    pairs = [_group_metadata(v, [_member(0, v % 4, v % 4), _member(1)]) for v in range(5)]
    pairs.append(_group_metadata(4, []))
    pairs.append((ki.encode_group_record(2, {"group": "shop"})[0], None))
    pairs.append(_group_metadata(4, [_member(2)], protocol_type="connect"))
    recs = _recs(pairs, tmp_path)
    co = ki.consumer_offsets(recs)
    assert co.column("kind").to_pylist() == ["group_metadata"] * len(pairs)
    assert co.column("group").to_pylist() == ["shop"] * len(pairs)
    assert co.column("error").null_count == len(pairs)
    assert co.column("tombstone").to_pylist()[-2] is True
    gm = ki.group_members(recs)
    assert gm.schema == ki.schema_of("group_members")
    rows = gm.to_pylist()
    assert len(rows) == 5 * 2 + 1 + 1
    for v in range(5):
        a, b = rows[2 * v], rows[2 * v + 1]
        assert a["offset"] == v and a["generation"] == 3 and a["protocol"] == "range" and a["leader"] == "m-0"
        assert a["member_id"] == "m-0" and b["member_id"] == "m-1"
        assert b["group_instance_id"] == ("inst-1" if v >= 3 else None)
        assert a["rebalance_timeout"] == (60000 if v >= 1 else None)
        assert a["session_timeout"] == 45000 and a["client_host"] == "/10.0.0.1"
        assert a["subscription"] == ["orders"]
        assert a["assignment"] == [{"topic": "orders", "partitions": [0, 3]}]
        assert a["error"] is None
    empty = rows[10]
    assert empty["member_id"] is None and empty["generation"] == 3 and empty["protocol"] is None
    connect = rows[11]
    assert connect["protocol_type"] == "connect" and connect["subscription"] is None and connect["assignment"] is None


def test_consumer_protocol_against_kafka_python():
    from kafka.protocol.consumer import metadata as kp
    for v in range(4):
        ours = ki.encode_subscription(v, ["a", "b"], user_data=b"ud", owned_partitions=[("a", [1, 2])],
                                      generation_id=7, rack_id="r1")
        theirs = kp.ConsumerProtocolSubscription.decode(ours, version=v)
        assert list(theirs.topics) == ["a", "b"] and theirs.user_data == b"ud"
        sub = kp.ConsumerProtocolSubscription(version=v, topics=["x"], user_data=None, owned_partitions=[],
                                              generation_id=3, rack_id=None).encode(version=v)
        assert coordinator.decode_versioned(schemas.CONSUMER_PROTOCOL_SUBSCRIPTION, sub)["Topics"] == ["x"]
        asg = kp.ConsumerProtocolAssignment(version=v, assigned_partitions=[("t", [0, 5])],
                                            user_data=None).encode(version=v)
        got = coordinator.decode_versioned(schemas.CONSUMER_PROTOCOL_ASSIGNMENT, asg)
        assert got["AssignedPartitions"] == [{"Topic": "t", "Partitions": [0, 5]}]
        assert asg == ki.encode_assignment(v, [("t", [0, 5])])


def test_new_group_coordinator_records():
    rnd = random.Random(3)
    pairs = []
    for rtype, (kind, kmsg, vmsg) in sorted(schemas.GROUP_RECORDS.items()):
        if rtype < 3:
            continue
        key = _sample_struct(kmsg.fields, 0, rnd)
        key["GroupId"] = f"grp-{rtype}"
        if vmsg is None:
            pairs.append((ki.encode_group_record(rtype, key)[0], b"\x00\x00"))
        else:
            pairs.append(ki.encode_group_record(rtype, key, 0, _sample_struct(vmsg.fields, 0, rnd)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", KafkafmtWarning)
        t = ki.consumer_offsets(_recs(pairs))
    types = [t_ for t_ in sorted(schemas.GROUP_RECORDS) if t_ >= 3]
    assert t.column("kind").to_pylist() == [ki.GROUP_KINDS[t_] for t_ in types]
    assert t.column("group").to_pylist() == [f"grp-{t_}" for t_ in types]
    assert t.column("error").null_count == t.num_rows
    assert t.column("topic").null_count == t.num_rows


def test_unknown_type_and_version_warn_and_keep_raw_bytes():
    good = _commit(1, 3, 0)
    unknown_type = (struct.pack(">h", 99) + b"\x00\x01g", b"\x00\x00xyz")
    newer = (good[0], struct.pack(">h", 5) + good[1][2:])
    pairs = [good, unknown_type, newer, good]
    with pytest.warns(KafkafmtWarning, match="unknown type.*newer than known"):
        t = ki.consumer_offsets(_recs(pairs))
    rows = t.to_pylist()
    assert rows[0]["error"] is None and rows[3]["error"] is None and rows[3]["committed_offset"] == 1000
    assert rows[1]["kind"] == "unknown" and rows[1]["error"] == "unknown record type 99"
    assert rows[1]["raw_key"] == unknown_type[0] and rows[1]["raw_value"] == unknown_type[1]
    assert rows[2]["kind"] == "offset_commit" and "unknown value version 5" in rows[2]["error"]
    assert rows[2]["group"] == "g1" and rows[2]["committed_offset"] is None and rows[2]["raw_value"] == newer[1]


def test_corrupt_keys_and_values_give_error_and_go_on():
    good = _commit(1, 3, 1, meta="hello")
    cases = [
        ((None, good[1]), "key: the key is null"),
        ((b"\x00", good[1]), "key: truncated before the record type"),
        ((b"\x00\x01\x00\x09ab", good[1]), "key: OffsetCommitKey field group: truncated"),
        ((b"\x00\x01\x00\x01g\x00\x02\xff\xfe", good[1]), "field topic: string is not valid UTF-8"),
        ((b"\x00\x01\x00\x01g\x00\x01t\x00\x00", good[1]), "field partition: truncated"),
        ((b"\x00\x01\xff\xff", good[1]), "field group: non-nullable field was serialized as null"),
        ((good[0], b"\x00"), "value: OffsetCommitValue: truncated before the version"),
        ((good[0], good[1][:9]), "value: OffsetCommitValue v3 field offset: truncated"),
        ((good[0], good[1][:12]), "field leaderEpoch: truncated"),
        ((good[0], good[1][:17]), "field metadata: truncated"),
        ((good[0], good[1][:-1]), "field commitTimestamp: truncated"),
        ((good[0], struct.pack(">hqih", 3, 1, 1, 2) + b"\xc3\x28" + bytes(8)), "metadata: string is not valid UTF-8"),
        ((good[0], struct.pack(">hq", 1, 1) + b"\x00\x00" + bytes(8)), "v1 field expireTimestamp: truncated"),
        ((good[0], struct.pack(">hqi", 4, 1, 1) + b"\x01" + bytes(8) + b"\x01\x00\x05ab"), "tagged fields"),
        ((b"\x00\x02\x00\x04shop", b"\x00\x03\x00\x08consumer\x00\x00"), "GroupMetadataValue v3 field generation"),
    ]
    pairs = [good] + list(itertools.chain.from_iterable([(c, good) for c, _ in cases]))
    t = ki.consumer_offsets(_recs(pairs)).to_pylist()
    assert all(r["error"] is None and r["committed_offset"] == 1001 and r["metadata"] == "hello"
               for r in t[0::2])
    for row, (case, msg) in zip(t[1::2], cases):
        assert row["error"] is not None and msg in row["error"], (row["error"], msg)
        assert row["committed_offset"] is None and row["commit_timestamp"] is None
        assert row["raw_value"] == case[1]


def test_every_truncation_of_every_version():
    for ver in range(5):
        k, v = _commit(1, ver, 2, meta="abc")
        pairs = [(k, v[:cut]) for cut in range(len(v))]
        t = ki.consumer_offsets(_recs(pairs))
        assert t.column("error").null_count == 0, ver
        assert t.column("committed_offset").null_count == len(pairs)
        assert t.column("group").to_pylist() == ["g1"] * len(pairs)


# ------------------------------------------------------------------------------------------------
# __transaction_state

def _txn(version, status, tagged=None, partitions=(("orders", [0, 1]),)):
    v = {"ProducerId": 4000, "ProducerEpoch": 3, "TransactionTimeoutMs": 60000, "TransactionStatus": status,
         "TransactionPartitions": None if partitions is None else
         [{"Topic": t, "PartitionIds": p} for t, p in partitions],
         "TransactionLastUpdateTimestampMs": 1767225601000, "TransactionStartTimestampMs": 1767225600000}
    v.update(tagged or {})
    return ki.encode_transaction_record("tx-1", version, v)


def test_transaction_state_both_versions(tmp_path):
    pairs = [_txn(0, s) for s in range(8)]
    pairs.append(_txn(1, 4, {"PreviousProducerId": 3999, "NextProducerId": 4001, "ClientTransactionVersion": 2,
                             "NextProducerEpoch": 0}))
    pairs.append(_txn(1, 0, partitions=None))
    pairs.append(ki.encode_transaction_record("tx-gone"))
    t = ki.transaction_state(_recs(pairs, tmp_path, "__transaction_state"))
    assert t.schema == ki.schema_of("transaction_state")
    rows = t.to_pylist()
    assert [r["status"] for r in rows[:8]] == ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                                               "CompleteAbort", "Dead", "PrepareEpochFence"]
    r0 = rows[0]
    assert r0["transactional_id"] == "tx-1" and r0["producer_id"] == 4000 and r0["producer_epoch"] == 3
    assert r0["timeout_ms"] == 60000 and r0["partitions"] == [{"topic": "orders", "partitions": [0, 1]}]
    assert int(r0["start_timestamp"].timestamp() * 1000) == 1767225600000
    assert r0["previous_producer_id"] is None and r0["client_transaction_version"] is None
    r8 = rows[8]
    assert (r8["previous_producer_id"], r8["next_producer_id"], r8["next_producer_epoch"],
            r8["client_transaction_version"]) == (3999, 4001, 0, 2)
    r9 = rows[9]
    assert r9["partitions"] is None and r9["previous_producer_id"] == -1 and r9["client_transaction_version"] == 0
    assert rows[10]["tombstone"] and rows[10]["transactional_id"] == "tx-gone" and rows[10]["status"] is None
    assert t.column("error").null_count == t.num_rows


def test_transaction_state_bad_input():
    k, v = _txn(1, 1)
    pairs = [(k, v[:7]), (k, struct.pack(">h", 2) + v[2:]), (b"\x00\x05\x00\x01x", v), (k, v)]
    with pytest.warns(KafkafmtWarning):
        rows = ki.transaction_state(_recs(pairs)).to_pylist()
    assert "TransactionLogValue v1 field" in rows[0]["error"] and rows[0]["transactional_id"] == "tx-1"
    assert rows[0]["raw_value"] == v[:7]
    assert "unknown value version 2" in rows[1]["error"]
    assert rows[2]["error"] == "unknown record type 5" and rows[2]["raw_key"] == b"\x00\x05\x00\x01x"
    assert rows[3]["error"] is None and rows[3]["status"] == "Ongoing"


# ------------------------------------------------------------------------------------------------
# __cluster_metadata

def test_cluster_metadata_every_type_and_version(tmp_path):
    rnd = random.Random(11)
    values, expect = [], []
    for api_key, msg in sorted(schemas.METADATA_RECORDS.items()):
        for ver in range(msg.valid[0], msg.valid[1] + 1):
            d = _sample_struct(msg.fields, ver, rnd)
            values.append(ki.encode_metadata_record(api_key, ver, d))
            expect.append((api_key, ver, msg, d))
    kafkafmt.write_log_dir(tmp_path / "__cluster_metadata-0", keys=[None] * len(values), values=values)
    recs = kafkafmt.read_log_dirs(tmp_path, topics=["__cluster_metadata"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", KafkafmtWarning)
        t = ki.cluster_metadata(recs)
    assert t.schema == ki.schema_of("cluster_metadata")
    for row, (api_key, ver, msg, d) in zip(t.to_pylist(), expect):
        assert (row["api_key"], row["version"], row["record_type"], row["error"]) == (api_key, ver, msg.name, None)
        flexible_expected = _expected(msg.fields, d, ver, True)
        assert json.loads(row["fields"]) == json.loads(codec.json_text(codec.to_json_data(msg, flexible_expected)))
        if api_key == 2:
            assert row["topic_name"] == d["Name"] and row["topic_id"] == codec.uuid_text(d["TopicId"])
        if api_key == 3:
            assert (row["partition_id"], row["leader"], row["replicas"], row["isr"]) == (
                d["PartitionId"], d["Leader"], d["Replicas"], d["Isr"])
        if api_key == 4:
            assert row["config_name"] == d["Name"] and row["config_value"] == d["Value"]
            assert row["config_resource"].endswith(":" + d["ResourceName"])
        if api_key in (0, 1, 17):
            assert row["broker_id"] == d["BrokerId"]


def test_cluster_metadata_json_like_kafka():
    # Kafka's Uuid text: url-safe base64 of the 16 bytes, no padding (Uuid(0, 1) is AAAAAAAAAAAAAAAAAAAAAQ)
    assert codec.uuid_text(bytes(15) + b"\x01") == "AAAAAAAAAAAAAAAAAAAAAQ"
    topic_id = base64.urlsafe_b64decode("gSnfpEbtQfSDpxM2lhEn9A==")
    v = ki.encode_metadata_record(2, 0, {"Name": "orders", "TopicId": topic_id})
    p = ki.encode_metadata_record(5, 0, {"PartitionId": 1, "TopicId": topic_id, "Isr": [1, 2]}, frame_version=0)
    t = ki.cluster_metadata(_recs([(None, v), (None, p)])).to_pylist()
    assert t[0]["fields"] == '{"name":"orders","topicId":"gSnfpEbtQfSDpxM2lhEn9A"}'
    assert t[1]["fields"] == '{"partitionId":1,"topicId":"gSnfpEbtQfSDpxM2lhEn9A","isr":[1,2]}'
    assert t[1]["leader"] is None and t[1]["isr"] == [1, 2] and t[1]["replicas"] is None
    assert ki.metadata_type_enum_name(17) == "BROKER_REGISTRATION_CHANGE_RECORD"
    assert ki.metadata_type_enum_name(2) == "TOPIC_RECORD"


def test_cluster_metadata_bad_input():
    good = ki.encode_metadata_record(2, 0, {"Name": "orders", "TopicId": UUID1})
    pairs = [(None, good[:-3]), (None, b"\x01\x63\x00abc"), (None, b"\x01\x02\x07\x00"), (None, b"\x01"),
             (None, None), (None, good)]
    with pytest.warns(KafkafmtWarning, match="unknown type.*newer than known"):
        rows = ki.cluster_metadata(_recs(pairs)).to_pylist()
    assert "TopicRecord v0 field" in rows[0]["error"] and rows[0]["raw_value"] == good[:-3]
    assert rows[1]["api_key"] == 99 and "unknown metadata record type" in rows[1]["error"]
    assert rows[2]["record_type"] == "TopicRecord" and "unknown version 7" in rows[2]["error"]
    assert "truncated varint" in rows[3]["error"]
    assert rows[4]["error"] == "the value is null"
    assert rows[5]["error"] is None and rows[5]["topic_name"] == "orders"


# ------------------------------------------------------------------------------------------------
# real broker data

def _co_dirs(real_corpus):
    root = real_corpus / "broker-dirs"
    return sorted({p.parent for p in root.glob("**/__consumer_offsets-*/*.log")})


def test_real_consumer_offsets(real_corpus):
    dirs = _co_dirs(real_corpus)
    assert len(dirs) >= 3
    total = 0
    for d in dirs:
        recs = kafkafmt.read_log_dirs(d, topics=["__consumer_offsets"])
        with warnings.catch_warnings():
            warnings.simplefilter("error", KafkafmtWarning)
            t = ki.consumer_offsets(recs)
        total += t.num_rows
        assert t.num_rows == len(recs)
        assert t.column("error").null_count == t.num_rows, t.filter(t.column("error").is_valid()).to_pylist()[:2]
        assert set(t.column("kind").to_pylist()) <= {"offset_commit", "group_metadata"}
        # offset commits against the independent struct reader
        for row, (k, v) in zip(t.to_pylist(), zip(recs.key.to_pylist(), recs.value.to_pylist())):
            if row["kind"] == "offset_commit" and v is not None:
                off, epoch, meta, cts, _ = _py_offset_commit(v)
                assert (row["committed_offset"], row["leader_epoch"], row["metadata"]) == (off, epoch, meta)
        gm = ki.group_members(recs)
        assert gm.column("error").null_count == gm.num_rows
    assert total > 90


def test_real_kafka_271_group_members(real_corpus):
    d = real_corpus / "broker-dirs" / "DonaldY__kafka-2.7.1" / "kafka-logs"
    recs = kafkafmt.read_log_dirs(d, topics=["__consumer_offsets"])
    gm = ki.group_members(recs).to_pylist()
    members = [r for r in gm if r["member_id"]]
    assert members and all(r["protocol_type"] == "consumer" for r in members)
    assert all(r["subscription"] and r["assignment"] is not None for r in members)
    assert all(r["client_id"].startswith("consumer-") for r in members)


def test_real_cluster_metadata(real_corpus):
    root = real_corpus / "broker-dirs" / "Niloufar1171__LDI-POC"
    recs = kafkafmt.read_log_dir(root / "__cluster_metadata-0")
    with warnings.catch_warnings():
        warnings.simplefilter("error", KafkafmtWarning)
        t = ki.cluster_metadata(recs)
    assert t.num_rows == len(recs) and t.column("error").null_count == t.num_rows
    topics = {r["topic_name"] for r in t.to_pylist() if r["record_type"] == "TopicRecord"}
    folders = {p.name.rsplit("-", 1)[0] for p in root.iterdir() if p.is_dir() and not p.name.startswith("__cluster")}
    assert folders <= topics
    parts = t.filter(pa.compute.equal(t.column("record_type"), "PartitionRecord"))
    assert parts.num_rows > 0 and parts.column("leader").null_count == 0
    snap = ki.cluster_metadata(kafkafmt.read_segment(root / "bootstrap.checkpoint")).to_pylist()
    assert snap[0]["record_type"] == "FeatureLevelRecord"
    assert json.loads(snap[0]["fields"])["name"] == "metadata.version"


def test_empty_records():
    recs = kafkafmt.decode(b"")
    for name in ki.TABLES:
        t = getattr(ki, name)(recs)
        assert t.num_rows == 0 and t.schema == ki.schema_of(name)


# ------------------------------------------------------------------------------------------------
# DumpLogSegments text

def test_dump_text_offsets_and_transactions():
    k, v = _commit(1, 3, 0, meta="m")
    key, payload = ki.dump_text("offsets", k, v, 5)
    assert key == '{"type":"1","data":{"group":"g1","topic":"orders","partition":0}}'
    assert payload == '{"version":"3","data":{"offset":1000,"leaderEpoch":0,"metadata":"m","commitTimestamp":1767225600000}}'
    assert ki.dump_text("offsets", k, None, 5)[1] == "<DELETE>"
    assert ki.dump_text("offsets", b"\x00\x63", b"", 7) == ("Unknown record type 99 at offset 7, skipping.", None)
    assert ki.dump_text("offsets", k, v[:5], 8)[0].startswith("Error at offset 8, skipping. value: ")
    gk, gv = _group_metadata(4, [_member(0, 3, 3)])
    data = json.loads(ki.dump_text("offsets", gk, gv, 1)[1])["data"]
    assert data["members"][0]["subscription"]["topics"] == ["orders"]
    assert data["members"][0]["assignment"]["assignedPartitions"] == [{"topic": "orders", "partitions": [0, 3]}]
    tk, tv = _txn(1, 4, {"PreviousProducerId": 7})
    key, payload = ki.dump_text("transaction-log", tk, tv, 0)
    assert key == '{"type":"0","data":{"transactionalId":"tx-1"}}'
    d = json.loads(payload)
    assert d["version"] == "1" and d["data"]["previousProducerId"] == 7 and "nextProducerId" not in d["data"]
    assert d["data"]["transactionStatus"] == 4
    with pytest.raises(ValueError, match="missing key"):
        ki.dump_text("offsets", None, v, 3)


def test_dump_text_cluster_metadata():
    v = ki.encode_metadata_record(12, 0, {"Name": "metadata.version", "FeatureLevel": 19})
    assert ki.dump_text("cluster-metadata", None, v, 1) == (
        None, '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":19}}')
    assert ki.dump_text("cluster-metadata", None, v[:-1], 2)[1].startswith("Error at 2, skipping.")


def test_group_members_corrupt_member_bytes():
    m = _member(0)
    m["subscription"] = b"\x00\x01\x00\x00\x00\x09"
    k, v = _group_metadata(3, [m, _member(1)])
    rows = ki.group_members(_recs([(k, v), (k, v[:20])])).to_pylist()
    assert rows[0]["member_id"] == "m-0" and rows[0]["subscription"] is None
    assert "subscription" in rows[0]["error"] and rows[0]["assignment"] == [{"topic": "orders", "partitions": [0, 3]}]
    assert rows[1]["error"] is None and rows[1]["subscription"] == ["orders"]
    assert "GroupMetadataValue v3" in rows[2]["error"] and rows[2]["member_id"] is None
    assert rows[2]["group"] == "shop" and rows[2]["generation"] is None


def test_rows_name_the_partition_and_log_dir_they_came_from(real_corpus):
    """Rows of different __consumer_offsets partitions (or of two copies of one) can be told apart
    and deduplicated: every table ends with source_partition and log_dir (issue 21)."""
    root = real_corpus / "broker-dirs"
    recs = kafkafmt.read_log_dirs(str(root), topics=["__consumer_offsets"])
    assert len(set(recs.partition.tolist())) > 1
    for name in ("consumer_offsets", "transaction_state", "cluster_metadata"):
        assert ki.schema_of(name).names[-2:] == ["source_partition", "log_dir"]
    table = ki.consumer_offsets(recs)
    assert table.column("source_partition").to_pylist() == recs.partition.tolist()
    assert table.column("log_dir").to_pylist() == list(recs.log_dir)
    for folder in sorted(root.glob("*/**/__consumer_offsets-*")):
        one = kafkafmt.read_log_dir(str(folder))
        t = ki.consumer_offsets(one)
        assert set(t.column("source_partition").to_pylist()) <= {int(folder.name.rsplit("-", 1)[1])}
        assert set(t.column("log_dir").to_pylist()) <= {str(folder.parent)}
    members = ki.group_members(recs)
    if members.num_rows:
        by_offset = dict(zip(zip(recs.offset.tolist(), recs.partition.tolist()), recs.log_dir))
        for off, part, d in zip(members.column("offset").to_pylist(), members.column("source_partition").to_pylist(),
                                members.column("log_dir").to_pylist()):
            assert by_offset[(off, part)] == d
