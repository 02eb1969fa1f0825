"""Local files (and ``file://`` URLs): `LocalStorage`, whose blobs are read-only memory maps (``view()`` is a
NumPy uint8 array over the map; ``release`` gives pages back with madvise).
"""
from __future__ import annotations

import errno
import itertools
import mmap
import os
import stat
import threading
import time

import numpy as np

from kafkafmt._native.listing import list_folder, list_folder_names, list_folders_names
from kafkafmt._native.reads import advise_files, read_files
from kafkafmt._util.files import read_whole
from kafkafmt._util.threads import thread_pool
from kafkafmt.errors import ObjectChangedError, StorageError, StorageNotFoundError, StoragePermissionError
from kafkafmt.storage._base import SETTLE_SECONDS, Blob, Entry, FolderListing, Storage

__all__ = ["LocalBlob", "LocalStorage"]

def _local_error(exc: OSError, path) -> StorageError:
    if isinstance(exc, FileNotFoundError):
        err = StorageNotFoundError(f"no such file or folder: {exc.strerror or exc}", file=path)
    elif isinstance(exc, PermissionError):
        err = StoragePermissionError(f"permission denied: {exc.strerror or exc}", file=path)
    else:
        err = StorageError(f"cannot read: {exc.strerror or exc}", file=path)
    err.errno = exc.errno
    err.__cause__ = exc
    return err


#: whether folders are listed natively (`kafkafmt._native.listing`; a test turns it off to compare the Python way)
_NATIVE = [True]
#: the fewest folders `LocalStorage.folder_listings` gives a thread of its own
FOLDERS_A_THREAD = 64
#: whether many files are read by one native call (`kafkafmt._native.reads`; a test turns it off to compare)
_NATIVE_READS = [True]
#: `LocalStorage.will_read`: the largest file the kernel is told about, the bytes told about at most for one
#: read (what the page cache holds ahead of the reader), and the files told about by one native call
ADVISE_FILE_BYTES = 4 << 20
ADVISE_BYTES = 256 << 20
#: the fewest files a read is told ahead about
ADVISE_MIN_FILES = 64
_ADVISE_BATCH = 512
#: a read's first files, looked at to tell whether its files are in the page cache already
_ADVISE_SAMPLE = 16


def _native_list(path, sized, make):
    """The native listing's rows, or None where it cannot list (no POSIX directory streams: ENOSYS)."""
    try:
        return list_folder(path, sized, make, Entry)
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            _NATIVE[0] = False
            return None
        raise


def _hint(items):
    """`_advise`, whatever goes wrong: a hint never fails a read, nor says anything."""
    try:
        _advise(items)
    except Exception:   # noqa: BLE001 - the reads themselves meet and say what is wrong
        pass


def _advise(items):
    """`LocalStorage.will_read`'s thread: the kernel told about the files of ``items`` in order, until
    `ADVISE_BYTES` -- unless the first of them are in the page cache already (files read a moment ago, the usual
    case: nothing to tell, no call per file)."""
    paths = (p for p, size, _ in items if type(p) is str and (size is None or size <= ADVISE_FILE_BYTES))
    batch = list(itertools.islice(paths, _ADVISE_SAMPLE))
    if not batch or _all_cached(batch):
        return
    told = 0
    while batch:
        got = advise_files(batch, ADVISE_FILE_BYTES)
        if len(got) and (got == -errno.ENOSYS).all():
            return                  # (no such hint here)
        told += int(got[got > 0].sum())
        if told >= ADVISE_BYTES:
            return
        batch = list(itertools.islice(paths, _ADVISE_BATCH))


def _all_cached(paths):
    """Whether the first byte of each file is in the page cache (a read that would wait for the disk fails at once:
    ``RWF_NOWAIT``); False where that cannot be told."""
    if not hasattr(os, "RWF_NOWAIT"):
        return False
    one = [bytearray(1)]
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue                    # (gone: its read says so)
        try:
            os.preadv(fd, one, 0, os.RWF_NOWAIT)
        except BlockingIOError:
            return False
        except OSError:                 # (no such flag on this filesystem: cannot be told)
            return False
        finally:
            os.close(fd)
    return True


