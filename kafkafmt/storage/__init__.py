"""The one storage interface every byte goes through: local files (mmap) and fsspec object stores (ranged
reads pinned to the version listed); `statistics()` counts what every storage fetched.

Modules: `_base` (the `Storage` / `Blob` interface, listings, versions, retries, statistics), `_local` (local
files), `_fsspec` (object stores), `_objects` (whole small objects of a store kept and fetched ahead), `_open`
(`open_storage`: a path or URL to a storage).
"""
from __future__ import annotations

from kafkafmt.storage._base import (DEFAULT_CACHE_BLOCKS, DEFAULT_PREFETCH, DEFAULT_READ_AHEAD, Blob, Entry,
                                    FolderListing, RetryPolicy, Storage, StorageStatistics, is_url, listed_file_names,
                                    listed_files, listed_size, statistics, version_of, will_read_listed)
from kafkafmt.storage._fsspec import FsspecStorage, RemoteBlob
from kafkafmt.storage._local import LocalBlob, LocalStorage
from kafkafmt.storage._open import open_storage

__all__ = ["version_of", "Entry", "FolderListing", "listed_file_names", "listed_files", "listed_size",
           "will_read_listed", "StorageStatistics", "statistics", "Storage", "Blob", "LocalStorage", "LocalBlob",
           "FsspecStorage", "RemoteBlob", "open_storage", "is_url", "DEFAULT_READ_AHEAD", "DEFAULT_CACHE_BLOCKS",
           "DEFAULT_PREFETCH", "RetryPolicy"]
