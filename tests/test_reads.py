"""Many local files read by one native call (`kafkafmt._native.reads`, what `LocalStorage.read_many` takes) give what
`read_into` gives file by file: the bytes, a file shorter than its slot read short, an empty slot, and -1 for a
file that is missing, a folder, a dangling link or a path holding a NUL -- whose usual read says why; the same
buffer; and the copies of a cluster compared, and its small partitions read, alike either way."""
from __future__ import annotations

import os

import numpy as np
import pytest

import kafkafmt
import kcluster
from kafkafmt._native.reads import read_files
from kafkafmt.storage import _local
from kafkafmt.storage._local import LocalStorage


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("reads")
    (d / "a.log").write_bytes(b"0123456789")
    (d / "empty.log").write_bytes(b"")
    (d / "sub").mkdir()
    os.symlink(d / "a.log", d / "link.log")
    os.symlink(d / "nowhere", d / "dangling.log")
    (d / "big.log").write_bytes(bytes(range(256)) * 300)
    raw = os.path.join(os.fsencode(d), b"odd\xff.log")               # a name that is not UTF-8
    with open(raw, "wb") as f:
        f.write(b"xyz")
    paths = [str(d / n) for n in ("a.log", "a.log", "empty.log", "sub", "missing.log", "link.log", "dangling.log",
                                  "big.log", "a.log")]
    paths += [os.fsdecode(raw), str(d / "a.log") + "\0x"]
    slots = [10, 4, 3, 5, 5, 10, 5, 76800, 0, 8, 5]                 # whole, a prefix, longer than the file, ...
    return paths, slots


def _read(paths, slots, native, monkeypatch):
    starts = np.zeros(len(slots) + 1, np.int64)
    np.cumsum(slots, out=starts[1:])
    buf = np.full(int(starts[-1]), 0xEE, np.uint8)
    with monkeypatch.context() as m:
        m.setattr(_local, "_NATIVE_READS", [native])
        got = LocalStorage().read_many(paths, buf, starts)
    return got, buf


def test_one_call_reads_what_each_read_into_reads(files, monkeypatch):
    paths, slots = files
    native, native_buf = _read(paths, slots, True, monkeypatch)
    python, python_buf = _read(paths, slots, False, monkeypatch)
    assert native.tolist() == python.tolist() == [10, 4, 0, -1, -1, 10, -1, 76800, 0, 3, -1]
    np.testing.assert_array_equal(native_buf, python_buf)


def test_slots_outside_the_buffer_are_refused():
    buf = np.zeros(8, np.uint8)
    with pytest.raises(ValueError, match="outside the buffer"):
        read_files(["x"], buf, np.array([0, 9], np.int64))
    with pytest.raises(ValueError, match="outside the buffer"):
        read_files(["x", "y"], buf, np.array([0, 5, 3], np.int64))
    with pytest.raises(ValueError, match="one more"):
        read_files(["x"], buf, np.array([0], np.int64))


def test_a_cluster_reads_alike_either_way(tmp_path, monkeypatch):
    """Copies compared (every copy's segments read a group at a time) and small partitions read in bulk: the
    same records, copies and report with the native reads and without."""
    kcluster.write_cluster(tmp_path, {"p": (3, 3), "q": (2, 2)}, seed=11, records=60, segment_bytes=900,
                               behind=0.3, empty=0.2)

    def read():
        recs = kafkafmt.read_log_dirs(str(tmp_path), threads=1, replicas="dedup")
        found = kafkafmt.log.discover(str(tmp_path))
        return recs.to_arrow(), [e.message for e in recs.report], found.copies

    native = read()
    with monkeypatch.context() as m:
        m.setattr(_local, "_NATIVE_READS", [False])
        assert read() == native
    assert native[0].num_rows and len(native[2]) > 5
