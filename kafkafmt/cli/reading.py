"""Streaming the records of partition folders and single files through the library (chunked,
with index seeks and salvage): every batch is seen, in file order, including batches the cleaner
emptied of records. Each chunk's ``batches`` has a ``segment`` column (the segment's base offset)."""
from __future__ import annotations

import contextlib
import os
import warnings

import numpy as np

from kafkafmt.errors import KafkafmtWarning
from kafkafmt.read import ReadOptions, iter_log_dir_with, scan_named
from kafkafmt.log import read_task
from kafkafmt.log import plan, resolve_offsets
from kafkafmt.log import Partition
from kafkafmt.report.checks import concat_batches
from kafkafmt.cli import paths as cli_paths
from kafkafmt.log import partition_of_name
from kafkafmt.log import Segment

CHUNK_BYTES = 16 << 20   # decoded bytes per chunk: keeps memory bounded whatever the segment sizes


def topic_of_file(path):
    """The topic named by a file's ``<topic>-<partition>`` folder (None when it names none)."""
    tp = partition_of_name(os.path.basename(os.path.dirname(os.path.abspath(path))))
    return None if tp is None else tp[0]


def iter_partition(folder, report, options, typed=None):
    """``iter_log_dir`` over one partition folder with a command's `ReadOptions` (`kafkafmt.cli.common.read_options`),
    every chunk kept (record-less ones too)."""
    return iter_log_dir_with(folder, options.replace(keep_empty=True), report=report, typed=typed)


def scan_typed(typed, partitions, files, options):
    """``typed`` (the command's `kafkafmt.values.TypedOptions`) after the pass a typed read makes first
    when a column's type depends on what its values name (`kafkafmt.read.scan_named`), over the partition
    folders (`Partition` s) and the files (each a one-segment partition) the command reads with
    ``options`` (its `ReadOptions`: ranges, isolation, errors)."""
    if typed is None or not typed.active:
        return typed
    parts = list(partitions) + [FileReader(f).part for f in files]
    with _no_index_warnings():
        return scan_named(typed, parts, options)


def resolve_range(part, offsets, times):
    """(start, end) offsets of a partition (`Partition`) for an offset range and a time range
    (offsets-for-times, as a consumer seeking by time): None for no bound; returns None when
    nothing can match."""
    return resolve_offsets(part, part.list_segments(), offsets[0], offsets[1], times[0], times[1], [])


class FileReader:
    """Read one file -- a segment anywhere, a record-set dump, a KRaft snapshot -- as a
    one-segment partition planned and read as every partition is (`kafkafmt.log._planner.plan`): its
    own index files are used when it is a segment with them. Use as a context manager (kept for
    symmetry with partition reads; nothing is created on disk)."""

    def __init__(self, path):
        self.path = path
        st, p = cli_paths.storage_of(path)
        # the topic and partition its folder names, as read_segment takes them
        tp = partition_of_name(st.name(st.parent(p if not st.is_local else os.path.abspath(p))))
        self.topic, self.partition = tp if tp else (None, None)
        self.segment = Segment.of_file(p, st)
        self.part = Partition(self.topic, self.partition, self.segment.folder, st, segments=(self.segment,))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def resolve_range(self, offsets, times):
        with _no_index_warnings():
            return resolve_range(self.part, offsets, times)

    def chunks(self, report, options):
        """The file's records in chunks, read with a `ReadOptions` as a partition's (its offset range,
        errors, columns, CRC and control-record settings, chunk size; a file has no transactions to
        isolate). A lone file has no index files (unless it is a segment with them): the library's
        warnings about scanning instead are not passed on."""
        with _no_index_warnings():
            tasks = plan(self.part, start_offset=options.start_offset, end_offset=options.end_offset, report=[])
        decoding = options.decode_options(options.columns)
        for task in tasks:
            it = read_task(task, report, options=decoding, errors=options.errors, max_bytes=options.max_bytes)
            while True:
                with _no_index_warnings():
                    try:
                        recs, _ = next(it)
                    except StopIteration:
                        break
                yield recs.replace(topic=self.topic, partition=self.partition, report=report)


@contextlib.contextmanager
def _no_index_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KafkafmtWarning)
        yield


def log_metadata(path, report):
    """The complete batch table of one log file and, per record, offset, timestamp and the row of
    its batch (control records included), reading only metadata; corrupt stretches are skipped and
    reported."""
    tables, offs, tss, bidx = [], [], [], []
    nb = 0
    options = ReadOptions(errors="salvage", verify_crc=False, include_control=True, columns=["offset", "timestamp"],
                          max_bytes=CHUNK_BYTES)
    with FileReader(path) as fr:
        for chunk in fr.chunks(report, options):
            tables.append(chunk.batches)
            offs.append(np.asarray(chunk.offset, np.int64))
            tss.append(np.asarray(chunk.timestamp, np.int64))
            bidx.append(np.asarray(chunk.batch_index, np.int64) + nb)
            nb += len(chunk.batches)
    batches = concat_batches(tables)
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
    return batches, cat(offs), cat(tss), cat(bidx)
