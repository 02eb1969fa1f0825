"""kafkafmt.log.tiered: Kafka's and Aiven's tiered-storage layouts, written by small helpers here, read from
a real S3 API server (moto on loopback) and from the local disk."""
import base64
import hashlib
import json
import os
import pathlib
import struct
import uuid

import numpy as np
import pytest
import zstandard

import kafkafmt
from kafkafmt.errors import UnsupportedLayoutError
from kafkafmt.storage import LocalStorage, open_storage
from kafkafmt.log.tiered import (AivenSegmentBlob, kafka_id, looks_tiered, oaep_decrypt, list_remote_partitions, open_remote_log,
                             parse_aiven_manifest, parse_aiven_segment_file, parse_aiven_topic_dir, parse_kafka_id,
                             parse_kafka_partition_dir, parse_kafka_segment_file, read_remote_side_file,
                             segment_end_offset)

from s3server import s3  # noqa: F401  (pytest fixture)

KIB = 1024


def _id(n):
    """A deterministic Kafka Uuid string."""
    return kafka_id(uuid.UUID(int=(0x1234567890ABCDEF << 64) + n * 7919))


def _segments(part_dir):
    """[(base offset, {suffix: path})] of a local partition folder, in offset order."""
    out = {}
    for f in sorted(os.listdir(part_dir)):
        stem, dot, suffix = f.partition(".")
        if stem.isdigit() and len(stem) == 20:
            out.setdefault(int(stem), {})["." + suffix] = os.path.join(part_dir, f)
    return sorted(out.items())


def _write_partition(path, n=2500, segment_bytes=48 * KIB, compression="lz4", base_offset=0, seed=1):
    rng = np.random.default_rng(seed)
    values = [bytes(rng.integers(0, 256, int(rng.integers(20, 200)), dtype=np.uint8)) for _ in range(n)]
    kafkafmt.write_log_dir(path, keys=[b"k%d" % i for i in range(n)], values=values,
                           timestamps=[1_700_000_000_000 + 10 * i for i in range(n)], compression=compression,
                           segment_bytes=segment_bytes, index_interval_bytes=2 * KIB, base_offset=base_offset)
    return path


# --- writers of the two layouts (from the projects' sources; see kafkafmt/tiered.py) ---------------

def kafka_layout_objects(part_dir, topic, partition, topic_id, seg_ids=None, padded=True):
    """{key: bytes} as LocalTieredStorage lays a partition's segments out (one fileset per segment)."""
    objs = {}
    folder = f"{topic}-{partition}-{topic_id}"
    for i, (base, files) in enumerate(_segments(part_dir)):
        sid = (seg_ids or {}).get(base) or _id(1000 + base)
        prefix = f"{base:020d}-{sid}" if padded else f"{base}-{sid}"
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            if suffix in files:
                objs[f"{folder}/{prefix}{suffix}"] = pathlib.Path(files[suffix]).read_bytes()
        objs[f"{folder}/{prefix}.snapshot"] = b""
        objs[f"{folder}/{prefix}.leader_epoch_checkpoint"] = b"0\n1\n0 0\n"
    return objs


def chunk_sizes_binary(values):
    """Aiven's ChunkSizesBinaryCodec.encode."""
    if not values:
        return struct.pack(">i", 0)
    if len(values) == 1:
        return struct.pack(">ii", 1, values[0])
    base = min(values[:-1])
    width = max(max(1, (v - base).bit_length() + 7 >> 3) for v in values[:-1])
    body = b"".join((v - base).to_bytes(width, "big") for v in values[:-1])
    return struct.pack(">iib", len(values), base, width) + body + struct.pack(">i", values[-1])


