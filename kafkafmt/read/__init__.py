"""The readers every door uses: `read_log_dir(s)`, `iter_log_dir(s)` (an Arrow stream, `RecordStream`),
`read_segment`, their options as one object (`ReadOptions`) and the readers' forms that take it
(``*_with``, what the command line and Spark call); the Polars scan behind `kafkafmt.polars`; the topic an
internal topic's table reads (`find_internal_topic`).
"""
from __future__ import annotations

from kafkafmt.read._stream import (RecordStream, empty_schema)
from kafkafmt.read._options import READERS, ReadOptions, reader_options
from kafkafmt.read._readers import (read_log_dir, read_log_dirs, iter_log_dir, iter_log_dirs, read_segment,
                                    read_log_dir_with, read_log_dirs_with, iter_log_dir_with, iter_log_dirs_with,
                                    read_segment_with, iter_partitions_with, iter_partition_chunks,
                                    scan_named)
from kafkafmt.read._gather import (Gathering, decoded_bytes, join_chunks)
from kafkafmt.read._polars import (scan_log_dirs, pushdown)
from kafkafmt.read._internal import (internal_topic, find_internal_topic)

__all__ = ["RecordStream", "empty_schema", "read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs",
           "read_segment", "READERS", "ReadOptions", "reader_options", "read_log_dir_with", "read_log_dirs_with",
           "iter_log_dir_with", "iter_log_dirs_with", "read_segment_with", "iter_partitions_with",
           "iter_partition_chunks", "scan_log_dirs",
           "pushdown", "internal_topic", "find_internal_topic", "scan_named", "Gathering", "decoded_bytes",
           "join_chunks"]
