"""The layouts of Kafka data that tests/test_doors.py asks every door about, built once per module.

Each layout is data on disk (or in the loopback S3 server) plus what every door must answer about it,
known independently of kafkafmt's readers: the rows come from the writer's inputs (every record's key
and value is a function of its topic, partition and offset) or, for real broker files, from
kafka-python's decoder. A layout only says *where* the bytes are; the doors find them.

Layouts (issue 22's matrix, plus issue 21's items 6, 8, 11):

plain        a broker log dir: four partitions of two topics, several segments each, four codecs
s3           the same log dir uploaded to S3, read by URL
kafka_tiered Kafka's LocalTieredStorage layout only (on local disk, where that plugin writes it)
aiven        Aiven's layout only (on S3, chunked and zstd-compressed for one partition)
aiven_encrypted  Aiven's layout on local disk, encrypted with an RSA key (AES-GCM chunks), one partition also
             compressed: every door reads it given the private key (tiered_keys / --tiered-key /
             tieredKey.<id>)
merged       a log dir + a tiered root: older segments only uploaded, newer only local, one in both
gap          the same with one segment in neither place: offsets missing between uploads and local
one_root     ONE root holding both the tiered uploads and the log dir of `merged`
symlinked    a partition folder symlinked from a second broker's log dir
replicas     two copies of one broker's log dir under one root; the second lags (a follower): read once
             by default (the longer copy), both with replicas="all"
empty        a broker log dir holding only meta.properties
bootstrap    the real corpus's Niloufar1171__LDI-POC log dir (top-level bootstrap.checkpoint), on S3
delete_records  a log dir whose log-start-offset-checkpoint says a partition's records below N were
             deleted (DeleteRecords), while the segments still hold them
copy_gaps    two brokers' copies of each partition (written by tests/kcluster.py with kafka-python's
             builders), each lacking batches the other holds -- some between two batches of a segment,
             some between two segments: every offset is read once, from a copy that holds it
"""
from __future__ import annotations

import os
import pathlib
import shutil
from dataclasses import dataclass, field

import kafkafmt

KIB = 1024
T0 = 1_767_225_600_000
LAYOUTS = ["plain", "s3", "kafka_tiered", "aiven", "aiven_encrypted", "merged", "gap", "one_root", "symlinked",
           "replicas", "empty", "bootstrap", "delete_records", "copy_gaps"]
REAL_LOG_DIR = "Niloufar1171__LDI-POC"


# --- the records: a function of (topic, partition, offset) -----------------------------------------------

def key_of(topic, partition, offset):
    return None if offset % 11 == 5 else f"{topic}/{partition}/k{offset % 23}".encode()


def value_of(topic, partition, offset):
    return f"{topic}/{partition}/{offset}|".encode() + bytes((offset * 31 + j) % 256 for j in range(offset % 97))


def rows_of(topic, partition, offsets):
    """(topic, partition, offset, key, value) of the records the writer wrote at those offsets."""
    return [(topic, partition, o, key_of(topic, partition, o), value_of(topic, partition, o)) for o in offsets]


def write_partition(folder, topic, partition, n, codec, segment_bytes=8 * KIB, batch_size=1 * KIB):
    """A partition folder as a broker lays it out; returns its rows."""
    offs = range(n)
    kafkafmt.write_log_dir(str(folder), keys=[key_of(topic, partition, o) for o in offs],
                           values=[value_of(topic, partition, o) for o in offs],
                           timestamps=[T0 + 10 * o for o in offs], compression=codec, segment_bytes=segment_bytes,
                           index_interval_bytes=1024, batch_size=batch_size)
    return rows_of(topic, partition, offs)


def write_broker_files(log_dir, node_id=1, log_start=None):
    """meta.properties and the checkpoint files a broker keeps in a log dir. ``log_start``:
    {(topic, partition): offset} for log-start-offset-checkpoint (Kafka lists a partition there when
    its log start is above its first segment, or when it is tiered)."""
    log_dir = pathlib.Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "meta.properties").write_text(f"#\n#Thu Jan 01 00:00:00 UTC 2026\nnode.id={node_id}\nversion=1\n"
                                             "cluster.id=q1Sh-9_ISia_zwGINzRvyQ\n")
    parts = sorted(p.name for p in log_dir.iterdir() if p.is_dir())
    ends = {}
    for name in parts:
        topic, _, p = name.rpartition("-")
        segs = kafkafmt.list_segments(str(log_dir / name))
        if segs and p.isdigit():
            ends[(topic, int(p))] = segment_offsets(log_dir / name)[-1][1]
    for fname in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        lines = ["0", str(len(ends))] + [f"{t} {p} {o}" for (t, p), o in sorted(ends.items())]
        (log_dir / fname).write_text("\n".join(lines) + "\n")
    log_start = log_start or {}
    lines = ["0", str(len(log_start))] + [f"{t} {p} {o}" for (t, p), o in sorted(log_start.items())]
    (log_dir / "log-start-offset-checkpoint").write_text("\n".join(lines) + "\n")


