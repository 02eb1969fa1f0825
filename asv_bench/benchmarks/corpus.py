"""Deterministic benchmark corpora of Kafka v2 (magic 2) record batches, cached on disk.

Every corpus is the concatenation of record batches exactly as they sit in a log segment
(``int64 base offset, int32 length, ...``), so ``kafkafmt.decode``, aiokafka's and
kafka-python's ``MemoryRecords`` all read the same bytes.

Contents (fixed seeds, so identical bytes on every run with the same library versions):

* magic 2, ~500 records per batch (450..550), or 1..10 for the ``zstd-small`` variant;
* values: JSON-like event documents, ~250 bytes (roughly 200..300);
* keys: 16 random bytes, ~5 % null;
* headers: 2 headers (``trace-id``, ``content-type``) on ~20 % of records, none on the rest;
* timestamps: a millisecond clock advancing ~1 ms per record plus +-50 ms jitter, so deltas
  inside a batch are sometimes negative and max_timestamp is not always the last record's;
* base offsets start at 5_000_000_000 (beyond 2**31) and are contiguous; partition leader
  epoch 17; idempotent-producer fields (producer id 4242, epoch 3, running base sequence).

Batches are built with kafka-python's ``DefaultRecordBatchBuilder``, which compresses with
kafka-python's codec helpers: gzip level 9, xerial snappy with 32 KiB blocks, lz4 frames *with*
a content size and independent blocks, zstd level 3 with a content size.  Its gzip helper is
swapped for one writing mtime 0 into the gzip header (as Java's GZIPOutputStream does);
otherwise the gzip corpus, and its CRCs, would change on every generation.  The builder writes
base offset 0 and leader epoch 0 like a producer; we patch both afterwards, as a broker does --
neither is covered by the CRC-32C.  Like a producer, the builder would leave a batch
uncompressed if compression did not shrink it (the metadata counts compressed batches; with
these values every batch, even of ``zstd-small``, shrinks).
TODO: switch to kafkafmt's own writer once it exists; then Java-style frames (lz4 and zstd
without a content size) can be covered too.

Cache: ``asv_bench/.corpus/v<CORPUS_VERSION>/<name>.bin`` (+ ``.json`` metadata), or the
directory in ``$KAFKAFMT_BENCH_CORPUS_DIR``; falls back to the system temp dir when the
benchmark directory is not writable.  Bump ``CORPUS_VERSION`` whenever generation changes.

Run ``python -m benchmarks.corpus`` from ``asv_bench/`` to (re)generate all corpora and print
their statistics.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import struct
import sys
import tempfile
import time
from pathlib import Path

CORPUS_VERSION = "1"

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

#: name -> (codec name, number of records, (min, max) records per batch, seed)
CORPORA = {
    "none": ("none", 40_000, (450, 550), 1001),
    "gzip": ("gzip", 40_000, (450, 550), 1002),
    "snappy": ("snappy", 40_000, (450, 550), 1003),
    "lz4": ("lz4", 40_000, (450, 550), 1004),
    "zstd": ("zstd", 40_000, (450, 550), 1005),
    "zstd-small": ("zstd", 20_000, (1, 10), 1006),
}
#: the parameter list of the benchmarks
NAMES = list(CORPORA)

BASE_OFFSET = 5_000_000_000          # > 2**31
LEADER_EPOCH = 17
PRODUCER_ID = 4242
PRODUCER_EPOCH = 3
FIRST_TIMESTAMP_MS = 1_793_500_000_000   # 2026-11

# v2 batch header layout
HEADER_SIZE = 61                     # records payload (compressed or not) starts here
_ATTRIBUTES_AT = 21
_RECORD_COUNT_AT = 57

_EVENTS = ["page_view", "add_to_cart", "checkout", "search", "login", "logout", "click", "scroll"]
_COUNTRIES = ["DE", "US", "FR", "BR", "IN", "JP", "GB", "NL", "SE", "ES", "IT", "PL"]
_DEVICES = ["ios", "android", "web", "desktop"]
_PATHS = ["/", "/products", "/cart", "/checkout", "/search", "/account", "/help", "/blog/posts"]
_WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
          "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()


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


def _gzip_encode_deterministic(payload, compresslevel=None):
    """kafka-python's gzip_encode (GzipFile, level 9) but with mtime 0, like Java's GZIPOutputStream:
    GzipFile stamps the current time into the gzip header, which would make the corpus (and its
    CRCs) differ on every generation."""
    return gzip.compress(bytes(payload), compresslevel=compresslevel or 9, mtime=0)


def _new_builder(codec_id: int, base_sequence: int):
    import kafka.record.default_records as kdr
    from kafka.record.default_records import DefaultRecordBatchBuilder

    kdr.gzip_encode = _gzip_encode_deterministic   # the builder looks it up in its module

    return DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec_id,
        is_transactional=False,
        producer_id=PRODUCER_ID,
        producer_epoch=PRODUCER_EPOCH,
        base_sequence=base_sequence,
        batch_size=1 << 30,          # never refuse an append: we choose the batch sizes
    )


def generate(name: str) -> tuple[bytes, dict]:
    """Build corpus ``name``; returns (buffer, metadata)."""
    codec, n_records, (bmin, bmax), seed = CORPORA[name]
    codec_id = CODEC_IDS[codec]
    rng = random.Random(seed)
    out = bytearray()
    clock = FIRST_TIMESTAMP_MS
    seq = 0
    n_batches = n_compressed = n_null_keys = n_with_headers = raw_value_bytes = 0
    while seq < n_records:
        count = min(rng.randint(bmin, bmax), n_records - seq)
        builder = _new_builder(codec_id, seq)
        for delta in range(count):
            clock += rng.randint(0, 2)
            ts = clock + rng.randint(-50, 50)
            if rng.random() < 0.05:
                key = None
                n_null_keys += 1
            else:
                key = rng.randbytes(16)
            value = _value(rng, seq + delta, ts)
            raw_value_bytes += len(value)
            if rng.random() < 0.20:
                headers = [
                    ("trace-id", b"%032x" % rng.getrandbits(128)),
                    ("content-type", b"application/json"),
                ]
                n_with_headers += 1
            else:
                headers = []
            if builder.append(delta, timestamp=ts, key=key, value=value, headers=headers) is None:
                raise RuntimeError("builder refused a record")
        batch = builder.build()
        # what the broker does on append: assign the base offset and the leader epoch
        # (both outside the CRC, which starts at the attributes)
        struct.pack_into(">q", batch, 0, BASE_OFFSET + seq)
        struct.pack_into(">i", batch, 12, LEADER_EPOCH)
        if struct.unpack_from(">h", batch, _ATTRIBUTES_AT)[0] & 0x07:
            n_compressed += 1
        out += batch
        seq += count
        n_batches += 1
    buf = bytes(out)
    meta = {
        "name": name,
        "codec": codec,
        "corpus_version": CORPUS_VERSION,
        "records": n_records,
        "batches": n_batches,
        "compressed_batches": n_compressed,
        "null_keys": n_null_keys,
        "records_with_headers": n_with_headers,
        "value_bytes": raw_value_bytes,
        "bytes": len(buf),
        "sha256": hashlib.sha256(buf).hexdigest(),
        "builder": "kafka-python DefaultRecordBatchBuilder",
        "libraries": _library_versions(),
    }
    return buf, meta


def _library_versions() -> dict:
    versions = {"python": sys.version.split()[0]}
    for mod in ("kafka", "lz4", "zstandard", "cramjam", "snappy"):
        try:
            m = __import__(mod)
            versions[mod] = getattr(m, "__version__", "?")
        except Exception:  # pragma: no cover - informational only
            pass
    return versions


def cache_dir() -> Path:
    env = os.environ.get("KAFKAFMT_BENCH_CORPUS_DIR")
    if env:
        d = Path(env)
    else:
        d = Path(__file__).resolve().parent.parent / ".corpus"
    d = d / ("v" + CORPUS_VERSION)
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / ".probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError:
        d = Path(tempfile.gettempdir()) / ("kafkafmt-bench-corpus-v" + CORPUS_VERSION)
        d.mkdir(parents=True, exist_ok=True)
    return d


_memo: dict[str, tuple[bytes, dict]] = {}


def load(name: str) -> tuple[bytes, dict]:
    """Return (buffer, metadata) of corpus ``name``, generating and caching it if needed."""
    if name in _memo:
        return _memo[name]
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
        # atomic writes: several asv processes may race on the first run
        for path, data in ((bin_path, buf), (meta_path, json.dumps(meta, indent=1).encode())):
            tmp = path.with_name(path.name + ".%d.tmp" % os.getpid())
            tmp.write_bytes(data)
            os.replace(tmp, path)
    _memo[name] = (buf, meta)
    return buf, meta


def split_batches(buf) -> list[tuple[int, int]]:
    """(start, end) of every batch in ``buf`` (the log framing: int64 offset, int32 length)."""
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


def compressed_payloads(buf) -> list[tuple[int, bytes]]:
    """(codec id, records payload as bytes) of every batch: bytes 61..end of the batch.

    Uncompressed batches are reported with codec 0 (they need no decompression).
    """
    out = []
    for start, end in split_batches(buf):
        codec = struct.unpack_from(">h", buf, start + _ATTRIBUTES_AT)[0] & 0x07
        out.append((codec, bytes(buf[start + HEADER_SIZE:end])))
    return out


def main(argv=None) -> None:
    names = (argv or sys.argv[1:]) or NAMES
    for name in names:
        for p in (cache_dir() / (name + ".bin"), cache_dir() / (name + ".json")):
            if p.exists():
                p.unlink()
        _memo.pop(name, None)
        t0 = time.perf_counter()
        buf, meta = load(name)
        dt = time.perf_counter() - t0
        print(
            "%-11s %7d records %6d batches (%d compressed) %9d bytes (values %d) %5.1fs  %s"
            % (name, meta["records"], meta["batches"], meta["compressed_batches"], meta["bytes"],
               meta["value_bytes"], dt, meta["sha256"][:12])
        )
    print("cache:", cache_dir())


if __name__ == "__main__":
    main()
