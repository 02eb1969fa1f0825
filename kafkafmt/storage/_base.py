"""The storage interface: `Storage` (list a folder, size of a file, open it) and the `Blob` it opens (read a
byte range; a zero-copy view when the file is local), the listing's `Entry`, object versions, retries, and
`statistics()` of every storage's requests and bytes fetched. Above this package nothing assumes mmap: code that
wants the whole file asks ``view()`` and falls back to ``read(start, stop)`` when it gets ``None``.
"""
from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from typing import NamedTuple

from kafkafmt.errors import KafkafmtError

__all__ = ["Blob", "DEFAULT_CACHE_BLOCKS", "DEFAULT_PREFETCH", "DEFAULT_READ_AHEAD", "Entry", "FolderListing",
           "RetryPolicy", "SETTLE_SECONDS", "Storage", "StorageStatistics", "URL_SCHEME", "is_url", "listed_files",
           "listed_size", "will_read_listed",
           "safe_url", "statistics", "version_of"]

DEFAULT_READ_AHEAD = 8 << 20      # bytes per remote request at least (issue 13: "several MiB")
DEFAULT_CACHE_BLOCKS = 2          # remote blocks kept per blob (the last ones read)
DEFAULT_PREFETCH = 1              # blocks fetched in the background during sequential scans

URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@")


def is_url(path) -> bool:
    """True for ``scheme://...`` strings (file:// included); False for plain paths."""
    return isinstance(path, str) and URL_SCHEME.match(path) is not None and not re.match(r"^[A-Za-z]:\\", path)


def safe_url(url: str) -> str:
    """The URL without ``user:password@`` (messages and reprs never carry credentials)."""
    return _USERINFO.sub(r"\1", url)


#: a local folder changed this recently may change again within the same timestamp tick
SETTLE_SECONDS = 2.0


class Entry(NamedTuple):
    """One listing row: ``name`` (last component), ``path`` (as the storage takes it), ``size`` in
    bytes (0 for folders), ``is_dir``, ``version``: what names this content of an object where
    the store has it (S3's ETag or version id, GCS's generation; see `version_of`), else None, and
    ``is_link``: a symbolic link (local folders; seen in the listing itself, no call per entry)."""
    name: str
    path: str
    size: int
    is_dir: bool
    version: object = None
    is_link: bool = False


