"""Partition directories and whole log dirs (kafkafmt.read._readers): layout, offset and time seeks
against a brute-force filter, real index use and fallbacks, read_committed, column projection,
bounded streaming (RSS measured in subprocesses) and the real broker dirs of the corpus.

Every expectation is computed here from what was written (or, for the real corpus, from
expected.json and a plain full decode), never from kafkafmt.read._readers itself.
"""
import collections
import glob
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import kafkafmt
from kafkafmt import LogWriter
from kafkafmt.log import _discovery as discovery
from kafkafmt.log import _planner as planner
from kafkafmt.log import _ranges as ranges
from kafkafmt.log import _segments as segments
from kafkafmt.errors import KafkafmtWarning

T0 = 1_700_000_000_000
CODECS = [None, "lz4", "zstd", "gzip", "snappy"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------------------------
# a log with known content, and the brute force

class Known:
    """What was written to a partition directory: one entry per record, in offset order."""

    def __init__(self, path):
        self.path = str(path)
        self.offsets, self.timestamps, self.values = [], [], []

    def add(self, offsets, timestamps, values):
        self.offsets += [int(o) for o in offsets]
        self.timestamps += [int(t) for t in timestamps]
        self.values += list(values)

    @property
    def by_offset(self):
        if getattr(self, "_by_offset", None) is None or len(self._by_offset) != len(self.offsets):
            self._by_offset = {o: (t, v) for o, t, v in zip(self.offsets, self.timestamps, self.values)}
        return self._by_offset


def write_known_log(path, seed=7, appends=60, segment_bytes=2500, index_interval_bytes=256):
    """A partition with several segments, sparse indexes, every codec, offset gaps (explicit
    offsets and an empty batch), jittered (non-monotonic) CreateTime timestamps and
    LogAppendTime batches."""
    rnd = random.Random(seed)
    known = Known(path)
    t = T0
    with LogWriter(path, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes) as w:
        for k in range(appends):
            codec = CODECS[k % len(CODECS)]
            n = rnd.randint(1, 12)
            stamps = [t + 10 * i + rnd.randint(-45, 45) for i in range(n)]
            values = [f"{k}:{i}:".encode() + bytes([65 + k % 26]) * rnd.randint(0, 40) for i in range(n)]
            kind = k % 6
            if kind == 2:                       # offset gaps inside and before the batch
                first = w.next_offset + rnd.randint(1, 4)
                offsets = [first]
                for _ in range(n - 1):
                    offsets.append(offsets[-1] + rnd.randint(1, 3))
                w.append(values=values, timestamps=stamps, offsets=offsets, compression=codec)
                known.add(offsets, stamps, values)
            elif kind == 4:                     # broker-stamped: every record gets the append time
                lat = t - rnd.randint(0, 60)    # may be below earlier CreateTimes
                first, last = w.append(values=values, timestamps=stamps, compression=codec,
                                       timestamp_type="LogAppendTime", log_append_time=lat)
                known.add(range(first, last + 1), [lat] * n, values)
            else:
                first, last = w.append(values=values, timestamps=stamps, compression=codec,
                                       batch_size=rnd.choice([60, 200, 16384]))
                known.add(range(first, last + 1), stamps, values)
            if k == appends // 2:               # what the cleaner leaves: an empty batch
                w.append_empty_batch(last_offset=w.next_offset + 3, timestamp=t)
            t += 10 * n
    return known


def brute(known, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None):
    """Offsets a Kafka consumer would read, by plain loops over everything written."""
    pairs = list(zip(known.offsets, known.timestamps))
    lo, hi = start_offset, end_offset
    if start_timestamp is not None:
        hit = [o for o, t in pairs if t >= start_timestamp]
        if not hit:
            return []
        lo = hit[0] if lo is None else max(lo, hit[0])
    if end_timestamp is not None:
        hit = [o for o, t in pairs if t >= end_timestamp]
        if hit:
            hi = hit[0] if hi is None else min(hi, hit[0])
    return [o for o, _ in pairs if (lo is None or o >= lo) and (hi is None or o < hi)]


def segment_bases(folder):
    return sorted(int(n[:20]) for n in os.listdir(folder) if n.endswith(".log") and len(n) == 24)


def seg_file(folder, base, suffix):
    return os.path.join(folder, f"{base:020d}{suffix}")


def check_result(recs, known, expected_offsets, what=""):
    got = recs.offset.tolist()
    assert got == expected_offsets, what
    ref = known.by_offset
    assert recs.timestamp.tolist() == [ref[o][0] for o in got], what
    if len(recs):
        assert recs.value.to_pylist() == [ref[o][1] for o in got], what


@pytest.fixture(scope="module")
def known_log(tmp_path_factory):
    folder = tmp_path_factory.mktemp("seeks") / "my.topic-with-dashes-12"
    return write_known_log(folder)


def test_known_log_shape_and_full_read(known_log):
    folder = known_log.path
    bases = segment_bases(folder)
    assert len(bases) >= 4
    for b in bases:
        assert len(kafkafmt.read_index(seg_file(folder, b, ".index"))) >= 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recs = kafkafmt.read_log_dir(folder)
    check_result(recs, known_log, known_log.offsets)
    assert recs.topic == "my.topic-with-dashes" and recs.partition == 12
    assert recs.report == []
    assert set(recs.batches.codec.tolist()) == {0, 1, 2, 3, 4}
    assert 1 in recs.timestamp_type.tolist() and 0 in recs.timestamp_type.tolist()
    assert (np.diff(recs.timestamp) < 0).any()                         # jitter: not monotonic
    assert (np.diff(recs.offset) > 1).any()                            # gaps


def _offset_candidates(known):
    folder = known.path
    offs = known.offsets
    present = set(offs)
    c = {-5, 0, offs[0], offs[0] + 1, offs[-1], offs[-1] + 1, offs[-1] + 100}
    for b in segment_bases(folder):
        c |= {b - 1, b, b + 1}
        for e in kafkafmt.read_index(seg_file(folder, b, ".index"))["offset"].tolist():
            c |= {e - 1, e, e + 1}
    gaps = [o for o in range(offs[0], offs[-1]) if o not in present]
    assert gaps
    c |= set(gaps[:: max(1, len(gaps) // 6)])
    c |= set(random.Random(1).sample(offs, 10))
    return sorted(c)


def test_offset_seeks_match_brute_force(known_log):
    cands = _offset_candidates(known_log)
    rnd = random.Random(6)
    pairs = [(so, None) for so in cands] + [(None, eo) for eo in cands]
    pairs += [(rnd.choice(cands), rnd.choice(cands)) for _ in range(250)]
    pairs += [(so, so + 1) for so in cands[::3]] + [(so, so) for so in cands[::9]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # every index is sound: no fallback allowed
        for so, eo in pairs:
            recs = kafkafmt.read_log_dir(known_log.path, start_offset=so, end_offset=eo)
            check_result(recs, known_log, brute(known_log, so, eo), f"start_offset={so} end_offset={eo}")


def _time_candidates(known):
    folder = known.path
    ts = known.timestamps
    c = {min(ts) - 1, min(ts), max(ts), max(ts) + 1, max(ts) + 10_000, 0}
    by_off = known.by_offset
    for b in segment_bases(folder):
        seg_ts = [t for o, t in zip(known.offsets, ts) if o >= b]
        if seg_ts:
            c |= {seg_ts[0] - 1, seg_ts[0], seg_ts[0] + 1}
        for e in kafkafmt.read_timeindex(seg_file(folder, b, ".timeindex")).tolist():
            c |= {e[0] - 1, e[0], e[0] + 1}
    c |= set(random.Random(2).sample(ts, 12))
    assert by_off
    return sorted(c)


def test_time_seeks_match_brute_force(known_log):
    cands = _time_candidates(known_log)
    rnd = random.Random(7)
    pairs = [(st, None) for st in cands] + [(None, et) for et in cands]
    pairs += [(rnd.choice(cands), rnd.choice(cands)) for _ in range(250)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for st, et in pairs:
            recs = kafkafmt.read_log_dir(known_log.path, start_timestamp=st, end_timestamp=et)
            check_result(recs, known_log, brute(known_log, start_timestamp=st, end_timestamp=et),
                         f"start_timestamp={st} end_timestamp={et}")


def test_offset_for_timestamp_is_kafkas_list_offsets(known_log):
    pairs = list(zip(known_log.offsets, known_log.timestamps))
    for t in _time_candidates(known_log):
        hit = [o for o, ts in pairs if ts >= t]
        assert planner.offset_for_timestamp(known_log.path, t) == (hit[0] if hit else None), t


def test_mixed_offset_and_time_bounds(known_log):
    rnd = random.Random(3)
    offs, ts = known_log.offsets, known_log.timestamps
    for _ in range(150):
        so = rnd.choice([None, rnd.randint(offs[0] - 2, offs[-1] + 2)])
        eo = rnd.choice([None, rnd.randint(offs[0] - 2, offs[-1] + 2)])
        st = rnd.choice([None, rnd.randint(min(ts) - 5, max(ts) + 5)])
        et = rnd.choice([None, rnd.randint(min(ts) - 5, max(ts) + 5)])
        recs = kafkafmt.read_log_dir(known_log.path, start_offset=so, end_offset=eo, start_timestamp=st,
                                     end_timestamp=et)
        check_result(recs, known_log, brute(known_log, so, eo, st, et), (so, eo, st, et))


def test_streamed_chunks_equal_the_read(known_log):
    rnd = random.Random(4)
    offs = known_log.offsets
    for max_bytes in (1, 300, 5000, 1 << 30):
        for _ in range(6):
            so = rnd.choice([None, rnd.randint(offs[0], offs[-1])])
            eo = rnd.choice([None, rnd.randint(offs[0], offs[-1] + 1)])
            chunks = list(kafkafmt.iter_log_dir(known_log.path, start_offset=so, end_offset=eo,
                                                max_bytes=max_bytes))
            got = [o for c in chunks for o in c.offset.tolist()]
            assert got == brute(known_log, so, eo), (max_bytes, so, eo)
            for c in chunks:
                assert c.topic == "my.topic-with-dashes" and c.partition == 12
                if len(c):
                    ref = known_log.by_offset
                    assert c.value.to_pylist() == [ref[o][1] for o in c.offset.tolist()]
            if max_bytes == 1:       # one batch per chunk at most
                assert all(len(set(c.batch_index.tolist())) <= 1 for c in chunks)


def _absent(recs, *names):
    """Columns not asked for are absent -- not null (which reads like tombstones), not empty."""
    for name in names:
        with pytest.raises(AttributeError, match="not decoded"):
            getattr(recs, name)
        assert name not in recs.columns
    table = recs.to_arrow()
    assert not set(names) & set(table.column_names)
    return True


def test_column_projection(known_log):
    recs = kafkafmt.read_log_dir(known_log.path, columns=["offset", "timestamp"])
    assert _absent(recs, "key", "value", "headers")
    assert list(recs.to_pandas().columns) == ["topic", "partition", "offset", "timestamp", "timestampType"]
    check = kafkafmt.read_log_dir(known_log.path)
    assert recs.offset.tolist() == check.offset.tolist() == known_log.offsets
    assert recs.timestamp.tolist() == known_log.timestamps
    # with a seek too, and streaming
    so = known_log.offsets[len(known_log.offsets) // 2]
    part = kafkafmt.read_log_dir(known_log.path, start_offset=so, columns=["offset", "timestamp"])
    assert part.offset.tolist() == brute(known_log, so) and _absent(part, "value")
    for c in kafkafmt.iter_log_dir(known_log.path, columns=["offset"], max_bytes=500):
        assert _absent(c, "key", "value")
    # asking for the value gives it, keys still absent; values=False in decode likewise
    v = kafkafmt.read_log_dir(known_log.path, columns=["offset", "value"])
    assert v.value.to_pylist() == known_log.values and _absent(v, "key", "headers")
    d = kafkafmt.read_segment(kafkafmt.list_segments(known_log.path)[0].log, values=False)
    assert _absent(d, "value") and d.key.nbytes >= 0 and "value" not in d.to_pandas().columns


# ---------------------------------------------------------------------------------------------
# the index is really used

class DecodeSpy:
    """The byte ranges of segment files a read decodes: (file, start, stop) of each range the range reader decodes,
    and of each stretch the reads in one pass read to decode (`kafkafmt.log._bulk`: a file's bytes from an offset
    into a buffer)."""

    def __init__(self, monkeypatch):
        from kafkafmt.storage import LocalStorage

        self.calls = []
        real = ranges.decode        # the range reader decodes every byte range a log-dir read needs

        def spy(data, *args, **kw):
            n = len(data) if hasattr(data, "__len__") else None
            self.calls.append((kw.get("file"), kw.get("start", 0), kw.get("stop") if kw.get("stop") is not None else n))
            return real(data, *args, **kw)
        monkeypatch.setattr(ranges, "decode", spy)
        many = LocalStorage.read_many

        def read_many(storage, paths, buf, starts, versions=None, offsets=None):
            for i, path in enumerate(paths):
                at = 0 if offsets is None else int(offsets[i])
                self.calls.append((path, at, at + int(starts[i + 1] - starts[i])))
            return many(storage, paths, buf, starts, versions, offsets)
        monkeypatch.setattr(LocalStorage, "read_many", read_many)

    def files(self):
        return {os.path.basename(f) for f, _, _ in self.calls if f}


def _seg_with_entries(known, at_least=3):
    bases = segment_bases(known.path)
    for k, b in enumerate(bases[1:-1], 1):
        idx = kafkafmt.read_index(seg_file(known.path, b, ".index"))
        if len(idx) >= at_least:
            return k, b, idx
    raise AssertionError("no middle segment with enough index entries")


def test_offset_seek_decodes_from_the_index_position(known_log, monkeypatch):
    k, base, idx = _seg_with_entries(known_log, at_least=4)
    bases = segment_bases(known_log.path)
    log = seg_file(known_log.path, base, ".log")
    size = os.path.getsize(log)
    # start just past the second entry: the decode must begin at that entry's position
    so = int(idx["offset"][1]) + 1
    expected_pos = int(idx["position"][1])
    eo = int(idx["offset"][2])            # ends inside the segment: nothing past entry 2's batch is needed
    spy = DecodeSpy(monkeypatch)
    recs = kafkafmt.read_log_dir(known_log.path, start_offset=so, end_offset=eo)
    check_result(recs, known_log, brute(known_log, so, eo))
    assert spy.files() == {os.path.basename(log)}, spy.calls          # no other segment decoded
    starts = [s for f, s, _ in spy.calls if f == log]
    stops = [e for f, _, e in spy.calls if f == log]
    assert min(starts) == expected_pos > 0
    assert max(stops) <= int(idx["position"][3]) < size              # stopped early too
    decoded = sum(e - s for _, s, e in spy.calls)
    assert decoded < size

    # a seek into the last segment decodes nothing of the others
    spy.calls.clear()
    last_so = bases[-1] + 1
    recs = kafkafmt.read_log_dir(known_log.path, start_offset=last_so)
    check_result(recs, known_log, brute(known_log, last_so))
    assert spy.files() == {f"{bases[-1]:020d}.log"}


def test_time_seek_skips_earlier_segments(known_log, monkeypatch):
    bases = segment_bases(known_log.path)
    # a timestamp only reached in the last segment (a CreateTime above every earlier max)
    earlier_max = max(t for o, t in zip(known_log.offsets, known_log.timestamps) if o < bases[-1])
    later = [t for o, t in zip(known_log.offsets, known_log.timestamps) if o >= bases[-1] and t > earlier_max]
    assert later
    st = later[-1]
    spy = DecodeSpy(monkeypatch)
    recs = kafkafmt.read_log_dir(known_log.path, start_timestamp=st)
    check_result(recs, known_log, brute(known_log, start_timestamp=st))
    assert spy.files() == {f"{bases[-1]:020d}.log"}, spy.calls


def _flip_in_batch(log, batch_no, delta=None):
    """Flip a byte in the records area of batch `batch_no`; returns (batch position, byte position)."""
    b = kafkafmt.decode(open(log, "rb").read()).batches
    pos, size = int(b.position[batch_no]), int(b.size[batch_no])
    at = pos + (61 + (size - 61) // 2 if delta is None else delta)
    data = bytearray(open(log, "rb").read())
    data[at] ^= 0xFF
    open(log, "wb").write(bytes(data))
    return pos, at


def test_seek_past_corrupt_early_batch_does_not_touch_it(tmp_path):
    known = write_known_log(tmp_path / "t-0", seed=11)
    bases = segment_bases(known.path)
    base = bases[1]
    log = seg_file(known.path, base, ".log")
    idx = kafkafmt.read_index(seg_file(known.path, base, ".index"))
    bad_pos, _ = _flip_in_batch(log, 0)
    # a full strict read hits it, naming the file and the batch position
    with pytest.raises(kafkafmt.CrcError) as ei:
        kafkafmt.read_log_dir(known.path)
    assert ei.value.file == log and ei.value.position == bad_pos
    # seeks past it (by offset, into the same segment, and by time) do not
    so = int(idx["offset"][0]) + 1
    recs = kafkafmt.read_log_dir(known.path, start_offset=so)
    check_result(recs, known, brute(known, so))
    st = max(t for o, t in zip(known.offsets, known.timestamps) if o < bases[2]) + 1
    recs = kafkafmt.read_log_dir(known.path, start_timestamp=st)
    check_result(recs, known, brute(known, start_timestamp=st))
    # an end before a corrupt late batch of a segment does not reach it either
    k2 = next(k for k in range(2, len(bases))
              if len(kafkafmt.read_index(seg_file(known.path, bases[k], ".index"))) >= 2)
    late = seg_file(known.path, bases[k2], ".log")
    n_batches = len(kafkafmt.read_segment(late).batches)
    lidx = kafkafmt.read_index(seg_file(known.path, bases[k2], ".index"))
    late_pos, _ = _flip_in_batch(late, n_batches - 1)
    assert late_pos > int(lidx["position"][0])
    eo = int(lidx["offset"][0])
    recs = kafkafmt.read_log_dir(known.path, start_offset=bases[2], end_offset=eo)
    check_result(recs, known, brute(known, bases[2], eo))
    with pytest.raises(kafkafmt.CrcError) as ei:
        kafkafmt.read_log_dir(known.path, start_offset=bases[k2])
    assert ei.value.file == late and ei.value.position == late_pos


# ---------------------------------------------------------------------------------------------
# a missing or insane index: fall back to a scan, say so, same answer

def _raw_index(path, entries, base):
    with open(path, "wb") as f:
        for off, pos in entries:
            f.write(struct.pack(">ii", off - base, pos))


def _idx_missing(seg):
    os.remove(seg["index"])


def _idx_decreasing(seg):
    e = kafkafmt.read_index(seg["index"]).tolist()
    _raw_index(seg["index"], [(o, p) for (o, _), (_, p) in zip(e[::-1], e)], seg["base"])


def _idx_positions_decreasing(seg):
    e = kafkafmt.read_index(seg["index"]).tolist()
    _raw_index(seg["index"], [(o, p) for (o, _), (_, p) in zip(e, e[::-1])], seg["base"])


def _idx_past_the_file(seg):
    e = kafkafmt.read_index(seg["index"]).tolist()
    e[-1] = (e[-1][0], seg["size"] + 4096)
    _raw_index(seg["index"], e, seg["base"])


def _idx_partial_entry(seg):
    open(seg["index"], "ab").write(b"\x00\x01\x02")


def _idx_below_base(seg):
    e = kafkafmt.read_index(seg["index"]).tolist()
    _raw_index(seg["index"], [(o - seg["base"] - 50, p) for o, p in e], seg["base"])


INDEX_DAMAGE = [_idx_missing, _idx_decreasing, _idx_positions_decreasing, _idx_past_the_file,
                _idx_partial_entry, _idx_below_base]


@pytest.fixture
def damaged_copy(known_log, tmp_path):
    folder = tmp_path / os.path.basename(known_log.path)
    shutil.copytree(known_log.path, folder)
    k, base, idx = _seg_with_entries(known_log)
    seg = dict(base=base, index=seg_file(str(folder), base, ".index"),
               timeindex=seg_file(str(folder), base, ".timeindex"),
               size=os.path.getsize(seg_file(str(folder), base, ".log")), idx=idx)
    return str(folder), seg


@pytest.mark.parametrize("damage", INDEX_DAMAGE, ids=[f.__name__[5:] for f in INDEX_DAMAGE])
def test_bad_offset_index_falls_back_with_warning(known_log, damaged_copy, damage):
    folder, seg = damaged_copy
    damage(seg)
    so = int(seg["idx"]["offset"][1]) + 1
    eo = int(seg["idx"]["offset"][-1])
    if damage is _idx_missing and seg["size"] <= 4096:
        # Kafka creates an index file with its first entry: a segment of at most the default
        # index.interval.bytes has none, so a missing one is no news -- the read scans silently
        with warnings.catch_warnings():
            warnings.simplefilter("error", KafkafmtWarning)
            recs = kafkafmt.read_log_dir(folder, start_offset=so, end_offset=eo)
        check_result(recs, known_log, brute(known_log, so, eo))
        assert not [e for e in recs.report if e["file"] == seg["index"]], recs.report
        return
    with pytest.warns(KafkafmtWarning, match=r"\.index"):
        recs = kafkafmt.read_log_dir(folder, start_offset=so, end_offset=eo)
    check_result(recs, known_log, brute(known_log, so, eo))
    mine = [e for e in recs.report if e["file"] == seg["index"]]
    assert mine, recs.report
    assert "scan" in mine[0]["reason"]
    # a read without an offset bound needs no index: same records, whatever the index
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_result(kafkafmt.read_log_dir(folder), known_log, known_log.offsets)


def test_zeroed_index_of_a_large_segment_falls_back_with_warning(tmp_path):
    """An .index overwritten with zeros (same length) in front of a segment far larger than
    Kafka's default index interval (4096): not a preallocated empty index, a lost one. The read
    scans and says so; the records are the same."""
    path = str(tmp_path / "z-0")
    known = Known(path)
    with LogWriter(path, segment_bytes=24 << 10, index_interval_bytes=1024) as w:
        for k in range(60):
            vals = [f"{k}:{i}:".encode() * 20 for i in range(10)]
            stamps = [T0 + 100 * k + i for i in range(10)]
            first, last = w.append(values=vals, timestamps=stamps)
            known.add(range(first, last + 1), stamps, vals)
    bases = segment_bases(path)
    assert len(bases) >= 3
    base = bases[1]
    index = seg_file(path, base, ".index")
    entries = kafkafmt.read_index(index)
    assert len(entries) >= 8 and os.path.getsize(seg_file(path, base, ".log")) > 4 * 4096
    open(index, "wb").write(b"\0" * os.path.getsize(index))
    so = int(entries["offset"][5]) + 1
    with pytest.warns(KafkafmtWarning, match=r"\.index"):
        recs = kafkafmt.read_log_dir(path, start_offset=so)
    check_result(recs, known, brute(known, so))
    assert [e for e in recs.report if e["file"] == index], recs.report


def _tidx_missing(seg):
    os.remove(seg["timeindex"])


def _tidx_decreasing(seg):
    d = open(seg["timeindex"], "rb").read()
    ents = [d[i:i + 12] for i in range(0, len(d), 12)]
    assert len(ents) >= 2
    open(seg["timeindex"], "wb").write(b"".join(ents[::-1]))


def _tidx_partial_entry(seg):
    open(seg["timeindex"], "ab").write(b"\x00" * 5)


TIMEINDEX_DAMAGE = [_tidx_missing, _tidx_decreasing, _tidx_partial_entry]


@pytest.mark.parametrize("damage", TIMEINDEX_DAMAGE, ids=[f.__name__[6:] for f in TIMEINDEX_DAMAGE])
def test_bad_time_index_falls_back_with_warning(known_log, damaged_copy, damage):
    folder, seg = damaged_copy
    damage(seg)
    # a timestamp whose first hit lies inside the damaged segment
    last_indexed = int(seg["idx"]["offset"][-1])
    inside = [t for o, t in zip(known_log.offsets, known_log.timestamps) if seg["base"] < o <= last_indexed]
    st = inside[len(inside) // 2]
    if damage is _tidx_missing and seg["size"] <= 4096:
        # as for a missing .index of a small segment (see above): no news, a silent scan
        with warnings.catch_warnings():
            warnings.simplefilter("error", KafkafmtWarning)
            recs = kafkafmt.read_log_dir(folder, start_timestamp=st)
        check_result(recs, known_log, brute(known_log, start_timestamp=st))
        return
    with pytest.warns(KafkafmtWarning, match=r"\.timeindex"):
        recs = kafkafmt.read_log_dir(folder, start_timestamp=st)
    check_result(recs, known_log, brute(known_log, start_timestamp=st))
    assert [e for e in recs.report if e["file"] == seg["timeindex"]], recs.report


def test_index_fallback_reported_once_per_read(known_log, damaged_copy):
    """One read, one damaged .index: one warning and one report entry (not one per lookup)."""
    folder, seg = damaged_copy
    _idx_past_the_file(seg)
    so = int(seg["idx"]["offset"][1]) + 1
    eo = int(seg["idx"]["offset"][-1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recs = kafkafmt.read_log_dir(folder, start_offset=so, end_offset=eo)
    mine = [e for e in recs.report if e["file"] == seg["index"]]
    assert len(mine) == 1, mine
    assert len([w for w in caught if issubclass(w.category, KafkafmtWarning)]) == 1


def test_zero_filled_index_tail_is_not_damage(known_log, damaged_copy):
    """A preallocated index copied from a running broker: entries, then zeros. Used as is."""
    folder, seg = damaged_copy
    data = open(seg["index"], "rb").read()
    open(seg["index"], "wb").write(data + b"\0" * 800)
    tdata = open(seg["timeindex"], "rb").read()
    open(seg["timeindex"], "wb").write(tdata + b"\0" * 1200)
    so = int(seg["idx"]["offset"][1]) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recs = kafkafmt.read_log_dir(folder, start_offset=so)
        check_result(recs, known_log, brute(known_log, so))
        st = known_log.timestamps[known_log.offsets.index(int(seg["idx"]["offset"][1]))]
        recs = kafkafmt.read_log_dir(folder, start_timestamp=st)
        check_result(recs, known_log, brute(known_log, start_timestamp=st))


# ---------------------------------------------------------------------------------------------
# read_committed

def write_transactions(path, segment_bytes=700, index_interval_bytes=200):
    """Interleaved transactions of producers 11..15 and plain records; returns the offsets a
    read_committed consumer returns, computed by Kafka's rule from the operations."""
    ops = []   # ("data", pid, transactional, [offsets]) / ("commit"|"abort", pid, offset)
    with LogWriter(path, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes) as w:
        def data(n, pid=-1, tx=False, codec=None):
            first, last = w.append(values=[f"{pid}:{w.next_offset + i}".encode() for i in range(n)],
                                   timestamps=[T0 + w.next_offset + i for i in range(n)],
                                   producer_id=pid, transactional=tx, compression=codec)
            ops.append(("data", pid, tx, list(range(first, last + 1))))

        def marker(kind, pid):
            ops.append((kind, pid, w.append_control(kind, producer_id=pid, timestamp=T0 + w.next_offset)))

        data(3)
        data(2, 11, True)
        data(2, 12, True, "lz4")
        data(2, 13, True)
        data(2)
        data(2, 11, True, "zstd")
        marker("commit", 11)
        data(2, 12, True)
        marker("abort", 12)
        data(2, 14, True)
        data(1, 11, True)            # producer 11's second transaction
        marker("abort", 13)
        data(2)
        marker("abort", 11)
        data(2, 14, True, "snappy")
        marker("commit", 14)
        data(2, 12, True)            # producer 12's second transaction: never ends
        data(2, 15, True)
        marker("commit", 15)         # committed, but after the open one's start: beyond the LSO
        data(3)
    # Kafka's rule, by hand: a transaction's records belong to its end marker; control records
    # are never returned; nothing at or past the first offset of a still-open transaction.
    pending, fate = {}, {}
    for op in ops:
        if op[0] == "data" and op[2]:
            pending.setdefault(op[1], []).extend(op[3])
        elif op[0] in ("commit", "abort"):
            for o in pending.pop(op[1], []):
                fate[o] = op[0]
    lso = min(min(v) for v in pending.values()) if pending else None
    keep = []
    for op in ops:
        if op[0] != "data":
            continue
        for o in op[3]:
            if lso is not None and o >= lso:
                continue
            if op[2] and fate.get(o) != "commit":
                continue
            keep.append(o)
    markers = [op[2] for op in ops if op[0] in ("commit", "abort")]
    everything = sorted([o for op in ops if op[0] == "data" for o in op[3]] + markers)
    return keep, everything, markers, lso


@pytest.fixture
def txn_log(tmp_path):
    path = str(tmp_path / "payments.eu-3")
    keep, everything, markers, lso = write_transactions(path)
    return path, keep, everything, markers, lso


def test_transactions_fixture_is_what_it_claims(txn_log):
    path, keep, everything, markers, lso = txn_log
    assert len(segment_bases(path)) >= 3
    assert glob.glob(os.path.join(path, "*.txnindex"))
    assert lso is not None and len(markers) == 6
    # hand check of the rule on a few offsets
    assert keep[:5] == [0, 1, 2, 3, 4]
    assert 5 not in keep and 7 not in keep    # aborted (12, 13)
    assert max(keep) < lso


@pytest.mark.parametrize("txnindex", ["present", "deleted"])
def test_read_committed_hand_computed(txn_log, txnindex):
    path, keep, everything, markers, lso = txn_log
    if txnindex == "deleted":
        for f in glob.glob(os.path.join(path, "*.txnindex")):
            os.remove(f)
    recs = kafkafmt.read_log_dir(path, isolation="read_committed")
    assert recs.offset.tolist() == keep
    assert [int(v.split(b":")[1]) for v in recs.value.to_pylist()] == keep
    # include_control cannot bring markers back in read_committed
    assert kafkafmt.read_log_dir(path, isolation="read_committed", include_control=True).offset.tolist() == keep
    # read_uncommitted (default) returns every data record; with include_control the markers too
    assert kafkafmt.read_log_dir(path).offset.tolist() == [o for o in everything if o not in markers]
    assert kafkafmt.read_log_dir(path, include_control=True).offset.tolist() == everything
    # with bounds and in chunks: the same rule
    for so, eo in [(0, None), (6, 26), (13, 17), (lso - 3, None), (lso, None), (None, 10)]:
        exp = [o for o in keep if (so is None or o >= so) and (eo is None or o < eo)]
        got = kafkafmt.read_log_dir(path, isolation="read_committed", start_offset=so, end_offset=eo)
        assert got.offset.tolist() == exp, (so, eo)
        chunks = kafkafmt.iter_log_dir(path, isolation="read_committed", start_offset=so, end_offset=eo,
                                       max_bytes=64)
        assert [o for c in chunks for o in c.offset.tolist()] == exp, (so, eo)


def test_read_committed_same_with_and_without_txnindex(txn_log, tmp_path):
    path, *_ = txn_log
    copy = str(tmp_path / "copy" / os.path.basename(path))
    shutil.copytree(path, copy)
    for f in glob.glob(os.path.join(copy, "*.txnindex")):
        os.remove(f)
    a = kafkafmt.read_log_dir(path, isolation="read_committed")
    b = kafkafmt.read_log_dir(copy, isolation="read_committed")
    assert a.offset.tolist() == b.offset.tolist()
    assert a.value.to_pylist() == b.value.to_pylist()


def test_isolation_is_validated(txn_log):
    with pytest.raises(ValueError):
        kafkafmt.read_log_dir(txn_log[0], isolation="read_committed_please")


def test_sample_payments_read_committed(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKAFMT_SAMPLE_DIR", str(tmp_path / "sample"))
    from kafkafmt.sample import sample_dir
    root = sample_dir()
    assert root.startswith(str(tmp_path))
    path = os.path.join(root, "payments-0")
    every = kafkafmt.read_log_dir(path, include_control=True)
    data = kafkafmt.read_log_dir(path)
    ctl = every.controls
    assert ctl.type.tolist() == [0, 1]           # an ABORT (producer 1002) then a COMMIT (1001)
    # by hand from the sample's story: tx1 (producer 1001) commits, tx2 (1002) aborts
    pid = data.batch_column("producer_id")
    keys = [k.decode() for k in data.key.to_pylist()]
    expected = [o for o, k, p in zip(data.offset.tolist(), keys, pid.tolist()) if p != 1002]
    assert sum(p == 1002 for p in pid.tolist()) == 20
    committed = kafkafmt.read_log_dir(path, isolation="read_committed")
    assert committed.offset.tolist() == expected
    assert collections.Counter(k.decode().rsplit("-", 1)[0] for k in committed.key.to_pylist()) == {
        "plain-a": 20, "tx1-a": 15, "tx1-b": 15, "plain-b": 20, "plain-c": 30}
    for f in glob.glob(os.path.join(path, "*.txnindex")):
        os.remove(f)
    assert kafkafmt.read_log_dir(path, isolation="read_committed").offset.tolist() == expected


# ---------------------------------------------------------------------------------------------
# layout

def _small(path, n=5, **kw):
    kafkafmt.write_log_dir(path, values=[f"{os.path.basename(path)}:{i}".encode() for i in range(n)],
                           timestamps=[T0 + i for i in range(n)], batch_size=60, segment_bytes=200, **kw)


def tp_pairs(recs):
    t = recs.to_arrow()
    return collections.Counter(zip(t["topic"].to_pylist(), t["partition"].to_pylist()))


@pytest.fixture
def log_dirs(tmp_path):
    root = tmp_path / "kafka-logs"
    for name in ["my.topic-with-dashes-12", "my.topic-with-dashes-3", "orders-0", "orders-1", "orders-1-0",
                 "__consumer_offsets-7"]:
        _small(str(root / name))
    # leftovers of the broker's own work, inside a partition ...
    p = root / "orders-0"
    first = f"{0:020d}"
    for suffix in [".log.deleted", ".log.cleaned", ".log.swap", ".index.swap", ".timeindex.deleted",
                   ".index.cleaned", ".cleaned", ".swap"]:
        shutil.copy(p / f"{first}.log", p / f"{first}{suffix}")
    # ... and whole partition folders being deleted / moved / abandoned
    for name in ["orders-0.0123456789abcdef0123456789abcdef-delete",
                 "orders-1.0123456789abcdef0123456789abcdef-future",
                 "orders-1.fedcba9876543210fedcba9876543210-stray"]:
        shutil.copytree(root / "orders-1", root / name)
    (root / "meta.properties").write_text("version=1\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    return str(root)


def test_leftover_files_skipped_and_reported(log_dirs):
    folder = os.path.join(log_dirs, "orders-0")
    recs = kafkafmt.read_log_dir(folder)
    assert recs.value.to_pylist() == [f"orders-0:{i}".encode() for i in range(5)]
    reported = sorted(os.path.basename(e["file"]) for e in recs.report)
    first = f"{0:020d}"
    assert reported == sorted(f"{first}{s}" for s in [".log.deleted", ".log.cleaned", ".log.swap", ".index.swap",
                                                      ".timeindex.deleted", ".index.cleaned", ".cleaned", ".swap"])
    assert [s.base_offset for s in discovery.list_segments(folder)] == segment_bases(folder)


def test_partition_folder_leftovers_skipped_and_reported(log_dirs):
    recs = kafkafmt.read_log_dirs(log_dirs)
    assert tp_pairs(recs) == {("my.topic-with-dashes", 12): 5, ("my.topic-with-dashes", 3): 5, ("orders", 0): 5,
                              ("orders", 1): 5, ("orders-1", 0): 5, ("__consumer_offsets", 7): 5}
    folders = {os.path.basename(e["file"]) for e in recs.report}
    for name in ["orders-0.0123456789abcdef0123456789abcdef-delete",
                 "orders-1.0123456789abcdef0123456789abcdef-future"]:
        assert name in folders


def test_stray_partition_folder_reported(log_dirs):
    """Kafka 3.7+ renames partitions it no longer owns to <tp>.<id>-stray: skipped, and said so."""
    recs = kafkafmt.read_log_dirs(log_dirs)
    assert "orders-1.fedcba9876543210fedcba9876543210-stray" in {os.path.basename(e["file"]) for e in recs.report}


def test_topic_names_with_dashes_and_dots(log_dirs):
    folder = os.path.join(log_dirs, "my.topic-with-dashes-12")
    recs = kafkafmt.read_log_dir(folder)
    assert (recs.topic, recs.partition) == ("my.topic-with-dashes", 12)
    t = recs.to_pandas()
    assert set(t["topic"]) == {"my.topic-with-dashes"} and set(t["partition"]) == {12}
    tps = [(t, p) for t, p, _ in discovery.list_partitions(log_dirs)]
    assert ("orders-1", 0) in tps and ("orders", 1) in tps and ("my.topic-with-dashes", 3) in tps
    assert len(tps) == 6
    with pytest.raises(kafkafmt.KafkafmtError):
        kafkafmt.read_log_dir(os.path.join(log_dirs, "orders-0.0123456789abcdef0123456789abcdef-delete"))


def test_read_log_dirs_filters(log_dirs):
    assert tp_pairs(kafkafmt.read_log_dirs(log_dirs, topics=["orders"])) == {("orders", 0): 5, ("orders", 1): 5}
    assert tp_pairs(kafkafmt.read_log_dirs(log_dirs, topics="orders-1")) == {("orders-1", 0): 5}
    assert tp_pairs(kafkafmt.read_log_dirs(log_dirs, partitions=[0])) == {("orders", 0): 5, ("orders-1", 0): 5}
    assert tp_pairs(kafkafmt.read_log_dirs(log_dirs, topics=["orders", "my.topic-with-dashes"],
                                           partitions=[1, 12])) == {("orders", 1): 5, ("my.topic-with-dashes", 12): 5}
    assert len(kafkafmt.read_log_dirs(log_dirs, topics=["absent"])) == 0
    # per-record values follow their partition
    recs = kafkafmt.read_log_dirs(log_dirs, topics=["orders"])
    t = recs.to_arrow()
    for topic, part, value in zip(t["topic"].to_pylist(), t["partition"].to_pylist(), t["value"].to_pylist()):
        assert value.startswith(f"{topic}-{part}:".encode())
    # iter_log_dirs: the same records, chunk by chunk, each chunk one partition
    chunks = list(kafkafmt.iter_log_dirs(log_dirs, topics=["orders"], max_bytes=40))
    assert sum(len(c) for c in chunks) == 10
    assert {(c.topic, c.partition) for c in chunks} == {("orders", 0), ("orders", 1)}
    # options pass through
    some = kafkafmt.read_log_dirs(log_dirs, topics=["orders"], start_offset=3, columns=["offset"])
    assert sorted(some.offset.tolist()) == [3, 3, 4, 4] and _absent(some, "value")


def test_read_log_dirs_with_an_empty_partition(tmp_path):
    """A partition folder without segments (all deleted by retention; only checkpoints left)."""
    root = tmp_path / "logs"
    _small(str(root / "a-0"))
    (root / "empty-0").mkdir()
    (root / "empty-0" / "leader-epoch-checkpoint").write_text("0\n0\n")
    assert len(kafkafmt.read_log_dir(str(root / "empty-0"))) == 0
    recs = kafkafmt.read_log_dirs(str(root))
    assert tp_pairs(recs) == {("a", 0): 5}


# ---------------------------------------------------------------------------------------------
# the real broker dirs

def _expected_counts(corpus):
    exp = json.loads((corpus / "expected.json").read_text())
    counts = collections.Counter()
    for entry in exp["logs"]:
        f = entry["file"]
        if f.startswith("broker-dirs/") and f.endswith(".log"):
            counts[os.path.dirname(f)] += entry["records"]
    return exp, counts


def test_real_partitions_counts(real_corpus):
    exp, counts = _expected_counts(real_corpus)
    internal = {os.path.basename(d).rsplit("-", 1)[0] for d in counts}
    assert {"__consumer_offsets", "__cluster_metadata"} <= internal
    for d, n in counts.items():
        folder = str(real_corpus / d)
        topic, part = os.path.basename(d).rsplit("-", 1)
        recs = kafkafmt.read_log_dir(folder, include_control=True)
        assert len(recs) == n, d
        assert (recs.topic, recs.partition) == (topic, int(part))
        t = recs.to_arrow()
        assert set(t["topic"].to_pylist()) == {topic} and set(t["partition"].to_pylist()) == {int(part)}
        # default: control records are not data rows
        plain = kafkafmt.read_log_dir(folder)
        full = [kafkafmt.read_segment(str(real_corpus / d / f"{b:020d}.log"), include_control=True)
                for b in segment_bases(folder)]
        n_ctl = sum(len(f.controls) for f in full)
        assert len(plain) == n - n_ctl, d
        assert recs.offset.tolist() == [o for f in full for o in f.offset.tolist()]
    meta = str(real_corpus / "broker-dirs/Niloufar1171__LDI-POC/__cluster_metadata-0")
    assert len(kafkafmt.read_log_dir(meta)) < len(kafkafmt.read_log_dir(meta, include_control=True))


def test_real_log_dirs_whole(real_corpus):
    exp, counts = _expected_counts(real_corpus)
    roots = collections.defaultdict(dict)
    for d, n in counts.items():
        roots[os.path.dirname(d)][tuple(os.path.basename(d).rsplit("-", 1))] = n
    for root, parts in roots.items():
        recs = kafkafmt.read_log_dirs(str(real_corpus / root), include_control=True)
        assert tp_pairs(recs) == {(t, int(p)): n for (t, p), n in parts.items()}, root
        internal = kafkafmt.read_log_dirs(str(real_corpus / root), topics=["__consumer_offsets"], include_control=True)
        assert tp_pairs(internal) == {(t, int(p)): n for (t, p), n in parts.items() if t == "__consumer_offsets"}


def test_real_indexes_agree_with_log(real_corpus):
    files = sorted(glob.glob(str(real_corpus / "broker-dirs" / "**" / "*.index"), recursive=True))
    tfiles = sorted(glob.glob(str(real_corpus / "broker-dirs" / "**" / "*.timeindex"), recursive=True))
    assert files and tfiles
    n_entries = 0
    for f in files:
        recs = kafkafmt.read_segment(f[:-len(".index")] + ".log", include_control=True)
        starts = dict(zip(recs.batches.position.tolist(), recs.batches.last_offset.tolist()))
        entries = kafkafmt.read_index(f)
        for off, pos in entries.tolist():
            assert starts.get(pos) == off, (f, off, pos)       # a batch starts there and ends at off
            n_entries += 1
    for f in tfiles:
        recs = kafkafmt.read_segment(f[:-len(".timeindex")] + ".log", include_control=True)
        offs, ts = recs.offset.tolist(), recs.timestamp.tolist()
        b = recs.batches
        entries = kafkafmt.read_timeindex(f).tolist()
        assert entries
        for t, off in entries:
            # the largest timestamp of the records up to that offset, and that offset is a batch's
            assert max(x for o, x in zip(offs, ts) if o <= off) == t, (f, t, off)
            assert any(bo <= off <= lo for bo, lo in zip(b.base_offset.tolist(), b.last_offset.tolist()))
            n_entries += 1
    assert n_entries >= 6


def test_real_seeks_match_brute_force(real_corpus):
    for d in ["broker-dirs/Niloufar1171__LDI-POC/__consumer_offsets-6",
              "broker-dirs/Niloufar1171__LDI-POC/__cluster_metadata-0",
              "broker-dirs/DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39"]:
        folder = str(real_corpus / d)
        full = kafkafmt.read_log_dir(folder)
        known = Known(folder)
        known.add(full.offset.tolist(), full.timestamp.tolist(), full.value.to_pylist())
        offs = known.offsets
        rnd = random.Random(5)
        cands = sorted({offs[0] - 1, offs[0], offs[-1], offs[-1] + 1} | set(rnd.sample(offs, min(8, len(offs)))))
        tcands = sorted({min(known.timestamps) - 1, max(known.timestamps) + 1}
                        | set(rnd.sample(known.timestamps, min(8, len(offs)))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KafkafmtWarning)     # some of these have no .index
            for so in cands:
                for eo in [None] + cands[::2]:
                    check_result(kafkafmt.read_log_dir(folder, start_offset=so, end_offset=eo), known,
                                 brute(known, so, eo), (d, so, eo))
            for st in tcands:
                for et in [None] + tcands[::2]:
                    check_result(kafkafmt.read_log_dir(folder, start_timestamp=st, end_timestamp=et), known,
                                 brute(known, start_timestamp=st, end_timestamp=et), (d, st, et))


def test_real_producer_snapshots_have_valid_crcs(real_corpus):
    snaps = glob.glob(str(real_corpus / "broker-dirs" / "**" / "*.snapshot"), recursive=True)
    assert snaps
    for s in snaps:
        snap = kafkafmt.read_producer_snapshot(s)
        assert snap["crc_valid"] and snap["version"] == 1, s


# ---------------------------------------------------------------------------------------------
# bounded streaming: peak RSS measured in fresh processes

_MEASURE = textwrap.dedent("""
    import json, resource, sys
    import kafkafmt
    for name in kafkafmt.__all__:      # (loaded before the baseline: the modules are not the read's memory)
        getattr(kafkafmt, name)
    def peak():
        # the high-water mark of this process's own memory. ru_maxrss is not usable as such in a
        # child: Linux carries the parent's maximum over fork + execve (a pytest process that
        # generated 80 MB would mask everything); VmHWM belongs to the new address space.
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # Linux: KiB
    folder, mode = sys.argv[1], sys.argv[2]
    base = peak()
    n = nbytes = biggest = 0
    if mode == "stream":
        for chunk in kafkafmt.iter_log_dir(folder, max_bytes=1 << 20):
            n += len(chunk)
            nbytes += chunk.value.nbytes
            biggest = max(biggest, chunk.value.nbytes)
            del chunk
    else:
        recs = kafkafmt.read_log_dir(folder)
        n, nbytes, biggest = len(recs), recs.value.nbytes, recs.value.nbytes
    print(json.dumps(dict(growth=peak() - base, records=n, bytes=nbytes, biggest_chunk=biggest)))
""")

VALUE = 16_000
N_BIG = 5_000          # 80 MB of values


@pytest.fixture(scope="module")
def big_logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("big")
    out = {}
    value = b"k" * VALUE
    for codec in ("none", "lz4"):
        path = str(root / f"big-{codec}-0")
        with LogWriter(path, segment_bytes=1 << 30) as w:
            for k in range(10):
                w.append(values=[value] * (N_BIG // 10), timestamps=list(range(k * N_BIG // 10, (k + 1) * N_BIG // 10)),
                         compression=None if codec == "none" else codec, batch_size=256 << 10)
        assert segment_bases(path) == [0]
        out[codec] = path
    assert os.path.getsize(seg_file(out["none"], 0, ".log")) > 60 << 20
    yield out
    shutil.rmtree(root, ignore_errors=True)


def _measure(folder, mode):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", _MEASURE, folder, mode], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_streaming_memory_is_bounded(big_logs, codec):
    folder = big_logs[codec]
    stream = _measure(folder, "stream")
    full = _measure(folder, "full")
    mb = 1 << 20
    print(f"\n{codec}: stream growth {stream['growth'] / mb:.1f} MiB (biggest chunk "
          f"{stream['biggest_chunk'] / mb:.1f} MiB), full read growth {full['growth'] / mb:.1f} MiB")
    assert stream["records"] == full["records"] == N_BIG
    assert stream["bytes"] == full["bytes"] == N_BIG * VALUE
    assert full["growth"] > 60 * mb                   # the full read holds everything
    # chunks: at most max_bytes plus one batch (256 KiB of records)
    assert stream["biggest_chunk"] <= mb + (256 << 10) + VALUE
    assert stream["growth"] < full["growth"] / 3
    assert stream["growth"] < 32 * mb


def test_stored_bytes_are_the_bytes_of_the_batches_read(tmp_path):
    """``Records.stored_bytes``: a whole log's read goes through every byte of its segments; a read from an offset
    the bytes of the batches it went through; none without batches."""
    folder = str(tmp_path / "t-0")
    kafkafmt.write_log_dir(folder, values=[b"v%d" % i for i in range(500)], batch_size=256, segment_bytes=1500)
    logs = [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".log")]
    whole = kafkafmt.read_log_dir(folder)
    assert len(logs) > 2 and whole.stored_bytes == sum(os.path.getsize(f) for f in logs)
    tail = kafkafmt.read_log_dir(folder, start_offset=300)
    assert 0 < tail.stored_bytes == int(tail.batches["size"].sum()) < whole.stored_bytes
    past = kafkafmt.read_log_dir(folder, start_offset=10_000)      # (no record: the batches it went through)
    assert len(past) == 0 and past.stored_bytes == int(past.batches["size"].sum())
    assert kafkafmt.decode(b"").stored_bytes == 0
