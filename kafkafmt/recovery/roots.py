"""Where a recovery works: each path given resolved to a log dir (its partition folders and ``-delete``
folders), a partition folder, or one segment."""
from __future__ import annotations

import os
from dataclasses import dataclass

from kafkafmt.errors import KafkafmtError, NotALogDirError, PathNotFoundError
from kafkafmt.log import (LOG_START_CHECKPOINT, PARTITION_DIR, RECOVERY_POINT_CHECKPOINT, find_log_dirs, folder_kind,
                          is_leftover_dir, segment_base)

__all__ = ["Root", "resolve_roots"]


@dataclass
class Root:
    """A path given: a log dir (its partition folders), a partition folder, or one segment."""
    log_dir: object            # the log dir (checkpoints, lock, backup), or None when there is none
    partitions: list           # partition folders to repair
    delete_dirs: list          # -delete folders to remove
    only_log: object = None    # a single segment's .log given


def _is_log_dir(path):
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if "meta.properties" in names or RECOVERY_POINT_CHECKPOINT in names or LOG_START_CHECKPOINT in names:
        return True
    try:
        return folder_kind(path) == "log_dir"
    except KafkafmtError:
        return False


def _is_partition(path):
    """Whether a folder named as a partition is one, by discovery's rule (`folder_kind`): it holds a partition
    folder's own files. A folder only named so (a broker's ``broker-1`` holding its ``kafka-logs``, an empty
    ``orders-0``) is walked for log dirs, as every other command walks it."""
    try:
        return folder_kind(path) == "partition"
    except KafkafmtError:
        return False


def _partition_dirs(log_dir):
    """(partition folders incl. -future/-stray ones, -delete folders) of a log dir."""
    parts, deletes = [], []
    with os.scandir(log_dir) as entries:
        folders = [e.name for e in entries if not e.name.startswith(".") and e.is_dir()]
    folders.sort()
    for name in folders:
        full = os.path.join(log_dir, name)
        if is_leftover_dir(name):
            (deletes if name.endswith("-delete") else parts).append(full)
        elif PARTITION_DIR.match(name):
            parts.append(full)
    return parts, deletes


def resolve_roots(path, log_dirs=None):
    text = os.fspath(path)
    if "://" in text:
        raise NotALogDirError(f"{text}: recover repairs local log dirs only, not object storage (copy the data to a "
                              f"local disk, recover it there, and upload the result)", file=text)
    path = os.path.abspath(text)
    if not os.path.exists(path):
        raise PathNotFoundError(f"no such file or directory: {path}", file=path)
    if os.path.isfile(path):
        if segment_base(path) is None:
            raise NotALogDirError(f"{path}: not a log dir, a partition folder or a <base offset>.log segment",
                                  file=path)
        folder = os.path.dirname(path)
        parent = os.path.dirname(folder)
        return [Root(parent if _is_log_dir(parent) else None, [folder], [], only_log=path)]
    if is_leftover_dir(path) or (PARTITION_DIR.match(os.path.basename(path)) and _is_partition(path)):
        names = os.listdir(path)
        if not any(os.path.isdir(os.path.join(path, n)) and PARTITION_DIR.match(n) for n in names):
            parent = os.path.dirname(path)
            return [Root(parent if _is_log_dir(parent) else None, [path], [])]
    if not _is_log_dir(path):
        # a folder holding log dirs (kafka-logs-1, -2, ...): those found below it already, else a walk
        found = sorted(d for d in log_dirs or () if os.path.abspath(d).startswith(path + os.sep)) or find_log_dirs(path)
        if not found:
            raise NotALogDirError(f"not a log dir or partition folder: {path}", file=path)
        return [r for d in found for r in resolve_roots(d, log_dirs)]
    parts, deletes = _partition_dirs(path)
    return [Root(path, parts, deletes)]