class LocalStorage(Storage):
    """The local filesystem; paths are OS paths (str), blobs are memory maps."""

    is_local = True
    protocol = "file"

    def list(self, path, sized=None):
        """The folder's entries; ``sized``: a tuple of name suffixes -- only files named so get their size
        (a stat each), the others size None (a partition folder's side files, listed by the million). Fifos,
        sockets and devices (and links to them) are left out: not Kafka data, and opening a fifo waits for a
        writer."""
        make = tuple.__new__       # (an Entry built as its tuple: the named tuple's keyword constructor costs
        try:                       # more than the rest of a side file's row, listed by the million)
            out = _native_list(path, sized, make) if _NATIVE[0] and type(path) is str else None
            if out is not None:
                out.sort()
                return out
            with os.scandir(path) as it:
                out = []
                add = out.append
                for e in it:
                    name = e.name
                    try:
                        if not e.is_file() and not e.is_dir() and (not e.is_symlink() or os.path.exists(e.path)):
                            continue      # a fifo, socket or device (or a link to one): not listed, as natively
                        if e.is_dir():
                            add(make(Entry, (name, e.path, 0, True, None, e.is_symlink())))
                        elif sized is None or name.endswith(sized):
                            add(make(Entry, (name, e.path, e.stat().st_size, False, None, e.is_symlink())))
                        else:          # (a side file: no stat; is_symlink reads the listing's type)
                            add(make(Entry, (name, e.path, None, False, None, e.is_symlink())))
                    except FileNotFoundError:      # vanished between listing and stat
                        continue
        except OSError as exc:
            raise _local_error(exc, path) from None
        out.sort()      # by name (names in a folder differ, so the other fields never decide)
        return out

    def folder_listing(self, path, sized=None):
        """The folder's entries as `list` gives them, kept compactly (a `FolderListing`: no row object per
        entry until one is asked for)."""
        if _NATIVE[0] and type(path) is str:
            try:
                return FolderListing(*list_folder_names(path, sized))
            except OSError as exc:
                if exc.errno != errno.ENOSYS:
                    raise _local_error(exc, path) from None
                _NATIVE[0] = False
        return FolderListing.of(self.list(path, sized), os.path.join(path, ""))

    def folder_listings(self, paths, sized=None, threads=1):
        """`folder_listing` of each folder of ``paths``, natively, without the GIL: a list of `FolderListing`,
        None for a folder not listed so (its `folder_listing` or `list` says why it cannot be listed). With
        ``threads`` > 1 the folders are shared out in contiguous runs (of at least `FOLDERS_A_THREAD`), listed side
        by side: on a cold cache or a network file system a folder's listing is mostly waiting."""
        paths = list(paths)
        out = [None] * len(paths)
        if not _NATIVE[0]:
            return out
        asked = [i for i, p in enumerate(paths) if type(p) is str and "\0" not in p]
        wanted = [paths[i] for i in asked]
        n = max(1, min(threads, len(wanted) // FOLDERS_A_THREAD))
        cuts = [len(wanted) * k // n for k in range(n + 1)]
        runs = [thread_pool(n - 1, "listing").submit(list_folders_names, wanted[a:b], sized, FolderListing)
                for a, b in zip(cuts[1:-1], cuts[2:])] if n > 1 else []
        got = list_folders_names(wanted[:cuts[1]], sized, FolderListing)
        for run in runs:
            got += run.result()
        for i, g in zip(asked, got):
            if not isinstance(g, OSError):
                out[i] = g
        return out

    def size(self, path):
        try:
            return os.stat(path).st_size
        except OSError as exc:
            raise _local_error(exc, path) from None

    def isdir(self, path):
        return os.path.isdir(path)

    def exists(self, path):
        return os.path.exists(path)

    def join(self, a, *names):
        return os.path.join(a, *names)

    def name(self, path):
        return os.path.basename(os.path.normpath(path))

    def parent(self, path):
        return os.path.dirname(os.path.normpath(path))

    def url(self, path):
        return os.fspath(path)

    def change_token(self, path):
        try:
            return os.stat(path).st_mtime_ns
        except OSError:
            return None

    def settled(self, token):
        return token is None or time.time() - token / 1e9 > SETTLE_SECONDS

    def open(self, path, size=None, *, read_ahead=None, version=None):
        return LocalBlob(path, size)

    def read_into(self, path, out, *, version=None):
        """Read the first ``len(out)`` bytes of a file into ``out`` (a writable buffer): the number
        of bytes read, fewer when the file is shorter (one open, one read: cheaper than a map for
        small files)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise _local_error(exc, path) from None
        try:
            want = len(out)
            got = os.preadv(fd, [out], 0) if want else 0
            while 0 < got < want:      # (a short read of a regular file: only at its end, or interrupted)
                more = os.preadv(fd, [out[got:]], got)
                if not more:
                    break
                got += more
            return got
        except OSError as exc:
            raise _local_error(exc, path) from None
        finally:
            os.close(fd)

    def will_read(self, items, count=None):
        """Hint: the files ``(path, size, version)`` are about to be read whole, in this order. The kernel is told
        so (``posix_fadvise`` WILLNEED, by a thread of its own: `kafkafmt._native.reads.advise_files`), so that a
        disk whose page cache does not hold them -- a backup, a broker's disk just mounted -- reads them while the
        reader works on the ones before, instead of one wait per file. Files of more than `ADVISE_FILE_BYTES`,
        and any past the first `ADVISE_BYTES` told about, are left to the reads themselves; a file that is gone
        or unreadable is left to its read, which says so. ``items`` may be an iterator: that thread takes it
        (the caller does not wait while it is made), and stops at once when its first files are in the page
        cache already. Fewer than `ADVISE_MIN_FILES` files (``count``, or the length of a list) are not told
        about: the read of a partition or two starts on them at once, and a thread costs more than it saves."""
        if count is None and isinstance(items, (list, tuple)):
            count = len(items)
        if count is not None and count < ADVISE_MIN_FILES:
            return
        threading.Thread(target=_hint, args=(iter(items),), name="kafkafmt-will-read", daemon=True).start()

    def read_many(self, paths, buf, starts, versions=None, offsets=None):
        """Read file ``i`` of ``paths`` into ``buf[starts[i]:starts[i + 1]]`` from its byte ``offsets[i]`` on
        (None: its first), all in one native call without the interpreter (`kafkafmt._native.reads`); -1 where a
        read failed (`read_into` says why)."""
        if not _NATIVE_READS[0] or any(type(p) is not str for p in paths):
            return super().read_many(paths, buf, starts, versions, offsets)
        got = read_files(paths, buf, np.asarray(starts, np.int64), offsets)
        if len(got) and (got == -errno.ENOSYS).any():        # (no POSIX reads here: the Python way from now on)
            _NATIVE_READS[0] = False
            return super().read_many(paths, buf, starts, versions, offsets)
        got[got < 0] = -1
        return got

    def read_bytes(self, path, start=0, stop=None):
        try:
            if not start and stop is None:
                return read_whole(path)
            with open(path, "rb") as f:
                f.seek(start)
                return f.read(-1 if stop is None else stop - start)
        except OSError as exc:
            raise _local_error(exc, path) from None

    def __repr__(self):
        return "LocalStorage()"


class LocalBlob(Blob):
    """A read-only memory map of a local file (empty files allowed).

    ``buf`` (= ``view()``) is a NumPy uint8 array over the map; ``map`` the mmap (None when empty).
    """

    def __init__(self, path, size=None):
        self.path = path
        self.url = os.fspath(path)
        try:
            # (O_NONBLOCK: a fifo is not waited on for a writer, but refused)
            flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
            with open(os.open(path, flags), "rb") as f:
                st = os.fstat(f.fileno())
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.url)    # (as open says)
                if not stat.S_ISREG(st.st_mode):
                    raise StorageError(f"not a regular file: {self.url}", file=self.url)
                actual = st.st_size
                if size is not None and actual < size:
                    raise ObjectChangedError(f"changed size while being read: {actual} bytes now, "
                                             f"{size} when listed", file=self.url)
                self.size = actual if size is None else int(size)
                self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if self.size else None
        except OSError as exc:
            if isinstance(exc, StorageError):
                raise
            raise _local_error(exc, path) from None
        self.buf = np.frombuffer(self.map, np.uint8)[:self.size] if self.map is not None else np.zeros(0, np.uint8)

    def read(self, start, stop=None):
        start, stop = self._check_range(start, stop)
        return memoryview(self.buf[start:stop])

    def view(self):
        return self.buf

    def will_need(self, start, stop=None):
        start, stop = self._check_range(start, stop)
        page = mmap.PAGESIZE
        lo = start - start % page
        if self.map is not None and stop > lo and hasattr(mmap, "MADV_WILLNEED"):
            try:
                self.map.madvise(mmap.MADV_WILLNEED, lo, stop - lo)
            except (OSError, ValueError):
                pass

    def release(self, done, upto):
        """Drop this process's pages of the map in [done, upto) (page-aligned); returns upto's
        page boundary. The file stays in the page cache; only resident memory goes."""
        page = mmap.PAGESIZE
        lo, hi = done - done % page, upto - upto % page
        if self.map is not None and hi > lo and hasattr(mmap, "MADV_DONTNEED"):
            try:
                self.map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
            except (OSError, ValueError):
                return done
        return max(hi, done)

    def close(self):
        self.buf = None
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:  # still referenced (a view, a traceback): closed when collected
                pass
