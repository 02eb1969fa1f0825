"""A small, realistic Kafka log directory, generated deterministically by kafkafmt's own writer.

`sample_dir()` returns its path, generating it on first use (into ``$KAFKAFMT_SAMPLE_DIR`` or the
user cache folder). It holds:

* ``orders-0``, ``orders-1`` -- JSON order events keyed by customer, several segments per partition,
  the codec changing every 400 records (lz4, zstd, snappy, gzip, none), trace headers on a fifth of
  the records, timestamps with jitter, producer ids and sequences (idempotent producer).
* ``payments-0`` -- a transactional topic: two producers interleave; one transaction commits, one
  aborts, and plain records surround them (so read_committed differs from read_uncommitted).
* ``customers-0`` -- a compacted topic: offsets with gaps, tombstones (null values), an empty batch
  left behind by the cleaner.
* ``clicks-0`` -- an old topic: a legacy v1 segment (gzip wrappers, relative inner offsets)
  followed by v2 segments after the upgrade.
* ``shipments-0`` -- Avro values in the Schema Registry's wire format, written with two versions of
  the ``shipments-value`` subject (v2 adds a nullable ``tracking`` and an ``items`` array), and one
  value a misbehaving producer wrote as plain JSON; keys are order ids (UTF-8).
* ``_schemas-0`` -- the Schema Registry's topic holding those schemas (as the registry writes it):
  read shipments typed with ``value_format="avro"``.
* ``__consumer_offsets-0`` -- the group coordinator's log for three consumer groups: ``billing``
  (orders + payments, one member) and ``analytics`` (orders + clicks, two members, then one after a
  rebalance) commit offsets that follow the sample's own records over time; ``old-reports`` commits
  once, empties, and is deleted (tombstones for its offset and its group). Group metadata records
  carry members with consumer-protocol subscriptions and assignments.
* ``__cluster_metadata-0`` -- a KRaft metadata log: metadata.version, a broker registration and
  unfencing, each sample topic's TopicRecord + PartitionRecords (topic ids as in the partitions'
  ``partition.metadata``), topic and cluster ConfigRecords, a producer-id block, NoOp records.

The internal topics are written with `kafkafmt.internal`'s encoders (read them back with
`kafkafmt.internal.consumer_offsets` / `group_members` / `cluster_metadata`).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import uuid

import numpy as np

from kafkafmt.log import LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA, LogWriter

SAMPLE_VERSION = 4
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, in ms


def _default_root():
    root = os.environ.get("KAFKAFMT_SAMPLE_DIR")
    if root:
        return root
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "kafkafmt", f"sample-v{SAMPLE_VERSION}")


def sample_dir(create=True) -> str:
    """Path of the sample log directory (a Kafka ``log.dirs`` entry), generated if missing.

    The folder is ``$KAFKAFMT_SAMPLE_DIR`` when set, else ``kafkafmt/sample-v<version>`` in the
    user cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``). It is generated (`generate`) into a
    temporary folder beside it and renamed into place when complete, so a partly written sample
    is never used.

    Parameters
    ----------
    create : bool
        Generate the sample when it is missing (the default); False only gives the path.

    Returns
    -------
    str
        The path of the log dir.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> [p.name for p in kafkafmt.list_partitions(sample_dir())]
    ['__cluster_metadata-0', '__consumer_offsets-0', '_schemas-0', 'clicks-0', 'customers-0', 'orders-0',
     'orders-1', 'payments-0', 'shipments-0']
    >>> kafkafmt.read_log_dir(f"{sample_dir()}/payments-0")
    <Records payments-0: 120 records in 9 batches>
    """
    root = _default_root()
    if create and not os.path.exists(os.path.join(root, ".complete")):
        parent = os.path.dirname(os.path.abspath(root))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".sample-", dir=parent)
        try:
            generate(tmp)
            open(os.path.join(tmp, ".complete"), "w").close()
            if os.path.exists(root):
                shutil.rmtree(root)
            os.replace(tmp, root)
        finally:
            if os.path.exists(tmp):
                shutil.rmtree(tmp)
    return root


def damaged_copy(dest) -> str:
    """A copy of the sample's ``payments-0`` partition whose second batch is damaged, to try salvaging reads,
    ``verify`` and `kafkafmt.recover` on: 8 bytes of the batch at positions 352..669 of the first segment
    (offsets 20..34) are overwritten, so its CRC no longer matches; the batches around it are intact.

    Parameters
    ----------
    dest : str or os.PathLike
        The partition folder to create (its parent folders are created; it must not exist).

    Returns
    -------
    str
        ``dest``.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import damaged_copy
    >>> folder = damaged_copy("damaged/payments-0")
    >>> [(e.kind.value, e.start, e.end, e.offset) for e in kafkafmt.read_log_dir(folder, errors="salvage").report]
    [('corrupt', 352, 669, 20)]
    """
    folder = shutil.copytree(os.path.join(sample_dir(), "payments-0"), dest)
    with open(os.path.join(folder, "00000000000000000000.log"), "r+b") as f:
        f.seek(400)
        f.write(b"\xff" * 8)
    return folder


def _order(rnd, i, customer):
    return json.dumps({
        "order_id": f"o-{i:07d}", "customer": customer, "amount": round(rnd.uniform(3, 400), 2),
        "currency": rnd.choice(["EUR", "USD", "GBP"]), "items": rnd.randint(1, 9),
        "status": rnd.choice(["created", "paid", "shipped", "delivered"]),
        "note": "x" * rnd.randint(0, 60),
    }, separators=(",", ":")).encode()


def _orders(root, partition, rnd):
    path = os.path.join(root, f"orders-{partition}")
    with LogWriter(path, segment_bytes=48 * 1024, index_interval_bytes=4096, leader_epoch=3) as w:
        ts = T0 + partition * 1000
        for seg, codec in enumerate(["lz4", "zstd", "snappy", "gzip", "none", "lz4"]):
            n = 400
            customers = [f"customer-{rnd.randint(1, 200):04d}" for _ in range(n)]
            keys = [c.encode() for c in customers]
            values = [_order(rnd, seg * n + i, c) for i, c in enumerate(customers)]
            stamps = [ts + i * 250 + rnd.randint(-400, 400) for i in range(n)]  # jitter: not monotonic
            headers = [[("trace-id", f"{rnd.getrandbits(64):016x}".encode()), ("source", b"web")]
                       if rnd.random() < 0.2 else [] for _ in range(n)]
            w.append(keys=keys, values=values, timestamps=stamps, headers=headers, compression=codec,
                     batch_size=4096, producer_id=500 + partition, producer_epoch=0)
            ts = stamps[-1] + 1000


def _payments(root, rnd):
    path = os.path.join(root, "payments-0")

    def batch(n, start, tag):
        values = [json.dumps({"payment": f"{tag}-{i}", "amount": rnd.randint(1, 999)}).encode() for i in range(n)]
        return dict(keys=[f"{tag}-{i}".encode() for i in range(n)], values=values,
                    timestamps=[T0 + start + 10 * i for i in range(n)])

    with LogWriter(path, segment_bytes=1200, index_interval_bytes=512, leader_epoch=1) as w:
        w.append(**batch(20, 0, "plain-a"), compression="zstd")
        w.append(**batch(15, 1_000, "tx1-a"), producer_id=1001, transactional=True, compression="zstd")
        w.append(**batch(10, 2_000, "tx2-a"), producer_id=1002, transactional=True, compression="lz4")
        w.append(**batch(15, 3_000, "tx1-b"), producer_id=1001, transactional=True, compression="zstd")
        w.append(**batch(10, 4_000, "tx2-b"), producer_id=1002, transactional=True)
        w.append_control("abort", producer_id=1002, coordinator_epoch=4, timestamp=T0 + 5_000)
        w.append(**batch(20, 6_000, "plain-b"), compression="zstd")
        w.append_control("commit", producer_id=1001, coordinator_epoch=4, timestamp=T0 + 7_000)
        w.append(**batch(30, 8_000, "plain-c"), compression="snappy")


def _customers(root, rnd):
    path = os.path.join(root, "customers-0")
    # what a compacted topic looks like: survivors of the cleaner, with offset gaps
    n = 600
    offsets = np.cumsum(np.array([rnd.randint(1, 6) for _ in range(n)])) + 1000
    keys = [f"customer-{rnd.randint(1, 250):04d}".encode() for _ in range(n)]
    values = [None if rnd.random() < 0.08 else json.dumps({"name": f"Customer {k.decode()[-4:]}",
                                                            "tier": rnd.choice(["gold", "silver", "bronze"])}).encode()
              for k in keys]
    stamps = [T0 + 60_000 * int(o) for o in offsets]
    with LogWriter(path, segment_bytes=16 * 1024, index_interval_bytes=4096, base_offset=1000) as w:
        w.append(keys=keys[:300], values=values[:300], timestamps=stamps[:300], offsets=offsets[:300],
                 compression="gzip", batch_size=2048)
        w.append_empty_batch(last_offset=int(offsets[300]) - 1, timestamp=stamps[299] + 1)
        w.append(keys=keys[300:], values=values[300:], timestamps=stamps[300:], offsets=offsets[300:],
                 compression="none", batch_size=2048)


def _clicks(root, rnd):
    path = os.path.join(root, "clicks-0")
    pages = ["/", "/search", "/cart", "/checkout", "/product/1", "/product/2"]

    def clicks(n, start):
        return dict(keys=[None if rnd.random() < 0.3 else f"session-{rnd.randint(1, 50)}".encode() for _ in range(n)],
                    values=[json.dumps({"page": rnd.choice(pages), "ms": rnd.randint(5, 900)}).encode()
                            for _ in range(n)],
                    timestamps=[T0 + start + 100 * i for i in range(n)])

    with LogWriter(path, segment_bytes=12 * 1024, index_interval_bytes=2048) as w:
        w.append(**clicks(300, 0), magic=1, compression="gzip", max_records=25)   # before the upgrade
        w.append(**clicks(300, 60_000), magic=2, compression="lz4")               # after it


# -- Avro values and the Schema Registry's topic ------------------------------------------------------

SHIPMENT_V1 = {"type": "record", "name": "Shipment", "namespace": "com.example.logistics", "fields": [
    {"name": "order_id", "type": "string"},
    {"name": "carrier", "type": {"type": "enum", "name": "Carrier", "symbols": ["DHL", "UPS", "FEDEX"]}},
    {"name": "weight_kg", "type": "double"},
    {"name": "shipped_at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
SHIPMENT_V2 = {**SHIPMENT_V1, "fields": SHIPMENT_V1["fields"] + [
    {"name": "tracking", "type": ["null", "string"], "default": None},
    {"name": "items", "type": {"type": "array", "items": "string"}, "default": []}]}
_CARRIERS = ["DHL", "UPS", "FEDEX"]


def _zigzag(n):
    """An Avro int/long: zigzag, then a base-128 varint."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _avro_string(text):
    b = text.encode()
    return _zigzag(len(b)) + b


