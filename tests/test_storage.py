"""kafkafmt.storage: the local filesystem and a real S3 API server (moto, loopback) behind one interface."""
import os
import pathlib
import pickle
import time

import numpy as np
import pytest

import kafkafmt
from kafkafmt.errors import (KafkafmtError, ObjectChangedError, StorageError, StorageNotFoundError,
                             StoragePermissionError, StorageUnavailableError)
from kafkafmt.storage import Entry, FsspecStorage, LocalStorage, RetryPolicy, is_url, open_storage

from s3server import SECRET, fault_proxy, s3  # noqa: F401  (pytest fixtures)

MiB = 1 << 20


def _write_dir(root, n=3000, segment_bytes=64 * 1024, compression="lz4"):
    """A log dir with two topics, several segments each, written by kafkafmt's writer."""
    rng = np.random.default_rng(7)
    for topic, codec in (("orders-0", compression), ("clicks-1", None)):
        values = [bytes(rng.integers(0, 256, int(rng.integers(10, 300)), dtype=np.uint8)) for _ in range(n)]
        kafkafmt.write_log_dir(os.path.join(root, topic), keys=[f"k{i}".encode() for i in range(n)],
                               values=values, timestamps=[1_700_000_000_000 + i for i in range(n)],
                               compression=codec, segment_bytes=segment_bytes, index_interval_bytes=1024)
    return root


def _local_tree(root):
    """{relative path: bytes} of every file under root."""
    out = {}
    for dirpath, _d, files in os.walk(root):
        for f in files:
            full = os.path.join(dirpath, f)
            out[os.path.relpath(full, root).replace(os.sep, "/")] = pathlib.Path(full).read_bytes()
    return out


# ------------------------------------------------------------------------------------------------
# naming and local files

def test_is_url_and_open_storage_local(tmp_path):
    assert is_url("s3://b/k") and is_url("file:///x") and not is_url("/var/kafka-logs") and not is_url("rel/path")
    for p in (str(tmp_path), tmp_path, f"file://{tmp_path}"):
        st, path = open_storage(p)
        assert isinstance(st, LocalStorage) and st.is_local and os.fspath(path) == str(tmp_path)
    st, path = open_storage(str(tmp_path), storage_options={"anon": True})    # ignored for local roots
    assert isinstance(st, LocalStorage) and path == str(tmp_path)
    with pytest.raises(ValueError):
        open_storage("s3://b/k", storage_options={"anon": True}, filesystem=object())
    with pytest.raises(KafkafmtError, match="unknown storage protocol"):
        open_storage("nosuchproto://b/k")


def test_local_list_size_and_blob(tmp_path):
    _write_dir(tmp_path)
    st, root = open_storage(str(tmp_path))
    entries = st.list(root)
    assert [e.name for e in entries] == sorted(os.listdir(tmp_path))
    assert all(isinstance(e, Entry) and e.is_dir for e in entries)
    part = st.join(root, "orders-0")
    files = st.list(part)
    assert [e.name for e in files] == sorted(os.listdir(part))
    for e in files:
        assert not e.is_dir and e.size == os.path.getsize(e.path) == st.size(e.path)
    log = next(e for e in files if e.name.endswith(".log"))
    data = pathlib.Path(log.path).read_bytes()
    with st.open(log.path, size=log.size) as blob:
        view = blob.view()
        assert view.dtype == np.uint8 and view.size == len(data) and bytes(view) == data
        assert np.shares_memory(view, blob.view())
        assert bytes(blob.read(100, 200)) == data[100:200] and bytes(blob.read(0)) == data
        assert blob.requests == 0 and blob.bytes_fetched == 0
        with pytest.raises(ValueError):
            blob.read(0, blob.size + 1)
        page = __import__("mmap").PAGESIZE
        assert blob.release(0, 3 * page + 5) == 3 * page
        assert bytes(blob.read(0, 64)) == data[:64]   # released pages read back from the page cache
        held = blob.read(10, 20)                        # a view still alive when closing: no error
    assert bytes(held) == data[10:20]
    assert st.read_bytes(log.path, 5, 9) == data[5:9]


