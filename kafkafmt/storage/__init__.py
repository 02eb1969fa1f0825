"""The one storage interface every byte goes through: local files (mmap) and fsspec object stores (ranged
reads pinned to the version listed); `statistics()` counts what every storage fetched.
"""
from __future__ import annotations

from kafkafmt.storage._base import (version_of, Entry, StorageStatistics, statistics, Storage, Blob, LocalStorage,
                                       LocalBlob, FsspecStorage, RemoteBlob, open_storage, is_url, DEFAULT_READ_AHEAD,
                                       DEFAULT_CACHE_BLOCKS, DEFAULT_PREFETCH, RetryPolicy)

__all__ = ["version_of", "Entry", "StorageStatistics", "statistics", "Storage", "Blob", "LocalStorage",
           "LocalBlob", "FsspecStorage", "RemoteBlob", "open_storage", "is_url", "DEFAULT_READ_AHEAD",
           "DEFAULT_CACHE_BLOCKS", "DEFAULT_PREFETCH", "RetryPolicy"]
