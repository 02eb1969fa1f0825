"""Log dirs read where they live (issue 13): the library on a real S3 API server (moto on loopback)
gives exactly what it gives from the same files on local disk -- whole log dirs, seeks, read_committed,
real broker files --, an offset seek fetches a small part of a large segment (counted by a proxy in
front of the server), tiered uploads are merged with a partition's local segments, and failures are
clear errors naming the URL."""
import os
import pathlib
import shutil

import numpy as np
import pytest

import kafkafmt
from kafkafmt.errors import KafkafmtError, StorageNotFoundError

from s3server import SECRET, fault_proxy, s3  # noqa: F401  (pytest fixtures)
from test_tiered import _id, _put_all, aiven_layout_objects, kafka_layout_objects

KIB = 1024


def rows(recs):
    topics = recs.topic if isinstance(recs.topic, np.ndarray) else [recs.topic] * len(recs)
    parts = recs.partition if isinstance(recs.partition, np.ndarray) else [recs.partition] * len(recs)
    return list(zip(list(topics), [int(p) for p in parts], recs.offset.tolist(), recs.timestamp.tolist(),
                    recs.key.to_pylist(), recs.value.to_pylist(), recs.headers.to_pylist()))


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """A log dir written by kafkafmt: several partitions and segments, every codec, headers, a
    transaction aborted and one committed."""
    root = tmp_path_factory.mktemp("remote") / "kafka-logs"
    rng = np.random.default_rng(7)
    for p, codec in enumerate(["none", "lz4", "zstd", "gzip", "snappy"]):
        n = 1500
        vals = [bytes(rng.integers(0, 256, int(rng.integers(10, 300)), dtype=np.uint8)) for _ in range(n)]
        kafkafmt.write_log_dir(str(root / f"orders-{p}"), keys=[b"k%d" % i for i in range(n)], values=vals,
                               timestamps=[1_767_225_600_000 + 37 * i for i in range(n)],
                               headers=[[("h", b"%d" % i)] if i % 3 == 0 else [] for i in range(n)],
                               compression=codec, segment_bytes=64 * KIB, index_interval_bytes=1024, batch_size=4096)
    with kafkafmt.LogWriter(str(root / "payments-0"), segment_bytes=2 * KIB) as w:
        w.append(values=[b"a%d" % i for i in range(20)], timestamps=[1] * 20)
        w.append(values=[b"t%d" % i for i in range(10)], timestamps=[2] * 10, producer_id=9, transactional=True)
        w.append_control("abort", producer_id=9, timestamp=3)
        w.append(values=[b"u%d" % i for i in range(10)], timestamps=[4] * 10, producer_id=9, transactional=True)
        w.append_control("commit", producer_id=9, timestamp=5)
    (root / "meta.properties").write_text("version=1\nnode.id=1\n")
    return root


@pytest.fixture(scope="module")
def bucket_logs(s3, logs):
    b = s3.bucket()
    s3.upload_dir(str(logs), b, "kafka-logs")
    return f"s3://{b}/kafka-logs"


def test_read_log_dirs_from_s3_equals_local(s3, logs, bucket_logs):
    local = kafkafmt.read_log_dirs(str(logs))
    remote = kafkafmt.read_log_dirs(bucket_logs, storage_options=s3.storage_options)
    assert len(remote) == len(local) > 7000
    assert rows(remote) == rows(local)
    # one partition, by URL, with seeks by offset and time, read_committed, columns
    url = f"{bucket_logs}/orders-2"
    for kw in (dict(start_offset=700, end_offset=900), dict(start_timestamp=1_767_225_600_000 + 37 * 1000),
               dict(columns=["offset", "value"])):
        a = kafkafmt.read_log_dir(str(logs / "orders-2"), **kw)
        b = kafkafmt.read_log_dir(url, storage_options=s3.storage_options, **kw)
        assert a.offset.tolist() == b.offset.tolist() and a.value.to_pylist() == b.value.to_pylist()
        assert b.columns == a.columns
    a = kafkafmt.read_log_dir(str(logs / "payments-0"), isolation="read_committed")
    b = kafkafmt.read_log_dir(f"{bucket_logs}/payments-0", isolation="read_committed",
                              storage_options=s3.storage_options)
    assert a.value.to_pylist() == b.value.to_pylist() and b"t0" not in b.value.to_pylist() and b"u0" in b.value.to_pylist()
    # one segment by URL
    seg = kafkafmt.list_segments(str(logs / "orders-1"))[1]
    c = kafkafmt.read_segment(f"{bucket_logs}/orders-1/{os.path.basename(seg.log)}", storage_options=s3.storage_options)
    assert c.offset.tolist() == kafkafmt.read_segment(seg.log).offset.tolist() and (c.topic, c.partition) == ("orders", 1)
    # chunked
    chunks = list(kafkafmt.iter_log_dirs(bucket_logs, storage_options=s3.storage_options, topics=["orders"],
                                         max_bytes=64 * KIB))
    assert len(chunks) > 5 and sum(len(c) for c in chunks) == 7500


