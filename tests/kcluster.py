"""A Kafka cluster's log dirs written without kafkafmt: several brokers, each partition copied on some of
them, for the tests and the benchmarks (asv_bench/benchmarks/bench_cluster.py imports this file).

Every byte comes from kafka-python's builders (`kpy.build_v2`: ``DefaultRecordBatchBuilder``) and from this
module's own writers of the side files, placed as a broker places them:

* segments rolled at ``segment_bytes`` (a batch that would not fit starts a new segment, as
  ``UnifiedLog.maybeRoll``), named by their base offset;
* ``.index`` / ``.timeindex`` entries as ``LogSegment.append`` writes them (an entry when more than
  ``index.interval.bytes`` were appended since the last one: the batch's last offset and its position; the
  time index the largest timestamp so far and the last offset of the batch holding it), and the rolled
  segment's last time-index entry as ``onBecomeInactiveSegment`` appends it;
* ``partition.metadata`` (KIP-516: ``version: 0`` / ``topic_id: <base64 uuid>``), ``leader-epoch-checkpoint``
  (version 0, then ``epoch start-offset`` lines);
* per log dir ``meta.properties``, ``.lock``, and the offset checkpoints ``replication-offset-checkpoint``
  (the high watermark each broker knows), ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``.

A partition's copies are its leader's batches, byte for byte (a follower appends the batches it fetched);
a follower behind its leader holds a prefix of them. `Cluster.truth` is what was written to the leader --
the reference the readers are held against -- never anything kafkafmt read.

Damage a test can do to a copy afterwards: `flip_byte` (a batch body: its CRC fails), `truncate_copy`
(a stale follower), `diverge_copy` (a former leader's uncommitted tail), `other_incarnation` (a folder of a
deleted topic with another topic id), `stray_overlap` (the second half of a segment saved as its own file).
"""
from __future__ import annotations

import base64
import dataclasses
import os
import random
import shutil
import struct
import uuid

import kpy
from kpy import Rec

INDEX_INTERVAL = 4096               # index.interval.bytes (Kafka's default)
SEGMENT_BYTES = 64 << 10            # small segments: several per partition at test sizes
T0 = 1_767_225_600_000              # 2026-01-01T00:00:00Z
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclasses.dataclass
class Batch:
    """One batch of a partition's log: its bytes, first and last offset, leader epoch, max timestamp."""
    data: bytes
    base: int
    last: int
    epoch: int
    max_ts: int
    records: list


@dataclasses.dataclass
class Part:
    """A partition: its topic id, its replicas (broker ids, the first its leader), the leader's batches
    and how many of them each broker's copy holds, and the high watermark."""
    topic: str
    partition: int
    topic_id: str
    replicas: list
    batches: list
    held: dict                  # broker id -> batches its copy holds (a prefix of the leader's)
    hw: int = 0

    @property
    def name(self):
        return f"{self.topic}-{self.partition}"

    @property
    def end(self):
        return self.batches[-1].last + 1 if self.batches else 0

    def records(self, upto=None):
        """The leader's records (every offset once), up to the offset ``upto`` (exclusive)."""
        out = [r for b in self.batches for r in b.records]
        return out if upto is None else [r for r in out if r.offset < upto]


@dataclasses.dataclass
class Cluster:
    """What `write_cluster` wrote: ``root``, the log dir of each broker (``dirs``), the partitions."""
    root: str
    dirs: dict
    parts: dict                  # (topic, partition) -> Part

    def folder(self, broker, topic, partition):
        return os.path.join(self.dirs[broker], f"{topic}-{partition}")

    def copies(self, topic, partition):
        return [self.folder(b, topic, partition) for b in self.parts[(topic, partition)].replicas]

    def truth(self, topics=None):
        """{(topic, partition): [Rec...]} of every partition's leader: the records a read must give."""
        return {k: p.records() for k, p in self.parts.items() if topics is None or k[0] in topics}

    def count(self, topics=None):
        return sum(len(v) for v in self.truth(topics).values())


