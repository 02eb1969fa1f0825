"""Deterministic benchmark corpora and log directories, written by kafkafmt's own writer, cached on disk.

Corpora (``NAMES``) are buffers of entries exactly as they sit in a log segment (``int64 offset,
int32 length, ...``), so ``kafkafmt.decode``, aiokafka's and kafka-python's ``MemoryRecords`` all
read the same bytes:

* magic 2, every codec (``none gzip snappy lz4 zstd``): 40 000 records in batches of 450..550
  records; ``zstd-small``, ``lz4-small``, ``snappy-small`` and ``gzip-small``: 20 000 records in batches of
  1..10 records (the per-batch overhead: what a low-latency producer with ``linger.ms=0`` writes);
* magic 1 and magic 0 (``v1-none v1-gzip v1-snappy v1-lz4``, ``v0-...``): the same 40 000 records
  without headers; uncompressed messages are one entry each, compressed wrappers hold 450..550
  messages (v1: relative inner offsets; v0: absolute; v0 lz4 with KAFKA-3160's header checksum).

Records (fixed seeds, fixed timestamps: identical bytes on every generation with the same codec
library versions):

* values: JSON-like event documents, ~257 bytes on average (200..300);
* keys: 16 random bytes, ~5 % null;
* headers (magic 2): 2 headers (``trace-id``, ``content-type``) on ~20 % of the records;
* timestamps: a millisecond clock from 2026-11 advancing 0..2 ms per record plus +-50 ms jitter, so
  deltas inside a batch are sometimes negative and a batch's max timestamp is not its last one's;
* offsets from 5_000_000_000 (beyond 2**31), contiguous; v2 batches carry partition leader
  epoch 17 and idempotent-producer fields (producer id 4242, epoch 3, running base sequence).

Every batch is made by one ``kafkafmt.encode(..., max_records=n, batch_size=2**30)`` call (that is
how the batch sizes vary), with the writer's default codec settings -- the frames Kafka's Java
clients write: gzip via ISA-L (level 2, no mtime: deterministic), xerial snappy with 32 KiB
blocks, lz4 frames of independent 64 KiB blocks *without* a content size, zstd level 3 with a
content size.  At generation time kafka-python (an independent implementation) must decode each
corpus to the expected number of records, first and last offsets -- a corpus that only kafkafmt
can read would prove nothing.

Log directories (``log_dir(name)``), written once by ``kafkafmt.LogWriter`` / ``write_log_dir``:

* ``seek``: one partition ``events-0``, 200 000 records (the same generator), lz4, ~500-record
  batches, ~50 segments with ``.index``/``.timeindex`` (index.interval.bytes 4096);
* ``cluster``: a broker's log dir with two topics x 4 partitions (``orders`` lz4, ``clicks``
  zstd), 20 000 records per partition in 4 segments each (one append per ~500-record producer
  batch), plus the files a broker keeps beside them (``meta.properties``, checkpoints) that a
  reader must skip.

Cache: ``asv_bench/.corpus/v<CORPUS_VERSION>/`` (or ``$KAFKAFMT_BENCH_CORPUS_DIR``; falls back to
the system temp dir when the benchmark directory is not writable).  Bump ``CORPUS_VERSION``
whenever generation changes.

``python -m benchmarks.corpus`` (from ``asv_bench/``) regenerates everything and prints statistics;
``python -m benchmarks.corpus --check`` generates every corpus and log dir twice in one process
and asserts the bytes are identical (and equal to the cached ones).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import random
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

CORPUS_VERSION = "2"

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

#: record sets: name -> (number of records, seed, with headers)
RECORD_SETS = {
    "large": (40_000, 1001, True),
    "small": (20_000, 1006, True),
    "seek": (200_000, 2001, True),
}

#: corpus name -> (magic, codec, record set, (min, max) records per batch / wrapper, batch seed)
CORPORA = {
    "none": (2, "none", "large", (450, 550), 11),
    "gzip": (2, "gzip", "large", (450, 550), 11),
    "snappy": (2, "snappy", "large", (450, 550), 11),
    "lz4": (2, "lz4", "large", (450, 550), 11),
    "zstd": (2, "zstd", "large", (450, 550), 11),
    "zstd-small": (2, "zstd", "small", (1, 10), 12),
    "lz4-small": (2, "lz4", "small", (1, 10), 12),
    "snappy-small": (2, "snappy", "small", (1, 10), 12),
    "gzip-small": (2, "gzip", "small", (1, 10), 12),
    "v1-none": (1, "none", "large", (450, 550), 11),
    "v1-gzip": (1, "gzip", "large", (450, 550), 11),
    "v1-snappy": (1, "snappy", "large", (450, 550), 11),
    "v1-lz4": (1, "lz4", "large", (450, 550), 11),
    "v0-none": (0, "none", "large", (450, 550), 11),
    "v0-gzip": (0, "gzip", "large", (450, 550), 11),
    "v0-snappy": (0, "snappy", "large", (450, 550), 11),
    "v0-lz4": (0, "lz4", "large", (450, 550), 11),
}
#: the parameter list of the per-corpus benchmarks
NAMES = list(CORPORA)
V2_NAMES = [n for n in NAMES if CORPORA[n][0] == 2]
LEGACY_NAMES = [n for n in NAMES if CORPORA[n][0] < 2]

BASE_OFFSET = 5_000_000_000          # > 2**31
LEADER_EPOCH = 17
PRODUCER_ID = 4242
PRODUCER_EPOCH = 3
FIRST_TIMESTAMP_MS = 1_793_500_000_000   # 2026-11

# v2 batch header layout
HEADER_SIZE = 61                     # records payload (compressed or not) starts here
_MAGIC_AT = 16
_ATTRIBUTES_AT = 21

_EVENTS = ["page_view", "add_to_cart", "checkout", "search", "login", "logout", "click", "scroll"]
_COUNTRIES = ["DE", "US", "FR", "BR", "IN", "JP", "GB", "NL", "SE", "ES", "IT", "PL"]
_DEVICES = ["ios", "android", "web", "desktop"]
_PATHS = ["/", "/products", "/cart", "/checkout", "/search", "/account", "/help", "/blog/posts"]
_WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
          "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------

def _value(rng: random.Random, seq: int, ts: int) -> bytes:
    """A JSON-like event document of ~250 bytes (about 200..300)."""
    n_tags = rng.randint(0, 4)
    doc = (
        '{"event_id":%d,"type":"%s","user_id":%d,"session":"%016x","ts":%d,'
        '"country":"%s","device":"%s","path":"%s/%d","amount":%d.%02d,'
        '"tags":[%s],"note":"%s"}'
        % (
            seq,
            rng.choice(_EVENTS),
            rng.randrange(1, 50_000_000),
            rng.getrandbits(64),
            ts,
            rng.choice(_COUNTRIES),
            rng.choice(_DEVICES),
            rng.choice(_PATHS),
            rng.randrange(100_000),
            rng.randrange(1000),
            rng.randrange(100),
            ",".join('"%s"' % rng.choice(_WORDS) for _ in range(n_tags)),
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 14))),
        )
    )
    return doc.encode()


def generate_records(n: int, seed: int, with_headers: bool = True, first_ts: int = FIRST_TIMESTAMP_MS) -> dict:
    """``n`` records as plain Python lists: keys (bytes | None), values (bytes), timestamps (int
    ms), headers (list of (str, bytes), empty for most records)."""
    rng = random.Random(seed)
    keys, values, timestamps, headers = [], [], [], []
    clock = first_ts
    for seq in range(n):
        clock += rng.randint(0, 2)
        ts = clock + rng.randint(-50, 50)
        keys.append(None if rng.random() < 0.05 else rng.randbytes(16))
        values.append(_value(rng, seq, ts))
        timestamps.append(ts)
        if with_headers and rng.random() < 0.20:
            headers.append([("trace-id", b"%032x" % rng.getrandbits(128)),
                            ("content-type", b"application/json")])
        else:
            headers.append([])
    return {"keys": keys, "values": values, "timestamps": timestamps, "headers": headers}


_records_memo: dict[str, dict] = {}


def records(name: str) -> dict:
    """Record set ``name`` (``RECORD_SETS``) as lists; cached on disk as a pickle."""
    if name in _records_memo:
        return _records_memo[name]
    path = cache_dir() / ("records-%s.pkl" % name)
    recs = None
    if path.exists():
        try:
            with open(path, "rb") as f:
                recs = pickle.load(f)
        except Exception:  # noqa: BLE001 - a damaged cache file is regenerated
            recs = None
    if recs is None:
        n, seed, with_headers = RECORD_SETS[name]
        recs = generate_records(n, seed, with_headers)
        _atomic_write(path, pickle.dumps(recs, protocol=pickle.HIGHEST_PROTOCOL))
    _records_memo[name] = recs
    return recs


def batch_sizes(n: int, bounds: tuple[int, int], seed: int) -> list[int]:
    """Records per batch: uniform in ``bounds``, summing to ``n`` (the last one may be shorter)."""
    rng = random.Random(seed)
    sizes, done = [], 0
    while done < n:
        count = min(rng.randint(*bounds), n - done)
        sizes.append(count)
        done += count
    return sizes


# ---------------------------------------------------------------------------------------------
# corpora
# ---------------------------------------------------------------------------------------------

def encode_batches(recs: dict, sizes, *, magic: int, codec: str, base_offset: int = BASE_OFFSET) -> bytes:
    """kafkafmt.encode, one call per batch (``max_records`` = its size), as one buffer."""
    import kafkafmt

    parts = []
    start = 0
    keys, values, timestamps, headers = recs["keys"], recs["values"], recs["timestamps"], recs["headers"]
    for count in sizes:
        end = start + count
        kw = dict(keys=keys[start:end], values=values[start:end], magic=magic, compression=codec,
                  max_records=count, batch_size=1 << 30, base_offset=base_offset + start)
        if magic >= 1:
            kw["timestamps"] = timestamps[start:end]
        if magic == 2:
            kw.update(headers=headers[start:end], producer_id=PRODUCER_ID, producer_epoch=PRODUCER_EPOCH,
                      base_sequence=start % (1 << 31), partition_leader_epoch=LEADER_EPOCH)
        parts.append(kafkafmt.encode(**kw))
        start = end
    return b"".join(parts)


def generate(name: str) -> tuple[bytes, dict]:
    """Build corpus ``name`` with kafkafmt's writer; returns (buffer, metadata)."""
    magic, codec, record_set, bounds, seed = CORPORA[name]
    recs = records(record_set)
    n = len(recs["values"])
    sizes = batch_sizes(n, bounds, seed)
    buf = encode_batches(recs, sizes, magic=magic, codec=codec)
    entries = split_batches(buf)
    n_compressed = sum(1 for c, _ in compressed_payloads(buf) if c)
    meta = {
        "name": name,
        "magic": magic,
        "codec": codec,
        "corpus_version": CORPUS_VERSION,
        "records": n,
        "batches": len(sizes) if (magic == 2 or codec != "none") else n,
        "entries": len(entries),
        "compressed_batches": n_compressed,
        "null_keys": sum(k is None for k in recs["keys"]),
        "records_with_headers": sum(1 for h in recs["headers"] if h) if magic == 2 else 0,
        "value_bytes": sum(map(len, recs["values"])),
        "bytes": len(buf),
        "first_offset": BASE_OFFSET,
        "last_offset": BASE_OFFSET + n - 1,
        "sha256": hashlib.sha256(buf).hexdigest(),
        "writer": "kafkafmt.encode",
        "libraries": _library_versions(),
    }
    if len(entries) != meta["batches"] or sum(len(buf[s:e]) for s, e in entries) != len(buf):
        raise AssertionError("%s: %d entries, expected %d" % (name, len(entries), meta["batches"]))
    cross_check(buf, meta)
    return buf, meta