def test_local_errors(tmp_path):
    st, root = open_storage(str(tmp_path))
    missing = os.path.join(root, "nope-0")
    for call in (lambda: st.list(missing), lambda: st.size(missing), lambda: st.open(missing)):
        with pytest.raises(StorageNotFoundError) as info:
            call()
        assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, KafkafmtError)
        assert info.value.file == missing and missing in str(info.value)
    assert not st.exists(missing) and not st.isdir(missing)
    f = tmp_path / "short.log"
    f.write_bytes(b"x" * 100)
    with pytest.raises(ObjectChangedError, match="changed size"):
        st.open(str(f), size=200)
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    with st.open(str(empty)) as blob:
        assert blob.size == 0 and blob.view().size == 0 and bytes(blob.read(0, 0)) == b""


def test_memory_filesystem_through_fsspec():
    import fsspec  # noqa: F401
    st, root = open_storage("memory://kfmt-test/dir")
    st.fs.pipe(root + "/a.bin", bytes(range(256)) * 10)
    assert isinstance(st, FsspecStorage) and not st.is_local
    assert [(e.name, e.size) for e in st.list(root)] == [("a.bin", 2560)]
    with st.open(st.join(root, "a.bin"), read_ahead=1000) as blob:
        assert blob.view() is None
        assert bytes(blob.read(250, 260)) == (bytes(range(256)) * 10)[250:260]
    assert st.url(root) == "memory://kfmt-test/dir" and st.url(st.join(root, "a.bin")) == "memory://kfmt-test/dir/a.bin"


# ------------------------------------------------------------------------------------------------
# S3 (moto on loopback)

@pytest.fixture(scope="module")
def uploaded(s3, tmp_path_factory, real_corpus):
    """A kafkafmt-written log dir and the real broker dirs, uploaded; {name: (local root, url)}."""
    local = _write_dir(str(tmp_path_factory.mktemp("logs")))
    bucket = s3.bucket()
    s3.upload_dir(local, bucket, "written")
    real = str(real_corpus / "broker-dirs")
    s3.upload_dir(real, bucket, "real")
    return {"written": (local, f"s3://{bucket}/written"), "real": (real, f"s3://{bucket}/real"), "bucket": bucket}


def _remote_tree(st, root):
    out = {}
    stack = [root]
    while stack:
        d = stack.pop()
        for e in st.list(d):
            if e.is_dir:
                stack.append(e.path)
            else:
                out[e.path[len(root):].lstrip("/")] = e
    return out


@pytest.mark.parametrize("which", ["written", "real"])
def test_s3_listing_and_ranged_reads_match_local(s3, uploaded, which):
    local, url = uploaded[which]
    st, root = open_storage(url, storage_options=s3.storage_options, read_ahead=64 * 1024)
    assert isinstance(st, FsspecStorage) and not st.is_local and st.url(root) == url
    local_files = _local_tree(local)
    remote = _remote_tree(st, root)
    assert sorted(remote) == sorted(local_files)
    rng = np.random.default_rng(3)
    for rel, entry in remote.items():
        data = local_files[rel]
        assert entry.size == len(data)
        with st.open(entry.path, size=entry.size) as blob:
            assert blob.view() is None and blob.url == f"{url}/{rel}"
            assert bytes(blob.read(0, blob.size)) == data
            for _ in range(5):
                a = int(rng.integers(0, len(data) + 1))
                b = int(rng.integers(a, len(data) + 1))
                assert bytes(blob.read(a, b)) == data[a:b]
        if rel.endswith(".log") and len(data):
            # what the decoder makes of the remote bytes is what it makes of the local file
            remote_recs = kafkafmt.decode(st.read_bytes(entry.path))
            local_recs = kafkafmt.decode(data)
            assert np.array_equal(remote_recs.offset, local_recs.offset)
            assert remote_recs.value.to_pylist() == local_recs.value.to_pylist()


