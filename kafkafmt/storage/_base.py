"""Where the bytes come from: one small interface over the local disk and object stores.

Everything kafkafmt reads from a log dir goes through a :class:`Storage` (list a folder, size of a
file, open it) and the :class:`Blob` it opens (read a byte range; a zero-copy view when the file is
local). Above this module nothing assumes mmap: code that wants the whole file asks ``view()`` and
falls back to ``read(start, stop)`` when it gets ``None``.

* :class:`LocalStorage` -- plain paths (and ``file://`` URLs). Blobs are read-only memory maps
  (``view()`` is a NumPy uint8 array over the map; ``release`` gives pages back with madvise).
* :class:`FsspecStorage` -- any fsspec filesystem (``s3://``, ``gs://``, ``abfs://``/``az://``,
  ``hdfs://``, ``memory://`` ...) or a ``pyarrow.fs.FileSystem`` (wrapped). Blobs issue ranged
  requests of at least ``read_ahead`` bytes (8 MiB by default) and keep the last few blocks, so a
  run of small sequential reads costs one request per block; failing requests are retried with
  exponential backoff, bounded in count and time, then raise :class:`StorageUnavailableError`.

``open_storage(path_or_url, storage_options=None, filesystem=None)`` returns ``(storage, path)``.
Errors are :class:`kafkafmt.errors.StorageError` subclasses naming the URL, never the options.
"""
from __future__ import annotations

import collections
import inspect
import mmap
import os
import re
import threading
import time
from typing import NamedTuple

import numpy as np

from kafkafmt.errors import (KafkafmtError, ObjectChangedError, StorageError, StorageNotFoundError,
                     StoragePermissionError, StorageUnavailableError)

__all__ = ["version_of", "Entry", "StorageStatistics", "statistics", "Storage", "Blob", "LocalStorage", "LocalBlob", "FsspecStorage", "RemoteBlob",
           "open_storage", "is_url", "DEFAULT_READ_AHEAD", "DEFAULT_CACHE_BLOCKS", "DEFAULT_PREFETCH", "RetryPolicy"]

DEFAULT_READ_AHEAD = 8 << 20      # bytes per remote request at least (issue 13: "several MiB")
DEFAULT_CACHE_BLOCKS = 2          # remote blocks kept per blob (the last ones read)
DEFAULT_PREFETCH = 1              # blocks fetched in the background during sequential scans
_MAX_CACHED_BLOCK = 64 << 20      # larger single reads are returned, not cached

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@")


def is_url(path) -> bool:
    """True for ``scheme://...`` strings (file:// included); False for plain paths."""
    return isinstance(path, str) and _URL.match(path) is not None and not re.match(r"^[A-Za-z]:\\", path)


def _safe_url(url: str) -> str:
    """The URL without ``user:password@`` (messages and reprs never carry credentials)."""
    return _USERINFO.sub(r"\1", url)


#: a local folder changed this recently may change again within the same timestamp tick
SETTLE_SECONDS = 2.0


class Entry(NamedTuple):
    """One listing row: ``name`` (last component), ``path`` (as the storage takes it), ``size`` in
    bytes (0 for folders), ``is_dir``, and ``version``: what names this content of an object where
    the store has it (S3's ETag or version id, GCS's generation; see `version_of`), else None."""
    name: str
    path: str
    size: int
    is_dir: bool
    version: object = None


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


# ------------------------------------------------------------------------------------------------
# local files

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


class LocalStorage(Storage):
    """The local filesystem; paths are OS paths (str), blobs are memory maps."""

    is_local = True
    protocol = "file"

    def list(self, path):
        try:
            with os.scandir(path) as it:
                out = []
                for e in it:
                    try:
                        is_dir = e.is_dir()
                        size = 0 if is_dir else e.stat().st_size
                    except FileNotFoundError:      # vanished between listing and stat
                        continue
                    out.append(Entry(e.name, e.path, size, is_dir))
        except OSError as exc:
            raise _local_error(exc, path) from None
        out.sort(key=lambda e: e.name)
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

    def read_bytes(self, path, start=0, stop=None):
        try:
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
            with open(path, "rb") as f:
                actual = os.fstat(f.fileno()).st_size
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


# ------------------------------------------------------------------------------------------------
# fsspec (object stores, HDFS, memory) and pyarrow.fs