def topic_id(rng):
    """A topic id as Kafka writes it in partition.metadata: a random UUID in URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(uuid.UUID(int=rng.getrandbits(128)).bytes).decode().rstrip("=")


def _value(rng, i):
    return (b'{"n":%d,"pad":"' % i) + bytes(rng.choice(b"abcdefgh") for _ in range(rng.randint(8, 40))) \
        + b"abcdabcd" * 6 + b'"}'


def make_batches(rng, n_records, codec, *, epochs=(0,), t0=T0, first_offset=0, producers=0):
    """The batches of a partition's log holding ``n_records`` records: 1..20 records a batch, leader epochs
    growing along the log (``epochs``: the epochs the log passes through, each from an offset on); with
    ``producers``, each batch written by one of that many idempotent producers (ids 1000 on, their
    sequences counted), else by none (producer id -1)."""
    batches, offset, ts = [], first_offset, t0
    sequences = {}
    cuts = sorted(rng.sample(range(first_offset + 1, first_offset + max(n_records, 2)), len(epochs) - 1)) \
        if n_records > len(epochs) else []
    while offset < first_offset + n_records:
        n = min(rng.randint(1, 20), first_offset + n_records - offset)
        epoch = epochs[sum(1 for c in cuts if c <= offset)]
        recs = []
        for k in range(n):
            ts += rng.randint(0, 50)
            key = None if rng.random() < 0.1 else b"key-%d" % rng.randint(0, 99)
            headers = (("h", b"v"),) if rng.random() < 0.1 else ()
            recs.append(Rec(offset + k, ts, key, _value(rng, offset + k), headers))
        idempotent = {}
        if producers:
            pid = 1000 + rng.randrange(producers)
            idempotent = dict(producer_id=pid, producer_epoch=0, base_sequence=sequences.get(pid, 0))
            sequences[pid] = idempotent["base_sequence"] + n
        data = kpy.build_v2(recs, codec, partition_leader_epoch=epoch, require_codec=False, **idempotent)
        batches.append(Batch(data, offset, offset + n - 1, epoch, max(r.timestamp for r in recs), recs))
        offset += n
    return batches


def _segments(batches, segment_bytes):
    """The batches cut into segments as a broker rolls them: [(base offset, [batches])]."""
    out, cur, size = [], [], 0
    for b in batches:
        if cur and size + len(b.data) > segment_bytes:
            out.append((cur[0].base, cur))
            cur, size = [], 0
        cur.append(b)
        size += len(b.data)
    if cur:
        out.append((cur[0].base, cur))
    return out


def _index_files(base, batches, rolled):
    """(.index bytes, .timeindex bytes) of a segment, as LogSegment.append writes them."""
    index, timeindex = bytearray(), bytearray()
    since, pos = 0, 0
    max_ts, ts_offset, last_ts = -1, base, None
    for b in batches:
        if b.max_ts > max_ts:
            max_ts, ts_offset = b.max_ts, b.last
        if since > INDEX_INTERVAL:
            index += struct.pack(">ii", b.last - base, pos)
            if last_ts is None or max_ts > last_ts:
                timeindex += struct.pack(">qi", max_ts, ts_offset - base)
                last_ts = max_ts
            since = 0
        pos += len(b.data)
        since += len(b.data)
    if rolled and batches and (last_ts is None or max_ts > last_ts):
        timeindex += struct.pack(">qi", max_ts, ts_offset - base)
    return bytes(index), bytes(timeindex)


def _write(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def write_copy(folder, part, n_batches, segment_bytes=SEGMENT_BYTES, skip=()):
    """A broker's copy of a partition: the first ``n_batches`` of its leader's batches, rolled and indexed
    (``skip``: indexes of batches it lacks)."""
    os.makedirs(folder, exist_ok=True)
    batches = [b for i, b in enumerate(part.batches[:n_batches]) if i not in skip]
    segs = _segments(batches, segment_bytes) or [(0, [])]
    for k, (base, segment) in enumerate(segs):
        stem = os.path.join(folder, f"{base:020d}")
        _write(stem + ".log", b"".join(b.data for b in segment))
        index, timeindex = _index_files(base, segment, rolled=k + 1 < len(segs))
        _write(stem + ".index", index)
        _write(stem + ".timeindex", timeindex)
    _write(os.path.join(folder, "partition.metadata"), f"version: 0\ntopic_id: {part.topic_id}".encode())
    starts = []
    for b in batches:
        if not starts or b.epoch != starts[-1][0]:
            starts.append((b.epoch, b.base))
    _write(os.path.join(folder, "leader-epoch-checkpoint"),
           (f"0\n{len(starts)}\n" + "".join(f"{e} {o}\n" for e, o in starts)).encode())


def _checkpoint(path, entries):
    _write(path, (f"0\n{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(entries.items())))
           .encode())


def write_log_dir_files(log_dir, broker, cluster_id, hw, recovery, starts):
    """A log dir's own files: meta.properties, .lock, the offset checkpoints."""
    os.makedirs(log_dir, exist_ok=True)
    _write(os.path.join(log_dir, "meta.properties"),
           f"#\nversion=0\nbroker.id={broker}\ncluster.id={cluster_id}\n".encode())
    _write(os.path.join(log_dir, ".lock"), b"")
    _checkpoint(os.path.join(log_dir, "replication-offset-checkpoint"), hw)
    _checkpoint(os.path.join(log_dir, "recovery-point-offset-checkpoint"), recovery)
    _checkpoint(os.path.join(log_dir, "log-start-offset-checkpoint"), starts)