def test_s3_read_ahead_cache_and_counters(s3):
    bucket = s3.bucket()
    data = np.random.default_rng(1).integers(0, 256, 24 * MiB, dtype=np.uint8).tobytes()
    s3.put(bucket, "big.log", data)
    st, path = open_storage(f"s3://{bucket}/big.log", storage_options=s3.storage_options, read_ahead=1 * MiB,
                            prefetch=0)
    size = st.size(path)
    before = st.requests
    with st.open(path, size=size) as blob:
        # a seek-sized read in the middle: one request of one read-ahead block
        assert bytes(blob.read(13 * MiB + 5, 13 * MiB + 105)) == data[13 * MiB + 5:13 * MiB + 105]
        assert blob.requests == 1 and blob.bytes_fetched == MiB
        assert blob.bytes_fetched / size < 0.05
        # consecutive small reads inside the block: no more requests
        for pos in range(13 * MiB + 105, 13 * MiB + 900_000, 4096):
            assert bytes(blob.read(pos, pos + 100)) == data[pos:pos + 100]
        assert blob.requests == 1
        # a large read: one request of exactly that range
        assert bytes(blob.read(2 * MiB, 7 * MiB)) == data[2 * MiB:7 * MiB]
        assert blob.requests == 2 and blob.bytes_fetched == 6 * MiB
        # a range starting in the cached block and running past it: only the rest is fetched
        a, b = 2 * MiB + 100, 7 * MiB + 5000
        assert bytes(blob.read(a, b)) == data[a:b]
        assert blob.requests == 3 and blob.bytes_fetched == 7 * MiB
        # the last bytes of the object: clipped to the size
        assert bytes(blob.read(size - 10, size)) == data[-10:]
        assert blob.bytes_fetched == 7 * MiB + 10
        assert blob.release(0, size) == size
    assert st.requests - before == 4 and st.bytes_fetched == 7 * MiB + 10


def test_s3_sequential_scan_costs_one_request_per_block(s3):
    bucket = s3.bucket()
    data = bytes(range(256)) * (12 * 4096)     # 12 MiB
    s3.put(bucket, "seq.log", data)
    st, path = open_storage(f"s3://{bucket}/seq.log", storage_options=s3.storage_options, read_ahead=4 * MiB)
    got = bytearray()
    with st.open(path) as blob:
        for pos in range(0, blob.size, 65536):
            got += blob.read(pos, min(blob.size, pos + 65536))
        assert blob.requests == 3 and blob.bytes_fetched == len(data)
    assert bytes(got) == data


def test_s3_prefetch_only_on_sequential_scans(s3):
    bucket = s3.bucket()
    data = np.random.default_rng(5).integers(0, 256, 12 * MiB, dtype=np.uint8).tobytes()
    s3.put(bucket, "scan.log", data)
    st, path = open_storage(f"s3://{bucket}/scan.log", storage_options=s3.storage_options, read_ahead=MiB,
                            prefetch=2)
    with st.open(path, size=len(data)) as blob:
        assert bytes(blob.read(5 * MiB, 5 * MiB + 10)) == data[5 * MiB:5 * MiB + 10]
        time.sleep(0.3)
        assert st.bytes_fetched == MiB and not blob._pending       # a seek: nothing in the background
    got = bytearray()
    with st.open(path, size=len(data)) as blob:
        for pos in range(0, len(data), 65536):
            got += blob.read(pos, pos + 65536)
        assert blob.requests == 12 and blob.bytes_fetched == len(data)
    assert bytes(got) == data
    assert st.bytes_fetched == MiB + len(data)