class FolderListing(Sequence):
    """A local folder's listing kept compactly: the names, their sizes and kinds, and the folder they are in --
    each `Entry` made when asked (`LocalStorage.folder_listing`). A cluster's discovery keeps the listing of each
    of its thousands of folders (`kafkafmt.log.Partition.listing`): as rows, some ten tuples and twenty strings a
    folder; as this, two tuples.

    Parameters
    ----------
    names : tuple of str
        The entries' names, sorted.
    sizes : tuple
        Their sizes in bytes (None where not asked for, 0 for a folder).
    flags : bytes
        Their kinds: 1 a folder, 2 a symbolic link (to what its other bits say).
    prefix : str
        The folder's path with its separator: an entry's path is ``prefix + name``.
    """

    __slots__ = ("names", "sizes", "flags", "prefix")

    def __init__(self, names, sizes, flags, prefix):
        self.names, self.sizes, self.flags, self.prefix = names, sizes, flags, prefix

    @classmethod
    def of(cls, entries, prefix):
        """The listing of `Entry` rows (sorted by name) of the folder ``prefix`` names (with its separator)."""
        return cls(tuple(e.name for e in entries), tuple(e.size for e in entries),
                   bytes(int(e.is_dir) | int(e.is_link) << 1 for e in entries), prefix)

    def __len__(self):
        return len(self.names)

    def _entry(self, i):
        f, name = self.flags[i], self.names[i]
        return _ENTRY(Entry, (name, self.prefix + name, self.sizes[i], bool(f & 1), None, bool(f & 2)))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._entry(k) for k in range(len(self.names))[i]]
        return self._entry(range(len(self.names))[i])

    def __iter__(self):
        prefix, make = self.prefix, _ENTRY
        for name, size, f in zip(self.names, self.sizes, self.flags):
            yield make(Entry, (name, prefix + name, size, bool(f & 1), None, bool(f & 2)))

    def __eq__(self, other):
        if isinstance(other, FolderListing):
            return (self.names, self.sizes, self.flags, self.prefix) == (other.names, other.sizes, other.flags,
                                                                          other.prefix)
        if isinstance(other, (tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None         # (a sequence compared by its entries, as a list is)

    def __repr__(self):
        return f"FolderListing({self.prefix!r}, {len(self.names)} entries)"

    def __reduce__(self):
        return FolderListing, (self.names, self.sizes, self.flags, self.prefix)


#: an Entry made as its tuple (the named tuple's keyword constructor costs more than the rest of a row)
_ENTRY = tuple.__new__


def listed_files(listing, keep):
    """``(path, size)`` of each file of a folder's listing (`FolderListing` or `Entry` rows) whose name
    ``keep(name)`` keeps, in the listing's order (size None where not asked for)."""
    if isinstance(listing, FolderListing):      # (its fields read as they are: no row made per entry)
        prefix = listing.prefix
        for n, s, f in zip(listing.names, listing.sizes, listing.flags):
            if not f & 1 and keep(n):
                yield prefix + n, s
        return
    for e in listing:
        if not e.is_dir and keep(e.name):
            yield e.path, e.size


def listed_file_names(listing):
    """The names of a local folder's files in its listing (`FolderListing` or `Entry` rows), in its order, as
    ``os.scandir`` 's ``DirEntry.is_file()`` tells them: a symbolic link is followed (one to a folder, or one
    whose target is gone, is not a file). A listing leaves fifos, sockets and devices out."""
    if isinstance(listing, FolderListing):
        prefix = listing.prefix
        return [n for n, f in zip(listing.names, listing.flags)
                if not f & 1 and (not f & 2 or os.path.isfile(prefix + n))]
    return [e.name for e in listing if not e.is_dir and (not e.is_link or os.path.isfile(e.path))]


def listed_size(listing, suffix):
    """The bytes of the files named ``*<suffix>`` in a folder's listing (`FolderListing` or `Entry` rows; sizes
    not asked for count 0)."""
    return sum(s or 0 for _, s in listed_files(listing, lambda n: n.endswith(suffix)))


def will_read_listed(storage, listings, keep):
    """Tell ``storage`` (`Storage.will_read`) that the files of folders' ``listings`` whose names ``keep(name)``
    keeps are about to be read, in the listings' order: the files are named as the storage takes them (a local
    disk's thread: the caller does not wait while they are), their number about the listings' length."""
    items = ((path, size, None) for listing in listings for path, size in listed_files(listing, keep))
    storage.will_read(items, count=sum(map(len, listings)))


#: fields of an object store's listing or file details that change whenever the object's content does,
#: in the order they are preferred: a version id names one version for good, an ETag / generation the
#: content the object has now
_VERSION_FIELDS = ("VersionId", "version_id", "generation", "ETag", "etag")


def version_of(details):
    """The version token of an object from its listing or file details (None when the store gives none)."""
    for key in _VERSION_FIELDS:
        value = details.get(key) if details else None
        if value not in (None, "", "null"):
            return f"{key}={value}"
    return None


class StorageStatistics(NamedTuple):
    """What every `Storage` of this process did since it started (`statistics`): ``requests``
    (listings, size lookups, ranged reads) and ``bytes_fetched`` (bytes received by ranged reads).
    A read's own numbers are the difference of two snapshots; local files are memory-mapped, so
    only object stores (and fsspec filesystems such as ``memory://``) count."""
    requests: int
    bytes_fetched: int

    def __sub__(self, other):
        return StorageStatistics(self.requests - other.requests, self.bytes_fetched - other.bytes_fetched)


class _Totals:
    def __init__(self):
        self.requests = self.bytes_fetched = 0
        self.lock = threading.Lock()

    def add(self, requests, nbytes):
        with self.lock:
            self.requests += requests
            self.bytes_fetched += nbytes


_TOTALS = _Totals()


def statistics() -> StorageStatistics:
    """A snapshot of the process-wide `StorageStatistics` (every storage opened, including the ones
    the readers open themselves): ``after - before`` is what a read in between fetched."""
    with _TOTALS.lock:
        return StorageStatistics(_TOTALS.requests, _TOTALS.bytes_fetched)


class RetryPolicy(NamedTuple):
    """How failing remote requests are retried: at most ``attempts`` tries, sleeping ``base_delay``,
    2x, 4x ... (capped at ``max_delay``) between them, never starting a try after ``deadline``
    seconds from the first; each try of an async filesystem (s3fs, gcsfs, adlfs) is abandoned
    after ``timeout`` seconds (the client's own retries happen inside one try)."""
    attempts: int = 4
    base_delay: float = 0.2
    max_delay: float = 5.0
    deadline: float = 120.0
    timeout: float = 60.0


class Storage:
    """A place holding files: the local disk or an object store.

    Counters ``requests`` (listings, size lookups and ranged reads issued) and ``bytes_fetched``
    (bytes received by ranged reads) add up over every blob this storage opened.
    """

    is_local = False
    protocol = "file"

    def __init__(self):
        self.requests = 0
        self.bytes_fetched = 0
        self._lock = threading.Lock()

    # -- interface ----------------------------------------------------------------------------
    def list(self, path) -> list:
        """The entries of a folder (one listing call), sorted by name, sizes from the listing."""
        raise NotImplementedError

    def size(self, path) -> int:
        raise NotImplementedError

    def isdir(self, path) -> bool:
        raise NotImplementedError

    def exists(self, path) -> bool:
        raise NotImplementedError

    def join(self, a, *names) -> str:
        raise NotImplementedError

    def change_token(self, path):
        """Something that changes when a folder's listing or a file's content does, cheaply (a local
        folder's or file's mtime); None where the store has no such thing (list again to know)."""
        return None

    def settled(self, token):
        """Whether a change token is old enough to trust (file-system timestamps are coarse: a
        folder changed in the last `SETTLE_SECONDS` may change again within the same tick)."""
        return True

    def open(self, path, size=None, *, read_ahead=None, version=None) -> "Blob":
        """A :class:`Blob` over the file. ``size`` (e.g. from a listing) saves a size lookup and
        pins the size the blob reads against; a file found shorter than it raises
        :class:`ObjectChangedError`. ``version`` (an `Entry.version` from the listing) pins the
        content where the store has versions: a replaced object raises ObjectChangedError, even
        one of the same size."""
        raise NotImplementedError

    def url(self, path) -> str:
        """How ``path`` is named in messages (a URL for remote stores, the path for local ones)."""
        raise NotImplementedError

    def name(self, path) -> str:
        """Last component of a path."""
        return str(path).rstrip("/").rsplit("/", 1)[-1]

    def parent(self, path) -> str:
        p = str(path).rstrip("/")
        return p.rsplit("/", 1)[0] if "/" in p else ""

    def read_bytes(self, path, start=0, stop=None) -> bytes:
        """A whole (small) file or a range of it, in one request; no read-ahead, no caching."""
        with self.open(path) as blob:
            return bytes(blob.read(start, blob.size if stop is None else stop))

    def read_listed(self, path, size, version=None) -> bytes:
        """The whole of a file as a listing gave it (its `Entry.size` and `Entry.version`), in one
        request -- none when an object store holds the content it was listed with already (`will_read`);
        a file replaced since is read as it is now."""
        return self.read_bytes(path)

    def read_into(self, path, out, *, version=None) -> int:
        """Read the first ``len(out)`` bytes of a file into ``out`` (a writable buffer); the number of
        bytes read, fewer when the file is shorter. ``version``: the listed `Entry.version` (object
        stores: a replaced object raises ObjectChangedError)."""
        data = self.read_bytes(path, 0, len(out))
        out[:len(data)] = data
        return len(data)

    def read_many(self, paths, buf, starts, versions=None, offsets=None):
        """Read file ``i`` of ``paths`` into ``buf[starts[i]:starts[i + 1]]`` as `read_into` does (``versions``:
        their listed `Entry.version` s, or None), from its byte ``offsets[i]`` on (None: from its first); an
        int64 array of the bytes each read, -1 where its read failed (read it again with `read_into` to learn
        why). Local disks read them all in one native call."""
        import numpy as np

        out = np.empty(len(paths), np.int64)
        mv = memoryview(buf)
        for i, path in enumerate(paths):
            slot = mv[starts[i]:starts[i + 1]]
            at = 0 if offsets is None else int(offsets[i])
            try:
                if at:
                    data = self.read_bytes(path, at, at + len(slot))
                    slot[:len(data)] = data
                    out[i] = len(data)
                else:
                    out[i] = self.read_into(path, slot, version=None if versions is None else versions[i])
            except (KafkafmtError, OSError, ValueError):     # (ValueError: a path holding a NUL)
                out[i] = -1
        return out

    def list_tree(self, path):
        """``{folder: entries}`` of every folder at or below ``path`` (each as `list` gives it) from one
        recursive listing -- an object store's keys under a prefix, a page of many keys a request -- or
        None where listing folder by folder costs no more (local disks) or nothing is under ``path``."""
        return None

    def will_read(self, items, count=None):
        """Hint: the whole files ``(path, size, version)`` are about to be read, in this order (``count``:
        about how many, when ``items`` is an iterator and the caller knows). Object
        stores fetch the small ones ahead through a bounded pool of threads (a window of bytes ahead of
        the reader), so that reading them one after another waits for no request but the first; a local
        disk is told to read them into its page cache (`kafkafmt.storage.LocalStorage.will_read`); others
        do nothing."""

    def _count(self, requests=0, nbytes=0):
        with self._lock:
            self.requests += requests
            self.bytes_fetched += nbytes
        _TOTALS.add(requests, nbytes)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lock", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


class Blob:
    """One opened file: ``size``, ``path``, ``url``, ``read(start, stop)``, ``view()``, ``close()``.

    ``read`` returns exactly ``stop - start`` bytes as a read-only bytes-like object (memoryview),
    or raises: :class:`ObjectChangedError` if the file is shorter now than ``size``,
    ``ValueError`` for a range outside ``[0, size]``. Counters ``requests`` and ``bytes_fetched``
    count this blob's remote requests (0 for local files).
    """

    size = 0
    path = ""
    url = ""
    requests = 0
    bytes_fetched = 0

    def read(self, start, stop=None):
        raise NotImplementedError

    def view(self):
        """The whole file as a NumPy uint8 array without copying (local files), else ``None``."""
        return None

    def release(self, done, upto):
        """Hint that bytes in ``[done, upto)`` will not be read again; returns how far that was
        honoured (a position <= upto). Default: nothing to give back."""
        return upto

    def will_need(self, start, stop=None):
        """Hint that ``[start, stop)`` will be read soon: remote blobs fetch it in the background
        (e.g. the first block of the next segment while the current one is decoded), local ones
        ask the kernel to read it ahead. Returns nothing; errors surface at the later ``read``."""

    def close(self):
        pass

    def _check_range(self, start, stop):
        if stop is None:
            stop = self.size
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= self.size:
            raise ValueError(f"byte range {start}..{stop} is outside {self.url} (size {self.size})")
        return start, stop

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<{type(self).__name__} {self.url} size={self.size}>"