def copy_segments(src, dst, indices, side_files=True):
    """Copy the segments of partition folder ``src`` at positions ``indices`` (with their index
    files) into ``dst``; ``side_files``: also leader-epoch-checkpoint and partition.metadata."""
    dst = pathlib.Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    segs = kafkafmt.list_segments(str(src))
    for k in indices:
        stem = segs[k].log[:-len(".log")]
        for suffix in (".log", ".index", ".timeindex"):
            if os.path.exists(stem + suffix):
                shutil.copy(stem + suffix, dst / os.path.basename(stem + suffix))
    if side_files:
        for name in ("leader-epoch-checkpoint", "partition.metadata"):
            if os.path.exists(os.path.join(src, name)):
                shutil.copy(os.path.join(src, name), dst / name)
    return dst


def segment_offsets(folder):
    """[(base offset, next segment's base or log end)] of a partition folder (the log end as
    kafka-python decodes the last segment)."""
    import kpy

    segs = kafkafmt.list_segments(str(folder))
    end = kpy.kp_decode(pathlib.Path(segs[-1].log).read_bytes())["records"][-1]["offset"] + 1
    bases = [s.base_offset for s in segs]
    return list(zip(bases, bases[1:] + [end]))


#: a producer state snapshot with no producers (version 1, CRC-32C of the empty entry array): what a
#: broker uploads beside a segment that no idempotent producer wrote (the helper of test_tiered writes
#: 0-byte .snapshot objects, which no broker does)
EMPTY_PRODUCER_SNAPSHOT = bytes.fromhex("000148674bc700000000")


def kafka_tiered_objects(part_dir, topic, partition, topic_id):
    """{key: bytes} of a partition's segments as Kafka's LocalTieredStorage uploads them."""
    from test_tiered import kafka_layout_objects

    objs = kafka_layout_objects(str(part_dir), topic, partition, topic_id)
    return {k: (EMPTY_PRODUCER_SNAPSHOT if k.endswith(".snapshot") else v) for k, v in objs.items()}


def aiven_tiered_objects(part_dir, topic, partition, topic_id, prefix="", **kw):
    """{key: bytes} of a partition's segments as Aiven's RemoteStorageManager uploads them (.log,
    .indexes, .rsm-manifest; ``compress``/``chunk_size`` as test_tiered.aiven_objects)."""
    from test_tiered import _id, aiven_objects

    objs = {}
    spans = dict(segment_offsets(part_dir))
    for seg in kafkafmt.list_segments(str(part_dir)):
        stem = seg.log[:-len(".log")]
        log = pathlib.Path(seg.log).read_bytes()
        sid = _id(7000 + seg.base_offset + 100_000 * partition)
        indexes = {"offset": pathlib.Path(stem + ".index").read_bytes(),
                   "timestamp": pathlib.Path(stem + ".timeindex").read_bytes(),
                   "producerSnapshot": EMPTY_PRODUCER_SNAPSHOT, "leaderEpoch": b"0\n1\n0 0\n"}
        end = spans[seg.base_offset] - 1
        lo, ix, man = aiven_objects(log, indexes, topic=topic, partition=partition, topic_id=topic_id, segment_id=sid,
                                    base_offset=seg.base_offset, end_offset=end, **kw)
        key = f"{prefix}{topic}-{topic_id}/{partition}/{seg.base_offset:020d}-{sid}"
        objs[key + ".log"], objs[key + ".indexes"], objs[key + ".rsm-manifest"] = lo, ix, man
    return objs


def topic_id_of(folder):
    return kafkafmt.read_partition_metadata(os.path.join(str(folder), "partition.metadata"))["topic_id"]


# --- layouts -----------------------------------------------------------------------------------------

