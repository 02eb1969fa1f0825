"""Kafka's side files: read and write every file a broker keeps beside its ``.log`` segments.

All binary layouts are big-endian. The facts in each module's docstring come from Apache Kafka's sources; the file names
are those of the ``apache/kafka`` repository (Java ``storage`` module, and the older Scala
``core/src/main/scala/kafka/log/`` files where behaviour differs by version). No code was copied.

Modules: `_indexes` (``.index``, ``.timeindex``, ``.txnindex``: read, write, build, check), `_snapshot`
(producer state), `_checkpoints` (checkpoint files), `_metadata` (``partition.metadata``, ``quorum-state``,
``meta.properties``), `_common` (dtypes, versions, helpers).
"""
from __future__ import annotations

from kafkafmt.log.sidefiles._common import (INDEX_DTYPE, TIMEINDEX_DTYPE, TXNINDEX_DTYPE, PRODUCER_ENTRY_DTYPE,
                                            EPOCH_ENTRY_DTYPE, NO_TIMESTAMP, offset_from_file_name)
from kafkafmt.log.sidefiles._indexes import (read_index, read_timeindex, read_txnindex, encode_index,
                                             encode_timeindex, encode_txnindex, write_index, write_timeindex,
                                             write_txnindex, build_index_entries, record_offsets_of_max_timestamp,
                                             IndexProblem, index_sanity_problem, read_index_file, check_index,
                                             check_timeindex, sound_index_entries)
from kafkafmt.log.sidefiles._snapshot import (read_producer_snapshot, encode_producer_snapshot,
                                              write_producer_snapshot)
from kafkafmt.log.sidefiles._checkpoints import (JAVA_WS, java_lines, java_split, java_int,
                                                 read_leader_epoch_checkpoint, leader_epoch_problems,
                                                 read_offset_checkpoint, encode_leader_epoch_checkpoint, write_leader_epoch_checkpoint,
                                                 encode_offset_checkpoint, write_offset_checkpoint)
from kafkafmt.log.sidefiles._metadata import (read_partition_metadata, encode_partition_metadata,
                                              write_partition_metadata, read_quorum_state, read_meta_properties)

__all__ = ["INDEX_DTYPE", "TIMEINDEX_DTYPE", "TXNINDEX_DTYPE", "PRODUCER_ENTRY_DTYPE", "EPOCH_ENTRY_DTYPE",
           "NO_TIMESTAMP", "offset_from_file_name", "read_index", "read_timeindex", "read_txnindex", "encode_index",
           "encode_timeindex", "encode_txnindex", "write_index", "write_timeindex", "write_txnindex",
           "build_index_entries", "record_offsets_of_max_timestamp", "IndexProblem", "index_sanity_problem",
           "read_index_file", "check_index", "check_timeindex", "sound_index_entries", "read_producer_snapshot",
           "encode_producer_snapshot",
           "write_producer_snapshot", "JAVA_WS", "java_lines", "java_split", "java_int",
           "read_leader_epoch_checkpoint", "leader_epoch_problems", "read_offset_checkpoint",
           "encode_leader_epoch_checkpoint",
           "write_leader_epoch_checkpoint", "encode_offset_checkpoint", "write_offset_checkpoint",
           "read_partition_metadata", "encode_partition_metadata", "write_partition_metadata", "read_quorum_state",
           "read_meta_properties"]