def test_s3_offset_seek_fetches_index_plus_one_block(s3, tmp_path):
    """Plan from the .index, then fetch from the batch's position: a small fraction of the segment."""
    n = 60_000
    part = tmp_path / "big-0"
    kafkafmt.write_log_dir(part, values=[b"v%07d" % i + b"x" * 200 for i in range(n)],
                           timestamps=list(range(n)), batch_size=16384)
    log = part / "00000000000000000000.log"
    bucket = s3.bucket()
    s3.upload_dir(str(part), bucket, "big-0")
    read_ahead = 256 * 1024
    st, root = open_storage(f"s3://{bucket}/big-0", storage_options=s3.storage_options, read_ahead=read_ahead)
    entries = {e.name: e for e in st.list(root)}
    target = 41_234
    index = np.frombuffer(st.read_bytes(entries["00000000000000000000.index"].path), dtype=">i4").reshape(-1, 2)
    i = np.searchsorted(index[:, 0], target, side="right") - 1
    pos = int(index[i, 1])
    seg = entries["00000000000000000000.log"]
    with st.open(seg.path, size=seg.size) as blob:
        recs = kafkafmt.decode(blob.read(pos, min(seg.size, pos + read_ahead)))
        assert target in set(recs.offset.tolist())
        k = recs.offset.tolist().index(target)
        assert recs.value[k] == b"v%07d" % target + b"x" * 200
        fetched = blob.bytes_fetched
    index_bytes = entries["00000000000000000000.index"].size
    assert seg.size > 10 * MiB
    assert fetched + index_bytes <= 2 * (index_bytes + read_ahead)
    assert (fetched + index_bytes) / seg.size < 0.05
    assert os.path.getsize(log) == seg.size


def test_s3_missing_bucket_and_key(s3):
    bucket = s3.bucket()
    for url in (f"s3://{bucket}/no/such/key.log", f"s3://kfmt-no-such-bucket-{os.getpid()}/x.log"):
        st, path = open_storage(url, storage_options=s3.storage_options)
        for call in (lambda: st.open(path), lambda: st.size(path), lambda: st.list(path)):
            with pytest.raises(StorageNotFoundError) as info:
                call()
            assert isinstance(info.value, FileNotFoundError) and info.value.file == url
            assert url in str(info.value) and SECRET not in str(info.value)
        assert not st.exists(path) and not st.isdir(path)


def test_s3_access_denied(s3):
    bucket = s3.bucket()
    s3.put(bucket, "a.log", b"abc")
    s3.set_auth(True)      # moto checks credentials from now on: an unknown access key is refused
    try:
        opts = s3.options(key="AKIAUNKNOWNKEY0000000", secret="wrong-secret-value", skip_instance_cache=True)
        st, path = open_storage(f"s3://{bucket}/a.log", storage_options=opts)
        t0 = time.monotonic()
        with pytest.raises(StoragePermissionError) as info:
            st.open(path)
        assert time.monotonic() - t0 < 10
        assert isinstance(info.value, PermissionError) and info.value.file == f"s3://{bucket}/a.log"
        assert "wrong-secret-value" not in str(info.value) and "AKIAUNKNOWNKEY0000000" not in str(info.value)
    finally:
        s3.set_auth(False)


def test_s3_object_changing_size_while_read(s3):
    bucket = s3.bucket()
    data = bytes(range(256)) * 4096         # 1 MiB
    s3.put(bucket, "seg.log", data)
    st, path = open_storage(f"s3://{bucket}/seg.log", storage_options=s3.storage_options, read_ahead=64 * 1024)
    blob = st.open(path, size=len(data))
    assert bytes(blob.read(0, 10)) == data[:10]
    s3.put(bucket, "seg.log", data[:300_000])          # rewritten shorter
    with pytest.raises(ObjectChangedError, match="changed size while being read") as info:
        blob.read(500_000, 500_100)
    assert info.value.file == f"s3://{bucket}/seg.log"
    with pytest.raises(ObjectChangedError):
        blob.read(290_000, 310_000)                    # straddles the new end
    s3.client.delete_object(Bucket=bucket, Key="seg.log")
    with pytest.raises(ObjectChangedError):
        blob.read(200_000, 200_010)
    blob.close()