def test_real_broker_dirs_from_s3(s3, real_corpus):
    b = s3.bucket()
    root = real_corpus / "broker-dirs" / "DonaldY__kafka-2.7.1"
    s3.upload_dir(str(root), b, "broker")
    local = kafkafmt.read_log_dirs(str(root), include_control=True)
    remote = kafkafmt.read_log_dirs(f"s3://{b}/broker", storage_options=s3.storage_options, include_control=True)
    assert len(remote) == len(local) > 0 and rows(remote) == rows(local)


def test_damage_on_s3_is_found_as_locally(s3, tmp_path):
    folder = tmp_path / "logs" / "t-0"
    kafkafmt.write_log_dir(str(folder), values=[b"v%d" % i for i in range(400)], timestamps=list(range(400)),
                           batch_size=256)
    seg = kafkafmt.list_segments(str(folder))[0].log
    data = bytearray(pathlib.Path(seg).read_bytes())
    batches = kafkafmt.read_segment(seg).batches
    assert len(batches) > 8
    pos = int(batches.position[5])
    data[pos + 4] = 0xFF                      # a base offset (outside the CRC)
    pathlib.Path(seg).write_bytes(bytes(data))
    b = s3.bucket()
    s3.upload_dir(str(tmp_path / "logs"), b, "logs")
    with pytest.raises(kafkafmt.CorruptRecordError) as local_err:
        kafkafmt.read_log_dir(str(folder))
    with pytest.raises(kafkafmt.CorruptRecordError) as remote_err:
        kafkafmt.read_log_dir(f"s3://{b}/logs/t-0", storage_options=s3.storage_options)
    assert remote_err.value.position == local_err.value.position == pos
    assert remote_err.value.file.startswith("s3://") and SECRET not in str(remote_err.value)
    a = kafkafmt.read_log_dir(str(folder), errors="salvage")
    r = kafkafmt.read_log_dir(f"s3://{b}/logs/t-0", errors="salvage", storage_options=s3.storage_options)
    assert a.offset.tolist() == r.offset.tolist()
    assert [(e.start, e.end) for e in a.report if e.is_damage] == [(e.start, e.end) for e in r.report if e.is_damage]