_PERMISSION_WORDS = ("AccessDenied", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                     "AuthorizationPermissionMismatch", "AuthenticationFailed", "403")
_NOT_FOUND_WORDS = ("NoSuchBucket", "NoSuchKey", "NotFound", "404")
_RANGE_WORDS = ("InvalidRange", "not satisfiable", "416")


#: a ranged read's marker for `FsspecStorage._run`: a conditional read of one version (`_s3_conditional_range`)
_PINNED_RANGE = object()


async def _s3_conditional_range(fs, path, start, stop, version):
    """Bytes [start, stop) of an S3 object only if it is still ``version`` (HTTP 412 otherwise):
    If-Match on the ETag, or the version id itself -- the request s3fs makes for its own files."""
    field, value = version.split("=", 1)
    bucket, key, _ = fs.split_path(path)
    cond = {"IfMatch": value} if field == "ETag" else {"VersionId": value}
    resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, Range=f"bytes={start}-{stop - 1}", **cond)
    try:
        return await resp["Body"].read()
    finally:
        resp["Body"].close()
#: what stores answer when a conditional read finds another version (HTTP 412)
_CHANGED_WORDS = ("PreconditionFailed", "Precondition Failed", "pre-conditions you specified did not hold",
                  "ConditionNotMet")


class _RangeNotSatisfiable(StorageError):
    """A ranged read starting at or past the object's end (it shrank): not retried."""


_SECRET_NAMES = re.compile(r"secret|key|token|passw|credential|sas|signature|connection_string|auth|cert",
                           re.IGNORECASE)


def _secrets_of(options) -> list:
    """String values of options whose names look secret (at any depth), longest first."""
    out = []

    def walk(v, secret):
        if isinstance(v, str):
            if secret and len(v) >= 4:
                out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, secret or bool(_SECRET_NAMES.search(str(k))))
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x, secret)
    walk(options or {}, False)
    return sorted(set(out), key=len, reverse=True)


