"""A broker's log on a storage: file and folder names, batch framing, byte ranges decoded, segments with
their side files, transactions, discovery (roots -> partitions), the planner (offsets and times -> byte ranges),
the task reader, tiered-storage layouts and the LogWriter.

Modules: `_names`, `_framing`, `_ranges`, `_segments`, `_transactions`, `_discovery`, `_planner`,
`_taskreader`, `_changes` (whether anything changed under some roots), `_copies` (several copies of a
partition), `_fill` (a stretch read from another copy), `_twins` (copies holding the same bytes), `_bulk` (many small partitions read at once), `_ahead` (what
a read will read whole, told to object stores), `_notes` (what a read skipped or fell back on), `_writer`,
`sidefiles`, `tiered` (the layouts).
"""
from __future__ import annotations

from kafkafmt.log._names import (SEGMENT_DIGITS, LOG_SUFFIX, SNAPSHOT_SUFFIX, SWAP_SUFFIX, DELETED_SUFFIX,
                                 CLEANED_SUFFIX, SIDE_FILE_SUFFIXES, INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX,
                                 PARTITION_DIR, SEGMENT_LOG, LEFTOVER_SUFFIXES, PARTITION_METADATA, PARTITION_FILES,
                                 LEADER_EPOCH_CHECKPOINT, SIDE_FILE_KINDS, segment_file_name,
                                 segment_base, log_name_of, partition_of_name, is_leftover_file, is_leftover_dir,
                                 is_leftover_segment_file, is_segment_file, holds_segment_files, file_kind)
from kafkafmt.log._notes import (ReportKind, ReportEntry, Note, place_text, damage_words)
from kafkafmt.log._framing import (window, entry_size_at, scan_range, batch_at, batch_base_offset, last_offset_from,
                                   not_kafka_reason, not_kafka_file)
from kafkafmt.log._ranges import (read_range)
from kafkafmt.log._segments import (Segment, DEFAULT_INDEX_INTERVAL, warn_fallbacks)
from kafkafmt.log._transactions import (transactions, gap_transactions, committed_mask)
from kafkafmt.log._copies import (Copy, COPY_STATES)
from kafkafmt.log._fill import (Gap, gap_stretches)
from kafkafmt.log._twins import (same_bytes)
from kafkafmt.log._discovery import (Partition, Found, MAX_DEPTH, REPLICAS, DEFAULT_REPLICAS,
                                     LOG_START_CHECKPOINT, REPLICATION_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
                                     log_dir_offsets, discover, find_partitions, resolve_partition, folder_kind,
                                     find_log_dirs, list_partitions, list_segments)
from kafkafmt.log._changes import (TreeState, tree_state)
from kafkafmt.log._planner import (Task, plan, resolve_offsets, offset_for_timestamp, deal, BatchMark, Divergence,
                                   log_end_offset, batch_mark, find_divergence, topic_id_of)
from kafkafmt.log._taskreader import (read_task, read_tasks)
from kafkafmt.log._ahead import announce
from kafkafmt.log._bulk import (BulkPiece, SMALL_UNIT_BYTES, Unit, UnitChunks, read_units)
from kafkafmt.log._writer import (LogWriter, write_log_dir)
from kafkafmt.log.sidefiles import (read_index, read_leader_epoch_checkpoint, read_partition_metadata,
                                     read_producer_snapshot, read_timeindex, read_txnindex)
from kafkafmt.log import sidefiles  # the side files, one namespace (read, check, write)
from kafkafmt.log import tiered  # tiered-storage layouts

__all__ = ["SEGMENT_DIGITS", "LOG_SUFFIX", "SNAPSHOT_SUFFIX", "SWAP_SUFFIX", "DELETED_SUFFIX", "CLEANED_SUFFIX",
           "SIDE_FILE_SUFFIXES", "INDEX_SUFFIX", "TIMEINDEX_SUFFIX", "TXNINDEX_SUFFIX", "PARTITION_DIR", "SEGMENT_LOG",
           "LEFTOVER_SUFFIXES", "PARTITION_METADATA", "LEADER_EPOCH_CHECKPOINT", "PARTITION_FILES", "SIDE_FILE_KINDS",
           "segment_file_name",
           "segment_base", "log_name_of", "partition_of_name", "is_leftover_file", "is_leftover_dir",
           "is_leftover_segment_file", "is_segment_file", "holds_segment_files", "file_kind", "ReportKind",
           "ReportEntry", "Note", "place_text", "damage_words", "window", "entry_size_at", "scan_range", "batch_at", "batch_base_offset",
           "last_offset_from", "not_kafka_reason", "not_kafka_file", "read_range", "Segment", "DEFAULT_INDEX_INTERVAL",
           "warn_fallbacks", "transactions", "gap_transactions", "committed_mask", "Copy", "COPY_STATES", "Gap", "gap_stretches", "same_bytes", "Partition", "Found", "MAX_DEPTH",
           "REPLICAS",
           "DEFAULT_REPLICAS", "LOG_START_CHECKPOINT", "REPLICATION_CHECKPOINT", "RECOVERY_POINT_CHECKPOINT",
           "log_dir_offsets", "discover", "find_partitions", "resolve_partition",
           "folder_kind", "find_log_dirs", "list_partitions", "list_segments", "TreeState", "tree_state", "Task", "plan",
           "resolve_offsets",
           "offset_for_timestamp", "deal", "BatchMark", "Divergence", "log_end_offset", "batch_mark",
           "find_divergence", "topic_id_of", "read_task", "read_tasks", "Unit", "UnitChunks", "BulkPiece", "read_units",
           "SMALL_UNIT_BYTES",
           "announce", "LogWriter",
           "write_log_dir", "read_index",
           "read_leader_epoch_checkpoint", "read_partition_metadata", "read_producer_snapshot", "read_timeindex",
           "read_txnindex", "sidefiles", "tiered"]
