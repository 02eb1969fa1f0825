"""Corrupted copies of partition directories: strict mode raises an error that names the file and
the position; errors="salvage" returns every intact batch and a report naming each damaged byte
range, such that decoded batches + reported ranges account for every byte of every segment.
Damaged or wrong indexes must never make a read silently wrong.
"""
import os
import shutil
import struct
import warnings

import numpy as np
import pytest

import kafkafmt
from kafkafmt import LogWriter
from kafkafmt._native.scan import crc32c
from kafkafmt.errors import KafkafmtWarning
from test_logdir import Known, brute, check_result, seg_file, segment_bases, write_known_log

T0 = 1_700_000_000_000
V2_CRC_AT = 17            # int32 length at 8, magic at 16, crc32c at 17..20, covering 21..end
V2_CRC_FROM = 21


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return write_known_log(tmp_path_factory.mktemp("salvage") / "orders.eu-7", seed=21, appends=45,
                           segment_bytes=2200, index_interval_bytes=300)


@pytest.fixture
def copy(pristine, tmp_path):
    folder = str(tmp_path / os.path.basename(pristine.path))
    shutil.copytree(pristine.path, folder)
    return folder


def batches_of(log):
    """(position, size, record offsets) of every batch of an untouched segment."""
    recs = kafkafmt.decode(open(log, "rb").read(), include_control=True)
    b = recs.batches
    out = []
    for i in range(len(b)):
        out.append((int(b.position[i]), int(b.size[i]), recs.offset[recs.batch_index == i].tolist()))
    return out