class FsspecStorage(Storage):
    """An fsspec filesystem. Paths are the filesystem's own (``bucket/key`` for s3);
    ``url(path)`` puts the protocol back for messages.

    ``read_ahead``: minimum bytes per ranged request; ``cache_blocks``: blocks kept per blob;
    ``retry``: a :class:`RetryPolicy`.
    """

    is_local = False

    def __init__(self, fs, *, protocol=None, read_ahead=DEFAULT_READ_AHEAD,
                 cache_blocks=DEFAULT_CACHE_BLOCKS, prefetch=DEFAULT_PREFETCH, retry=None, secrets=()):
        super().__init__()
        self.fs = fs
        proto = protocol or fs.protocol
        self.protocol = proto[0] if isinstance(proto, (tuple, list)) else proto
        self.read_ahead = int(read_ahead)
        self.cache_blocks = int(cache_blocks)
        self.prefetch = int(prefetch)
        self.retry = retry or RetryPolicy()
        self._pool = None
        self._secrets = list(secrets)
        # a pyarrow.fs filesystem wrapped by fsspec: ranged reads go to pyarrow directly (read_at on a
        # random-access file; fsspec's wrapper cannot seek its stream for ranges starting at 0)
        self._arrow = getattr(fs, "fs", None) if type(fs).__name__ == "ArrowFSWrapper" else None

    def __repr__(self):
        return f"FsspecStorage({self.protocol!r})"

    def _executor(self):
        """Threads for background prefetches (created on first use, not pickled)."""
        with self._lock:
            if self._pool is None:
                import concurrent.futures
                self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="kafkafmt-prefetch")
            return self._pool

    def __getstate__(self):
        state = super().__getstate__()
        state["_pool"] = None
        return state

    # -- naming ---------------------------------------------------------------------------------
    def url(self, path):
        path = str(path)
        if is_url(path):
            return _safe_url(path)
        base = getattr(self, "_url_base", None)      # (filesystem path, URL it came from)
        if base is not None:
            fs_base, url_base = base
            if path == fs_base or path.startswith(fs_base.rstrip("/") + "/"):
                return url_base.rstrip("/") + path[len(fs_base.rstrip("/")):] if path != fs_base else url_base
        if self.protocol in ("file", "local"):
            return path
        return f"{self.protocol}://{path.lstrip('/')}"

    def join(self, a, *names):
        out = str(a)
        for n in names:
            out = f"{out.rstrip('/')}/{str(n).lstrip('/')}" if out else str(n)
        return out

    # -- requests -------------------------------------------------------------------------------
    def _scrub(self, text):
        for s in self._secrets:
            text = text.replace(s, "***")
        return text

    def _error(self, exc, path, what):
        """The StorageError for a failed request (None when it is worth retrying)."""
        url = self.url(path)
        text = self._scrub(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, StorageError):
            return exc
        if any(w in text for w in _CHANGED_WORDS):
            err = ObjectChangedError(f"changed while being read: replaced by another version ({text})", file=url)
            err.__cause__ = None
            return err
        if isinstance(exc, FileNotFoundError) or (not isinstance(exc, PermissionError)
                                                  and any(w in text for w in ("NoSuchBucket", "NoSuchKey"))):
            err = StorageNotFoundError(f"cannot {what}: not found ({text})", file=url)
        elif isinstance(exc, PermissionError) or any(w in text for w in _PERMISSION_WORDS[:6]):
            err = StoragePermissionError(f"cannot {what}: access denied ({text})", file=url)
        elif any(w in text for w in _RANGE_WORDS):
            err = _RangeNotSatisfiable(f"cannot {what}: range not satisfiable ({text})", file=url)
        else:
            return None
        err.__cause__ = None
        return err

    def _call(self, path, what, method, *args, **kwargs):
        """Run one request (the filesystem's ``method``) with the retry policy; counts it; maps errors."""
        policy = self.retry
        t0 = time.monotonic()
        delay = policy.base_delay
        last = None
        for attempt in range(max(1, policy.attempts)):
            self._count(requests=1)
            try:
                return self._run(method, args, kwargs, policy.timeout)
            except (KeyboardInterrupt, SystemExit, MemoryError, TypeError, NotImplementedError):
                raise
            except BaseException as exc:       # noqa: BLE001 - every backend has its own errors
                err = self._error(exc, path, what)
                if err is not None:
                    raise err from None
                last = exc
            if attempt + 1 >= policy.attempts or time.monotonic() - t0 + delay > policy.deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, policy.max_delay)
        text = self._scrub(f"{type(last).__name__}: {last}" if str(last) else
                           f"{type(last).__name__} (no answer within {policy.timeout:g} s)")
        raise StorageUnavailableError(
            f"cannot {what}: request failed {attempt + 1} time(s) in {time.monotonic() - t0:.1f} s, "
            f"last error {text}", file=self.url(path)) from None

    def _run(self, method, args, kwargs, timeout):
        """Call a filesystem method; for async filesystems through its event loop with a timeout."""
        fs = self.fs
        if method is _PINNED_RANGE:
            import fsspec.asyn
            return fsspec.asyn.sync(fs.loop, _s3_conditional_range, fs, *args, timeout=timeout or None)
        if method == "cat_file" and self._arrow is not None:
            return self._arrow_range(*args, **kwargs)
        if timeout and getattr(fs, "async_impl", False) and getattr(fs, "loop", None) is not None:
            afn = getattr(fs, "_" + method, None)
            if afn is not None and inspect.iscoroutinefunction(afn):
                import fsspec.asyn
                return fsspec.asyn.sync(fs.loop, afn, *args, timeout=timeout, **kwargs)
        return getattr(fs, method)(*args, **kwargs)

    def _arrow_range(self, path, start, end):
        with self._arrow.open_input_file(path) as f:
            return f.read_at(end - start, start)

    def list(self, path):
        path = str(path).rstrip("/") or str(path)
        try:
            self.fs.invalidate_cache(path)        # a listing now, not one cached by the filesystem
        except Exception:  # noqa: BLE001 - optional in fsspec implementations
            pass
        rows = self._call(path, "list", "ls", path, detail=True)
        out = []
        base = path.rstrip("/")
        for r in rows:
            name = str(r["name"]).rstrip("/")
            if name == base or name.lstrip("/") == base.lstrip("/"):
                if r.get("type") != "directory":     # ls of a file lists the file itself
                    raise StorageError("not a folder", file=self.url(path))
                continue
            is_dir = r.get("type") == "directory"
            out.append(Entry(name.rsplit("/", 1)[-1], name, 0 if is_dir else int(r.get("size") or 0), is_dir,
                             None if is_dir else version_of(r)))
        out.sort(key=lambda e: e.name)
        return out

    def size(self, path):
        try:
            self.fs.invalidate_cache(path)       # the size now, not a listing's
        except Exception:  # noqa: BLE001 - optional in fsspec implementations
            pass
        info = self._call(path, "get the size of", "info", path)
        if info.get("type") == "directory":
            raise StorageError("is a folder, not a file", file=self.url(path))
        return int(info["size"])

    def isdir(self, path):
        try:
            return bool(self._call(path, "look up", "isdir", path))
        except StorageNotFoundError:
            return False

    def exists(self, path):
        try:
            return bool(self._call(path, "look up", "exists", path))
        except StorageNotFoundError:
            return False

    def open(self, path, size=None, *, read_ahead=None, version=None):
        if size is None:
            size = self.size(path)
        return RemoteBlob(self, str(path), int(size),
                          self.read_ahead if read_ahead is None else int(read_ahead), self.cache_blocks,
                          self.prefetch, version=version)

    def fetch(self, path, start, stop, expected_size=None, version=None):
        """Bytes [start, stop) of an object in one request (retried); ObjectChangedError if fewer
        come back (the object is shorter than ``expected_size`` now), or if it is no longer the
        ``version`` listed (`Entry.version`). S3 answers a conditional read for that (``If-Match``
        on the ETag, or the version id), so a replaced object never gives bytes; on other stores
        the version is looked up again after the read (one more request), and a change raises
        before the bytes are used."""
        if stop <= start:
            return b""
        try:
            if version is not None and self._conditional(version):
                data = self._call(path, f"read bytes {start}..{stop} of", _PINNED_RANGE, path, start, stop, version)
            else:
                data = self._call(path, f"read bytes {start}..{stop} of", "cat_file", path, start=start, end=stop)
                if version is not None:
                    self._check_version(path, version, expected_size)
        except ObjectChangedError as exc:
            raise self._changed(path, expected_size) or exc from None
        except _RangeNotSatisfiable as exc:
            # a range beyond the end of the object now: it shrank since it was listed
            changed = self._changed(path, expected_size)
            if changed is not None:
                raise changed from None
            raise StorageError(exc.reason, file=exc.file) from None
        except StorageNotFoundError:
            if expected_size is not None:
                raise ObjectChangedError("changed while being read: the object is gone",
                                         file=self.url(path)) from None
            raise
        self._count(nbytes=len(data))
        if len(data) != stop - start:
            changed = self._changed(path, expected_size)
            raise changed or ObjectChangedError(
                f"changed size while being read: asked for bytes {start}..{stop}, got {len(data)} bytes",
                file=self.url(path))
        return data

    def _conditional(self, version):
        """Whether reads of this version can be made conditional (s3fs: If-Match / VersionId)."""
        return self.protocol in ("s3", "s3a") and hasattr(self.fs, "_call_s3") and \
            version.split("=", 1)[0] in ("ETag", "VersionId")

    def _check_version(self, path, version, expected_size):
        try:
            self.fs.invalidate_cache(path)
        except Exception:  # noqa: BLE001 - optional in fsspec implementations
            pass
        now = version_of(self._call(path, "look up", "info", path))
        if now is not None and now.split("=", 1)[0] == version.split("=", 1)[0] and now != version:
            raise ObjectChangedError(f"changed while being read: replaced by another version ({version} when "
                                     f"listed, {now} now)", file=self.url(path))

    def _changed(self, path, expected_size):
        if expected_size is None:
            return None
        try:
            now = self.size(path)
        except StorageNotFoundError:
            return ObjectChangedError("changed while being read: the object is gone", file=self.url(path))
        except StorageError:
            return None
        if now != expected_size:
            return ObjectChangedError(f"changed size while being read: {now} bytes now, {expected_size} when "
                                      f"listed", file=self.url(path))
        return None

    def read_bytes(self, path, start=0, stop=None):
        if stop is None:
            stop = self.size(path)
        return self.fetch(str(path), int(start), int(stop))