def cross_check(buf, meta) -> None:
    """kafka-python, an independent implementation, must read the corpus: same record count,
    first and last offsets, and every batch CRC valid."""
    from kafka.record.memory_records import MemoryRecords

    mr = MemoryRecords(bytes(buf))
    n, first, last = 0, None, None
    batch = mr.next_batch()
    while batch is not None:
        if not batch.validate_crc():
            raise AssertionError("%s: kafka-python finds a CRC mismatch" % meta["name"])
        for r in batch:
            if first is None:
                first = r.offset
            last = r.offset
            n += 1
        batch = mr.next_batch()
    if (n, first, last) != (meta["records"], meta["first_offset"], meta["last_offset"]):
        raise AssertionError("%s: kafka-python decodes %d records [%s..%s], expected %d [%d..%d]"
                             % (meta["name"], n, first, last, meta["records"], meta["first_offset"],
                                meta["last_offset"]))


def _library_versions() -> dict:
    versions = {"python": sys.version.split()[0]}
    for mod in ("kafkafmt", "kafka", "isal", "lz4", "zstandard", "cramjam"):
        try:
            m = __import__(mod)
            versions[mod] = getattr(m, "__version__", "?")
        except Exception:  # pragma: no cover - informational only
            pass
    return versions


def cache_dir() -> Path:
    env = os.environ.get("KAFKAFMT_BENCH_CORPUS_DIR")
    d = Path(env) if env else Path(__file__).resolve().parent.parent / ".corpus"
    d = d / ("v" + CORPUS_VERSION)
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / (".probe.%d" % os.getpid())
        probe.write_bytes(b"")
        probe.unlink()
    except OSError:
        d = Path(tempfile.gettempdir()) / ("kafkafmt-bench-corpus-v" + CORPUS_VERSION)
        d.mkdir(parents=True, exist_ok=True)
    return d