def _shipment(schema_id, v, version):
    """The wire format (0x00, big-endian schema id) and the Avro binary of a shipment."""
    body = (_avro_string(v["order_id"]) + _zigzag(_CARRIERS.index(v["carrier"]))
            + np.float64(v["weight_kg"]).tobytes() + _zigzag(v["shipped_at"]))
    if version == 2:
        body += b"\x00" if v["tracking"] is None else b"\x02" + _avro_string(v["tracking"])
        if v["items"]:
            body += _zigzag(len(v["items"])) + b"".join(_avro_string(i) for i in v["items"])
        body += b"\x00"
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def _schemas_records(subject_schemas):
    """What a Confluent Schema Registry writes to ``_schemas`` registering these (subject, schema)
    pairs in order: a NOOP, the global config, one SCHEMA record per version (ids from 1)."""
    def dump(obj):
        return json.dumps(obj, separators=(",", ":")).encode()
    recs = [(dump({"keytype": "NOOP", "magic": 0}), None),
            (dump({"keytype": "CONFIG", "magic": 0}), dump({"compatibilityLevel": "BACKWARD"}))]
    versions = {}
    for sid, (subject, schema) in enumerate(subject_schemas, 1):
        versions[subject] = versions.get(subject, 0) + 1
        v = versions[subject]
        recs.append((dump({"keytype": "SCHEMA", "subject": subject, "version": v, "magic": 1}),
                     dump({"subject": subject, "version": v, "id": sid, "schemaType": "AVRO",
                           "schema": json.dumps(schema, separators=(",", ":")), "deleted": False})))
    return recs


