"""Kafka's names for what a log dir holds -- every file and folder naming rule, in one place.

``<log.dir>/<topic>-<partition>/<20-digit base offset>.log`` plus side files (``.index``,
``.timeindex``, ``.txnindex``, ``.snapshot``), ``partition.metadata`` and ``leader-epoch-checkpoint``;
broker leftovers (``.deleted``/``.cleaned``/``.swap`` files, ``-delete``/``-future``/``-stray``
folders). Names only: nothing here touches a file.
"""
from __future__ import annotations

import os
import re

from kafkafmt.log import sidefiles

__all__ = ["SEGMENT_DIGITS", "LOG_SUFFIX", "SNAPSHOT_SUFFIX", "SWAP_SUFFIX", "DELETED_SUFFIX", "CLEANED_SUFFIX",
           "SIDE_FILE_SUFFIXES", "INDEX_SUFFIX", "TIMEINDEX_SUFFIX", "TXNINDEX_SUFFIX", "PARTITION_DIR", "SEGMENT_LOG",
           "LEFTOVER_SUFFIXES", "PARTITION_METADATA", "LEADER_EPOCH_CHECKPOINT", "PARTITION_FILES",
           "SIDE_FILE_KINDS", "segment_file_name", "segment_base",
           "log_name_of", "partition_of_name", "is_leftover_file", "is_leftover_dir", "is_leftover_segment_file",
           "is_segment_file", "holds_segment_files", "file_kind", "listed_folder", "LEFTOVER_FOLDER"]
#: a partition folder: ``<topic>-<partition>`` (topic names may hold dashes and dots)
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
#: the digits of a segment file's base offset (zero-padded)
SEGMENT_DIGITS = 20
#: a segment's log file's suffix
LOG_SUFFIX = ".log"
#: a segment's log file
SEGMENT_LOG = re.compile(rf"^(?P<base>\d{{{SEGMENT_DIGITS}}}){re.escape(LOG_SUFFIX)}$")
#: a producer state snapshot's suffix (``<offset>.snapshot``)
SNAPSHOT_SUFFIX = ".snapshot"
#: the suffix of a file the broker is swapping in (a cleaned or split segment's new files)
SWAP_SUFFIX = ".swap"
#: the suffixes the broker appends to files it is deleting or cleaning
DELETED_SUFFIX, CLEANED_SUFFIX = ".deleted", ".cleaned"
#: suffixes the broker appends to files it is deleting, cleaning or swapping in
LEFTOVER_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
#: a segment's side files, by the suffix of their names (``<base>.index`` ...)
SIDE_FILE_KINDS = ("index", "timeindex", "txnindex")
#: the suffixes of a segment's side files' names: its offset index, time index and transaction index
SIDE_FILE_SUFFIXES = INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX = tuple("." + k for k in SIDE_FILE_KINDS)
#: the suffixes of a segment's files (its log, side files and producer snapshot), and of a leftover's, as patterns
_FILE_SUFFIXES = "|".join(re.escape(k) for k in (LOG_SUFFIX.lstrip("."), *SIDE_FILE_KINDS, SNAPSHOT_SUFFIX.lstrip(".")))
_LEFTOVER_ENDS = "|".join(re.escape(k.lstrip(".")) for k in LEFTOVER_SUFFIXES)
#: any file of a segment: ``<base>.<suffix>``
_SEGMENT_FILE = re.compile(rf"^(?P<base>\d{{{SEGMENT_DIGITS}}})\.({_FILE_SUFFIXES})$")
_LEFTOVER_FILE = re.compile(rf"^\d{{{SEGMENT_DIGITS}}}\.({_FILE_SUFFIXES})\.({_LEFTOVER_ENDS})$|"
                            rf"^\d{{{SEGMENT_DIGITS}}}\.({_LEFTOVER_ENDS})$")
#: partition folders being deleted (``<tp>.<uuid>-delete``), moved (``-future``) or left stray
_LEFTOVER_DIR = re.compile(r".*-(delete|future|stray)$")
#: the file naming a partition folder's topic id (Kafka's PartitionMetadataFile)
PARTITION_METADATA = "partition.metadata"
#: the file of a partition's leader epochs and the offsets each starts at (Kafka's LeaderEpochCheckpointFile)
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
#: files a broker keeps inside a partition folder besides segments
PARTITION_FILES = (PARTITION_METADATA, LEADER_EPOCH_CHECKPOINT)

