"""The plain cases told in one native pass (`kafkafmt._native.plain`) against NumPy telling them condition by
condition: a chunk's figures (``kafkafmt stats``, the report), a chunk's checks (``verify``, the report), a
checked segment's batch table taken as recover's scan. And a partition's figures the same three ways -- the
native pass, its NumPy twin, and the general way that selects segment by segment and codec by codec -- on real
brokers' files, the sample, and segments kafka-python's builders made in every message format (v0 and v1:
unstamped records and no leader epoch)."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkafmt
import kpy
from kafkafmt._native.plain import SEVERAL, plain_figures
from kafkafmt.read import iter_log_dir_with
from kafkafmt.report import figures


def _expected(c, ts):
    """What NumPy says of the columns ``c``, figure by figure (None unless plain)."""
    if not len(c["segment"]):
        return None
    for name in ("segment", "codec", "magic", "timestamp_type"):
        if (c[name] != c[name][0]).any():
            return None
    if c["is_control"].any() or c["is_transactional"].any():
        return None
    stamped = ts[ts >= 0]
    pids = np.unique(c["producer_id"][c["producer_id"] >= 0])
    pid = -1 if not len(pids) else int(pids[0]) if len(pids) == 1 else SEVERAL
    return (int(c["size"].sum(dtype=np.int64)), int(c["base_offset"].min()), int(c["last_offset"].max()),
            int(stamped.min()) if len(stamped) else None, int(stamped.max()) if len(stamped) else None,
            int((ts < 0).sum()), pid, int(c["partition_leader_epoch"].min()), int(c["partition_leader_epoch"].max()))


#: values each batch column draws from: the first is the plain chunk's (one segment, codec, message format and
#: timestamp type, no control or transactional batch), a later one makes it not plain
UNIFORM = {"segment": (np.int64, [0, 3]), "codec": (np.int8, [1, 4]), "magic": (np.int8, [2, 1]),
           "timestamp_type": (np.int8, [0, 1]), "is_control": (bool, [False, True]),
           "is_transactional": (bool, [False, True])}


@st.composite
def chunks(draw):
    nb = draw(st.integers(0, 6))

    def col(dtype, values):
        return np.array(draw(st.lists(st.sampled_from(values), min_size=nb, max_size=nb)), dtype)

    c = {name: np.full(nb, values[0], dtype) for name, (dtype, values) in UNIFORM.items()}
    if nb and draw(st.booleans()):                   # one batch unlike the others
        name = draw(st.sampled_from(sorted(UNIFORM)))
        c[name][draw(st.integers(0, nb - 1))] = UNIFORM[name][1][1]
    c.update(size=col(np.int32, [61, 900, 2 ** 31 - 1]), base_offset=col(np.int64, [0, 5, 2 ** 40]),
             last_offset=col(np.int64, [4, 9, 2 ** 40 + 3]), producer_id=col(np.int64, [-1, 7, 9]),
             partition_leader_epoch=col(np.int32, [-1, 0, 3, 2 ** 31 - 1]))
    ts = np.array(draw(st.lists(st.sampled_from([-1, 0, 5, 10 ** 12, 2 ** 62]), max_size=12)), np.int64)
    return c, ts


def _call(c, ts):
    return plain_figures(c["segment"], c["codec"], c["magic"], c["timestamp_type"], c["is_control"].view(np.uint8),
                         c["is_transactional"].view(np.uint8), c["size"], c["base_offset"], c["last_offset"],
                         c["producer_id"], c["partition_leader_epoch"], ts)


@settings(max_examples=200, deadline=None)
@given(chunks())
def test_the_native_pass_gives_what_numpy_gives_figure_by_figure(chunk):
    c, ts = chunk
    assert _call(c, ts) == _expected(c, ts)


def test_columns_of_other_types_or_lengths_are_refused():
    c = {"segment": np.zeros(2, np.int64), "codec": np.zeros(2, np.int8), "magic": np.full(2, 2, np.int8),
         "timestamp_type": np.zeros(2, np.int8), "is_control": np.zeros(2, bool),
         "is_transactional": np.zeros(2, bool), "size": np.full(2, 70, np.int32), "base_offset": np.arange(2),
         "last_offset": np.arange(2), "producer_id": np.full(2, -1), "partition_leader_epoch": np.zeros(2, np.int32)}
    ts = np.zeros(3, np.int64)
    assert _call(c, ts) == _expected(c, ts)
    with pytest.raises(ValueError):
        _call(dict(c, size=c["size"].astype(np.int64)), ts)        # (the NumPy twin takes these)
    with pytest.raises(ValueError):
        _call(dict(c, magic=c["magic"][:1]), ts)


#: the shapes of kafka-python-built segments (message format, codec, feature; `kpy.make_case`)
CASES = [(0, "none", "plain"), (1, "gzip", "null_values"), (1, "none", "log_append_time"), (2, "snappy", "headers"),
         (2, "none", "idempotent"), (2, "lz4", "transactional"), (2, "none", "control"), (2, "zstd", "empty_batch"),
         (2, "none", "leader_epoch")]


def _dirs(real_corpus, sample, tmp_path_factory):
    """Partition folders: the real brokers', the sample's, and segments kafka-python's builders made."""
    out = sorted(d for d in glob.glob(os.path.join(real_corpus, "broker-dirs", "**", "*-[0-9]*"), recursive=True)
                 if glob.glob(os.path.join(d, "*.log")))
    out += sorted(glob.glob(os.path.join(str(sample), "*-[0-9]*")))
    base = tmp_path_factory.mktemp("figures")
    for i, (magic, codec, feature) in enumerate(CASES):
        folder = base / f"case{i}-0"
        folder.mkdir()
        (folder / "00000000000000000000.log").write_bytes(kpy.make_case(magic, codec, feature))
        out.append(str(folder))
    return out


