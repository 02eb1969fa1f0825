"""Object stores through fsspec (``s3://``, ``gs://``, ``abfs://``/``az://``, ``hdfs://``, ``memory://`` ...) or a
``pyarrow.fs.FileSystem`` (wrapped): `FsspecStorage`. Blobs issue ranged requests of at least ``read_ahead`` bytes
(8 MiB by default) and keep the last few blocks, so a run of small sequential reads costs one request per block;
failing requests are retried with exponential backoff, bounded in count and time, then raise
:class:`~kafkafmt.errors.StorageUnavailableError`. Errors name the URL, never the options.
"""
from __future__ import annotations

import collections
import inspect
import re
import threading
import time

from kafkafmt.errors import (ObjectChangedError, StorageError, StorageNotFoundError, StoragePermissionError,
                             StorageUnavailableError)
from kafkafmt.storage._base import (DEFAULT_CACHE_BLOCKS, DEFAULT_PREFETCH, DEFAULT_READ_AHEAD, Blob, Entry,
                                    RetryPolicy, Storage, is_url, safe_url, version_of)

__all__ = ["FsspecStorage", "RemoteBlob", "secrets_of"]

_MAX_CACHED_BLOCK = 64 << 20      # larger single reads are returned, not cached

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


def secrets_of(options) -> list:
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
            return safe_url(path)
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