def write_cluster(root, topics, *, brokers=3, records=146, seed=0, behind=0.15, segment_bytes=SEGMENT_BYTES,
                  empty=0.0, leader_change=0.3, spread=True, producers=0):
    """Write a cluster's log dirs under ``root`` (``broker-<id>/kafka-logs``).

    Parameters
    ----------
    topics : dict
        ``{topic: (partitions, replication factor)}``; a topic's codec is taken in turn from `CODECS`.
    brokers : int
        Broker ids 1..brokers; replicas are placed round robin (the leader first).
    records : int
        About how many records a partition holds (1..2x, at random; exactly that many with ``spread=False``).
    behind : float
        The share of follower copies behind their leader (they hold a prefix of its batches).
    empty : float
        The share of partitions without records.
    leader_change : float
        The share of partitions whose log passes a leader change (a second leader epoch).
    producers : int
        Idempotent producers writing each partition's batches (`make_batches`); none by default.
    """
    rng = random.Random(seed)
    dirs = {b: os.path.join(root, f"broker-{b}", "kafka-logs") for b in range(1, brokers + 1)}
    parts = {}
    hw = {b: {} for b in dirs}
    rec = {b: {} for b in dirs}
    starts = {b: {} for b in dirs}
    slot = 0
    for t_index, (topic, (n_parts, rf)) in enumerate(sorted(topics.items())):
        codec = CODECS[t_index % len(CODECS)]
        tid = topic_id(rng)
        for p in range(n_parts):
            replicas = [(slot + k) % brokers + 1 for k in range(min(rf, brokers))]
            slot += 1
            n = 0 if rng.random() < empty else (rng.randint(1, 2 * records) if spread else records)
            epochs = (0, rng.randint(1, 5)) if rng.random() < leader_change else (0,)
            batches = make_batches(rng, n, codec, epochs=epochs, t0=T0 + p * 1000, producers=producers)
            held = {replicas[0]: len(batches)}
            for f in replicas[1:]:
                held[f] = rng.randint(0, len(batches) - 1) if batches and rng.random() < behind else len(batches)
            part = Part(topic, p, tid, replicas, batches, held)
            # the high watermark: the end of the in-sync copies (a copy behind is out of the ISR)
            part.hw = part.end
            parts[(topic, p)] = part
            for b in replicas:
                folder = os.path.join(dirs[b], f"{topic}-{p}")
                write_copy(folder, part, held[b], segment_bytes)
                end = batches[held[b] - 1].last + 1 if held[b] else 0
                hw[b][(topic, p)] = min(end, part.hw)
                rec[b][(topic, p)] = end
                starts[b][(topic, p)] = 0
    cluster_id = base64.urlsafe_b64encode(uuid.UUID(int=rng.getrandbits(128)).bytes).decode().rstrip("=")
    for b, d in dirs.items():
        write_log_dir_files(d, b, cluster_id, hw[b], rec[b], starts[b])
    return Cluster(str(root), dirs, parts)


# ----------------------------------------------------------------------------------------------
# damage a test does to one copy

def segment_files(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".log"))


def batch_positions(path):
    """[(position, size, base offset, last offset)] of the v2 batches of a segment file (read with struct)."""
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        delta = struct.unpack_from(">i", data, pos + 23)[0]
        out.append((pos, 12 + length, base, base + delta))
        pos += 12 + length
    return out


