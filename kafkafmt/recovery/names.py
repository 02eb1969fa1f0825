"""The file names a recovery plans by: its own temporary files, a segment's index files, and the offset a
file's name starts with (read once per name: names repeat from folder to folder)."""
from __future__ import annotations

import functools

from kafkafmt.log import SIDE_FILE_SUFFIXES, segment_base, sidefiles

__all__ = ["TEMP_SUFFIX", "INDEX_SUFFIXES", "SNAPSHOT_DELETED", "name_offset", "log_base"]

#: name suffix of the temporary files a recovery writes before renaming them into place
TEMP_SUFFIX = ".kafkafmt-tmp"
#: a segment's index files, beside its ``.log``
INDEX_SUFFIXES = SIDE_FILE_SUFFIXES
#: KRaft snapshots marked for deletion: handled by KafkaMetadataLog, not by a recovery
SNAPSHOT_DELETED = ".checkpoint.deleted"


@functools.lru_cache(maxsize=4096)
def name_offset(name):
    """The offset a file's name starts with, or None (names repeat from folder to folder: kept)."""
    try:
        return sidefiles.offset_from_file_name(name)
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def log_base(name):
    """`segment_base` of a file's name (kept, as `name_offset`)."""
    return segment_base(name)