class RemoteBlob(Blob):
    """Ranged reads of one remote object with read-ahead, a small block cache and prefetching.

    A read inside a cached block is a slice of it (no request). Otherwise one request fetches
    ``[start, max(stop, start + read_ahead))`` (clipped to the size) -- or, when ``start`` lies in
    a cached block, only what follows that block -- which becomes the newest cached block; the
    oldest of ``cache_blocks`` is dropped. Once two blocks in a row were
    fetched back to back (a sequential scan), the next ``prefetch`` blocks are fetched in the
    background while the caller works on the current one; a single seek never prefetches.
    """

    def __init__(self, storage, path, size, read_ahead=DEFAULT_READ_AHEAD, cache_blocks=DEFAULT_CACHE_BLOCKS,
                 prefetch=0, version=None):
        self.storage = storage
        self.path = path
        self.version = version        # the version listed: every range comes from it (FsspecStorage.fetch)
        self.url = storage.url(path)
        self.size = size
        self.read_ahead = max(1, read_ahead)
        self.cache_blocks = max(0, cache_blocks)
        self.prefetch = max(0, prefetch)
        self.requests = 0
        self.bytes_fetched = 0
        self._blocks = collections.OrderedDict()   # start -> bytes
        self._pending = collections.OrderedDict()  # start -> (end, Future) of background fetches
        self._seq_end = None                        # end of the last block fetched
        self._lock = threading.Lock()
        self.closed = False

    def _keep(self, start, data):
        if self.cache_blocks and len(data) <= max(_MAX_CACHED_BLOCK, self.read_ahead):
            self._blocks[start] = data
            while len(self._blocks) > self.cache_blocks:
                self._blocks.popitem(last=False)

    def _fetched(self, start, data):
        self.requests += 1
        self.bytes_fetched += len(data)
        sequential = self._seq_end == start
        self._seq_end = start + len(data)
        if sequential and self.prefetch:
            self._schedule(self._seq_end)

    def will_need(self, start, stop=None):
        start, stop = self._check_range(start, stop)
        if stop == start or self.closed:
            return
        with self._lock:
            for bstart, block in self._blocks.items():
                if bstart <= start and stop <= bstart + len(block):
                    return
            for pstart, (pend, _fut) in self._pending.items():
                if pstart <= start and stop <= pend:
                    return
            end = min(self.size, max(stop, start + self.read_ahead))
            self._pending[start] = (end, self.storage._executor().submit(self._fetch, start, end))

    def _fetch(self, start, stop):
        return self.storage.fetch(self.path, start, stop, self.size, self.version)

    def _schedule(self, pos):
        for _ in range(self.prefetch):
            if pos >= self.size:
                return
            end = min(self.size, pos + self.read_ahead)
            if pos not in self._pending and pos not in self._blocks:
                self._pending[pos] = (end, self.storage._executor().submit(self._fetch, pos, end))
            pos = end

    def read(self, start, stop=None):
        start, stop = self._check_range(start, stop)
        if stop == start:
            return memoryview(b"")
        if self.closed:
            raise ValueError(f"read from a closed blob ({self.url})")
        with self._lock:
            for bstart, block in reversed(self._blocks.items()):
                if bstart <= start and stop <= bstart + len(block):
                    self._blocks.move_to_end(bstart)
                    return memoryview(block)[start - bstart:stop - bstart]
            for pstart, (pend, fut) in list(self._pending.items()):
                if pstart <= start and stop <= pend:
                    del self._pending[pstart]
                    data = fut.result()           # a failed background fetch raises here
                    self._fetched(pstart, data)
                    self._keep(pstart, data)
                    return memoryview(data)[start - pstart:stop - pstart]
            for bstart, block in reversed(self._blocks.items()):
                bend = bstart + len(block)
                if bstart <= start < bend < stop:
                    # the range begins in a cached block: fetch only what follows it
                    tail = self._read_from(bend, stop)
                    return memoryview(bytes(memoryview(block)[start - bstart:]) + bytes(tail))
            return self._read_from(start, stop)

    def _read_from(self, start, stop):
        """Fetch [start, max(stop, start + read_ahead)) (or take it from a background fetch), keep
        it as a block, return [start, stop). Called with the lock held."""
        for pstart, (pend, fut) in list(self._pending.items()):
            if pstart == start and stop <= pend:
                del self._pending[pstart]
                data = fut.result()
                self._fetched(pstart, data)
                self._keep(pstart, data)
                return memoryview(data)[:stop - start]
        end = min(self.size, max(stop, start + self.read_ahead))
        data = self._fetch(start, end)
        self._fetched(start, data)
        self._keep(start, data)
        return memoryview(data)[:stop - start]

    def release(self, done, upto):
        with self._lock:
            for bstart in [b for b, blk in self._blocks.items() if b + len(blk) <= upto]:
                del self._blocks[bstart]
        return upto

    def close(self):
        self.closed = True
        self._blocks.clear()
        for _end, fut in self._pending.values():
            fut.cancel()
        self._pending.clear()