def _atomic_write(path: Path, data: bytes) -> None:
    # several asv processes may race on the first run
    tmp = path.with_name(path.name + ".%d.tmp" % os.getpid())
    tmp.write_bytes(data)
    os.replace(tmp, path)


_memo: dict[str, tuple[bytes, dict]] = {}


def load(name: str) -> tuple[bytes, dict]:
    """Return (buffer, metadata) of corpus ``name``, generating and caching it if needed."""
    if name in _memo:
        return _memo[name]
    if name not in CORPORA:
        raise KeyError("unknown corpus %r (one of %s)" % (name, ", ".join(NAMES)))
    d = cache_dir()
    bin_path, meta_path = d / (name + ".bin"), d / (name + ".json")
    buf = meta = None
    if bin_path.exists() and meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
            buf = bin_path.read_bytes()
            if len(buf) != meta["bytes"]:
                buf = None
        except (OSError, ValueError, KeyError):
            buf = None
    if buf is None:
        buf, meta = generate(name)
        _atomic_write(bin_path, buf)
        _atomic_write(meta_path, json.dumps(meta, indent=1).encode())
    _memo[name] = (buf, meta)
    return buf, meta


def split_batches(buf) -> list[tuple[int, int]]:
    """(start, end) of every entry in ``buf`` (the log framing: int64 offset, int32 length)."""
    spans = []
    pos, n = 0, len(buf)
    unpack = struct.Struct(">i").unpack_from
    while pos + 12 <= n:
        (length,) = unpack(buf, pos + 8)
        end = pos + 12 + length
        if end > n:
            break
        spans.append((pos, end))
        pos = end
    return spans


