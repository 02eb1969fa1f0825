"""Streaming the records of partition folders and single files through the library's
``iter_log_dir`` (chunked, with index seeks and salvage)."""
from __future__ import annotations

import contextlib
import os
import warnings

import numpy as np

from kafkafmt.errors import KafkafmtError
from kafkafmt.logdir import KafkafmtWarning, iter_log_dir, list_segments, offset_for_timestamp
from kafkafmt.records import Table

from kafkafmt.cli.common import partition_of_folder, segment_in_partition, single_file_partition

CHUNK_BYTES = 16 << 20   # decoded bytes per chunk: keeps memory bounded whatever the segment sizes


def _segment_column(recs, base):
    if "segment" not in recs.batches.columns:
        recs.batches = recs.batches.with_column("segment", np.full(len(recs.batches), base, np.int64))
    return recs


def iter_partition(folder, report, *, start_offset=None, end_offset=None, max_bytes=CHUNK_BYTES, **kwargs):
    """``iter_log_dir`` over one partition folder, plus the batches it yields nothing for: it leaves
    out chunks without records, so a batch emptied by the cleaner that ends up alone in a chunk (or a
    segment holding only such batches) would go unseen. Every stretch of a segment between the chunks
    that no report entry accounts for is decoded here and yielded in its place, so every batch is
    seen, in file order. Each chunk's ``batches`` has a ``segment`` column (the segment's base
    offset)."""
    filtered = start_offset is not None or end_offset is not None
    segments = list_segments(folder)
    by_base = {s.base_offset: s for s in segments}
    order = [s.base_offset for s in segments]
    pd = partition_of_folder(folder)
    decode_kw = dict(verify_crc=kwargs.get("verify_crc", True), include_control=kwargs.get("include_control", False),
                     **_projection(kwargs.get("columns")))
    state = {"seg": None, "end": None, "k": 0}

    def covered(seg, a, b):
        return any(e.get("file") == seg.log and e.get("start") is not None and a <= e["start"] < b for e in report)

    def gap(seg, a, b):
        if b - a < 12 or covered(seg, a, b):
            return
        recs = _decode_range(seg.log, a, b, decode_kw)
        if recs is not None and len(recs.batches):
            if pd is not None:
                recs.topic_names, recs.topic_index, recs.partition = [pd.topic], None, pd.partition
            yield _segment_column(recs, seg.base_offset)

    def finish_segment():
        # the end of the segment being read (only when reading whole segments)
        seg = by_base.get(state["seg"])
        if seg is not None and not filtered:
            yield from gap(seg, state["end"], seg.size)

    def enter(base, first):
        # segments before `base` that yielded nothing, and the start of `base`
        while state["k"] < len(order) and order[state["k"]] < base:
            seg = by_base[order[state["k"]]]
            state["k"] += 1
            if not filtered and seg.base_offset != state["seg"]:
                yield from gap(seg, 0, seg.size)
        if state["k"] < len(order) and order[state["k"]] == base:
            state["k"] += 1
            if not filtered and first > 0:
                yield from gap(by_base[base], 0, first)
        state["seg"], state["end"] = base, first

    for chunk in iter_log_dir(folder, start_offset=start_offset, end_offset=end_offset, report=report,
                              max_bytes=max_bytes, **kwargs):
        b = chunk.batches
        if len(b):
            base = int(b["segment"][0])
            pos = np.asarray(b["position"], np.int64)
            first, last = int(pos.min()), int((pos + np.asarray(b["size"], np.int64)).max())
            if base != state["seg"]:
                yield from finish_segment()
                yield from enter(base, first)
            elif first > state["end"]:
                yield from gap(by_base[base], state["end"], first)
            state["end"] = max(state["end"], last)
        yield chunk
    yield from finish_segment()
    if not filtered:
        yield from enter(float("inf"), 0)


def _decode_range(path, start, stop, kw):
    import mmap

    from kafkafmt.decoder import decode

    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if not size:
                return None
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return decode(m, start=start, stop=min(stop, size), file=path, **kw)
        finally:
            try:
                m.close()
            except BufferError:
                pass
    except (KafkafmtError, OSError):
        return None     # iter_log_dir reports what is wrong there


