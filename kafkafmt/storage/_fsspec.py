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
from kafkafmt.storage._objects import DEFAULT_OBJECT_CACHE, ObjectCache

__all__ = ["FsspecStorage", "RemoteBlob", "secrets_of", "LIST_PAGE_KEYS"]

_MAX_CACHED_BLOCK = 64 << 20      # larger single reads are returned, not cached

_PERMISSION_WORDS = ("AccessDenied", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                     "AuthorizationPermissionMismatch", "AuthenticationFailed", "403")
_NOT_FOUND_WORDS = ("NoSuchBucket", "NoSuchKey", "NotFound", "404")
_RANGE_WORDS = ("InvalidRange", "not satisfiable", "416")


#: a read's marker for `FsspecStorage._run`: one GET of an S3 object, of a range, of one version (`_s3_get`)
_S3_GET = object()
#: a request's marker for `FsspecStorage._run`: one page of an S3 listing without delimiter (`FsspecStorage.list_tree`)
_S3_PAGE = object()
#: keys asked for per page of an S3 listing (S3's most)
LIST_PAGE_KEYS = 1000


async def _s3_get(fs, path, start=None, stop=None, version=None):
    """Bytes [start, stop) of an S3 object (all of it without a range) in one GET -- only if it is still
    ``version`` (HTTP 412 otherwise): If-Match on the ETag, or the version id itself -- the request s3fs
    makes for its own files (its ``cat_file`` of a whole object looks its size up first)."""
    bucket, key, _ = fs.split_path(path)
    kwargs = {} if start is None else {"Range": f"bytes={start}-{stop - 1}"}
    if version is not None:
        field, value = version.split("=", 1)
        kwargs.update({"IfMatch": value} if field == "ETag" else {"VersionId": value})
    resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, **kwargs)
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
    ``retry``: a :class:`RetryPolicy`; ``object_cache``: bytes of whole small objects (no larger than
    ``read_ahead``) kept once read or fetched ahead (`will_read`), 0 for none.
    """

    is_local = False

    def __init__(self, fs, *, protocol=None, read_ahead=DEFAULT_READ_AHEAD,
                 cache_blocks=DEFAULT_CACHE_BLOCKS, prefetch=DEFAULT_PREFETCH, retry=None, secrets=(),
                 object_cache=DEFAULT_OBJECT_CACHE):
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
        self.objects = ObjectCache(self._fetch_whole, self._object_key, object_cache)

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
        state["objects"] = self.objects.budget        # (kept objects stay here)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self.objects = ObjectCache(self._fetch_whole, self._object_key, state["objects"])

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
        if method is _S3_GET:
            import fsspec.asyn
            return fsspec.asyn.sync(fs.loop, _s3_get, fs, *args, timeout=timeout or None)
        if method is _S3_PAGE:
            import fsspec.asyn
            return fsspec.asyn.sync(fs.loop, fs._call_s3, *args, timeout=timeout or None, **kwargs)
        if method == "cat_file" and self._arrow is not None:
            return self._arrow_range(*args, **kwargs)
        if timeout and getattr(fs, "async_impl", False) and getattr(fs, "loop", None) is not None:
            afn = getattr(fs, "_" + method, None)
            if afn is not None and inspect.iscoroutinefunction(afn):
                import fsspec.asyn
                return fsspec.asyn.sync(fs.loop, afn, *args, timeout=timeout, **kwargs)
        return getattr(fs, method)(*args, **kwargs)

    def _arrow_range(self, path, start=None, end=None):
        with self._arrow.open_input_file(path) as f:
            return f.read() if start is None else f.read_at(end - start, start)

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

    def list_tree(self, path):
        """Every folder at or below ``path`` with its entries (as `list` gives them), from one recursive
        listing: S3's keys under the prefix, a page of up to 1,000 a request; other stores through their
        filesystem's ``find`` (one request counted). None when nothing is under ``path`` (a file, a missing
        folder: `list` says which)."""
        base = str(path).rstrip("/")
        if self._s3:
            rows = self._s3_rows(path, base)
        else:
            try:
                self.fs.invalidate_cache(base)
            except Exception:  # noqa: BLE001 - optional in fsspec implementations
                pass
            rows = self._call(path, "list", "find", base, withdirs=True, detail=True).values()
        tree = {}
        head = base.strip("/") + "/" if base.strip("/") else ""
        for r in rows:
            name = str(r["name"]).lstrip("/")
            if not name.startswith(head):
                continue
            rel = name[len(head):]
            is_dir = r.get("type") == "directory" or rel.endswith("/")     # (a folder marker: key/)
            folder, _, leaf = rel.strip("/").rpartition("/")
            if not leaf:
                continue
            parent = f"{base}/{folder}" if folder else base
            entries = tree.get(parent)
            if entries is None:
                entries = self._tree_folder(tree, base, parent)
            if is_dir:
                self._tree_folder(tree, base, f"{parent}/{leaf}")
            else:
                entries[leaf] = Entry(leaf, f"{parent}/{leaf}", int(r.get("size") or 0), False, version_of(r))
        if not tree:
            return None
        return {folder: sorted(entries.values(), key=lambda e: e.name) for folder, entries in tree.items()}

    @staticmethod
    def _tree_folder(tree, base, folder):
        """The entries of ``folder`` in a tree being built (made, with the folders leading to it: S3 has none
        of its own)."""
        entries = tree.setdefault(folder, {})
        while folder != base and len(folder) > len(base):
            parent, _, name = folder.rpartition("/")
            above = tree.get(parent)
            known = above is not None
            if not known:
                above = tree[parent] = {}
            above.setdefault(name, Entry(name, folder, 0, True, None))
            if known:
                break
            folder = parent
        return entries

    def _s3_rows(self, path, base):
        """The objects under an S3 prefix as s3fs's listings give them, page by page (each page one request,
        retried on its own)."""
        bucket, key, _ = self.fs.split_path(base)
        versioned = getattr(self.fs, "version_aware", False)
        method, contents = ("list_object_versions", "Versions") if versioned else ("list_objects_v2", "Contents")
        kwargs = {"Bucket": bucket, "Prefix": f"{key}/" if key else "", "MaxKeys": LIST_PAGE_KEYS}
        rows = []
        while True:
            page = self._call(path, "list", _S3_PAGE, method, **kwargs)
            for c in page.get(contents, []):
                if versioned and not c.get("IsLatest"):
                    continue
                c["type"] = "file"
                self.fs._fill_info(c, bucket)       # (name: bucket/key, size)
                rows.append(c)
            if not page.get("IsTruncated"):
                return rows
            if versioned:
                kwargs.update(KeyMarker=page.get("NextKeyMarker", ""),
                              VersionIdMarker=page.get("NextVersionIdMarker", ""))
            else:
                kwargs["ContinuationToken"] = page["NextContinuationToken"]

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
                data = self._call(path, f"read bytes {start}..{stop} of", _S3_GET, path, start, stop, version)
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

    @property
    def _s3(self):
        """Whether requests go to S3 through s3fs's client (conditional reads, pages of a listing)."""
        return self.protocol in ("s3", "s3a") and self._arrow is None and hasattr(self.fs, "_call_s3")

    def _conditional(self, version):
        """Whether reads of this version can be made conditional (s3fs: If-Match / VersionId)."""
        return self._s3 and version.split("=", 1)[0] in ("ETag", "VersionId")

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
        if stop is None and not start:          # the whole object: one request, no size lookup
            data = self._call(path, "read", *((_S3_GET, str(path)) if self._s3 else ("cat_file", str(path))))
            self._count(nbytes=len(data))
            return data
        if stop is None:
            stop = self.size(path)
        return self.fetch(str(path), int(start), int(stop))

    def read_listed(self, path, size, version=None):
        if version is None or size is None or size > self.read_ahead:
            return self.read_bytes(path)
        try:
            return self.objects.get(str(path), int(size), version)[0]
        except ObjectChangedError:
            return self.read_bytes(path)     # replaced since listed: as it is now

    def read_into(self, path, out, *, version=None):
        n = len(out)
        data, _ = self._whole(str(path), n, version)
        out[:len(data)] = data
        return len(data)

    def _whole(self, path, size, version=None):
        """(the ``size`` bytes of an object pinned to ``version``, whether a request was made for them): from
        the object cache (and kept there) when small and versioned, else one request."""
        if size <= self.read_ahead:
            return self.objects.get(path, size, version)
        return self._fetch_whole(path, size, version), True

    def will_read(self, items, count=None):
        self.objects.prefetch((str(p), s, v) for p, s, v in items if s is not None and s <= self.read_ahead)

    def _fetch_whole(self, path, size, version):
        return bytes(self.fetch(path, 0, size, size, version)) if size else b""

    def _object_key(self, path, version):
        """What names an object's content in the object cache: S3's ETag is a digest of the bytes (so two
        objects with one ETag hold the same bytes); any other version names one object's version."""
        if version is None:
            return None
        if version.startswith("ETag=") and self.protocol in ("s3", "s3a"):
            return version
        return (path, version)


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
        self._counted = threading.Lock()
        self.closed = False

    def _keep(self, start, data):
        if self.cache_blocks and len(data) <= max(_MAX_CACHED_BLOCK, self.read_ahead):
            self._blocks[start] = data
            while len(self._blocks) > self.cache_blocks:
                self._blocks.popitem(last=False)

    def _fetched(self, start, data):
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
        if start == 0 and stop == self.size:      # the whole object: kept by the storage, fetched once
            data, fetched = self.storage._whole(self.path, self.size, self.version)
        else:
            data, fetched = self.storage.fetch(self.path, start, stop, self.size, self.version), True
        if fetched:
            with self._counted:
                self.requests += 1
                self.bytes_fetched += len(data)
        return data

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