def _figures(folder, way, monkeypatch):
    """Every segment's figures of the partition in ``folder`` as JSON, the plain chunks taken ``way``."""
    with monkeypatch.context() as m:
        if way == "general":
            m.setattr(figures.PartitionStats, "_add_plain", lambda *a: False)
        figures.PLAIN_NATIVE[0] = way != "twin"
        try:
            part = kafkafmt.log.discover(folder, replicas="all").partitions[0]
            report = []
            segs, _ = figures.partition_stats(part, read=(iter_log_dir_with(part, figures.STATS_READ, report=report),
                                                          report))
        finally:
            figures.PLAIN_NATIVE[0] = True
        return {base: a.to_json() for base, a in segs.items()}


def test_a_partitions_figures_are_the_same_every_way(real_corpus, sample, tmp_path_factory, monkeypatch):
    dirs = _dirs(real_corpus, sample, tmp_path_factory)
    plain = []
    original = figures.PartitionStats._add_plain

    def counted(self, *a):
        took = original(self, *a)
        plain.append(took)
        return took

    for folder in dirs:
        native = _figures(folder, "native", monkeypatch)
        assert native == _figures(folder, "twin", monkeypatch), folder
        assert native == _figures(folder, "general", monkeypatch), folder
        with monkeypatch.context() as m:
            m.setattr(figures.PartitionStats, "_add_plain", counted)
            _figures(folder, "native", monkeypatch)
    # the plain way was taken, and passed over (control, transactional, mixed chunks)
    assert True in plain and False in plain