@dataclass
class Layout:
    name: str
    roots: list                      # what every door is pointed at (paths or URLs), in this order
    expected: list                   # sorted (topic, partition, offset, key, value): what every door returns
    storage_options: dict = None     # for URLs (s3fs options)
    gaps: list = field(default_factory=list)     # [(topic, partition, first missing, last missing)]
    local_twin: object = None        # the same data on local disk (S3 layouts)
    every_copy: list = None          # replicas: the rows of every copy (replicas="all"); `expected` reads each once
    log_start: dict = None           # delete_records: {(topic, partition): log start offset}
    tiered_keys: dict = None         # aiven_encrypted: {key id: PEM bytes}
    key_files: dict = None           # the same keys as files: {key id: path} (the command line's --tiered-key)
    note: str = ""

    @property
    def is_remote(self):
        return any("://" in str(r) for r in self.roots)


class Layouts:
    """Builds each layout on first use (once per module)."""

    def __init__(self, tmp_path_factory, get_s3, real_corpus=None):
        self.tmp = tmp_path_factory
        self._get_s3 = get_s3
        self._real_corpus = real_corpus
        self.built = {}
        self._base = None

    def __getitem__(self, name):
        if name not in self.built:
            self.built[name] = getattr(self, f"_build_{name}")()
        return self.built[name]

    @property
    def s3(self):
        return self._get_s3()

    # the plain log dir, also the source of s3, symlinked and replicas
    def _write_plain(self, root, lag=0):
        rows = []
        for topic, p, n, codec in (("orders", 0, 700, "none"), ("orders", 1, 600, "lz4"),
                                   ("orders", 2, 500, "zstd"), ("clicks", 0, 400, "gzip")):
            k = n - lag if (topic, p) == ("orders", 1) else n
            rows += write_partition(root / f"{topic}-{p}", topic, p, k, codec)
        write_broker_files(root)
        return sorted(rows)

    def _build_plain(self):
        root = self.tmp.mktemp("plain") / "kafka-logs"
        return Layout("plain", [str(root)], self._write_plain(root))

    def _build_s3(self):
        plain = self["plain"]
        bucket = self.s3.bucket("doors")
        self.s3.upload_dir(plain.roots[0], bucket, "broker-1/kafka-logs")
        return Layout("s3", [f"s3://{bucket}/broker-1/kafka-logs"], plain.expected,
                      storage_options=self.s3.storage_options, local_twin=plain.roots[0])

    def _events(self):
        """The partition split between tiered storage and local disk, plus partitions that are only
        local (clicks-0) or only uploaded (archive-0): (source folders, rows)."""
        if self._base is None:
            src = self.tmp.mktemp("events-src")
            rows = {("events", 3): write_partition(src / "events-3", "events", 3, 1500, "lz4", segment_bytes=6 * KIB),
                    ("clicks", 0): write_partition(src / "clicks-0", "clicks", 0, 300, "none"),
                    ("archive", 0): write_partition(src / "archive-0", "archive", 0, 350, "zstd",
                                                    segment_bytes=8 * KIB)}
            assert len(kafkafmt.list_segments(str(src / "events-3"))) >= 7
            self._base = src, rows
        return self._base

    def _tiered_and_local(self, root_local, root_remote, tiered_idx, local_idx):
        """events-3's segments ``tiered_idx`` uploaded (Kafka's layout) under ``root_remote``, its
        segments ``local_idx`` in the log dir ``root_local``; clicks-0 only local, archive-0 only
        uploaded. Returns the rows readable from both together."""
        from test_tiered import _write_local

        src, rows = self._events()
        staging = self.tmp.mktemp("staging")
        up = copy_segments(src / "events-3", staging / "events-3", tiered_idx, side_files=False)
        objs = kafka_tiered_objects(up, "events", 3, topic_id_of(src / "events-3"))
        objs.update(kafka_tiered_objects(src / "archive-0", "archive", 0, topic_id_of(src / "archive-0")))
        _write_local(pathlib.Path(root_remote) / "kafka-tiered-storage", objs)
        copy_segments(src / "events-3", pathlib.Path(root_local) / "events-3", local_idx)
        shutil.copytree(src / "clicks-0", pathlib.Path(root_local) / "clicks-0")
        # a tiered partition is listed in log-start-offset-checkpoint with its log start (in the uploads)
        write_broker_files(root_local, log_start={("events", 3): 0})
        spans = segment_offsets(src / "events-3")
        readable = set()
        for k in set(tiered_idx) | set(local_idx):
            readable.update(range(*spans[k]))
        out = [r for r in rows[("events", 3)] if r[2] in readable] + rows[("clicks", 0)] + rows[("archive", 0)]
        return sorted(out), spans

    def _build_merged(self):
        base = self.tmp.mktemp("merged")
        n = len(segment_offsets(self._events()[0] / "events-3"))
        expected, spans = self._tiered_and_local(base / "kafka-logs", base / "remote", range(0, 4), range(3, n))
        assert [r[2] for r in expected if r[:2] == ("events", 3)] == list(range(spans[-1][1]))
        return Layout("merged", [str(base / "kafka-logs"), str(base / "remote")], expected,
                      note="events-3: segments 0-3 uploaded, 3-last local (segment 3 in both)")

    def _build_gap(self):
        base = self.tmp.mktemp("gap")
        n = len(segment_offsets(self._events()[0] / "events-3"))
        expected, spans = self._tiered_and_local(base / "kafka-logs", base / "remote", range(0, 3), range(4, n))
        lo, hi = spans[3]
        return Layout("gap", [str(base / "kafka-logs"), str(base / "remote")], expected,
                      gaps=[("events", 3, lo, hi - 1)],
                      note=f"events-3: segments 0-2 uploaded, 4-last local: offsets {lo}..{hi - 1} in neither")

    def _build_one_root(self):
        base = self.tmp.mktemp("one-root") / "kafka-data"
        n = len(segment_offsets(self._events()[0] / "events-3"))
        expected, _ = self._tiered_and_local(base / "kafka-logs", base / "tiered", range(0, 4), range(3, n))
        return Layout("one_root", [str(base)], expected,
                      note="kafka-data/kafka-logs (log dir) and kafka-data/tiered/kafka-tiered-storage under one root")

    def _build_kafka_tiered(self):
        from test_tiered import _write_local

        src = self.tmp.mktemp("kt-src")
        root = self.tmp.mktemp("kafka-tiered") / "remote-storage"
        rows, objs = [], {}
        # a topic name with dashes and a dot: the partition folder is <topic>-<partition>-<topicId>
        for p, n, codec in ((0, 900, "snappy"), (1, 450, "none")):
            rows += write_partition(src / f"t.orders-v2-{p}", "t.orders-v2", p, n, codec)
            objs.update(kafka_tiered_objects(src / f"t.orders-v2-{p}", "t.orders-v2", p,
                                             topic_id_of(src / f"t.orders-v2-{p}")))
        _write_local(root / "kafka-tiered-storage", objs)
        return Layout("kafka_tiered", [str(root)], sorted(rows))

    def _build_aiven(self):
        from test_tiered import _put_all

        src = self.tmp.mktemp("aiven-src")
        bucket = self.s3.bucket("doors")
        rows = []
        for p, n, compress in ((0, 800, True), (1, 500, False)):
            rows += write_partition(src / f"page-views-{p}", "page-views", p, n, "lz4")
            _put_all(self.s3, bucket, "", aiven_tiered_objects(src / f"page-views-{p}", "page-views", p,
                                                               topic_id_of(src / f"page-views-{p}"),
                                                               prefix="tiered/", compress=compress,
                                                               chunk_size=4 * KIB))
        return Layout("aiven", [f"s3://{bucket}/tiered"], sorted(rows), storage_options=self.s3.storage_options)

    def _build_aiven_encrypted(self):
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from test_tiered import _write_local

        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        src = self.tmp.mktemp("aiven-encrypted-src")
        root = self.tmp.mktemp("aiven-encrypted")
        key_file = root.parent / f"{root.name}-kek-doors.pem"
        key_file.write_bytes(pem)
        rows = []
        objs = {}
        for p, n, compress in ((0, 600, True), (1, 300, False)):
            rows += write_partition(src / f"secrets-{p}", "secrets", p, n, "zstd")
            objs.update(aiven_tiered_objects(src / f"secrets-{p}", "secrets", p, topic_id_of(src / f"secrets-{p}"),
                                             compress=compress, chunk_size=4 * KIB,
                                             encrypt_with=("kek-doors", private.public_key())))
        _write_local(root, objs)
        return Layout("aiven_encrypted", [str(root)], sorted(rows), tiered_keys={"kek-doors": pem},
                      key_files={"kek-doors": str(key_file)})

    def _build_symlinked(self):
        base = self.tmp.mktemp("symlinked")
        b1, b2 = base / "broker-1", base / "broker-2"
        rows = write_partition(b1 / "orders-0", "orders", 0, 600, "lz4")
        rows += write_partition(b1 / "clicks-0", "clicks", 0, 200, "none")
        rows += write_partition(b2 / "payments-0", "payments", 0, 250, "zstd")
        os.symlink("../broker-1/orders-0", b2 / "orders-0")
        write_broker_files(b1, node_id=1)
        write_broker_files(b2, node_id=2)
        return Layout("symlinked", [str(base)], sorted(rows), note="broker-2/orders-0 -> ../broker-1/orders-0")

    def _build_replicas(self):
        base = self.tmp.mktemp("replicas")
        a = self._write_plain(base / "copy-a" / "kafka-logs")
        b = self._write_plain(base / "copy-b" / "kafka-logs", lag=37)      # a follower 37 records behind
        assert len(b) == len(a) - 37
        return Layout("replicas", [str(base)], sorted(a), every_copy=sorted(a + b),
                      note="copy-a/kafka-logs and copy-b/kafka-logs, copy-b's orders-1 37 records shorter")

    def _build_empty(self):
        root = self.tmp.mktemp("empty") / "kafka-logs"
        write_broker_files(root)
        for f in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint"):
            (root / f).unlink()
        assert [p.name for p in root.iterdir()] == ["meta.properties"]
        return Layout("empty", [str(root)], [])

    def _build_bootstrap(self):
        import kpy

        if self._real_corpus is None:
            import pytest
            pytest.skip("real corpus not found")
        local = self.tmp.mktemp("bootstrap") / REAL_LOG_DIR
        shutil.copytree(pathlib.Path(self._real_corpus) / "broker-dirs" / REAL_LOG_DIR, local)
        assert (local / "bootstrap.checkpoint").is_file()
        rows = []
        for folder in sorted(p for p in local.iterdir() if p.is_dir()):
            topic, _, p = folder.name.rpartition("-")
            for log in sorted(folder.glob("*.log")):
                for r in kpy.kp_decode(log.read_bytes())["records"]:
                    rows.append((topic, int(p), r["offset"], r["key"], r["value"]))
        assert len(rows) > 4000
        bucket = self.s3.bucket("doors")
        self.s3.upload_dir(str(local), bucket, "kafka-logs")
        return Layout("bootstrap", [f"s3://{bucket}/kafka-logs"], sorted(rows), storage_options=self.s3.storage_options,
                      local_twin=str(local))

    def _build_delete_records(self):
        root = self.tmp.mktemp("delete-records") / "kafka-logs"
        rows = write_partition(root / "audit-0", "audit", 0, 900, "none", segment_bytes=12 * KIB)
        rows += write_partition(root / "audit-1", "audit", 1, 300, "none", segment_bytes=12 * KIB)
        # DeleteRecords(audit-0, N): the log start moves to N at once; segments wholly below N are
        # removed later by the broker, so here they are still on disk. N is inside a batch of the
        # second segment.
        spans = segment_offsets(root / "audit-0")
        import kpy

        second = pathlib.Path(kafkafmt.list_segments(str(root / "audit-0"))[1].log)
        batch = kpy.kp_decode(second.read_bytes())["batches"][2]
        n = batch["base_offset"] + 3
        assert spans[1][0] < n < spans[1][1] and n <= batch["last_offset"]
        write_broker_files(root, log_start={("audit", 0): n})
        expected = [r for r in rows if (r[0], r[1]) != ("audit", 0) or r[2] >= n]
        return Layout("delete_records", [str(root)], sorted(expected), log_start={("audit", 0): n},
                      note=f"log-start-offset-checkpoint: audit 0 {n}")


    def _build_copy_gaps(self):
        import kcluster

        base = self.tmp.mktemp("copy_gaps")
        c = kcluster.write_cluster(base, {"pay": (2, 2)}, brokers=2, seed=5, records=120, segment_bytes=1500,
                                   behind=0.0, empty=0.0, leader_change=0.0, spread=False)
        lacking = []
        for (topic, p), part in sorted(c.parts.items()):
            n = len(part.batches)
            one, other = part.replicas if p == 0 else part.replicas[::-1]
            # one copy lacks batches inside its segments; the other, one batch a segment, lacks others. In pay-0
            # the copy read (the other lacks the last batch) also lacks its first batch (a recovery's cut: its log
            # start offset is 0)
            skips = ((one, [0, 2, n // 2], 1500), (other, [4, n - 2, n - 1], 1)) if p == 0 else \
                ((one, [2, n // 2], 1500), (other, [4, n - 2], 1))
            lacking += [(topic, p, b, kcluster.drop_batches(c, b, topic, p, skip, segment_bytes=sb))
                        for b, skip, sb in skips]
        rows = sorted((t, p, r.offset, r.key, r.value) for (t, p), recs in c.truth().items() for r in recs)
        note = "; ".join(f"broker-{b}'s {t}-{p} lacks {len(o)} offsets" for t, p, b, o in lacking)
        return Layout("copy_gaps", [str(base)], rows, note=note)