def test_s3_through_pyarrow_filesystem(s3, uploaded):
    from pyarrow import fs as pafs
    local, url = uploaded["written"]
    fs = pafs.S3FileSystem(access_key="testing-key", secret_key=SECRET, endpoint_override=s3.endpoint,
                           scheme="http", region="us-east-1")
    st, root = open_storage(url, filesystem=fs, read_ahead=64 * 1024)
    assert isinstance(st, FsspecStorage) and root == url[len("s3://"):]
    local_files = _local_tree(local)
    remote = _remote_tree(st, root)
    assert sorted(remote) == sorted(local_files)
    rel = next(r for r in remote if r.endswith(".log"))
    with st.open(remote[rel].path, size=remote[rel].size) as blob:
        assert bytes(blob.read(7, 4000)) == local_files[rel][7:4000]


def test_s3_storage_pickles_for_executors(s3, uploaded):
    local, url = uploaded["written"]
    st, root = open_storage(url, storage_options=s3.storage_options)
    st2 = pickle.loads(pickle.dumps(st))
    assert [e.name for e in st2.list(root)] == [e.name for e in st.list(root)]
    assert SECRET not in repr(st2)


# ------------------------------------------------------------------------------------------------
# failure injection (a loopback proxy in front of moto)

FAST = RetryPolicy(attempts=3, base_delay=0.05, max_delay=0.2, deadline=6, timeout=1.5)


@pytest.fixture
def proxied(s3, fault_proxy):
    bucket = s3.bucket()
    data = bytes(range(256)) * 1024
    s3.put(bucket, "p/x.log", data)
    url = f"s3://{bucket}/p/x.log"
    st, path = open_storage(url, storage_options=fault_proxy.storage_options, retry=FAST, read_ahead=8192)
    size = st.size(path)
    fault_proxy.reset()
    return st, path, size, data, url


@pytest.mark.parametrize("fault", ["throttled", "server_error", "dropped", "truncated"])
def test_transient_failures_are_retried(fault_proxy, proxied, fault):
    st, path, size, data, url = proxied
    {"throttled": lambda: fault_proxy.fail(2, 503, "SlowDown"),
     "server_error": lambda: fault_proxy.fail(2, 500, "InternalError"),
     "dropped": lambda: fault_proxy.drop(2),
     "truncated": lambda: fault_proxy.truncate(1)}[fault]()
    with st.open(path, size=size) as blob:
        assert bytes(blob.read(1000, 2000)) == data[1000:2000]
    assert fault_proxy.count >= 2


@pytest.mark.parametrize("fault", ["throttled", "dropped", "slow"])
def test_persistent_failures_end_in_a_clear_error(fault_proxy, proxied, fault):
    st, path, size, data, url = proxied
    if fault == "throttled":
        fault_proxy.fail(10_000, 503, "SlowDown")
    elif fault == "dropped":
        fault_proxy.drop(10_000)
    else:
        fault_proxy.delay = 2.5      # longer than the per-try timeout
    t0 = time.monotonic()
    with st.open(path, size=size) as blob:
        with pytest.raises(StorageUnavailableError) as info:
            blob.read(0, 100)
    elapsed = time.monotonic() - t0
    assert elapsed < FAST.deadline + FAST.timeout + 5
    err = info.value
    assert isinstance(err, StorageError) and isinstance(err, KafkafmtError) and err.file == url
    assert url in str(err) and "request failed 3 time(s)" in str(err)
    assert SECRET not in str(err)


def test_denied_by_the_server_is_not_retried(fault_proxy, proxied):
    st, path, size, data, url = proxied
    fault_proxy.fail(10_000, 403, "AccessDenied")
    with st.open(path, size=size) as blob:
        with pytest.raises(StoragePermissionError):
            blob.read(0, 100)
    assert fault_proxy.count == 1