def _fix_lz4_header_checksum(frame: bytes) -> bytes:
    """A magic-0 lz4 frame (KAFKA-3160: header checksum over magic + descriptor) with the checksum
    the LZ4 frame format specifies (over the descriptor only), so the plain lz4 library reads it."""
    import xxhash

    flg = frame[4]
    desc_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    hc = (xxhash.xxh32(frame[4:desc_end], seed=0).intdigest() >> 8) & 0xFF
    return frame[:desc_end] + bytes([hc]) + frame[desc_end + 1:]


def compressed_payloads(buf) -> list[tuple[int, bytes]]:
    """(codec id, compressed payload) of every entry: a v2 batch's records (bytes 61..end), a v0/v1
    wrapper's value.  Uncompressed entries are reported with codec 0 and an empty payload.  Magic-0
    lz4 payloads get the standard header checksum (the decompression floor uses the plain lz4
    library, which rejects KAFKA-3160's)."""
    out = []
    unpack_i = struct.Struct(">i").unpack_from
    for start, end in split_batches(buf):
        magic = buf[start + _MAGIC_AT]
        if magic == 2:
            codec = struct.unpack_from(">h", buf, start + _ATTRIBUTES_AT)[0] & 0x07
            out.append((codec, bytes(buf[start + HEADER_SIZE:end]) if codec else b""))
            continue
        # v0/v1: offset(8) size(4) crc(4) magic(1) attributes(1) [timestamp(8)] key value
        codec = buf[start + 17] & 0x07
        if not codec:
            out.append((0, b""))
            continue
        pos = start + 18 + (8 if magic == 1 else 0)
        (klen,) = unpack_i(buf, pos)
        pos += 4 + max(klen, 0)
        (vlen,) = unpack_i(buf, pos)
        value = bytes(buf[pos + 4:pos + 4 + vlen])
        if codec == 3 and magic == 0:
            value = _fix_lz4_header_checksum(value)
        out.append((codec, value))
    return out