# ------------------------------------------------------------------------------------------------

def _wrap_filesystem(filesystem):
    try:
        import pyarrow.fs as pafs
    except ImportError:      # pragma: no cover - pyarrow optional
        pafs = None
    if pafs is not None and isinstance(filesystem, pafs.FileSystem):
        if isinstance(filesystem, pafs.LocalFileSystem):
            return None
        from fsspec.implementations.arrow import ArrowFSWrapper
        proto = {"S3FileSystem": "s3", "GcsFileSystem": "gs", "HadoopFileSystem": "hdfs",
                 "AzureFileSystem": "abfs"}.get(type(filesystem).__name__, filesystem.type_name)
        return ArrowFSWrapper(filesystem), proto
    proto = filesystem.protocol
    proto = proto[0] if isinstance(proto, (tuple, list)) else proto
    if proto in ("file", "local"):
        return None
    return filesystem, proto


def open_storage(path_or_url, storage_options=None, filesystem=None, *, read_ahead=DEFAULT_READ_AHEAD,
                 cache_blocks=DEFAULT_CACHE_BLOCKS, prefetch=DEFAULT_PREFETCH, retry=None):
    """``(storage, path)`` for a plain path, a ``file://`` URL or any fsspec URL.

    ``storage_options`` go to the fsspec filesystem (as in pandas: ``key``, ``secret``,
    ``endpoint_url``, ``anon`` ...; ignored for local paths, so one set can serve a list of
    roots mixing local and remote ones); ``filesystem`` is an fsspec filesystem or a
    ``pyarrow.fs.FileSystem`` to use instead (then the URL's protocol, if any, is stripped).
    Local paths give :class:`LocalStorage`; everything else :class:`FsspecStorage`.
    """
    path = os.fspath(path_or_url)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if filesystem is not None:
        if storage_options:
            raise ValueError("give storage_options or filesystem, not both")
        wrapped = _wrap_filesystem(filesystem)
        if wrapped is None:
            return LocalStorage(), _strip_file_scheme(path)
        fs, proto = wrapped
        if is_url(path):
            path = fs._strip_protocol(path) if hasattr(fs, "_strip_protocol") else _URL.sub("", path)
            if isinstance(path, str) and is_url(path):
                path = _URL.sub("", path)
        return FsspecStorage(fs, protocol=proto, read_ahead=read_ahead, cache_blocks=cache_blocks,
                             prefetch=prefetch, retry=retry), path
    if not is_url(path):      # storage_options are for stores: ignored here, so one set serves mixed roots
        return LocalStorage(), path
    scheme = _URL.match(path).group(1).lower()
    if scheme in ("file", "local"):
        return LocalStorage(), _strip_file_scheme(path)
    try:
        import fsspec.core
    except ImportError:
        raise KafkafmtError(f"reading {scheme}:// URLs needs fsspec and the store's package "
                            f"(pip install \"kafkafmt[{_EXTRA.get(scheme, scheme)}]\")", file=_safe_url(path)) from None
    try:
        fs, fspath = fsspec.core.url_to_fs(path, **(storage_options or {}))
    except ImportError as exc:
        raise KafkafmtError(f"reading {scheme}:// URLs needs an extra package: pip install "
                            f"\"kafkafmt[{_EXTRA.get(scheme, scheme)}]\" ({exc})", file=_safe_url(path)) from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise KafkafmtError(f"unknown storage protocol {scheme!r}", file=_safe_url(path)) from None
        raise
    storage = FsspecStorage(fs, protocol=scheme, read_ahead=read_ahead, cache_blocks=cache_blocks,
                            prefetch=prefetch, retry=retry, secrets=_secrets_of(storage_options))
    storage._url_base = (str(fspath), _safe_url(path.split("?", 1)[0]))
    return storage, fspath


_EXTRA = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "azure", "abfss": "azure", "az": "azure",
          "adl": "azure", "hdfs": "hdfs", "webhdfs": "hdfs"}


def _strip_file_scheme(path):
    if isinstance(path, str) and path.lower().startswith("file://"):
        rest = path[7:]
        if rest.startswith("localhost/"):
            rest = rest[9:]
        return rest
    return path