def test_s3_object_replaced_by_one_of_the_same_size_while_read(s3):
    """The version listed is the version read: an object replaced by another of the same size
    between two ranged reads (or between the listing and the first read) raises, naming it."""
    bucket = s3.bucket()
    old = bytes(range(256)) * 4096           # 1 MiB
    new = bytes(reversed(old))
    s3.put(bucket, "seg.log", old)
    st, path = open_storage(f"s3://{bucket}/seg.log", storage_options=s3.storage_options, read_ahead=64 * 1024,
                            prefetch=0)
    entry = [e for e in st.list(f"{bucket}") if e.name == "seg.log"][0]
    assert entry.version is not None and entry.size == len(old)
    blob = st.open(path, size=entry.size, version=entry.version)
    assert bytes(blob.read(0, 10)) == old[:10]
    s3.put(bucket, "seg.log", new)                       # same size, other bytes
    with pytest.raises(ObjectChangedError, match="replaced by another version") as info:
        blob.read(500_000, 500_100)
    assert info.value.file == f"s3://{bucket}/seg.log"
    blob.close()
    # replaced between the listing and the first read
    blob = st.open(path, size=entry.size, version=entry.version)
    with pytest.raises(ObjectChangedError, match="replaced by another version"):
        blob.read(0, 10)
    blob.close()
    # a new listing reads the new object
    entry = [e for e in st.list(f"{bucket}") if e.name == "seg.log"][0]
    with st.open(path, size=entry.size, version=entry.version) as blob:
        assert bytes(blob.read(500_000, 500_100)) == new[500_000:500_100]


def test_s3_log_dir_read_fails_when_a_segment_is_replaced_mid_read(s3, tmp_path):
    """Through the library: a segment object replaced by a same-size object after the partition
    was listed gives ObjectChangedError when it is read, never the other version's records."""
    import kafkafmt

    folder = tmp_path / "t-0"
    kafkafmt.write_log_dir(folder, values=[b"v%06d" % i for i in range(20000)], timestamps=[1] * 20000,
                           batch_size=1024, segment_bytes=64 << 10)
    bucket = s3.bucket()
    s3.upload_dir(tmp_path, bucket)
    url = f"s3://{bucket}/t-0"
    from test_many_partitions import segment_by_segment

    with segment_by_segment():      # (each segment fetched when its chunks are asked for; in one pass, all at first)
        chunks = kafkafmt.iter_log_dir(url, storage_options=s3.storage_options, max_bytes=64 << 10)
    first = next(chunks)
    assert len(first)
    seg = sorted(p.name for p in folder.glob("*.log"))[-1]
    data = (folder / seg).read_bytes()
    s3.put(bucket, f"t-0/{seg}", data.replace(b"v01", b"w01"))     # same size, other records
    assert data.replace(b"v01", b"w01") != data
    with pytest.raises(ObjectChangedError):
        for _ in chunks:
            pass


# ------------------------------------------------------------------------------------------------
# listing a prefix once, whole objects kept and fetched ahead

def _requests(proxy):
    """The proxy's log as (listing pages, object reads): a listing names no key (``/bucket?list-type=2...``)."""
    pages = [p for m, p, _ in proxy.log if m == "GET" and "list-type=2" in p]
    reads = [p.split("?")[0] for m, p, _ in proxy.log if m == "GET" and "list-type=2" not in p]
    return pages, reads