def _shipments(root, rnd):
    records = _schemas_records([("shipments-value", SHIPMENT_V1), ("shipments-value", SHIPMENT_V2)])
    with LogWriter(os.path.join(root, "_schemas-0"), leader_epoch=0) as w:
        for i, (k, v) in enumerate(records):
            w.append(keys=[k], values=[v], timestamps=[T0 - 3_600_000 + 1000 * i])
    with LogWriter(os.path.join(root, "shipments-0"), segment_bytes=32 * 1024, index_interval_bytes=4096,
                   leader_epoch=2) as w:
        ts = T0 + 30_000
        for seg, codec in enumerate(["zstd", "lz4", "none", "snappy"]):
            version = 1 if seg < 2 else 2
            keys, values, stamps = [], [], []
            for i in range(500):
                n = seg * 500 + i
                ts += rnd.randint(100, 900)
                v = {"order_id": f"o-{rnd.randint(0, 4799):07d}", "carrier": rnd.choice(_CARRIERS),
                     "weight_kg": round(rnd.uniform(0.1, 30), 3), "shipped_at": ts - rnd.randint(0, 60_000),
                     "tracking": None if rnd.random() < 0.3 else f"TRK{rnd.getrandbits(40):010X}",
                     "items": [f"sku-{rnd.randint(1, 99)}" for _ in range(rnd.randint(0, 4))]}
                keys.append(v["order_id"].encode())
                if n == 1234:        # a producer that did not use the registry's serializer
                    values.append(json.dumps(v, separators=(",", ":")).encode())
                else:
                    values.append(_shipment(version, v, version))
                stamps.append(ts)
            w.append(keys=keys, values=values, timestamps=stamps, compression=codec, batch_size=8192)


