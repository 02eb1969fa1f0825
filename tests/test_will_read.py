"""A local disk told what a read is about to read (`kafkafmt.storage.LocalStorage.will_read`): a thread of its own
tells the kernel (``posix_fadvise`` WILLNEED) about each file in order -- bounded, only when they are not in the
page cache already, never failing or speaking -- so that a cold disk reads them while the reader works."""
from __future__ import annotations

import errno
import os
import threading

import pytest

from kafkafmt._native.reads import advise_files
from kafkafmt.storage import LocalStorage
from kafkafmt.storage import _local

needs_hints = pytest.mark.skipif(not hasattr(os, "POSIX_FADV_DONTNEED") or not hasattr(os, "RWF_NOWAIT"),
                                 reason="no page-cache hints on this platform")


def _write(path, n):
    with open(path, "wb") as f:
        f.write(os.urandom(n))
    return str(path)


def _evict(paths, probe):
    """Out of the page cache (synced first: clean pages); False where the filesystem keeps them (tmpfs), as
    ``probe`` (another such file) shows -- looking at a file may start reading it, so not at these."""
    for p in paths + [probe]:
        fd = os.open(p, os.O_RDONLY)
        os.fdatasync(fd)
        os.close(fd)
    for p in (paths + [probe]) * 2:         # (twice: pages just written may wait in a per-CPU list the first time)
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    return not _local._all_cached([probe])


def _join():
    for t in threading.enumerate():
        if t.name == "kafkafmt-will-read":
            t.join()


@needs_hints
def test_the_kernel_is_told_of_each_file(tmp_path):
    small, large = _write(tmp_path / "a.index", 100), _write(tmp_path / "b.log", 5000)
    got = advise_files([small, large, str(tmp_path / "gone"), "a\0b"], 1000).tolist()
    assert got == [100, -errno.EFBIG, -errno.ENOENT, -errno.EINVAL]
    assert advise_files([], 1).tolist() == []


@needs_hints
def test_a_local_disk_is_told_in_order_within_its_bounds(tmp_path, monkeypatch):
    paths = [_write(tmp_path / f"{i:02d}.index", 4096) for i in range(16)]
    big = _write(tmp_path / "big.log", 64 << 10)
    if not _evict(paths + [big], _write(tmp_path / "probe", 4096)):
        pytest.skip("this filesystem keeps its pages (tmpfs): nothing to tell")
    told = []

    def spy(batch, max_bytes):          # (the real call, its arguments kept)
        told.append(list(batch))
        return advise_files(batch, max_bytes)

    monkeypatch.setattr(_local, "advise_files", spy)
    monkeypatch.setattr(_local, "ADVISE_FILE_BYTES", 32 << 10)
    monkeypatch.setattr(_local, "ADVISE_BYTES", 10 * 4096)       # (stops once 10 files are told)
    monkeypatch.setattr(_local, "_ADVISE_SAMPLE", 4)
    monkeypatch.setattr(_local, "_ADVISE_BATCH", 3)
    items = [(paths[0], 4096, None), (big, 64 << 10, None), (b"/bytes/path", 1, None)] + \
        [(p, None, None) for p in paths[1:]]
    LocalStorage().will_read(iter(items))
    _join()
    flat = [p for batch in told for p in batch]
    assert flat == paths[:10]                   # in order, until the bound; the large log and a bytes path left
    assert [len(b) for b in told] == [4, 3, 3]                    # the first files, then batches


@needs_hints
def test_nothing_is_told_of_files_in_the_page_cache(tmp_path, monkeypatch):
    paths = [_write(tmp_path / f"{i}.timeindex", 12) for i in range(5)]
    for p in paths:
        with open(p, "rb") as f:
            f.read()
    told = []
    monkeypatch.setattr(_local, "advise_files", lambda batch, m: told.append(batch) or advise_files(batch, m))
    LocalStorage().will_read(iter([(p, 12, None) for p in paths]))
    _join()
    assert told == []


@needs_hints
def test_a_read_of_a_few_files_is_not_told_ahead(tmp_path, monkeypatch):
    paths = [_write(tmp_path / f"{i}.index", 4096) for i in range(5)]
    if not _evict(paths, _write(tmp_path / "probe", 4096)):
        pytest.skip("this filesystem keeps its pages (tmpfs): nothing to tell")
    told = []
    monkeypatch.setattr(_local, "advise_files", lambda batch, m: told.append(batch) or advise_files(batch, m))
    storage = LocalStorage()
    storage.will_read([(p, 4096, None) for p in paths])                      # (a list: its length)
    storage.will_read(iter([(p, 4096, None) for p in paths]), count=len(paths))
    assert not any(t.name == "kafkafmt-will-read" for t in threading.enumerate())
    storage.will_read(iter([(p, 4096, None) for p in paths]))                # (no count: told)
    _join()
    assert told == [paths]


def test_a_hint_never_fails_a_read_nor_speaks(tmp_path, capfd):
    def broken():
        yield str(tmp_path / "gone.index"), None, None
        raise RuntimeError("a listing that fails half way")

    storage = LocalStorage()
    storage.will_read(broken())
    storage.will_read([(str(tmp_path / "none"), None, None), (None, None, None)])
    storage.will_read([])
    _join()
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