def _mgf1(seed, length, name):
    out = b"".join(hashlib.new(name, seed + i.to_bytes(4, "big")).digest()
                   for i in range(-(-length // hashlib.new(name).digest_size)))
    return out[:length]


def _rsa_wrap(public_key, data_key, name="sha3_512"):
    """RSAES-OAEP encryption (RFC 8017 7.1.1) with SHA3-512 and MGF1-SHA3-512, as BouncyCastle's
    RSA/NONE/OAEPWithSHA3-512AndMGF1Padding (the cryptography package has no SHA-3 OAEP)."""
    numbers = public_key.public_numbers()
    k = (numbers.n.bit_length() + 7) // 8
    hlen = hashlib.new(name).digest_size
    db = hashlib.new(name, b"").digest() + b"\x00" * (k - len(data_key) - 2 * hlen - 2) + b"\x01" + data_key
    seed = os.urandom(hlen)
    masked_db = bytes(a ^ b for a, b in zip(db, _mgf1(seed, k - hlen - 1, name)))
    masked_seed = bytes(a ^ b for a, b in zip(seed, _mgf1(masked_db, hlen, name)))
    em = b"\x00" + masked_seed + masked_db
    return pow(int.from_bytes(em, "big"), numbers.e, numbers.n).to_bytes(k, "big")


def aiven_objects(log, indexes, *, topic, partition, topic_id, segment_id, base_offset, end_offset,
                  chunk_size=64 * KIB, compress=False, encrypted=False, encrypt_with=None):
    """(.log object, .indexes object, .rsm-manifest JSON) as Aiven's RemoteStorageManager uploads them:
    chunks zstd-compressed, then AES-256-GCM encrypted (12-byte IV first) with a data key wrapped by
    RSA-OAEP (SHA3-512) when ``encrypt_with=(key id, RSA public key)``; ``encrypted=True`` only
    writes an encryption entry (the data is not readable then)."""
    chunks = [log[i:i + chunk_size] for i in range(0, len(log), chunk_size)]
    aes = None
    if encrypt_with is not None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        data_key, aad = os.urandom(32), b"\x0a\x0b\x0c\x0d"
        aes = AESGCM(data_key)

    def seal(b):
        if aes is None:
            return b
        iv = os.urandom(12)
        return iv + aes.encrypt(iv, b, aad)

    if compress or aes is not None:
        cctx = zstandard.ZstdCompressor(level=3, write_content_size=True)
        stored = [seal(cctx.compress(c) if compress else c) for c in chunks]
        sizes = [len(c) for c in stored]
        packed = zstandard.ZstdCompressor(write_content_size=True).compress(chunk_sizes_binary(sizes))
        chunk_index = {"type": "variable", "originalChunkSize": chunk_size, "originalFileSize": len(log),
                       "transformedChunks": base64.b64encode(packed).decode()}
    else:
        stored = chunks
        chunk_index = {"type": "fixed", "originalChunkSize": chunk_size, "originalFileSize": len(log),
                       "transformedChunkSize": chunk_size,
                       "finalTransformedChunkSize": len(chunks[-1]) if chunks else 0}
    blob, seg_indexes, pos = b"", {}, 0
    for name in ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction"):
        data = indexes.get(name)
        if data is None:
            seg_indexes[name] = None
            continue
        data = seal(data) if data else data
        seg_indexes[name] = {"position": pos, "size": len(data)}
        blob += data
        pos += len(data)
    manifest = {"version": "1", "chunkIndex": chunk_index, "segmentIndexes": seg_indexes, "compression": compress}
    if encrypt_with is not None:
        key_id, public_key = encrypt_with
        manifest["encryption"] = {"dataKey": f"{key_id}:" + base64.b64encode(_rsa_wrap(public_key, data_key)).decode(),
                                  "aad": base64.b64encode(aad).decode()}
    elif encrypted:
        manifest["encryption"] = {"dataKey": "key-2024:" + base64.b64encode(os.urandom(256)).decode(),
                                  "aad": base64.b64encode(b"\x0a\x0b\x0c\x0d").decode()}
    manifest["remoteLogSegmentMetadata"] = {
        "remoteLogSegmentId": {"topicIdPartition": {"topicId": topic_id,
                                                    "topicPartition": {"topic": topic, "partition": partition}},
                               "id": segment_id},
        "startOffset": base_offset, "endOffset": end_offset, "maxTimestampMs": 0, "brokerId": 1,
        "eventTimestampMs": 0, "segmentLeaderEpochs": {"0": base_offset}}
    return b"".join(stored), blob, json.dumps(manifest).encode()


def aiven_layout_objects(part_dir, topic, partition, topic_id, prefix="", **kw):
    objs = {}
    for base, files in _segments(part_dir):
        log = pathlib.Path(files[".log"]).read_bytes()
        recs = kafkafmt.decode(log)
        sid = _id(5000 + base)
        indexes = {"offset": pathlib.Path(files[".index"]).read_bytes(),
                   "timestamp": pathlib.Path(files[".timeindex"]).read_bytes(),
                   "producerSnapshot": b"", "leaderEpoch": b"0\n1\n0 0\n"}
        lo, ix, man = aiven_objects(log, indexes, topic=topic, partition=partition, topic_id=topic_id, segment_id=sid,
                                    base_offset=base, end_offset=int(recs.offset[-1]), **kw)
        key = f"{prefix}{topic}-{topic_id}/{partition}/{base:020d}-{sid}"
        objs[key + ".log"], objs[key + ".indexes"], objs[key + ".rsm-manifest"] = lo, ix, man
    return objs


def _put_all(s3, bucket, root, objs):
    for key, data in objs.items():
        s3.put(bucket, f"{root}/{key}" if root else key, data)


def _write_local(root, objs):
    for key, data in objs.items():
        p = pathlib.Path(root) / key
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


# ------------------------------------------------------------------------------------------------
# names

def test_kafka_ids_round_trip():
    # an id from Aiven's and Kafka's tests
    u = parse_kafka_id("lZ6vvmajTWKDBUTV6SQAtQ")
    assert kafka_id(u) == "lZ6vvmajTWKDBUTV6SQAtQ" and kafka_id(u.bytes) == "lZ6vvmajTWKDBUTV6SQAtQ"
    for _ in range(50):
        v = uuid.uuid4()
        s = kafka_id(v)
        assert len(s) == 22 and "=" not in s and parse_kafka_id(s) == v
    with pytest.raises(ValueError):
        parse_kafka_id("tooshort")


def test_kafka_layout_names():
    tid, sid = "5fEBmixCR5-dMntYSLIr1g", "oAtiIQ95REujbuzNd_lkLQ"
    assert parse_kafka_partition_dir(f"topic-3-{tid}") == ("topic", 3, tid)
    assert parse_kafka_partition_dir(f"my-dashed-topic-12-{tid}") == ("my-dashed-topic", 12, tid)
    assert parse_kafka_partition_dir(f"a.b_c-0-{tid}") == ("a.b_c", 0, tid)
    assert parse_kafka_partition_dir("orders-3") is None and parse_kafka_partition_dir(f"topic-{tid}") is None
    assert parse_kafka_segment_file(f"00000000000000000011-{sid}.log") == (11, sid, "log")
    assert parse_kafka_segment_file(f"11-{sid}.timeindex") == (11, sid, "timeindex")          # Kafka 3.6
    assert parse_kafka_segment_file(f"{sid}.index") == (None, sid, "index")                 # Kafka 3.5
    assert parse_kafka_segment_file(f"0-{sid}.leader_epoch_checkpoint") == (0, sid, "leader_epoch_checkpoint")
    assert parse_kafka_segment_file(f"0-{sid}.snapshot") == (0, sid, "snapshot")
    assert parse_kafka_segment_file(f"0-{sid}.txnindex") == (0, sid, "txnindex")
    assert parse_kafka_segment_file("00000000000000000000.log") is None
    assert parse_kafka_segment_file(f"0-{sid}.deleted") is None


def test_aiven_layout_names():
    tid, sid = "MWJ6FHTfRYy67jzwZdeqSQ", "tqimKeZwStOEOwRzT3L5oQ"
    # the example of ObjectKeyFactory's documentation
    key = f"someprefix/topic-{tid}/7/00000000000000001234-{sid}.log"
    folder, part, name = key.split("/")[1:]
    assert parse_aiven_topic_dir(folder) == ("topic", tid) and part == "7"
    assert parse_aiven_segment_file(name) == (1234, sid, "log")
    assert parse_aiven_segment_file(f"00000000000000001234-{sid}.rsm-manifest") == (1234, sid, "manifest")
    assert parse_aiven_segment_file(f"00000000000000001234-{sid}.indexes") == (1234, sid, "indexes")
    assert parse_aiven_segment_file(f"1234-{sid}.log") is None
    assert parse_aiven_topic_dir(f"pfx-my-topic-{tid}", prefix="pfx-") == ("my-topic", tid)
    assert parse_aiven_topic_dir(f"my-topic-{tid}", prefix="pfx-") is None
    assert looks_tiered([f"topic-{tid}"]) and looks_tiered(["kafka-tiered-storage"])
    assert looks_tiered(["orders-0", f"orders-1-{tid}"])
    assert not looks_tiered(["orders-0", "__consumer_offsets-12", "meta.properties", "7"])


# ------------------------------------------------------------------------------------------------
# manifests

_AIVEN_TEST_JSON = (  # SegmentManifestV1SerdeTest.WITHOUT_ENCRYPTION_WITHOUT_TXN_INDEX_JSON
    '{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,'
    '"transformedChunkSize":110,"finalTransformedChunkSize":110},"segmentIndexes":{'
    '"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},"producerSnapshot":{"position":2,"size":1},'
    '"leaderEpoch":{"position":3,"size":1},"transaction":null},"compression":false,"remoteLogSegmentMetadata":'
    '{"remoteLogSegmentId":{"topicIdPartition":{"topicId":"lZ6vvmajTWKDBUTV6SQAtQ","topicPartition":'
    '{"topic":"topic1","partition":42}},"id":"adh9f8BMS4anaUnD8KWfWg"},"startOffset":0,"endOffset":1000,'
    '"maxTimestampMs":1000000000,"brokerId":2,"eventTimestampMs":2000000000,'
    '"segmentLeaderEpochs":{"0":100,"1":200,"2":300}}}')


def test_parse_aiven_manifest_fixed_index():
    m = parse_aiven_manifest(_AIVEN_TEST_JSON.encode())
    assert m.version == "1" and m.chunk_size == 100 and m.original_size == 1000
    assert m.original_starts.tolist() == list(range(0, 1000, 100))
    assert m.transformed_sizes.tolist() == [110] * 10 and m.transformed_starts.tolist() == list(range(0, 1100, 110))
    assert m.transformed_size == 1100 and not m.compression and m.encryption is None
    assert m.indexes["index"] == (0, 1) and m.indexes["timeindex"] == (1, 1) and m.indexes["txnindex"] is None
    assert m.indexes["snapshot"] == (2, 1) and m.indexes["leader_epoch_checkpoint"] == (3, 1)
    assert m.start_offset == 0 and m.end_offset == 1000
    assert m.chunk_range(150, 351) == (1, 4) and m.chunk_range(0, 100) == (0, 1)


@pytest.mark.parametrize("sizes", [[], [7], [5, 5], [100, 3, 70000, 12, 9], [300] * 50 + [17]])
def test_parse_aiven_manifest_variable_index(sizes):
    chunk = 100_000
    original = chunk * (len(sizes) - 1) + 17 if sizes else 0
    packed = zstandard.ZstdCompressor(write_content_size=True).compress(chunk_sizes_binary(sizes))
    doc = {"version": "1", "chunkIndex": {"type": "variable", "originalChunkSize": chunk, "originalFileSize": original,
                                          "transformedChunks": base64.b64encode(packed).decode()},
           "segmentIndexes": {}, "compression": True}
    m = parse_aiven_manifest(json.dumps(doc))
    assert m.transformed_sizes.tolist() == sizes
    assert m.transformed_starts.tolist() == [sum(sizes[:i]) for i in range(len(sizes))]


@pytest.mark.parametrize("bad", [b"not json", b'{"version":"2"}', b'{"version":"1","chunkIndex":{"type":"odd",'
                                 b'"originalChunkSize":1,"originalFileSize":1}}', b'{"version":"1"}'])
def test_parse_aiven_manifest_rejects(bad):
    with pytest.raises(UnsupportedLayoutError):
        parse_aiven_manifest(bad, url="s3://b/x.rsm-manifest")


# ------------------------------------------------------------------------------------------------
# Kafka's layout

@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiered-src")
    return {"orders": _write_partition(str(root / "orders-events-0"), compression="lz4"),
            "plain": _write_partition(str(root / "plain-1"), compression=None, base_offset=1000, seed=2)}


def _check_partition(st, part, local_dir):
    segs = _segments(local_dir)
    assert [s.base_offset for s in part.segments] == [base for base, _ in segs]
    for seg, (base, files) in zip(part.segments, segs):
        data = pathlib.Path(files[".log"]).read_bytes()
        with open_remote_log(st, seg, read_ahead=16 * KIB) as blob:
            assert blob.size == len(data) == seg.original_size
            assert bytes(blob.read(0, blob.size)) == data
            mid = len(data) // 2
            assert bytes(blob.read(mid, mid + 333)) == data[mid:mid + 333]
        assert read_remote_side_file(st, seg, "index") == pathlib.Path(files[".index"]).read_bytes()
        assert read_remote_side_file(st, seg, "timeindex") == pathlib.Path(files[".timeindex"]).read_bytes()
        assert segment_end_offset(st, seg) == int(kafkafmt.decode(data).offset[-1])


def test_kafka_layout_on_s3(s3, written):
    bucket = s3.bucket()
    tid1, tid2 = _id(1), _id(2)
    objs = {}
    objs.update(kafka_layout_objects(written["orders"], "orders-events", 0, tid1))
    objs.update(kafka_layout_objects(written["plain"], "plain", 1, tid2, padded=False))    # Kafka 3.6 names
    _put_all(s3, bucket, "tiered/kafka-tiered-storage", objs)
    st, root = open_storage(f"s3://{bucket}/tiered", storage_options=s3.storage_options)
    parts = list_remote_partitions(st, root)
    assert [(p.layout.name, p.topic, p.partition, p.topic_id) for p in parts] == [
        ("kafka", "orders-events", 0, tid1), ("kafka", "plain", 1, tid2)]
    assert all(not p.problems and not p.superseded for p in parts)
    assert len(parts[0].segments) > 3
    _check_partition(st, parts[0], written["orders"])
    _check_partition(st, parts[1], written["plain"])
    seg = parts[0].segments[1]
    assert seg.index.endswith(".index") and seg.timeindex.endswith(".timeindex") and seg.txnindex is None
    assert st.url(seg.log) == f"s3://{bucket}/tiered/kafka-tiered-storage/orders-events-0-{tid1}/" \
                              f"{seg.base_offset:020d}-{seg.segment_id}.log"
    # pointing at the partition folder itself
    one = list_remote_partitions(st, f"{root}/kafka-tiered-storage/plain-1-{tid2}")
    assert [p.name for p in one] == ["plain-1"] and len(one[0].segments) == len(parts[1].segments)


def test_kafka_layout_legacy_names_and_real_corpus(s3, real_corpus, tmp_path):
    """Kafka 3.5 names (<segmentId>.log): the base offset comes from the first batch; real broker
    segments with non-zero base offsets."""
    src = real_corpus / "broker-dirs"
    parts_src = [p for p in src.glob("*/*/*") if p.is_dir() and _segments(str(p))] + \
                [p for p in src.glob("*/*") if p.is_dir() and _segments(str(p))]
    assert parts_src
    bucket = s3.bucket()
    objs, expected = {}, {}
    for i, p in enumerate(sorted(parts_src)):
        name = p.name
        topic, _, partition = name.rpartition("-")
        tid = _id(100 + i)
        folder = f"{topic}-{partition}-{tid}"
        for base, files in _segments(str(p)):
            if ".log" not in files:
                continue
            sid = _id(2000 + 10 * i + base % 7)
            for suffix, path in files.items():
                if suffix in (".log", ".index", ".timeindex", ".snapshot"):
                    objs[f"{folder}/{sid}{suffix}"] = pathlib.Path(path).read_bytes()
            data = pathlib.Path(files[".log"]).read_bytes()
            if len(data) >= 8:    # without the offset in the name, the base offset is the first batch's
                expected[(topic, int(partition), tid, struct.unpack(">q", data[:8])[0])] = data
    _put_all(s3, bucket, "", objs)
    st, root = open_storage(f"s3://{bucket}", storage_options=s3.storage_options)
    found = {}
    for part in list_remote_partitions(st, root):
        for seg in part.segments:
            with open_remote_log(st, seg) as blob:
                found[(part.topic, part.partition, part.topic_id, seg.base_offset)] = bytes(blob.read(0, blob.size))
    assert found == expected
    assert any(k[3] > 0 for k in found)


def test_duplicate_uploads_resolved_by_end_offset(s3, written):
    """A second upload of the same base offset holding fewer batches (a leader that had less) is
    superseded by the longer one; the listing reports both."""
    base, files = _segments(written["orders"])[0]
    log = pathlib.Path(files[".log"]).read_bytes()
    table, _info = kafkafmt.scan_batches(log)
    positions = np.asarray(table["position"])
    cut = int(positions[len(positions) // 2])
    short_end = int(kafkafmt.decode(log[:cut]).offset[-1])
    tid, long_id, short_id = _id(7), _id(71), _id(72)
    bucket = s3.bucket()
    folder = f"orders-events-0-{tid}"
    for sid, data in ((long_id, log), (short_id, log[:cut])):
        s3.put(bucket, f"{folder}/{base:020d}-{sid}.log", data)
        s3.put(bucket, f"{folder}/{base:020d}-{sid}.index", b"")
        s3.put(bucket, f"{folder}/{base:020d}-{sid}.timeindex", b"")
    st, root = open_storage(f"s3://{bucket}", storage_options=s3.storage_options)
    (part,) = list_remote_partitions(st, root)
    assert [s.segment_id for s in part.segments] == [long_id]
    assert [s.segment_id for s in part.superseded] == [short_id]
    assert part.segments[0].end_offset == int(kafkafmt.decode(log).offset[-1]) > short_end
    assert part.superseded[0].end_offset == short_end


def test_kafka_layout_problems_reported(tmp_path, written):
    tid = _id(9)
    objs = kafka_layout_objects(written["plain"], "plain", 1, tid)
    victim = sorted(k for k in objs if k.endswith(".log"))[1]
    del objs[victim]
    objs[f"plain-1-{tid}/notes.txt"] = b"x"
    _write_local(tmp_path, objs)
    (part,) = list_remote_partitions(LocalStorage(), str(tmp_path))
    assert len(part.segments) == len(_segments(written["plain"])) - 1
    assert any("has no .log" in p for p in part.problems)
    assert any("notes.txt" in p for p in part.problems)


# ------------------------------------------------------------------------------------------------
# Aiven's layout

@pytest.mark.parametrize("compress", [False, True])
def test_aiven_layout_on_s3(s3, written, compress):
    bucket = s3.bucket()
    tid = _id(11)
    objs = aiven_layout_objects(written["orders"], "orders-events", 0, tid, prefix="rsm/", chunk_size=16 * KIB,
                                compress=compress)
    objs.update(aiven_layout_objects(written["plain"], "plain", 1, _id(12), prefix="rsm/", chunk_size=16 * KIB,
                                     compress=compress))
    _put_all(s3, bucket, "", objs)
    st, root = open_storage(f"s3://{bucket}", storage_options=s3.storage_options)
    parts = list_remote_partitions(st, root)
    assert [(p.layout.name, p.name) for p in parts] == [("aiven", "orders-events-0"), ("aiven", "plain-1")]
    for part, local in zip(parts, (written["orders"], written["plain"])):
        assert not part.problems
        for seg in part.segments:
            assert seg.manifest is not None and seg.manifest.compression == compress
        _check_partition(st, part, local)
        seg = part.segments[0]
        with open_remote_log(st, seg) as blob:
            assert isinstance(blob, AivenSegmentBlob) == compress
    # pointing at the topic folder, and at the partition folder
    assert [p.name for p in list_remote_partitions(st, f"{root}/rsm/plain-{_id(12)}")] == ["plain-1"]
    assert [p.name for p in list_remote_partitions(st, f"{root}/rsm/plain-{_id(12)}/1")] == ["plain-1"]


def test_aiven_chunked_reads_fetch_only_needed_chunks(s3, tmp_path):
    part_dir = _write_partition(str(tmp_path / "big-0"), n=20000, segment_bytes=64 << 20, compression=None)
    (base, files), = _segments(part_dir)
    log = pathlib.Path(files[".log"]).read_bytes()
    chunk = 32 * KIB
    bucket = s3.bucket()
    tid = _id(21)
    objs = aiven_layout_objects(part_dir, "big", 0, tid, chunk_size=chunk, compress=True)
    _put_all(s3, bucket, "", objs)
    st, root = open_storage(f"s3://{bucket}", storage_options=s3.storage_options)
    (part,) = list_remote_partitions(st, root)
    seg = part.segments[0]
    m = seg.manifest
    assert m.original_size == len(log) > 40 * chunk and m.transformed_size == seg.size
    with open_remote_log(st, seg, read_ahead=1) as blob:
        assert isinstance(blob, AivenSegmentBlob) and blob.view() is None
        pos = 17 * chunk + 1000
        assert bytes(blob.read(pos, pos + 100)) == log[pos:pos + 100]
        assert blob.requests == 1 and blob.bytes_fetched == int(m.transformed_sizes[17])
        assert bytes(blob.read(pos + 100, pos + 5000)) == log[pos + 100:pos + 5000]     # cached chunk
        assert blob.requests == 1
        a, b = 20 * chunk - 10, 23 * chunk + 10          # spans chunks 19..23: one request
        assert bytes(blob.read(a, b)) == log[a:b]
        assert blob.requests == 2
        assert blob.bytes_fetched == int(m.transformed_sizes[17] + m.transformed_sizes[19:24].sum())
        assert bytes(blob.read(len(log) - 7, len(log))) == log[-7:]
    assert seg.end_offset == 19999 and segment_end_offset(st, seg) == 19999
    # the records through the chunk reader equal the local file's
    with open_remote_log(st, seg, read_ahead=256 * KIB) as blob:
        recs = kafkafmt.decode(blob.read(0, blob.size))
    assert recs.offset.tolist() == list(range(20000))


def test_aiven_encrypted_segment_gives_a_clear_error(s3, written):
    bucket = s3.bucket()
    tid = _id(31)
    objs = aiven_layout_objects(written["plain"], "plain", 1, tid, compress=True, encrypted=True)
    _put_all(s3, bucket, "", objs)
    st, root = open_storage(f"s3://{bucket}", storage_options=s3.storage_options)
    (part,) = list_remote_partitions(st, root)
    seg = part.segments[0]
    assert seg.manifest.encryption is not None
    with pytest.raises(UnsupportedLayoutError, match="encrypted") as info:
        open_remote_log(st, seg)
    assert "key-2024" in str(info.value) and "private key" in str(info.value)
    assert info.value.file == st.url(seg.log)
    with pytest.raises(UnsupportedLayoutError, match="encrypted"):
        read_remote_side_file(st, seg, "index")


def test_aiven_duplicates_and_missing_manifest(tmp_path, written):
    """Resolution by the manifests' end offsets; a segment without manifest is reported, not read."""
    base, files = _segments(written["plain"])[0]
    log = pathlib.Path(files[".log"]).read_bytes()
    tid = _id(41)
    objs = {}
    for sid, end in ((_id(411), 1100), (_id(412), 1090)):
        lo, ix, man = aiven_objects(log, {}, topic="plain", partition=1, topic_id=tid, segment_id=sid,
                                    base_offset=base, end_offset=end)
        key = f"plain-{tid}/1/{base:020d}-{sid}"
        objs[key + ".log"], objs[key + ".indexes"], objs[key + ".rsm-manifest"] = lo, ix, man
    objs[f"plain-{tid}/1/{base + 5000:020d}-{_id(413)}.log"] = log
    _write_local(tmp_path, objs)
    (part,) = list_remote_partitions(LocalStorage(), str(tmp_path))
    assert [s.segment_id for s in part.segments] == [_id(411)]
    assert [s.segment_id for s in part.superseded] == [_id(412)]
    assert any("no .rsm-manifest" in p for p in part.problems)
    with open_remote_log(LocalStorage(), part.segments[0]) as blob:
        assert bytes(blob.view()) == log          # untransformed, local: the mmap itself
    assert read_remote_side_file(LocalStorage(), part.segments[0], "txnindex") is None


def test_aiven_encrypted_segment_with_the_key(s3, written):
    """Compressed + encrypted and encrypted-only segments read with the RSA private key given."""
    from cryptography.hazmat.primitives.asymmetric import rsa as crypto
    from cryptography.hazmat.primitives import serialization
    private = crypto.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    other = crypto.generate_private_key(public_exponent=65537, key_size=2048)
    bucket = s3.bucket()
    tid = _id(51)
    objs = aiven_layout_objects(written["orders"], "orders-events", 0, tid, chunk_size=16 * KIB, compress=True,
                                encrypt_with=("kek-1", private.public_key()))
    objs.update(aiven_layout_objects(written["plain"], "plain", 1, _id(52), chunk_size=16 * KIB, compress=False,
                                     encrypt_with=("kek-1", private.public_key())))
    _put_all(s3, bucket, "", objs)
    st, root = open_storage(f"s3://{bucket}", storage_options=s3.storage_options)
    parts = list_remote_partitions(st, root)
    for part, local in zip(parts, (written["orders"], written["plain"])):
        for seg, (base, files) in zip(part.segments, _segments(local)):
            data = pathlib.Path(files[".log"]).read_bytes()
            assert seg.manifest.key_id == "kek-1" and seg.manifest.transformed_size == seg.size
            with pytest.raises(UnsupportedLayoutError, match="kek-1"):
                open_remote_log(st, seg)
            with open_remote_log(st, seg, tiered_keys={"kek-1": pem}, read_ahead=8 * KIB) as blob:
                assert isinstance(blob, AivenSegmentBlob) and blob.size == len(data)
                assert bytes(blob.read(0, blob.size)) == data
                mid = len(data) // 3
                assert bytes(blob.read(mid, mid + 5000)) == data[mid:mid + 5000]
            assert read_remote_side_file(st, seg, "index", tiered_keys={"kek-1": private}) == \
                pathlib.Path(files[".index"]).read_bytes()
            with pytest.warns(DeprecationWarning, match=r"keys=.*tiered_keys="):      # the old name, for a release
                assert read_remote_side_file(st, seg, "index", keys={"kek-1": private}) == \
                    pathlib.Path(files[".index"]).read_bytes()
            with pytest.raises(UnsupportedLayoutError, match="does not unwrap"):
                open_remote_log(st, seg, tiered_keys={"kek-1": other})


def test_aiven_encrypted_upload_through_the_partition_readers_and_the_commands(tmp_path, written, capsys):
    """An encrypted Aiven upload on local disk: read_log_dir and iter_log_dir of its partition folder take
    tiered_keys (an upload folder is a partition folder for them), the commands take --tiered-key (report
    too); without the key, each says which key it needs."""
    from cryptography.hazmat.primitives.asymmetric import rsa as crypto
    from cryptography.hazmat.primitives import serialization
    from kafkafmt.cli import main

    private = crypto.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    (tmp_path / "kek-3.pem").write_bytes(pem)
    tid = _id(61)
    _write_local(tmp_path / "up", aiven_layout_objects(written["orders"], "orders-events", 0, tid, chunk_size=16 * KIB,
                                                       compress=True, encrypt_with=("kek-3", private.public_key())))
    folder = tmp_path / "up" / f"orders-events-{tid}" / "0"
    want = kafkafmt.read_log_dir(written["orders"])
    with pytest.raises(UnsupportedLayoutError, match="kek-3.*tiered_keys="):
        kafkafmt.read_log_dir(folder)
    got = kafkafmt.read_log_dir(folder, tiered_keys={"kek-3": pem})
    assert got.offset.tolist() == want.offset.tolist() and got.value.to_pylist() == want.value.to_pylist()
    assert (got.topic, got.partition) == ("orders-events", 0)
    chunks = list(kafkafmt.iter_log_dir(str(folder), tiered_keys={"kek-3": pem.decode()}, max_bytes=16 * KIB))
    assert len(chunks) > 1 and sum(len(c) for c in chunks) == len(want)
    # read_segment of one upload's log object takes tiered_keys as the other readers do
    (base, files), upload = _segments(written["orders"])[-1], sorted(folder.glob("*.log"))[-1]
    assert upload.name.startswith(f"{base:020d}-")
    with pytest.raises(UnsupportedLayoutError, match="kek-3"):
        kafkafmt.read_segment(upload)
    seg = kafkafmt.read_segment(upload, tiered_keys={"kek-3": pem})
    plain = kafkafmt.read_segment(files[".log"])
    assert (seg.topic, seg.partition) == ("orders-events", 0) and len(seg) == len(plain) > 0
    assert seg.offset.tolist() == plain.offset.tolist() and seg.value.to_pylist() == plain.value.to_pylist()
    key = ["--tiered-key", f"kek-3={tmp_path / 'kek-3.pem'}"]
    for command in (["stats", "--json"], ["report", "--json"]):
        capsys.readouterr()
        assert main(command + ["--no-progress", str(tmp_path / "up")] + key) == 0, command
        doc = json.loads(capsys.readouterr().out)
        assert sum(p["records"] for p in doc["partitions"]) == len(want), command
        assert main(command + ["--no-progress", str(tmp_path / "up")]) == 1, command
        assert "kek-3" in capsys.readouterr().err, command
    assert main(["stats", str(tmp_path / "up"), "--tiered-key", "kek-3"]) == 2           # KEY_ID=PEM_FILE
    assert "--tiered-key takes KEY_ID=PEM_FILE" in capsys.readouterr().err


def test_oaep_decrypt_agrees_with_openssl():
    """The OAEP decoder (needed for SHA3-512, which OpenSSL's OAEP lacks here) against OpenSSL's
    encryption with SHA-256 and SHA-1 (the same algorithm, another digest)."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for alg, mgf, name, mgf_name in ((hashes.SHA256(), hashes.SHA256(), "sha256", "sha256"),
                                     (hashes.SHA512(), hashes.SHA1(), "sha512", "sha1")):
        for msg in (b"", b"k" * 32, os.urandom(40)):
            ct = key.public_key().encrypt(msg, padding.OAEP(mgf=padding.MGF1(mgf), algorithm=alg, label=None))
            assert oaep_decrypt(key, ct, name, mgf_name) == msg
            assert oaep_decrypt(key, ct, "sha3_512") is None
    wrapped = _rsa_wrap(key.public_key(), b"d" * 32)
    assert oaep_decrypt(key, wrapped, "sha3_512") == b"d" * 32
