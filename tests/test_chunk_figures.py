"""A plain chunk's figures from one native pass (`kafkafmt._native.chunkfigures.plain_figures`, which
``kafkafmt stats`` and the report take for the usual chunk) against NumPy computing each figure on its own,
and a partition's figures the same three ways: the native pass, its NumPy twin, and the general way that
selects segment by segment and codec by codec -- on real brokers' files, the sample, and dirs written by
kafka-python in every message format (v0 and v1: unstamped records and no leader epoch)."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkafmt
import kpy
from kafkafmt._native.chunkfigures import SEVERAL, plain_figures
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
        if way == "twin":
            m.setattr(figures, "PLAIN_NATIVE", [False])
        elif way == "general":
            m.setattr(figures.PartitionStats, "_add_plain", lambda *a: False)
        part = kafkafmt.log.discover(folder, replicas="all").partitions[0]
        report = []
        segs, _ = figures.partition_stats(part, read=(iter_log_dir_with(part, figures.STATS_READ, report=report),
                                                      report))
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
