#!/usr/bin/env python3
"""Write the seed corpora of the fuzz harnesses into fuzz/corpus/<target>/ (git-ignored).

Seeds: batches generated for every magic x codec (kafkafmt's writer and kafka-python's builders
from tests/kpy.py), control and empty batches, mixed-format logs, zero-filled and truncated tails;
compressed payloads of every codec and framing variant; side files written by kafkafmt; and the
real broker-written files of ../shared/real-corpus (read from there, never copied into the repo:
only into the git-ignored corpus folder).

    python fuzz/seed_corpus.py [--real-corpus PATH] [--out fuzz/corpus] [--max-len 65536]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))

import kfuzz as common  # noqa: E402

common.load(instrument=False)
kafkafmt = common.kafkafmt

import cramjam  # noqa: E402
import lz4.frame  # noqa: E402
import zstandard  # noqa: E402

from kafkafmt.record import encode_empty_batch  # noqa: E402

TS = 1_600_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# option bytes each log seed is written with: strict defaults, and a mix of the other options
OPTS = (0x00, 0x01 | 0x04 | 0x40, 0x02 | 0x08 | 0x80, 0x01 | 0x10 | 0x20 | 0x80)


def _records(n, salt=0, headers=True, nulls=True):
    keys, values, hdrs = [], [], []
    for i in range(n):
        j = i + salt
        keys.append(None if nulls and i % 4 == 1 else b"key-%d" % j)
        values.append(None if nulls and i % 5 == 3 else (b"" if i % 7 == 6 else b"value-%d-" % j + b"abcdefgh" * (i % 9)))
        hdrs.append([] if not headers or i % 3 == 0 else [("h%d" % k, None if k == 2 else b"hv" * k) for k in range(i % 4)])
    return keys, values, hdrs


def v2_logs():
    out = {}
    for codec in CODECS:
        k, v, h = _records(9)
        out[f"v2_{codec}"] = kafkafmt.encode(keys=k, values=v, headers=h, timestamps=[TS + i for i in range(9)],
                                             compression=codec, batch_size=300, base_offset=100)
        out[f"v2_{codec}_lat_txn"] = kafkafmt.encode(
            keys=k[:4], values=v[:4], timestamps=[TS] * 4, compression=codec, timestamp_type="LogAppendTime",
            log_append_time=TS + 5, producer_id=77, producer_epoch=3, base_sequence=10, transactional=True,
            base_offset=5, partition_leader_epoch=9)
        out[f"v2_{codec}_one"] = kafkafmt.encode(keys=[b"k"], values=[b"v" * 100], timestamps=[TS], compression=codec)
    out["v2_control"] = (kafkafmt.encode(keys=[b"a", b"b"], values=[b"1", b"2"], timestamps=[TS, TS],
                                         producer_id=5, producer_epoch=0, transactional=True)
                         + kafkafmt.encode_control("commit", offset=2, producer_id=5, timestamp=TS)
                         + kafkafmt.encode_control("abort", offset=3, producer_id=6, coordinator_epoch=4, timestamp=TS)
                         + encode_empty_batch(base_offset=4, last_offset=9, timestamp=TS, producer_id=5))
    out["v2_empty"] = encode_empty_batch(base_offset=0, timestamp=TS)
    out["v2_zero_tail"] = out["v2_none"] + bytes(200)
    out["v2_truncated"] = out["v2_gzip"][:-7]
    try:
        import kpy
    except Exception:  # kafka-python missing: kafkafmt's writer alone
        return out
    for codec in CODECS:
        for feature in ("headers", "null_keys", "null_values", "empty_values", "gaps"):
            recs = kpy.make_records(10, 4, feature)
            try:
                out[f"kpy_v2_{codec}_{feature}"] = kpy.build_v2(recs, codec)
            except AssertionError:
                pass
        out[f"kpy_v2_{codec}_lat"] = kpy.build_v2(kpy.make_records(0, 3), codec, log_append_time=kpy.T_APPEND,
                                                  partition_leader_epoch=17)
    for ctype in range(7):
        out[f"kpy_control_{ctype}"] = kpy.build_control_v2(50, ctype, producer_id=3 if ctype < 2 else -1,
                                                           producer_epoch=0 if ctype < 2 else -1)
    out["kpy_empty"] = kpy.build_empty_v2(40, 3, producer_id=8, producer_epoch=1, base_sequence=2)
    return out


def legacy_logs():
    out = {}
    for magic in (0, 1):
        for codec in CODECS[:4]:
            k, v, _ = _records(6, headers=False)
            out[f"m{magic}_{codec}"] = kafkafmt.encode(keys=k, values=v, timestamps=[TS + i for i in range(6)],
                                                       magic=magic, compression=codec, batch_size=200, base_offset=30)
        out[f"m{magic}_lat"] = kafkafmt.encode(keys=[b"k"] * 3, values=[b"v" * 50] * 3, timestamps=[TS] * 3,
                                               magic=magic, compression="gzip", timestamp_type="LogAppendTime",
                                               log_append_time=TS + 9)
    try:
        import kpy
    except Exception:
        return out
    for magic in (0, 1):
        for codec in CODECS[:4]:
            recs = kpy.make_records(20, 3, "null_keys")
            try:
                out[f"kpy_m{magic}_{codec}"] = kpy.build_legacy(recs, magic, codec)
                if magic == 1 and codec != "none":
                    out[f"kpy_m1_{codec}_asis"] = kpy.build_legacy(recs, 1, codec, mode="as_is")
                    out[f"kpy_m1_{codec}_lat"] = kpy.build_legacy(recs, 1, codec, log_append_time=kpy.T_APPEND)
            except AssertionError:
                pass
    return out


def payloads():
    """Compressed payloads of every codec and framing (raw data: v2 records and v0/v1 message sets)."""
    raw_v2 = kafkafmt.encode(keys=[b"k%d" % i for i in range(20)], values=[b"value " * (i + 1) for i in range(20)],
                             timestamps=[TS] * 20)[61:]
    raw_legacy = kafkafmt.encode(keys=[b"k"] * 5, values=[b"abc" * 30] * 5, timestamps=[TS] * 5, magic=1)
    out = []                                                    # (codec id, magic, payload)
    for codec_id in (1, 2, 3, 4):
        c = common.codecs.get_codec(codec_id)
        for magic in ((0, 1, 2) if codec_id != 4 else (2,)):
            raw = raw_v2 if magic == 2 else raw_legacy
            out.append((codec_id, magic, c.compress(raw, magic=magic)))
        out.append((codec_id, 2, c.compress(b"", magic=2)))
        out.append((codec_id, 2, c.compress(bytes(300000), magic=2)))     # ratio > 100
    out.append((2, 2, bytes(cramjam.snappy.compress_raw(raw_v2))))
    out.append((2, 2, common.codecs.get_codec(2).compress(raw_v2) * 2))            # concatenated xerial streams
    out.append((1, 2, common.codecs.get_codec(1).compress(raw_v2) * 2))            # two gzip members
    out.append((1, 2, __import__("zlib").compress(raw_v2)))                         # zlib container
    out.append((3, 2, lz4.frame.compress(raw_v2, store_size=True, content_checksum=True, block_checksum=True)))
    out.append((3, 2, lz4.frame.compress(raw_v2 * 50, block_size=lz4.frame.BLOCKSIZE_MAX4MB, store_size=False)))
    out.append((3, 2, common.codecs.get_codec(3).compress(raw_v2) * 2))
    out.append((4, 2, zstandard.ZstdCompressor(write_content_size=False).compress(raw_v2)))
    out.append((4, 2, zstandard.ZstdCompressor(write_checksum=True).compress(raw_v2) * 2))
    out.append((4, 2, struct.pack("<II", 0x184D2A50, 4) + b"skip" + zstandard.ZstdCompressor().compress(raw_v2)))
    cobj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    out.append((4, 2, cobj.compress(raw_v2) + cobj.flush()))
    return out


def side_files():
    s = common.sidefiles
    out = []                                                    # (reader name, bytes)
    out.append(("index", s.encode_index([(10, 0), (15, 4096), (30, 9000)], 5)))
    out.append(("index", s.encode_index([(10, 4100)], 5) + bytes(80)))
    out.append(("timeindex", s.encode_timeindex([(TS, 10), (TS + 5, 20)], 5)))
    out.append(("timeindex_untrimmed", s.encode_timeindex([(TS, 10)], 5) + bytes(36)))
    out.append(("txnindex", s.encode_txnindex([(7, 10, 20, 5), (8, 12, 30, 9)])))
    out.append(("producer_snapshot", s.encode_producer_snapshot(
        [(1, 0, 5, 100, 2, TS, -1, -1), (2, 3, 7, 200, 0, TS, 4, 150)])))
    out.append(("producer_snapshot_nocrc", s.encode_producer_snapshot([])))
    out.append(("leader_epoch_checkpoint", s.encode_leader_epoch_checkpoint([(0, 0), (3, 120)])))
    out.append(("offset_checkpoint", s.encode_offset_checkpoint({("orders", 3): 42, ("t", 0): 0})))
    out.append(("partition_metadata", s.encode_partition_metadata(bytes(range(1, 17)))))
    out.append(("quorum_state", b'{"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,'
                                b'"currentVoters":[{"voterId":1}],"data_version":0}'))
    out.append(("meta_properties", b"#\n#Tue\nnode.id=1\nversion=1\ncluster.id=abc\\\n  def\nkey\\u0041=x\\ty\n"))
    # sound against kfuzz's batch table (the one-pass checks' "yes"), and one entry off it
    out.append(("index_sound", s.encode_index([(2, 0), (8, 100), (20, 250)], 0)))
    out.append(("index_sound", s.encode_index([(2, 0), (8, 101)], 0) + bytes(16)))
    out.append(("timeindex_sound", s.encode_timeindex([(1000, 2), (2000, 20)], 0)))
    out.append(("timeindex_sound", s.encode_timeindex([(1000, 2), (1900, 8)], 0)))
    return out


REAL_SIDE = {".index": "index", ".timeindex": "timeindex", ".snapshot": "producer_snapshot",
             "leader-epoch-checkpoint": "leader_epoch_checkpoint", "partition.metadata": "partition_metadata",
             "quorum-state": "quorum_state", "meta.properties": "meta_properties",
             "recovery-point-offset-checkpoint": "offset_checkpoint",
             "replication-offset-checkpoint": "offset_checkpoint", "log-start-offset-checkpoint": "offset_checkpoint",
             "cleaner-offset-checkpoint": "offset_checkpoint", ".txnindex": "txnindex"}


def _pieces(buf, max_len):
    """The buffer, or pieces of it cut at entry boundaries, each at most max_len bytes."""
    if len(buf) <= max_len:
        return [buf]
    out, start, last = [], 0, 0
    for pos, total, _ in common.entries(buf):
        if pos + total - start > max_len:
            if pos > start:
                out.append(buf[start:pos])
            start = pos
        last = pos + total
    if last > start:
        out.append(buf[start:min(last, start + max_len)])
    return [p for p in out if p]


def _payload_of(buf, pos, total, magic):
    if magic == 2:
        return buf[pos + 61:pos + total]
    key_at = pos + (26 if magic == 1 else 18)
    klen = struct.unpack_from(">i", buf, key_at)[0]
    return buf[key_at + 8 + max(klen, 0):pos + total]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-corpus", default=os.environ.get("KAFKAFMT_REAL_CORPUS", str(REPO.parent / "shared" / "real-corpus")))
    ap.add_argument("--out", default=str(HERE / "corpus"))
    ap.add_argument("--max-len", type=int, default=65536)
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    counts = {}

    def put(target, data):
        if len(data) > args.max_len:
            return
        d = out / target
        d.mkdir(parents=True, exist_ok=True)
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
        counts[target] = counts.get(target, 0) + 1

    def put_log(targets, buf, i):
        for t in targets:
            for opt in (OPTS[0], OPTS[1 + (i + len(buf)) % 3]):
                for piece in _pieces(buf, args.max_len - 1):
                    put(t, bytes([opt]) + piece)

    v2, legacy = v2_logs(), legacy_logs()
    for i, buf in enumerate(v2.values()):
        put_log(("decode", "v2", "salvage"), buf, i)
    for i, buf in enumerate(legacy.values()):
        put_log(("decode", "legacy", "salvage"), buf, i)
    put_log(("decode",), legacy["m1_gzip"] + v2["v2_zstd"] + legacy["m0_none"] + v2["v2_control"], 0)

    comp = payloads()
    real = pathlib.Path(args.real_corpus)
    real_files = sorted(p for p in real.rglob("*") if p.is_file()) if real.is_dir() else []
    for p in real_files:
        name = p.name
        data = p.read_bytes()
        if name.endswith((".log", ".log.bin")):
            magics = {m for _, _, m in common.entries(data)}
            targets = ["decode", "salvage"] + (["v2"] if 2 in magics else []) + (["legacy"] if magics & {0, 1} else [])
            put_log(targets, data, len(name))
            for pos, total, magic in common.entries(data):
                attrs = struct.unpack_from(">h", data, pos + 21)[0] if magic == 2 else data[pos + 17]
                if attrs & 7 and (magic == 2 or total >= 26):
                    comp.append((attrs & 7, magic, _payload_of(data, pos, total, magic)))
            continue
        for suffix, reader in REAL_SIDE.items():
            if name.endswith(suffix) or name == suffix:
                put("sidefiles", bytes([common.SIDE_NAMES.index(reader)]) + data)
                break

    seen = set()
    for codec_id, magic, payload in comp:
        if (codec_id, magic, payload) in seen:
            continue
        seen.add((codec_id, magic, payload))
        sel = codec_id | ({0: 0, 1: 1, 2: 2}[magic] << 3)
        for cap in (4, 6, 2):                                   # 4 KiB, 1 MiB, 7 bytes
            put("codecs", bytes([sel, cap]) + bytes(payload))
    for reader, data in side_files():
        put("sidefiles", bytes([common.SIDE_NAMES.index(reader)]) + data)
    print(f"seeds in {out}: " + ", ".join(f"{t} {n}" for t, n in sorted(counts.items()))
          + ("" if real_files else f" (no real corpus at {real})"))


if __name__ == "__main__":
    main()