@st.composite
def checked_chunks(draw):
    """A chunk's batch and record columns, sound or broken in one of the ways the checks look for."""
    nb = draw(st.integers(0, 5))
    counts = draw(st.lists(st.integers(1, 4), min_size=nb, max_size=nb))
    gaps = draw(st.lists(st.integers(0, 2), min_size=nb, max_size=nb))
    last = np.cumsum(np.array(counts, np.int64) + np.array(gaps, np.int64)) + 99
    base = last - np.array(counts, np.int64) + 1
    position = np.cumsum(np.full(nb, 70, np.int64))
    ctl = np.array(draw(st.lists(st.booleans(), min_size=nb, max_size=nb)), bool)
    offs = [o for b, l in zip(base.tolist(), last.tolist()) for o in range(b, l + 1)
            if draw(st.booleans()) or o == l]
    bidx = [int(np.searchsorted(last, o)) for o in offs]
    offs, bidx = np.array(offs, np.int64), np.array(bidx, np.int32)
    how = draw(st.sampled_from(["sound"] * 4 + ["position", "backwards", "overlap", "record", "outside", "segment"]))
    segment = np.zeros(nb, np.int64)
    if how == "position" and nb > 1:
        position[1] = position[0]
    elif how == "backwards" and nb:
        last[0] = base[0] - 1
    elif how == "overlap" and nb > 1:
        base[1] = last[0]
    elif how == "record" and len(offs) > 1:
        offs[1] = offs[0]
    elif how == "outside" and len(offs):
        offs[-1] = last[bidx[-1]] + 1
    elif how == "segment" and nb > 1:
        segment[-1] = 5
    log_start = draw(st.sampled_from([None, 0, 101, 104, 10 ** 6]))
    prev_last = draw(st.sampled_from([None, 50, 99, 100, 200]))
    lowest = draw(st.sampled_from([-(1 << 63), 100, 102]))
    cols = {"segment": segment, "position": position, "base_offset": base, "last_offset": last, "is_control": ctl}
    return cols, offs, bidx, log_start, prev_last, lowest


@settings(max_examples=200, deadline=None)
@given(checked_chunks())
def test_the_native_checks_pass_gives_what_numpy_gives(chunk):
    from kafkafmt._native.plain import plain_checks
    from kafkafmt.record import Table
    from kafkafmt.report.checks import Checker

    cols, offs, bidx, log_start, prev_last, lowest = chunk

    class Chunk:          # (the two columns of a chunk the checks read, beside its batches)
        offset, batch_index = offs, bidx

        def __len__(self):
            return len(offs)

    got = plain_checks(cols["segment"], cols["position"], cols["base_offset"], cols["last_offset"],
                       cols["is_control"].view(np.uint8), offs, bidx, log_start, prev_last, lowest)
    want = Checker._sound_numpy(Chunk(), Table(cols), log_start, prev_last, lowest) if len(cols["segment"]) else None
    assert got == want


@st.composite
def scanned_tables(draw):
    """A checked read's batch table of a segment, the whole file in sequence or not in one of the ways
    `plain_scan` looks for."""
    n = draw(st.integers(0, 5))
    size = np.array(draw(st.lists(st.sampled_from([61, 200, 900]), min_size=n, max_size=n)), np.int32)
    how = draw(st.sampled_from(["whole"] * 3 + ["gap", "start", "big", "crc", "magic", "order", "end", "span"]))
    if how == "big" and n:
        size[-1] = 1001
    position = (np.cumsum(size, dtype=np.int64) - size).astype(np.int64)
    counts = np.array(draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)), np.int64)
    last = np.cumsum(counts) + draw(st.sampled_from([0, 2 ** 31 - 10]))
    base = last - counts + 1
    crc = np.ones(n, bool)
    magic = np.full(n, 2, np.int8)
    file_size = int(size.sum(dtype=np.int64))
    if how == "gap" and n > 1:
        position[1] += 1
    elif how == "start" and n:
        position += 4
    elif how == "crc" and n:
        crc[-1] = False
    elif how == "magic" and n:
        magic[0] = 1
    elif how == "order" and n > 1:
        base[1] = last[0]
    elif how == "end":
        file_size += 1
    cols = {"position": position, "size": size, "magic": magic, "base_offset": base, "last_offset": last}
    floor = draw(st.sampled_from([0, 1, 5]))
    return cols, crc, file_size, floor


@settings(max_examples=200, deadline=None)
@given(scanned_tables())
def test_the_native_scan_pass_gives_what_numpy_gives(table):
    from kafkafmt._native.plain import plain_scan
    from kafkafmt.recovery.indexes import _plain_scan_numpy

    cols, crc, file_size, floor = table
    got = plain_scan(cols["position"], cols["size"], crc.view(np.uint8), cols["magic"], cols["base_offset"],
                     cols["last_offset"], file_size, 1000, floor)
    assert got == _plain_scan_numpy(cols, crc, file_size, 1000, floor)
