"""Remote ranged reads (kafkafmt.storage) against local files: bytes/s, decode rate, seek cost.

An S3 API server runs on loopback for the benchmark: moto's server (``moto[server]``, as s3fs and
pyarrow test themselves) in a subprocess, so its CPU is not charged to the reading process. The
``cluster`` log dir of ``corpus.log_dir`` (8 partitions, 18.6 MB, lz4/zstd) and the ``seek`` partition
(54 segments, 27.6 MB) are uploaded to a bucket once per benchmark process.

* ``RangedReads.time_read``: every ``.log`` of the cluster dir read start to end in 256 KiB reads
  (``Blob.read``; remote blobs fetch ``read_ahead`` bytes per request), local mmap vs S3;
* ``RangedReads.time_decode``: the same files decoded window by window (1 MiB windows ending at
  the last complete batch: slices of ``view()`` locally, ``Blob.read`` remotely, which prefetches
  the next block in the background during the scan);
* ``where`` = ``memory``: fsspec's in-memory filesystem through the same remote code path (what
  the storage layer costs without a network);
* ``track_decode_remote_vs_local``: remote decode rate / local decode rate, in one process
  (issue 13's target: >= 0.70 on one core);
* ``track_seek_fetched_vs_bound``: bytes fetched for an offset seek in a 0.5 MB-segment partition
  (list the folder, read the ``.index``, read from the entry's position) over the bound
  ``index bytes + batch bytes returned + one read-ahead block`` (target <= 2).

* ``ClusterBackup``: ``read_log_dirs(threads=1)`` of issue 44's cluster (three brokers' log dirs written by
  kafka-python's builders, tests/kcluster.py) backed up under one prefix, against the same dirs on local disk,
  interleaved in one process: the wall-time and CPU-time ratios and the requests of one remote read (the
  prefix listed in pages of 1,000 keys, each object read at most once).

``python -m benchmarks.bench_storage`` prints the same figures without asv (``... cluster 0.1`` the cluster's).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np

from . import corpus

STEP = 256 * 1024
WINDOW = 1 << 20
KEY, SECRET = "bench-key", "bench-secret"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """moto's S3 server in a subprocess on 127.0.0.1, with the ``names`` log dirs of the corpus uploaded."""

    def __init__(self, names=("cluster", "seek")):
        import boto3
        port = _free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto server did not start")
                time.sleep(0.2)
        self.client = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY,
                                   aws_secret_access_key=SECRET, region_name="us-east-1")
        self.client.create_bucket(Bucket="bench")
        self.local, self.keys = {}, {}
        for name in names:
            self.upload(name, str(corpus.log_dir(name)[0]))

    def upload(self, name, root):
        """Every file under ``root`` as ``bench/<name>/<relative path>`` (8 at a time); the number of keys."""
        from concurrent.futures import ThreadPoolExecutor

        self.local[name] = root
        files = [os.path.join(d, f) for d, _dirs, fs in os.walk(root) for f in fs]

        def put(full):
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            with open(full, "rb") as fh:
                self.client.put_object(Bucket="bench", Key=f"{name}/{rel}", Body=fh.read())

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(put, files))
        self.keys[name] = len(files)
        return len(files)

    def cpu_seconds(self):
        """CPU time the server process used so far (its share of a remote read)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def options(self):
        return {"key": KEY, "secret": SECRET, "endpoint_url": self.endpoint,
                "client_kwargs": {"region_name": "us-east-1"}}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_SERVER = [None]


def server(names=("cluster", "seek")):
    if _SERVER[0] is None:
        _SERVER[0] = S3Server(names)
    return _SERVER[0]


def stop_server():
    if _SERVER[0] is not None:
        _SERVER[0].stop()
        _SERVER[0] = None


def storage_for(where, name, read_ahead):
    """local: the files; s3: the loopback server; memory: fsspec's in-memory filesystem holding the
    same files (the remote code path without a network: what kafkafmt.storage itself costs)."""
    from kafkafmt.storage import open_storage
    srv = server()
    if where == "local":
        return open_storage(srv.local[name])
    if where == "memory":
        st, root = open_storage(f"memory://bench-{os.getpid()}/{name}", read_ahead=read_ahead)
        if not st.fs.exists(root):
            for dirpath, _dirs, files in os.walk(srv.local[name]):
                for f in files:
                    full = os.path.join(dirpath, f)
                    rel = os.path.relpath(full, srv.local[name]).replace(os.sep, "/")
                    with open(full, "rb") as fh:
                        st.fs.pipe_file(f"{root}/{rel}", fh.read())
        return st, root
    return open_storage(f"s3://bench/{name}", storage_options=srv.options(), read_ahead=read_ahead)


def log_files(st, root):
    """[(path, size)] of every .log under root (one listing per folder)."""
    out, stack = [], [root]
    while stack:
        for e in st.list(stack.pop()):
            if e.is_dir:
                stack.append(e.path)
            elif e.name.endswith(".log"):
                out.append((e.path, e.size))
    return sorted(out)


def read_all(st, files):
    n = 0
    for path, size in files:
        with st.open(path, size=size) as blob:
            for pos in range(0, size, STEP):
                n += len(blob.read(pos, min(size, pos + STEP)))
    return n


def decode_all(st, files, window=WINDOW):
    """Decode every file window by window (as a segment reader streams a segment): each window
    ends at the last complete batch in it; local files are sliced from the map, remote ones read."""
    import kafkafmt
    n = 0
    blobs = [st.open(path, size=size) for path, size in files]
    for i, blob in enumerate(blobs):
        if i + 1 < len(blobs):            # the next segment's first window, fetched while this one decodes
            nxt = blobs[i + 1]
            nxt.will_need(0, min(nxt.size, window))
        size = blob.size
        with blob:
            view = blob.view()
            pos = 0
            while pos < size:
                stop = min(size, pos + window)
                while True:
                    buf = view[pos:stop] if view is not None else blob.read(pos, stop)
                    _t, info = kafkafmt.scan_batches(buf, verify_crc=False)
                    valid = int(info["valid_bytes"])
                    if valid or stop == size:
                        break
                    stop = min(size, stop + window)      # a batch larger than the window
                if not valid:
                    break
                n += len(kafkafmt.decode(buf[:valid]).offset)
                pos += valid
            del view, buf
    return n


def seek_cost(read_ahead=1 << 20):
    """(bytes fetched, bound) for a seek to an offset in the middle of the seek partition: list,
    read its segment's .index, fetch one window from the entry's position."""
    import kafkafmt
    st, root = storage_for("s3", "seek", read_ahead)
    _path, meta = corpus.log_dir("seek")
    target = meta["first_offset"] + meta["records"] // 2 + 123
    entries = st.list(root)
    logs = [e for e in entries if e.name.endswith(".log")]
    seg = max((e for e in logs if int(e.name[:20]) <= target), key=lambda e: int(e.name[:20]))
    base = int(seg.name[:20])
    index = next(e for e in entries if e.name == seg.name[:20] + ".index")
    raw = st.read_bytes(index.path)
    rel = np.frombuffer(raw, dtype=">i4").reshape(-1, 2)
    i = max(0, int(np.searchsorted(rel[:, 0], target - base, side="right")) - 1)
    pos = int(rel[i, 1]) if len(rel) else 0
    with st.open(seg.path, size=seg.size) as blob:
        stop = min(seg.size, pos + read_ahead)
        while True:         # widen the window until it holds the target's batch
            window = blob.read(pos, stop)
            _table, info = kafkafmt.scan_batches(window)
            returned = int(info["valid_bytes"])
            recs = kafkafmt.decode(window[:returned])
            if (len(recs.offset) and recs.offset[-1] >= target) or stop == seg.size:
                break
            stop = min(seg.size, stop + read_ahead)
        assert target in set(recs.offset.tolist())
        fetched = blob.bytes_fetched
    return fetched + len(raw), len(raw) + returned + read_ahead


# --- a cluster's backup --------------------------------------------------------------------------

def cluster_topics(scale=1.0):
    """Issue 44's cluster at ``scale``: 10 topics of 70 partitions on 3 brokers and 10 of 75 on 2 (1,450
    partitions in 3,650 folders at 1.0)."""
    topics = {f"rf3-{i}": (max(1, round(70 * scale)), 3) for i in range(10)}
    topics.update({f"rf2-{i}": (max(1, round(75 * scale)), 2) for i in range(10)})
    return topics


def cluster_dir(scale=1.0):
    """Three brokers' log dirs written by kafka-python's builders (tests/kcluster.py; ~146 records a
    partition, 8,000-byte segments, 6 % of the followers behind, 15 % of the partitions empty), made once per
    scale in the corpus cache."""
    import shutil

    root = corpus.cache_dir() / "clusters" / f"scale-{scale:g}"
    if not (root / ".done").exists():
        tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tests")
        sys.path.insert(0, os.path.abspath(tests))
        import kcluster

        tmp = root.with_name(f"{root.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        kcluster.write_cluster(tmp, cluster_topics(scale), records=146, segment_bytes=8000, behind=0.06,
                               empty=0.15)
        (tmp / ".done").write_bytes(b"")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    return root


class _Backup:
    """The cluster's log dirs (``local``) and their backup under ``s3://bench/c1`` (``url``, ``options``)."""

    def __init__(self, scale):
        self.local = str(cluster_dir(scale))
        self.srv = server(names=())
        if "c1" not in self.srv.local:
            self.srv.upload("c1", self.local)
        self.keys = self.srv.keys["c1"]
        self.url, self.options = "s3://bench/c1", self.srv.options()

    def read_local(self):
        import kafkafmt
        return kafkafmt.read_log_dirs(self.local, threads=1)

    def read_s3(self):
        import kafkafmt
        return kafkafmt.read_log_dirs(self.url, storage_options=self.options, threads=1)