def _projection(columns):
    if columns is None:
        return {}
    want = set(columns)
    return dict(keys="key" in want, values="value" in want, headers="headers" in want)


def resolve_range(folder, offsets, times):
    """(start, end) offsets for an offset range and a time range (offsets-for-times, as a consumer
    seeking by time): start is None for no bound; returns None when nothing can match."""
    lo, hi = offsets
    t1, t2 = times
    if t1 is not None:
        o = offset_for_timestamp(folder, t1)
        if o is None:
            return None
        lo = o if lo is None else max(lo, o)
    if t2 is not None:
        o = offset_for_timestamp(folder, t2)
        if o is not None:
            hi = o if hi is None else min(hi, o)
    if lo is not None and hi is not None and hi <= lo:
        return None
    return lo, hi


class FileReader:
    """Read one file (a segment anywhere, a record-set dump, a KRaft snapshot) as a one-segment
    partition. Use as a context manager; ``chunks(...)`` takes iter_log_dir's options, report
    entries name the real file."""

    def __init__(self, path):
        self.path = path
        sp = segment_in_partition(path)
        self.topic, self.partition = (sp[0].topic, sp[0].partition) if sp else (None, None)
        self._cm = single_file_partition(path)
        self.folder = self.link = None

    def __enter__(self):
        self.folder, self.link = self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)

    def _real(self, name):
        if name is None:
            return name
        if name == self.link:
            return self.path
        if self.folder and name.startswith(self.folder + os.sep):
            return os.path.join(os.path.dirname(self.path), os.path.basename(name))
        return name

    def resolve_range(self, offsets, times):
        with _no_index_warnings():
            return resolve_range(self.folder, offsets, times)

    def chunks(self, report, **kwargs):
        """iter_partition over the file. A lone file has no index files (unless it is a segment
        with them): the library's warnings about scanning instead are not passed on."""
        own = []
        it = iter_partition(self.folder, own, **kwargs)
        try:
            while True:
                with _no_index_warnings():
                    try:
                        chunk = next(it)
                    except StopIteration:
                        break
                self._move(own, report)
                chunk.topic_names, chunk.topic_index = ([self.topic] if self.topic else []), None
                chunk.partition = self.partition
                chunk.report = report
                yield chunk
        finally:
            it.close()
            self._move(own, report)

    def _move(self, own, report):
        for e in own:
            e = dict(e)
            e["file"] = self._real(e.get("file"))
            if "reason" in e and isinstance(e["reason"], str) and self.folder:
                e["reason"] = e["reason"].replace(self.link, self.path)
            report.append(e)
        own.clear()


@contextlib.contextmanager
def _no_index_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KafkafmtWarning)
        yield


def concat_batches(tables):
    """Batch tables of several chunks as one (the columns they all have), or None."""
    tables = [t for t in tables if t.columns]
    if not tables:
        return None
    names = [c for c in tables[0].columns if all(c in t.columns for t in tables[1:])]
    return Table.concat([Table({c: t[c] for c in names}) for t in tables])


def log_metadata(path, report):
    """The complete batch table of one log file and, per record, offset, timestamp and the row of
    its batch (control records included), reading only metadata; corrupt stretches are skipped and
    reported."""
    tables, offs, tss, bidx = [], [], [], []
    nb = 0
    with FileReader(path) as fr:
        for chunk in fr.chunks(report, errors="salvage", verify_crc=False, include_control=True,
                               columns=["offset", "timestamp"]):
            tables.append(chunk.batches)
            offs.append(np.asarray(chunk.offset, np.int64))
            tss.append(np.asarray(chunk.timestamp, np.int64))
            bidx.append(np.asarray(chunk.batch_index, np.int64) + nb)
            nb += len(chunk.batches)
    batches = concat_batches(tables)
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
    return batches, cat(offs), cat(tss), cat(bidx)