def flip_byte(folder, batch=None, segment=0):
    """Flip one byte inside the body of a batch of a copy (its CRC then fails); returns (base, last) of
    that batch. ``batch``: which batch of the segment (default: a middle one)."""
    path = os.path.join(folder, segment_files(folder)[segment])
    rows = batch_positions(path)
    pos, size, base, last = rows[len(rows) // 2 if batch is None else batch]
    with open(path, "r+b") as f:
        f.seek(pos + size - 3)
        b = f.read(1)
        f.seek(pos + size - 3)
        f.write(bytes([b[0] ^ 0x5A]))
    return base, last


def drop_batches(cluster, broker, topic, partition, skip, segment_bytes=SEGMENT_BYTES):
    """Write a broker's copy of a partition again without the batches at indexes ``skip`` of its leader's log
    (rolled and indexed as before: a range a recovery cut, batches its log cleaner dropped); returns the
    offsets it lacks."""
    part = cluster.parts[(topic, partition)]
    folder = cluster.folder(broker, topic, partition)
    for name in os.listdir(folder):
        if name.endswith((".log", ".index", ".timeindex")):
            os.remove(os.path.join(folder, name))
    write_copy(folder, part, part.held[broker], segment_bytes, skip=set(skip))
    return [r.offset for i in skip for r in part.batches[i].records]


def truncate_copy(folder, keep_batches):
    """Cut a copy to its first ``keep_batches`` batches (a stale follower): later segments removed."""
    kept = 0
    for name in segment_files(folder):
        path = os.path.join(folder, name)
        rows = batch_positions(path)
        if kept >= keep_batches:
            for suffix in (".log", ".index", ".timeindex"):
                p = path[:-4] + suffix
                if os.path.exists(p):
                    os.remove(p)
            continue
        take = rows[:keep_batches - kept]
        kept += len(take)
        end = take[-1][0] + take[-1][1] if take else 0
        with open(path, "r+b") as f:
            f.truncate(end)


def other_incarnation(folder, rng_seed=7, first_offset=500, n_records=100, codec="none"):
    """Replace a copy by a partition of an older incarnation of its topic (another topic id, offsets
    ``first_offset``.., as retention left them); returns (topic id, [Rec...])."""
    rng = random.Random(rng_seed)
    shutil.rmtree(folder)
    name = os.path.basename(folder)
    topic, partition = name.rsplit("-", 1)
    part = Part(topic, int(partition), topic_id(rng), [], make_batches(rng, n_records, codec, t0=T0 - 10 ** 9,
                                                                     first_offset=first_offset), {})
    write_copy(folder, part, len(part.batches))
    return part.topic_id, part.records()


def stray_overlap(folder, segment=0, differ=False):
    """Save the second half of a segment's batches as a segment of its own (named by its first batch's
    base offset): the same offsets in two files -- with other records when ``differ`` (a byte of the first
    batch's last record changed, its CRC computed again: intact, but not the same). Returns (the new file, its
    first and last offsets)."""
    path = os.path.join(folder, segment_files(folder)[segment])
    rows = batch_positions(path)
    half = rows[len(rows) // 2:]
    data = bytearray(open(path, "rb").read()[half[0][0]:])
    if differ:
        at = bytes(data[:half[0][1]]).rfind(b"abcdabcd")     # inside a value (uncompressed batches)
        data[at] ^= 0x01
        kpy.fix_crc_v2(data, 0)
    new = os.path.join(folder, f"{half[0][2]:020d}.log")
    _write(new, bytes(data))
    return new, half[0][2], half[-1][3]


def set_high_watermark(log_dir, topic, partition, hw):
    """Rewrite one entry of a log dir's replication-offset-checkpoint (the high watermark its broker knows)."""
    path = os.path.join(log_dir, "replication-offset-checkpoint")
    lines = open(path).read().split("\n")
    entries = {}
    for line in lines[2:]:
        if line.strip():
            t, p, o = line.rsplit(" ", 2)
            entries[(t, int(p))] = int(o)
    entries[(topic, partition)] = hw
    _checkpoint(path, entries)


def diverge_copy(cluster, broker, topic, partition, seed=11):
    """Make a broker's copy a former leader's: the leader's batches up to where its last leader epoch begins,
    then batches of its own at the older epoch (records never committed: its high watermark is where they
    start). Returns the first offset where the copy parts from the leader's log."""
    part = cluster.parts[(topic, partition)]
    last_epoch = part.batches[-1].epoch
    keep = next(i for i, b in enumerate(part.batches) if b.epoch == last_epoch)
    if keep == 0:
        raise ValueError(f"{part.name} has one leader epoch: nothing to diverge from")
    start = part.batches[keep].base
    own = make_batches(random.Random(seed), 12, "none", epochs=(part.batches[keep - 1].epoch,),
                       t0=part.batches[keep].records[0].timestamp, first_offset=start)
    folder = cluster.folder(broker, topic, partition)
    shutil.rmtree(folder)
    write_copy(folder, dataclasses.replace(part, batches=part.batches[:keep] + own), keep + len(own))
    set_high_watermark(cluster.dirs[broker], topic, partition, start)
    return start


def _uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def topic_record(name, tid):
    """A KRaft TopicRecord (api key 2, version 0) framed as MetadataRecordSerde writes it: frame version 1,
    api key, version, then the message (flexible: compact string name, 16-byte UUID, no tagged fields)."""
    raw = base64.urlsafe_b64decode(tid + "==")
    return (_uvarint(1) + _uvarint(2) + _uvarint(0) + _uvarint(len(name.encode()) + 1) + name.encode() + raw
            + _uvarint(0))


def write_metadata_log(log_dir, topics, t0=T0):
    """A KRaft ``__cluster_metadata-0`` in ``log_dir`` holding one TopicRecord per topic ({name: topic id})."""
    folder = os.path.join(log_dir, "__cluster_metadata-0")
    os.makedirs(folder, exist_ok=True)
    recs = [Rec(i, t0 + i, None, topic_record(name, tid)) for i, (name, tid) in enumerate(sorted(topics.items()))]
    _write(os.path.join(folder, f"{0:020d}.log"), kpy.build_v2(recs, 0))
    _write(os.path.join(folder, "partition.metadata"), b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