# -- internal topics ----------------------------------------------------------------------------------

def _positions(root, name):
    """(timestamps, offsets, leader epochs) of a sample partition's records, for commits that follow them."""
    from kafkafmt.read import read_log_dir

    recs = read_log_dir(os.path.join(root, name))
    return (np.asarray(recs.timestamp, np.int64), np.asarray(recs.offset, np.int64),
            np.asarray(recs.batch_column("partition_leader_epoch"), np.int64))


def _member(group, n, topics, assigned, client_host):
    from kafkafmt.internal import encode_assignment, encode_subscription

    by_topic = {}
    for t, p in assigned:
        by_topic.setdefault(t, []).append(p)
    return {"memberId": f"consumer-{group}-{n}-{uuid.uuid5(uuid.NAMESPACE_URL, f'{group}/{n}')}",
            "groupInstanceId": None, "clientId": f"consumer-{group}-{n}", "clientHost": client_host,
            "rebalanceTimeout": 300_000, "sessionTimeout": 45_000,
            "subscription": encode_subscription(1, sorted(topics), owned_partitions=sorted(by_topic.items())),
            "assignment": encode_assignment(1, sorted(by_topic.items()))}


def _consumer_offsets(root):
    """__consumer_offsets-0: group metadata and offset commits of three groups over ~13 minutes."""
    from kafkafmt.internal import encode_group_record

    pos = {name: _positions(root, name) for name in ("orders-0", "orders-1", "payments-0", "clicks-0")}
    events = []      # (time, order, [(key, value)])

    def group(t, name, generation, members, protocol="range"):
        value = {"protocolType": "consumer", "generation": generation, "protocol": protocol if members else None,
                 "leader": members[0]["memberId"] if members else None, "currentStateTimestamp": t,
                 "members": members}
        events.append((t, len(events), [encode_group_record(2, {"group": name}, 3, value)]))

    def commit(t, name, partitions):
        pairs = []
        for part in partitions:
            ts, offs, epochs = pos[part]
            consumed = int(np.searchsorted(np.sort(ts), t, side="right"))   # records the consumer has seen
            nxt = int(offs[consumed]) if consumed < len(offs) else int(offs[-1]) + 1
            epoch = int(epochs[min(consumed, len(offs)) - 1]) if consumed else -1
            topic, p = part.rsplit("-", 1)
            pairs.append(encode_group_record(1, {"group": name, "topic": topic, "partition": int(p)}, 3, {
                "offset": nxt, "leaderEpoch": epoch, "metadata": "", "commitTimestamp": t}))
        events.append((t, len(events), pairs))

    # billing: one member on orders + payments, commits every minute
    billing = [_member("billing", 1, ["orders", "payments"],
                       [("orders", 0), ("orders", 1), ("payments", 0)], "/10.0.1.17")]
    group(T0 + 5_000, "billing", 1, billing)
    for k in range(1, 13):
        commit(T0 + 60_000 * k, "billing", ["orders-0", "orders-1", "payments-0"])
    # analytics: two members on orders + clicks, one leaves at 6:40 (generation 2)
    a1 = [_member("analytics", 1, ["orders", "clicks"], [("orders", 0), ("clicks", 0)], "/10.0.2.5"),
          _member("analytics", 2, ["orders", "clicks"], [("orders", 1)], "/10.0.2.6")]
    a2 = [_member("analytics", 1, ["orders", "clicks"], [("clicks", 0), ("orders", 0), ("orders", 1)], "/10.0.2.5")]
    group(T0 + 30_000, "analytics", 1, a1)
    group(T0 + 400_000, "analytics", 2, a2)
    for k in range(1, 9):
        commit(T0 + 15_000 + 90_000 * k, "analytics", ["orders-0", "orders-1", "clicks-0"])
    # old-reports: commits once, goes empty, then its offsets expire and the group is deleted
    old = [_member("old-reports", 1, ["clicks"], [("clicks", 0)], "/10.0.3.9")]
    group(T0 + 20_000, "old-reports", 1, old)
    commit(T0 + 25_000, "old-reports", ["clicks-0"])
    group(T0 + 70_000, "old-reports", 2, [])
    events.append((T0 + 780_000, len(events), [
        (encode_group_record(1, {"group": "old-reports", "topic": "clicks", "partition": 0})[0], None),
        (encode_group_record(2, {"group": "old-reports"})[0], None)]))

    with LogWriter(os.path.join(root, "__consumer_offsets-0"), segment_bytes=6 * 1024,
                   index_interval_bytes=1024, leader_epoch=0) as w:
        for t, _, pairs in sorted(events):
            w.append(keys=[k for k, _ in pairs], values=[v for _, v in pairs], timestamps=[t] * len(pairs))


