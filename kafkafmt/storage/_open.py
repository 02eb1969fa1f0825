"""``open_storage(path_or_url, storage_options=None, filesystem=None)``: ``(storage, path)`` for a plain path, a
``file://`` URL or any fsspec URL (or a given fsspec / pyarrow filesystem).
"""
from __future__ import annotations

import os

from kafkafmt.errors import KafkafmtError
from kafkafmt.storage._base import (DEFAULT_CACHE_BLOCKS, DEFAULT_PREFETCH, DEFAULT_READ_AHEAD, URL_SCHEME, is_url,
                                    safe_url)
from kafkafmt.storage._fsspec import FsspecStorage, secrets_of
from kafkafmt.storage._objects import DEFAULT_OBJECT_CACHE
from kafkafmt.storage._local import LocalStorage

__all__ = ["open_storage"]

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
                 cache_blocks=DEFAULT_CACHE_BLOCKS, prefetch=DEFAULT_PREFETCH, retry=None,
                 object_cache=DEFAULT_OBJECT_CACHE):
    """``(storage, path)`` for a plain path, a ``file://`` URL or any fsspec URL.

    ``storage_options`` go to the fsspec filesystem (as in pandas: ``key``, ``secret``,
    ``endpoint_url``, ``anon`` ...; ignored for local paths, so one set can serve a list of
    roots mixing local and remote ones); ``filesystem`` is an fsspec filesystem or a
    ``pyarrow.fs.FileSystem`` to use instead (then the URL's protocol, if any, is stripped).
    Local paths give :class:`LocalStorage`; everything else :class:`FsspecStorage` (``read_ahead``,
    ``cache_blocks``, ``prefetch``, ``retry``, ``object_cache``: see it).
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
            path = fs._strip_protocol(path) if hasattr(fs, "_strip_protocol") else URL_SCHEME.sub("", path)
            if isinstance(path, str) and is_url(path):
                path = URL_SCHEME.sub("", path)
        return FsspecStorage(fs, protocol=proto, read_ahead=read_ahead, cache_blocks=cache_blocks,
                             prefetch=prefetch, retry=retry, object_cache=object_cache), path
    if not is_url(path):      # storage_options are for stores: ignored here, so one set serves mixed roots
        return LocalStorage(), path
    scheme = URL_SCHEME.match(path).group(1).lower()
    if scheme in ("file", "local"):
        return LocalStorage(), _strip_file_scheme(path)
    try:
        import fsspec.core
    except ImportError:
        raise KafkafmtError(f"reading {scheme}:// URLs needs fsspec and the store's package "
                            f"(pip install \"kafkafmt[{_EXTRA.get(scheme, scheme)}]\")", file=safe_url(path)) from None
    try:
        fs, fspath = fsspec.core.url_to_fs(path, **(storage_options or {}))
    except ImportError as exc:
        raise KafkafmtError(f"reading {scheme}:// URLs needs an extra package: pip install "
                            f"\"kafkafmt[{_EXTRA.get(scheme, scheme)}]\" ({exc})", file=safe_url(path)) from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise KafkafmtError(f"unknown storage protocol {scheme!r}", file=safe_url(path)) from None
        raise
    storage = FsspecStorage(fs, protocol=scheme, read_ahead=read_ahead, cache_blocks=cache_blocks,
                            prefetch=prefetch, retry=retry, secrets=secrets_of(storage_options),
                            object_cache=object_cache)
    storage._url_base = (str(fspath), safe_url(path.split("?", 1)[0]))
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