# ---------------------------------------------------------------------------------------------
# log directories
# ---------------------------------------------------------------------------------------------

#: seek log dir: topic-partition folder, records, codec, records per batch, segments wanted
SEEK_DIR = ("events-0", "seek", "lz4", 500, 50)
#: cluster log dir: topics (name, codec), partitions per topic, records per partition, and the
#: divisor of a partition's size giving segment_bytes (3 -> 4 segments, the last one short)
CLUSTER = ((("orders", "lz4"), ("clicks", "zstd")), 4, 20_000, 3)


def _write_seek_dir(root: Path) -> dict:
    import kafkafmt

    folder, record_set, codec, per_batch, segments = SEEK_DIR
    recs = records(record_set)
    n = len(recs["values"])
    # size the segments from the encoded size so there are ~`segments` of them
    total = len(encode_batches(recs, batch_sizes(n, (per_batch, per_batch), 0), magic=2, codec=codec))
    segment_bytes = -(-total // segments)
    w = kafkafmt.LogWriter(root / folder, segment_bytes=segment_bytes, base_offset=BASE_OFFSET,
                           leader_epoch=LEADER_EPOCH)
    w.append(keys=recs["keys"], values=recs["values"], timestamps=recs["timestamps"], headers=recs["headers"],
             compression=codec, max_records=per_batch, batch_size=1 << 30, producer_id=PRODUCER_ID,
             producer_epoch=PRODUCER_EPOCH)
    w.close()
    return {"records": n, "first_offset": BASE_OFFSET, "last_offset": BASE_OFFSET + n - 1,
            "segments": len(kafkafmt.list_segments(root / folder)), "bytes": total,
            "first_timestamp": min(recs["timestamps"]), "last_timestamp": max(recs["timestamps"])}


def _write_cluster_dir(root: Path) -> dict:
    import kafkafmt

    topics, partitions, per_partition, segments = CLUSTER
    root.mkdir(parents=True, exist_ok=True)
    total_records = total_bytes = 0
    for t, (topic, codec) in enumerate(topics):
        for p in range(partitions):
            recs = generate_records(per_partition, 3000 + 10 * t + p, True)
            sizes = batch_sizes(per_partition, (450, 550), 4000 + 10 * t + p)
            size = len(encode_batches(recs, sizes, magic=2, codec=codec))
            base = 1_000_000 * (p + 1)
            w = kafkafmt.LogWriter(root / ("%s-%d" % (topic, p)), segment_bytes=-(-size // segments),
                                   base_offset=base, leader_epoch=5)
            start = 0
            for count in sizes:   # one append per producer batch
                sl = slice(start, start + count)
                w.append(keys=recs["keys"][sl], values=recs["values"][sl], timestamps=recs["timestamps"][sl],
                         headers=recs["headers"][sl], compression=codec, max_records=count, batch_size=1 << 30)
                start += count
            w.close()
            total_records += per_partition
            total_bytes += size
    # what else sits in a broker's log dir (a reader must skip it)
    (root / "meta.properties").write_text("version=1\nbroker.id=1\ncluster.id=kafkafmt-bench\n")
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                 "log-start-offset-checkpoint", "cleaner-offset-checkpoint"):
        (root / name).write_text("0\n0\n")
    return {"records": total_records, "bytes": total_bytes, "partitions": partitions * len(topics),
            "topics": [t for t, _ in topics]}


#: many-partitions log dirs: records per partition (one segment each, one record per batch: a
#: __consumer_offsets-like partition of offset commits, ~15 KB), and the partition counts written
MANY_PER_PARTITION = 69
MANY_COUNTS = (200, 2_000, 20_000)
MANY_TOPIC_PARTITIONS = 100          # partitions per topic (topics t0, t1, ...)


def write_many_partitions(root, partitions: int, per_partition: int = MANY_PER_PARTITION,
                          per_batch: int = 1) -> dict:
    """A broker's log dir of ``partitions`` small partitions (``t<k>-<p>``, 100 per topic), each one
    segment of ``per_partition`` records in batches of ``per_batch`` (keys ~30 bytes, values ~100:
    offset commits), with ``meta.properties`` and checkpoint files. The segment is written once by
    kafkafmt's LogWriter and its files copied into every partition folder."""
    import kafkafmt

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(37)
    keys = [b"\x00\x01\x00\x0bconsumer-%03d\x00\x06events\x00\x00\x00%c" % (i % 7, i % 64)
            for i in range(per_partition)]
    values = [b"\x00\x03" + rng.randbytes(8) + b"\x00\x00\x00\x05" + b"\xff" * 4 + rng.randbytes(70)
              for _ in range(per_partition)]
    template = root / ".template-0"
    w = kafkafmt.LogWriter(template)
    for start in range(0, per_partition, per_batch):
        sl = slice(start, start + per_batch)
        w.append(keys=keys[sl], values=values[sl],
                 timestamps=[FIRST_TIMESTAMP_MS + 1000 * i for i in range(start, min(start + per_batch,
                                                                                       per_partition))],
                 max_records=per_batch, batch_size=1 << 30)
    w.close()
    files = [f for f in sorted(os.listdir(template)) if not f.startswith(".")]
    lines = []
    for k in range(partitions):
        topic, part = "t%d" % (k // MANY_TOPIC_PARTITIONS), k % MANY_TOPIC_PARTITIONS
        folder = root / ("%s-%d" % (topic, part))
        folder.mkdir(exist_ok=True)
        for f in files:
            shutil.copyfile(template / f, folder / f)
        lines.append("%s %d 0" % (topic, part))
    shutil.rmtree(template)
    (root / "meta.properties").write_text("version=1\nbroker.id=1\ncluster.id=kafkafmt-bench\n")
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint"):
        (root / name).write_text("0\n%d\n%s\n" % (len(lines), "\n".join(lines)))
    seg = [f for f in files if f.endswith(".log")]
    size = sum(os.path.getsize(root / "t0-0" / f) for f in seg) if partitions else 0
    return {"records": partitions * per_partition, "partitions": partitions, "bytes": partitions * size,
            "per_partition": per_partition, "per_batch": per_batch}


_LOG_DIRS = {"seek": _write_seek_dir, "cluster": _write_cluster_dir}
_LOG_DIRS.update({"many-%d" % n: (lambda root, n=n: write_many_partitions(root, n)) for n in MANY_COUNTS})


def log_dir(name: str) -> tuple[Path, dict]:
    """(path, metadata) of log directory ``name`` (``seek``: the partition folder; ``cluster``: the
    log dir root), written once with kafkafmt's writer and cached."""
    base = cache_dir() / "logdirs"
    final = base / name
    path = final / SEEK_DIR[0] if name == "seek" else final
    done = base / (name + ".json")
    if done.exists() and final.is_dir():
        return path, json.loads(done.read_text())
    base.mkdir(parents=True, exist_ok=True)
    tmp = base / ("%s.%d.tmp" % (name, os.getpid()))
    if tmp.exists():
        shutil.rmtree(tmp)
    meta = _LOG_DIRS[name](tmp)
    meta.update(name=name, corpus_version=CORPUS_VERSION)
    try:
        os.replace(tmp, final)
    except OSError:   # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
        if done.exists():
            return path, json.loads(done.read_text())
        raise
    _atomic_write(done, json.dumps(meta, indent=1).encode())
    return path, meta


# ---------------------------------------------------------------------------------------------
# python -m benchmarks.corpus [--check] [name ...]
# ---------------------------------------------------------------------------------------------

def _stats_line(meta, dt) -> str:
    return ("%-11s magic %d %7d records %6d batches (%5d compressed) %9d bytes (values %d) %5.1fs  %s"
            % (meta["name"], meta["magic"], meta["records"], meta["batches"], meta["compressed_batches"],
               meta["bytes"], meta["value_bytes"], dt, meta["sha256"][:12]))


def check_deterministic(names) -> bool:
    """Generate each corpus twice in this process; compare the bytes with each other and with
    the cached file."""
    ok = True
    for name in names:
        a, meta = generate(name)
        b, _ = generate(name)
        cached = cache_dir() / (name + ".bin")
        same_cache = cached.read_bytes() == a if cached.exists() else None
        good = a == b and same_cache is not False
        ok &= good
        print("%-11s %s  twice identical: %s  equal to cache: %s"
              % (name, meta["sha256"][:16], a == b, "n/a" if same_cache is None else same_cache))
    return ok


def _tree_digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def check_log_dirs_deterministic() -> bool:
    """Write each log dir twice into temporary folders; compare every file (and the cache)."""
    ok = True
    for name, write in _LOG_DIRS.items():
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            write(Path(a) / name)
            write(Path(b) / name)
            da, db = _tree_digest(Path(a) / name), _tree_digest(Path(b) / name)
            cached = cache_dir() / "logdirs" / name
            dc = _tree_digest(cached) if cached.is_dir() else None
            good = da == db and dc in (None, da)
            ok &= good
            print("log dir %-7s %d files  twice identical: %s  equal to cache: %s"
                  % (name, len(da), da == db, "n/a" if dc is None else dc == da))
    return ok


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or NAMES
    if check:
        ok = check_deterministic(names)
        if not [a for a in argv if not a.startswith("--")]:
            ok &= check_log_dirs_deterministic()
        if not ok:
            raise SystemExit("corpora are not deterministic")
        return
    for name in names:
        for p in (cache_dir() / (name + ".bin"), cache_dir() / (name + ".json")):
            if p.exists():
                p.unlink()
        _memo.pop(name, None)
        t0 = time.perf_counter()
        _, meta = load(name)
        print(_stats_line(meta, time.perf_counter() - t0), flush=True)
    if not argv:
        for name in _LOG_DIRS:
            shutil.rmtree(cache_dir() / "logdirs" / name, ignore_errors=True)
            (cache_dir() / "logdirs" / (name + ".json")).unlink(missing_ok=True)
            t0 = time.perf_counter()
            path, meta = log_dir(name)
            print("log dir %-7s %s  %.1fs  %s" % (name, {k: v for k, v in meta.items() if k != "name"},
                                                 time.perf_counter() - t0, path), flush=True)
    print("cache:", cache_dir())


if __name__ == "__main__":
    main()