def test_offset_seek_fetches_a_small_part_of_a_large_segment(s3, fault_proxy, tmp_path):
    """A seek to one offset in a large remote segment: bytes fetched <= 2 x (index bytes + the
    batches returned + one read-ahead block), counted on the wire by the proxy."""
    folder = tmp_path / "big" / "t-0"
    n = 160_000
    rng = np.random.default_rng(3)
    vals = [bytes(rng.integers(0, 256, 200, dtype=np.uint8)) for _ in range(2000)] * (n // 2000)
    kafkafmt.write_log_dir(str(folder), values=vals, timestamps=list(range(n)), batch_size=16 * KIB)
    seg = kafkafmt.list_segments(str(folder))[0]
    assert seg.size > 32 << 20
    b = s3.bucket()
    s3.upload_dir(str(tmp_path / "big"), b, "big")
    read_ahead = 1 << 20
    opts = fault_proxy.storage_options
    fault_proxy.log.clear()
    from kafkafmt.storage import open_storage

    storage, path = open_storage(f"s3://{b}/big/t-0", opts, read_ahead=read_ahead)
    target = n // 2
    recs = kafkafmt.read_log_dir(kafkafmt.log._discovery.resolve_partition(
        kafkafmt.log._discovery.Partition("t", 0, path, storage)), start_offset=target, end_offset=target + 5)
    assert recs.offset.tolist() == list(range(target, target + 5))
    got = sum(int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1
              for _m, _p, r in fault_proxy.log if r)
    index_bytes = os.path.getsize(seg.index)
    returned = int(recs.batches["size"].sum())
    budget = 2 * (index_bytes + returned + read_ahead)
    assert got <= budget, (got, budget, seg.size)
    assert got < seg.size / 10


def test_tiered_and_local_merged(s3, tmp_path):
    """One partition, two places: tiered uploads (older) and the local log (newer), a segment in
    both read once; with a gap, the gap is reported."""
    full = tmp_path / "full" / "events-3"
    kafkafmt.write_log_dir(str(full), values=[b"e%d" % i for i in range(3000)], timestamps=list(range(3000)),
                           segment_bytes=6 * KIB, index_interval_bytes=1024, batch_size=1024)
    segs = kafkafmt.list_segments(str(full))
    assert len(segs) >= 6
    # tiered: the first 4 segments (Kafka's layout); local: segments 3.. (segment 3 in both)
    tiered_dir = tmp_path / "tiered-src" / "events-3"
    local_root = tmp_path / "local" / "kafka-logs"
    tiered_dir.mkdir(parents=True)
    (local_root / "events-3").mkdir(parents=True)
    (local_root / "meta.properties").write_text("version=1\n")
    for k, s in enumerate(segs):
        for suffix in (".log", ".index", ".timeindex"):
            src = s.log[:-4] + suffix
            if k < 4:
                shutil.copy(src, tiered_dir / os.path.basename(src))
            if k >= 3:
                shutil.copy(src, local_root / "events-3" / os.path.basename(src))
    b = s3.bucket()
    tid = _id(42)
    _put_all(s3, b, "tiered", kafka_layout_objects(str(tiered_dir), "events", 3, tid))
    whole = kafkafmt.read_log_dir(str(full))
    merged = kafkafmt.read_log_dirs([str(local_root), f"s3://{b}/tiered"], storage_options=s3.storage_options)
    assert merged.offset.tolist() == whole.offset.tolist() and merged.value.to_pylist() == whole.value.to_pylist()
    assert not [e for e in merged.report if e.kind is kafkafmt.ReportKind.GAP]
    # the tiered uploads alone
    alone = kafkafmt.read_log_dirs(f"s3://{b}/tiered", storage_options=s3.storage_options)
    assert alone.offset.tolist() == [o for o in whole.offset.tolist() if o < segs[4].base_offset]
    # a gap: the local log starts two segments after the uploads end
    for k in (3, 4):
        for suffix in (".log", ".index", ".timeindex"):
            os.unlink(local_root / "events-3" / os.path.basename(segs[k].log[:-4] + suffix))
    b2 = s3.bucket()
    only = {k: v for k, v in kafka_layout_objects(str(tiered_dir), "events", 3, tid).items()
            if not k.split("/")[-1].startswith(f"{segs[3].base_offset:020d}")}
    _put_all(s3, b2, "tiered", only)
    gapped = kafkafmt.read_log_dirs([str(local_root), f"s3://{b2}/tiered"], storage_options=s3.storage_options)
    gaps = [e for e in gapped.report if e.kind is kafkafmt.ReportKind.GAP]
    assert len(gaps) == 1 and gaps[0].offset == segs[3].base_offset
    assert f"{segs[3].base_offset}..{segs[5].base_offset - 1}" in gaps[0].message
    assert gapped.offset.tolist() == [o for o in whole.offset.tolist()
                                      if o < segs[3].base_offset or o >= segs[5].base_offset]


@pytest.mark.parametrize("compress", [False, True])
def test_aiven_layout_read_as_a_log_dir(s3, tmp_path, compress):
    part = tmp_path / "src" / "clicks-1"
    kafkafmt.write_log_dir(str(part), values=[b"c%d" % i for i in range(4000)], timestamps=list(range(4000)),
                           segment_bytes=48 * KIB, index_interval_bytes=2048, compression="lz4")
    b = s3.bucket()
    _put_all(s3, b, "", aiven_layout_objects(str(part), "clicks", 1, _id(7), prefix="tiered/", compress=compress,
                                             chunk_size=16 * KIB))
    local = kafkafmt.read_log_dir(str(part))
    remote = kafkafmt.read_log_dirs(f"s3://{b}/tiered", storage_options=s3.storage_options)
    assert rows(remote) == rows(local.replace(topic="clicks", partition=1))
    seek = kafkafmt.read_log_dirs(f"s3://{b}/tiered", storage_options=s3.storage_options, start_offset=2500,
                                  end_offset=2510)
    assert seek.offset.tolist() == list(range(2500, 2510))


def test_errors_name_the_url_never_the_secret(s3):
    b = s3.bucket()
    with pytest.raises(StorageNotFoundError) as err:
        kafkafmt.read_log_dirs(f"s3://{b}-missing/logs", storage_options=s3.storage_options)
    assert "s3://" in str(err.value) and SECRET not in str(err.value)
    with pytest.raises(KafkafmtError) as err:
        kafkafmt.read_log_dir(f"s3://{b}/nothing-0", storage_options=s3.storage_options)
    assert SECRET not in str(err.value)


# ------------------------------------------------------------------------------------------------
# the command line on a bucket

def _cli(*args):
    import subprocess
    import sys

    env = dict(os.environ, AWS_DEFAULT_REGION="us-east-1")
    env.pop("KAFKAFMT_PROGRESS", None)
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kafkafmt", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)


def _opts(s3):
    o = s3.storage_options
    return ["--storage-option", f"endpoint_url={o['endpoint_url']}", "--storage-option", f"key={o['key']}",
            "--storage-option", f"secret={o['secret']}"]


def test_cli_on_s3_equals_local(s3, logs, bucket_logs, tmp_path):
    import json

    local = json.loads(_cli("stats", "--json", logs).stdout)
    p = _cli("stats", "--json", bucket_logs, *_opts(s3))
    assert p.returncode == 0, p.stderr
    remote = json.loads(p.stdout)
    assert remote["totals"]["records"] == local["totals"]["records"] > 7000
    assert [(d["name"], d["records"], d["lastOffset"]) for d in remote["partitions"]] == \
        [(d["name"], d["records"], d["lastOffset"]) for d in local["partitions"]]
    assert all(d["path"].startswith("s3://") for d in remote["partitions"])
    p = _cli("verify", bucket_logs, *_opts(s3))
    assert p.returncode == 0 and p.stdout.startswith("OK: 6 partitions"), p.stdout + p.stderr
    out_l, out_r = tmp_path / "l.jsonl", tmp_path / "r.jsonl"
    assert _cli("export", logs, "--to", out_l).returncode == 0
    p = _cli("export", bucket_logs, "--to", out_r, *_opts(s3))
    assert p.returncode == 0, p.stderr
    assert out_r.read_text() == out_l.read_text()
    seg = kafkafmt.list_segments(str(logs / "orders-1"))[0]
    name = os.path.basename(seg.log)
    a = _cli("dump", "--records", seg.log)
    b = _cli("dump", "--records", f"{bucket_logs}/orders-1/{name}", *_opts(s3))
    assert b.returncode == 0, b.stderr
    assert b.stdout.splitlines()[1:] == a.stdout.splitlines()[1:]
    b = _cli("dump", "--verify-index-only", f"{bucket_logs}/orders-1/{name[:-4]}.index", *_opts(s3))
    assert b.returncode == 0, b.stderr
    p = _cli("stats", f"{bucket_logs}-nope", *_opts(s3))
    assert p.returncode == 2 and "no such file" in p.stderr and SECRET not in p.stderr


def test_encrypted_aiven_uploads_need_their_key(s3, tmp_path):
    from cryptography.hazmat.primitives.asymmetric import rsa as crypto
    from cryptography.hazmat.primitives import serialization

    private = crypto.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    part = tmp_path / "src" / "secret-0"
    kafkafmt.write_log_dir(str(part), values=[b"s%d" % i for i in range(2000)], timestamps=list(range(2000)),
                           segment_bytes=24 * KIB, index_interval_bytes=2048)
    b = s3.bucket()
    _put_all(s3, b, "", aiven_layout_objects(str(part), "secret", 0, _id(9), prefix="t/", compress=True,
                                             chunk_size=8 * KIB, encrypt_with=("kek-7", private.public_key())))
    with pytest.raises(kafkafmt.errors.UnsupportedLayoutError, match="kek-7"):
        kafkafmt.read_log_dirs(f"s3://{b}/t", storage_options=s3.storage_options)
    recs = kafkafmt.read_log_dirs(f"s3://{b}/t", storage_options=s3.storage_options, tiered_keys={"kek-7": pem})
    assert recs.value.to_pylist() == kafkafmt.read_log_dir(str(part)).value.to_pylist()


# ------------------------------------------------------------------------------------------------
# a cluster's backup: the prefix listed once, each object read once, concurrently

@pytest.fixture(scope="module")
def backup(s3, tmp_path_factory):
    """Three brokers' log dirs written by kafka-python's builders (copies in sync, behind, empty partitions,
    an unreplicated topic, rolled segments), uploaded under one prefix: (local root, URL, the keys)."""
    import kcluster

    root = tmp_path_factory.mktemp("backup") / "c1"
    kcluster.write_cluster(root, {"orders": (3, 3), "events": (2, 2), "audit": (1, 1)}, records=30, seed=3,
                           segment_bytes=1500, behind=0.3, empty=0.2)
    bucket = s3.bucket()
    n = s3.upload_dir(str(root), bucket, "c1")
    return root, f"s3://{bucket}/c1", n


def _object_reads(proxy):
    """(listing pages, keys read -- one per GET of an object --, every other request) of the proxy's log."""
    pages = [p for m, p, _ in proxy.log if m == "GET" and "list-type=2" in p]
    reads = [p.split("?")[0] for m, p, _ in proxy.log if m == "GET" and "list-type=2" not in p]
    other = [(m, p) for m, p, _ in proxy.log if m != "GET"]
    return pages, reads, other


def _relative(recs, root):
    return [(e.kind, e.message.replace(str(root), "ROOT")) for e in recs.report]


def test_cluster_backup_read_lists_once_and_reads_each_content_once(backup, fault_proxy):
    """read_log_dirs of a cluster's backup equals the local read (records and report), with one listing of
    the prefix and no object read twice: each distinct segment content once (in-sync copies hold the same
    bytes, S3's ETag says so), a partition.metadata content at most once, no size lookups."""
    import collections
    import hashlib

    root, url, n_keys = backup
    local = kafkafmt.read_log_dirs(str(root), threads=1)
    fault_proxy.reset()
    remote = kafkafmt.read_log_dirs(url, storage_options=fault_proxy.storage_options, threads=1)
    assert rows(remote) == rows(local) and len(local) > 100
    assert _relative(remote, url) == _relative(local, root)
    pages, reads, other = _object_reads(fault_proxy)
    assert len(pages) == -(-n_keys // 1000) and not other
    assert not any("delimiter" in p for p in pages)
    assert len(reads) == len(set(reads))                      # no object read twice
    def md5s(files):
        return {hashlib.md5(p.read_bytes()).hexdigest() for p in files if p.stat().st_size}

    folders = collections.Counter(p.parent.name for p in root.glob("*/kafka-logs/*/partition.metadata"))
    copied = [p for p in root.glob("*/kafka-logs/*/partition.metadata") if folders[p.parent.name] > 1]
    assert 0 < len(copied) < sum(folders.values())
    logs = [r for r in reads if r.endswith(".log")]
    assert len(logs) == len(md5s(root.rglob("*.log")))                 # every distinct segment content, once
    # the topic ids of partitions held more than once, where their copies' batches disagree: each content once
    assert sum(r.endswith("/partition.metadata") for r in reads) <= len(md5s(copied)) == 2
    assert len(fault_proxy.log) == len(pages) + len(reads) < n_keys / 2


@pytest.mark.parametrize("command", ["stats", "verify", "export"])
def test_cluster_backup_cli_lists_once_and_reads_each_object_once(backup, fault_proxy, command, tmp_path):
    """The commands over the backup on S3 say what they say over the local dirs, listing the prefix once and
    reading no object twice (verify reads the side files too: each once, fetched ahead; only the log dirs'
    own checkpoint files, read by the discovery, are read again by its checks of the log dirs' files)."""
    import json

    import kcli

    root, url, n_keys = backup
    opts = fault_proxy.storage_options
    args = {"stats": ["stats", "--json"], "verify": ["verify", "--json"], "export": ["export", "--to"]}[command]

    def run(where, extra=()):
        out = tmp_path / f"{'remote' if '://' in where else 'local'}.jsonl"
        p = kcli.run(*args, *([out] if command == "export" else []), where, *extra)
        assert p.returncode == 0, p.stderr
        text = out.read_text() if command == "export" else p.stdout
        return text.replace(str(root), "ROOT").replace(url, "ROOT")

    local = run(str(root))
    fault_proxy.reset()
    remote = run(url, ["--storage-option", f"endpoint_url={opts['endpoint_url']}", "--storage-option",
                       f"key={opts['key']}", "--storage-option", f"secret={opts['secret']}"])
    if command == "verify":
        local, remote = ([{k: v for k, v in json.loads(x).items() if k not in ("seconds", "pendingFixes")}
                          for x in t.splitlines()] for t in (local, remote))
    assert remote == local
    pages, reads, other = _object_reads(fault_proxy)
    assert len(pages) == -(-n_keys // 1000) and not other and not any("delimiter" in p for p in pages)
    again = {r for r in reads if reads.count(r) > 1}
    assert all(reads.count(r) == 2 and r.endswith("-offset-checkpoint") and r.count("/") == 5 for r in again)
    assert len(again) == (6 if command == "verify" else 0)