def _cluster_metadata(root):
    """__cluster_metadata-0: the KRaft log that created the sample's topics."""
    from kafkafmt.internal import encode_metadata_record as rec
    from kafkafmt.log import read_leader_epoch_checkpoint, read_partition_metadata

    boot = T0 - 7_200_000
    log_dir = uuid.uuid5(uuid.NAMESPACE_URL, "kafkafmt:sample:log-dir").bytes
    topic_ids, epochs = {}, {}
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if os.path.isdir(folder) and not name.startswith("__cluster_metadata"):
            topic, part = name.rsplit("-", 1)
            md = read_partition_metadata(os.path.join(folder, PARTITION_METADATA))
            topic_ids.setdefault(topic, (md["topic_uuid"].bytes, []))[1].append(int(part))
            entries = read_leader_epoch_checkpoint(os.path.join(folder, LEADER_EPOCH_CHECKPOINT))["entries"]
            epochs[topic] = int(entries["epoch"][-1]) if len(entries) else 0     # the partition's leader epoch
    batches = []      # (time, [value bytes])
    broker_epoch = 1  # Kafka uses the offset of the registration as the broker epoch
    batches.append((boot, [rec(12, 0, {"Name": "metadata.version", "FeatureLevel": 19})]))
    batches.append((boot + 900, [rec(0, 3, {
        "BrokerId": 0, "IsMigratingZkBroker": False,
        "IncarnationId": uuid.uuid5(uuid.NAMESPACE_URL, "kafkafmt:sample:broker-0").bytes,
        "BrokerEpoch": broker_epoch,
        "EndPoints": [{"Name": "PLAINTEXT", "Host": "localhost", "Port": 9092, "SecurityProtocol": 0}],
        "Features": [{"Name": "metadata.version", "MinSupportedVersion": 1, "MaxSupportedVersion": 21}],
        "Rack": None, "Fenced": True, "InControlledShutdown": False, "LogDirs": [log_dir]})]))
    batches.append((boot + 2_900, [rec(8, 0, {"Id": 0, "Epoch": broker_epoch})]))

    def create(t, topic, configs=()):
        tid, parts = topic_ids[topic]
        values = [rec(2, 0, {"Name": topic, "TopicId": tid})]
        values += [rec(4, 0, {"ResourceType": 2, "ResourceName": topic, "Name": k, "Value": v}) for k, v in configs]
        values += [rec(3, 1, {"PartitionId": p, "TopicId": tid, "Replicas": [0], "Isr": [0], "RemovingReplicas": [],
                              "AddingReplicas": [], "Leader": 0, "LeaderEpoch": epochs[topic],
                              "PartitionEpoch": 0, "Directories": [log_dir]}) for p in sorted(parts)]
        batches.append((t, values))

    create(boot + 600_000, "clicks", [("retention.ms", "604800000")])
    create(boot + 1_200_000, "orders", [("compression.type", "producer")])
    create(boot + 1_800_000, "payments", [("min.insync.replicas", "1")])
    create(boot + 2_400_000, "customers", [("cleanup.policy", "compact")])
    create(boot + 2_700_000, "_schemas", [("cleanup.policy", "compact")])
    create(boot + 3_000_000, "shipments", [("compression.type", "producer")])
    batches.append((boot + 3_000_000, [rec(4, 0, {"ResourceType": 4, "ResourceName": "", "Name": "log.cleaner.threads",
                                                  "Value": "2"})]))
    batches.append((boot + 3_600_000, [rec(15, 0, {"BrokerId": 0, "BrokerEpoch": broker_epoch,
                                                   "NextProducerId": 2000})]))
    create(T0 + 1_500, "__consumer_offsets", [("cleanup.policy", "compact"), ("compression.type", "producer"),
                                              ("segment.bytes", "104857600")])
    for k in range(1, 8):
        batches.append((boot + 1_000_000 * k + 250, [rec(20, 0, {})]))
    with LogWriter(os.path.join(root, "__cluster_metadata-0"), segment_bytes=4 * 1024, index_interval_bytes=1024,
                   leader_epoch=1) as w:
        for t, values in sorted(batches, key=lambda b: b[0]):
            w.append(keys=[None] * len(values), values=values, timestamps=[t] * len(values))