def middle_segment(folder):
    bases = segment_bases(folder)
    return bases[len(bases) // 2], seg_file(folder, bases[len(bases) // 2], ".log")


def flip(log, at, mask=0xFF):
    data = bytearray(open(log, "rb").read())
    data[at] ^= mask
    open(log, "wb").write(bytes(data))


def accounted(recs, folder):
    """Every segment's bytes are either in a decoded batch or in a reported range, exactly once."""
    b = recs.batches
    seg_col = b["segment"] if "segment" in b.columns else None
    for base in segment_bases(folder):
        log = seg_file(folder, base, ".log")
        size = os.path.getsize(log)
        if seg_col is not None:
            m = seg_col == base
        else:
            assert len(segment_bases(folder)) == 1
            m = np.ones(len(b), bool)
        ranges = [(int(p), int(p) + int(s)) for p, s in zip(b.position[m], b.size[m])]
        ranges += [(e["start"], e["end"]) for e in recs.report if e["file"] == log and e["start"] is not None]
        ranges.sort()
        cur = 0
        for lo, hi in ranges:
            assert lo == cur, (log, ranges)
            cur = hi
        assert cur == size, (log, ranges, size)


def expected_without(known, lost_offsets):
    lost = set(lost_offsets)
    return [o for o in known.offsets if o not in lost]


def damage_report(recs, log):
    return [e for e in recs.report if e["file"] == log and e["start"] is not None]


# ---------------------------------------------------------------------------------------------
# a flipped byte

def test_flipped_byte_mid_segment(pristine, copy):
    base, log = middle_segment(copy)
    batches = batches_of(log)
    k = len(batches) // 2
    pos, size, lost = batches[k]
    at = pos + size // 2 + 7
    flip(log, at)
    with pytest.raises(kafkafmt.KafkafmtError) as ei:
        kafkafmt.read_log_dir(copy)
    err = ei.value
    assert isinstance(err, kafkafmt.CrcError)
    assert err.file == log and err.position == pos
    assert log in str(err) and f"position {pos}" in str(err)
    # iterating raises too, at the same place
    with pytest.raises(kafkafmt.CrcError):
        for _ in kafkafmt.iter_log_dir(copy, max_bytes=256):
            pass

    recs = kafkafmt.read_log_dir(copy, errors="salvage")
    check_result(recs, pristine, expected_without(pristine, lost))
    # the untouched batches of the damaged segment, decoded on their own, are all there
    orig = open(seg_file(pristine.path, base, ".log"), "rb").read()
    intact = kafkafmt.decode(orig[:pos] + orig[pos + size:])
    mine = recs.offset[(recs.offset >= base) & (recs.offset <= intact.offset[-1])]
    assert mine.tolist() == intact.offset.tolist()
    rep = damage_report(recs, log)
    assert len(rep) == 1
    assert rep[0]["start"] == pos and rep[0]["end"] == pos + size and rep[0]["start"] <= at < rep[0]["end"]
    assert "crc" in rep[0]["reason"].lower()
    accounted(recs, copy)


def _sweep_positions(pos, size):
    # every byte a v2 batch's CRC covers or that frames it (magic, crc), and some payload bytes;
    # not the base offset / leader epoch (outside the CRC: undetectable) nor the length field
    # (tested on its own below)
    inside = [16] + list(range(V2_CRC_AT, 61)) + list(range(61, size, max(1, (size - 61) // 8)))
    return [pos + i for i in inside if i < size]


def test_salvage_every_detectable_flip_in_one_batch(pristine, copy):
    base, log = middle_segment(copy)
    batches = batches_of(log)
    k = len(batches) // 2
    pos, size, lost = batches[k]
    orig = open(log, "rb").read()
    want = expected_without(pristine, lost)
    for at in _sweep_positions(pos, size):
        for mask in (0x01, 0xFF):
            data = bytearray(orig)
            data[at] ^= mask
            open(log, "wb").write(bytes(data))
            with pytest.raises(kafkafmt.KafkafmtError) as ei:
                kafkafmt.read_log_dir(copy)
            assert ei.value.file == log and ei.value.position is not None, at
            recs = kafkafmt.read_log_dir(copy, errors="salvage")
            assert recs.offset.tolist() == want, (at, mask, recs.report)
            rep = damage_report(recs, log)
            assert any(e["start"] <= at < e["end"] for e in rep), (at, mask, rep)
            accounted(recs, copy)
    open(log, "wb").write(orig)


@pytest.mark.parametrize("byte", [8, 9, 10, 11])
@pytest.mark.parametrize("which", ["first", "middle"])
def test_salvage_after_corrupt_length_field(pristine, copy, byte, which):
    """A flipped length byte makes the batch look longer (possibly past the end of the file, like a
    truncated tail) or shorter: salvage must still resync on the next batch whose CRC verifies."""
    base, log = middle_segment(copy)
    batches = batches_of(log)
    k = 0 if which == "first" else len(batches) // 2
    pos, size, lost = batches[k]
    flip(log, pos + byte, 0x40)
    recs = kafkafmt.read_log_dir(copy, errors="salvage")
    assert recs.offset.tolist() == expected_without(pristine, lost), recs.report
    assert any(e["start"] <= pos < e["end"] for e in damage_report(recs, log))
    accounted(recs, copy)
    # strict: an error naming the file, or at the very least no silent loss
    try:
        strict = kafkafmt.read_log_dir(copy)
    except kafkafmt.KafkafmtError as err:
        assert err.file == log and err.position is not None
    else:
        pytest.fail(f"strict read returned {len(strict)} records and only reported {strict.report}")


def test_two_damaged_batches_first_and_last(pristine, copy):
    base, log = middle_segment(copy)
    batches = batches_of(log)
    (p0, s0, lost0), (p1, s1, lost1) = batches[0], batches[-1]
    flip(log, p0 + 40)
    flip(log, p1 + s1 - 3)
    recs = kafkafmt.read_log_dir(copy, errors="salvage")
    check_result(recs, pristine, expected_without(pristine, lost0 + lost1))
    rep = damage_report(recs, log)
    assert [(e["start"], e["end"]) for e in rep] == [(p0, p0 + s0), (p1, p1 + s1)]
    accounted(recs, copy)


def test_adjacent_damaged_batches(pristine, copy):
    base, log = middle_segment(copy)
    batches = batches_of(log)
    k = len(batches) // 2
    (pa, sa, la), (pb, sb, lb) = batches[k], batches[k + 1]
    flip(log, pa + 30)
    flip(log, pb + 30)
    recs = kafkafmt.read_log_dir(copy, errors="salvage")
    check_result(recs, pristine, expected_without(pristine, la + lb))
    rep = damage_report(recs, log)
    covered = sorted((e["start"], e["end"]) for e in rep)
    assert covered[0][0] == pa and covered[-1][1] == pb + sb
    accounted(recs, copy)


def test_corrupt_compressed_payload_with_valid_crc(tmp_path):
    """The CRC verifies but the compressed payload is garbage: CompressionError in strict mode,
    skipped and reported in salvage mode."""
    path = str(tmp_path / "z-0")
    known = Known(path)
    with LogWriter(path) as w:
        for k, codec in enumerate(["lz4", "zstd", "gzip", "snappy", "lz4"]):
            vals = [f"{k}-{i}".encode() * 20 for i in range(10)]
            first, last = w.append(values=vals, timestamps=[T0 + 10 * k + i for i in range(10)], compression=codec)
            known.add(range(first, last + 1), [T0 + 10 * k + i for i in range(10)], vals)
    log = seg_file(path, 0, ".log")
    batches = batches_of(log)
    pos, size, lost = batches[2]          # gzip
    data = bytearray(open(log, "rb").read())
    for i in range(pos + 61 + 2, pos + size - 2):
        data[i] = 0x55
    crc = crc32c(bytes(data[pos + V2_CRC_FROM:pos + size]))
    data[pos + V2_CRC_AT:pos + V2_CRC_FROM] = struct.pack(">I", crc)
    open(log, "wb").write(bytes(data))
    with pytest.raises(kafkafmt.CompressionError) as ei:
        kafkafmt.read_log_dir(path)
    assert ei.value.file == log and ei.value.position == pos
    recs = kafkafmt.read_log_dir(path, errors="salvage")
    check_result(recs, known, expected_without(known, lost))
    assert [(e["start"], e["end"]) for e in damage_report(recs, log)] == [(pos, pos + size)]
    accounted(recs, path)


# ---------------------------------------------------------------------------------------------
# truncation

def test_truncated_last_segment(pristine, copy):
    """A copy of an active segment cut inside its last batch: as Kafka's reader, the partial batch
    is reported (not an error), in both modes; everything before it is returned."""
    bases = segment_bases(copy)
    log = seg_file(copy, bases[-1], ".log")
    batches = batches_of(log)
    pos, size, lost = batches[-1]
    cut = pos + size // 2
    with open(log, "r+b") as f:
        f.truncate(cut)
    for errors in ("strict", "salvage"):
        recs = kafkafmt.read_log_dir(copy, errors=errors)
        check_result(recs, pristine, expected_without(pristine, lost))
        rep = damage_report(recs, log)
        assert [(e["start"], e["end"]) for e in rep] == [(pos, cut)], errors
        assert "truncated" in rep[0]["reason"]
        accounted(recs, copy)


def test_truncated_middle_segment_strict_raises(pristine, copy):
    """A rolled segment cut short hides offsets in the middle of the partition: strict mode must
    say so with an error naming the file and the position (the report alone is easy to miss)."""
    base, log = middle_segment(copy)
    batches = batches_of(log)
    pos, size, lost = batches[-1]
    with open(log, "r+b") as f:
        f.truncate(pos + 20)
    with pytest.raises(kafkafmt.KafkafmtError) as ei:
        kafkafmt.read_log_dir(copy)
    assert ei.value.file == log and ei.value.position == pos


def test_truncated_middle_segment_salvage(pristine, copy):
    base, log = middle_segment(copy)
    batches = batches_of(log)
    pos, size, lost = batches[-2]
    lost += batches[-1][2]
    with open(log, "r+b") as f:
        f.truncate(pos + 30)
    recs = kafkafmt.read_log_dir(copy, errors="salvage")
    check_result(recs, pristine, expected_without(pristine, lost))
    assert [(e["start"], e["end"]) for e in damage_report(recs, log)] == [(pos, pos + 30)]
    accounted(recs, copy)


def test_flipped_byte_and_truncated_tail_in_one_segment(pristine, copy):
    """Salvage past a corrupt batch, then a truncated tail: both ranges reported."""
    bases = segment_bases(copy)
    log = seg_file(copy, bases[-1], ".log")
    batches = batches_of(log)
    assert len(batches) >= 4
    p1, s1, lost1 = batches[1]
    p2, s2, lost2 = batches[-1]
    flip(log, p1 + 50)
    with open(log, "r+b") as f:
        f.truncate(p2 + s2 - 5)
    recs = kafkafmt.read_log_dir(copy, errors="salvage")
    check_result(recs, pristine, expected_without(pristine, lost1 + lost2))
    rep = damage_report(recs, log)
    assert [(e["start"], e["end"]) for e in rep] == [(p1, p1 + s1), (p2, p2 + s2 - 5)], rep
    accounted(recs, copy)


def test_zeroed_tail_of_preallocated_segment(pristine, copy):
    bases = segment_bases(copy)
    log = seg_file(copy, bases[-1], ".log")
    size = os.path.getsize(log)
    with open(log, "ab") as f:
        f.write(b"\0" * 4096)
    for errors in ("strict", "salvage"):
        recs = kafkafmt.read_log_dir(copy, errors=errors)
        check_result(recs, pristine, pristine.offsets)
        assert [(e["start"], e["end"]) for e in damage_report(recs, log)] == [(size, size + 4096)]
        accounted(recs, copy)


# ---------------------------------------------------------------------------------------------
# salvage with seeks and streaming

def test_salvage_streamed_equals_read(pristine, copy):
    base, log = middle_segment(copy)
    batches = batches_of(log)
    for k in (1, len(batches) // 2, len(batches) - 2):
        flip(log, batches[k][0] + batches[k][1] - 9)
    whole = kafkafmt.read_log_dir(copy, errors="salvage")
    for max_bytes in (1, 200, 3000):
        report = []
        chunks = list(kafkafmt.iter_log_dir(copy, errors="salvage", max_bytes=max_bytes, report=report))
        assert [o for c in chunks for o in c.offset.tolist()] == whole.offset.tolist(), max_bytes
        assert sorted((e["start"], e["end"]) for e in report if e["file"] == log) == \
            sorted((e["start"], e["end"]) for e in damage_report(whole, log)), max_bytes


def test_salvage_seek_past_damage_does_not_report_it(pristine, copy):
    base, log = middle_segment(copy)
    batches = batches_of(log)
    flip(log, batches[0][0] + 40)
    later = segment_bases(copy)[-1]
    for errors in ("strict", "salvage"):
        recs = kafkafmt.read_log_dir(copy, start_offset=later, errors=errors)
        check_result(recs, pristine, brute(pristine, later))
        assert not damage_report(recs, log)


def test_errors_value_is_checked(copy):
    with pytest.raises(ValueError):
        kafkafmt.read_log_dir(copy, errors="ignore")


# ---------------------------------------------------------------------------------------------
# damaged and wrong indexes

def _write_index(path, base, entries):
    with open(path, "wb") as f:
        for off, pos in entries:
            f.write(struct.pack(">ii", off - base, pos))


def _indexed_segment(folder, at_least=4):
    for base in segment_bases(folder)[1:]:
        idx = kafkafmt.read_index(seg_file(folder, base, ".index")).tolist()
        if len(idx) >= at_least:
            return base, idx
    raise AssertionError("no segment with enough index entries")


def test_zeroed_index_tail_same_results(pristine, copy):
    base, idx = _indexed_segment(copy)
    path = seg_file(copy, base, ".index")
    data = open(path, "rb").read()
    keep = 16
    open(path, "wb").write(data[:keep] + b"\0" * (len(data) - keep + 80))
    so = idx[-1][0] + 1
    for errors in ("strict", "salvage"):
        recs = kafkafmt.read_log_dir(copy, start_offset=so, errors=errors)
        check_result(recs, pristine, brute(pristine, so))
        recs = kafkafmt.read_log_dir(copy, start_offset=idx[0][0] + 1, end_offset=so, errors=errors)
        check_result(recs, pristine, brute(pristine, idx[0][0] + 1, so))


def _wrong_shifted(base, idx, size, starts):
    # every entry points at the start of the *next* indexed batch: plausible, increasing, wrong
    return [(o, p) for (o, _), (_, p) in zip(idx, idx[1:])] + [(idx[-1][0], starts[-1])]


def _wrong_midbatch(base, idx, size, starts):
    return [(o, p + 7) for o, p in idx]


def _wrong_offsets(base, idx, size, starts):
    # right positions, each entry claiming the offset just after the previous entry's: still
    # increasing, but a seek lands on a batch past records it must return
    out = [idx[0]]
    for (prev, _), (o, p) in zip(idx, idx[1:]):
        out.append((prev + 1, p))
    return out


WRONG_INDEX = [_wrong_shifted, _wrong_midbatch, _wrong_offsets]


@pytest.mark.parametrize("errors", ["strict", "salvage"])
@pytest.mark.parametrize("wrong", WRONG_INDEX, ids=[f.__name__[7:] for f in WRONG_INDEX])
def test_wrong_index_is_never_silently_wrong(pristine, copy, wrong, errors):
    """An index that passes Kafka's sanity checks but does not match the log: the read must give
    the right records (after noticing and falling back, with a warning) or raise an error naming
    the file -- never return a different set of records."""
    base, idx = _indexed_segment(copy)
    log = seg_file(copy, base, ".log")
    starts = [b[0] for b in batches_of(log)]
    _write_index(seg_file(copy, base, ".index"), base, wrong(base, idx, os.path.getsize(log), starts))
    for so, eo in [(idx[1][0], None), (idx[1][0] + 1, idx[-2][0] + 1), (idx[0][0], idx[2][0])]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KafkafmtWarning)
            try:
                recs = kafkafmt.read_log_dir(copy, start_offset=so, end_offset=eo, errors=errors)
            except kafkafmt.KafkafmtError as err:
                assert err.file in (log, seg_file(copy, base, ".index")), err
                continue
        assert recs.offset.tolist() == brute(pristine, so, eo), (so, eo, recs.report)


def test_wrong_time_index_is_never_silently_wrong(pristine, copy):
    """A time index whose timestamps are all too small (plausible: increasing, inside the segment)
    would make a time seek skip the segment: notice it, or raise."""
    base, idx = _indexed_segment(copy)
    path = seg_file(copy, base, ".timeindex")
    entries = kafkafmt.read_timeindex(path).tolist()
    with open(path, "wb") as f:
        for t, o in entries:
            f.write(struct.pack(">qi", t - 5_000, o - base))
    inside = [t for o, t in zip(pristine.offsets, pristine.timestamps) if base <= o <= idx[-1][0]]
    st = max(inside)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KafkafmtWarning)
        try:
            recs = kafkafmt.read_log_dir(copy, start_timestamp=st)
        except kafkafmt.KafkafmtError as err:
            assert err.file == path
            return
    assert recs.offset.tolist() == brute(pristine, start_timestamp=st)


def _salvage_one_segment(tmp_path, data, **kw):
    """`data` as segment 0 of a partition folder: a strict read raises, a salvage read returns
    records whose batches and reported ranges cover every byte once; those records."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(data)
    with pytest.raises(kafkafmt.CorruptRecordError):
        kafkafmt.read_log_dir(str(folder), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recs = kafkafmt.read_log_dir(str(folder), errors="salvage", **kw)
    spans = sorted([(int(p), int(p) + int(z)) for p, z in zip(recs.batches.position, recs.batches.size)]
                   + [(int(r.start), int(r.end)) for r in recs.report if r.start is not None])
    at = 0
    for start, end in spans:    # every byte decoded or reported, once
        assert start == at and end > start
        at = end
    assert at == len(data)
    return recs


def test_salvage_keeps_the_batches_before_an_overlap(tmp_path):
    """Batches whose offsets go back (found by the fuzzer): [16777216], [1], [3], [3..2^31+2], [4],
    then a cut-off batch. The batch judged bad against the entries after it must not make the
    re-read of the batches before it blame one of them (it raised CorruptRecordError out of
    salvage): [1], [3] and [4] are kept, every other byte is reported."""
    parts = [kafkafmt.encode(values=[b"a" * 30], offsets=[o], timestamps=[T0]) for o in (16777216, 1, 3)]
    parts.append(kafkafmt.encode(values=[b"b", b"c"], offsets=[3, 3 + (1 << 31) - 1], timestamps=[T0, T0]))
    parts.append(kafkafmt.encode(values=[b"d"], offsets=[4], timestamps=[T0]))
    tail = kafkafmt.encode(values=[b"e" * 50], offsets=[5], timestamps=[T0])
    recs = _salvage_one_segment(tmp_path, b"".join(parts) + tail[:-7])
    assert recs.offset.tolist() == [1, 3, 4]


def test_salvage_when_the_first_batch_is_below_the_segment(tmp_path):
    """Three v1 messages whose offset field reads -1 in segment 0 (found by the fuzzer): a re-read
    of the stretch before the batch first blamed judges the first message on its own and finds it
    at fault; salvage reports it instead of raising, and every byte is still accounted for."""
    msgs = [bytearray(kafkafmt.encode(values=[b"v%d" % i], offsets=[i], timestamps=[T0], magic=1)) for i in range(3)]
    for m in msgs:
        m[0:8] = struct.pack(">q", -1)          # outside the v1 CRC
    recs = _salvage_one_segment(tmp_path, b"".join(msgs), verify_crc=False, include_control=True)
    assert len(recs) == 0 and len(recs.report) >= 1