def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for (42, ".log")."""
    return f"{base_offset:0{SEGMENT_DIGITS}d}{suffix}"


def log_name_of(path):
    """The ``.log`` file name of the segment a file belongs to (``…42.index`` -> ``…42.log``), by
    Kafka's rule for a segment file's base offset (the digits before the first ``.``); None when
    the name has none."""
    try:
        return segment_file_name(sidefiles.offset_from_file_name(path), LOG_SUFFIX)
    except ValueError:
        return None


def segment_base(path):
    """Base offset of a ``<20 digits>.log`` file, else None."""
    m = SEGMENT_LOG.match(os.path.basename(os.fspath(path)))
    return int(m.group("base")) if m else None


def partition_of_name(name):
    """(topic, partition) for a folder name ``<topic>-<partition>``; None otherwise and for the
    broker's leftover folders."""
    if not isinstance(name, str) or os.sep in name or (os.altsep and os.altsep in name) or name in (".", ".."):
        name = os.path.basename(os.path.normpath(os.fspath(name)))    # (a listing's names are names already)
    m = PARTITION_DIR.match(name)
    if not m or _LEFTOVER_DIR.match(name):
        return None
    return m.group("topic"), int(m.group("partition"))


#: what `listed_folder` says of a broker's leftover folder
LEFTOVER_FOLDER = "leftover"


def listed_folder(name):
    """What a folder of a log dir is by its name as listed (a name, not a path): (topic, partition) for a
    partition folder, `LEFTOVER_FOLDER` for a broker's leftover one (`is_leftover_dir`), else None -- what
    `partition_of_name` and `is_leftover_dir` tell of its path, without working the path out (a cluster's
    discovery asks of every folder)."""
    if _LEFTOVER_DIR.match(name) is not None:
        return LEFTOVER_FOLDER
    m = PARTITION_DIR.match(name)
    return None if m is None else (m.group("topic"), int(m.group("partition")))


def is_leftover_file(path) -> bool:
    """A file the broker is deleting, cleaning or swapping in (``.deleted``/``.cleaned``/``.swap``)."""
    return os.path.basename(os.fspath(path)).endswith(LEFTOVER_SUFFIXES)


def is_leftover_dir(path) -> bool:
    """A partition folder being deleted, moved to another log dir, or left stray."""
    return _LEFTOVER_DIR.match(os.path.basename(os.path.normpath(os.fspath(path)))) is not None


def file_kind(path):
    """What a file is, from its name (as Kafka decides by suffix): log, index, timeindex, txnindex,
    producer-snapshot, kraft-snapshot, leader-epoch, partition-metadata, offset-checkpoint,
    quorum-state, meta-properties; None when unknown. Broker leftovers are classified by the name
    before their leftover suffix."""
    name = os.path.basename(os.fspath(path))
    for suffix in LEFTOVER_SUFFIXES:
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    if name.endswith(LOG_SUFFIX) or name.endswith(LOG_SUFFIX + ".bin"):
        return "log"
    for suffix, kind in _KIND_OF_SUFFIX:
        if name.endswith(suffix):
            return kind
    if name == LEADER_EPOCH_CHECKPOINT:
        return "leader-epoch"
    if name == PARTITION_METADATA:
        return "partition-metadata"
    if name.endswith("-checkpoint"):
        return "offset-checkpoint"
    if name == "quorum-state":
        return "quorum-state"
    if name == "meta.properties":
        return "meta-properties"
    return None


#: the kinds `file_kind` tells by a name's suffix (after the log's)
_KIND_OF_SUFFIX = tuple(zip(SIDE_FILE_SUFFIXES, SIDE_FILE_KINDS)) + ((SNAPSHOT_SUFFIX, "producer-snapshot"),
                                                                   (".checkpoint", "kraft-snapshot"))


def is_segment_file(name) -> bool:
    """A segment's file: ``<20 digits>.log|index|timeindex|txnindex|snapshot``."""
    return _SEGMENT_FILE.match(name) is not None


def is_leftover_segment_file(name) -> bool:
    """A segment file the broker is deleting, cleaning or swapping in (``…42.log.deleted``, ``…42.swap``)."""
    return _LEFTOVER_FILE.match(name) is not None


def holds_segment_files(names) -> bool:
    """Do these file names include a partition folder's own files (segments, their leftovers,
    ``partition.metadata``, ``leader-epoch-checkpoint``)?"""
    return any(is_segment_file(n) or n in PARTITION_FILES or is_leftover_segment_file(n) for n in names)
