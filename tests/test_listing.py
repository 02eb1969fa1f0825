"""A local folder's native listing (`kafkafmt._native.listing`, what `LocalStorage.list` takes) gives the rows the
``os.scandir`` listing gives: names (undecodable bytes too), paths, sizes where asked, folders, symbolic links to
folders and files, dangling links, a fifo and a link to it (both left out: no door opens a fifo); the same
errors; and a discovery of the real corpus finds the same partitions and listings either way."""
from __future__ import annotations

import json
import os
import re
import pathlib

import pytest

import kafkafmt
from kafkafmt.errors import StorageError, StorageNotFoundError
from kafkafmt.storage import _local
from kafkafmt.storage._local import LocalStorage


def _python_list(path, sized, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(_local, "_NATIVE", [False])
        return LocalStorage().list(path, sized=sized)


@pytest.fixture(scope="module")
def odd_folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("listing")
    for name, size in (("00000000000000000000.log", 5), ("00000000000000000000.index", 8), ("partition.metadata", 3),
                       ("leader-epoch-checkpoint", 0)):
        (d / name).write_bytes(b"x" * size)
    (d / "sub").mkdir()
    os.symlink(d / "sub", d / "to-sub")
    os.symlink(d / "00000000000000000000.log", d / "00000000000000000007.log")
    os.symlink(d / "nowhere", d / "00000000000000000009.log")           # dangling: left out when sized
    os.symlink(d / "nowhere", d / "dangling.index")
    os.mkfifo(d / "fifo")                                               # not listed (nor a link to it)
    os.symlink(d / "fifo", d / "to-fifo")
    with open(os.path.join(os.fsencode(d), b"00000000000000000011.log\xff"), "wb") as f:   # not UTF-8
        f.write(b"12")
    return str(d)


@pytest.mark.parametrize("sized", [None, (".log",), (".index", ".log")])
def test_the_native_listing_gives_the_rows_scandir_gives(odd_folder, sized, monkeypatch):
    got = LocalStorage().list(odd_folder, sized=sized)
    assert got == _python_list(odd_folder, sized, monkeypatch)
    assert {e.name for e in got if e.is_link} >= {"to-sub", "00000000000000000007.log"}
    assert [e.is_dir for e in got if e.name == "to-sub"] == [True]
    # (and the path as given, a trailing slash or not)
    assert LocalStorage().list(odd_folder + "/", sized=sized) == _python_list(odd_folder + "/", sized, monkeypatch)


def test_the_native_listing_fails_as_scandir_does(odd_folder, monkeypatch):
    for path, error in ((os.path.join(odd_folder, "missing"), StorageNotFoundError),
                        (os.path.join(odd_folder, "partition.metadata"), StorageError)):
        with pytest.raises(error) as native:
            LocalStorage().list(path)
        with pytest.raises(error) as python:
            _python_list(path, None, monkeypatch)
        assert str(native.value) == str(python.value) and native.value.errno == python.value.errno
    with pytest.raises(ValueError):               # (a NUL would cut the path short in C: refused, as scandir does)
        LocalStorage().list(odd_folder + "\0/sub")
    with pytest.raises(ValueError):
        _python_list(odd_folder + "\0/sub", None, monkeypatch)


def test_discovery_of_the_real_corpus_lists_alike(real_corpus, monkeypatch):
    def seen():
        found = kafkafmt.log.discover(os.path.join(real_corpus, "broker-dirs"), replicas="all")
        return [(p.topic, p.partition, p.folder, p.listing) for p in found.partitions]

    native = seen()
    with monkeypatch.context() as m:
        m.setattr(_local, "_NATIVE", [False])
        assert seen() == native
    assert native and all(listing for *_, listing in native)


def test_the_native_rows_are_left_out_of_the_collector(odd_folder):
    import gc

    rows = LocalStorage().list(odd_folder, sized=(".log",))
    # (strings, integers, booleans and None only: no cycle can pass through a row, and the collector has none to visit)
    assert rows and not any(gc.is_tracked(r) for r in rows)
    assert all(not gc.is_tracked(v) for r in rows for v in r)


@pytest.mark.parametrize("sized", [None, (".log",)])
def test_a_compact_listing_holds_the_rows_the_listing_gives(odd_folder, sized, monkeypatch):
    from kafkafmt.storage import FolderListing

    for path in (odd_folder, odd_folder + "/"):
        rows = LocalStorage().list(path, sized=sized)
        compact = LocalStorage().folder_listing(path, sized=sized)
        assert isinstance(compact, FolderListing) and len(compact) == len(rows)
        assert list(compact) == rows and compact == rows and compact == tuple(rows)
        assert [compact[i] for i in range(-len(rows), len(rows))] == rows + rows and compact[1:4] == rows[1:4]
        with monkeypatch.context() as m:            # the Python way (no directory streams): the same listing
            m.setattr(_local, "_NATIVE", [False])
            assert LocalStorage().folder_listing(path, sized=sized) == compact
            assert LocalStorage().folder_listing(pathlib.Path(path), sized=sized) == rows   # (a path object too)
    with pytest.raises(IndexError):
        compact[len(rows)]
    for path, error in ((os.path.join(odd_folder, "missing"), StorageNotFoundError),
                        (os.path.join(odd_folder, "partition.metadata"), StorageError)):
        with pytest.raises(error) as listed:
            LocalStorage().list(path)
        with pytest.raises(error) as compacted:
            LocalStorage().folder_listing(path)
        assert str(listed.value) == str(compacted.value)


def test_discovery_keeps_compact_listings_that_read_alike(real_corpus, monkeypatch):
    """A one-pass discovery keeps each local folder's listing compactly; its segments, files and the partitions'
    reads are those of the rows (the listing as the stream reader's polls keep it)."""
    from kafkafmt.storage import FolderListing

    root = os.path.join(real_corpus, "broker-dirs")
    found = kafkafmt.log.discover(root, replicas="all")
    polled = kafkafmt.log.discover(root, replicas="all", cache={})        # (a polling cache: rows kept)
    assert all(isinstance(p.listing, FolderListing) for p in found.partitions)
    assert not any(isinstance(p.listing, FolderListing) for p in polled.partitions)

    def seen(p):                # (a poll's listing sizes every file; a one-pass one the segments only)
        return p.folder, [(e.name, e.path, e.is_dir, e.is_link, e.size if e.name.endswith(".log") else None)
                          for e in p.listing]

    assert [seen(p) for p in found.partitions] == [seen(p) for p in polled.partitions]
    assert [[(s.log, s.size, s.present) for s in p.list_segments()] for p in found.partitions] == \
        [[(s.log, s.size, s.present) for s in p.list_segments()] for p in polled.partitions]
    assert [p.files() for p in found.partitions] == [p.files() for p in polled.partitions]


def test_compact_listings_share_their_names(tmp_path):
    """Partition folders name their files as their siblings do: the compact listings of two folders hold one
    string per name between them (a cluster's discovery keeps thousands of listings)."""
    for folder in ("a-0", "a-1"):
        (tmp_path / folder).mkdir()
        for name in ("00000000000000000000.log", "00000000000000000000.index", "leader-epoch-checkpoint"):
            (tmp_path / folder / name).write_bytes(b"x")
    one, two = (LocalStorage().folder_listing(str(tmp_path / f), sized=(".log",)) for f in ("a-0", "a-1"))
    assert one.names == two.names and all(x is y for x, y in zip(one.names, two.names))
    assert one.prefix != two.prefix and [e.path for e in one] != [e.path for e in two]


@pytest.mark.parametrize("threads", [1, 3])
def test_folders_listed_together_are_listed_as_each_alone(odd_folder, tmp_path, monkeypatch, threads):
    """`LocalStorage.folder_listings` (one native call per thread, the GIL released) gives each folder's compact
    listing in the order asked, and None for one it cannot list -- which fails alone, as `folder_listing` says."""
    for k in range(5):
        (tmp_path / f"t-{k}").mkdir()
        for name in ("00000000000000000000.log", "partition.metadata")[:k % 3]:
            (tmp_path / f"t-{k}" / name).write_bytes(b"x" * (k + 1))
    bad = [os.path.join(odd_folder, "missing"), os.path.join(odd_folder, "partition.metadata"), odd_folder + "\0/sub",
           pathlib.Path(odd_folder)]
    paths = [odd_folder, *bad[:2], *(str(tmp_path / f"t-{k}") for k in range(5)), *bad[2:], odd_folder + "/"]
    monkeypatch.setattr(_local, "FOLDERS_A_THREAD", 1)      # (every thread given some on these few folders)
    for sized in (None, (".log",)):
        got = LocalStorage().folder_listings(paths, sized=sized, threads=threads)
        assert len(got) == len(paths)
        for path, listing in zip(paths, got):
            if path in bad:
                assert listing is None
            else:
                assert listing == LocalStorage().folder_listing(path, sized=sized)
        with monkeypatch.context() as m:            # (no native listing: every folder is left to the usual way)
            m.setattr(_local, "_NATIVE", [False])
            assert LocalStorage().folder_listings(paths, sized=sized, threads=threads) == [None] * len(paths)


def test_the_files_of_a_listing_are_those_scandir_calls_files(odd_folder):
    """What the planner of ``verify`` 's pending fixes takes from discovery's listing instead of listing each
    folder again: every name scandir calls a file (links to files followed; links to folders, dangling ones and
    the fifo left out), in order."""
    from kafkafmt.storage import listed_file_names

    with os.scandir(odd_folder) as entries:
        files = sorted(e.name for e in entries if e.is_file())
    assert "00000000000000000007.log" in files and "to-sub" not in files and "dangling.index" not in files
    for sized in (None, (".log",)):
        compact = LocalStorage().folder_listing(odd_folder, sized=sized)
        got = listed_file_names(compact)
        assert got == listed_file_names(list(compact))          # (Entry rows alike)
        assert got == files


def test_a_fifo_named_as_a_side_file_is_never_opened(tmp_path):
    """A fifo where a segment's ``.timeindex`` would be: no listing names it, so no command opens it (opening a
    fifo waits for a writer: ``verify`` waited forever) -- ``verify`` says the time index is missing, and the
    pending fixes it counts are those ``recover`` plans."""
    import shutil
    import subprocess
    import sys

    from kafkafmt.sample import sample_dir

    folder = tmp_path / "orders-0"
    shutil.copytree(os.path.join(sample_dir(), "orders-0"), folder)
    (folder / "00000000000000000000.timeindex").unlink()
    os.mkfifo(folder / "00000000000000000000.timeindex")
    os.mkfifo(folder / "00000000000000099999.log")
    v = subprocess.run([sys.executable, "-m", "kafkafmt", "verify", str(folder), "--no-progress", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert v.returncode == 0, v.stderr
    lines = [json.loads(x) for x in v.stdout.splitlines()]
    assert any("no .timeindex file beside it" in x.get("message", "") for x in lines)
    assert lines[-1]["pendingFixes"] == kafkafmt.recovery.recover(str(folder)).counts()
    # named on the command line, or opened by the library: refused (exit 2), never waited on
    fifo = str(folder / "00000000000000000000.timeindex")
    d = subprocess.run([sys.executable, "-m", "kafkafmt", "dump", fifo], capture_output=True, text=True, timeout=300)
    assert d.returncode == 2 and "not a regular file" in d.stderr
    with pytest.raises(StorageError, match="not a regular file"):
        LocalStorage().open(fifo)


def test_a_read_of_some_topics_lists_only_their_folders(tmp_path, monkeypatch):
    """Discovery for a read of some topics (or partition numbers) lists the folders of those partitions and of the
    cluster's metadata log, not every partition folder of the log dirs; what it finds is what a discovery of
    everything, filtered, finds -- copies, incarnations and report entries alike; a log dir holding only other
    topics' partitions is not called empty."""
    import kcluster

    root = tmp_path / "cluster"
    kcluster.write_cluster(str(root), {"a": (3, 2), "b": (4, 3), "c": (2, 1)}, seed=3, records=20,
                           segment_bytes=2000, behind=0.3, empty=0.2)
    listed = []
    real_many, real_one = LocalStorage.folder_listings, LocalStorage.folder_listing
    monkeypatch.setattr(LocalStorage, "folder_listings",
                        lambda self, paths, *a, **k: listed.extend(paths) or real_many(self, paths, *a, **k))
    monkeypatch.setattr(LocalStorage, "folder_listing",
                        lambda self, path, *a, **k: listed.append(path) or real_one(self, path, *a, **k))

    def found(**kw):
        listed.clear()
        f = kafkafmt.log.discover(str(root), **kw)
        return ([(p.topic, p.partition, p.url) for p in f.partitions], [(p.topic, p.partition, p.url) for p in f.unread],
                [c for c in f.copies], [(e.kind, e.file, e.message) for e in f.report], f.empty_log_dirs)

    everything = found()
    assert len(listed) == len(set(listed)) == 3 * 2 + 4 * 3 + 2 * 1      # (every copy of every partition)
    for kw in ({"topics": ["b"]}, {"topics": ["a", "c"], "partitions": [1]}, {"partitions": [0]}):
        got = found(**kw)
        want = set(kw.get("topics", ["a", "b", "c"]))

        def keep(tp):
            return tp[0] in want and tp[1] in kw.get("partitions", range(9))

        def tp_of(path):
            topic, _, p = os.path.basename(path).rpartition("-")
            return topic, int(p)
        asked = [p for p in listed if keep(tp_of(p))]
        assert sorted(asked) == sorted(u for _, _, u in everything[0] + everything[1] if keep(tp_of(u))), kw
        # (beyond them, a log dir holding none of them lists one other folder: it holds a partition, not empty)
        others = [os.path.dirname(p) for p in listed if not keep(tp_of(p))]
        assert len(others) == len(set(others)) and not {os.path.dirname(p) for p in asked} & set(others), kw
        assert got[0] == [x for x in everything[0] if keep(x)] and got[1] == [x for x in everything[1] if keep(x)]
        assert got[2] == [c for c in everything[2] if keep((c.topic, c.partition))]
        assert got[3] == [e for e in everything[3] if keep(tp_of(re.search(r".*/[a-c]-\d+", e[1]).group()))]
        assert got[4] == []
    assert found(topics=["nope"])[4] == [] and found(topics=["nope"])[0] == []