def generate(root):
    """Write the sample log directory into `root` (deterministic: same bytes every time).

    Kafka's own file layout, written by `kafkafmt.LogWriter` (segments, indexes, checkpoints,
    ``meta.properties``); the module docstring lists what each partition holds.

    Parameters
    ----------
    root : str or os.PathLike
        The folder to write into (created if missing).

    Returns
    -------
    str or os.PathLike
        `root`.

    Examples
    --------
    >>> import filecmp
    >>> import os
    >>> from kafkafmt.sample import generate, sample_dir
    >>> root = generate("my-sample")
    >>> sorted(os.listdir(root))
    ['__cluster_metadata-0', '__consumer_offsets-0', '_schemas-0', 'clicks-0', 'customers-0', 'meta.properties',
     'orders-0', 'orders-1', 'payments-0', 'shipments-0']
    >>> log = "shipments-0/00000000000000000000.log"
    >>> filecmp.cmp(f"{root}/{log}", f"{sample_dir()}/{log}", shallow=False)     # the same bytes
    True
    """
    rnd = random.Random(20260101)
    os.makedirs(root, exist_ok=True)
    for p in (0, 1):
        _orders(root, p, rnd)
    _payments(root, rnd)
    _customers(root, rnd)
    _clicks(root, rnd)
    _shipments(root, rnd)
    _consumer_offsets(root)        # after the data topics: commits follow their records
    _cluster_metadata(root)
    with open(os.path.join(root, "meta.properties"), "w") as f:
        f.write("#kafkafmt sample\nversion=1\nbroker.id=0\ncluster.id=kafkafmt-sample\n")
    return root