@pytest.mark.parametrize("which", ["written", "real"])
def test_s3_list_tree_is_every_folder_listing_in_pages(s3, uploaded, fault_proxy, monkeypatch, which):
    """One recursive listing, page after page (7 keys a page here), gives every folder's entries exactly
    as listing the folders one by one does."""
    monkeypatch.setattr("kafkafmt.storage._fsspec.LIST_PAGE_KEYS", 7)
    local, url = uploaded[which]
    st, root = open_storage(url, storage_options=s3.storage_options)
    folders, stack = {}, [root]
    while stack:
        d = stack.pop()
        folders[d] = st.list(d)
        stack += [e.path for e in folders[d] if e.is_dir]
    proxied, root2 = open_storage(url, storage_options=fault_proxy.storage_options)
    fault_proxy.reset()
    tree = proxied.list_tree(root2)
    assert tree == folders
    keys = sum(1 for entries in folders.values() for e in entries if not e.is_dir)
    assert keys == len(_local_tree(local))
    pages, reads = _requests(fault_proxy)
    assert len(pages) == -(-keys // 7) and not reads and fault_proxy.count == len(pages)
    assert not any("delimiter" in p for p in pages)
    assert proxied.list_tree(st.join(root, "no-such-folder")) is None


def test_s3_whole_objects_fetched_once_by_content(s3, fault_proxy):
    """Small objects read whole are kept: the same content (S3's ETag) under two keys is fetched once; a
    read ahead (`will_read`) is taken by the reader without a request of its own."""
    bucket = s3.bucket()
    same, other = bytes(range(256)) * 40, b"x" * 5000
    for key, data in (("a/1.log", same), ("b/1.log", same), ("c/1.log", other)):
        s3.put(bucket, key, data)
    st, root = open_storage(f"s3://{bucket}", storage_options=fault_proxy.storage_options)
    entries = sorted((e for es in st.list_tree(root).values() for e in es if not e.is_dir), key=lambda e: e.path)
    fault_proxy.reset()
    st.will_read([(e.path, e.size, e.version) for e in entries])
    got = [st.read_listed(e.path, e.size, e.version) for e in entries]
    assert got == [same, same, other]
    with st.open(entries[1].path, size=entries[1].size, version=entries[1].version) as blob:
        assert bytes(blob.read(0, blob.size)) == same and blob.requests == 0
    out = bytearray(len(other))
    assert st.read_into(entries[2].path, out, version=entries[2].version) == len(other) and bytes(out) == other
    _, reads = _requests(fault_proxy)
    assert sorted(reads) == [f"/{bucket}/a/1.log", f"/{bucket}/c/1.log"] and fault_proxy.count == 2


def test_object_cache_fetches_ahead_within_its_window_and_at_once():
    """The reader's announced objects are fetched a window of bytes ahead of it, several at a time; a failed
    fetch raises to the reader that takes it and is not kept."""
    import threading

    from kafkafmt.storage._objects import FETCH_THREADS, ObjectCache

    parties = min(4, FETCH_THREADS)
    barrier = threading.Barrier(parties, timeout=30)       # passes only if that many fetches run at once
    fetched = []

    def fetch(path, size, version):
        fetched.append(path)
        if path.startswith("wait"):
            barrier.wait()
        if path == "bad":
            raise StorageUnavailableError("cannot read", file=path)
        return path.encode().ljust(size, b".")

    cache = ObjectCache(fetch, lambda path, version: version, budget=64, window=20)
    items = [(f"wait{i}", 5, f"v{i}") for i in range(parties)] + [(f"p{i}", 5, f"w{i}") for i in range(6)]
    cache.prefetch(items)
    assert cache.nbytes == 20                        # four objects of 5 bytes ahead: the window
    for path, size, version in items[:parties]:
        assert cache.get(path, size, version)[0] == path.encode().ljust(5, b".")
    assert cache.nbytes <= 40                         # taken ones are kept, four more ahead of the reader
    data, fetched_now = cache.get("p0", 5, "w0")
    assert data == b"p0..." and not fetched_now
    with pytest.raises(StorageUnavailableError):
        cache.get("bad", 5, "x")
    with pytest.raises(StorageUnavailableError):
        cache.get("bad", 5, "x")                     # not kept: asked again
    assert fetched.count("bad") == 2 and len(set(fetched)) == len(fetched) - 1
    for i in range(20):                               # more than the budget: the least recently used go
        cache.get(f"q{i}", 5, f"q{i}")
    assert cache.nbytes <= 64
    assert not cache.get("q19", 5, "q19")[1] and cache.get("q0", 5, "q0")[1]