def backup_figures(scale=1.0, rounds=3):
    """{figure: value} of ``read_log_dirs(threads=1)`` of the backup against the same dirs locally, the two
    interleaved in this process (medians of ``rounds`` rounds, each round's ratio taken back to back):
    wall-time and CPU-time ratios, the server's CPU, requests and listing pages of one remote read."""
    from kafkafmt.storage import statistics

    b = _Backup(scale)
    assert len(b.read_s3()) == len(b.read_local())        # (warm: imports, the filesystem's client)
    rows = []
    for r in range(rounds):
        sample = {}
        for where in (("local", "s3") if r % 2 == 0 else ("s3", "local")):
            before, t0, c0, m0 = statistics(), time.perf_counter(), time.process_time(), b.srv.cpu_seconds()
            (b.read_s3 if where == "s3" else b.read_local)()
            sample[where] = (time.perf_counter() - t0, time.process_time() - c0, b.srv.cpu_seconds() - m0,
                             (statistics() - before).requests)
        rows.append(sample)

    def median(values):
        values = sorted(values)
        return values[len(values) // 2]

    return {"wall_ratio": median(r["s3"][0] / r["local"][0] for r in rows),
            "cpu_ratio": median(r["s3"][1] / r["local"][1] for r in rows),
            "local_s": median(r["local"][0] for r in rows), "s3_s": median(r["s3"][0] for r in rows),
            "server_cpu_s": median(r["s3"][2] for r in rows), "requests": median(r["s3"][3] for r in rows),
            "keys": b.keys, "pages": -(-b.keys // 1000)}


class ClusterBackup:
    """``read_log_dirs("s3://...", threads=1)`` of issue 44's cluster backed up to the loopback S3 server
    against the same dirs on local disk, interleaved in one process: time ratios (wall, and this process's
    CPU: the server's runs beside it) and the requests of one read (to hold against the objects read plus
    the listing pages)."""
    params = [[0.1, 1.0]]
    param_names = ["scale"]
    timeout = 3600
    number = 1
    repeat = 1

    def setup_cache(self):
        for scale in self.params[0]:
            cluster_dir(scale)

    def teardown(self, *args):
        stop_server()

    def track_s3_vs_local(self, _cache, scale):
        return round(backup_figures(scale)["wall_ratio"], 2)

    track_s3_vs_local.unit = "ratio"

    def track_s3_vs_local_cpu(self, _cache, scale):
        return round(backup_figures(scale)["cpu_ratio"], 2)

    track_s3_vs_local_cpu.unit = "ratio"

    def track_requests(self, _cache, scale):
        return backup_figures(scale, rounds=1)["requests"]

    track_requests.unit = "requests"


# --- asv ---------------------------------------------------------------------------------------

class RangedReads:
    params = [["local", "memory", "s3"], [1 << 20, 8 << 20]]
    param_names = ["where", "read_ahead"]
    timeout = 300
    number = 1
    repeat = (3, 5, 30.0)

    def setup(self, where, read_ahead):
        if where == "local" and read_ahead != 8 << 20:
            raise NotImplementedError("read_ahead does not apply to local files")
        self.st, root = storage_for(where, "cluster", read_ahead)
        self.files = log_files(self.st, root)
        self.bytes = sum(s for _, s in self.files)

    def teardown(self, where, read_ahead):
        stop_server()

    def time_read(self, where, read_ahead):
        read_all(self.st, self.files)

    def time_decode(self, where, read_ahead):
        decode_all(self.st, self.files)

    def track_read_mb_per_s(self, where, read_ahead):
        t = _best(lambda: read_all(self.st, self.files))
        return self.bytes / t / 1e6

    track_read_mb_per_s.unit = "MB/s"

    def track_decode_mb_per_s(self, where, read_ahead):
        t = _best(lambda: decode_all(self.st, self.files))
        return self.bytes / t / 1e6

    track_decode_mb_per_s.unit = "MB/s"


def _best(fn, repeats=5):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def remote_vs_local_decode(read_ahead=8 << 20, repeats=7, where="s3"):
    """Local decode time / remote decode time (= remote rate / local rate), the two interleaved
    (this box is shared: load moves between runs), best of ``repeats`` each."""
    st_l, root_l = storage_for("local", "cluster", read_ahead)
    st_r, root_r = storage_for(where, "cluster", read_ahead)
    fl, fr = log_files(st_l, root_l), log_files(st_r, root_r)
    local, remote = [], []
    for _ in range(repeats):
        local.append(_best(lambda: decode_all(st_l, fl), 1))
        remote.append(_best(lambda: decode_all(st_r, fr), 1))
    return min(local) / min(remote)


def track_decode_remote_vs_local():
    try:
        return remote_vs_local_decode()
    finally:
        stop_server()


track_decode_remote_vs_local.unit = "ratio"


def track_seek_fetched_vs_bound():
    try:
        fetched, bound = seek_cost()
        return fetched / bound
    finally:
        stop_server()


track_seek_fetched_vs_bound.unit = "ratio"


def main():
    import kafkafmt  # noqa: F401
    if sys.argv[1:2] == ["cluster"]:         # python -m benchmarks.bench_storage cluster [scale]
        try:
            scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
            print({k: round(v, 3) if isinstance(v, float) else v for k, v in backup_figures(scale).items()})
        finally:
            stop_server()
        return
    try:
        print(f"{'where':6} {'read_ahead':>10} {'read MB/s':>10} {'decode MB/s':>12}")
        for where, ra in (("local", 8 << 20), ("memory", 8 << 20), ("s3", 1 << 20), ("s3", 8 << 20),
                          ("s3", 32 << 20)):
            st, root = storage_for(where, "cluster", ra)
            files = log_files(st, root)
            total = sum(s for _, s in files)
            r = total / _best(lambda: read_all(st, files)) / 1e6
            d = total / _best(lambda: decode_all(st, files)) / 1e6
            print(f"{where:6} {ra >> 20:>8}Mi {r:10.1f} {d:12.1f}")
        print(f"s3/local decode rate (8 MiB read-ahead): {remote_vs_local_decode():.2f}")
        print(f"memory/local decode rate (8 MiB read-ahead): {remote_vs_local_decode(where='memory'):.2f}")
        for ra in (64 << 10, 256 << 10, 1 << 20):
            fetched, bound = seek_cost(ra)
            print(f"seek, read_ahead {ra >> 10} KiB: fetched {fetched} bytes, bound {bound}, ratio {fetched / bound:.2f}")
    finally:
        stop_server()


if __name__ == "__main__":
    main()
